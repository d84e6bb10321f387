"""``/readyz``'s verdict and which admin paths the guard checks (pure)."""

from __future__ import annotations

from stoker.admin.guard import guarded
from stoker.admin.health import OK, verdict


def test_ready_only_when_every_check_is_ok() -> None:
    assert verdict({"l2": OK, "ticker": OK}) == (
        200, {"ready": True, "checks": {"l2": OK, "ticker": OK}})
    status, body = verdict({"l2": OK, "queue": "ConnectionError: refused"})
    assert status == 503 and body["ready"] is False
    assert body["checks"]["queue"] == "ConnectionError: refused"


def test_the_api_and_the_metrics_are_guarded_the_probes_are_not() -> None:
    assert guarded("/api") and guarded("/api/purge") and guarded("/metrics")
    assert not guarded("/healthz") and not guarded("/readyz") and not guarded("/apiary")
