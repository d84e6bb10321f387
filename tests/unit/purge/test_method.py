"""The PURGE method's allow list and its soft headers (pure)."""

from __future__ import annotations

import ipaddress

import pytest

from stoker.config.settings import SettingsError, settings_from
from stoker.purge.method import asked_soft, parse_networks, purge_allowed
from stoker.purge.scope import PurgeRequestError


def test_purge_allow_list() -> None:
    networks = parse_networks(["127.0.0.1", "10.0.0.0/8", "::1"])
    assert purge_allowed("127.0.0.1", ()) == "disabled"
    assert purge_allowed("127.0.0.1", networks) == "allowed"
    assert purge_allowed("10.9.8.7", networks) == "allowed"
    assert purge_allowed("::ffff:10.1.1.1", networks) == "allowed"
    assert purge_allowed("::1", networks) == "allowed"
    assert purge_allowed("192.168.1.1", networks) == "forbidden"
    assert purge_allowed(None, networks) == "forbidden"
    assert purge_allowed("not-an-ip", networks) == "forbidden"
    assert networks[1] == ipaddress.ip_network("10.0.0.0/8")
    with pytest.raises(SettingsError, match="purge_allow"):
        settings_from({"purge_allow": ["10.0.0.0/33"]})


def test_soft_header_says_soft_hard_or_nothing() -> None:
    assert asked_soft([(b"x-purge-soft", b"1")]) is True
    assert asked_soft([(b"stoker-soft", b" TRUE ")]) is True
    assert asked_soft([(b"x-purge-soft", b"0")]) is False
    assert asked_soft([(b"stoker-soft", b"off")]) is False
    assert asked_soft([(b"x-purge-soft", b"0"), (b"stoker-soft", b"yes")]) is True
    assert asked_soft([]) is None
    assert asked_soft([(b"x-other", b"1")]) is None


def test_a_soft_header_that_is_neither_true_nor_false_is_refused_by_name() -> None:
    with pytest.raises(PurgeRequestError, match="x-purge-soft: 'maybe'"):
        asked_soft([(b"x-purge-soft", b"maybe")])
    with pytest.raises(PurgeRequestError, match="stoker-soft"):
        asked_soft([(b"stoker-soft", b"")])
