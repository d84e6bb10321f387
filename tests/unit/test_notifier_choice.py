"""The ``notifier`` setting: which notifier each configuration gets, and the refusals
naming the setting a choice needs."""

from __future__ import annotations

import pytest

from stoker.backends.choice import choose
from stoker.config.settings import SettingsError, load_settings, settings_from

PG = "postgresql://stoker@db/stoker"
REDIS = "redis://cache:6379/0"


@pytest.mark.parametrize(("values", "kind"), [
    ({}, "local"),
    ({"database_url": PG}, "postgres"),
    ({"database_url": PG, "l2_url": REDIS}, "redis"),
    ({"notifier": "poll", "database_url": PG, "l2_url": REDIS}, "local"),
    ({"notifier": "postgres", "database_url": PG, "l2_url": REDIS}, "postgres"),
    ({"notifier": "redis", "database_url": PG, "l2_url": REDIS}, "redis"),
])
def test_auto_takes_redis_then_postgres_then_this_process_alone(
        values: dict[str, str], kind: str) -> None:
    assert choose(settings_from(values)).notifier == kind


def test_a_notifier_without_its_server_is_refused_naming_the_setting() -> None:
    with pytest.raises(SettingsError, match="notifier = postgres needs database_url"):
        load_settings(env={"STOKER_NOTIFIER": "postgres"})
    with pytest.raises(SettingsError, match="notifier = redis needs l2_url"):
        settings_from({"notifier": "redis", "database_url": PG})


def test_an_unknown_notifier_names_the_choices() -> None:
    with pytest.raises(SettingsError, match=r"notifier.*auto, poll, postgres, redis"):
        load_settings(env={"STOKER_NOTIFIER": "kafka"})
