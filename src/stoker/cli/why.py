"""``stoker why [URL]``: what a running Stoker did not cache, why, and the change that
would make it cacheable — the admin API's ``GET /api/why`` in the terminal.

What is printed is computed by pure functions of the API's answer (:func:`report_table`,
:func:`reason_lines`, :func:`url_lines`); the fetching and printing are in :func:`why`.

Invariants: ``--json`` writes exactly the API's JSON document to stdout and nothing else
(errors go to stderr); text is printed as it is, never read as markup (``[[rule]]``
stays); a Stoker that cannot be reached is one ``error:`` line and exit 1, as for every
command that talks to a running Stoker.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, Final

import typer
from rich.table import Table
from rich.text import Text

from stoker.cli.common import (
    AdminTokenOpt,
    AdminUrlOpt,
    ConfigOpt,
    HostOpt,
    admin_client,
    fail,
    output,
)
from stoker.text import plural

KIND_LABELS: Final[Mapping[str, str]] = {
    "change": "change", "origin": "at the origin", "right": "right as is"}
"""How each kind of advice is labelled."""


def report_table(report: Mapping[str, Any], *, title: str) -> Table:
    """The reasons as one table: reason, count, share of all requests, what it means and
    its commonest details.  Every cell is plain text."""
    caption = (f"{report['not_cached']:,} of {report['requests']:,} requests not cached; "
               f"processes: {', '.join(report['processes'])}")
    table = Table(title=Text(title, style="table.title"),
                  caption=Text(caption, style="table.caption"))
    table.add_column("reason")
    table.add_column("count", justify="right")
    table.add_column("share", justify="right")
    table.add_column("why")
    for found in report["reasons"]:
        table.add_row(*(Text(cell) for cell in (
            found["reason"], f"{found['count']:,}", f"{found['share']:.1%}", _why(found))))
    return table


def _why(found: Mapping[str, Any]) -> str:
    details = ", ".join(f"{item['name']} ({item['count']:,})" for item in found["details"][:3])
    return str(found["description"]) + (f": {details}" if details else "")


def reason_lines(found: Mapping[str, Any], *, urls: int) -> list[str]:
    """One reason below the table: its name and count, its ``urls`` top URLs, then each
    piece of advice (``kind: text``)."""
    shown = found["urls"][:urls]
    lines = [f"{found['reason']} ({found['count']:,})"]
    lines += [f"  {item['url']} ({item['count']:,})" for item in shown]
    if len(found["urls"]) > len(shown):
        lines.append(f"  … and {plural(len(found['urls']) - len(shown), 'more URL')}")
    lines += [f"  {KIND_LABELS.get(advice['kind'], advice['kind'])}: {advice['text']}"
              for advice in found["advice"]]
    return lines


def url_lines(found: Mapping[str, Any]) -> list[str]:
    """What the report says of one URL: its verdict, the last record for it, what the
    cache holds, and the advice."""
    lines = [f"{found['url']}: {found['verdict']}"]
    last = found["last"]
    if last is not None:
        said = [f"status {last['status']}"] if last["status"] is not None else []
        said += [", ".join(last["details"])] if last["details"] else []
        said.append(f"seen by {last['seen_by']}")
        lines.append(f"  last not cached: {'; '.join(said)}")
    for variant in found["variants"]:
        lines.append(f"  variant {variant['variant'] or '-'}: {variant['state']}, "
                     f"ttl {variant['ttl']:.0f}s, {'+'.join(variant['tier'])}")
    lines += [f"  {KIND_LABELS.get(advice['kind'], advice['kind'])}: {advice['text']}"
              for advice in found["advice"]]
    return lines


def why(
    url: Annotated[str | None, typer.Argument(
        help="A URL (or a path with --host) to explain: whether it is cached, and why its "
             "last response was not stored. Without it: the whole report")] = None,
    host: HostOpt = None,
    urls: Annotated[int, typer.Option(
        "--urls", min=0, help="Top URLs shown per reason")] = 3,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print GET /api/why's JSON document as it is, instead of the table: "
                       "reasons with count, share, description, details, urls, sections and "
                       "advice (kind, text, config); with URL: urls with cached, verdict, "
                       "last, variants and advice")] = False,
    config: ConfigOpt = None, admin_url_: AdminUrlOpt = None, admin_token: AdminTokenOpt = None,
) -> None:
    """Why a running Stoker did not cache what it did not: the origin's responses that were
    not stored and the requests that bypassed the cache, counted by reason (no-freshness,
    set-cookie, private, no-store, cookie by name, a rule's bypass, too-large, …), with
    their top URLs and the change that would make them cacheable — a [[rule]] with a ttl
    for a section that had no freshness, strip_cookies for an analytics cookie — or why it
    is right not to cache them (a cookie set, private, Authorization). The figures cover
    every process serving from the cache, counted since each started."""
    from stoker.admin.client import AdminClientError

    try:
        with admin_client(config, admin_url_, admin_token) as client:
            found = client.why(url, host)
    except AdminClientError as error:
        raise fail(error) from None
    if as_json:
        print(json.dumps(found, indent=2))
        return
    out = output()
    if url is not None:
        for item in found["urls"]:
            for line in url_lines(item):
                out.print(line, highlight=False)
        return
    if not found["reasons"]:
        out.print(f"stoker at {client.base_url}: everything answered since the start was "
                  f"cacheable ({found['requests']:,} requests)", highlight=False)
        return
    out.print(report_table(found, title=f"stoker at {client.base_url}: why not cached"))
    for reason in found["reasons"]:
        out.print("")
        for line in reason_lines(reason, urls=urls):
            out.print(line, highlight=False)


def mount(app: typer.Typer) -> None:
    """Add ``why`` to the ``stoker`` command."""
    app.command("why")(why)
