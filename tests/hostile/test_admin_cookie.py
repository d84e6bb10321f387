"""The dashboard's session cookie on the public listener, as an operator's browser sends it.

Browsers do not isolate cookies by port: logged in on the admin listener, a browser sends
the session cookie to the public one too.  Stoker forwarded it, so the origin (or its
logs) could replay it against the admin API.  Here ``stoker serve`` runs both listeners
as a process, a real login opens the session, and the public listener gets the cookie.
"""

from __future__ import annotations

from pathlib import Path

import httpx
from tests.conftest import wait_listening
from tests.integration.admin_harness import TOKEN
from tests.integration.conftest import Origin
from tests.integration.dashboard_harness import FORM
from tests.integration.serve_process import Serve


async def test_a_dashboard_session_never_reaches_the_origin_and_counts_only_where_opened(
        origin: Origin, tmp_path: Path) -> None:
    origin.app.set("/echo", headers=[("cache-control", "no-store")], body=b"echo")
    process = Serve(origin, tmp_path, "--admin-token", TOKEN)
    process.config.write_text("")
    async with process as serve:
        await wait_listening(serve.admin_port)
        admin = f"http://127.0.0.1:{serve.admin_port}"
        async with httpx.AsyncClient(base_url=admin, timeout=30) as client:
            login = await client.post("/login", content=f"token={TOKEN}",
                                      headers={**FORM, "origin": admin})
            cookie = login.headers["set-cookie"].split(";", 1)[0]
            public = await client.get(f"http://127.0.0.1:{serve.port}/echo",
                                      headers={"cookie": f"{cookie}; theme=dark"})
            own = await client.get("/api/status", headers={"cookie": cookie})
            other_host = await client.get("/api/status", headers={
                "cookie": cookie, "host": f"127.0.0.1:{serve.port}"})
    assert login.status_code == 303 and cookie.startswith("stoker_session=")
    assert public.status_code == 200
    [headers] = [headers for _, path, headers in origin.app.requests if path == "/echo"]
    assert headers["cookie"] == "theme=dark"
    assert own.status_code == 200 and other_host.status_code == 401
