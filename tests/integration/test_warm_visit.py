"""Warm visits run through the pipeline in process, as the site's scheme and Host."""

from __future__ import annotations

from pathlib import Path

from tests.integration.conftest import Origin, running_proxy

from stoker.adapters.visit import PipelineVisitor
from stoker.purge.scope import PurgeScope

UA = [(b"user-agent", b"stoker-warmer/test")]


async def test_visit_fills_the_entry_visitors_read(origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/p", headers=[("cache-control", "max-age=60"), ("etag", '"v1"')],
                   body=b"page", not_modified_etag='"v1"')
    origin.app.set("/gen", headers=[("x-stoker-stopgap", "1")], body=b"generating")
    async with running_proxy(origin.url, tmp_path, default_swr="1h") as proxy:
        stoker = proxy.stoker
        visitor = PipelineVisitor(stoker.pipeline, stoker.clock,
                                  stopgap_header=b"x-stoker-stopgap")
        site = proxy.url.replace("127.0.0.1", "localhost")
        first = await visitor.visit(f"{site}/p", UA, allowance=2)
        again = await visitor.visit(f"{site}/p", UA, allowance=2)
        hit = await proxy.client.get("/p", headers={"host": site.split("//")[1]})
        await stoker.purger.purge(PurgeScope(urls=(f"{site}/p",), soft=True))
        # stale: revalidated, not served stale
        refreshed = await visitor.visit(f"{site}/p", UA, allowance=2)
        gen = await visitor.visit(f"{site}/gen", UA, allowance=2)
        gen_again = await visitor.visit(f"{site}/gen", UA, allowance=2)
    assert (first.outcome, again.outcome, refreshed.outcome) == (
        "warmed", "fresh", "not_modified")
    assert "; hit" in hit.headers["cache-status"] and hit.text == "page"
    assert (gen.outcome, gen_again.outcome) == ("stopgap", "stopgap")
    assert origin.app.count("/gen") == 2  # a stopgap is never stored
    assert origin.app.count("/p") == 2  # the first visit and one conditional refresh
    _, _, headers = origin.app.requests[0]
    assert headers["user-agent"] == "stoker-warmer/test" and "cookie" not in headers
