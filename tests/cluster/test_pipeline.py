"""PipelinedConnection: batches of requests on one connection, answers in order, and the
StatusReporter's batched Events (retries, errors, a server that closes in between)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from ksched.api.objects import Pod
from ksched.cluster import APIClient, StatusReporter
from ksched.cluster.client import APIConnectionError
from ksched.cluster.pipeline import PipelinedConnection, _parse, _ProtocolError
from ksched.framework.types import PodInfo
from ksched.testing import TestAPIServer, make_pod

pytestmark = pytest.mark.anyio

EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


def info(obj: dict[str, Any]) -> PodInfo:
    return PodInfo(msgspec.convert(obj, Pod), obj)


def event(name: str) -> bytes:
    return msgspec.json.encode(
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "ksched",
            "reportingInstance": "ksched-1",
            "action": "Binding",
            "reason": "Scheduled",
            "regarding": {"kind": "Pod", "namespace": "default", "name": "p"},
            "note": name,
            "type": "Normal",
        }
    )


def test_parse_content_length_chunked_and_partial() -> None:
    whole = b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}"
    assert _parse(bytearray(whole)) == (len(whole), 201, b"{}", None, False)
    assert _parse(bytearray(whole[:-1])) is None
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
    )
    assert _parse(bytearray(chunked + b"rest")) == (len(chunked), 200, b"abcde", None, True)
    assert _parse(bytearray(chunked[:-3])) is None
    trailers = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nA: b\r\n\r\n"
    assert _parse(bytearray(trailers)) == (len(trailers), 200, b"x", None, False)
    retry = b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n"
    assert _parse(bytearray(retry)) == (len(retry), 429, b"", 3.0, False)
    with pytest.raises(_ProtocolError):
        _parse(bytearray(b"SSH-2.0\r\n\r\n"))
    until_close = bytearray(b"HTTP/1.1 200 OK\r\n\r\nbody")
    assert _parse(until_close) is None  # no length: the body ends with the connection
    assert _parse(until_close, eof=True) == (len(until_close), 200, b"body", None, True)


async def test_batch_answers_in_order_on_one_connection(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pipe = PipelinedConnection.for_client(client)
    assert pipe is not None
    try:
        results = await pipe.batch(
            [("POST", EVENTS, event(f"e{i}"), "application/json") for i in range(20)]
        )
        assert [r[0] for r in results] == [201] * 20
        names = [msgspec.json.decode(r[1])["metadata"]["name"] for r in results]
        assert names == [f"e{i}" for i in range(20)]
        again = await pipe.batch([("POST", EVENTS, event("e0"), "application/json")])
        assert again[0][0] == 409  # already exists: an answer, not an error
    finally:
        pipe.close()
    notes = sorted(e["note"] for e in apiserver.list("events.events.k8s.io", "default"))
    assert notes == sorted(f"e{i}" for i in range(20))


async def test_reporter_batches_events_and_retries_retry_after(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pods = [info(apiserver.create(make_pod(f"p{i}"))) for i in range(30)]
    apiserver.faults.fail_next(1, verb="create", resource="events", code=429, retry_after=0)
    r = StatusReporter(client, workers=2)
    for p in pods:  # queued before the workers run: they take them in batches
        r.scheduled(p, "n1", "ksched", 1)
    async with anyio.create_task_group() as tg:
        await tg.start(r.run)
        await r.drain()
        tg.cancel_scope.cancel()
    notes = sorted(e["note"] for e in apiserver.list("events.events.k8s.io", "default"))
    assert notes == sorted(f"Successfully assigned default/p{i} to n1" for i in range(30))
    assert r.api_errors == 0
    assert apiserver.count_requests(verb="create", resource="events") == 31  # one retried


async def test_reporter_counts_failed_events_and_goes_on(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pods = [info(apiserver.create(make_pod(f"p{i}"))) for i in range(3)]
    apiserver.faults.fail_next(1, verb="create", resource="events", code=403)
    r = StatusReporter(client, workers=1)
    for p in pods:
        r.scheduled(p, "n1", "ksched", 1)
    async with anyio.create_task_group() as tg:
        await tg.start(r.run)
        await r.drain()
        tg.cancel_scope.cancel()
    assert len(apiserver.list("events.events.k8s.io", "default")) == 2
    assert r.api_errors == 1


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    """One request's body (they all carry a Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    return await reader.readexactly(length)


class _ClosingServer:
    """Answers the first request of each connection with ``Connection: close`` (and closes),
    ignoring whatever else was pipelined behind it; records what it answered."""

    def __init__(self) -> None:
        self.answered: list[bytes] = []
        self.connections = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        body = await _read_request(reader)
        self.answered.append(body)
        writer.write(
            b"HTTP/1.1 201 Created\r\nConnection: close\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\n\r\n"
            + body
        )
        await writer.drain()
        writer.close()


@contextlib.asynccontextmanager
async def _serving(
    handle: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
) -> AsyncIterator[APIClient]:
    """A client of a raw asyncio server running ``handle`` per connection."""
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with await APIClient.for_master(f"http://127.0.0.1:{port}", qps=0) as c:
        yield c
    server.close()


@pytest.fixture
async def closing_server() -> AsyncIterator[tuple[_ClosingServer, APIClient]]:
    srv = _ClosingServer()
    async with _serving(srv.handle) as c:
        yield srv, c


async def test_requests_a_closing_server_did_not_read_are_sent_again(
    closing_server: tuple[_ClosingServer, APIClient],
) -> None:
    srv, client = closing_server
    pipe = PipelinedConnection.for_client(client)
    assert pipe is not None
    results = await pipe.batch(
        [("POST", "/x", b"a", "text/plain"), ("POST", "/x", b"b", "text/plain")]
    )
    pipe.close()
    assert results == [(201, b"a", None), (201, b"b", None)]
    assert srv.answered == [b"a", b"b"] and srv.connections == 2


async def test_connection_refused_fails_every_request() -> None:
    async with await APIClient.for_master("http://127.0.0.1:1", qps=0) as client:
        pipe = PipelinedConnection.for_client(client)
        assert pipe is not None
        results = await pipe.batch([("POST", "/x", b"a", "text/plain")] * 2)
    assert all(isinstance(r, APIConnectionError) for r in results)


async def test_no_pipelining_behind_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    async with await APIClient.for_master("http://10.1.2.3:6443", qps=0) as client:
        assert PipelinedConnection.for_client(client) is None


@contextlib.asynccontextmanager
async def _tls_server(
    tmp_path: Path, handler: Callable[[Any], Awaitable[Any]], num_tickets: int = 2
) -> AsyncIterator[Path]:
    """An aiohttp server over mutual TLS (TLS 1.3, ``num_tickets`` session tickets per
    handshake) serving every path with ``handler``; yields a kubeconfig for it."""
    import ssl

    import yaml
    from aiohttp import web

    from tests.extender.conftest import make_pki

    pki = make_pki(tmp_path)
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=pki.path("ca.pem"))
    server_ctx.load_cert_chain(pki.path("server.pem"), pki.path("server-key.pem"))
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    server_ctx.num_tickets = num_tickets
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ctx)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    kc = tmp_path / "kc"
    kc.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {
                            "server": f"https://127.0.0.1:{port}/prefix",
                            "certificate-authority": pki.path("ca.pem"),
                        },
                    }
                ],
                "users": [
                    {
                        "name": "u",
                        "user": {
                            "client-certificate": pki.path("client.pem"),
                            "client-key": pki.path("client-key.pem"),
                        },
                    }
                ],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    try:
        yield kc
    finally:
        await runner.cleanup()


async def test_writes_and_batches_over_mutual_tls(tmp_path: Path) -> None:
    """The raw connections use the client's TLS setup: its CA, its client certificate."""
    from aiohttp import web

    seen: list[tuple[str, str, bytes]] = []

    async def handler(request: web.Request) -> web.Response:
        peer = request.transport.get_extra_info("peercert") if request.transport else None
        assert peer, "no client certificate"
        seen.append((request.method, request.path_qs, await request.read()))
        return web.json_response({"ok": request.path}, status=201)

    async with (
        _tls_server(tmp_path, handler) as kc,
        await APIClient.from_kubeconfig(kc, qps=0) as c,
    ):
        status, raw = await c.request("PATCH", "/api/v1/a", params={"dryRun": "All"}, body={"x": 1})
        assert status == 201 and msgspec.json.decode(raw) == {"ok": "/prefix/api/v1/a"}
        pipe = PipelinedConnection.for_client(c)
        assert pipe is not None
        results = await pipe.batch(
            [("POST", "/b", b"1", "application/json"), ("POST", "/c", b"2", "application/json")]
        )
        pipe.close()
        assert [r[0] for r in results] == [201, 201]
    assert seen == [
        ("PATCH", "/prefix/api/v1/a?dryRun=All", b'{"x":1}'),
        ("POST", "/prefix/b", b"1"),
        ("POST", "/prefix/c", b"2"),
    ]


def _reused(pool: Any) -> list[bool]:
    """Whether each idle connection of ``pool`` resumed an earlier TLS session."""
    return [p.transport.get_extra_info("ssl_object").session_reused for p, _ in pool._idle]


async def test_a_burst_of_tls_writes_opens_one_connection_then_resumes_its_session(
    tmp_path: Path,
) -> None:
    """Six concurrent writes on a fresh pool: the first connection is opened alone, and the
    others wait for its answer (and its ticket), then resume its session instead of making
    full handshakes."""
    from aiohttp import web

    open_when_first_arrived: list[int] = []
    pool: Any = None

    async def handler(request: web.Request) -> web.Response:
        if not open_when_first_arrived:
            open_when_first_arrived.append(pool._open_count)
        await asyncio.sleep(0.05)  # each in-flight request holds its connection
        return web.json_response({}, status=201)

    async with (
        _tls_server(tmp_path, handler) as kc,
        await APIClient.from_kubeconfig(kc, qps=0) as c,
    ):
        pool = c._writes()
        assert pool is not None
        with anyio.fail_after(20):
            got = await asyncio.gather(
                *[pool.request("POST", f"/p{i}", b"{}", "application/json", 10) for i in range(6)]
            )
        assert [g[0] for g in got] == [201] * 6
        assert open_when_first_arrived == [1]
        # the first connection, free again, serves one of the five
        assert len(pool._idle) == 5 and sorted(_reused(pool)) == [False] + [True] * 4
        pool.close()
        # the next burst's connections resume too
        with anyio.fail_after(20):
            await asyncio.gather(
                *[pool.request("POST", "/q", b"{}", "application/json", 10) for _ in range(3)]
            )
        assert _reused(pool) == [True] * 3


async def test_a_tls_server_without_tickets_still_gets_parallel_connections(
    tmp_path: Path,
) -> None:
    """No ticket comes (``num_tickets`` 0): after the first answer the pool stops waiting
    for one and opens connections as usual."""
    from aiohttp import web

    async def handler(request: web.Request) -> web.Response:
        await asyncio.sleep(0.05)
        return web.json_response({}, status=201)

    async with (
        _tls_server(tmp_path, handler, num_tickets=0) as kc,
        await APIClient.from_kubeconfig(kc, qps=0) as c,
    ):
        pool = c._writes()
        assert pool is not None
        with anyio.fail_after(20):
            await asyncio.gather(
                *[pool.request("POST", "/p", b"{}", "application/json", 10) for _ in range(4)]
            )
        assert len(pool._idle) == 3 and _reused(pool) == [False] * 3


class _SlowServer:
    """Keep-alive HTTP/1.1: answers each request after the delay its body names (seconds;
    "never": no answer); counts connections."""

    def __init__(self) -> None:
        self.connections = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                body = await _read_request(reader)
                if body == b"never":
                    await reader.read()  # until the client gives up and closes
                    return
                await asyncio.sleep(float(body))
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def test_pool_request_times_out_and_drops_the_connection() -> None:
    srv = _SlowServer()
    async with _serving(srv.handle) as client:
        pool = client._writes()
        assert pool is not None
        with anyio.fail_after(10), pytest.raises(APIConnectionError) as e:
            await pool.request("POST", "/x", b"never", "text/plain", 0.2)
        assert e.value.reason == "Timeout"
        assert pool._open_count == 0 and not pool._idle
        # the next request gets a new connection and its answer
        assert await pool.request("POST", "/x", b"0", "text/plain", 5.0) == (200, b"ok", None)
    assert srv.connections == 2


async def test_pool_connection_timer_follows_the_request_in_flight() -> None:
    """One timer per connection: armed for an earlier request's deadline, it must neither
    fail a later request with a later deadline nor outlast an earlier deadline."""
    srv = _SlowServer()
    async with _serving(srv.handle) as client:
        pool = client._writes()
        assert pool is not None

        async def post(body: bytes, timeout: float) -> Any:
            return await pool.request("POST", "/x", body, "text/plain", timeout)

        with anyio.fail_after(10):
            # timer armed for +0.1 s; the answer comes at once
            assert await post(b"0", 0.1) == (200, b"ok", None)
            # same connection, answered after 0.3 s: the +0.1 s timer fires meanwhile
            assert await post(b"0.3", 60.0) == (200, b"ok", None)
            # a long deadline, then a short one on the same connection: the short wins
            assert await post(b"0", 90.0) == (200, b"ok", None)
        with anyio.fail_after(5), pytest.raises(APIConnectionError) as e:
            await post(b"never", 0.2)
        assert e.value.reason == "Timeout"
    assert srv.connections == 1
