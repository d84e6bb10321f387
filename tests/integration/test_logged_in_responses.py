"""A logged-in response never replaces the shared copy.  With a catch-all rule, a
WordPress admin's page (``no-cache, must-revalidate, max-age=0``) used to be stored over
the anonymous copy, so the next anonymous visitor missed.  A response to a request with
personal cookies is stored only when the origin vouches for sharing it and it is fresh
for a positive time."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.integration.conftest import Origin, running_proxy

from stoker.config.rules import parse_rules

CATCH_ALL = parse_rules([{"path": "/", "ttl": "5m"}])
LOGGED_IN = {"cookie": "wordpress_logged_in_abc=admin"}


@pytest.mark.parametrize("admin_cache_control", [
    "no-cache, must-revalidate, max-age=0",
    "max-age=0",
    "private, max-age=600",
])
async def test_a_logged_in_answer_does_not_displace_the_anonymous_copy(
        origin: Origin, tmp_path: Path, admin_cache_control: str) -> None:
    async with running_proxy(origin.url, tmp_path, rules=CATCH_ALL) as proxy:
        origin.app.set("/page", body=b"anonymous page")  # no cache headers, like a CMS
        await proxy.client.get("/page")
        origin.app.set("/page", headers=[("cache-control", admin_cache_control),
                                         ("etag", '"admin-1"')],  # as ETag middleware adds
                       body=b"admin bar page")
        admin = await proxy.client.get("/page", headers=LOGGED_IN)
        anonymous = await proxy.client.get("/page")
    assert admin.text == "admin bar page"
    assert anonymous.text == "anonymous page"
    assert "hit" in anonymous.headers["cache-status"]


async def test_a_vouched_fresh_logged_in_answer_is_stored(origin: Origin,
                                                          tmp_path: Path) -> None:
    """What the origin itself says may be shared, fresh, is shared (its call)."""
    async with running_proxy(origin.url, tmp_path, rules=CATCH_ALL) as proxy:
        origin.app.set("/shared", headers=[("cache-control", "public, max-age=600")],
                       body=b"same for all")
        await proxy.client.get("/shared", headers=LOGGED_IN)
        anonymous = await proxy.client.get("/shared")
    assert "hit" in anonymous.headers["cache-status"] and origin.app.count("/shared") == 1
