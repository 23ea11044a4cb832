"""The server's own HTTP/1.1 layer, over raw sockets: keep-alive, pipelining, request bodies
(Content-Length and chunked, split across packets), streaming, and bad input."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import time
import warnings
from typing import Any

import pytest

from ksched.testing import TestAPIServer
from ksched.testing._http import Connection, HTTPServer

from ._http import pod

PODS = "/api/v1/namespaces/default/pods"


class Raw:
    """One TCP connection, written raw; answers parsed one at a time."""

    def __init__(self, srv: TestAPIServer) -> None:
        self.sock = socket.create_connection((srv.host, srv.port), timeout=10)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buf += chunk
        return bool(chunk)

    def _take_line(self) -> bytes:
        while b"\r\n" not in self.buf:
            assert self._fill(), "connection closed mid-answer"
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n: int) -> bytes:
        while len(self.buf) < n:
            assert self._fill(), "connection closed mid-answer"
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def answer(self, *, head: bool = False) -> tuple[int, dict[str, str], Any]:
        """(status, headers with lower-case names, JSON body or text)."""
        while b"\r\n\r\n" not in self.buf:
            assert self._fill(), "connection closed before an answer"
        raw_head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = raw_head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        body = b""
        if head:
            pass
        elif headers.get("transfer-encoding") == "chunked":
            while True:
                size = int(self._take_line(), 16)
                if size == 0:
                    self._take_line()
                    break
                body += self._take(size)
                self._take_line()
        else:
            body = self._take(int(headers.get("content-length", "0")))
        if headers.get("content-type", "").startswith("application/json") and body:
            if headers.get("transfer-encoding") == "chunked":
                return status, headers, [json.loads(x) for x in body.splitlines()]
            return status, headers, json.loads(body)
        return status, headers, body.decode()

    def closed(self) -> bool:
        """True once the server has closed the connection (after what was read)."""
        self.sock.settimeout(5)
        try:
            while self._fill():
                pass
        except ConnectionResetError:
            pass
        return True

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw(apiserver: TestAPIServer) -> Any:
    conns: list[Raw] = []

    def connect() -> Raw:
        c = Raw(apiserver)
        conns.append(c)
        return c

    yield connect
    for c in conns:
        c.close()


def req(method: str, path: str, body: Any = None, headers: str = "") -> bytes:
    data = b"" if body is None else json.dumps(body).encode()
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\n{headers}"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    return head.encode() + b"\r\n" + data


def test_pipelined_requests_are_answered_in_order(apiserver: TestAPIServer, raw: Any) -> None:
    c = raw()
    bind = {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}
    c.send(
        req("POST", PODS, pod("p"))
        + req("GET", f"{PODS}/p")
        + req("POST", f"{PODS}/p/binding", bind)
        + req("POST", f"{PODS}/p/binding", bind)
        + req("GET", f"{PODS}/nope")
        + req("GET", "/version")
    )
    statuses = []
    for _ in range(6):
        status, headers, _ = c.answer()
        statuses.append(status)
        assert headers["content-type"] == "application/json"
        assert "connection" not in headers
    assert statuses == [201, 200, 201, 409, 404, 200]
    assert apiserver.get("pods", "default", "p")["spec"]["nodeName"] == "n1"
    assert [r.status for r in apiserver.find_requests(resource="pods")] == statuses[:5]


def test_keep_alive_and_connection_close(raw: Any) -> None:
    c = raw()
    for _ in range(3):  # HTTP/1.1 keeps the connection by default
        c.send(req("GET", "/version"))
        assert c.answer()[0] == 200
    c.send(req("GET", "/version", headers="Connection: close\r\n") + req("GET", "/version"))
    status, headers, _ = c.answer()
    assert status == 200 and headers["connection"] == "close"
    assert c.closed() and c.buf == b""  # the pipelined request after it was not answered


def test_http_1_0_closes_unless_kept_alive(raw: Any) -> None:
    c = raw()
    c.send(b"GET /version HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    status, headers, _ = c.answer()
    assert status == 200 and headers["connection"] == "keep-alive"
    c.send(b"GET /healthz HTTP/1.0\r\n\r\n")
    status, headers, body = c.answer()
    assert (status, body) == (200, "ok") and headers["connection"] == "close"
    assert c.closed()


def test_bodies_split_across_packets(apiserver: TestAPIServer, raw: Any) -> None:
    c = raw()
    data = req("POST", PODS, pod("a")) + req("GET", f"{PODS}/a")
    for i in range(len(data)):  # one byte at a time: every parse state sees a partial input
        c.send(data[i : i + 1])
        if i % 50 == 0:
            time.sleep(0.001)
    assert c.answer()[0] == 201
    status, _, body = c.answer()
    assert status == 200 and body["metadata"]["name"] == "a"


def test_chunked_request_body_with_extensions_and_trailers(
    apiserver: TestAPIServer, raw: Any
) -> None:
    c = raw()
    data = json.dumps(pod("chunky")).encode()
    head = f"POST {PODS} HTTP/1.1\r\nContent-Type: application/json\r\n"
    head += "Transfer-Encoding: chunked\r\n\r\n"
    c.send(head.encode())
    c.send(b"%x;ext=1\r\n%b\r\n" % (10, data[:10]))
    time.sleep(0.02)
    c.send(b"%X\r\n%b\r\n0\r\n" % (len(data) - 10, data[10:]))
    time.sleep(0.02)
    c.send(b"X-Trailer: yes\r\n\r\n" + req("GET", f"{PODS}/chunky"))
    assert c.answer()[0] == 201
    assert c.answer()[0] == 200
    c.send(head.encode() + b"0\r\n\r\n")  # an empty chunked body is an empty body
    status, _, body = c.answer()
    assert status == 400 and body["message"] == "the request body is empty"
    assert apiserver.find_requests(verb="create")[0].body == pod("chunky")


def test_expect_100_continue(raw: Any) -> None:
    c = raw()
    data = json.dumps(pod("p")).encode()
    head = f"POST {PODS} HTTP/1.1\r\nContent-Type: application/json\r\n"
    head += f"Expect: 100-continue\r\nContent-Length: {len(data)}\r\n\r\n"
    c.send(head.encode())
    assert c._take_line() == b"HTTP/1.1 100 Continue"
    assert c._take_line() == b""
    c.send(data)
    assert c.answer()[0] == 201


def test_head_has_no_body(raw: Any) -> None:
    c = raw()
    c.send(b"HEAD /healthz HTTP/1.1\r\n\r\n" + req("GET", "/healthz"))
    status, headers, body = c.answer(head=True)
    assert status == 200 and headers["content-length"] == "2" and body == ""
    assert c.answer()[2] == "ok"


def test_absolute_form_and_percent_encoding(apiserver: TestAPIServer, raw: Any) -> None:
    c = raw()
    apiserver.create(pod("p", labels={"app": "a b"}))
    c.send(req("GET", f"http://example.test{PODS}/%70"))
    status, _, body = c.answer()
    assert status == 200 and body["metadata"]["name"] == "p"
    c.send(req("GET", f"{PODS}?labelSelector=app%3Da+b&labelSelector=app%3Dz"))
    status, _, body = c.answer()
    assert status == 200 and [p["metadata"]["name"] for p in body["items"]] == ["p"]
    rec = apiserver.find_requests(verb="list")[-1]
    assert rec.query == {"labelSelector": "app=a b"}


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET /version HTTP/1.1 extra\r\n\r\n", 400),
        (b"G(T /version HTTP/1.1\r\n\r\n", 400),
        (b"GET version HTTP/1.1\r\n\r\n", 400),
        (b"GET /version HTTP/2.0\r\n\r\n", 505),
        (b"GET /version SPDY/3\r\n\r\n", 400),
        (b"GET /version HTTP/1.1\r\nNo-Colon\r\n\r\n", 400),
        (b"GET /version HTTP/1.1\r\nBad Name: x\r\n\r\n", 400),
        (b"GET /version HTTP/1.1\r\n folded: x\r\n\r\n", 400),
        (b"POST /api/v1/nodes HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
        (b"POST /api/v1/nodes HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        (b"POST /api/v1/nodes HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n", 413),
        (b"POST /api/v1/nodes HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (
            b"POST /api/v1/nodes HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Length: 3\r\n\r\n",
            400,
        ),
        (b"POST /api/v1/nodes HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400),
        (b"POST /api/v1/nodes HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n", 400),
    ],
)
def test_malformed_requests_get_a_status_and_close(
    apiserver: TestAPIServer, raw: Any, data: bytes, code: int
) -> None:
    c = raw()
    c.send(data + req("GET", "/version"))
    status, headers, body = c.answer()
    assert status == code and headers["connection"] == "close"
    assert body["kind"] == "Status" and body["status"] == "Failure" and body["code"] == code
    assert c.closed() and c.buf == b""
    c2 = raw()  # the server is fine
    c2.send(req("GET", "/version"))
    assert c2.answer()[0] == 200


def test_oversized_headers_get_431(raw: Any) -> None:
    c = raw()
    c.send(b"GET /version HTTP/1.1\r\nX-Big: " + b"a" * 70000)
    status, _, body = c.answer()
    assert status == 431 and body["kind"] == "Status" and body["code"] == 431
    assert c.closed()
    c = raw()  # also when the whole head arrives at once
    c.send(b"GET /version HTTP/1.1\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
    assert c.answer()[0] == 431


def test_watch_stream_then_pipelined_requests(apiserver: TestAPIServer, raw: Any) -> None:
    apiserver.create(pod("p"))
    c = raw()
    c.send(
        req("GET", "/healthz")
        + req("GET", f"{PODS}?watch=true&timeoutSeconds=1")
        + req("GET", f"{PODS}/p")
    )
    assert c.answer()[2] == "ok"
    status, headers, events = c.answer()  # ends after timeoutSeconds
    assert status == 200 and headers["transfer-encoding"] == "chunked"
    assert [e["type"] for e in events] == ["ADDED"]
    status, _, body = c.answer()
    assert status == 200 and body["metadata"]["name"] == "p"


def test_http_1_0_watch_streams_until_close(apiserver: TestAPIServer, raw: Any) -> None:
    apiserver.create(pod("p"))
    c = raw()
    c.send(f"GET {PODS}?watch=1&timeoutSeconds=1 HTTP/1.0\r\n\r\n".encode())
    while b"\r\n\r\n" not in c.buf:
        assert c._fill()
    assert c.closed()
    head, _, body = c.buf.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding" not in head and b"Connection: close" in head
    assert [json.loads(x)["type"] for x in body.splitlines()] == ["ADDED"]


def test_client_going_away_mid_request(apiserver: TestAPIServer, raw: Any) -> None:
    apiserver.faults.add_latency(0.5, verb="get", resource="namespaces")
    c = raw()
    c.send(req("GET", "/api/v1/namespaces/default"))
    c.close()  # while the handler waits
    w = raw()
    w.send(req("GET", f"{PODS}?watch=1"))
    apiserver.wait_for_watchers(1)
    w.close()
    deadline = time.monotonic() + 5
    while apiserver.watcher_count() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert apiserver.watcher_count() == 0  # the watch noticed its client left
    apiserver.faults.clear()
    c = raw()
    c.send(b"GET /version HTTP/1.1\r\n")  # half a request, then the client leaves
    c.sock.shutdown(socket.SHUT_WR)
    assert c.closed() and c.buf == b""
    c = raw()
    c.send(req("GET", "/version"))
    c.sock.shutdown(socket.SHUT_WR)  # half-close: what was sent is still answered
    assert c.answer()[0] == 200
    assert c.closed()


def test_watch_to_a_slow_reader_loses_nothing(apiserver: TestAPIServer) -> None:
    """The stream stops writing while the client does not read, and goes on after."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect((apiserver.host, apiserver.port))
    c = Raw.__new__(Raw)
    c.sock, c.buf = sock, b""
    try:
        rv = apiserver.resource_version
        c.send(req("GET", f"{PODS}?watch=1&resourceVersion={rv}"))
        apiserver.wait_for_watchers(1)
        n = 1500
        for i in range(n):  # ~3 MB of events while the client reads nothing
            apiserver.create(
                pod(f"p{i:04d}", labels={"pad": "x" * 60}) | {"status": {"s": "y" * 2000}}
            )
        names = []
        while len(names) < n:
            while b"\n" not in c.buf:
                assert c._fill()
            line, _, c.buf = c.buf.partition(b"\n")
            if line.startswith(b"{"):
                names.append(json.loads(line)["object"]["metadata"]["name"])
        assert names == [f"p{i:04d}" for i in range(n)]
    finally:
        sock.close()


def test_stopping_ends_open_watches_cleanly() -> None:
    with TestAPIServer().run_in_thread() as srv:
        c = Raw(srv)
        c.send(req("GET", f"{PODS}?watch=1"))
        srv.wait_for_watchers(1)
    try:
        assert c.closed()
        assert c.buf.endswith(b"\r\n0\r\n\r\n")  # the stream's last chunk, not a cut
    finally:
        c.close()


def test_bad_utf8_in_a_json_body_is_a_400(apiserver: TestAPIServer, raw: Any) -> None:
    c = raw()
    data = b'{"metadata": {"name": "p\xf0("}}'
    head = f"POST {PODS} HTTP/1.1\r\nContent-Type: application/json\r\n"
    c.send(head.encode() + b"Content-Length: %d\r\n\r\n%b" % (len(data), data))
    status, _, body = c.answer()
    assert status == 400 and body["reason"] == "BadRequest"
    assert isinstance(apiserver.find_requests(verb="create")[0].body, str)


class _Sink(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.data = b""

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.data += bytes(data)

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_watch_whose_client_left_before_it_started_is_not_kept(anyio_backend: str) -> None:
    srv = TestAPIServer()
    conn = Connection(HTTPServer(srv._handle))
    sink = _Sink()
    conn.connection_made(sink)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        conn.data_received(f"GET {PODS}?watch=1 HTTP/1.1\r\n\r\n".encode())
        conn.connection_lost(None)  # before the handler's task has run at all
        for _ in range(3):
            await asyncio.sleep(0)
        del conn
        gc.collect()
    assert srv.watcher_count() == 0 and sink.data == b""
    assert not [w for w in caught if "never awaited" in str(w.message)]
