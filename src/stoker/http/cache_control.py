"""Cache-Control parsing (RFC 9111 §5.2), also for Surrogate-Control, and of
CDN-Cache-Control as a Structured Field Dictionary (RFC 9213 §2.1).

Invariants:
- :func:`parse_cache_control` never raises, whatever the input.
- Directive names are matched case-insensitively (RFC 9111 §5.2); arguments
  may be tokens or quoted-strings (``max-age="60"`` is accepted, §5.2).
- Duplicate directives: the first occurrence wins (RFC 9111 §4.2.1).  The
  list-valued ``no-cache`` / ``private`` are the exception: an unqualified
  occurrence anywhere makes the directive unqualified (the most restrictive
  reading, §4.2.1), otherwise the field names of all occurrences are merged.
- Every delta-seconds value is in ``0..2147483648`` (capped per §1.2.2).  A
  malformed one (missing, non-digit, negative) is recorded in ``invalid`` and
  taken as 0, so the response counts as stale (§4.2.1, "invalid freshness
  information ... stale").
- ``no_cache`` / ``private`` are True whenever the directive appears, qualified
  or not; ``no_cache_fields`` / ``private_fields`` hold the lower-cased field
  names of the qualified form (empty tuple for the unqualified form).
- ``max_stale`` without an argument (a request may accept any staleness,
  §5.2.1.2) is represented as the cap, 2147483648.
- ``present`` is True iff at least one directive with a well-formed name
  (known or not) was found.  Unknown directives are otherwise ignored
  (§5.2.3).
- :func:`parse_targeted` (RFC 9213 §2.1) returns :data:`EMPTY` when the value
  is absent, empty or not an RFC 8941 Dictionary, so the caller falls back to
  the other fields.  A directive whose value has the wrong type (``max-age``
  not a non-negative Integer, a flag not ``True``) is ignored, not taken as
  0; ``invalid`` is always empty.  ``no-cache`` / ``private`` are set
  whatever their value (the stricter reading); a String or an Inner List of
  Strings/Tokens gives their field names.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .structured_fields import Member, parse_dictionary

DELTA_SECONDS_CAP = 2147483648  # RFC 9111 §1.2.2

_TCHARS = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_WHITESPACE = " \t\r\n"

_DELTA_DIRECTIVES = {
    "max-age": "max_age",
    "s-maxage": "s_maxage",
    "stale-while-revalidate": "stale_while_revalidate",  # RFC 5861 §3
    "stale-if-error": "stale_if_error",  # RFC 5861 §4
    "min-fresh": "min_fresh",
}
_FLAG_DIRECTIVES = {
    "no-store": "no_store",
    "public": "public",
    "must-revalidate": "must_revalidate",
    "proxy-revalidate": "proxy_revalidate",
    "immutable": "immutable",  # RFC 8246
    "only-if-cached": "only_if_cached",
    "no-transform": "no_transform",
    "must-understand": "must_understand",  # RFC 9111 §5.2.2.3
}


@dataclass(frozen=True, slots=True)
class CacheControl:
    """The directives of one Cache-Control-like field.  See module invariants."""

    no_store: bool = False
    no_cache: bool = False
    no_cache_fields: tuple[str, ...] = ()
    private: bool = False
    private_fields: tuple[str, ...] = ()
    public: bool = False
    must_revalidate: bool = False
    proxy_revalidate: bool = False
    max_age: int | None = None
    s_maxage: int | None = None
    stale_while_revalidate: int | None = None
    stale_if_error: int | None = None
    immutable: bool = False
    only_if_cached: bool = False
    max_stale: int | None = None
    min_fresh: int | None = None
    no_transform: bool = False
    must_understand: bool = False
    invalid: frozenset[str] = field(default_factory=frozenset)
    present: bool = False


EMPTY = CacheControl()


def _is_token(text: str) -> bool:
    return bool(text) and all(char in _TCHARS for char in text)


def _split_directives(text: str) -> list[tuple[str, str | None, bool]]:
    """Split a field value into ``(name, argument, argument_well_formed)``.

    ``argument`` is None when there is no ``=``; quoted-strings are unquoted
    and unescaped (RFC 9110 §5.6.4).  Commas inside quoted-strings do not
    split.  Optional whitespace around ``=`` is tolerated.
    """
    result: list[tuple[str, str | None, bool]] = []
    length = len(text)
    index = 0
    while index < length:
        # Skip separators and whitespace between list members (RFC 9110 §5.6.1).
        while index < length and (text[index] == "," or text[index] in _WHITESPACE):
            index += 1
        if index >= length:
            break
        start = index
        while index < length and text[index] not in ",=":
            index += 1
        name = text[start:index].strip(_WHITESPACE).lower()
        argument: str | None = None
        well_formed = True
        if index < length and text[index] == "=":
            index += 1
            while index < length and text[index] in _WHITESPACE:
                index += 1
            if index < length and text[index] == '"':
                index += 1
                chars: list[str] = []
                closed = False
                while index < length:
                    char = text[index]
                    if char == "\\" and index + 1 < length:
                        chars.append(text[index + 1])
                        index += 2
                        continue
                    index += 1
                    if char == '"':
                        closed = True
                        break
                    chars.append(char)
                argument = "".join(chars)
                well_formed = closed
                # Anything but whitespace between the closing quote and the
                # next comma makes the argument malformed.
                rest_start = index
                while index < length and text[index] != ",":
                    index += 1
                if text[rest_start:index].strip(_WHITESPACE):
                    well_formed = False
            else:
                start = index
                while index < length and text[index] != ",":
                    index += 1
                argument = text[start:index].strip(_WHITESPACE)
        if _is_token(name):
            result.append((name, argument, well_formed))
    return result


def _delta_seconds(argument: str | None, well_formed: bool) -> int | None:
    """RFC 9111 §1.2.2 delta-seconds = 1*DIGIT, capped; None when malformed."""
    if argument is None or not well_formed or not argument:
        return None
    if not argument.isascii() or not argument.isdigit():
        return None
    # Avoid building huge ints from absurdly long digit strings.
    if len(argument) > 10:
        return DELTA_SECONDS_CAP
    return min(int(argument), DELTA_SECONDS_CAP)


def _field_names(argument: str) -> tuple[str, ...]:
    names: list[str] = []
    for part in argument.split(","):
        name = part.strip(_WHITESPACE).lower()
        if name and name not in names:
            names.append(name)
    return tuple(names)


def parse_cache_control(value: str | bytes | None) -> CacheControl:
    """Parse a Cache-Control, CDN-Cache-Control or Surrogate-Control value.

    Pass all field lines joined with ``", "`` (see ``headers.get_joined``).
    Returns :data:`EMPTY` for None or a value without directives.
    """
    if value is None:
        return EMPTY
    if isinstance(value, bytes):
        text = value.decode("latin-1")
    elif isinstance(value, str):
        text = value
    else:  # defensive: never raise
        return EMPTY
    directives = _split_directives(text)
    if not directives:
        return EMPTY

    values: dict[str, object] = {}
    invalid: set[str] = set()
    seen: set[str] = set()
    # For the list-valued directives: field names seen, and whether an
    # unqualified occurrence was seen.
    lists: dict[str, list[str]] = {}
    unqualified: set[str] = set()

    for name, argument, well_formed in directives:
        first = name not in seen
        seen.add(name)
        if name in _DELTA_DIRECTIVES:
            if not first:
                continue
            seconds = _delta_seconds(argument, well_formed)
            if seconds is None:
                invalid.add(name)
                seconds = 0
            values[_DELTA_DIRECTIVES[name]] = seconds
        elif name in _FLAG_DIRECTIVES:
            values[_FLAG_DIRECTIVES[name]] = True
        elif name == "max-stale":  # RFC 9111 §5.2.1.2: argument optional
            if not first:
                continue
            if argument is None:
                values["max_stale"] = DELTA_SECONDS_CAP
            else:
                seconds = _delta_seconds(argument, well_formed)
                if seconds is None:
                    invalid.add(name)
                    seconds = 0
                values["max_stale"] = seconds
        elif name in ("no-cache", "private"):  # RFC 9111 §5.2.2.4, §5.2.2.7
            fields = _field_names(argument) if argument is not None and well_formed else ()
            if argument is not None and not well_formed:
                invalid.add(name)
            merged = lists.setdefault(name, [])
            if not fields:
                unqualified.add(name)
            for field_name in fields:
                if field_name not in merged:
                    merged.append(field_name)

    def qualified(name: str) -> tuple[str, ...]:
        return () if name in unqualified else tuple(lists.get(name, ()))

    return CacheControl(
        no_store=bool(values.get("no_store", False)),
        no_cache="no-cache" in lists,
        no_cache_fields=qualified("no-cache"),
        private="private" in lists,
        private_fields=qualified("private"),
        public=bool(values.get("public", False)),
        must_revalidate=bool(values.get("must_revalidate", False)),
        proxy_revalidate=bool(values.get("proxy_revalidate", False)),
        max_age=_int_or_none(values.get("max_age")),
        s_maxage=_int_or_none(values.get("s_maxage")),
        stale_while_revalidate=_int_or_none(values.get("stale_while_revalidate")),
        stale_if_error=_int_or_none(values.get("stale_if_error")),
        immutable=bool(values.get("immutable", False)),
        only_if_cached=bool(values.get("only_if_cached", False)),
        max_stale=_int_or_none(values.get("max_stale")),
        min_fresh=_int_or_none(values.get("min_fresh")),
        no_transform=bool(values.get("no_transform", False)),
        must_understand=bool(values.get("must_understand", False)),
        invalid=frozenset(invalid),
        present=True,
    )


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_targeted(value: str | bytes | None) -> CacheControl:
    """Parse a targeted field such as CDN-Cache-Control (RFC 9213 §2.1).

    Pass all field lines joined with ``", "``.  See module invariants.
    """
    members = parse_dictionary(value)
    if not members:
        return EMPTY
    values: dict[str, object] = {}
    for name, member in members.items():
        if name in _DELTA_DIRECTIVES:
            seconds = member.value
            if isinstance(seconds, int) and not isinstance(seconds, bool) and seconds >= 0:
                values[_DELTA_DIRECTIVES[name]] = min(seconds, DELTA_SECONDS_CAP)
        elif name in _FLAG_DIRECTIVES:
            if member.value is True:
                values[_FLAG_DIRECTIVES[name]] = True
        elif name in ("no-cache", "private"):
            values[name] = _targeted_field_names(member)
    no_cache = values.get("no-cache")
    private = values.get("private")
    return CacheControl(
        no_store="no_store" in values,
        no_cache=no_cache is not None,
        no_cache_fields=no_cache if isinstance(no_cache, tuple) else (),
        private=private is not None,
        private_fields=private if isinstance(private, tuple) else (),
        public="public" in values,
        must_revalidate="must_revalidate" in values,
        proxy_revalidate="proxy_revalidate" in values,
        max_age=_int_or_none(values.get("max_age")),
        s_maxage=_int_or_none(values.get("s_maxage")),
        stale_while_revalidate=_int_or_none(values.get("stale_while_revalidate")),
        stale_if_error=_int_or_none(values.get("stale_if_error")),
        immutable="immutable" in values,
        only_if_cached="only_if_cached" in values,
        min_fresh=_int_or_none(values.get("min_fresh")),
        no_transform="no_transform" in values,
        must_understand="must_understand" in values,
        present=True,
    )


def _targeted_field_names(member: Member) -> tuple[str, ...]:
    """Field names of a qualified no-cache/private; ``()`` when unqualified."""
    value = member.value
    if isinstance(value, str):  # String or Token
        return _field_names(value)
    if isinstance(value, tuple):
        names = [item.value for item in value if isinstance(item.value, str)]
        return _field_names(",".join(names))
    return ()
