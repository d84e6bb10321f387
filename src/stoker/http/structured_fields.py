"""RFC 8941 Structured Field Dictionaries and Lists: the parsers CDN-Cache-Control
(a Dictionary, RFC 9213 §2.1; a value that fails to parse is ignored as a whole) and
Cache-Status (a List, RFC 9211 §2) need.

Invariants:
- :func:`parse_dictionary` and :func:`parse_list` never raise: they return the
  parsed members, or None when the input is not a valid Dictionary / List (RFC 8941
  §4.2: any parse error fails the whole field).  They follow the parsing algorithms
  of RFC 8941 §4.2.1, §4.2.2 and §4.2.3 to the letter; values are ``int`` (Integer), ``float``
  (Decimal), ``str`` (String), :class:`Token`, ``bytes`` (Byte Sequence),
  ``bool`` (Boolean), or a tuple of :class:`Member` (Inner List).
- Keys are unique; a repeated key keeps its last value, in the position of
  its first occurrence (§4.2.2 "overwrite").  A member without ``=`` has the
  value ``True``.
- Pure: no I/O, no clock.
"""

from __future__ import annotations

import base64
import binascii
import string
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


class Token(str):
    """An sf-token (distinct from an sf-string of the same text)."""

    __slots__ = ()


BareItem = int | float | str | Token | bytes | bool
Params = dict[str, BareItem]


@dataclass(frozen=True, slots=True)
class Member:
    """A Dictionary member or Inner List item: a value and its parameters."""

    value: BareItem | tuple[Member, ...]
    params: Params = field(default_factory=dict)


class _Invalid(Exception):
    """Raised inside the parser; :func:`parse_dictionary` turns it into None."""


_LCALPHA = frozenset(string.ascii_lowercase)
_DIGITS = frozenset(string.digits)
_KEY_CHARS = _LCALPHA | _DIGITS | frozenset("_-.*")
_TCHARS = frozenset("!#$%&'*+-.^_`|~") | _DIGITS | frozenset(string.ascii_letters)
_TOKEN_CHARS = _TCHARS | frozenset(":/")
_BASE64_CHARS = frozenset(string.ascii_letters + string.digits + "+/=")
_STRING_CHARS = frozenset(chr(code) for code in range(0x20, 0x7F)) - {'"', "\\"}


class _Input:
    """The remaining input string, consumed from the left."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        if not char:
            raise _Invalid("unexpected end of input")
        self.pos += 1
        return char

    def skip(self, chars: Container[str]) -> None:
        while self.peek() and self.peek() in chars:
            self.pos += 1


def parse_dictionary(value: str | bytes | None) -> dict[str, Member] | None:
    """The members of a Dictionary field value, or None when it does not parse."""
    return _parse(value, _dictionary)


def parse_list(value: str | bytes | None) -> list[Member] | None:
    """The members of a List field value, or None when it does not parse."""
    return _parse(value, _list)


def _parse(value: str | bytes | None, grammar: Callable[[_Input], T]) -> T | None:
    if value is None:
        return None
    text = value.decode("latin-1") if isinstance(value, bytes) else value
    if not text.isascii():
        return None
    source = _Input(text)
    source.skip(" ")
    try:
        members = grammar(source)
    except _Invalid:
        return None
    source.skip(" ")
    return members if source.pos == len(text) else None


def _dictionary(source: _Input) -> dict[str, Member]:
    members: dict[str, Member] = {}
    while source.peek():
        key = _key(source)
        if source.peek() == "=":
            source.take()
            members[key] = _item_or_inner_list(source)
        else:
            members[key] = Member(True, _parameters(source))
        if not _next_member(source):
            break
    return members


def _list(source: _Input) -> list[Member]:
    members: list[Member] = []
    while source.peek():
        members.append(_item_or_inner_list(source))
        if not _next_member(source):
            break
    return members


def _next_member(source: _Input) -> bool:
    """Past the comma before the next member: True, or False at the end of the input."""
    source.skip(" \t")
    if not source.peek():
        return False
    if source.take() != ",":
        raise _Invalid("expected a comma between members")
    source.skip(" \t")
    if not source.peek():
        raise _Invalid("trailing comma")
    return True


def _key(source: _Input) -> str:
    first = source.peek()
    if not first or (first not in _LCALPHA and first != "*"):
        raise _Invalid("a key starts with a lower-case letter or '*'")
    start = source.pos
    source.skip(_KEY_CHARS)
    return source.text[start : source.pos]


def _item_or_inner_list(source: _Input) -> Member:
    if source.peek() != "(":
        return Member(_bare_item(source), _parameters(source))
    source.take()
    items: list[Member] = []
    while True:
        source.skip(" ")
        if source.peek() == ")":
            source.take()
            return Member(tuple(items), _parameters(source))
        items.append(Member(_bare_item(source), _parameters(source)))
        if source.peek() not in (" ", ")"):
            raise _Invalid("inner list items are separated by spaces")


def _parameters(source: _Input) -> Params:
    params: Params = {}
    while source.peek() == ";":
        source.take()
        source.skip(" ")
        key = _key(source)
        value: BareItem = True
        if source.peek() == "=":
            source.take()
            value = _bare_item(source)
        params[key] = value
    return params


def _bare_item(source: _Input) -> BareItem:
    first = source.peek()
    if first == "-" or first in _DIGITS:
        return _number(source)
    if first == '"':
        return _string(source)
    if first == "*" or first in string.ascii_letters:
        return _token(source)
    if first == ":":
        return _byte_sequence(source)
    if first == "?":
        return _boolean(source)
    raise _Invalid("not the start of an item")


def _number(source: _Input) -> int | float:
    sign = 1
    if source.peek() == "-":
        source.take()
        sign = -1
    if source.peek() not in _DIGITS:
        raise _Invalid("a number needs a digit")
    start = source.pos
    decimal = False
    while (char := source.peek()) and (char in _DIGITS or (char == "." and not decimal)):
        if char == ".":
            if source.pos - start > 12:
                raise _Invalid("decimal integer part too long")
            decimal = True
        source.pos += 1
        if source.pos - start > (16 if decimal else 15):
            raise _Invalid("number too long")
    digits = source.text[start : source.pos]
    if not decimal:
        return sign * int(digits)
    if digits.endswith(".") or len(digits.split(".")[1]) > 3:
        raise _Invalid("a decimal has 1 to 3 fraction digits")
    return sign * float(digits)


def _string(source: _Input) -> str:
    source.take()
    chars: list[str] = []
    while True:
        char = source.take()
        if char == "\\":
            escaped = source.take()
            if escaped not in ('"', "\\"):
                raise _Invalid("only \\\" and \\\\ are escapes")
            chars.append(escaped)
        elif char == '"':
            return "".join(chars)
        elif char not in _STRING_CHARS:
            raise _Invalid("control or non-ASCII character in a string")
        else:
            chars.append(char)


def _token(source: _Input) -> Token:
    start = source.pos
    source.pos += 1
    source.skip(_TOKEN_CHARS)
    return Token(source.text[start : source.pos])


def _byte_sequence(source: _Input) -> bytes:
    source.take()
    start = source.pos
    source.skip(_BASE64_CHARS)
    encoded = source.text[start : source.pos]
    if source.take() != ":":
        raise _Invalid("a byte sequence ends with ':'")
    try:
        return base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
    except binascii.Error as error:
        raise _Invalid("bad base64") from error


def _boolean(source: _Input) -> bool:
    source.take()
    char = source.take()
    if char not in ("0", "1"):
        raise _Invalid("a boolean is ?0 or ?1")
    return char == "1"
