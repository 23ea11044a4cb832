"""``SchedulerDaemon``: the scheduler wired to a cluster, embeddable in any asyncio program.

    async with SchedulerDaemon(config, client=api_client, port=0) as d:
        await d.wait_ready()
        ...  # d.scheduler, d.url, d.metrics

Wiring: ``APIClient`` → informers (``connect_scheduler``) → ``Scheduler`` with the
``APIClusterClient`` binder, the ``StatusReporter`` (events, PodScheduled condition) plus
logs and last-attempt records as observer, and ``SchedulerMetrics`` → the scheduling loop,
started only once every informer has listed (a scheduler on a partial view would
double-book nodes). Beside it: the queue's flushers, assumed-pod expiry, and the HTTP
server, which is up before the informers so ``/readyz`` can say 503 meanwhile.

Every background task lives in the daemon's task group. Shutdown (``stop()`` or leaving the
``async with``) stops taking pods, gives in-flight binding cycles ``shutdown_timeout``
seconds to finish, flushes queued events/status patches briefly, then cancels the rest.

The scheduling loop is the daemon's own rather than ``Scheduler.run()``: the same
pop → ``schedule_one`` steps, but bindings go to a task group that is drained, not
cancelled, when the loop stops.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from .. import logging as klog
from ..cluster import APIClient, APIClusterClient, ClusterInformers, StatusReporter
from ..cluster import connect_scheduler as _connect
from ..framework.registry import Registry
from ..framework.types import PodInfo
from ..metrics import SchedulerMetrics
from ..scheduler.schedule_one import CycleResult
from ..scheduler.scheduler import Scheduler
from .explain import Outcomes
from .http import DebugServer

__all__ = ["DEFAULT_BIND_ADDRESS", "DEFAULT_PORT", "SchedulerDaemon"]

DEFAULT_BIND_ADDRESS = "127.0.0.1"
DEFAULT_PORT = 10259  # kube-scheduler's secure port; served as plain HTTP here
DEFAULT_SHUTDOWN_TIMEOUT = 30.0
# How long shutdown waits for queued events and status patches once bindings are done.
STATUS_FLUSH_TIMEOUT = 5.0

log = klog.get_logger("ksched.daemon")


class _DaemonObserver:
    """Observer fan-out: API status/events, last-attempt records, and the per-pod log line."""

    def __init__(self, reporter: StatusReporter, outcomes: Outcomes) -> None:
        self.reporter = reporter
        self.outcomes = outcomes

    def scheduled(self, pod: PodInfo, node: str, profile: str, attempts: int) -> None:
        self.reporter.scheduled(pod, node, profile, attempts)
        self.outcomes.scheduled(pod, node, attempts)
        if klog.enabled(2):
            log.info("Successfully bound pod to node", pod=pod.key, node=node, profile=profile,
                     attempts=attempts, v=2)

    def failed(
        self, pod: PodInfo, profile: str, reason: str, message: str, result: CycleResult | None
    ) -> None:
        self.reporter.failed(pod, profile, reason, message, result)
        self.outcomes.failed(pod, reason, message, result)
        if reason == "SchedulerError":
            log.error("Error scheduling pod; retrying", pod=pod.key, node=None, profile=profile,
                      err=message)
        elif klog.enabled(2):
            log.info("Unable to schedule pod; waiting", pod=pod.key, node=None, profile=profile,
                     err=message, v=2)


class SchedulerDaemon:
    """One scheduler serving ``config``'s profiles against a cluster (see module doc)."""

    def __init__(
        self,
        config: Any,
        *,
        registry: Registry | None = None,
        client: APIClient | None = None,
        kubeconfig: str | None = None,
        master: str | None = None,
        bind_address: str = DEFAULT_BIND_ADDRESS,
        port: int = DEFAULT_PORT,
        metrics: SchedulerMetrics | None = None,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        explain: bool = False,
        seed: int | None = None,
        max_in_flight_bindings: int = 64,
        on_informers: Callable[[ClusterInformers], None] | None = None,
    ) -> None:
        """``client`` (owned by the caller) or ``kubeconfig``/``master`` (a client is made and
        closed by the daemon). ``port=0`` picks a free port; ``explain=True`` records every
        attempt's full explanation (slow: for debugging only). ``on_informers`` may add
        handlers to the informers before they start (benchmarks, embedding programs)."""
        if registry is None:
            from ..framework.registry import default_registry

            registry = default_registry()
        self.config = config
        self.registry = registry
        self._client = client
        self._own_client = client is None
        self.kubeconfig = kubeconfig
        self.master = master
        self.bind_address = bind_address
        self.port = port
        self.metrics = metrics if metrics is not None else SchedulerMetrics()
        self.shutdown_timeout = shutdown_timeout
        self.explain = explain
        self.seed = seed
        self.max_in_flight_bindings = max_in_flight_bindings
        self.on_informers = on_informers
        self.outcomes = Outcomes()
        self._sched: Scheduler | None = None
        self.reporter: StatusReporter | None = None
        self.informers: ClusterInformers | None = None
        self.http: DebugServer | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._ready = anyio.Event()
        self._loop_done = anyio.Event()
        self._stopping = False
        self._loop_scope: anyio.CancelScope | None = None
        self._stopped = False

    # -- properties ---------------------------------------------------------------------------
    @property
    def scheduler(self) -> Scheduler:
        if self._sched is None:
            raise RuntimeError("the daemon has not been started")
        return self._sched

    @property
    def scheduler_if_started(self) -> Scheduler | None:
        return self._sched

    @property
    def client(self) -> APIClient:
        if self._client is None:
            raise RuntimeError("the daemon has not been started")
        return self._client

    @property
    def url(self) -> str:
        """Base URL of the health/metrics/debug server."""
        if self.http is None:
            raise RuntimeError("the daemon has not been started")
        return self.http.url

    @property
    def synced(self) -> bool:
        return self.informers is not None and self.informers.synced

    @property
    def stopping(self) -> bool:
        return self._stopping

    def liveness_checks(self) -> list[tuple[str, str | None]]:
        loop = "scheduling loop exited" if self._loop_done.is_set() and not self._stopping else None
        return [("ping", None), ("scheduler", loop)]

    def readiness_checks(self) -> list[tuple[str, str | None]]:
        return [
            ("ping", None),
            ("informer-sync", None if self.synced else "informers have not synced yet"),
            ("shutdown", "shutting down" if self._stopping else None),
        ]

    async def wait_ready(self, timeout: float | None = None) -> None:
        """Until the informers have synced and the scheduling loop runs."""
        with anyio.fail_after(timeout):
            await self._ready.wait()

    # -- lifecycle ----------------------------------------------------------------------------
    async def __aenter__(self) -> SchedulerDaemon:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose(exc_type, exc, tb)

    async def start(self) -> None:
        """Build everything and start the background tasks (returns before the sync)."""
        if self._stack is not None:
            raise RuntimeError("the daemon is already started")
        stack = contextlib.AsyncExitStack()
        await stack.__aenter__()
        self._stack = stack
        try:
            await self._start(stack)
        except BaseException as e:
            self._stack = None
            await stack.__aexit__(type(e), e, e.__traceback__)
            raise

    async def _start(self, stack: contextlib.AsyncExitStack) -> None:
        cfg = self.config
        if self._client is None:
            cc = cfg.client_connection
            self._client = await APIClient.auto(
                self.kubeconfig or cc.kubeconfig or None, self.master, qps=cc.qps, burst=cc.burst
            )
            stack.push_async_callback(self._client.close)
        client = self._client
        profiles = [p.scheduler_name for p in cfg.profiles]
        self.reporter = StatusReporter(client, controller=_controller(profiles))
        sched = Scheduler(
            cfg, self.registry, cluster=APIClusterClient(client),
            observer=_DaemonObserver(self.reporter, self.outcomes), recorder=self.reporter,
            seed=self.seed, explain=self.explain,
            max_in_flight_bindings=self.max_in_flight_bindings,
        )
        self._sched = sched
        self.metrics.attach(sched)
        self.informers = _connect(sched, client)
        if self.on_informers is not None:
            self.on_informers(self.informers)
        self.http = DebugServer(self, self.bind_address, self.port)
        await self.http.start()
        stack.push_async_callback(self.http.stop)
        log.info("serving health, metrics and debug endpoints", url=self.http.url)
        tg = await stack.enter_async_context(anyio.create_task_group())
        self._tg = tg
        await tg.start(self.reporter.run)
        tg.start_soon(self.informers.run, name="informers")
        tg.start_soon(self._schedule, name="scheduling loop")

    async def _schedule(self) -> None:
        sched = self.scheduler
        assert self.informers is not None
        with anyio.CancelScope() as scope:
            self._loop_scope = scope
            if self._stopping:
                scope.cancel()
            await self.informers.wait_synced()
            log.info("informers synced, scheduling", profiles=sorted(sched.frameworks),
                     nodes=sched.cache.node_count(),
                     pending=sum(sched.queue.pending_counts().values()))
            async with anyio.create_task_group() as aux:
                aux.start_soon(sched.queue.run_flushers, name="queue flushers")
                aux.start_soon(sched.cache.run_cleanup, name="assumed pod expiry")
                async with anyio.create_task_group() as bindings:
                    sched._tg = bindings  # preemption tasks drain with the bindings
                    self._ready.set()
                    # Shutdown cancels only this scope: an idle pop, never a cycle or binding.
                    while not self._stopping:
                        qpi = await sched.queue.pop()
                        if qpi is None:
                            break
                        await sched.schedule_one(qpi, bindings)
                        await anyio.lowlevel.checkpoint()
                    n = sched.in_flight_bindings
                    if n:
                        log.info("waiting for in-flight bindings", bindings=n,
                                 timeout=self.shutdown_timeout)
                    bindings.cancel_scope.deadline = anyio.current_time() + self.shutdown_timeout
                sched._tg = None
                aux.cancel_scope.cancel()
        self._loop_done.set()

    def stop(self) -> None:
        """Stop taking pods; ``aclose`` (or leaving ``async with``) finishes the shutdown."""
        if self._stopping:
            return
        self._stopping = True
        if self._sched is not None:
            self._sched.stopping = True
            self._sched.queue.close()
        if self._loop_scope is not None and not self._ready.is_set():
            self._loop_scope.cancel()  # still waiting for the sync: nothing in flight

    async def aclose(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        """Graceful shutdown: in-flight bindings get ``shutdown_timeout``, then stop all."""
        stack, self._stack = self._stack, None
        if stack is None:
            return
        self.stop()
        try:
            with anyio.CancelScope(shield=True):
                if self._loop_scope is not None or self._ready.is_set():
                    with anyio.move_on_after(self.shutdown_timeout + 1.0):
                        await self._loop_done.wait()
                if self.reporter is not None and exc_type is None:
                    with contextlib.suppress(TimeoutError):
                        await self.reporter.drain(STATUS_FLUSH_TIMEOUT)
                if self._tg is not None:
                    self._tg.cancel_scope.cancel()
        finally:
            # The caller's own exception (if any) propagates from its ``async with``; only
            # failures of the daemon's tasks are raised here.
            await stack.__aexit__(None, None, None)
            log.info("scheduler stopped")


def _controller(profiles: list[str]) -> str:
    """reportingController of events: upstream records per profile (its schedulerName);
    one reporter serves all profiles here, so several profiles report as ``ksched``."""
    return profiles[0] if len(profiles) == 1 else "ksched"
