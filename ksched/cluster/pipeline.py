"""ksched's own HTTP/1.1 connections for writes: pipelined batches (the scheduler's
Events) and a keep-alive pool (bindings, status patches, lease renewals).

Through aiohttp every request costs the client about as much CPU as the API server spends
on it, plus a write system call of its own; for the Events a scheduler records per pod
that is more than the binding it reports. A ``PipelinedConnection`` keeps one keep-alive
connection and writes a whole batch of requests at once (HTTP/1.1 pipelining: the server
answers them in order), then reads the answers as they come.

Requests in a batch are independent: each gets its own ``(status, body)`` or exception.
When the server closes the connection after an answer (``Connection: close``), the
requests after it were never processed and are sent again on a new connection; when the
connection breaks, what was not answered fails with ``APIConnectionError`` (it may or may
not have been processed). Answers with Retry-After are for the caller to retry (through
``APIClient.request``, which honours it).

``ConnectionPool`` uses the same connections one request at a time, for ``APIClient``'s
writes (bindings, status patches, lease renewals): a keep-alive connection per request in
flight, reused afterwards, a few system calls and a small parse instead of aiohttp's
machinery. Reads (lists, watches) stay with aiohttp.

Only plain and TLS connections straight to the server are supported (``for_client``
returns None behind a proxy or with TLS settings only aiohttp understands).

New TLS connections resume the session of an earlier one (TLS 1.3 tickets, which
kube-apiserver issues): a burst of bindings opens dozens of connections at once, and a
resumed handshake skips the certificate exchange, a third of the client's CPU per
handshake here and the server's signature.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Protocol, cast
from urllib.parse import urlsplit

from .apierrors import APIConnectionError, APIError, retry_after_seconds

__all__ = ["Client", "ConnectionPool", "PipelinedConnection", "Request", "Result"]


class _Limiter(Protocol):
    @property
    def qps(self) -> float: ...

    async def acquire(self) -> None: ...


class Client(Protocol):
    """What a raw connection takes from the ``APIClient`` it stands in for: its transport
    (to reproduce), headers, rate limiter, timeout and request count. The client builds
    its pool from here, so this module does not import it back."""

    requests_sent: int

    @property
    def host(self) -> str: ...

    @property
    def api_client(self) -> Any: ...

    @property
    def _env_proxy(self) -> str | None: ...

    @property
    def _kube_session(self) -> Any: ...

    @property
    def limiter(self) -> _Limiter: ...

    @property
    def request_timeout(self) -> float: ...

    async def _headers(self, content_type: str | None) -> dict[str, str]: ...


# (method, path, body, content type)
Request = tuple[str, str, bytes, str]
# (status, body, Retry-After seconds) or the failure
Result = tuple[int, bytes, float | None] | BaseException

_MAX_HEADER = 64 * 1024
_INF = float("inf")


class _Unprocessed(Exception):
    """The server closed the connection before reading this request."""


class _ProtocolError(Exception):
    pass


def _parse(buf: bytearray, eof: bool = False) -> tuple[int, int, bytes, float | None, bool] | None:
    """One complete response at the start of ``buf``: (consumed, status, body, Retry-After,
    server closes), or None while incomplete. A body without a length ends with the
    connection (``eof``)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        if len(buf) > _MAX_HEADER:
            raise _ProtocolError("response header too long")
        return None
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise _ProtocolError(f"malformed status line {lines[0]!r}")
    try:
        status = int(parts[1])
    except ValueError:
        raise _ProtocolError(f"malformed status line {lines[0]!r}") from None
    length: int | None = None
    chunked = False
    close = parts[0] == "HTTP/1.0"
    retry_after: float | None = None
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            continue
        name = name.strip().lower()
        value = value.strip()
        if name == "content-length":
            try:
                length = int(value)
            except ValueError:
                raise _ProtocolError(f"bad Content-Length {value!r}") from None
        elif name == "transfer-encoding":
            chunked = "chunked" in value.lower()
        elif name == "connection":
            v = value.lower()
            if "close" in v:
                close = True
            elif "keep-alive" in v:
                close = False
        elif name == "retry-after":
            retry_after = retry_after_seconds(value)
    pos = end + 4
    if 100 <= status < 200 or status in (204, 304):
        return pos, status, b"", retry_after, close
    if chunked:
        chunks: list[bytes] = []
        while True:
            nl = buf.find(b"\r\n", pos)
            if nl < 0:
                return None
            try:
                size = int(bytes(buf[pos:nl]).split(b";", 1)[0].strip(), 16)
            except ValueError:
                raise _ProtocolError("bad chunk size") from None
            pos = nl + 2
            if size == 0:
                if buf[pos : pos + 2] == b"\r\n":
                    pos += 2
                else:  # trailers
                    t = buf.find(b"\r\n\r\n", pos)
                    if t < 0:
                        return None
                    pos = t + 4
                return pos, status, b"".join(chunks), retry_after, close
            if len(buf) < pos + size + 2:
                return None
            chunks.append(bytes(buf[pos : pos + size]))
            pos += size + 2
    if length is None:
        if not eof:
            return None  # the body ends with the connection
        return len(buf), status, bytes(buf[pos:]), retry_after, True
    if len(buf) < pos + length:
        return None
    return pos + length, status, bytes(buf[pos : pos + length]), retry_after, close


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiters: deque[asyncio.Future[tuple[int, bytes, float | None]]] = deque()
        self.usable = True
        self.answered = False  # an answer was read (its TLS session ticket is in by then)
        # ConnectionPool's deadline of the request in flight (inf: none), and one timer
        # that fires no later than it (see ``expire_at``).
        self.deadline = _INF
        self._timer: asyncio.TimerHandle | None = None

    def expire_at(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        """Fail the request in flight with TimeoutError at ``deadline`` (loop time).

        A timer per request (``asyncio.wait_for``) costs a heap push, a cancellation and a
        second future per binding; requests take milliseconds and time out after seconds,
        so one timer per connection is kept instead: armed for the first deadline, left
        alone while later requests (with later deadlines) come and go, and when it fires
        early for a request that has finished, re-armed for the one in flight if any.
        """
        self.deadline = deadline
        timer = self._timer
        if timer is None or timer.when() > deadline:
            if timer is not None:
                timer.cancel()
            self._timer = loop.call_at(deadline, self._expire, loop)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        deadline = self.deadline
        if deadline == _INF or not self.waiters:
            return
        if loop.time() < deadline:
            self._timer = loop.call_at(deadline, self._expire, loop)
            return
        self.deadline = _INF
        fut = self.waiters[0]
        if not fut.done():
            fut.set_exception(TimeoutError())

    def stop_timer(self) -> None:
        self.deadline = _INF
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buf += data
        try:
            while self.waiters:
                r = _parse(self.buf)
                if r is None:
                    return
                consumed, status, body, retry_after, close = r
                del self.buf[:consumed]
                if 100 <= status < 200:
                    continue  # informational: the real answer follows
                fut = self.waiters.popleft()
                if not fut.done():
                    fut.set_result((status, body, retry_after))
                if close:
                    self._fail(_Unprocessed())
                    return
            if self.buf:
                raise _ProtocolError("data nobody asked for")
        except _ProtocolError as e:
            self._fail(APIConnectionError(f"bad response: {e}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.usable = False
        if self.waiters and self.buf and exc is None:
            try:
                r = _parse(self.buf, eof=True)  # a body delimited by the end of the connection
            except _ProtocolError:
                r = None
            if r is not None and not 100 <= r[1] < 200:
                fut = self.waiters.popleft()
                if not fut.done():
                    fut.set_result((r[1], r[2], r[3]))
                self._fail(_Unprocessed(), close=False)
                return
        reason = f": {exc}" if exc else ""
        self._fail(APIConnectionError(f"connection closed by the server{reason}"), close=False)

    def _fail(self, exc: BaseException, close: bool = True) -> None:
        self.usable = False
        while self.waiters:
            fut = self.waiters.popleft()
            if not fut.done():
                fut.set_exception(exc)
        if close and self.transport is not None:
            self.transport.close()


class _Resuming:
    """The client's SSLContext, handing each new connection the newest session ticket.

    asyncio's ``create_connection`` takes no session, and an SSLContext made elsewhere (by
    aiohttp, from the kubeconfig) cannot be copied into a subclass; its TLS transport only
    calls ``wrap_bio`` on the context it is given, so this stands in for the context there.
    A ticket the server no longer takes costs nothing but the full handshake it replaces.
    """

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context
        self.session: ssl.SSLSession | None = None

    def wrap_bio(self, *args: Any, **kwargs: Any) -> ssl.SSLObject:
        if self.session is not None and not kwargs.get("server_side"):
            kwargs.setdefault("session", self.session)
        return self.context.wrap_bio(*args, **kwargs)

    def learn(self, transport: asyncio.BaseTransport) -> None:
        """Keep ``transport``'s session for the next connections once it has a ticket (the
        server sends it after the handshake, so it is there once an answer was read)."""
        obj = transport.get_extra_info("ssl_object")
        got = obj.session if isinstance(obj, ssl.SSLObject) else None
        if got is not None and got.has_ticket:
            self.session = got

    def __getattr__(self, name: str) -> Any:
        return getattr(self.context, name)


class _Endpoint:
    """Where and how ``APIClient`` connects, reproduced for raw connections."""

    def __init__(
        self,
        client: Client,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None,
        server_hostname: str | None,
        base_path: str,
        host_header: str,
    ) -> None:
        self.client = client
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.server_hostname = server_hostname
        self.base_path = base_path
        self.host_header = host_header
        self._host_line = f"Host: {host_header}\r\n".encode("latin-1")
        self._heads: dict[str | None, tuple[dict[str, str], bytes]] = {}
        self._tls = _Resuming(ssl_context) if ssl_context is not None else None

    @classmethod
    def for_client(cls, client: Client) -> Any:
        """None when the client's transport cannot be reproduced (a proxy, an odd TLS setup)."""
        rc = client.api_client.rest_client
        if getattr(rc, "proxy", None) or client._env_proxy:
            return None
        parts = urlsplit(client.host)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        ctx: ssl.SSLContext | None = None
        if parts.scheme == "https":
            got: Any = getattr(client._kube_session.connector, "_ssl", None)
            if isinstance(got, ssl.SSLContext):
                ctx = got
            elif got is True or got is None:
                ctx = ssl.create_default_context()
            else:
                return None  # fingerprints, verify=False shorthands: leave them to aiohttp
        port = parts.port or (443 if parts.scheme == "https" else 80)
        default = 443 if parts.scheme == "https" else 80
        host = parts.hostname
        host_header = f"[{host}]" if ":" in host else host
        if port != default:
            host_header = f"{host_header}:{port}"
        server_hostname = getattr(rc, "server_hostname", None) or (host if ctx else None)
        return cls(
            client,
            host,
            port,
            ctx,
            server_hostname if ctx else None,
            parts.path.rstrip("/"),
            host_header,
        )

    async def _open(self, timeout: float) -> _Protocol:
        loop = asyncio.get_running_loop()
        try:
            _, proto = await asyncio.wait_for(
                loop.create_connection(
                    _Protocol,
                    self.host,
                    self.port,
                    # asyncio only calls its wrap_bio (see _Resuming)
                    ssl=cast(ssl.SSLContext | None, self._tls),
                    server_hostname=self.server_hostname,
                ),
                timeout,
            )
        except (OSError, TimeoutError) as e:
            raise APIConnectionError(
                f"connecting to {self.host}:{self.port}: {e or type(e).__name__}"
            ) from e
        return proto

    def _answered(self, proto: _Protocol) -> None:
        """The connection's first answer is in: keep its TLS session for the next ones."""
        proto.answered = True
        if self._tls is not None and proto.transport is not None:
            self._tls.learn(proto.transport)

    async def _head(self, content_type: str | None) -> bytes:
        headers = await self.client._headers(content_type)
        got = self._heads.get(content_type)
        if got is not None and got[0] is headers:
            return got[1]
        text = b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in headers.items())
        self._heads[content_type] = (headers, self._host_line + text)
        return self._host_line + text


class PipelinedConnection(_Endpoint):
    """One connection of ``APIClient`` on which batches of requests are pipelined.

    Not for concurrent use: one task sends a batch and waits for its answers.
    """

    _proto: _Protocol | None = None

    async def _connect(self) -> _Protocol:
        proto = self._proto
        if (
            proto is not None
            and proto.usable
            and proto.transport is not None
            and not proto.transport.is_closing()
        ):
            return proto
        proto = await self._open(self.client.request_timeout)
        self._proto = proto
        return proto

    async def batch(self, requests: Sequence[Request]) -> list[Result]:
        """Send ``requests`` back to back and return each one's answer or failure."""
        client = self.client
        results: list[Result | None] = [None] * len(requests)
        todo = list(range(len(requests)))
        for _attempt in range(2):  # once more for what a closing server did not read
            limiter = client.limiter
            if limiter.qps > 0:
                for _ in todo:
                    await limiter.acquire()
            try:
                proto = await self._connect()
            except APIConnectionError as e:
                for i in todo:
                    results[i] = e
                break
            loop = asyncio.get_running_loop()
            out = bytearray()
            futs = []
            heads: dict[str, bytes] = {}  # the batch's Events share one content type
            for i in todo:
                method, path, body, ctype = requests[i]
                head = heads.get(ctype)
                if head is None:
                    head = heads[ctype] = await self._head(ctype)
                out += f"{method} {self.base_path}{path} HTTP/1.1\r\n".encode("latin-1")
                out += head
                out += b"Content-Length: %d\r\n\r\n" % len(body)
                out += body
                fut: asyncio.Future[tuple[int, bytes, float | None]] = loop.create_future()
                futs.append(fut)
            proto.waiters.extend(futs)
            assert proto.transport is not None
            proto.transport.write(bytes(out))
            client.requests_sent += len(todo)
            _, pending = await asyncio.wait(futs, timeout=client.request_timeout)
            if pending:
                proto._fail(APIConnectionError("pipelined request: timed out", reason="Timeout"))
            again = []
            for i, fut in zip(todo, futs, strict=True):
                exc = fut.exception()
                if isinstance(exc, _Unprocessed):
                    again.append(i)
                elif exc is not None:
                    results[i] = exc
                else:
                    results[i] = fut.result()
            todo = again
            if not proto.answered and proto.usable:  # every answer was read
                self._answered(proto)
            if not todo:
                break
        for i in todo:
            results[i] = APIConnectionError("pipelined request: the server closed the connection")
        return [
            r if r is not None else APIConnectionError("pipelined request: no answer")
            for r in results
        ]

    def close(self) -> None:
        if self._proto is not None and self._proto.transport is not None:
            self._proto.transport.close()
        self._proto = None


class ConnectionPool(_Endpoint):
    """Keep-alive connections for one request at a time each (see the module doc).

    Up to ``limit`` connections; a request that finds none idle and the limit reached
    waits its turn (first come, first served: woken one at a time, not all at once). Over
    TLS the first connection is opened alone: the others wait for its first answer, which
    brings the session ticket they resume (a burst of bindings at startup would otherwise
    make every connection a full handshake)."""

    KEEPALIVE = 15.0  # seconds an idle connection is reused (aiohttp's default too)

    def __init__(self, *args: Any, limit: int = 100) -> None:
        super().__init__(*args)
        self.limit = max(1, limit)
        self._idle: deque[tuple[_Protocol, float]] = deque()
        self._open_count = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        # over TLS: no connection has answered yet, so the next ones could not resume
        self._warming = self._tls is not None

    async def _acquire(self, timeout: float) -> _Protocol:
        loop = asyncio.get_running_loop()
        woken = False
        while True:
            now = loop.time()
            idle = self._idle
            while idle:
                proto, since = idle.pop()  # the most recently used: the least likely closed
                if (
                    proto.usable
                    and proto.transport is not None
                    and not proto.transport.is_closing()
                    and now - since < self.KEEPALIVE
                ):
                    return proto
                self._drop(proto)
            if self._open_count < self.limit and not (self._warming and self._open_count):
                self._open_count += 1
                try:
                    return await self._open(timeout)
                except BaseException:
                    self._open_count -= 1
                    self._notify()
                    raise
            fut: asyncio.Future[None] = loop.create_future()
            if woken:
                self._waiting.appendleft(fut)  # its turn was taken by a newcomer: keep it
            else:
                self._waiting.append(fut)
            woken = True
            try:
                await fut
            except BaseException:
                if fut.done() and not fut.cancelled():
                    self._notify()  # woken and cancelled at once: pass the turn on
                else:
                    fut.cancel()
                raise

    def _answered(self, proto: _Protocol) -> None:
        super()._answered(proto)
        if self._warming:
            self._warming = False
            for _ in range(self.limit):  # the ones that waited for the ticket may open now
                self._notify()

    def _drop(self, proto: _Protocol) -> None:
        self._open_count -= 1
        proto.stop_timer()
        if proto.transport is not None:
            proto.transport.close()
        self._notify()

    def _notify(self) -> None:
        """Wake the longest waiting request (a connection is idle, or one may be opened)."""
        waiting = self._waiting
        while waiting:
            fut = waiting.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    async def request(
        self,
        method: str,
        target: str,
        body: bytes | None,
        content_type: str | None,
        timeout: float,
        guard: Callable[[], None] | None = None,
    ) -> tuple[int, bytes, float | None]:
        """``target`` is the path and query (the client's base path is prepended). Raises
        ``APIConnectionError`` without an answer; a timeout has reason "Timeout".
        ``guard`` runs right before the bytes are written (``APIClient.request``)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        proto = await self._acquire(timeout)
        ok = False
        try:
            head = await self._head(content_type)
            if guard is not None:
                guard()  # nothing awaited between this and the write
            data = body or b""
            fut: asyncio.Future[tuple[int, bytes, float | None]] = loop.create_future()
            proto.waiters.append(fut)
            proto.expire_at(loop, deadline)
            assert proto.transport is not None
            proto.transport.write(
                b"%s %s%s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s"
                % (
                    method.encode("latin-1"),
                    self.base_path.encode("latin-1"),
                    target.encode("latin-1"),
                    head,
                    len(data),
                    data,
                )
            )
            try:
                result = await fut
            except TimeoutError:
                raise APIConnectionError(
                    f"{method} {target}: timed out", reason="Timeout"
                ) from None
            except _Unprocessed:
                raise APIConnectionError(
                    f"{method} {target}: the server closed the connection"
                ) from None
            except APIConnectionError as e:
                raise APIConnectionError(f"{method} {target}: {e.message}") from None
            ok = proto.usable
            if not proto.answered:
                self._answered(proto)
            return result
        finally:
            proto.deadline = _INF
            if ok:
                self._idle.append((proto, loop.time()))
                self._notify()
            else:
                self._drop(proto)

    def close(self) -> None:
        while self._idle:
            proto, _ = self._idle.pop()
            self._drop(proto)


def as_error(result: tuple[int, bytes, float | None]) -> APIError | None:
    """The APIError for a non-2xx answer, as ``APIClient.request`` raises it."""
    status, body, retry_after = result
    if 200 <= status < 300:
        return None
    return APIError.from_response(status, body, retry_after)
