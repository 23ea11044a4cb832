"""``SchedulerDaemon``: the scheduler wired to a cluster, embeddable in any asyncio program.

    async with SchedulerDaemon(config, client=api_client, port=0) as d:
        await d.wait_ready()
        ...  # d.scheduler, d.url, d.metrics

HTTP (``http.DebugServer``): ``port`` serves plain HTTP without authentication on
``bind_address`` (loopback by default; None, the default, serves none),
``secure_serving`` HTTPS with authentication and authorization delegated to the API
server, as kube-scheduler's secure port (``ksched run`` serves it on 10259 by default).

Wiring: ``APIClient`` → informers (``connect_scheduler``; plus one per custom collection an
enabled plugin declares in ``watch_resources``, e.g. Coscheduling's PodGroups, into
``handle.listers``) → ``Scheduler`` with the
``APIClusterClient`` binder, the ``StatusReporter`` (events, PodScheduled condition) plus
logs and last-attempt records as observer, and ``SchedulerMetrics`` → the scheduling loop,
started only once every informer has listed (a scheduler on a partial view would
double-book nodes). Beside it: the queue's flushers, assumed-pod expiry, and the HTTP
server, which is up before the informers so ``/readyz`` can say 503 meanwhile.

Every background task lives in the daemon's task group. Shutdown (``stop()`` or leaving the
``async with``) stops taking pods, gives in-flight binding cycles ``shutdown_timeout``
seconds to finish, flushes queued events/status patches briefly, then cancels the rest.

Under systemd (``$NOTIFY_SOCKET``) the daemon reports READY=1 once the informers have
synced, STOPPING=1 when shutdown starts, and WATCHDOG=1 pings while the scheduling loop is
healthy (``sdnotify``).

The scheduling loop is ``scheduler.loop.run_loop`` with the daemon's policy (the real
clock; shadow mode decides only): bindings go to a task group that is drained, not
cancelled, when the loop stops.

With leader election (``leaderElection.leaderElect``, a ``coordination.k8s.io`` Lease; see
``ksched.cluster.leaderelection``) every instance keeps its informers and cache warm and
serves health, but only the leader runs the scheduling loop, as kube-scheduler: candidates
start electing once synced. A leader that cannot renew within renewDeadline is fenced at
once — the running scheduling cycle is cancelled, no new pod is popped, and bind, evict and
nomination writes are refused — while bindings already past that point get until the lease
could expire for the others; then the daemon stops (``leadership_lost``; ``ksched run``
exits 1 like kube-scheduler's "leaderelection lost"). On shutdown the lease is released
only after the in-flight bindings are done, so a standby takes over within a retry period.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import time
from collections.abc import Callable, Coroutine, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from .. import logging as klog
from ..api.workload import Condition, PodGroup
from ..cluster import APIClient, APIClusterClient, APIError, ClusterInformers, StatusReporter
from ..cluster import connect_scheduler as _connect
from ..cluster.leaderelection import (
    LeaderElector,
    LeaseLock,
    lease_lock_client,
    new_identity,
    resolve_lease_namespace,
)
from ..extender.server import is_loopback
from ..features import flagz_values
from ..framework.deadline import DEFAULT_BINDING_TIMEOUT, DEFAULT_PLUGIN_TIMEOUT
from ..framework.handle import BindError
from ..framework.registry import Registry
from ..framework.types import PodInfo
from ..metrics import SchedulerMetrics
from ..queue.scheduling_queue import Entity
from ..scheduler.cycle_result import CycleResult
from ..scheduler.loop import Decided, LoopMode, RealTime, run_loop
from ..scheduler.scheduler import Scheduler
from ..util.limits import clip
from .auth import DEFAULT_SECURE_PORT, REVIEW_BURST, REVIEW_QPS, DelegatingAuth, SecureServing
from .explain import Outcomes
from .http import DebugServer
from .sdnotify import SdNotifier
from .shadow import Shadow

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration

__all__ = ["DEFAULT_BIND_ADDRESS", "DEFAULT_PORT", "SchedulerDaemon", "SecureServing"]

DEFAULT_BIND_ADDRESS = "127.0.0.1"  # the plain-HTTP port's
DEFAULT_PORT = DEFAULT_SECURE_PORT  # kube-scheduler's secure port, 10259
DEFAULT_SHUTDOWN_TIMEOUT = 30.0
# How long shutdown waits for queued events and status patches once bindings are done.
STATUS_FLUSH_TIMEOUT = 5.0
# /readyz fails once an informer has been out of step with the API server (no watch, no
# relist), or the leader's bindings have failed for want of the server, this long.
DEFAULT_READINESS_BOUND = 5.0
# Unanswered bindings remembered at most (the oldest forgotten first).
MAX_UNANSWERED = 10_000

log = klog.get_logger("ksched.daemon")


class _DaemonObserver:
    """Observer fan-out: API status/events, last-attempt records, and the per-pod log line."""

    #: the reporter's failure patch carries a preemption's nominatedNodeName
    writes_nomination = True

    def __init__(self, reporter: StatusReporter, outcomes: Outcomes) -> None:
        self.reporter = reporter
        self.outcomes = outcomes

    def scheduled(self, pod: PodInfo, node: str, profile: str, attempts: int) -> None:
        self.reporter.scheduled(pod, node, profile, attempts)
        self.outcomes.scheduled(pod, node, attempts)
        if klog.enabled(2):
            log.info(
                "Successfully bound pod to node",
                pod=pod.key,
                node=node,
                profile=profile,
                attempts=attempts,
                v=2,
            )

    def failed(
        self, pod: PodInfo, profile: str, reason: str, message: str, result: CycleResult | None
    ) -> None:
        self.reporter.failed(pod, profile, reason, message, result)
        self.outcomes.failed(pod, reason, message, result)
        if reason == "SchedulerError":
            log.error(
                "Error scheduling pod; retrying",
                pod=pod.key,
                node=None,
                profile=profile,
                err=message,
            )
        elif klog.enabled(2):
            log.info(
                "Unable to schedule pod; waiting",
                pod=pod.key,
                node=None,
                profile=profile,
                err=message,
                v=2,
            )

    def pod_group_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        self.reporter.pod_group_condition(pod_group, condition)


class _FencedClusterClient(APIClusterClient):
    """The binder, refusing writes once leadership is lost: a binding cycle that started
    before the loss but reaches Bind after it must not race the new leader.

    ``may_write`` is the fence (``LeaderElector.may_write``); ``wait_writable`` holds a
    binding or eviction while a renewal confirms the lease after a pause, and the fence is
    checked again right before the request's bytes go out (``write_guard``), so a pause
    while it waited for a token or a connection lets nothing out either. Bindings that
    fail without an answer or with a server error are remembered for ``/readyz``.

    A binding that got no answer may have been applied (the server died after committing
    it): it is remembered (``unanswered``) and, when the pod informer shows the pod bound
    to that very node, reported as scheduled after all (``confirmed``) — else the pod
    would be bound without a Scheduled event, as kube-scheduler leaves it."""

    def __init__(
        self,
        client: APIClient,
        may_write: Callable[[], bool],
        wait_writable: Callable[[], Coroutine[Any, Any, bool]] | None = None,
    ) -> None:
        super().__init__(client)
        self.may_write = may_write
        self.wait_writable = wait_writable
        self.write_guard = self._guard
        self.fence = self._fence  # every write, the binding included
        # monotonic time of the first of the failing bindings since the last success
        self.failing_since: float | None = None
        self.last_failure = ""
        # uid (or key) -> node of bindings sent but never answered, oldest first
        self.unanswered: dict[str, str] = {}

    def _guard(self) -> None:
        if not self.may_write():
            raise _NotLeader("not the leader any more, or the lease is not confirmed")

    async def _fence(self, what: str) -> None:
        if not self.may_write() and (self.wait_writable is None or not await self.wait_writable()):
            raise _NotLeader(f"{what}: not the leader any more")

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        what = f"binding {pod.key} to {node_name}"
        try:
            await super().bind(pod, node_name)
        except _NotLeader as e:
            raise BindError(f"{what}: {e}", retry=True) from None
        except BindError as e:
            cause = e.__cause__
            if isinstance(cause, APIError) and (cause.status == 0 or cause.status >= 500):
                if self.failing_since is None:
                    self.failing_since = time.monotonic()
                self.last_failure = str(cause)
                if cause.status == 0:
                    self._remember(pod, node_name)
            raise
        self.failing_since = None
        self.unanswered.pop(pod.uid or pod.key, None)

    def _remember(self, pod: PodInfo, node: str) -> None:
        if len(self.unanswered) >= MAX_UNANSWERED:
            del self.unanswered[next(iter(self.unanswered))]
        self.unanswered[pod.uid or pod.key] = node

    def forget(self, pod: PodInfo) -> None:
        self.unanswered.pop(pod.uid or pod.key, None)

    def confirmed(self, pod: PodInfo) -> str | None:
        """The node an unanswered binding of ``pod`` named, if the pod is now bound there
        (forgotten either way once the pod is bound)."""
        if not self.unanswered or not pod.node_name:
            return None
        node = self.unanswered.pop(pod.uid or pod.key, None)
        return node if node == pod.node_name else None

    def failing_for(self) -> float:
        """Seconds since bindings started failing for want of the server (0 if not)."""
        since = self.failing_since
        return 0.0 if since is None else time.monotonic() - since


class _NotLeader(RuntimeError):
    pass


class _NoEvents:
    """The event recorder of a shadow, which records nothing."""

    def event(self, pod: PodInfo, type_: str, reason: str, action: str, note: str) -> None:
        return None


class _DaemonPolicy(RealTime):
    """The daemon's part in the loop: the real clock's, plus the watchdog's view of the
    running cycle, and shadow mode's decisions (deciding only, then comparing)."""

    def __init__(self, daemon: SchedulerDaemon) -> None:
        super().__init__(daemon.shutdown_timeout)
        self.daemon = daemon
        self.shadow = daemon.shadow
        if self.shadow is not None:
            self.mode = LoopMode.DECIDE

    async def next_entity(self, sched: Scheduler) -> Entity | None:
        entity = await sched.queue.pop()
        if entity is not None:
            self.daemon._cycle_started = time.monotonic()
        return entity

    async def after_decision(self, sched: Scheduler, entity: Entity, decided: Decided) -> None:
        self.daemon._cycle_started = None
        if self.shadow is not None:
            self.shadow.record(entity, decided)
        await asyncio.sleep(0)


class SchedulerDaemon:
    """One scheduler serving ``config``'s profiles against a cluster (see module doc)."""

    # Once the informers have synced, move everything alive to the garbage collector's
    # permanent generation (``gc.freeze``): the cluster state (nodes, pods, plugin
    # indexes) is long-lived, and a full collection scanning it every few thousand pods
    # costs more than the scheduling it interrupts. An embedding program that wants its
    # own GC policy sets this to False.
    freeze_gc_after_sync = True
    # With it, the youngest generation is collected every this many net container
    # allocations instead of Python's default 700. Nearly everything the scheduler
    # allocates per pod either dies by reference count within the pod's cycles or lives as
    # long as the pod (its decoded versions, cache and queue entries), so frequent young
    # collections find no garbage: they only re-traverse survivors, which cost ~10 % of the
    # daemon's CPU per pod. Restored when the daemon stops; None leaves it alone.
    gc_threshold_after_sync: int | None = 20_000

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        *,
        registry: Registry | None = None,
        client: APIClient | None = None,
        kubeconfig: str | None = None,
        master: str | None = None,
        bind_address: str = DEFAULT_BIND_ADDRESS,
        port: int | None = None,
        secure_serving: SecureServing | None = None,
        metrics: SchedulerMetrics | None = None,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
        explain: bool = False,
        seed: int | None = None,
        max_in_flight_bindings: int = 64,
        on_informers: Callable[[ClusterInformers], None] | None = None,
        notifier: SdNotifier | None = None,
        leader_elect: bool | None = None,
        identity: str | None = None,
        plugin_timeout: float | None = DEFAULT_PLUGIN_TIMEOUT,
        binding_timeout: float | None = DEFAULT_BINDING_TIMEOUT,
        shadow_of: str | None = None,
        readiness_bound: float = DEFAULT_READINESS_BOUND,
        flags: Mapping[str, str] | None = None,
    ) -> None:
        """``client`` (owned by the caller) or ``kubeconfig``/``master`` (a client is made and
        closed by the daemon). ``port``: plain HTTP on ``bind_address`` (0 picks a free
        port, None serves none); ``secure_serving``: HTTPS with delegated authentication and
        authorization (its ``port`` 0 picks a free one); ``explain=True`` records every
        attempt's full explanation (slow: for debugging only). ``on_informers`` may add
        handlers to the informers before they start (benchmarks, embedding programs).
        ``notifier`` tells systemd about readiness, shutdown and liveness (default: from
        ``$NOTIFY_SOCKET``/``$WATCHDOG_USEC``, a no-op when unset; see ``sdnotify``).
        ``leader_elect`` overrides ``config.leader_election.leader_elect``; ``identity`` the
        Lease holder identity (default ``hostname_uuid``). ``plugin_timeout`` bounds a
        cycle's synchronous plugin code, ``binding_timeout`` PreBind+Bind and PostBind
        (seconds; None or 0 for no bound): a plugin that hangs fails that pod's attempt.
        ``shadow_of``: shadow mode (``shadow``): decide for that scheduler's pods with the
        first profile and compare, writing nothing to the cluster (no leader election).
        ``readiness_bound``: seconds an informer may be out of step with the API server, or
        the leader's bindings fail for want of it, before ``/readyz`` fails.
        ``flags``: the command line's flags by name, for ``/flagz`` (default: the feature
        gate flags the config's gates stand for)."""
        if registry is None:
            from ..plugins import default_registry

            registry = default_registry()
        self.config = config
        self.registry = registry
        self._client = client
        self._own_client = client is None
        self.kubeconfig = kubeconfig
        self.master = master
        self.bind_address = bind_address
        self.plugin_timeout = plugin_timeout
        self.binding_timeout = binding_timeout
        self.port = port
        self.secure_serving = secure_serving
        self.metrics = (
            metrics if metrics is not None else SchedulerMetrics(features=config.features)
        )
        self.shutdown_timeout = shutdown_timeout
        self.explain = explain
        self.seed = seed
        self.max_in_flight_bindings = max_in_flight_bindings
        self.on_informers = on_informers
        self.notifier = notifier if notifier is not None else SdNotifier.from_env()
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
        self._froze_gc = False
        self._gc_threshold: tuple[int, ...] | None = None  # to restore on stop
        self._cycle_started: float | None = None  # monotonic start of the running cycle
        self.shadow_of = shadow_of
        self.readiness_bound = readiness_bound
        self._binder: _FencedClusterClient | None = None
        explicit = config.features.flag_value()
        self.flags: dict[str, str] = dict(flags or {}) or flagz_values(
            [explicit] if explicit else [], []
        )
        self.shadow: Shadow | None = None
        self.leader_elect = (
            config.leader_election.leader_elect if leader_elect is None else leader_elect
        ) and shadow_of is None
        self.identity = identity
        self.elector: LeaderElector | None = None
        self._leading = anyio.Event()
        self._lost = anyio.Event()
        self._elect_done = anyio.Event()
        self._elect_started = False
        self._elect_sync_scope: anyio.CancelScope | None = None

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

    def client_settings(self) -> dict[str, Any] | None:
        """The API client's effective settings (``/configz``), once there is a client."""
        return None if self._client is None else self._client.connection_settings()

    @property
    def url(self) -> str:
        """Base URL of the health/metrics/debug server: the plain port's, else the secure
        port's."""
        if self.http is None:
            raise RuntimeError("the daemon has not been started or serves no HTTP")
        return self.http.url

    @property
    def secure_url(self) -> str:
        """Base URL of the secure port (HTTPS)."""
        if self.http is None or self.http.secure is None:
            raise RuntimeError("the daemon has not been started or serves no secure port")
        return self.http.secure_url

    @property
    def synced(self) -> bool:
        return self.informers is not None and self.informers.synced

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def leading(self) -> bool:
        """Scheduling is allowed: leader election is off, or this daemon holds the lease."""
        return self.elector is None or self.elector.leading

    @property
    def leadership_lost(self) -> bool:
        """The lease could not be renewed: the daemon stopped scheduling for good."""
        return self._lost.is_set()

    def may_write(self) -> bool:
        """The fence on bindings and evictions: no leader election, or the lease is held
        and confirmed (``LeaderElector.may_write``); never for a shadow, as if it had lost
        a lease it never held."""
        if self.shadow_of is not None:
            return False
        return self.elector is None or self.elector.may_write()

    def _bound_unanswered(self, pod: PodInfo) -> None:
        """A binding the server applied but never answered: report it now."""
        b = self._binder
        node = None if b is None else b.confirmed(pod)
        if node is not None and self._sched is not None:
            log.info("an unanswered binding was applied", pod=pod.key, node=node)
            self._sched.observer.scheduled(pod, node, pod.pod.spec.scheduler_name, 1)

    async def _wait_writable(self) -> bool:
        if self.elector is None or self.shadow_of is not None:
            return self.may_write()
        return await self.elector.wait_writable(self.elector.lease_duration)

    async def wait_leading(self, timeout: float | None = None) -> None:
        with anyio.fail_after(timeout):
            await self._leading.wait()

    async def wait_leadership_lost(self) -> None:
        await self._lost.wait()

    def _election_checks(self) -> list[tuple[str, str | None]]:
        """client-go's HealthzAdaptor: kube-scheduler has it on /healthz and /readyz; here
        /livez shares /healthz's checks, so it has it too."""
        return [] if self.elector is None else [("leaderElection", self.elector.check())]

    def liveness_checks(self) -> list[tuple[str, str | None]]:
        loop = "scheduling loop exited" if self._loop_done.is_set() and not self._stopping else None
        return [("ping", None), ("scheduler", loop), *self._election_checks()]

    def readiness_checks(self) -> list[tuple[str, str | None]]:
        election = [] if self.elector is None else [("leaderElection", self._election_ready())]
        return [
            ("ping", None),
            ("informer-sync", self._not_synced()),
            ("binding", self._cannot_bind()),
            ("shutdown", "shutting down" if self._stopping else None),
            *election,
        ]

    def _not_synced(self) -> str | None:
        """Not yet listed, or out of step with the API server for longer than the bound
        (watches down, relists failing): what it schedules from may be missing pods,
        nodes or bindings the server has since accepted."""
        if self.informers is None:
            return "informers have not synced yet"
        if not self.informers.synced:
            waiting = self.informers.unsynced()
            return "informers have not synced yet" + (f": {waiting}" if waiting else "")
        stale = self.informers.stale(self.readiness_bound)
        return f"informers out of step with the API server: {stale}" if stale else None

    def _cannot_bind(self) -> str | None:
        """The instance that should schedule cannot: its lease is not confirmed (fenced
        after a pause), or its bindings have failed for want of the server for longer
        than the bound. A standby is not expected to bind."""
        if self.shadow_of is not None or not self.leading or not self._ready.is_set():
            return None
        if self.elector is not None and (fenced := self.elector.fence_check()) is not None:
            return fenced
        b = self._binder
        if b is not None and b.failing_for() > self.readiness_bound:
            return f"bindings failing for {b.failing_for():.0f}s: {clip(b.last_failure)}"
        return None

    def _election_ready(self) -> str | None:
        """Liveness's check, plus: a candidate the API server will not let near its Lease
        (a namespace the stock role cannot reach, say) can never lead, so is not ready."""
        assert self.elector is not None
        return self.elector.check() or self.elector.access_check()

    def loop_healthy(self) -> bool:
        """For the systemd watchdog: the scheduling loop is waiting (for the sync, for pods)
        or its current cycle started less than a watchdog interval ago, and it has not
        exited on its own."""
        if self._loop_done.is_set() and not self._stopping:
            return False
        started, limit = self._cycle_started, self.notifier.watchdog_interval
        return started is None or limit is None or time.monotonic() - started < limit

    async def _notify_ready(self) -> None:
        """READY=1 once synced (a standby too: it is up, waiting for the lease), or at once
        for a candidate that syncs only after winning (delayCacheUntilActive); STATUS= says
        which, and changes when this instance starts leading."""
        assert self.informers is not None
        profiles = ", ".join(sorted(self.scheduler.frameworks))
        if self.elector is None:
            await self.informers.wait_synced()
            if not self._stopping:
                self.notifier.ready(f"Informers synced; scheduling for {profiles}")
            return
        if not self.config.delay_cache_until_active:
            await self.informers.wait_synced()
        if self._stopping:
            return
        self.notifier.ready(f"Waiting for the lease {self.elector.lock.describe()}")
        await self._leading.wait()
        if not self._stopping:
            self.notifier.status(f"Leading; scheduling for {profiles}")

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
        if self.leader_elect:
            le = cfg.leader_election
            lock_client = await lease_lock_client(client, le.renew_deadline)
            stack.push_async_callback(lock_client.close)
            lock = LeaseLock(
                lock_client,
                resolve_lease_namespace(le.resource_namespace),
                le.resource_name,
                self.identity or new_identity(),
            )
            self.elector = LeaderElector(
                lock,
                lease_duration=le.lease_duration,
                renew_deadline=le.renew_deadline,
                retry_period=le.retry_period,
                name=le.resource_name,
                metrics=self.metrics,
                event_component=profiles[0] if profiles else None,
            )
        if self.shadow_of is None:
            self.reporter = StatusReporter(client, controller=_controller(profiles))
        self._binder = binder = _FencedClusterClient(client, self.may_write, self._wait_writable)
        binder.retry_bind = cfg.features.at_least("1.37")
        shadowing = self.shadow_of is not None
        sched = Scheduler(
            cfg,
            self.registry,
            cluster=binder,
            observer=None
            if self.reporter is None
            else _DaemonObserver(self.reporter, self.outcomes),
            recorder=self.reporter or _NoEvents(),
            seed=self.seed,
            explain=self.explain,
            max_in_flight_bindings=self.max_in_flight_bindings,
            plugin_timeout=self.plugin_timeout,
            binding_timeout=self.binding_timeout,
            metrics=self.metrics,
            adopt={self.shadow_of: profiles[0]} if self.shadow_of is not None else None,
            before_pod_update=self._before_pod_update if shadowing else None,
        )
        self._sched = sched
        if self.reporter is not None:
            # bindings first: Events wait while bindings are in flight (StatusReporter)
            self.reporter.defer_to = lambda: sched.in_flight_bindings > 0
            self.metrics.attach_recorder(self.reporter)
        if self.shadow_of is not None:
            self.shadow = Shadow(
                sched, self.metrics.registry, shadowed=self.shadow_of, profile=profiles[0]
            )
            log.info("shadow mode: deciding, writing nothing", shadow_of=self.shadow_of)
        self.informers = _connect(sched, client)
        if self.reporter is not None:
            self.informers.pods.add_handlers(
                on_add=self._bound_unanswered,
                on_update=lambda _, new: self._bound_unanswered(new),
                on_delete=binder.forget,
            )
        if self.on_informers is not None:
            self.on_informers(self.informers)
        if self.port is not None or self.secure_serving is not None:
            await self._serve_http(stack, client)
        tg = await stack.enter_async_context(anyio.create_task_group())
        self._tg = tg
        if self.reporter is not None:
            await tg.start(self.reporter.run)
        if self.elector is None or not cfg.delay_cache_until_active:
            tg.start_soon(self.informers.run, name="informers")
        if self.elector is not None:
            tg.start_soon(self._elect, name="leader election")
        tg.start_soon(self._schedule, name="scheduling loop")
        if self.notifier.enabled:
            tg.start_soon(self._notify_ready, name="sd_notify READY")
            tg.start_soon(self.notifier.run_watchdog, self.loop_healthy, name="sd_notify watchdog")

    async def _serve_http(self, stack: contextlib.AsyncExitStack, client: APIClient) -> None:
        auth = None
        if self.secure_serving is not None:
            # the reviews go through a client of their own (kube's limits for it), so
            # requests with made-up tokens cannot spend the scheduler's budget
            reviews = APIClient(
                client.configuration,
                qps=REVIEW_QPS,
                burst=REVIEW_BURST,
                user_agent=f"{client.user_agent} (delegated auth)",
            )
            stack.push_async_callback(reviews.close)
            auth = DelegatingAuth(reviews, self.secure_serving)
        http = DebugServer(
            self, self.bind_address, self.port, secure=self.secure_serving, auth=auth
        )
        await http.start()
        self.http = http
        stack.push_async_callback(http.stop)
        if self.port is not None and not is_loopback(self.bind_address):
            log.warning(
                "the plain-HTTP port serves /metrics, /configz and /debug/* without "
                "authentication beyond loopback",
                url=http.url,
            )
        log.info("serving health, metrics and debug endpoints", url=http.url, urls=http.urls)

    async def _elect(self) -> None:
        """Candidates elect once synced (kube-scheduler: unless delayCacheUntilActive)."""
        assert self.elector is not None and self.informers is not None
        self._elect_started = True
        try:
            if not self.config.delay_cache_until_active:
                with anyio.CancelScope() as scope:
                    self._elect_sync_scope = scope
                    await self.informers.wait_synced()
                if scope.cancelled_caught:
                    return
            await self.elector.run(self._leading.set, self._stopped_leading)
        finally:
            self._elect_done.set()

    def _stopped_leading(self) -> None:
        """Fence now: cancel the running cycle, pop nothing more, and let bindings already
        started run only until the lease could expire for the others."""
        self._lost.set()
        if self._sched is not None:
            expiry = None
            if self.elector is not None:
                expiry = anyio.current_time() + self.elector.lease_remaining()
            self._sched.fence(expiry)
        if self._loop_scope is not None and not self._ready.is_set():
            self._loop_scope.cancel()

    def _before_pod_update(self, old: PodInfo, new: PodInfo) -> None:
        if self.shadow is not None:
            self.shadow.observe(old, new)

    async def _stop_electing(self) -> None:
        """Stop renewing, then release the lease — only now, with no binding in flight, may
        a standby take over (client-go's ReleaseOnCancel, after the guarded work)."""
        elector = self.elector
        assert elector is not None
        elector.stop()
        if self._elect_sync_scope is not None:
            self._elect_sync_scope.cancel()
        if self._elect_started:
            with anyio.move_on_after(elector.request_timeout + 1.0):
                await self._elect_done.wait()
        await elector.release()

    async def _schedule(self) -> None:
        sched = self.scheduler
        assert self.informers is not None
        with anyio.CancelScope() as scope:
            self._loop_scope = scope
            if self._stopping or self._lost.is_set():
                scope.cancel()
            if self.elector is not None:
                await self._leading.wait()
                if self.config.delay_cache_until_active:
                    log.info("starting informers now that this instance leads")
                    assert self._tg is not None
                    self._tg.start_soon(self.informers.run, name="informers")
            await self.informers.wait_synced()
            log.info(
                "informers synced, scheduling",
                profiles=sorted(sched.frameworks),
                nodes=sched.cache.node_count(),
                pending=sum(sched.queue.pending_counts().values()),
            )
            if self.freeze_gc_after_sync:
                _freeze_heap()
                self._froze_gc = True
                if self.gc_threshold_after_sync is not None:
                    self._gc_threshold = _raise_gc_threshold(self.gc_threshold_after_sync)
            try:
                await run_loop(sched, _DaemonPolicy(self), on_started=self._ready.set)
            finally:
                self._cycle_started = None
        self._loop_done.set()

    def stop(self) -> None:
        """Stop taking pods; ``aclose`` (or leaving ``async with``) finishes the shutdown."""
        if self._stopping:
            return
        self._stopping = True
        self.notifier.stopping("Shutting down: finishing in-flight bindings")
        if self._sched is not None:
            self._sched.stop()
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
                if self.elector is not None:
                    await self._stop_electing()
                if self.reporter is not None and exc_type is None:
                    with contextlib.suppress(TimeoutError):
                        await self.reporter.drain(STATUS_FLUSH_TIMEOUT)
                if self._tg is not None:
                    self._tg.cancel_scope.cancel()
        finally:
            # The caller's own exception (if any) propagates from its ``async with``; only
            # failures of the daemon's tasks are raised here.
            await stack.__aexit__(None, None, None)
            self.notifier.close()
            if self._froze_gc:
                gc.unfreeze()  # what this daemon held may be collected again
            if self._gc_threshold is not None:
                gc.set_threshold(*self._gc_threshold)
                self._gc_threshold = None
            log.info("scheduler stopped")


def _freeze_heap() -> None:
    gc.collect()
    gc.freeze()


def _raise_gc_threshold(young: int) -> tuple[int, ...]:
    """Collect the youngest generation at most every ``young`` allocations (never more
    often than now); returns the thresholds to restore."""
    before = gc.get_threshold()
    if before[0] and before[0] < young:
        gc.set_threshold(young, *before[1:])
    return before


def _controller(profiles: list[str]) -> str:
    """reportingController of events: upstream records per profile (its schedulerName);
    one reporter serves all profiles here, so several profiles report as ``ksched``."""
    return profiles[0] if len(profiles) == 1 else "ksched"
