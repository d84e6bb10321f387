"""The "Why not cached" page: what the cache left out, counted by reason, with the top
URLs and sections of each and the change that would make them cacheable (or why leaving
them out is right); and, for one URL, the verdict on it.  The same report as
``GET /api/why`` and ``stoker why`` (:func:`~stoker.admin.why.site_report`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from starlette.requests import Request

from stoker.admin.views import Sources, View
from stoker.admin.views.html import Markup, esc, heading, moment, shown, table, url_attr
from stoker.admin.why import site_report, url_lookup
from stoker.purge.scope import PurgeRequestError

URLS_SHOWN: Final = 5
KINDS: Final[Mapping[str, tuple[str, str]]] = {
    "change": ("ok", "make it cacheable"), "origin": ("running", "fix at the origin"),
    "right": ("", "right not to cache")}
"""Each kind of advice: its tag's class and label."""


def prose(text: str) -> Markup:
    """``text`` escaped, its back-quoted parts set as code (the advice quotes settings and
    headers so).  Pure."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code at all
        return esc(text)
    return Markup("".join(f"<code>{esc(part)}</code>" if index % 2 else esc(part)
                          for index, part in enumerate(parts)))


def advice_html(advice: Sequence[Mapping[str, Any]]) -> Markup:
    """The advice for one reason: the sentence, its kind, the ``stoker.toml`` lines.  Pure."""
    items = []
    for item in advice:
        tone, label = KINDS.get(item["kind"], ("", item["kind"]))
        config = (f'<pre class="config"><code>{esc(item["config"])}</code></pre>'
                  if item.get("config") else "")
        items.append(f'<li><span class="tag {tone}">{esc(label)}</span> '
                     f'{prose(item["text"])}{config}</li>')
    return Markup(f'<ul class="advice">{"".join(items)}</ul>' if items else "")


def reason_html(found: Mapping[str, Any]) -> Markup:
    """One reason: its count and share, details, top URLs and sections, advice.  Pure."""
    details = ", ".join(f"{d['name']} ({shown(d['count'], 'count')})" for d in found["details"])
    urls = table(("URL", "Count"), [(Markup(f'<span class="detail">{esc(u["url"])}</span>'),
                                     shown(u["count"], "count"))
                                    for u in found["urls"][:URLS_SHOWN]],
                 empty="no URL kept", numeric=(1,), label=f"Top URLs: {found['reason']}")
    sections = ", ".join(f"{s['section']} ({shown(s['count'], 'count')})"
                         for s in found["sections"][:URLS_SHOWN])
    return Markup(
        f'<article class="card reason" id="reason-{esc(found["reason"])}">'
        f'<h2><code>{esc(found["reason"])}</code> <span class="count">'
        f'{esc(shown(found["count"], "count"))} · {esc(shown(found["share"], "percent"))}'
        f' of requests</span></h2><p class="detail">{esc(found["description"])}</p>'
        + (f"<p><strong>Seen with:</strong> {esc(details)}</p>" if details else "")
        + (f"<p><strong>Sections:</strong> {esc(sections)}</p>" if sections else "")
        + urls + advice_html(found["advice"]) + "</article>")


def report_html(found: Mapping[str, Any]) -> Markup:
    """The whole report.  Pure."""
    processes = ", ".join(found["processes"])
    summary = (f'<p class="summary"><strong>{esc(shown(found["not_cached"], "count"))}</strong>'
               f' responses not stored or requests that bypassed the cache, of '
               f'<strong>{esc(shown(found["requests"], "count"))}</strong> requests, '
               f"counted by {esc(processes)}.</p>")
    reasons = "".join(reason_html(reason) for reason in found["reasons"])
    return Markup(summary + (reasons or '<p class="empty">Everything asked for so far was '
                                        "cached.</p>"))


def url_html(found: Mapping[str, Any], now: float) -> Markup:
    """The verdict on one URL: cached or why not, the last record, the advice; a URL not
    requested yet is said calmly (plain muted text, not a red tag).  Pure."""
    last = found["last"]
    record = "" if last is None else (
        f'<p>Last: <code>{esc(last["reason"])}</code> ({esc(last["description"])}), '
        f"{esc(moment(last['at'], now))}, seen by {esc(last['seen_by'])}</p>")
    verdict = (f'<span class="tag {"ok" if found["cached"] else "failed"}">'
               f'{esc(found["verdict"])}</span>' if found["seen"]
               else f'<span class="detail">{esc(found["verdict"])}</span>')
    return Markup(f'<article class="card verdict"><h2 class="detail">{esc(found["url"])}</h2>'
                  f'<p>{verdict}</p>{record}'
                  f'{advice_html(found["advice"])}</article>')


def why_html(found: Mapping[str, Any], asked: str, lookup: Markup) -> str:
    """The page's content: the lookup form, the URL verdicts (``lookup``), the report.
    Pure."""
    form = (f'<form class="tool" method="get" {url_attr("action", "/why")}><label>Why is this '
            'URL not '
            f'cached?<input name="url" value="{esc(asked)}" placeholder="/blog/ or '
            'https://host/path" size="40"></label><button type="submit" class="act">Ask'
            "</button></form>")
    return (heading("Why not cached") + "<p class=\"lead\">What the cache left out and why, "
            "with the change that would make it cacheable — or why leaving it out is right."
            f" The same report on the command line: <code>stoker why</code>.</p>{form}"
            f"{lookup}<div data-live>{report_html(found)}</div>")


async def content(request: Request, sources: Sources) -> str:
    """The page for the running process (and, with ``?url=``, that URL's verdict)."""
    stoker = sources.stoker
    asked = request.query_params.get("url", "").strip()
    lookup = Markup("")
    if asked:
        try:
            verdicts = await url_lookup(stoker, request)
            lookup = Markup("".join(url_html(found, verdicts["now"])
                                    for found in verdicts["urls"]))
        except PurgeRequestError as error:
            lookup = Markup(f'<p class="flash bad">{esc(error)}</p>')
    return why_html(await site_report(stoker), asked, lookup)


VIEW: Final = View("Why not cached", "/why", content)
