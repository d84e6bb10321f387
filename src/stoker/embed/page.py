"""``@stoker.page(ttl=…, swr=…, tags=…)``: one route's cache lifetime and tags, set on its
response (as Django's ``cache_page`` does), for the middleware in front to store.

Invariants: the decorator is checked when it is applied (a bad duration or a ``tags``
that is not callable raises naming the argument); the view keeps its signature
(FastAPI and Django read it); its response gets ``Cache-Control: max-age=TTL`` with the
stale windows asked for (so a browser keeps it that long too, as with ``cache_page``)
and the tags in the first ``tag_headers`` field, replacing what the view set there; a
view returning something that is not a response object raises ``TypeError`` naming it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar, cast

from stoker.config.units import parse_duration
from stoker.purge.scope import PurgeRequestError, check_tag

F = TypeVar("F", bound=Callable[..., Any])
TagsOf = Callable[..., Iterable[str]]


def cache_control(ttl: float, swr: float, sie: float) -> str:
    """The ``Cache-Control`` value of a page fresh ``ttl`` seconds.  Pure."""
    parts = [f"max-age={int(ttl)}"]
    if swr:
        parts.append(f"stale-while-revalidate={int(swr)}")
    if sie:
        parts.append(f"stale-if-error={int(sie)}")
    return ", ".join(parts)


def page_tags(tags: TagsOf | None, params: Mapping[str, Any]) -> str | None:
    """The tag field's value for a request with path parameters ``params`` (``None``: no
    tags).  Raises ``ValueError`` naming ``tags`` for a tag that cannot be one."""
    if tags is None:
        return None
    found = list(dict.fromkeys(tags(**accepted(tags, params))))
    try:
        return " ".join(check_tag(str(tag), "tags") for tag in found) or None
    except PurgeRequestError as error:
        raise ValueError(str(error)) from None


def accepted(function: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Those of ``params`` that ``function`` takes by name (all, if it takes ``**``)."""
    taken = inspect.signature(function).parameters.values()
    if any(each.kind is inspect.Parameter.VAR_KEYWORD for each in taken):
        return dict(params)
    names = {each.name for each in taken}
    return {name: value for name, value in params.items() if name in names}


def _seconds(value: str | float, name: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None


def page(*, ttl: str | float, swr: str | float = 0, sie: str | float = 0,
         tags: TagsOf | None = None, tag_header: str = "surrogate-key") -> Callable[[F], F]:
    """Decorate one view (see the module invariants); ``tags`` is called with those of
    the request's path parameters it names (all of them, with ``**params``)."""
    control = cache_control(_seconds(ttl, "ttl"), _seconds(swr, "swr"), _seconds(sie, "sie"))
    if tags is not None and not callable(tags):
        raise TypeError("tags must be a function of the path parameters, e.g. "
                        "tags=lambda slug: [f'post-{slug}']")

    def mark(response: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        value = page_tags(tags, path_params(args, kwargs))
        set_header(response, "Cache-Control", control)
        if value is not None:
            set_header(response, tag_header, value)
        return response

    def decorate(view: F) -> F:
        if inspect.iscoroutinefunction(view):
            @functools.wraps(view)
            async def async_view(*args: Any, **kwargs: Any) -> Any:
                return mark(await view(*args, **kwargs), args, kwargs)

            return cast(F, async_view)

        @functools.wraps(view)
        def sync_view(*args: Any, **kwargs: Any) -> Any:
            return mark(view(*args, **kwargs), args, kwargs)

        return cast(F, sync_view)

    return decorate


def path_params(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A view's path parameters: its keyword arguments (Django, FastAPI), else its
    request's ``path_params`` (Starlette)."""
    if kwargs:
        return kwargs
    found = getattr(args[0], "path_params", None) if args else None
    return dict(found) if isinstance(found, Mapping) else {}


def set_header(response: Any, name: str, value: str) -> None:
    """Set a header on a Starlette (``response.headers``) or Django (``response[name]``)
    response."""
    headers = getattr(response, "headers", None)
    if headers is not None and hasattr(headers, "__setitem__"):
        headers[name] = value
    elif hasattr(response, "__setitem__"):
        response[name] = value
    else:
        raise TypeError(f"@stoker.page needs the view to return a response object, got "
                        f"{type(response).__name__} (FastAPI: return a Response or "
                        "JSONResponse)")
