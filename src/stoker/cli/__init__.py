"""The ``stoker`` command and its subcommands."""
