"""The daemon's HTTP server is bounded like every ksched HTTP server
(``ksched.util.httpserver``, tested in tests/util): slow headers and bodies are cut off, and
/healthz answers beside a crowd of idle connections."""

from __future__ import annotations

import pytest

import ksched.util.httpserver as httpserver
from ksched.daemon.http import DebugServer
from ksched.util.httpserver import Limits

from ..util.test_httpserver import SLACK, _get, _open_idle, _trickle_until_closed
from .conftest import FakeDaemon, simulated

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def daemon() -> FakeDaemon:
    return FakeDaemon(simulated())


async def test_slow_clients_are_cut_off_and_healthz_answers_a_crowd(
    daemon: FakeDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits = Limits(header_timeout=0.5, body_timeout=0.5, max_connections=20)
    monkeypatch.setattr(httpserver, "DEFAULT_LIMITS", limits)
    srv = DebugServer(daemon, "127.0.0.1", 0)  # type: ignore[arg-type]
    await srv.start()
    try:
        port = srv.port
        assert port
        took, got = await _trickle_until_closed(port, b"GET /healthz HTTP/1.1\r\n", b"X", 0.1)
        assert took < 0.5 + SLACK and got == b""
        # no endpoint reads a body: the 405 goes out at once, the trickle is cut off all the same
        head = b"POST /metrics HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n"
        took, got = await _trickle_until_closed(port, head, b" ", 0.1)
        assert took < 0.5 + SLACK and got.startswith(b"HTTP/1.1 405 "), got
        socks = await _open_idle(port, 200)
        try:
            assert b" 200 OK" in await _get(port, "/healthz")
        finally:
            for s in socks:
                s.close()
    finally:
        await srv.stop()
