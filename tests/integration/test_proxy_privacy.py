"""No private response is ever served to another client, on real servers (every case in
process: ``tests/core/test_privacy.py``)."""

from __future__ import annotations

from tests.integration.conftest import Origin, Proxy


async def test_private_response_is_never_served_to_a_second_client(origin: Origin,
                                                                   proxy: Proxy) -> None:
    origin.app.set("/me", headers=[("cache-control", "private, max-age=600")], body=b"alice")
    first = await proxy.client.get("/me", headers={"cookie": "user=alice"})
    origin.app.set("/me", headers=[("cache-control", "private, max-age=600")], body=b"bob")
    second = await proxy.client.get("/me", headers={"cookie": "user=bob"})
    assert first.text == "alice" and second.text == "bob"
    assert "detail=private" in second.headers["cache-status"]
    assert origin.app.count("/me") == 2
