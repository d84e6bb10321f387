"""HTTP caching semantics (RFC 9110, 9111, 9211, 9213, 5861) as pure functions.

Invariants: nothing in this package performs I/O or reads a clock; every
time is passed in as float epoch seconds; parsers of header values never
raise on malformed input.  Headers are ASGI-style ``list[tuple[bytes, bytes]]``
with lower-case names.
"""
