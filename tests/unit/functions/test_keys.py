"""The function cache's key function (pure): one key per call however it is spelled,
distinct keys for distinct arguments, the same key in every process."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stoker.functions.keys import (
    LONGEST,
    Parameters,
    arguments,
    canonical,
    function_key,
    name_of,
)

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(
    allow_nan=False, allow_infinity=False) | st.text()
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.text(), inner, max_size=4), max_leaves=12)


def f(a: Any, b: Any = 2, *rest: Any, c: Any = 3, **more: Any) -> None: ...


def g(a: Any, b: Any = 2) -> None: ...


def key_of(function: Any, *args: Any, **kwargs: Any) -> str:
    return function_key("7", name_of(function), canonical(
        arguments(Parameters.of(function), args, kwargs)))


@given(JSON, JSON)
def test_spellings_of_one_call_key_alike(a: Any, b: Any) -> None:
    assert key_of(g, a) == key_of(g, a, 2) == key_of(g, a=a) == key_of(g, b=2, a=a)
    assert key_of(g, a, b) == key_of(g, a, b=b) == key_of(g, b=b, a=a)
    assert key_of(f, a, 2, c=3) == key_of(f, a)


@given(JSON, JSON)
def test_distinct_arguments_key_apart(a: Any, b: Any) -> None:
    """Injective on JSON values: keys differ exactly when the canonical values do."""
    same = json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert (key_of(g, a) == key_of(g, b)) == same


@given(st.dictionaries(st.text(), SCALARS, max_size=6))
def test_dict_order_does_not_matter(mapping: dict[str, Any]) -> None:
    reordered = dict(reversed(list(mapping.items())))
    assert key_of(g, mapping) == key_of(g, reordered)


def test_tuples_key_as_lists_and_types_apart() -> None:
    assert key_of(g, (1, 2)) == key_of(g, [1, 2])
    assert len({key_of(g, 1), key_of(g, 1.0), key_of(g, True), key_of(g, "1")}) == 4


def test_varargs_and_kwargs_are_part_of_the_key() -> None:
    assert key_of(f, 1, 2, 3, x=1) != key_of(f, 1, 2, 3)
    assert key_of(f, 1, 2, 3, x=1, y=2) == key_of(f, 1, 2, 3, y=2, x=1)


@pytest.mark.parametrize("value", [object(), {1, 2}, b"x", {1: "a"}, float("nan"),
                                   [float("inf")], {"a": [object()]}])
def test_non_json_arguments_are_refused_with_a_way_out(value: Any) -> None:
    with pytest.raises(TypeError, match="key="):
        key_of(g, value)


def test_a_call_that_does_not_fit_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        key_of(g)


def test_key_shape_version_space_and_bound() -> None:
    key = key_of(g, "x")
    assert key == f"7|fn:{__name__}.g([\"x\",2])"
    long = key_of(g, "x" * (LONGEST + 1))
    assert long.startswith(f"7|fn:{__name__}.g#") and len(long) < 200


SCRIPT = """
import json, sys
from stoker.functions.keys import Parameters, arguments, canonical, function_key
calls = json.loads(sys.argv[1])
def g(a, b=2): ...
print(json.dumps([function_key("7", "m.g", canonical(arguments(Parameters.of(g), a, {})))
                  for a in calls]))
"""


@settings(max_examples=10, deadline=None)  # a subprocess each
@given(st.lists(st.lists(JSON, min_size=1, max_size=2), min_size=1, max_size=20))
def test_keys_are_equal_in_another_process(calls: list[list[Any]]) -> None:
    """Computed again by a fresh interpreter with another hash seed: the same keys."""
    here = [function_key("7", "m.g", canonical(arguments(Parameters.of(g), call, {})))
            for call in calls]
    there = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(calls)],
                           capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "12345", "PATH": ""})
    assert json.loads(there.stdout) == here
