"""``admin_token_file``: the admin token read from a file (systemd's credentials), never
together with ``admin_token``; a relative path in ``$CREDENTIALS_DIRECTORY`` when set."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.config.settings import SettingsError, load_settings, settings_from
from stoker.config.settings.loading import token_path
from stoker.config.settings.rendering import settings_toml


def token_file(directory: Path, text: str = "s3cret-token\n") -> Path:
    path = directory / "admin-token"
    path.write_text(text)
    return path


def test_the_token_is_the_file_content_without_its_newline(tmp_path: Path) -> None:
    path = token_file(tmp_path)
    settings = load_settings(env={"STOKER_ADMIN_TOKEN_FILE": str(path)})
    assert settings.admin_token == "s3cret-token"
    assert settings.admin_token_file == path


def test_a_relative_path_is_read_in_the_credentials_directory(tmp_path: Path) -> None:
    token_file(tmp_path, "from-systemd")
    settings = load_settings(env={"CREDENTIALS_DIRECTORY": str(tmp_path)},
                             cli={"admin_token_file": "admin-token"})
    assert settings.admin_token == "from-systemd"


def test_the_flag_and_the_file_setting_agree_with_settings_from_code(tmp_path: Path) -> None:
    path = token_file(tmp_path)
    assert settings_from({"admin_token_file": str(path)}).admin_token == "s3cret-token"


@pytest.mark.parametrize("where", ["file", "env", "flag"])
def test_a_token_and_a_token_file_together_are_refused_naming_both(
        tmp_path: Path, where: str) -> None:
    path = token_file(tmp_path)
    config = tmp_path / "stoker.toml"
    config.write_text('admin_token = "inline"\n' if where == "file" else "")
    env = {"STOKER_ADMIN_TOKEN": "inline"} if where == "env" else {}
    cli = {"admin_token": "inline"} if where == "flag" else {}
    with pytest.raises(SettingsError, match="admin_token and admin_token_file are both set"):
        load_settings(config_path=config, env={**env, "STOKER_ADMIN_TOKEN_FILE": str(path)},
                      cli=cli)


def test_a_missing_file_names_the_setting_and_the_path(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"admin_token_file: cannot read .*nope: No such"):
        load_settings(env={"CREDENTIALS_DIRECTORY": str(tmp_path)},
                      cli={"admin_token_file": "nope"})


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    path = token_file(tmp_path, " \n")
    with pytest.raises(SettingsError, match=r"admin_token_file: .* is empty"):
        load_settings(env={"STOKER_ADMIN_TOKEN_FILE": str(path)})


@given(name=st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True),
       directory=st.sampled_from(["", "/run/credentials/stoker.service"]))
def test_token_path_reads_relative_paths_in_the_credentials_directory_only(
        name: str, directory: str) -> None:
    env = {"CREDENTIALS_DIRECTORY": directory} if directory else {}
    assert token_path(Path(name), env) == (Path(directory) / name if directory else Path(name))
    assert token_path(Path("/etc/stoker") / name, env) == Path("/etc/stoker") / name


def test_stoker_settings_names_the_file_never_the_token_it_holds(tmp_path: Path) -> None:
    path = token_file(tmp_path)
    config = tmp_path / "stoker.toml"
    config.write_text(f'admin_token_file = "{path}"\n')
    shown = settings_toml(load_settings(config_path=config, env={}), config)
    assert "s3cret-token" not in shown
    assert "# admin_token = (not set)" in shown
    again = tmp_path / "again.toml"
    again.write_text(shown)
    assert load_settings(config_path=again, env={}).admin_token == "s3cret-token"
