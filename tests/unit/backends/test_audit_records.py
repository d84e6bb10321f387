"""An audit record's target is stored bounded, whatever a client made it of (pure)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from stoker.backends.audit_records import (
    MAX_ITEMS,
    MAX_TARGET,
    MAX_TEXT,
    bounded,
    bounded_target,
    row,
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3 * MAX_TEXT),
    lambda inner: st.lists(inner, max_size=3 * MAX_ITEMS) | st.dictionaries(
        st.text(max_size=8), inner, max_size=6),
    max_leaves=400)


def strings_and_lists(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(part for item in value.values() for part in strings_and_lists(item))]
    if isinstance(value, list):
        return [value, *(part for item in value for part in strings_and_lists(item))]
    return [value]


@given(st.dictionaries(st.text(max_size=8), JSON, max_size=6))
def test_a_stored_target_is_valid_json_of_bounded_size(target: dict[str, Any]) -> None:
    text = bounded_target(target)
    stored = json.loads(text)
    assert len(text) <= 6 * MAX_TARGET + 64  # every kept character escaped at worst
    if set(stored) != {"truncated", "characters"}:  # else one string, cut at MAX_TARGET
        for part in strings_and_lists(stored):
            if isinstance(part, str):
                assert len(part) <= MAX_TEXT + len("… (999999 characters)")
            if isinstance(part, list):
                assert len(part) <= MAX_ITEMS + 1


@given(st.dictionaries(st.text(max_size=8), st.text(max_size=MAX_TEXT) | st.lists(
    st.text(max_size=20), max_size=MAX_ITEMS), max_size=6))
def test_a_target_within_the_bounds_is_kept_as_it_is(target: dict[str, Any]) -> None:
    assert bounded(target) == target
    assert json.loads(row(0.0, actor="a", action="b", target=target, count=None,
                          outcome="ok")[3]) == target


def test_an_8_kib_path_is_cut_and_says_how_long_it_was() -> None:
    cut = bounded({"path": "/" + "x" * 8191, "tags": ["t"] * (MAX_ITEMS + 7)})
    assert cut["path"] == "/" + "x" * (MAX_TEXT - 1) + "… (8192 characters)"
    assert cut["tags"] == ["t"] * MAX_ITEMS + ["… 7 more"]


def test_a_target_too_long_even_bounded_keeps_its_head() -> None:
    target = {f"k{i}": ["y" * MAX_TEXT] * MAX_ITEMS for i in range(4)}
    stored = json.loads(bounded_target(target))
    assert set(stored) == {"truncated", "characters"}
    assert len(stored["truncated"]) == MAX_TARGET and stored["characters"] > MAX_TARGET
