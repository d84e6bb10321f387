"""Configuration: defaults < ``stoker.toml`` < ``STOKER_*`` environment < CLI flags.

Every setting is declared once, as a field of :class:`Settings` (``declared.py``) with
its type, default, parser, help and flag; ``values.py`` holds the parsers, ``loading.py``
reads the sources, ``checks.py`` holds the checks a command asks for, ``rendering.py``
shows the declaration (``stoker settings``, docs/configuration.md's table).

Invariants: a returned :class:`Settings` is fully validated (every value by its parser,
then the cross-field checks its construction runs); an error names the setting.
"""

from stoker.config.settings.checks import (
    is_loopback_host,
    is_loopback_listen,
    looser_data_dir,
    make_data_dir_private,
    read_error_page,
    refuse_data_dir_under_a_file,
    require_data_dir,
    require_origin,
    require_safe_admin,
    require_tls_files,
)
from stoker.config.settings.declared import (
    DEFAULT_VARIANTS,
    ENV_PREFIX,
    FIELDS,
    Setting,
    Settings,
    SettingsError,
)
from stoker.config.settings.loading import admin_url, find_config, load_settings, settings_from
from stoker.config.settings.rendering import Described, describe, markdown_table, toml_value

__all__ = [
    "DEFAULT_VARIANTS", "ENV_PREFIX", "FIELDS", "Described", "Setting", "Settings",
    "SettingsError", "admin_url", "describe", "find_config", "is_loopback_host",
    "is_loopback_listen", "load_settings", "looser_data_dir", "make_data_dir_private",
    "markdown_table", "read_error_page", "refuse_data_dir_under_a_file",
    "require_data_dir", "require_origin", "require_safe_admin", "require_tls_files",
    "settings_from", "toml_value",
]
