"""Requeue bodies: one scope each, ``all`` only with the count confirmed (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from stoker.admin.jobs_api import parse_requeue
from stoker.jobs.model import RequeueScope
from stoker.warm.warmer import RUN_FIELD


@pytest.mark.parametrize(("body", "scope", "count"), [
    ({"id": 7}, RequeueScope.by_ids(7), None),
    ({"id": [7, 9]}, RequeueScope.by_ids(7, 9), None),
    ({"key": "warm:https://s/a"}, RequeueScope.by_key("warm:https://s/a"), None),
    ({"run": 3}, RequeueScope.by_payload(RUN_FIELD, 3), None),
    ({"all": True, "count": 12}, RequeueScope.all(confirm=True), 12),
])
def test_each_scope_is_read(body: dict[str, Any], scope: RequeueScope, count: int | None) -> None:
    assert parse_requeue(body) == (scope, count)


@pytest.mark.parametrize(("body", "field"), [
    (None, "body"), ([], "body"), ({}, "body"), ({"id": 1, "key": "k"}, "body"),
    ({"id": []}, "id"), ({"id": "7"}, "id"), ({"id": True}, "id"), ({"id": -1}, "id"),
    ({"key": ""}, "key"), ({"run": "3"}, "run"), ({"all": True}, "count"),
    ({"all": "yes", "count": 1}, "count"), ({"all": True, "count": "12"}, "count"),
    ({"id": 1, "force": True}, "force"),
])
def test_a_malformed_body_names_its_field(body: Any, field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        parse_requeue(body)
