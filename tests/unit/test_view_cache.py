"""The Cache page, rendered from GET /api/entry's and the status's JSON: every window,
tier and validator of a variant, the purge buttons and form, escaping of what origins
and clients sent."""

from __future__ import annotations

from typing import Any

from stoker.admin.views.cache import cache_html, figures_html, key_html, tier_text
from stoker.admin.views.html import Markup

NOW = 1_800_000_000.0


def variant(**overrides: Any) -> dict[str, Any]:
    return {"variant": "accept-encoding=gzip", "vary": ["accept-encoding"],
            "tags": ["product-42", "<b>"], "status": 200, "url": "https://s.test/p",
            "state": "fresh", "stored_at": NOW - 30, "fresh_until": NOW + 570,
            "stale_until": NOW + 630, "error_until": NOW + 86400, "keep_until": NOW + 90000,
            "ttl": 570.0, "age": 30.0, "size": 2048, "body": "inline", "etag": '"v1"',
            "last_modified": None, "tier": ["l1", "l2"], **overrides}


def test_a_variant_shows_its_windows_tier_size_and_validators() -> None:
    out = key_html({"url": "https://s.test/p", "key": "1|https://s.test/p",
                    "variants": [variant()]}, NOW, "node-a")
    assert "1 variant" in out and "<code class=\"detail\">1|https://s.test/p</code>" in out
    assert '<span class="tag ok">fresh</span>' in out and "accept-encoding=gzip" in out
    assert "30 s ago" in out and "in 9 min" in out and "in 10 min" in out and "in 1 d" in out
    assert "<dt>Age</dt><dd>30 s</dd>" in out and "<dt>TTL</dt><dd>9 min</dd>" in out
    assert "L1 of node-a + L2, shared by every node serving from this store" in out
    assert "2.0 KiB, inline" in out and "<dd>&quot;v1&quot;</dd>" in out
    assert '<span class="tag">&lt;b&gt;</span>' in out and "<b>" not in out


def test_an_expired_variant_in_l2_only_has_no_ttl_left() -> None:
    out = key_html({"url": "u", "key": "k", "variants": [
        variant(state="expired", ttl=-5.0, tier=["l2"], body="file", variant="")]}, NOW, "n")
    assert '<span class="tag failed">expired: kept to revalidate</span>' in out
    assert "none left" in out and "(the only variant)" in out and ", file" in out
    assert "L1 of" not in out


def test_a_url_not_stored_says_so_and_still_offers_its_purge() -> None:
    out = key_html({"url": "https://s.test/<x>", "key": "1|https://s.test/<x>",
                    "variants": []}, NOW, "n")
    assert "Not in the cache" in out and "https://s.test/&lt;x&gt;" in out and "<x>" not in out
    assert out.count('data-api="/api/purge"') == 2
    assert "&quot;soft&quot;:true" in out and "Mark https://s.test/&lt;x&gt; stale?" in out
    assert "&quot;soft&quot;:false" in out  # the hard button says so: purge_mode cannot soften it


def test_where_a_variant_is_held() -> None:
    assert tier_text(["l2"], "n") == "L2, shared by every node serving from this store"
    assert tier_text(["l1", "l2"], "a").startswith("L1 of a + L2")
    assert tier_text([], "a") == "—"


def test_the_tiers_card_reads_the_status_and_says_when_l2_is_unknown() -> None:
    status = {"l1": {"entries": 1200, "bytes": 3 * 1024 * 1024},
              "store": {"entries": 5000, "bytes": 2048}, "pending_l2_writes": 3}
    out = figures_html(status, "node-a")
    assert "L1 entries (node-a)</dt><dd>1 200</dd>" in out and "<dd>3.0 MiB</dd>" in out
    assert "L2 entries (shared)</dt><dd>5 000</dd>" in out and "<dd>3</dd>" in out
    assert "L2 bytes</dt><dd>—</dd>" in figures_html({"l1": {}}, "n")


def test_the_page_keeps_its_forms_out_of_the_live_regions() -> None:
    out = cache_html({"l1": {}}, "n", '"><script>', Markup("<p>found</p>"))
    assert 'value="&quot;&gt;&lt;script&gt;"' in out and "<script>" not in out
    first, second = (index for index in range(len(out)) if out.startswith("<div data-live>",
                                                                           index))
    assert out.index('method="get"') > first and out.index('method="get"') < second
    assert out.index('data-api="/api/purge"') > out.index("<p>found</p>")
    for field in ("urls", "prefixes", "tags"):
        assert f'<textarea name="{field}" data-list' in out
    assert 'type="checkbox" name="soft"' in out and "data-reset" in out
