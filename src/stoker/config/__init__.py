"""Configuration: settings, rules, presets and the units they are written in."""
