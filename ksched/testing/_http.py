"""A small HTTP/1.1 server for the test API server.

aiohttp's web framework spent about as much CPU per request as everything the API server
does with it (request and response objects, routing, header handling, one task per request).
This layer is an asyncio.Protocol that parses requests straight off the socket buffer and
answers them synchronously when the handler can, so a burst of pipelined requests costs one
parse loop and one write:

- HTTP/1.0 and 1.1, keep-alive (1.1 by default, 1.0 with ``Connection: keep-alive``) and
  pipelining (answers in request order; a handler that has to wait holds the ones behind it);
- request bodies by Content-Length or ``Transfer-Encoding: chunked``; ``Expect: 100-continue``;
- streamed (chunked) responses for watches, with write back-pressure;
- malformed requests get a JSON Status 4xx (400, 413, 431, 501, 505) and the connection is
  closed, since the stream can no longer be trusted; HEAD answers carry no body;
- when the client goes away, the handler still waiting for that connection is cancelled.

Handlers return a ``Response``, or a coroutine for work that has to wait (latency faults,
watch streams); such a coroutine may stream through ``Request.conn`` and return None.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http
import logging
import re
import time
from collections.abc import Callable, Coroutine
from email.utils import formatdate
from typing import Any
from urllib.parse import parse_qsl, unquote

from ._store import encode, status_body

__all__ = ["HTTPServer", "Request", "Response"]

log = logging.getLogger(__name__)

MAX_HEADER = 64 * 1024  # request line plus headers
MAX_BODY = 64 * 1024 * 1024
_MAX_CHUNK_LINE = 4096
_PAUSE_READING_AT = 1024 * 1024  # bytes buffered behind a handler that is still busy

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")
_METHODS = frozenset(("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"))
# clients send the same header lines over and over: each is parsed and checked once
_header_lines: dict[str, tuple[str, str]] = {}
_HEADER_LINES_CACHED = 4096


class HTTPError(Exception):
    """A request that cannot be parsed: answered with a Status, then the connection closes."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Request:
    """One parsed request. ``headers`` has lower-case names (repeats joined by ", ")."""

    __slots__ = (
        "_pairs_cache",
        "_query",
        "body",
        "conn",
        "headers",
        "keep_alive",
        "method",
        "path",
        "qs",
        "v10",
    )

    def __init__(
        self,
        method: str,
        path: str,
        qs: str,
        headers: dict[str, str],
        body: bytes,
        keep_alive: bool,
        v10: bool,
        conn: Connection,
    ) -> None:
        self.method = method
        self.path = path
        self.qs = qs
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive
        self.v10 = v10
        self.conn = conn
        self._pairs_cache: list[tuple[str, str]] | None = None
        self._query: dict[str, str] | None = None

    def _pairs(self) -> list[tuple[str, str]]:
        if self._pairs_cache is None:
            self._pairs_cache = parse_qsl(self.qs, keep_blank_values=True) if self.qs else []
        return self._pairs_cache

    @property
    def query(self) -> dict[str, str]:
        """Query parameters, the first value of each (shared: do not modify)."""
        if self._query is None:
            self._query = {}
            for k, v in self._pairs():
                self._query.setdefault(k, v)
        return self._query

    def query_values(self, name: str) -> list[str]:
        return [v for k, v in self._pairs() if k == name]

    @property
    def content_type(self) -> str:
        """The media type without parameters, lower-cased ("" when absent)."""
        return self.headers.get("content-type", "").partition(";")[0].strip().lower()


class Response:
    __slots__ = ("body", "content_type", "headers", "status")

    def __init__(
        self,
        status: int,
        body: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers


Result = Response | Coroutine[Any, Any, Response | None]
Handler = Callable[[Request], Result]

_status_lines: dict[int, bytes] = {}


def _status_line(code: int) -> bytes:
    line = _status_lines.get(code)
    if line is None:
        try:
            phrase = http.HTTPStatus(code).phrase
        except ValueError:
            phrase = "Unknown"
        line = _status_lines[code] = f"HTTP/1.1 {code} {phrase}\r\n".encode("latin-1")
    return line


_date_cache: list[Any] = [0, b""]


def _date() -> bytes:
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[0] = now
        _date_cache[1] = formatdate(now, usegmt=True).encode("latin-1")
    date: bytes = _date_cache[1]
    return date


def _head(status: int, headers: dict[str, str] | None, close: bool, keep_alive_10: bool) -> bytes:
    out = _status_line(status) + b"Date: " + _date() + b"\r\n"
    if headers:
        out += "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode("latin-1")
    if close:
        out += b"Connection: close\r\n"
    elif keep_alive_10:
        out += b"Connection: keep-alive\r\n"
    return out


class _Head:
    """A parsed request line and headers, waiting for the body."""

    __slots__ = ("chunked", "headers", "keep_alive", "length", "method", "path", "qs", "v10")

    def __init__(self, text: str) -> None:
        lines = text.split("\r\n")
        parts = lines[0].split(" ")
        if (
            len(parts) != 3
            or not parts[1]
            or (parts[0] not in _METHODS and not _TOKEN.fullmatch(parts[0]))
        ):
            raise HTTPError(400, f"malformed request line {lines[0][:200]!r}")
        method, target, version = parts
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            if re.fullmatch(r"HTTP/\d\.\d", version):
                raise HTTPError(505, f"HTTP version {version} is not supported")
            raise HTTPError(400, f"malformed request line {lines[0][:200]!r}")
        headers: dict[str, str] = {}
        cache = _header_lines
        for line in lines[1:]:
            field = cache.get(line)
            if field is None:
                name, sep, value = line.partition(":")
                if not sep or not _TOKEN.fullmatch(name) or "\r" in value or "\n" in value:
                    raise HTTPError(400, f"malformed header line {line[:200]!r}")
                field = (name.lower(), value.strip(" \t"))
                if len(cache) < _HEADER_LINES_CACHED:
                    cache[line] = field
            name, value = field
            old = headers.get(name)
            headers[name] = value if old is None else f"{old}, {value}"
        if target.startswith("/"):
            pass
        elif target.startswith(("http://", "https://")):  # absolute-form
            slash = target.find("/", target.find("//") + 2)
            target = target[slash:] if slash >= 0 else "/"
        elif not (target == "*" and method == "OPTIONS"):
            raise HTTPError(400, f"malformed request target {target[:200]!r}")
        path, _, qs = target.partition("?")
        path = path.partition("#")[0]
        self.method = method
        self.path = unquote(path) if "%" in path else path
        self.qs = qs.partition("#")[0]
        self.headers = headers
        self.v10 = version == "HTTP/1.0"
        conn = headers.get("connection", "").lower()
        self.keep_alive = "keep-alive" in conn if self.v10 else "close" not in conn
        self.length = 0
        self.chunked = False
        te = headers.get("transfer-encoding")
        cl = headers.get("content-length")
        if te is not None:
            if cl is not None:
                raise HTTPError(400, "both Transfer-Encoding and Content-Length given")
            if te.lower() != "chunked":
                raise HTTPError(501, f"unsupported Transfer-Encoding {te!r}")
            self.chunked = True
        elif cl is not None:
            if not (cl.isascii() and cl.isdigit()):
                raise HTTPError(400, f"invalid Content-Length {cl!r}")
            self.length = int(cl)
            if self.length > MAX_BODY:
                raise HTTPError(413, f"request body larger than {MAX_BODY} bytes")


class Connection(asyncio.Protocol):
    """One client connection: parses requests, runs the handler, writes answers in order."""

    def __init__(self, server: HTTPServer) -> None:
        self._server = server
        self._handler = server.handler
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._out: list[bytes] = []  # answers not yet written
        self._head: _Head | None = None
        self._chunks: list[bytes] = []
        self._chunked_size = 0
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._eof = False
        self._reading_paused = False
        self._writable_callbacks: list[Callable[[], None]] = []
        self._write_paused = False

    # -- asyncio.Protocol -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._server.connections.discard(self)
        if self._task is not None:
            self._task.cancel()
        self._wake_writer()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._wake_writer()

    def _wake_writer(self) -> None:
        callbacks, self._writable_callbacks = self._writable_callbacks, []
        for cb in callbacks:
            cb()

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        self._buf += data
        if self._task is None:
            self._process()
        elif len(self._buf) > _PAUSE_READING_AT and not self._reading_paused:
            assert self._transport is not None
            self._transport.pause_reading()
            self._reading_paused = True

    def eof_received(self) -> bool:
        self._eof = True
        if self._task is None:
            self._close()
        return True  # keep writing what is still being answered

    # -- streaming, for handlers ----------------------------------------------------------------

    @property
    def closing(self) -> bool:
        return self._closing

    def start_stream(self, req: Request, status: int, headers: dict[str, str]) -> None:
        """Send the head of a streamed answer; the body follows by ``write`` (chunked for
        HTTP/1.1; for HTTP/1.0 raw, ending with the connection)."""
        assert self._transport is not None
        if req.v10:
            req.keep_alive = False
            head = _head(status, headers, True, False)
        else:
            head = _head(status, headers, not req.keep_alive, False)
            head += b"Transfer-Encoding: chunked\r\n"
        self._flush()  # answers to the requests pipelined before this one go first
        self._transport.write(head + b"\r\n")

    def send(self, req: Request, data: bytes) -> None:
        """Send part of a streamed body. Check ``write_paused`` first: while it is True the
        client is not keeping up, and ``when_writable`` says when to go on."""
        if self._closing or self._transport is None:
            raise ConnectionResetError("the client went away")
        if req.v10:
            self._transport.write(data)
        else:
            self._transport.write(b"%x\r\n%b\r\n" % (len(data), data))

    @property
    def write_paused(self) -> bool:
        return self._write_paused

    def when_writable(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the client has caught up (or the connection is gone)."""
        self._writable_callbacks.append(callback)

    def end_stream(self, req: Request) -> None:
        if not self._closing and self._transport is not None and not req.v10:
            self._transport.write(b"0\r\n\r\n")

    def abort(self) -> None:
        """Cut the connection (no clean end of the stream)."""
        self._closing = True
        if self._transport is not None:
            self._transport.abort()

    def shutdown(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self._close()

    # -- parsing and answering ------------------------------------------------------------------

    def _flush(self) -> None:
        if self._out:
            if self._transport is not None and not self._transport.is_closing():
                self._transport.writelines(self._out)
            self._out.clear()

    def _close(self) -> None:
        self._closing = True
        if self._transport is not None:
            self._transport.close()

    def _process(self) -> None:
        """Answer every complete request in the buffer, until one has to wait."""
        transport = self._transport
        assert transport is not None
        out = self._out
        buf = self._buf
        pos = 0
        try:
            while not self._closing:
                req, pos = self._parse(buf, pos)
                if req is None:
                    break
                try:
                    result = self._handler(req)
                except Exception as e:  # handlers answer errors themselves; this is a bug
                    log.exception("test apiserver: %s %s failed", req.method, req.path)
                    result = _error_response(500, f"Internal error occurred: {e}")
                if isinstance(result, Response):
                    out.append(self._render(req, result))
                    if not req.keep_alive:
                        self._closing = True
                    continue
                self._flush()
                task = asyncio.get_running_loop().create_task(self._run(req, result))
                # a task cancelled before its first step never runs (nor awaits) `result`
                task.add_done_callback(functools.partial(_close_work, result))
                self._task = task
                break
        except HTTPError as e:
            out.append(
                _head(e.code, None, True, False)
                + _json_tail(encode(status_body(e.code, e.message)))
            )
            self._closing = True
        del buf[:pos]
        self._flush()
        if self._closing or (self._eof and self._task is None):
            self._close()

    def _parse(self, buf: bytearray, pos: int) -> tuple[Request | None, int]:
        """The next complete request starting at ``pos`` and where it ends; None while it is
        incomplete, with how far parsing got (the head or chunks so far are kept)."""
        head = self._head
        if head is None:
            while buf.startswith(b"\r\n", pos):  # tolerated before a request line
                pos += 2
            end = buf.find(b"\r\n\r\n", pos)
            if end < 0 or end - pos > MAX_HEADER:
                if end >= 0 or len(buf) - pos > MAX_HEADER:
                    raise HTTPError(431, "request header fields too large")
                return None, pos
            head = _Head(buf[pos:end].decode("latin-1"))
            pos = end + 4
            if head.chunked or head.length:
                self._head = head
                if head.headers.get("expect", "").lower() == "100-continue":
                    ready = len(buf) - pos >= head.length and not head.chunked
                    if not ready and self._transport is not None:
                        self._transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if head.chunked:
            chunked, pos = self._chunked_body(buf, pos)
            if chunked is None:
                return None, pos
            body = chunked
        elif head.length:
            if len(buf) - pos < head.length:
                return None, pos
            body = bytes(buf[pos : pos + head.length])
            pos += head.length
        else:
            body = b""
        self._head = None
        req = Request(
            head.method, head.path, head.qs, head.headers, body, head.keep_alive, head.v10, self
        )
        return req, pos

    def _chunked_body(self, buf: bytearray, pos: int) -> tuple[bytes | None, int]:
        while True:
            nl = buf.find(b"\r\n", pos)
            if nl < 0 or nl - pos > _MAX_CHUNK_LINE:
                if nl >= 0 or len(buf) - pos > _MAX_CHUNK_LINE:
                    raise HTTPError(400, "malformed chunked request body")
                return None, pos
            size_text = bytes(buf[pos:nl]).partition(b";")[0].strip()
            if not _HEX.fullmatch(size_text):
                raise HTTPError(400, "malformed chunked request body")
            size = int(size_text, 16)
            if size == 0:
                end = nl + 2
                if not buf.startswith(b"\r\n", end):  # trailer fields, skipped
                    t = buf.find(b"\r\n\r\n", nl)
                    if t < 0:
                        if len(buf) - nl > MAX_HEADER:
                            raise HTTPError(431, "request trailer fields too large")
                        return None, pos
                    end = t + 2
                body = b"".join(self._chunks)
                self._chunks = []
                self._chunked_size = 0
                return body, end + 2
            if self._chunked_size + size > MAX_BODY:
                raise HTTPError(413, f"request body larger than {MAX_BODY} bytes")
            start = nl + 2
            if len(buf) - start < size + 2:
                return None, pos
            if buf[start + size : start + size + 2] != b"\r\n":
                raise HTTPError(400, "malformed chunked request body")
            self._chunks.append(bytes(buf[start : start + size]))
            self._chunked_size += size
            pos = start + size + 2

    def _render(self, req: Request, resp: Response) -> bytes:
        close = not req.keep_alive
        head = _head(resp.status, resp.headers, close, req.v10 and not close)
        if req.method == "HEAD":
            return head + b"Content-Type: %b\r\nContent-Length: %d\r\n\r\n" % (
                resp.content_type.encode("latin-1"),
                len(resp.body),
            )
        if resp.content_type == "application/json":
            return head + _json_tail(resp.body)
        return head + b"Content-Type: %b\r\nContent-Length: %d\r\n\r\n%b" % (
            resp.content_type.encode("latin-1"),
            len(resp.body),
            resp.body,
        )

    async def _run(self, req: Request, work: Coroutine[Any, Any, Response | None]) -> None:
        try:
            resp = await work
        except asyncio.CancelledError:
            self._task = None
            return  # the client went away, or the server is stopping
        except Exception as e:
            log.exception("test apiserver: %s %s failed", req.method, req.path)
            resp = None if self._closing else _error_response(500, f"Internal error: {e}")
            if resp is None:
                req.keep_alive = False
        self._task = None
        if self._closing or self._transport is None:
            return
        if resp is not None:
            self._transport.write(self._render(req, resp))
        if not req.keep_alive:
            self._close()
            return
        if self._reading_paused:
            self._reading_paused = False
            self._transport.resume_reading()
        self._process()


def _close_work(work: Coroutine[Any, Any, Response | None], _task: asyncio.Task[None]) -> None:
    work.close()


def _json_tail(body: bytes) -> bytes:
    return b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%b" % (len(body), body)


def _error_response(code: int, message: str) -> Response:
    return Response(code, encode(status_body(code, message)))


class HTTPServer:
    """Listens on host:port and serves every connection with ``handler``."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections: set[Connection] = set()
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        """Start listening; returns the bound port (useful when ``port`` is 0)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(lambda: Connection(self), host, port, backlog=128)
        sock = self._server.sockets[0]
        return int(sock.getsockname()[1])

    async def stop(self, grace: float = 0.5) -> None:
        """Stop listening, give handlers still running `grace` seconds to finish (watches
        told to end can then end their streams cleanly), and close every connection."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        running = [c._task for c in self.connections if c._task is not None]
        if running:
            await asyncio.wait(running, timeout=grace)
        for conn in list(self.connections):
            conn.shutdown()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):
                await server.wait_closed()
