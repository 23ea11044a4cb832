"""Fuzzing the daemon's HTTP paths: any method, path and query string gets an answer
below 500 (503 only from the health checks, which report state), and every error body
from the debug endpoints is JSON. The server runs once, on a thread; the budget is
bounded."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from urllib.parse import quote

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.daemon.http import DebugServer
from ksched.metrics import SchedulerMetrics

from ..daemon.conftest import FakeDaemon, simulated

KNOWN = [
    "/healthz",
    "/livez",
    "/readyz",
    "/metrics",
    "/configz",
    "/debug/queue",
    "/debug/cache",
    "/debug/explain",
    "/debug/shadow",
    "/debug",
    "/",
    "/readyz/ping",
    "/healthz/ping",
]


class _Server:
    def __init__(self) -> None:
        m = SchedulerMetrics(seed=0)
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.srv = DebugServer(FakeDaemon(simulated(m), metrics=m), "127.0.0.1", 0)  # type: ignore[arg-type]
        asyncio.run_coroutine_threadsafe(self.srv.start(), self.loop).result()
        self.session = asyncio.run_coroutine_threadsafe(self._session(), self.loop).result()

    async def _session(self) -> aiohttp.ClientSession:
        return aiohttp.ClientSession()

    def request(self, method: str, target: str, body: bytes) -> tuple[int, str, bytes]:
        async def go() -> tuple[int, str, bytes]:
            async with self.session.request(method, self.srv.url + target, data=body or None) as r:
                return r.status, r.content_type, await r.read()

        return asyncio.run_coroutine_threadsafe(go(), self.loop).result(30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.session.close(), self.loop).result()
        asyncio.run_coroutine_threadsafe(self.srv.stop(), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture(scope="module")
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.close()


query_values = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["default/p0", "x/y/z", "/", "%", "-1", "1e400", "\x00", "ns/" + "a" * 300]),
)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_request_gets_an_answer_below_500(server: _Server, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(KNOWN) | st.text(max_size=30).map(lambda t: "/" + quote(t)))
    params = data.draw(
        st.dictionaries(
            st.sampled_from(["pod", "verbose", "exclude", "node", "top", "x", "pod[]"]),
            query_values,
            max_size=3,
        )
    )
    query = "&".join(f"{quote(k)}={quote(v)}" for k, v in params.items())
    method = data.draw(st.sampled_from(["GET", "POST", "PUT", "DELETE", "HEAD"]))
    body = data.draw(st.binary(max_size=64))
    status, ctype, out = server.request(method, path + ("?" + query if query else ""), body)
    assert status < 500 or (status == 503 and path.startswith(("/readyz", "/healthz", "/livez")))
    assert b"Traceback" not in out
    if status >= 400 and path.startswith("/debug/") and method != "HEAD":
        assert ctype == "application/json", (path, status, out[:200])
        assert "error" in json.loads(out)
