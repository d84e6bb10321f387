"""Whether, and for how long, a shared cache may store a response.

RFC 9111 §3 (storing), §4.2 (freshness), RFC 5861 (stale-while-revalidate,
stale-if-error), RFC 9213 (CDN-Cache-Control) and the Edge Architecture
Surrogate-Control field, combined with the site owner's rules.

Invariants of :func:`decide_storage`:
- Pure and total: no clock reads, no I/O, no exceptions on malformed headers.
- ``store`` is False whenever the method is not GET, the status is 1xx, 206,
  304 or not a 3-digit code, the request says ``no-store``, the field in
  effect says ``no-store`` without ``must-understand``, the field in effect
  says ``must-understand`` and the status is not in
  ``UNDERSTOOD_STATUSES``, the field in effect says ``private`` (qualified or not),
  the response has ``Set-Cookie`` and the rule does not strip it, or
  ``Vary: *``.  ``reason == "ok"`` iff ``store``.
- ``fresh_for``, ``swr``, ``sie``, ``keep`` and ``initial_age`` are all >= 0.
- ``revalidate_only`` implies ``swr == sie == 0``; origin ``no-cache``
  (qualified or not) implies ``fresh_for == 0`` unless a rule overrides.
- ``strip_set_cookie`` is True only when the response has Set-Cookie and the
  matched rule allows stripping it.
- ``stale_on_error_ok`` is False when ``must-revalidate``,
  ``proxy-revalidate``, ``no-cache`` or ``s-maxage`` (which implies
  proxy-revalidate, RFC 9111 §5.2.2.10) forbid serving the response stale
  beyond what the origin itself allows (``stale-if-error``), unless an
  overriding rule replaced the origin's directives.
- ``origin_vouched`` is True only when the origin's own headers made the
  response shareable: an explicit lifetime (``s-maxage``, ``max-age``,
  ``Expires``, or a targeted field's ``max-age``) that no overriding rule
  replaced, or ``public``.  A lifetime from a rule, a default, the heuristic
  or validators alone never vouches.

Choices (each is stricter than or equal to the RFC, or follows the operator):
- Qualified ``no-cache="field"`` is treated like unqualified ``no-cache``
  (RFC 9111 §5.2.2.4 allows a cache to do so; re-validating only some fields
  is not something a stored response can express).
- A rule with ``override=True`` replaces the origin's lifetime directives:
  ``no-cache``, ``must-revalidate`` and ``proxy-revalidate`` are then not
  honoured (the operator chose the ttl/swr/sie).  Storage prohibitions
  (no-store, private, Authorization, Set-Cookie, Vary: *) still are.
- With only a rule, heuristic or validator-only lifetime, a status outside
  the heuristically cacheable set is also accepted when the field in effect
  says ``public`` (RFC 9111 §3 and §4.2.2 allow exactly this).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .cache_control import CacheControl, parse_cache_control, parse_targeted
from .freshness import (
    HEURISTICALLY_CACHEABLE,
    UNDERSTOOD_STATUSES,
    corrected_initial_age,
    expires_lifetime,
    heuristic_lifetime,
)
from .headers import get_all, get_header, get_joined, vary_names


@dataclass(frozen=True, slots=True)
class RuleTTL:
    """What a matched site-owner ``[[rule]]`` says (values in seconds)."""

    ttl: float | None = None
    swr: float | None = None
    sie: float | None = None
    override: bool = False  # True: rule ttl/swr/sie replace what the origin sends
    strip_set_cookie: bool = False  # True: store a Set-Cookie response without Set-Cookie


@dataclass(frozen=True, slots=True)
class StaleDefaults:
    """Per-config defaults when neither the origin nor a rule says."""

    swr: float = 0.0
    sie: float = 0.0
    keep: float = 0.0  # extra seconds to keep an expired entry that has a validator
    heuristic_fraction: float = 0.1
    heuristic_max: float = 86400.0


@dataclass(frozen=True, slots=True)
class StorageDecision:
    """The outcome of :func:`decide_storage`.  See the module invariants."""

    store: bool
    reason: str
    fresh_for: float = 0.0
    swr: float = 0.0
    sie: float = 0.0
    keep: float = 0.0
    initial_age: float = 0.0
    source: str = ""
    strip_set_cookie: bool = False
    revalidate_only: bool = False
    origin_vouched: bool = False
    stale_on_error_ok: bool = False


ORIGIN_SOURCES = frozenset({"s-maxage", "max-age", "expires", "cdn-cache-control",
                            "surrogate-control"})
"""``StorageDecision.source`` values that are the origin's own explicit lifetime."""


def _refuse(reason: str) -> StorageDecision:
    return StorageDecision(store=False, reason=reason)


def _nonneg(value: float) -> float:
    # NaN compares false everywhere; treat it as 0 rather than let it through.
    return value if value > 0.0 else 0.0


def _surrogate_view(surrogate: CacheControl) -> CacheControl:
    """Surrogate-Control directives we honour: max-age, no-store, swr, sie."""
    return CacheControl(
        no_store=surrogate.no_store,
        max_age=surrogate.max_age,
        stale_while_revalidate=surrogate.stale_while_revalidate,
        stale_if_error=surrogate.stale_if_error,
        invalid=surrogate.invalid,
        present=True,
    )


def field_in_effect(
    response_headers: Sequence[tuple[bytes, bytes]],
) -> tuple[CacheControl, str]:
    """The Cache-Control-like field this cache obeys, and its name.

    RFC 9213 §2.1: a targeted field with a valid non-empty value replaces
    Cache-Control (and Expires); one that is not a valid Structured Field
    Dictionary is ignored.  CDN-Cache-Control comes first, then
    Surrogate-Control; otherwise Cache-Control (possibly :data:`EMPTY`).
    """
    cdn = parse_targeted(get_joined(response_headers, b"cdn-cache-control"))
    if cdn.present:
        return cdn, "cdn-cache-control"
    surrogate = parse_cache_control(get_joined(response_headers, b"surrogate-control"))
    if surrogate.present:
        return _surrogate_view(surrogate), "surrogate-control"
    return parse_cache_control(get_joined(response_headers, b"cache-control")), "cache-control"


def shareable_with_authorization(response_headers: Sequence[tuple[bytes, bytes]]) -> bool:
    """True when a response to a request with Authorization may be shared.

    RFC 9111 §3.5: only with ``public``, ``s-maxage`` or ``must-revalidate``
    in Cache-Control, or ``public`` / ``must-revalidate`` in the
    CDN-Cache-Control in effect (RFC 9213 §2.1).  A cache must not store or
    reuse such a response otherwise.
    """
    cc = parse_cache_control(get_joined(response_headers, b"cache-control"))
    if cc.public or cc.s_maxage is not None or cc.must_revalidate:
        return True
    targeted, field_name = field_in_effect(response_headers)
    return field_name == "cdn-cache-control" and (targeted.public or targeted.must_revalidate)


def shared_beyond_credentials(response_headers: Sequence[tuple[bytes, bytes]]) -> bool:
    """True when a response to a request with Authorization says it is for everyone:
    ``public`` or ``s-maxage`` in Cache-Control, or ``public`` in the CDN-Cache-Control in
    effect.  ``must-revalidate`` alone lets a cache store such a response (RFC 9111 §3.5)
    but says nothing about who it is for: a shared fetch led by such a request hands
    its answer to no one else (:class:`~stoker.cache.collapse.Flight`)."""
    cc = parse_cache_control(get_joined(response_headers, b"cache-control"))
    if cc.public or cc.s_maxage is not None:
        return True
    targeted, field_name = field_in_effect(response_headers)
    return field_name == "cdn-cache-control" and targeted.public


def decide_storage(
    *,
    method: str,
    status: int,
    request_headers: Sequence[tuple[bytes, bytes]],
    response_headers: Sequence[tuple[bytes, bytes]],
    request_time: float,
    response_time: float,
    rule: RuleTTL | None,
    defaults: StaleDefaults,
) -> StorageDecision:
    """Decide whether to store a response, and its lifetimes.  See module docs."""
    # RFC 9111 §3: the method must be understood and cacheable; we store GET
    # only (RFC 9110 §9.1: method names are case-sensitive).
    if method != "GET":
        return _refuse("method")
    # RFC 9111 §3.3/§3.4: we do not store or combine partial content.
    if status == 206:
        return _refuse("partial")
    # RFC 9111 §3: final responses only; a 304 updates, never replaces (§4.3.4).
    if status < 200 or status > 999 or status == 304:
        return _refuse("status")

    cc, field_name = field_in_effect(response_headers)
    request_cc = parse_cache_control(get_joined(request_headers, b"cache-control"))

    # RFC 9111 §5.2.2.3: must-understand limits storing to caches that know
    # the status code's caching rules, and for those it overrides no-store.
    if cc.must_understand and status not in UNDERSTOOD_STATUSES:
        return _refuse("must-understand")
    # RFC 9111 §3: no-store in the request or the response forbids storing.
    if request_cc.no_store or (cc.no_store and not cc.must_understand):
        return _refuse("no-store")
    # RFC 9111 §5.2.2.7: a shared cache must not store private responses.
    if cc.private:
        return _refuse("private")
    # RFC 9111 §3.5: Authorization needs explicit permission for shared caches.
    if get_header(request_headers, b"authorization") is not None and not (
        shareable_with_authorization(response_headers)
    ):
        return _refuse("authorization")
    # RFC 6265 §7/§8 and RFC 9111 §7.3 "Set-Cookie ... must not be shared".
    has_set_cookie = get_header(response_headers, b"set-cookie") is not None
    strip_set_cookie = has_set_cookie and rule is not None and rule.strip_set_cookie
    if has_set_cookie and not strip_set_cookie:
        return _refuse("set-cookie")
    # RFC 9111 §4.1: "Vary: *" always fails to match.
    if vary_names(response_headers) is None:
        return _refuse("vary-star")

    overriding = rule is not None and rule.override
    date_header = get_header(response_headers, b"date")
    last_modified = get_header(response_headers, b"last-modified")
    has_validator = last_modified is not None or get_header(response_headers, b"etag") is not None

    # RFC 9111 §4.2.1: explicit lifetime, s-maxage > max-age > Expires.
    fresh_for: float | None = None
    source = ""
    if overriding and rule is not None and rule.ttl is not None:
        fresh_for, source = rule.ttl, "rule-override"
    elif field_name == "cache-control" and cc.s_maxage is not None:
        fresh_for, source = float(cc.s_maxage), "s-maxage"
    elif cc.max_age is not None:
        source = "max-age" if field_name == "cache-control" else field_name
        fresh_for = float(cc.max_age)
    elif field_name == "cache-control":
        # RFC 9213 §2.1: Expires is ignored when a targeted field is in effect.
        fresh_for = expires_lifetime(
            expires_values=get_all(response_headers, b"expires"),
            date_header=date_header,
            response_time=response_time,
        )
        source = "expires" if fresh_for is not None else ""

    if fresh_for is None:
        # No explicit freshness: RFC 9111 §3 needs a heuristically cacheable
        # status (RFC 9110 §15.1) or an explicit "public".
        if status not in HEURISTICALLY_CACHEABLE and not cc.public:
            return _refuse("status")
        heuristic = heuristic_lifetime(
            last_modified_header=last_modified,
            date_header=date_header,
            response_time=response_time,
            fraction=defaults.heuristic_fraction,
            maximum=defaults.heuristic_max,
        )
        if rule is not None and rule.ttl is not None:
            fresh_for, source = rule.ttl, "rule"
        elif heuristic is not None:  # RFC 9111 §4.2.2
            fresh_for, source = heuristic, "heuristic"
        elif has_validator:  # stored stale, to be revalidated (RFC 9111 §4.3)
            fresh_for, source = 0.0, "validator-only"
        else:
            return _refuse("no-freshness")

    # RFC 5861: the origin's stale windows, else the rule's, else the defaults;
    # an overriding rule's values win when set.
    swr = _pick(cc.stale_while_revalidate, rule.swr if rule else None, defaults.swr, overriding)
    sie = _pick(cc.stale_if_error, rule.sie if rule else None, defaults.sie, overriding)

    revalidate_only = False
    if not overriding:
        if cc.no_cache:  # RFC 9111 §5.2.2.4: must revalidate before every reuse
            fresh_for = 0.0
            revalidate_only = True
        # RFC 9111 §5.2.2.2 / §5.2.2.8: never serve stale (RFC 5861 §4
        # notes these override stale-while-revalidate / stale-if-error).
        if cc.must_revalidate or cc.proxy_revalidate:
            revalidate_only = True
    if revalidate_only:
        swr = sie = 0.0

    return StorageDecision(
        store=True,
        reason="ok",
        fresh_for=_nonneg(fresh_for),
        swr=_nonneg(swr),
        sie=_nonneg(sie),
        keep=_nonneg(defaults.keep) if has_validator else 0.0,
        initial_age=corrected_initial_age(
            age_header=get_header(response_headers, b"age"),
            date_header=date_header,
            request_time=request_time,
            response_time=response_time,
        ),
        source=source,
        strip_set_cookie=strip_set_cookie,
        revalidate_only=revalidate_only,
        origin_vouched=source in ORIGIN_SOURCES or (cc.public and not overriding),
        # RFC 9111 §5.2.2.10: s-maxage implies proxy-revalidate for a shared cache.
        stale_on_error_ok=not revalidate_only and (
            overriding or field_name != "cache-control" or cc.s_maxage is None),
    )


def _pick(origin: int | None, from_rule: float | None, default: float, overriding: bool) -> float:
    if overriding and from_rule is not None:
        return from_rule
    if origin is not None:
        return float(origin)
    if from_rule is not None:
        return from_rule
    return default
