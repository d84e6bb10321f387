"""``python -m stoker.config.settings.readme README.md`` (``make settings-table``): rewrite the
README's settings table from the declaration, leaving the rest of the file as it is."""

from __future__ import annotations

import sys
from pathlib import Path

from stoker.config.settings.rendering import markdown_table, with_table


def update_readme(path: Path) -> None:
    """Replace the settings table between the markers of the file at ``path``."""
    readme = path.read_text(encoding="utf-8")
    path.write_text(with_table(readme, markdown_table()), encoding="utf-8")


if __name__ == "__main__":
    update_readme(Path(sys.argv[1]))
