"""The one declaration of the settings: what is derived from it agrees with it."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from stoker.cli.main import _mount_subcommands, app
from stoker.config.settings import FIELDS, Settings, SettingsError, load_settings, settings_from
from stoker.config.settings.declared import flag_name
from stoker.config.settings.rendering import TABLE_BEGIN, TABLE_END, markdown_table, with_table

CONFIGURATION = Path(__file__).parents[3] / "docs" / "configuration.md"


def test_the_documented_table_is_the_generated_one() -> None:
    documented = CONFIGURATION.read_text(encoding="utf-8")
    assert with_table(documented, markdown_table()) == documented, "run make reference"


def test_the_table_has_one_row_per_setting_and_its_flag() -> None:
    rows = markdown_table().splitlines()[3:-1]
    assert [row.split(" | ")[0] for row in rows] == [f"| `{key}`" for key in FIELDS]
    assert rows[0].endswith("(`--origin`) |") and "`STOKER_L1_MAX_BYTES` | `256MiB` |" in rows[9]


def test_with_table_replaces_only_between_the_markers() -> None:
    text = f"before\n{TABLE_BEGIN}\nold\n{TABLE_END}\nafter\n"
    assert with_table(text, "new") == "before\nnew\nafter\n"
    with pytest.raises(ValueError, match="marker"):
        with_table("no markers here", "new")


def test_settings_markdown_prints_the_table() -> None:
    result = CliRunner().invoke(app, ["settings", "--markdown"])
    assert result.exit_code == 0, result.output
    assert result.stdout == markdown_table() + "\n"


def test_every_field_but_rules_is_a_setting_and_defaults_are_class_attributes() -> None:
    assert [each.name for each in fields(Settings)] == [*FIELDS, "rules"]
    assert Settings.l1_max_bytes == Settings().l1_max_bytes == 256 * 1024 * 1024


def _setting_options(command: Any) -> dict[str, set[str]]:
    """Every option of ``command`` (and its subcommands) that sets a setting: key → flags
    (``stoker settings --preset NAME`` prints a preset; it sets nothing)."""
    found: dict[str, set[str]] = {}
    for name, sub in getattr(command, "commands", {}).items():
        if name == "settings":
            continue
        for key, flags in _setting_options(sub).items():
            found.setdefault(key, set()).update(flags)
    for param in command.params:
        if param.name in FIELDS:
            found.setdefault(param.name, set()).update(param.opts)
    return found


def test_the_commands_flags_are_the_declared_flags() -> None:
    _mount_subcommands()
    options = _setting_options(typer.main.get_command(app))
    assert set(options) == {key for key, spec in FIELDS.items() if spec.flag}
    assert all(flags == {flag_name(key)} for key, flags in options.items())


def test_tls_cert_without_tls_key_is_refused_when_settings_are_made(tmp_path: Path) -> None:
    cert = str(tmp_path / "cert.pem")
    with pytest.raises(SettingsError, match="tls_cert and tls_key go together"):
        settings_from({"tls_key": cert})
    with pytest.raises(SettingsError, match="tls_cert and tls_key go together"):
        load_settings(env={"STOKER_TLS_CERT": cert})
    assert settings_from({"tls_cert": cert, "tls_key": cert}).tls_key == Path(cert)
