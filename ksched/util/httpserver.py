"""aiohttp behind an accept loop with bounds: read timeouts, a connection limit, and
running out of file descriptors handled quietly.

Both of ksched's HTTP servers (the daemon's health/metrics/debug server and
``ksched extender``) serve through :func:`start_app`, which bounds what a client can hold:

* **headers**: a connection must deliver its request headers within ``header_timeout``
  (10 s) of being accepted (after the TLS handshake, itself bounded by the same time) or,
  on a kept-alive connection, of the first byte of its next request. Else it is closed.
* **body**: the whole body must arrive within ``body_timeout`` (30 s, kube-scheduler's
  extender ``httpTimeout`` default) of the headers; else the handler is cancelled, the
  client gets a 408 and the connection is closed.
* **idle**: a kept-alive connection without a request is closed after ``idle_timeout``
  (120 s: longer than Go's 90 s ``IdleConnTimeout``, so kube-scheduler's client closes it
  first and never races a request against the close).
* **connections**: at most ``max_connections`` at once (default 1000, and never more than
  half the process's ``RLIMIT_NOFILE``). A new connection beyond that closes the one that
  has been idle (not serving a request) longest, so a crowd of idle or slow clients cannot
  lock out ``/healthz``; when every connection is serving a request, accepting pauses until
  one ends (new clients wait in the listen backlog).
* **file descriptors**: when ``accept()`` fails for want of descriptors (EMFILE, ENFILE,
  ENOBUFS, ENOMEM) the 16 connections idle longest are closed and accepting resumes once
  their descriptors are free (10 ms), or after ``accept_retry`` (0.5 s) when none was idle.
  One warning per ``log_interval`` (10 s) says so, with the repeats held back since.
  (asyncio's own accept loop logs a traceback for each failed ``accept()``, up to a
  hundred per loop iteration: hundreds of thousands of lines a minute.)

* **malformed requests**: aiohttp's own answers (an over-long request line or header, a
  bad method, TLS spoken to a plain port) are JSON errors that echo none of the client's
  bytes (aiohttp's quote the request line), and its error logging is one line per cause
  per ``log_interval`` without a traceback (aiohttp logs a traceback per request). A body
  that cannot be read (a corrupt gzip stream) gets 400 and ``Connection: close``
  (:func:`answer_and_close`).

Timeouts and limits are per server (runner); :data:`DEFAULT_LIMITS` applies when none are
given.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import resource
import socket
import ssl
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import (
    BadHttpMethod,
    BadStatusLine,
    HttpProcessingError,
    InvalidHeader,
    InvalidURLError,
    LineTooLong,
)
from aiohttp.web_request import BaseRequest

from ..logging import get_logger
from .throttle import LogThrottle

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_CONNECTIONS",
    "Limits",
    "answer_and_close",
    "connection_limit",
    "http_error_message",
    "payload_error",
    "start_app",
]

log = get_logger("ksched.http")

#: accept() errors that mean "no descriptor or buffer left", not "this connection failed".
_OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
#: accept() calls per readiness event, so one busy listener cannot starve the loop.
_ACCEPTS_PER_EVENT = 64
#: Out of descriptors: idle connections closed at once, and the retry after they were.
_EVICT_ON_EMFILE = 16
_FREED_RETRY = 0.01


@dataclass(frozen=True, slots=True)
class Limits:
    """What one server allows a client; see the module docstring."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    idle_timeout: float = 120.0
    #: None: 1000, or half of RLIMIT_NOFILE's soft limit when that is less.
    max_connections: int | None = None
    accept_retry: float = 0.5
    log_interval: float = 10.0


DEFAULT_LIMITS = Limits()
DEFAULT_MAX_CONNECTIONS = 1000


def connection_limit(limits: Limits) -> int:
    """``limits.max_connections``, or the default for this process's descriptor limit."""
    if limits.max_connections is not None:
        return max(1, limits.max_connections)
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return DEFAULT_MAX_CONNECTIONS
    return max(1, min(DEFAULT_MAX_CONNECTIONS, soft // 2))


ErrorResponse = Callable[[int, str], web.Response]


def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


class _State(Enum):
    HANDSHAKE = "handshake"  # accepted, TLS handshake running
    HEADERS = "headers"  # waiting for a request's headers
    BUSY = "busy"  # a request is being served
    IDLE = "idle"  # kept alive between requests


class _Conn(asyncio.Protocol):
    """One connection: aiohttp's protocol wrapped with the header and idle timers."""

    def __init__(self, guard: _Guard, inner: asyncio.Protocol) -> None:
        self.guard = guard
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.state = _State.HANDSHAKE
        self.timer: asyncio.TimerHandle | None = None
        self.pending: asyncio.Task[Any] | None = None  # connect_accepted_socket
        self.closed = False
        self.made = False  # connection_made forwarded to aiohttp

    # -- asyncio.Protocol, forwarded ------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.closed:  # evicted while connecting
            transport.abort()
            return
        self.guard.by_transport[transport] = self
        self._wait(_State.HEADERS, self.guard.limits.header_timeout)
        self.made = True
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.state is _State.IDLE:  # the next request begins
            self._wait(_State.HEADERS, self.guard.limits.header_timeout)
        if self.made:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.made else None

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.guard.release(self)
        if self.made:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    # -- states ---------------------------------------------------------------------------
    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _wait(self, state: _State, timeout: float) -> None:
        """Not serving a request: closed after ``timeout``, first to go when room is short."""
        self._disarm()
        if self.closed:
            return
        self.state = state
        self.timer = asyncio.get_running_loop().call_later(timeout, self._expire)
        self.guard.evictable[self] = None
        self.guard.evictable.move_to_end(self)

    def begin_request(self) -> None:
        self._disarm()
        self.state = _State.BUSY
        self.guard.evictable.pop(self, None)

    def end_request(self) -> None:
        if self.transport is not None and self.state is _State.BUSY:
            self._wait(_State.IDLE, self.guard.limits.idle_timeout)

    def _expire(self) -> None:
        self.timer = None
        log.debug("http connection timed out", state=self.state.value)
        self.close()

    def close(self) -> None:
        """Abort the connection (or its TLS handshake); its slot is free at once."""
        self.closed = True
        self._disarm()
        self.guard.release(self)
        if self.pending is not None:
            self.pending.cancel()
        if self.transport is not None:
            self.transport.abort()


#: What aiohttp's own error answers say instead of its text (which echoes the request
#: line or a header back to the client, and to the log).
_PROTOCOL_ERRORS: dict[type[Exception], str] = {
    LineTooLong: "request line or header too long",
    BadHttpMethod: "invalid HTTP method",
    BadStatusLine: "invalid request line",
    InvalidURLError: "invalid request target",
    InvalidHeader: "invalid header",
}


class _Handler(web.RequestHandler):
    """aiohttp's protocol with its own error answers as JSON (``error``) naming the
    problem without echoing it, and its error logging one throttled line without a
    traceback: 2,000 over-long request lines wrote 2,000 tracebacks before."""

    __slots__ = ("_error", "_guard")

    def __init__(self, guard: _Guard, error: ErrorResponse, server: web.Server) -> None:
        # The runner's keyword arguments (keepalive_timeout, access_log, ...) as
        # ``web.Server.__call__`` passes them to the RequestHandler it makes.
        kwargs: dict[str, Any] = getattr(server, "_kwargs", {})
        super().__init__(server, loop=asyncio.get_running_loop(), **kwargs)
        self._guard = guard
        self._error = error

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        self.log_exception("http request failed", exc_info=exc, status=status)
        if request.writer.output_size > 0:  # as aiohttp: too late for an answer
            raise ConnectionError("a response was sent already")
        if status >= 500:
            text = "internal error"
        else:
            text = next(
                (t for cls, t in _PROTOCOL_ERRORS.items() if isinstance(exc, cls)),
                "malformed HTTP request",
            )
        resp = self._error(status, text)
        resp.force_close()
        return resp

    def log_exception(self, *args: Any, **kw: Any) -> None:
        exc = kw.get("exc_info")
        error = type(exc).__name__ if isinstance(exc, BaseException) else None
        what = str(args[0]) if args else "http request failed"
        held_back = self._guard.throttle.allow(f"{what} {error}")
        if held_back is not None:
            log.warning(what, error=error, status=kw.get("status"), repeated=held_back)


class _Guard:
    """The connections of one server (all its listeners) and their limits."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.max_connections = connection_limit(limits)
        self.conns: set[_Conn] = set()
        # not serving a request, longest idle first
        self.evictable: OrderedDict[_Conn, None] = OrderedDict()
        self.by_transport: dict[asyncio.BaseTransport, _Conn] = {}
        self.waiting: list[Callable[[], None]] = []  # listeners paused for room
        self.throttle = LogThrottle(limits.log_interval)

    def add(self, conn: _Conn) -> None:
        self.conns.add(conn)
        self.evictable[conn] = None

    def release(self, conn: _Conn) -> None:
        if conn not in self.conns:
            return
        self.conns.discard(conn)
        self.evictable.pop(conn, None)
        if conn.transport is not None:
            self.by_transport.pop(conn.transport, None)
        waiting, self.waiting = self.waiting, []
        for resume in waiting:
            resume()

    def evict_one(self) -> bool:
        """Close the connection idle longest; False when every one is serving a request."""
        if not self.evictable:
            return False
        conn, _ = self.evictable.popitem(last=False)
        conn.close()
        return True

    def make_room(self) -> bool:
        """True when one more connection may be accepted (evicting one if need be)."""
        if len(self.conns) < self.max_connections:
            return True
        evicted = self.evict_one()
        if (held_back := self.throttle.allow(f"full {evicted}")) is not None:
            log.warning(
                "http connection limit reached: "
                + (
                    "closing the connections idle longest"
                    if evicted
                    else "every connection is serving a request; accepting paused"
                ),
                limit=self.max_connections,
                repeated=held_back,
            )
        return evicted

    def out_of_fds(self, where: str, e: OSError) -> int:
        """Close a few of the connections idle longest; how many."""
        freed = 0
        while freed < _EVICT_ON_EMFILE and self.evict_one():
            freed += 1
        if (held_back := self.throttle.allow("out of fds")) is not None:
            log.warning(
                "out of file descriptors: not accepting connections for a moment",
                address=where,
                error=e.strerror or str(e),
                closed_idle=freed,
                repeated=held_back,
                log_interval_seconds=self.limits.log_interval,
            )
        return freed

    def accept_failed(self, where: str, e: OSError) -> None:
        if (held_back := self.throttle.allow(f"accept {e.errno}")) is not None:
            log.warning(
                "accepting a connection failed", address=where, error=str(e), repeated=held_back
            )


class _Listener:
    """The accept loop over one server's listening sockets (the ``site._server``)."""

    def __init__(
        self,
        guard: _Guard,
        sockets: list[socket.socket],
        factory: Callable[[], asyncio.Protocol],
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        self.guard = guard
        self.sockets = sockets
        self.factory = factory
        self.ssl = ssl_context
        self.loop = asyncio.get_running_loop()
        self.reading = False
        self.closed = False
        self.retry: asyncio.TimerHandle | None = None
        self.parked: list[socket.socket] = []  # accepted, waiting for a free slot

    def _where(self, sock: socket.socket) -> str:
        host, port = sock.getsockname()[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def start(self) -> None:
        if self.closed or self.reading:
            return
        while self.parked:
            if not self.guard.make_room():
                self._pause(None)
                return
            self._serve(self.parked.pop(0))
        self.reading = True
        for s in self.sockets:
            self.loop.add_reader(s.fileno(), self._on_readable, s)

    def _pause(self, retry: float | None) -> None:
        """Stop accepting; again after ``retry`` seconds, or (None) once a slot frees."""
        if self.reading:
            self.reading = False
            for s in self.sockets:
                self.loop.remove_reader(s.fileno())
        if retry is None:
            if self.start not in self.guard.waiting:
                self.guard.waiting.append(self.start)
        elif self.retry is None:
            self.retry = self.loop.call_later(retry, self._resume)

    def _resume(self) -> None:
        self.retry = None
        self.start()

    def close(self) -> None:
        """Stop listening; TLS handshakes still running are abandoned (the runner's
        cleanup closes the connections aiohttp has)."""
        self.closed = True
        if self.reading:
            self.reading = False
            for s in self.sockets:
                self.loop.remove_reader(s.fileno())
        if self.retry is not None:
            self.retry.cancel()
            self.retry = None
        for s in self.sockets + self.parked:
            s.close()
        self.parked.clear()
        for conn in list(self.guard.conns):
            if conn.pending is not None:
                conn.close()

    async def wait_closed(self) -> None:
        return None

    def _on_readable(self, sock: socket.socket) -> None:
        for _ in range(_ACCEPTS_PER_EVENT):
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except ConnectionAbortedError:
                continue
            except OSError as e:
                if e.errno in _OUT_OF_RESOURCES:
                    # descriptors close on the next loop iterations: retry soon if some were
                    freed = self.guard.out_of_fds(self._where(sock), e)
                    self._pause(_FREED_RETRY if freed else self.guard.limits.accept_retry)
                else:
                    self.guard.accept_failed(self._where(sock), e)
                    self._pause(self.guard.limits.accept_retry)
                return
            if not self.guard.make_room():  # every connection is serving a request
                self.parked.append(conn)
                self._pause(None)
                return
            self._serve(conn)

    def _serve(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        conn = _Conn(self.guard, self.factory())
        self.guard.add(conn)
        kw: dict[str, Any] = {}
        if self.ssl is not None:
            kw = {"ssl": self.ssl, "ssl_handshake_timeout": self.guard.limits.header_timeout}
        coro = self.loop.connect_accepted_socket(lambda: conn, sock, **kw)
        conn.pending = self.loop.create_task(coro)
        conn.pending.add_done_callback(functools.partial(self._connected, conn, sock))

    def _connected(self, conn: _Conn, sock: socket.socket, task: asyncio.Task[Any]) -> None:
        conn.pending = None
        failed = task.cancelled() or task.exception() is not None
        if failed:  # a failed or timed-out TLS handshake, an eviction
            if not task.cancelled():
                log.debug("http connection setup failed", error=str(task.exception()))
            sock.close()
            self.guard.release(conn)


async def _listen(host: str | None, port: int, backlog: int) -> list[socket.socket]:
    """Listening sockets for ``host`` (every address it resolves to; all when None/"")."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    seen: set[tuple[int, Any]] = set()
    socks: list[socket.socket] = []
    try:
        for family, type_, proto, _, addr in infos:
            if (family, addr) in seen:
                continue
            seen.add((family, addr))
            s = socket.socket(family, type_, proto)
            socks.append(s)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                s.bind(addr)
            except OSError as e:  # asyncio's wording, which callers report
                msg = f"error while attempting to bind on address {addr!r}: "
                raise OSError(e.errno, msg + (e.strerror or str(e)).lower()) from None
            s.listen(backlog)
            s.setblocking(False)
    except BaseException:
        for s in socks:
            s.close()
        raise
    if not socks:
        raise OSError(f"{host}: no address to listen on")
    return socks


class _Site(web.BaseSite):
    """A TCP site whose connections go through ``_Guard``'s accept loop."""

    def __init__(
        self,
        runner: web.AppRunner,
        guard: _Guard,
        host: str | None,
        port: int,
        ssl_context: ssl.SSLContext | None,
        error: ErrorResponse,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self.guard = guard
        self.host = host
        self.port = port
        self.error = error

    @property
    def name(self) -> str:
        scheme = "https" if self._ssl_context else "http"
        host = self.host or "0.0.0.0"
        return f"{scheme}://{f'[{host}]' if ':' in host else host}:{self.port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        socks = await _listen(self.host, self.port, self._backlog)
        factory = functools.partial(_Handler, self.guard, self.error, server)
        listener = _Listener(self.guard, socks, factory, self._ssl_context)
        self._server = listener  # type: ignore[assignment]  # close() and .sockets suffice
        self.port = int(socks[0].getsockname()[1])
        listener.start()


def _bounded(guard: _Guard, error: ErrorResponse) -> Any:
    """The outermost middleware: request start/end for the timers, the body timeout."""

    @web.middleware
    async def bounded(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        conn = guard.by_transport.get(request.transport) if request.transport else None
        if conn is None:  # not one of ours (a test client, say): no bounds to apply
            return await handler(request)
        conn.begin_request()
        try:
            if request.content.is_eof():
                return await handler(request)
            return await _with_body_timeout(request, handler, guard.limits, error)
        finally:
            conn.end_request()

    return bounded


async def _with_body_timeout(
    request: web.Request,
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
    limits: Limits,
    error: ErrorResponse,
) -> web.StreamResponse:
    timeout = asyncio.timeout(limits.body_timeout)
    active = True

    def body_complete() -> None:
        if active:
            timeout.reschedule(None)

    try:
        async with timeout:
            request.content.on_eof(body_complete)
            try:
                return await handler(request)
            finally:
                active = False
    except TimeoutError:
        if not timeout.expired():
            raise
    log.debug("http request body timed out", path=request.path, seconds=limits.body_timeout)
    resp = error(408, f"the request body did not arrive within {limits.body_timeout:g}s")
    return await answer_and_close(request, resp)


async def answer_and_close(request: web.Request, resp: web.Response) -> web.Response:
    """Send ``resp`` with ``Connection: close`` and close the connection: the rest of the
    body (late, undecodable) is not read, so the connection cannot carry another request.
    The handler returns the response (already sent) as usual."""
    resp.force_close()
    await resp.prepare(request)
    await resp.write_eof()
    request.protocol.force_close()  # no lingering read of the rest
    return resp


def http_error_message(e: web.HTTPException, request: web.Request) -> str:
    """What a JSON error body says for one of aiohttp's own 4xx answers (an unknown path,
    a method the route does not take), which it words as text/plain."""
    return {
        404: f"not found: {request.path}",
        405: f"method {request.method} not allowed on {request.path}",
    }.get(e.status, e.reason)


def payload_error(e: web.RequestPayloadError) -> str:
    """What was wrong with a body aiohttp could not read (a corrupt gzip stream, a
    chunked encoding cut short), without echoing the client's bytes."""
    cause = e.__cause__
    why = cause.message if isinstance(cause, HttpProcessingError) else ""
    return f"the request body could not be read: {why or 'malformed'}"


async def start_app(
    app: web.Application,
    host: str | None,
    port: int,
    *,
    ssl_context: ssl.SSLContext | None = None,
    limits: Limits | None = None,
    error: ErrorResponse | None = None,
    **runner_kwargs: Any,
) -> tuple[web.AppRunner, int]:
    """Serve ``app`` on ``host:port`` within ``limits`` (:data:`DEFAULT_LIMITS`).

    ``error(status, message)`` makes the 408 of a body timeout (default
    ``{"error": message}``). Returns the runner (``await runner.cleanup()`` stops it) and
    the bound port (the real one when ``port`` is 0). ``OSError`` when the address cannot
    be listened on, with nothing left running.
    """
    limits = limits if limits is not None else DEFAULT_LIMITS
    guard = _Guard(limits)
    error = error or _json_error
    app.middlewares.insert(0, _bounded(guard, error))
    runner_kwargs.setdefault("access_log", None)
    runner_kwargs.setdefault("handle_signals", False)
    runner = web.AppRunner(app, keepalive_timeout=limits.idle_timeout, **runner_kwargs)
    await runner.setup()
    site = _Site(runner, guard, host, port, ssl_context, error)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner, site.port
