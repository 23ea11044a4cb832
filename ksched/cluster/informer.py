"""Informers with client-go reflector semantics, delivering typed ksched objects.

An informer lists a collection, then watches from the list's resourceVersion with
bookmarks. A watch the server ends (timeoutSeconds, randomized 5-10 min like client-go)
or a dropped connection resumes from the last resourceVersion seen, so nothing is lost or
delivered twice. Only ``410 Gone``/``Expired`` — an HTTP 410 or an ERROR event with code
410 — or another watch failure forces a relist, which is diffed against the local store:
objects that vanished meanwhile are delivered as deletes, changed ones (by
resourceVersion) as updates, new ones as adds. Failures back off exponentially with
jitter (800 ms → 30 s, reset after 2 healthy minutes), as client-go's reflector does.

Relists follow the reflector's ``list``: the first at resourceVersion "0", later ones at
the last version seen and *unpaged*, so the watch cache answers with state at least that
new (a paged list at a resourceVersion is an exact read from etcd: after an API server
restart it returns the old state whose version the new watch cache calls too old, and the
informer would relist it forever). A list whose version is expired or not yet known to
the server falls back at once to a consistent read (resourceVersion ""), and so does the
relist after a watch that expired at the very version the previous list returned: the
informer never stalls beyond one relist.

A connection that fails outright (refused, reset: the server is down or restarting) is
retried on a short backoff of its own (200 ms → 2 s), not the reflector's 30 s: it costs
the server nothing, and a scheduler must resume within seconds of the server's readiness.
The first informer of a client to get through wakes the others waiting to reconnect: the
server is back for all of them.
``stale_for`` says how long an informer has been without a working watch or list, for
``/readyz``.

A watch can also die silently: a stalled network path, or an API server whose etcd is
gone (its watch cache keeps the watch open, with nothing to say). client-go catches the
first with HTTP/2 pings; here a watch silent for the client's ``read_idle_timeout`` has
the client probe the server (``APIClient.probe``, one at a time per client). A failed
probe puts the informer out of step and, if its watch is still silent, reopens it; until
a probe succeeds again, a watch that opens does not put it back in step.

Handlers are plain callables run in order on the event loop; the scheduler's ``on_*``
methods are synchronous and cheap, so no queue sits in between.
"""

from __future__ import annotations

import random
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio
import anyio.abc
import msgspec
import structlog

from ..api.objects import InvalidObjectError, ObjectMeta
from ..util.clock import Clock, RealClock
from ..util.errors import KschedError
from ..util.limits import clip
from ..util.throttle import LogThrottle
from .client import APIClient, APIConnectionError, APIError

__all__ = [
    "Backoff",
    "DecodeSkip",
    "Handlers",
    "Informer",
    "InformerSet",
]

log = structlog.get_logger("ksched.cluster.informer")
# Shared by every informer of the process: they fail together when the server does.
_THROTTLE = LogThrottle(10.0)

T = TypeVar("T")

# client-go reflector: minWatchTimeout, and a watch shorter than this with no events is
# a broken server or proxy, answered by a relist after backoff rather than a hot loop.
MIN_WATCH_TIMEOUT = 300.0
VERY_SHORT_WATCH = 1.0
# Retrying a connection that failed outright (see the module doc).
RECONNECT_INITIAL = 0.2
RECONNECT_CAP = 2.0


class _ServerBack:
    """Wakes the informers of one client that wait to reconnect, once one got through."""

    def __init__(self) -> None:
        self._event: anyio.Event | None = None

    async def wait(self) -> None:
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()

    def back(self) -> None:
        if self._event is not None:
            self._event.set()
            self._event = None


_SERVER_BACK: weakref.WeakKeyDictionary[APIClient, _ServerBack] = weakref.WeakKeyDictionary()


class DecodeSkip(KschedError):
    """Raised by a decoder for an object that cannot be represented; it is skipped."""


class Backoff:
    """client-go's ExponentialBackoffManager: ``initial`` doubling to ``cap``, each wait
    stretched by up to ``jitter`` times itself, back to ``initial`` after ``reset_after``
    seconds without a backoff."""

    def __init__(
        self,
        initial: float = 0.8,
        cap: float = 30.0,
        *,
        reset_after: float = 120.0,
        factor: float = 2.0,
        jitter: float = 1.0,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.reset_after = reset_after
        self.factor = factor
        self.jitter = jitter
        self.clock: Clock = clock or RealClock()
        self.rng = rng or random.Random()
        self._next = initial
        self._last: float | None = None

    def next(self) -> float:
        now = self.clock.now()
        if self._last is None or now - self._last > self.reset_after:
            self._next = self.initial
        self._last = now
        d = self._next
        self._next = min(self.cap, self._next * self.factor)
        if self.jitter > 0:
            d += self.rng.random() * self.jitter * d
        return d

    async def wait(self) -> None:
        await self.clock.sleep(self.next())


@dataclass(frozen=True, slots=True)
class Handlers(Generic[T]):
    on_add: Callable[[T], None] | None = None
    on_update: Callable[[T, T], None] | None = None
    on_delete: Callable[[T], None] | None = None


class _Meta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class _MetaOnly(msgspec.Struct):
    metadata: _Meta = msgspec.field(default_factory=_Meta)


class _WatchStatus(msgspec.Struct):
    code: int = 0
    reason: str = ""
    message: str = ""


def _meta_only(raw: bytes) -> _Meta | None:
    try:
        return msgspec.json.decode(raw, type=_MetaOnly).metadata
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _default_meta(obj: Any) -> ObjectMeta:
    meta: ObjectMeta = obj.metadata
    return meta


def object_key(namespace: str, name: str) -> str:
    """client-go's MetaNamespaceKeyFunc: ``ns/name``, or ``name`` for cluster-scoped."""
    return f"{namespace}/{name}" if namespace else name


class _WatchEnded(Exception):
    """Internal: the watch failed in a way that calls for a relist."""


class Informer(Generic[T]):
    """List+watch one collection into ``store`` (key → object) and notify handlers.

    ``decode`` turns raw object JSON into ``T``; it may raise ``InvalidObjectError`` or
    ``DecodeSkip`` for an object to be logged and skipped (the pod decoder instead
    returns a PodInfo carrying the error, so the scheduler reports it).

    ``missing_ok``: a collection the server does not serve (404 on the list: a CRD that is
    not installed) counts as empty and synced; the list is retried with backoff until the
    collection appears, and if it disappears later its objects are delivered as deletes.

    ``store``: the dict to fill (a ``RevisionedStore`` whose handlers bump it, say).
    """

    def __init__(
        self,
        client: APIClient,
        path: str,
        decode: Callable[[bytes], T],
        *,
        name: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        handlers: Iterable[Handlers[T]] = (),
        meta: Callable[[T], ObjectMeta] = _default_meta,
        min_watch_timeout: float = MIN_WATCH_TIMEOUT,
        backoff: Backoff | None = None,
        reconnect_backoff: Backoff | None = None,
        page_size: int = 500,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        missing_ok: bool = False,
        store: dict[str, T] | None = None,
    ) -> None:
        self.client = client
        self.path = path
        self.decode = decode
        self.name = name or path
        self.field_selector = field_selector
        self.label_selector = label_selector
        self.handlers: list[Handlers[T]] = list(handlers)
        self.meta = meta
        self.min_watch_timeout = min_watch_timeout
        self.clock: Clock = clock or RealClock()
        self.rng = rng or random.Random()
        self.backoff = backoff or Backoff(clock=self.clock, rng=self.rng)
        self.reconnect_backoff = reconnect_backoff or Backoff(
            RECONNECT_INITIAL, RECONNECT_CAP, clock=self.clock, rng=self.rng
        )
        self.page_size = page_size
        # client-go's paginatedResult: the first list (at "0") came in pages, so the
        # server has no watch cache for this collection and relists page too.
        self.paginated = False
        self.missing_ok = missing_ok
        self.not_served = False  # missing_ok: the last list answered 404
        self.store: dict[str, T] = store if store is not None else {}
        self.last_sync_resource_version = ""
        self._rv_unavailable = False
        self._listed_rv = ""  # the resourceVersion the last list returned
        # Since when (clock) the informer has had neither a working watch nor a fresh
        # list; None while it is in step with the server.
        self._lost_at: float | None = None
        self.has_synced = False
        self._synced: anyio.Event | None = None  # created on the loop, lazily
        # counters, for logs, metrics and tests
        self.lists = 0
        # Why the last list/watch failed, until one succeeds (for /readyz?verbose).
        self.last_error: str | None = None
        self.watches = 0
        self.consistent_lists = 0  # lists at resourceVersion "" after the first
        self.decode_errors = 0
        self.idle_reopens = 0  # watches reopened after a failed probe
        self._heard_at = 0.0  # (clock) the current watch's last sign of life
        self._open = False  # the current watch has been accepted
        self._reopen = False  # the watchdog ended the current watch

    # -- handlers -------------------------------------------------------------------------------

    def add_handlers(
        self,
        on_add: Callable[[T], None] | None = None,
        on_update: Callable[[T, T], None] | None = None,
        on_delete: Callable[[T], None] | None = None,
    ) -> None:
        """Register before ``run``; later handlers do not see the objects already listed."""
        self.handlers.append(Handlers(on_add, on_update, on_delete))

    def _notify_add(self, obj: T) -> None:
        for h in self.handlers:
            if h.on_add is not None:
                self._call(h.on_add, obj)

    def _notify_update(self, old: T, new: T) -> None:
        for h in self.handlers:
            if h.on_update is not None:
                self._call(h.on_update, old, new)

    def _notify_delete(self, obj: T) -> None:
        for h in self.handlers:
            if h.on_delete is not None:
                self._call(h.on_delete, obj)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        # A handler bug must not stop the informer (upstream handlers cannot fail either).
        try:
            fn(*args)
        except Exception:
            log.exception("informer handler failed", informer=self.name)

    # -- sync state -----------------------------------------------------------------------------

    def _synced_event(self) -> anyio.Event:
        if self._synced is None:
            self._synced = anyio.Event()
            if self.has_synced:
                self._synced.set()
        return self._synced

    async def wait_synced(self) -> None:
        if not self.has_synced:
            await self._synced_event().wait()

    def stale_for(self) -> float:
        """Seconds since the informer lost its watch without a new one or a relist (0
        while in step; the time since creation until the first list)."""
        lost = self._lost_at
        return 0.0 if lost is None else max(0.0, self.clock.now() - lost)

    def _lost(self) -> None:
        if self._lost_at is None:
            self._lost_at = self.clock.now()

    def _in_step(self) -> None:
        if self._lost_at is not None:
            self._server_back().back()
            if self.client.probe_failing:
                return  # only a probe that succeeds says the server serves again
        self._lost_at = None
        self.last_error = None

    def _opened(self) -> None:
        self._open = True
        self._heard_at = self.clock.now()
        self._in_step()

    def _server_back(self) -> _ServerBack:
        back = _SERVER_BACK.get(self.client)
        if back is None:
            back = _SERVER_BACK[self.client] = _ServerBack()
        return back

    async def _reconnect_wait(self) -> None:
        """The reconnect backoff, cut short when another informer got through."""
        delay = self.reconnect_backoff.next()
        back = self._server_back()
        async with anyio.create_task_group() as tg:

            async def sleep() -> None:
                await self.clock.sleep(delay)
                tg.cancel_scope.cancel()

            tg.start_soon(sleep)
            await back.wait()
            tg.cancel_scope.cancel()

    def __len__(self) -> int:
        return len(self.store)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self.store.values()))

    def get(self, key: str) -> T | None:
        return self.store.get(key)

    # -- decoding -------------------------------------------------------------------------------

    def _decode(self, raw: bytes) -> tuple[str, str, T | None]:
        """(key, resourceVersion, object-or-None-when-skipped)."""
        try:
            obj = self.decode(raw)
        except (InvalidObjectError, DecodeSkip) as e:
            self.decode_errors += 1
            m = _meta_only(raw)
            log.warning("skipping undecodable object", informer=self.name, error=str(e))
            if m is None:
                return "", "", None
            return object_key(m.namespace, m.name), m.resource_version, None
        meta = self.meta(obj)
        return object_key(meta.namespace, meta.name), meta.resource_version, obj

    def _params(self) -> dict[str, Any]:
        p: dict[str, Any] = {}
        if self.field_selector:
            p["fieldSelector"] = self.field_selector
        if self.label_selector:
            p["labelSelector"] = self.label_selector
        return p

    # -- reflector ------------------------------------------------------------------------------

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """ListAndWatch until cancelled (``wait.BackoffUntil`` around it, like client-go)."""
        task_status.started()
        if not self.has_synced:
            self._lost()
        while True:
            backoff = self.backoff
            try:
                await self._list_and_watch()
            except APIError as e:
                self._lost()
                if isinstance(e, APIConnectionError):
                    backoff = self.reconnect_backoff
                self.last_error = f"{self.path}: {e}"
                # one line per cause (every informer hits the same unreachable server)
                held = _THROTTLE.allow(f"{type(e).__name__} {str(e).replace(self.path, '')}")
                if held is not None:
                    log.warning(
                        "list/watch failed", informer=self.name, error=str(e), repeated=held
                    )
            except _WatchEnded as e:
                self._lost()
                log.info("relisting", informer=self.name, why=str(e))
            except Exception:
                self._lost()
                log.exception("list/watch failed unexpectedly", informer=self.name)
            if backoff is self.reconnect_backoff:
                await self._reconnect_wait()
            else:
                await backoff.wait()

    def _relist_resource_version(self) -> str:
        """client-go's relistResourceVersion: "0" (any cached state) on the first list, the
        last synced version afterwards, "" (a consistent read) once that has expired."""
        if self._rv_unavailable:
            return ""
        return self.last_sync_resource_version or "0"

    async def _list(self) -> None:
        asked = self._relist_resource_version()
        try:
            items, rv, paginated = await self._list_at(asked)
        except APIError as e:
            if not (e.is_expired or e.is_too_large_resource_version):
                raise
            # Retry at once with a consistent read: the version is gone or not yet known.
            log.info(
                "list at an unavailable resourceVersion; listing the latest",
                informer=self.name,
                resource_version=asked,
                error=str(e),
            )
            self._rv_unavailable = True
            asked = ""
            items, rv, paginated = await self._list_at(asked)
        if asked == "0" and paginated:
            self.paginated = True
        if asked == "" and self.lists:
            self.consistent_lists += 1
        self.lists += 1
        self._rv_unavailable = False
        self._replace(items)
        self.last_sync_resource_version = self._listed_rv = rv
        self._in_step()
        if not self.has_synced:
            self.has_synced = True
            self._synced_event().set()

    async def _list_at(self, resource_version: str) -> tuple[list[Any], str, bool]:
        """One list (the reflector's pager): paged only at "" or "0" or when the server
        paged the first list, so a relist at a version is served by the watch cache."""
        params = self._params()
        params["resourceVersion"] = resource_version
        paged = resource_version in ("", "0") or self.paginated
        return await self.client.list_paged(
            self.path, self._listed, params, page_size=self.page_size if paged else 0
        )

    def _listed(self, raw: msgspec.Raw) -> tuple[str, str, T | None, bool]:
        """A listed item decoded as its page arrives: (key, resourceVersion, object or None
        when skipped, unchanged since the store's version). Reads the store only: nothing
        changes it while listing."""
        m = _meta_only(raw)
        if m is not None:
            # unchanged since we last saw it: skip the full decode (relists of big clusters)
            k = object_key(m.namespace, m.name)
            known = self.store.get(k)
            if known is not None and self.meta(known).resource_version == m.resource_version:
                return k, m.resource_version, None, True
        return (*self._decode(raw), False)

    def _replace(self, items: list[tuple[str, str, T | None, bool]]) -> None:
        """DeltaFIFO.Replace: adds/updates in list order, then deletes for what vanished."""
        seen: set[str] = set()
        store = self.store
        for key, rv, obj, unchanged in items:
            if not key:
                continue
            seen.add(key)
            if unchanged or obj is None:
                continue  # unchanged, or undecodable now: keep what we had
            old = store.get(key)
            if old is None:
                store[key] = obj
                self._notify_add(obj)
            elif self.meta(old).resource_version != rv:
                store[key] = obj
                self._notify_update(old, obj)
        for key in [k for k in store if k not in seen]:
            gone = store.pop(key)
            self._notify_delete(gone)

    async def _list_until_served(self) -> None:
        """``_list``, but a 404 (missing_ok) empties the store, marks it synced and retries."""
        while True:
            try:
                await self._list()
            except APIError as e:
                if e.status != 404:
                    raise
            else:
                if self.not_served:
                    self.not_served = False
                    log.info("collection is served now", informer=self.name, path=self.path)
                return
            if not self.not_served:
                self.not_served = True
                log.warning(
                    "collection not served (CRD not installed?); using an empty store",
                    informer=self.name,
                    path=self.path,
                )
            self._replace([])
            self.last_sync_resource_version = ""
            self._in_step()  # not served is a state of the server, not a lost watch
            if not self.has_synced:
                self.has_synced = True
                self._synced_event().set()
            await self.backoff.wait()

    async def _list_and_watch(self) -> None:
        if self.missing_ok:
            await self._list_until_served()
        else:
            await self._list()
        while True:
            start = self.clock.now()
            timeout = int(self.min_watch_timeout * (self.rng.random() + 1.0))
            try:
                events = await self._watch_once(timeout)
            except APIConnectionError as e:
                # no stream at all (refused, reset): retry the watch, not the list
                self._lost()
                self.last_error = f"{self.path}: {e}"
                held = _THROTTLE.allow(f"watch {str(e).replace(self.path, '')}")
                if held is not None:
                    log.info(
                        "watch failed to open", informer=self.name, error=str(e), repeated=held
                    )
                await self._reconnect_wait()
                continue
            except APIError as e:
                if e.is_expired or e.is_too_large_resource_version:
                    if self.last_sync_resource_version == self._listed_rv:
                        # Expired at the version the last list returned: that list was
                        # stale (an exact read of old state), so the next one reads the
                        # latest instead of going round again.
                        self._rv_unavailable = True
                    raise _WatchEnded(f"watch expired: {e.message}") from None
                if e.status == 429:
                    self._lost()
                    await self.backoff.wait()
                    continue
                raise
            if events < 0:
                continue  # silent, and the server did not answer a probe: reopen
            if events == 0 and self.clock.now() - start < VERY_SHORT_WATCH:
                raise _WatchEnded("very short watch: closed in under a second with no events")

    async def _watch_once(self, timeout: int) -> int:
        """One watch request; returns how many events it delivered, or -1 when it was
        silent and ended because the server failed a probe."""
        self.watches += 1
        count = 0
        self._open = self._reopen = False
        self._heard_at = self.clock.now()
        stream = self.client.watch(
            self.path,
            self.last_sync_resource_version,
            timeout_seconds=timeout,
            allow_bookmarks=True,
            params=self._params(),
            on_open=self._opened,
        )
        failed: APIError | None = None
        async with anyio.create_task_group() as tg:
            if self.client.read_idle_timeout > 0:
                tg.start_soon(self._watchdog, tg.cancel_scope)
            try:
                async for type_, raw in stream:
                    count += 1
                    self._heard_at = self.clock.now()
                    self._handle_event(type_, raw)
            except APIConnectionError as e:
                if count == 0:
                    failed = e
                else:
                    # cut mid-stream (client-go: "probable EOF"): resume from the last version
                    self._lost()
                    log.info("watch connection dropped", informer=self.name, error=str(e))
            except APIError as e:
                failed = e  # raised out of the task group as itself, not in a group
            finally:
                with anyio.CancelScope(shield=True):
                    await stream.aclose()
                tg.cancel_scope.cancel()
        if failed is not None:
            raise failed
        return -1 if self._reopen else count

    async def _watchdog(self, watch: anyio.CancelScope) -> None:
        """Probe the server whenever the watch has been silent for the client's
        ``read_idle_timeout``; end the watch if it is still silent and the probe failed.
        While probes fail, probe every second (shared per client) to see the server back."""
        client = self.client
        while True:
            idle = client.read_idle_timeout
            retrying = client.probe_failing and self._lost_at is not None
            wait = min(1.0, idle) if retrying else self._heard_at + idle - self.clock.now()
            if wait > 0:
                await self.clock.sleep(wait)
                if not retrying and self.clock.now() - self._heard_at < idle:
                    continue
            why = await client.probe()
            now = self.clock.now()
            if why is None:
                self._heard_at = now
                if self._open:
                    self._in_step()
                continue
            self._lost()
            self.last_error = why
            if now - self._heard_at >= idle:
                held = _THROTTLE.allow("silent watch, failed probe")
                if held is not None:
                    log.warning(
                        "watch silent and the server failed a probe; reopening",
                        informer=self.name,
                        error=why,
                        repeated=held,
                    )
                self.idle_reopens += 1
                self._reopen = True
                watch.cancel()
                return

    def _handle_event(self, type_: str, raw: msgspec.Raw) -> None:
        if type_ == "ERROR":
            try:
                st = msgspec.json.decode(raw, type=_WatchStatus)
            except (msgspec.DecodeError, msgspec.ValidationError):
                st = _WatchStatus(500, "InternalError", bytes(raw).decode("utf-8", "replace"))
            raise APIError(
                st.code or 500, st.reason or "InternalError", st.message, body=bytes(raw)
            )
        if type_ == "BOOKMARK":
            m = _meta_only(raw)
            if m is not None and m.resource_version:
                self.last_sync_resource_version = m.resource_version
            return
        key, rv, obj = self._decode(raw)
        if type_ in ("ADDED", "MODIFIED"):
            if obj is not None and key:
                old = self.store.get(key)
                self.store[key] = obj
                if old is None:
                    self._notify_add(obj)
                else:
                    self._notify_update(old, obj)
        elif type_ == "DELETED":
            old = self.store.pop(key, None) if key else None
            if old is not None:
                self._notify_delete(obj if obj is not None else old)
        else:
            log.warning("unknown watch event type", informer=self.name, type=type_)
        if rv:
            self.last_sync_resource_version = rv


class InformerSet:
    """Several informers run in one task group; ``synced`` once all have listed."""

    def __init__(self, informers: Iterable[Informer[Any]] = ()) -> None:
        self.informers: list[Informer[Any]] = list(informers)

    def add(self, informer: Informer[T]) -> Informer[T]:
        self.informers.append(informer)
        return informer

    @property
    def synced(self) -> bool:
        return all(i.has_synced for i in self.informers)

    def unsynced(self) -> str:
        """The informers still to list ("" once all have), those failing alike grouped
        with the first one's last error: which server, which collection, what it said."""
        groups: dict[str, tuple[list[str], str]] = {}
        for i in self.informers:
            if i.has_synced:
                continue
            cause = (i.last_error or "").replace(i.path, "")
            names, _ = groups.setdefault(cause, ([], i.last_error or ""))
            names.append(i.name)
        return "; ".join(
            ", ".join(names) + (f" ({clip(error)})" if error else "")
            for names, error in groups.values()
        )

    def stale(self, bound: float) -> str:
        """The synced informers that have been out of step with the server (no watch, no
        relist) for more than ``bound`` seconds, with why ("" when none): their view may
        be missing what the server has since accepted."""
        late = [(i, i.stale_for()) for i in self.informers if i.has_synced]
        late = [(i, t) for i, t in late if t > bound]
        if not late:
            return ""
        worst = max(late, key=lambda it: it[1])
        names = ", ".join(i.name for i, _ in late)
        why = f" ({clip(worst[0].last_error)})" if worst[0].last_error else ""
        return f"{names} out of step for {worst[1]:.0f}s{why}"

    async def wait_synced(self) -> None:
        for i in self.informers:
            await i.wait_synced()

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Run all until cancelled; ``task_status.started()`` fires when all have synced."""
        async with anyio.create_task_group() as tg:
            for i in self.informers:
                tg.start_soon(i.run, name=f"informer {i.name}")
            await self.wait_synced()
            task_status.started()
