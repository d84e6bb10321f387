"""The dashboard's pages past the overview, one module per page.

A page is a :class:`View`: its place in the navigation and an async ``content`` function
that reads what the page shows (through the same functions as the JSON API, so a page and
its API never disagree) and renders it with the pure functions of its module, every value
escaped (:mod:`stoker.admin.views.html`).  :mod:`stoker.admin.pages` serves each view
whole, or only its content when ``dashboard.js`` asks for it (``X-Stoker-Part: 1``) to
refresh the page's live region after a status event or an action.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import Request

if TYPE_CHECKING:  # the assembly is above the admin layer: its types only
    from stoker.admin.facade import RunningStoker, RunningWarmer
    from stoker.admin.status import StatusSource


@dataclass(frozen=True, slots=True)
class Sources:
    """What a page may read: the running Stoker, its warmer (``None``: no warmer in this
    process, so its pages say how to get one) and the composed status the overview and
    ``/api/status`` show (its store figures memoized, so a page reading it asks no more
    of the stores than the event stream does)."""

    stoker: RunningStoker
    warm: RunningWarmer | None
    status: StatusSource


@dataclass(frozen=True, slots=True)
class View:
    """One page: its navigation label, its path, and its content for a request (trusted
    HTML, rendered from escaped values)."""

    label: str
    path: str
    content: Callable[[Request, Sources], Awaitable[str]]
