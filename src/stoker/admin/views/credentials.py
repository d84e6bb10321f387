"""The Credentials page: the warm credentials ``warm_credentials`` allows, whether each is
set, when, and its fingerprint (never its value, which no API returns), with a form to
set each and a button to remove it.  Read through
:func:`~stoker.admin.warm_api.credentials_json`, as ``GET /api/warm/credentials``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

from starlette.requests import Request

from stoker.admin.views import Sources, View
from stoker.admin.views.html import (
    Markup,
    action,
    esc,
    heading,
    link,
    moment,
    no_warmer,
    table,
)
from stoker.admin.warm_api import credentials_json

TITLE: Final = "Warm credentials"
KINDS: Final[Mapping[str, str]] = {"header": "header", "cookie": "cookie"}
"""The kinds of name (``header:NAME``, ``cookie:NAME``) as the page says them."""
ABOUT: Final = Markup(
    '<p class="lead">Headers and cookies the warmer sends the origin on its visits (never a '
    "visitor's request), e.g. a header that lets it past a maintenance page. Values are "
    "write-only: kept across restarts, never shown again, audited by their SHA-256 "
    "fingerprint.</p>")
HOW_TO_ALLOW: Final = Markup(
    '<p class="notice">No warm credential is allowed. Name the ones the warmer may send in '
    "the <code>warm_credentials</code> setting, e.g. in <code>stoker.toml</code>:</p>"
    '<pre class="config"><code>warm_credentials = ["header:x-bypass-maintenance", '
    '"cookie:age_ok"]</code></pre>')


def api_path(name: str) -> str:
    """The API path of one credential (its name URL-encoded).  Pure."""
    return f"/api/warm/credentials/{quote(name, safe='')}"


def name_html(name: str) -> Markup:
    """A credential's name: its kind (header or cookie) and the bare name.  Pure."""
    kind, _, bare = name.partition(":")
    return Markup(f'<span class="tag">{esc(KINDS.get(kind, kind))}</span> '
                  f"<code>{esc(bare or name)}</code>")


def remove_button(name: str) -> Markup:
    """Remove one credential, through a confirm dialog.  Pure."""
    return action("Remove", api_path(name), method="DELETE", danger=True,
                  confirm=f"Remove the warm credential {name}? The warmer stops sending it.",
                  confirm_label="Remove", done=f"Removed {name}.")


def rows_html(credentials: Sequence[Mapping[str, Any]], now: float) -> Markup:
    """The credentials' table: name, set or not, when, fingerprint, remove.  Pure."""
    rows = [(name_html(c["name"]),
             Markup('<span class="tag ok">set</span>' if c["set"] else
                    '<span class="tag">not set</span>'),
             moment(c["set_at"], now), Markup(f'<code>{esc(c["fingerprint"])}</code>')
             if c["set"] else "—", remove_button(c["name"]) if c["set"] else "")
            for c in credentials]
    return table(("Name", "State", "Set", "Fingerprint", ""), rows, empty="none allowed",
                 label="Warm credentials")


def set_form(name: str) -> Markup:
    """The form that sets one credential's value (sent, then cleared from the page).
    Pure."""
    return Markup(
        f'<form class="tool credential" data-api="{link("/api/warm/credentials")}/{{name}}" '
        f'data-method="PUT" data-done="Saved {{name}}: {{fingerprint}}." data-reset>'
        f'<input type="hidden" name="name" value="{esc(name)}">'
        f"<label><span>{name_html(name)}</span><input type=\"password\" name=\"value\" required "
        'autocomplete="off" placeholder="new value" size="28"></label>'
        '<button type="submit" class="act">Save</button></form>')


def credentials_html(credentials: Sequence[Mapping[str, Any]], now: float) -> str:
    """The page's content, from :func:`credentials_json` rows.  Pure."""
    if not credentials:  # nothing live: no pill
        return heading(TITLE, live=False) + ABOUT + HOW_TO_ALLOW
    forms = "".join(set_form(c["name"]) for c in credentials)
    return (f"{heading(TITLE)}{ABOUT}<div data-live>{rows_html(credentials, now)}"
            f"</div><h2>Set a value</h2>{forms}")


async def content(_: Request, sources: Sources) -> str:
    """The Credentials page for the running process."""
    if sources.warm is None:
        return heading(TITLE, live=False) + no_warmer()
    listed = await credentials_json(sources.warm.credentials)
    return credentials_html(listed, sources.stoker.clock.now())


VIEW: Final = View("Credentials", "/credentials", content)
