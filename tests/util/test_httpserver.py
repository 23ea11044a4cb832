"""``ksched.util.httpserver`` over real loopback sockets: slow headers and bodies are cut off
within their bounds, idle and kept-alive connections are closed, a crowd of idle clients
cannot lock out ``/healthz``, and an accept-time EMFILE is one log line, not a flood."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from aiohttp import web

from ksched.util.httpserver import DEFAULT_LIMITS, Limits, connection_limit, start_app

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
#: what the timing assertions allow beyond a bound (a loaded 2-core CI machine)
SLACK = 1.5


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def serving(
    limits: Limits, ssl_context: ssl.SSLContext | None = None
) -> AsyncIterator[tuple[int, asyncio.Event]]:
    """An app with GET /healthz, POST /echo (reads the body) and GET /hold (answers once the
    yielded event is set); yields the port and that event."""
    release = asyncio.Event()

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def echo(request: web.Request) -> web.Response:
        return web.Response(text=str(len(await request.read())))

    async def hold(request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(text="released")

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    app.router.add_post("/echo", echo)
    app.router.add_get("/hold", hold)
    runner, port = await start_app(app, "127.0.0.1", 0, ssl_context=ssl_context, limits=limits)
    try:
        yield port, release
    finally:
        release.set()
        await runner.cleanup()


async def _trickle_until_closed(
    port: int, first: bytes, byte: bytes, every: float
) -> tuple[float, bytes]:
    """Connect, send ``first``, then ``byte`` every ``every`` seconds until the server closes
    the connection; (seconds from connecting, what the server sent). Gives up after 15 s."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.monotonic()
    got = b""
    try:
        writer.write(first)
        while time.monotonic() - start < 15:
            try:
                writer.write(byte)
                await writer.drain()
                data = await asyncio.wait_for(reader.read(4096), every)
            except TimeoutError:
                continue
            except ConnectionError:
                break
            if not data:
                break
            got += data
        else:
            raise AssertionError(f"still open after 15 s; received {got!r}")
        return time.monotonic() - start, got
    finally:
        writer.close()


async def _get(port: int, path: str = "/healthz", timeout: float = 5.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".encode())
        return await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()


def test_defaults() -> None:
    assert (DEFAULT_LIMITS.header_timeout, DEFAULT_LIMITS.body_timeout) == (10.0, 30.0)
    assert DEFAULT_LIMITS.idle_timeout > 90  # Go's IdleConnTimeout: the client closes first
    assert 1 <= connection_limit(DEFAULT_LIMITS) <= 1000
    assert connection_limit(Limits(max_connections=5)) == 5


async def test_slow_headers_are_cut_off() -> None:
    async with serving(Limits(header_timeout=0.6)) as (port, _):
        took, got = await _trickle_until_closed(port, b"GET /healthz HTTP/1.1\r\n", b"X", 0.1)
        assert 0.6 <= took < 0.6 + SLACK and got == b""
        # a client that says nothing at all goes the same way
        took, got = await _trickle_until_closed(port, b"", b"", 0.1)
        assert 0.6 <= took < 0.6 + SLACK and got == b""
        assert b" 200 OK" in await _get(port)  # prompt clients are served


async def test_slow_body_gets_408_and_is_cut_off() -> None:
    async with serving(Limits(body_timeout=0.6)) as (port, _):
        head = b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n"
        took, got = await _trickle_until_closed(port, head, b"a", 0.1)
        assert 0.6 <= took < 0.6 + SLACK
        status, _, body = got.partition(b"\r\n")[0], None, got.partition(b"\r\n\r\n")[2]
        assert status == b"HTTP/1.1 408 Request Timeout", got
        assert json.loads(body) == {"error": "the request body did not arrive within 0.6s"}
        # a body sent at once is no problem, nor is a handler slower than the body bound
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n") + b"a" * 1000)
        assert (await asyncio.wait_for(reader.read(), 5)).endswith(b"\r\n\r\n1000")
        writer.close()


async def test_idle_kept_alive_connection_is_closed_then_header_timer_rearms() -> None:
    async with serving(Limits(header_timeout=0.5, idle_timeout=1.0)) as (port, _):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            request = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n"
            for _ in range(2):  # kept alive between requests shorter than the idle bound
                writer.write(request)
                assert (await asyncio.wait_for(reader.readuntil(b"ok"), 5)).startswith(
                    b"HTTP/1.1 200"
                )
                await asyncio.sleep(0.7)  # longer than the header bound: idle is not slow
            start = time.monotonic()
            assert await asyncio.wait_for(reader.read(), 5) == b""
            assert time.monotonic() - start < 1.0 - 0.7 + SLACK
        finally:
            writer.close()


async def test_tls_handshake_that_never_comes_is_cut_off(tmp_path: Path) -> None:
    from tests.extender.conftest import make_pki

    pki = make_pki(tmp_path)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(pki.path("server.pem"), pki.path("server-key.pem"))
    async with serving(Limits(header_timeout=0.6), ctx) as (port, _):
        took, got = await _trickle_until_closed(port, b"", b"", 0.1)
        assert took < 2 * 0.6 + SLACK and got == b""


async def _open_idle(port: int, n: int) -> list[socket.socket]:
    loop = asyncio.get_running_loop()
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        await loop.sock_connect(s, ("127.0.0.1", port))
        socks.append(s)
    return socks


def _closed_by_server(socks: list[socket.socket]) -> int:
    n = 0
    for s in socks:
        try:
            n += s.recv(1) == b""
        except BlockingIOError:
            pass
        except ConnectionError:
            n += 1
    return n


@pytest.mark.parametrize("limit", [None, 50])
async def test_healthz_answers_despite_many_idle_connections(limit: int | None) -> None:
    """200 connections that never send a byte: within the limit they are simply served
    beside /healthz; over it, the ones idle longest make room (and no more than the limit
    stay open)."""
    async with serving(Limits(max_connections=limit)) as (port, _):
        socks = await _open_idle(port, 200)
        try:
            start = time.monotonic()
            assert b" 200 OK" in await _get(port)
            assert time.monotonic() - start < 2.0
            if limit is not None:
                await asyncio.sleep(0.2)
                assert _closed_by_server(socks) >= 200 - limit
        finally:
            for s in socks:
                s.close()


async def test_when_every_connection_is_busy_new_ones_wait() -> None:
    async with serving(Limits(max_connections=2)) as (port, release):
        held = [asyncio.create_task(_get(port, "/hold")) for _ in range(2)]
        await asyncio.sleep(0.3)
        waiting = asyncio.create_task(_get(port))
        await asyncio.sleep(0.5)
        assert not waiting.done()  # in the listen backlog, not refused
        release.set()
        assert all(b"released" in r for r in await asyncio.gather(*held))
        assert b" 200 OK" in await asyncio.wait_for(waiting, 5)


async def test_port_in_use_names_the_address() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        app = web.Application()
        with pytest.raises(OSError) as e:
            await start_app(app, "127.0.0.1", port)
    assert e.value.strerror == (
        f"error while attempting to bind on address ('127.0.0.1', {port}): address already in use"
    )


# ---- out of file descriptors ------------------------------------------------------------------

_EMFILE_SERVER = textwrap.dedent(
    """
    import asyncio, resource, sys
    from aiohttp import web
    from ksched.logging import configure
    from ksched.util.httpserver import Limits, start_app

    configure("json", 0)

    async def main():
        app = web.Application()
        async def healthz(request):
            return web.Response(text="ok")
        app.router.add_get("/healthz", healthz)
        # no connection limit to speak of: accept() itself runs out of descriptors
        runner, port = await start_app(app, "127.0.0.1", 0, limits=Limits(max_connections=10_000))
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        print(port, file=sys.stderr, flush=True)
        await asyncio.sleep(30)

    asyncio.run(main())
    """
)


def test_accept_emfile_is_logged_once_per_interval_not_per_accept() -> None:
    """RLIMIT_NOFILE 64 and 300 connections held for 3 s: asyncio's own accept loop logs a
    traceback per failed accept() (hundreds here); ksched's says so once per interval."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _EMFILE_SERVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        text=True,
    )
    try:
        assert proc.stderr is not None
        port = int(proc.stderr.readline())
        socks = []
        for _ in range(300):
            s = socket.socket()
            s.settimeout(2)
            s.connect(("127.0.0.1", port))  # completes in the kernel's backlog
            socks.append(s)
        time.sleep(3)
        # the longest-idle connections give way: the server still answers
        for s in socks[:100]:
            s.close()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            c.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := c.recv(4096):
                answer += chunk
        assert b" 200 OK" in answer
        for s in socks[100:]:
            s.close()
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    emfile = [x for x in lines if x["msg"].startswith("out of file descriptors")]
    assert 1 <= len(emfile) <= 2, out
    assert emfile[0]["error"] == "Too many open files"
    assert "Traceback" not in err and "Too many open files" not in err, err[-2000:]
    assert len(out.splitlines()) <= 5, out


# ---- aiohttp's own error answers ----------------------------------------------------------


async def _send(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("request_bytes", "message"),
    [
        (
            b"GET /" + b"a" * 10_000 + b" HTTP/1.1\r\nHost: t\r\n\r\n",
            "request line or header too long",
        ),
        (
            b"GET / HTTP/1.1\r\nX-Long: " + b"b" * 10_000 + b"\r\n\r\n",
            "request line or header too long",
        ),
        (b"SECRET\x00\x01 / HTTP/1.1\r\n\r\n", "invalid HTTP method"),
        (b"GET / HTTP/9.9x\r\n\r\n", "invalid request line"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03secret\r\n\r\n", "invalid HTTP method"),
    ],
    ids=["long-url", "long-header", "bad-method", "bad-version", "tls-to-plain"],
)
async def test_malformed_requests_get_a_json_400_that_echoes_nothing(
    request_bytes: bytes, message: str
) -> None:
    """aiohttp answers these itself, as text/plain quoting the request line back."""
    async with serving(Limits()) as (port, _):
        answer = await _send(port, request_bytes)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.split(b"\r\n")[0].split()[1] == b"400", answer[:300]
        assert b"Content-Type: application/json" in head
        assert json.loads(body) == {"error": message}
        for echo in (b"aaaa", b"bbbb", b"SECRET", b"secret", b"9.9x"):
            assert echo not in body
        assert b" 200 OK" in await _get(port)


async def test_a_flood_of_malformed_requests_logs_one_line_per_interval() -> None:
    """2,000 over-long request lines wrote 2,000 tracebacks (1.6 MB) through aiohttp's
    server logger; now one line per cause per ``log_interval``, none with a traceback."""
    import io

    from ksched import logging as klog

    buf = io.StringIO()
    klog.configure("json", 0, stream=buf)
    try:
        async with serving(Limits(log_interval=60)) as (port, _):
            long_url = b"GET /" + b"a" * 9_000 + b" HTTP/1.1\r\nHost: t\r\n\r\n"
            for _ in range(500):
                assert b" 400 " in (await _send(port, long_url))[:20]
    finally:
        klog.reset()
    out = buf.getvalue()
    assert "Traceback" not in out and "aaaa" not in out
    lines = [json.loads(x) for x in out.splitlines()]
    assert len(lines) == 1, out[:2000]
    assert lines[0]["error"] == "LineTooLong" and lines[0]["status"] == 400
