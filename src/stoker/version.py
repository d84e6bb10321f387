"""The project version (one place; ``stoker.__version__`` re-exports it)."""

VERSION = "0.1.0"
