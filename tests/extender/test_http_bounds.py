"""The extender's port is bounded like every ksched HTTP server (``ksched.util.httpserver``,
tested in tests/util): slow headers are cut off, a slow body gets the extender's own 408
``{"Error": ...}``, and a crowd of idle connections does not lock out the verbs."""

from __future__ import annotations

import json

import aiohttp
import anyio
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


async def _filter_answers(port: int) -> None:
    async with (
        aiohttp.ClientSession() as s,
        s.post(f"http://127.0.0.1:{port}/filter", data=golden("filter_args_nodelist.json")) as r,
    ):
        assert r.status == 200


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
            await _filter_answers(port)
        finally:
            for sock in socks:
                sock.close()
    finally:
        await runner.cleanup()


async def test_decoding_a_body_does_not_stall_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A large NodeList is decoded off the event loop: /healthz answers while /filter's body
    is still being decoded (the decode waits for that answer; on the loop it never came)."""
    import threading

    from ksched.extender import wire

    answered = threading.Event()
    waited: list[bool] = []
    parse = wire.decode_extender_args_body

    def slow_parse(data: bytes, bounds: wire.Bounds) -> wire.ExtenderArgs:
        waited.append(answered.wait(20))
        return parse(data, bounds)

    monkeypatch.setattr(wire, "decode_extender_args_body", slow_parse)
    runner, port = await start(_server())
    try:
        async with aiohttp.ClientSession() as s:
            url = f"http://127.0.0.1:{port}"
            filtering = s.post(f"{url}/filter", data=golden("filter_args_nodelist.json"))
            async with anyio.create_task_group() as tg:
                result: list[int] = []

                async def call_filter() -> None:
                    async with filtering as r:
                        result.append(r.status)

                tg.start_soon(call_filter)
                async with s.get(f"{url}/healthz") as h:
                    assert h.status == 200
                answered.set()
        assert waited == [True] and result == [200]
    finally:
        await runner.cleanup()


async def test_bind_bodies_have_a_small_cap() -> None:
    """/bind takes four short strings, so its cap is BIND_MAX_BODY_BYTES whatever
    --max-request-bytes allows the NodeList verbs."""
    from ksched.extender.server import BIND_MAX_BODY_BYTES

    runner, port = await start(_server())
    body = json.dumps({"PodName": "p" * BIND_MAX_BODY_BYTES, "Node": "n"}).encode()
    try:
        async with aiohttp.ClientSession() as s:
            async with s.post(f"http://127.0.0.1:{port}/bind", data=body) as r:
                assert r.status == 413
                assert f"over the limit of {BIND_MAX_BODY_BYTES} bytes" in (await r.json())["Error"]
            # the same size is fine for a verb that carries a NodeList
            big = json.loads(golden("filter_args_nodelist.json"))
            big["Pod"]["metadata"]["annotations"] = {"pad": "x" * BIND_MAX_BODY_BYTES}
            async with s.post(f"http://127.0.0.1:{port}/filter", data=json.dumps(big)) as r:
                assert r.status == 200, await r.text()
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        (b"Content-Encoding: gzip\r\nContent-Length: %d\r\n", b"\x1f\x8b\x08\x00garbage-garbage"),
        (b"Content-Encoding: deflate\r\nContent-Length: %d\r\n", b"not a deflate stream at all"),
        (b"Transfer-Encoding: chunked\r\n", b"zz\r\n{}\r\n0\r\n\r\n"),
    ],
    ids=["gzip", "deflate", "chunked"],
)
async def test_a_body_that_cannot_be_read_is_400_and_the_connection_closes(
    headers: bytes, body: bytes
) -> None:
    """A corrupt gzip body was a 500 naming the exception class, a logged traceback and a
    keep-alive connection dropped without ``Connection: close``."""
    import asyncio
    import gzip
    import io

    from ksched import logging as klog

    buf = io.StringIO()
    klog.configure("json", 0, stream=buf)
    runner, port = await start(_server())
    try:
        if body.startswith(b"\x1f\x8b"):  # a real gzip stream with its checksum broken
            body = gzip.compress(golden("filter_args_nodelist.json"))[:-8] + b"\0" * 8
        if b"%d" in headers:
            headers = headers % len(body)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /filter HTTP/1.1\r\nHost: t\r\n" + headers + b"\r\n" + body)
        answer = await asyncio.wait_for(reader.read(), 5)  # the server closes
        writer.close()
        head, _, payload = answer.partition(b"\r\n\r\n")
        error = json.loads(payload)["Error"]
        if b"chunked" in headers:  # aiohttp's parser refuses the message itself (HTTP/1.0)
            assert head.startswith(b"HTTP/1.0 400 ") and error == "malformed HTTP request"
        else:
            assert head.startswith(b"HTTP/1.1 400 "), answer
            assert b"Connection: close" in head
            assert error.startswith("the request body could not be read: "), error
            assert "Error" not in error.split(": ", 1)[1]  # no exception class
        assert b"Content-Type: application/json" in head
        await _filter_answers(port)
    finally:
        await runner.cleanup()
        klog.reset()
    assert "Traceback" not in buf.getvalue() and "exception" not in buf.getvalue(), buf.getvalue()


async def test_request_bodies_in_memory_at_once_are_bounded() -> None:
    """Bodies count against twice the body limit as their bytes arrive: a crowd of large
    uploads gets 503 past it (each held up to 64 MiB before), while slow senders, holding
    only what they sent, do not lock anyone out."""
    import asyncio

    from ksched.extender.server import BIND_MAX_BODY_BYTES

    limit = 100_000
    server = _server()
    server.max_body_bytes = limit
    runner, port = await start(server)
    writers = []
    try:
        # ten slow senders: a few bytes each, then nothing
        for _ in range(10):
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(b"POST /filter HTTP/1.1\r\nHost: t\r\nContent-Length: 90000\r\n\r\n{")
            writers.append(w)
        await _filter_answers(port)
        # two large bodies under way hold 180,000 bytes; a third pushes past 2 x 100,000
        # + 64 KiB
        for _ in range(2):
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.write(b"POST /filter HTTP/1.1\r\nHost: t\r\nContent-Length: 99000\r\n\r\n")
            w.write(b'{"Pod": {"metadata": {"name": "' + b"p" * 95_000)
            await w.drain()
            writers.append(w)
        await asyncio.sleep(0.3)
        reader, w = await asyncio.open_connection("127.0.0.1", port)
        w.write(b"POST /filter HTTP/1.1\r\nHost: t\r\nContent-Length: 99000\r\n\r\n")
        w.write(b" " * 99_000)
        answer = await asyncio.wait_for(reader.read(2000), 5)
        w.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503 "), answer
        error = json.loads(body)["Error"]
        assert error.endswith(f"near its limit of {2 * limit + BIND_MAX_BODY_BYTES}: retry")
        for w in writers[-2:]:
            w.close()
        writers = writers[:-2]
        await asyncio.sleep(0.3)
        await _filter_answers(port)  # what they held is given back
    finally:
        for w in writers:
            w.close()
        await runner.cleanup()
