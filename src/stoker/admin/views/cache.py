"""The Cache page: L1's and L2's figures, what the cache holds for a URL (every variant
with its freshness windows, tier and size, through ``GET /api/entry``'s
:func:`~stoker.admin.api.stored_keys`), and purges by URL, prefix or tag, hard or soft,
through ``POST /api/purge``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from starlette.requests import Request

from stoker.admin.api import asked_urls, stored_keys
from stoker.admin.views import Sources, View
from stoker.admin.views.html import (
    Markup,
    action,
    esc,
    facts,
    heading,
    link,
    moment,
    shown,
    span,
    url_attr,
)
from stoker.purge.scope import PurgeRequestError

STATES: Final[Mapping[str, tuple[str, str]]] = {
    "fresh": ("ok", "fresh"),
    "stale-while-revalidate": ("running", "stale: served while revalidating"),
    "stale-if-error": ("running", "stale: served only if the origin fails"),
    "expired": ("failed", "expired: kept to revalidate"),
}
"""Each freshness state: its tag's class and how the page says it."""
WINDOWS: Final = (("Stored", "stored_at"), ("Fresh until", "fresh_until"),
                  ("Stale until", "stale_until"), ("Error until", "error_until"),
                  ("Keep until", "keep_until"))
"""The freshness windows of a variant: label, field of :func:`describe_entry`."""


def figures_html(status: Mapping[str, Any], node: str) -> Markup:
    """The tiers' card: L1 (this process's memory) and L2 (the shared store) entries and
    bytes, from a composed status (``store`` left out when it could not be read).  Pure."""
    l1, l2 = status.get("l1") or {}, status.get("store") or {}
    return Markup(
        '<section class="card tiers" aria-label="Cache tiers"><h2>Tiers</h2>' + facts((
            (f"L1 entries ({node})", shown(l1.get("entries"), "count")),
            ("L1 bytes", shown(l1.get("bytes"), "bytes")),
            ("L2 entries (shared)", shown(l2.get("entries"), "count")),
            ("L2 bytes", shown(l2.get("bytes"), "bytes")),
            ("Writes waiting for L2", shown(status.get("pending_l2_writes"), "count")))) +
        '<p class="detail">L1 is the memory of each process; L2 is the store every node '
        "serving from it shares.</p></section>")


def tier_text(tier: Sequence[str], node: str) -> str:
    """Where a variant is held: L1 of ``node`` and/or the shared L2.  Pure."""
    held = [f"L1 of {node}"] if "l1" in tier else []
    if "l2" in tier:
        held.append("L2, shared by every node serving from this store")
    return " + ".join(held) or "—"


def variant_html(variant: Mapping[str, Any], now: float, node: str) -> Markup:
    """One stored variant: state, windows, age and TTL, tier, size, validators.  Pure."""
    tone, said = STATES.get(variant["state"], ("", variant["state"]))
    name = variant["variant"] or "(the only variant)"
    vary = ", ".join(variant["vary"]) or "—"
    tags = Markup(" ".join(f'<span class="tag">{esc(tag)}</span>' for tag in variant["tags"])
                  or "none")
    windows = [(label, moment(variant[field], now)) for label, field in WINDOWS]
    body = f"{shown(variant['size'], 'bytes')}, {variant['body']}"
    return Markup(
        f'<article class="card variant"><h3><code class="detail">{esc(name)}</code> '
        f'<span class="tag {tone}">{esc(said)}</span></h3>' + facts((
            ("Status", str(variant["status"])), ("Vary", vary), ("Tags", tags),
            *windows, ("Age", span(variant["age"])),
            ("TTL", span(variant["ttl"]) if variant["ttl"] > 0 else "none left"),
            ("Tier", tier_text(variant["tier"], node)), ("Size, body", body),
            ("ETag", variant["etag"] or "—"),
            ("Last-Modified", variant["last_modified"] or "—"))) + "</article>")


def purge_buttons(url: str) -> Markup:
    """Purge one URL hard (gone) or soft (marked stale), saying which (not left to
    ``purge_mode``).  Pure."""
    body: dict[str, Any] = {"urls": [url]}
    return Markup(
        action("Purge", "/api/purge", body={**body, "soft": False}, danger=True,
               confirm_label="Purge",
               confirm=f"Purge {url}? Every variant is gone; the next visitor waits for the "
                       "origin.", done="Entries purged: {purged}.[ {!relayed}Not relayed to "
                                       "the other nodes yet.]")
        + " " + action("Soft purge", "/api/purge", body={**body, "soft": True},
                       confirm_label="Mark stale",
                       confirm=f"Mark {url} stale? It is served while it revalidates.",
                       done="Entries marked stale: {purged}.[ {!relayed}Not relayed to the "
                            "other nodes yet.]"))


def key_html(found: Mapping[str, Any], now: float, node: str) -> Markup:
    """What the cache holds for one URL: its key, its variants, its purge buttons.  Pure."""
    variants = "".join(variant_html(variant, now, node) for variant in found["variants"])
    held = (f"{len(found['variants'])} variant{'s' if len(found['variants']) != 1 else ''}"
            if variants else "Not in the cache")
    return Markup(
        f'<section class="card lookup"><h2 class="detail">{esc(found["url"])}</h2>'
        f'<p><span class="tag {"ok" if variants else ""}">{esc(held)}</span> '
        f'key <code class="detail">{esc(found["key"])}</code></p>'
        f'<p class="buttons">{purge_buttons(found["url"])}</p>{variants}</section>')


def lookup_form(asked: str) -> Markup:
    """The GET form that looks a URL (or a path, on the site's hosts) up.  Pure."""
    return Markup(
        f'<form class="tool" method="get" {url_attr("action", "/cache")}><label>Look up a URL'
        f'<input name="url" value="{esc(asked)}" placeholder="/blog/ or https://host/path"'
        ' size="40"></label><button type="submit" class="act">Look up</button></form>')


def purge_form() -> Markup:
    """The purge form (kept out of the live regions: what is typed stays)."""
    return Markup(
        f'<form class="tool purge" data-api="{link("/api/purge")}" data-confirm-label="Purge" '
        'data-confirm='
        '"Purge these?[ URLs: {urls}.][ Prefixes: {prefixes}.][ Tags: {tags}.][{soft} Soft: '
        'marked stale, served while they revalidate.]" data-done="Entries purged[{soft} (soft: '
        'marked stale)]: {purged}.[ {!relayed}Not relayed to the other nodes yet.]" data-reset>'
        "<h2>Purge</h2><p class=\"detail\">One a line (or separated by spaces). Hard: gone, the "
        "next visitor waits for the origin; soft: marked stale, served while it revalidates.</p>"
        '<label>URLs or paths<textarea name="urls" data-list rows="3" cols="40" '
        'placeholder="https://host/page"></textarea></label>'
        '<label>Prefixes<textarea name="prefixes" data-list rows="3" cols="30" '
        'placeholder="/blog/"></textarea></label>'
        '<label>Tags<textarea name="tags" data-list rows="3" cols="24" placeholder="product-42">'
        "</textarea></label>"
        '<label class="check"><input type="checkbox" name="soft"> Soft</label>'
        '<button type="submit" class="danger">Purge…</button></form>')


def cache_html(status: Mapping[str, Any], node: str, asked: str, lookup: Markup) -> str:
    """The page's content: the tiers' card, the lookup form and its result (``lookup``),
    the purge form.  Pure."""
    return (heading("Cache") + '<p class="lead">What the cache holds for a URL, and purges '
            "by URL, prefix or tag.</p>"
            f"<div data-live>{figures_html(status, node)}</div>{lookup_form(asked)}"
            f"<div data-live>{lookup}</div>{purge_form()}")


async def lookup_html(request: Request, sources: Sources, node: str) -> Markup:
    """The asked URLs' keys and variants, the error if ``?url=`` stands for none."""
    stoker = sources.stoker
    try:
        urls = asked_urls(request, stoker)
    except PurgeRequestError as error:
        return Markup(f'<p class="flash bad">{esc(error)}</p>')
    now = stoker.clock.now()
    return Markup("".join(key_html(found, now, node)
                          for found in await stored_keys(stoker, urls, now)))


async def content(request: Request, sources: Sources) -> str:
    """The Cache page for the running process (with ``?url=``, what it holds for it)."""
    node = sources.stoker.settings.node_id or "this process"
    asked = request.query_params.get("url", "").strip()
    lookup = await lookup_html(request, sources, node) if asked else Markup("")
    return cache_html(await sources.status.compose(), node, asked, lookup)


VIEW: Final = View("Cache", "/cache", content)
