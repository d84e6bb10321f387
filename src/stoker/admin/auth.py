"""Admin API authentication: bearer tokens, fingerprints, loopback checks.  Pure.

Rule (documented in docs/admin.md): when ``admin_token`` is configured, every
``/api`` route requires ``Authorization: Bearer <token>``; when none is
configured the admin listener must be on a loopback address (enforced at
start-up) and the API is open to local clients only.

Invariants:
- Tokens are compared with :func:`hmac.compare_digest` (constant time).
- A token is never logged or stored: :func:`fingerprint` (first 12 hex
  digits of its SHA-256) identifies it in the audit log.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from stoker.config.settings import is_loopback_host

__all__ = ["ANONYMOUS", "AuthDecision", "authenticate", "bearer_token", "fingerprint",
           "host_of", "is_loopback_host"]

ANONYMOUS = "anonymous"


def fingerprint(token: str) -> str:
    """A short, stable, non-reversible identifier of ``token``."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()[:12]


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer …`` value (None when absent or another scheme)."""
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


@dataclass(frozen=True, slots=True)
class AuthDecision:
    """Whether a request may use the API, and who it is for the audit log."""

    allowed: bool
    actor: str


def authenticate(configured: str | None, presented: str | None) -> AuthDecision:
    """Check ``presented`` against the ``configured`` token (open when none is configured)."""
    if configured is None:
        return AuthDecision(True, f"token:{fingerprint(presented)}" if presented else ANONYMOUS)
    if presented is None:
        return AuthDecision(False, ANONYMOUS)
    ok = hmac.compare_digest(presented.encode("utf-8"), configured.encode("utf-8"))
    return AuthDecision(ok, f"token:{fingerprint(presented)}")


def host_of(address: str) -> str:
    """The host part of ``HOST:PORT`` / ``[v6]:PORT`` / ``HOST``."""
    address = address.strip()
    if address.startswith("["):
        return address[1:].partition("]")[0]
    host, sep, port = address.rpartition(":")
    return host if sep and port.isdigit() and ":" not in host else address
