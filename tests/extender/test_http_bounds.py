"""The extender's port is bounded like every ksched HTTP server (``ksched.util.httpserver``,
tested in tests/util): slow headers are cut off, a slow body gets the extender's own 408
``{"Error": ...}``, and a crowd of idle connections does not lock out the verbs."""

from __future__ import annotations

import json

import aiohttp
import pytest

from ksched.extender.server import ExtenderServer, start
from ksched.util.httpserver import Limits

from ..util.test_httpserver import SLACK, _open_idle, _trickle_until_closed
from .conftest import golden
from .test_access import _server

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_slow_clients_are_cut_off_and_idle_ones_give_way() -> None:
    server: ExtenderServer = _server()
    limits = Limits(header_timeout=0.5, body_timeout=0.5, max_connections=20)
    runner, port = await start(server, limits=limits)
    try:
        took, got = await _trickle_until_closed(port, b"POST /filter HTTP/1.1\r\n", b"X", 0.1)
        assert took < 0.5 + SLACK and got == b""
        head = b"POST /filter HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n{"
        took, got = await _trickle_until_closed(port, head, b" ", 0.1)
        assert took < 0.5 + SLACK
        assert got.startswith(b"HTTP/1.1 408 "), got
        assert json.loads(got.partition(b"\r\n\r\n")[2]) == {
            "Error": "the request body did not arrive within 0.5s"
        }
        socks = await _open_idle(port, 100)
        try:
            async with (
                aiohttp.ClientSession() as s,
                s.post(
                    f"http://127.0.0.1:{port}/filter", data=golden("filter_args_nodelist.json")
                ) as r,
            ):
                assert r.status == 200
        finally:
            for sock in socks:
                sock.close()
    finally:
        await runner.cleanup()
