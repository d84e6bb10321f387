"""The Cache, Audit and Credentials pages on a running Stoker: behind the login, whole
or as the live regions' content, showing what their APIs report (and never a warm
credential's value)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.admin_harness import CACHEABLE
from tests.integration.conftest import Origin
from tests.integration.dashboard_harness import dashboard
from tests.integration.warm_site import SiteOrigin, site_origin, warming

PART = {"x-stoker-part": "1"}
TAGGED = [*CACHEABLE, ("surrogate-key", "product-42 sale")]


async def test_the_cache_page_shows_the_tiers_and_what_a_url_holds(origin: Origin,
                                                                   tmp_path: Path) -> None:
    origin.app.set("/p", headers=TAGGED, body=b"x" * 3000)
    async with dashboard(origin.url, tmp_path / "d", node_id="node-a") as dash:
        await dash.proxy.client.get("/p")
        anonymous = await dash.client.get("/cache")
        assert anonymous.status_code == 303 and anonymous.headers["location"] == "/login"
        url = f"{dash.proxy.client.base_url}/p"
        page = await dash.client.get("/cache", params={"url": url},
                                     headers=await dash.session())
        assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
        assert '<a href="/cache" aria-current="page">Cache</a>' in page.text
        entry = (await dash.client.get("/api/entry", params={"url": url},
                                       headers=dash.bearer)).json()["keys"][0]
        variant = entry["variants"][0]
        assert f'<code class="detail">{entry["key"]}</code>' in page.text
        assert '<span class="tag">product-42</span> <span class="tag">sale</span>' in page.text
        assert '<span class="tag ok">fresh</span>' in page.text and "1 variant" in page.text
        assert "L1 of node-a + L2, shared by every node serving from this store" in page.text
        assert variant["tier"] == ["l1", "l2"] and "2.9 KiB, inline" in page.text
        assert "<dd>&quot;v1&quot;</dd>" in page.text and "in 9 min" in page.text
        assert "L1 entries (node-a)</dt><dd>1</dd>" in page.text
        assert 'data-body="{&quot;urls&quot;:[&quot;' + url in page.text  # the purge buttons
        assert 'data-api="/api/purge"' in page.text and '<textarea name="tags" data-list' \
            in page.text
        part = await dash.client.get("/cache", params={"url": "/nothing", "host": "127.0.0.1"},
                                     headers={**dash.bearer, **PART})
        assert "<html" not in part.text and part.text.count("<div data-live>") == 2
        assert "Not in the cache" in part.text
        wrong = await dash.client.get("/cache", params={"url": "ftp://x/"}, headers=dash.bearer)
        assert wrong.status_code == 200 and 'class="flash bad"' in wrong.text


async def test_the_audit_page_lists_records_filters_and_pages(origin: Origin,
                                                              tmp_path: Path) -> None:
    async with dashboard(origin.url, tmp_path / "d") as dash:
        for tag in ("t-1", "t-2", "t-3"):
            answer = await dash.client.post("/api/purge", json={"tags": [tag]},
                                            headers={**dash.bearer, **dash.same_origin})
            assert answer.status_code == 200
        await dash.client.post("/api/purge", json={"tags": ["x"]})  # no token: refused
        page = await dash.client.get("/audit", headers=await dash.session())
        assert page.status_code == 200 and "tags: t-3" in page.text
        assert page.text.index("tags: t-3") < page.text.index("tags: t-1")  # newest first
        assert '<span class="tag failed">denied</span>' in page.text
        assert '<span class="tag ok">ok</span>' in page.text and "login" in page.text
        purges = await dash.client.get("/audit", params={"action": "purge"},
                                       headers={**dash.bearer, **PART})
        assert "<html" not in purges.text and "login</code>" not in purges.text
        assert purges.text.index("</form>") < purges.text.index("<div data-live>")
        second = next(r["id"] for r in await dash.audit()
                      if r["target"].get("tags") == ["t-2"])
        older = await dash.client.get("/audit", params={"action": "purge", "before": second},
                                      headers=dash.bearer)
        assert "tags: t-3" not in older.text and "tags: t-2" not in older.text
        assert "tags: t-1" in older.text and ">Newest</a>" in older.text
        assert '<option value="purge" selected>' in older.text
        free = await dash.client.get("/audit", params={"other": "no such action"},
                                     headers=dash.bearer)
        assert "no records" in free.text and 'value="no such action"' in free.text


async def test_the_credentials_page_shows_fingerprints_never_values(tmp_path: Path) -> None:
    allowed = ["header:X-Bypass", "cookie:age_ok"]
    async with site_origin(SiteOrigin(pages=1)) as url, \
            warming(url, tmp_path, warm_credentials=allowed) as warm:
        put = await warm.admin.put("/api/warm/credentials/header:x-bypass",
                                   json={"value": "s3cret-value"},
                                   headers={"origin": warm.admin_url})
        assert put.status_code == 200, put.text
        api = (await warm.admin.get("/api/warm/credentials")).json()["credentials"]
        page = await warm.admin.get("/credentials")
        assert page.status_code == 200 and "s3cret-value" not in page.text
        assert f"<code>{put.json()['fingerprint']}</code>" in page.text
        assert [c["name"] for c in api] == ["header:x-bypass", "cookie:age_ok"]
        assert '<span class="tag">header</span> <code>x-bypass</code>' in page.text
        assert '<span class="tag">cookie</span> <code>age_ok</code>' in page.text
        assert 'data-api="/api/warm/credentials/header%3Ax-bypass"' in page.text  # Remove
        assert page.text.count('type="password"') == 2 and "not set" in page.text
        part = await warm.admin.get("/credentials", headers=PART)
        assert part.text.count("<div data-live>") == 1 and "<html" not in part.text
        audit = await warm.admin.get("/audit", params={"action": "warm-credential"})
        assert put.json()["fingerprint"] in audit.text and "s3cret-value" not in audit.text


async def test_without_warm_credentials_or_a_warmer_the_page_says_what_to_do(
        origin: Origin, tmp_path: Path) -> None:
    async with site_origin(SiteOrigin(pages=1)) as url, warming(url, tmp_path / "w") as warm:
        page = await warm.admin.get("/credentials")
        assert "No warm credential is allowed" in page.text and "warm_credentials = [" \
            in page.text
    async with dashboard(origin.url, tmp_path / "d") as dash:
        page = await dash.client.get("/credentials", headers=dash.bearer)
        assert page.status_code == 200 and "runs no warmer" in page.text
