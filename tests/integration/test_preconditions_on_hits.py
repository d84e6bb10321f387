"""If-Match and If-Unmodified-Since on cache hits: a precondition the stored response
fails gets 412, as nginx answers from its cache (RFC 9110 §13.2.2 steps 1-2, before
If-None-Match's 304), on Stoker's own front and on granian alike; one that holds gets
the hit.  The origin is asked once."""

from __future__ import annotations

import pytest
from tests.integration.conftest import Origin, Proxy

LAST_MODIFIED = "Sun, 06 Nov 1994 08:49:37 GMT"
PAGE = [("cache-control", "public, max-age=600"), ("etag", '"v1"'),
        ("last-modified", LAST_MODIFIED), ("content-type", "text/plain")]


@pytest.mark.parametrize(("headers", "status"), [
    ({"if-match": '"v2"'}, 412),
    ({"if-match": 'W/"v1"'}, 412),  # strong comparison
    ({"if-match": '"v0", "v1"'}, 200),
    ({"if-match": "*"}, 200),
    ({"if-unmodified-since": "Sat, 05 Nov 1994 08:49:37 GMT"}, 412),
    ({"if-unmodified-since": LAST_MODIFIED}, 200),
    ({"if-match": '"v1"', "if-unmodified-since": "Sat, 05 Nov 1994 08:49:37 GMT"}, 200),
    ({"if-match": '"v2"', "if-none-match": '"v1"'}, 412),  # step 1 before step 3
    ({"if-match": '"v1"', "if-none-match": '"v1"'}, 304),
])
async def test_a_hit_answers_preconditions(origin: Origin, proxy: Proxy,
                                           headers: dict[str, str], status: int) -> None:
    origin.app.set("/p", headers=PAGE, body=b"the page")
    assert (await proxy.client.get("/p")).status_code == 200  # the miss stores it
    for method in ("GET", "HEAD"):
        response = await proxy.client.request(method, "/p", headers=headers)
        assert response.status_code == status, (method, response.headers)
        assert response.headers["cache-status"].startswith("stoker; hit")
        if status == 412:
            assert response.headers["cache-control"] == "no-store"
        if status == 200 and method == "GET":
            assert response.content == b"the page"
    assert origin.app.count("/p") == 1
