"""``/readyz``'s verdict, which admin paths the guard checks, the members listed (pure)."""

from __future__ import annotations

from stoker.admin.guard import guarded
from stoker.admin.health import OK, verdict
from stoker.admin.metrics import member_summary
from stoker.admin.status import members_json
from stoker.cache.purge_bus import Member


def test_ready_only_when_every_check_is_ok() -> None:
    assert verdict({"l2": OK, "ticker": OK}) == (
        200, {"ready": True, "checks": {"l2": OK, "ticker": OK}})
    status, body = verdict({"l2": OK, "queue": "ConnectionError: refused"})
    assert status == 503 and body["ready"] is False
    assert body["checks"]["queue"] == "ConnectionError: refused"


def test_the_api_and_the_metrics_are_guarded_the_probes_are_not() -> None:
    assert guarded("/api") and guarded("/api/purge") and guarded("/metrics")
    assert not guarded("/healthz") and not guarded("/readyz") and not guarded("/apiary")


def test_members_are_live_while_heard_of_within_the_node_timeout() -> None:
    listed = members_json([Member("n/0", 7, 100.0), Member("n/1", 5, 80.0)], now=105.0,
                          node_timeout=10.0)
    said_nothing = member_summary(None)
    assert listed == [{"name": "n/0", "confirmed": 7, "seen_at": 100.0, "live": True,
                       **said_nothing},
                      {"name": "n/1", "confirmed": 5, "seen_at": 80.0, "live": False,
                       **said_nothing}]
