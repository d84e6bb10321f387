"""The reference documents agree with the code they describe: docs/cli.md is the
command line's own help, and docs/metrics.md names every metric /metrics exposes."""

from __future__ import annotations

import re
from pathlib import Path

from stoker.cli.main import _mount_subcommands, app
from stoker.cli.reference import cli_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_the_cli_reference_is_the_generated_one() -> None:
    _mount_subcommands()
    documented = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert documented == cli_markdown(app), "run make reference"


def test_the_cli_reference_has_every_command() -> None:
    _mount_subcommands()
    text = cli_markdown(app)
    for command in ("serve", "check", "purge", "warm", "status", "why", "jobs requeue"):
        assert f"## `stoker {command}`" in text
    assert "Usage: stoker jobs requeue [OPTIONS]" in text


def test_every_metric_is_documented() -> None:
    source = (ROOT / "src" / "stoker" / "admin" / "metrics.py").read_text(encoding="utf-8")
    documented = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    names = set(re.findall(r'"(stoker_[a-z0-9_]+)"', source))
    assert len(names) > 20
    missing = [name for name in sorted(names)
               if f"`{name}`" not in documented and f"`{name}_total`" not in documented]
    assert not missing, f"docs/metrics.md does not name {missing}"
