"""The function cache's key function.  Pure.

A cached call's primary key is ``{version}|fn:{name}({arguments})``: the cache version
first, as every page's key (so a hard purge of everything makes it unreadable and the
reclaim deletes it, :meth:`~stoker.cache.port.Cache.delete_except_version`), then a key
space of its own (``fn:``: no page's key, ``{version}|{scheme}://…``, starts so), the
function's ``module.qualname`` and the canonical JSON of its arguments.

Invariants:
- Keys depend only on the version, the name and the argument *values*: never on
  ``hash()``, ``id()``, dict order or the process, so every process and node computes the
  same key for the same call (tested in a subprocess with another hash seed).
- One call, one key however it is spelled: arguments are bound to the signature, defaults
  applied, so ``f(1)``, ``f(1, 2)`` (2 the default) and ``f(a=1)`` key alike; the canonical
  form is the list of the parameters' values in signature order (``*args`` as a list,
  ``**kwargs`` as an object).
- Canonical JSON is injective on what it accepts: ``None``, ``bool``, ``int``, finite
  ``float``, ``str``, lists and tuples (both JSON arrays) of those, and dicts with ``str``
  keys (sorted).  Anything else (an object, a set, bytes, a non-str dict key, NaN) is a
  :class:`TypeError` naming it and pointing at ``key=``, never a silently unstable key.
- A key's arguments part longer than :data:`LONGEST` characters is replaced by its
  SHA-256, so keys stay bounded (collisions: SHA-256's).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

LONGEST: Final = 256
"""Longest arguments part kept as text in a key; longer ones are hashed."""
SPACE: Final = "fn:"
"""What a function key's part after the version starts with (no page's key does)."""
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True,
                           allow_nan=False).encode


@dataclass(frozen=True, slots=True)
class Parameters:
    """What binding a call to a signature needs, computed once per function."""

    signature: inspect.Signature
    simple: bool
    """Only positional-or-keyword parameters: a call with every one given positionally
    is already canonical (the fast path)."""
    count: int

    @classmethod
    def of(cls, function: Callable[..., Any]) -> Parameters:
        signature = inspect.signature(function)
        kinds = [parameter.kind for parameter in signature.parameters.values()]
        simple = all(kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for kind in kinds)
        return cls(signature, simple, len(kinds))


def arguments(parameters: Parameters, args: Sequence[Any],
              kwargs: Mapping[str, Any]) -> list[Any]:
    """The call's canonical arguments: every parameter's value in signature order,
    defaults applied.  Raises :class:`TypeError` when the call does not fit the
    signature (as calling the function would)."""
    if parameters.simple and not kwargs and len(args) == parameters.count:
        return list(args)
    bound = parameters.signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return list(bound.arguments.values())


def canonical(value: Any) -> str:
    """``value`` as canonical JSON (see the module invariants); :class:`TypeError` when it
    has no canonical form."""
    if type(value) is list:  # the common case: arguments all scalars, no copy made
        for item in value:
            kind = type(item)
            if kind not in _SCALARS or (kind is float and not math.isfinite(item)):
                return _ENCODE(_checked(value))
        return _ENCODE(value)
    return _ENCODE(_checked(value))


def function_key(version: str, name: str, canonical_arguments: str) -> str:
    """The primary key of a call of the function ``name`` (``module.qualname``) with
    ``canonical_arguments`` (:func:`canonical`) under cache ``version``."""
    if len(canonical_arguments) > LONGEST:
        digest = hashlib.sha256(canonical_arguments.encode()).hexdigest()
        return f"{version}|{SPACE}{name}#{digest}"
    return f"{version}|{SPACE}{name}({canonical_arguments})"


def name_of(function: Callable[..., Any]) -> str:
    """``module.qualname``: what a function's keys name it by."""
    return f"{function.__module__}.{function.__qualname__}"


def _checked(value: Any) -> Any:
    """``value`` with tuples as lists, after checking every part is canonical JSON."""
    kind = type(value)
    if kind in _SCALARS:
        if kind is float and not math.isfinite(value):
            _refuse(value, "a non-finite float")
        return value
    if kind is list or kind is tuple:
        return [_checked(item) for item in value]
    if kind is dict:
        for name in value:
            if type(name) is not str:
                _refuse(name, "a dict key that is not a str")
        return {name: _checked(item) for name, item in value.items()}
    return _refuse(value, f"a {kind.__qualname__}")


def _refuse(value: Any, what: str) -> Any:
    raise TypeError(
        f"@cached cannot key an argument {value!r} ({what}): arguments must be JSON values "
        "(None, bool, int, finite float, str, lists, tuples, dicts with str keys) so every "
        "process computes the same key; pass key=lambda ...: <a JSON value> to say how to "
        "key such calls")
