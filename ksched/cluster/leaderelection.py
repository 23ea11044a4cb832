"""Leader election over a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection``.

Why not kubernetes_asyncio's elector: it keeps no ``leaseTransitions``, cannot release the
lease (its lock asserts a non-empty holder), measures expiry with the wall clock (a clock
step can end a lease early) and writes naive local times rather than MicroTime; nor does
it fence or expose a health check. This module follows client-go (``leaderelection.go``,
``resourcelock/leaselock.go``, ``healthzadaptor.go``) instead:

* Expiry is judged with the *local* clock only: a candidate remembers when it last saw the
  record change (``observed_time``) and may take the lease once ``observed_time +
  leaseDurationSeconds`` has passed without a change, or at once when the holder is empty
  (released) or is itself. Remote timestamps are written for humans, never trusted.
* Writes are optimistic: an update carries the ``resourceVersion`` last read, so of two
  candidates racing for an expired lease exactly one wins and the other gets a 409.
* Every change of holder increments ``leaseTransitions``; renewals keep it and
  ``acquireTime``.
* The leader renews every ``retry_period``; a renewal round that cannot succeed within
  ``renew_deadline`` ends the leadership (``renew`` returns) — before the lease can expire for
  anyone else, provided ``retry_period + renew_deadline < lease_duration``.
* ``release`` clears ``holderIdentity`` (keeping ``leaseTransitions``, with
  ``leaseDurationSeconds=1``) so a standby takes over within one retry period.

Fencing, beyond client-go: ``may_write`` is true only while the last successful lease
write began less than ``renew_deadline`` ago by the monotonic clock. A process that did not
run for longer (SIGSTOP, a paused VM, a long GC or event-loop stall) sees that clock jump
and writes nothing until a renewal confirms the lease — a write conditional on the
Lease's resourceVersion, or a re-read showing it still ours with the same
``leaseTransitions``. Others may take the lease only ``lease_duration`` after observing our
last write, which began before it, so no guarded write is *sent* after the lease could
have passed to someone else (a request already on the wire may still land). kube-scheduler
keeps binding after such a pause until its renew loop notices.

Differences from client-go, all deliberate: remote records are compared with microsecond
``renewTime`` (client-go's raw record has second precision, which only delays noticing a
renewal); ``run`` calls ``on_stopped_leading`` only after a lost lease, not when cancelled;
the lease is released by an explicit ``release()`` so its owner can first drain the
work the lease guards (client-go's ``ReleaseOnCancel`` releases at once); a leader that
finds someone else's write on the Lease has lost it, even when the lease is free again
(client-go would take it back as a new transition); and a renew round that overran its
deadline because the process did not run gets one more attempt (the re-read above)
instead of ending the leadership outright.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

import anyio
import anyio.abc
import msgspec
import structlog

from ..util.clock import Clock, RealClock, rfc3339
from ..util.throttle import LogThrottle
from .client import APIClient, APIError, hostname
from .status import micro_time

__all__ = [
    "DEFAULT_LEASE_NAMESPACE",
    "HEALTHZ_TIMEOUT",
    "JITTER_FACTOR",
    "SA_NAMESPACE_FILE",
    "LeaderElectionRecord",
    "LeaderElector",
    "LeaderMetrics",
    "LeaseLock",
    "check_timings",
    "lease_lock_client",
    "new_identity",
    "resolve_lease_namespace",
]

log = structlog.get_logger("ksched.cluster.leaderelection")

# client-go's JitterFactor: acquisition retries wait retryPeriod * (1 + rand * 1.2).
JITTER_FACTOR = 1.2
# kube-scheduler's NewLeaderHealthzAdaptor(20 * time.Second).
HEALTHZ_TIMEOUT = 20.0
DEFAULT_LEASE_NAMESPACE = "kube-system"
SA_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
LEASES_API = "/apis/coordination.k8s.io/v1"
EVENT_TIMEOUT = 5.0


def check_timings(lease_duration: float, renew_deadline: float, retry_period: float) -> str | None:
    """``NewLeaderElector``'s checks, in its order and words (None when fine)."""
    if lease_duration <= renew_deadline:
        return "leaseDuration must be greater than renewDeadline"
    if renew_deadline <= JITTER_FACTOR * retry_period:
        return "renewDeadline must be greater than retryPeriod*JitterFactor"
    for name, value in (
        ("leaseDuration", lease_duration),
        ("renewDeadline", renew_deadline),
        ("retryPeriod", retry_period),
    ):
        if value <= 0:
            return f"{name} must be greater than zero"
    return None


def new_identity() -> str:
    """``hostname_uuid`` like kube-scheduler: two processes on one host never share it."""
    return f"{hostname()}_{uuid.uuid4()}"


def resolve_lease_namespace(configured: str, sa_file: Path = SA_NAMESPACE_FILE) -> str:
    """The Lease's namespace: the configured one, or the pod's own when running in a pod.

    The config loader fills in ``kube-system`` when ``resourceNamespace`` is absent, so an
    explicit ``kube-system`` cannot be told from the default: both mean "the pod's namespace
    when the service-account namespace file exists, else kube-system". Any other value wins.
    """
    if configured and configured != DEFAULT_LEASE_NAMESPACE:
        return configured
    try:
        ns = sa_file.read_text().strip()
    except OSError:
        ns = ""
    return ns or configured or DEFAULT_LEASE_NAMESPACE


async def lease_lock_client(client: APIClient, renew_deadline: float) -> APIClient:
    """A client of its own for the lock, as kube-scheduler's ``NewFromKubeconfig``: its own
    rate limiter (a busy scheduler must not starve its renewals) and a request timeout of
    ``max(renew_deadline / 2, 1s)``. Same credentials; close it after use."""
    return APIClient(
        client.configuration,
        qps=client.limiter.qps,
        burst=client.limiter.burst,
        clock=client.clock,
        request_timeout=max(renew_deadline / 2, 1.0),
        user_agent=f"{client.user_agent}/leader-election",
        credential_refresher=client._refresher,
    )


class LeaderMetrics(Protocol):
    """client-go's leader metrics adapter (``leader_election_master_status`` & co.)."""

    def leader_on(self, name: str) -> None: ...
    def leader_off(self, name: str) -> None: ...
    def slowpath_exercised(self, name: str) -> None: ...


@dataclasses.dataclass(frozen=True)
class LeaderElectionRecord:
    """The lock's content (client-go ``LeaderElectionRecord``); times are MicroTime text."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    leader_transitions: int = 0

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> LeaderElectionRecord:
        return cls(
            holder_identity=spec.get("holderIdentity") or "",
            lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=spec.get("acquireTime"),
            renew_time=spec.get("renewTime"),
            leader_transitions=int(spec.get("leaseTransitions") or 0),
        )

    def to_spec(self) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder_identity,
            "leaseDurationSeconds": self.lease_duration_seconds,
            "acquireTime": self.acquire_time,
            "renewTime": self.renew_time,
            "leaseTransitions": self.leader_transitions,
        }


class LeaseLock:
    """``resourcelock.LeaseLock``: get/create/update one Lease, keeping the last object read
    or written so an update is conditional on its ``resourceVersion``."""

    def __init__(self, client: APIClient, namespace: str, name: str, identity: str) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease: dict[str, Any] | None = None

    @property
    def _collection(self) -> str:
        return f"{LEASES_API}/namespaces/{quote(self.namespace, safe='')}/leases"

    @property
    def path(self) -> str:
        return f"{self._collection}/{quote(self.name, safe='')}"

    def describe(self) -> str:
        return f"{self.namespace}/{self.name}"

    async def get(self, timeout: float | None = None) -> LeaderElectionRecord:
        """The current record; raises ``APIError`` (404 when there is no Lease yet)."""
        _, raw = await self.client.request("GET", self.path, timeout=timeout)
        return self._store(raw)

    async def create(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": record.to_spec(),
        }
        _, raw = await self.client.request("POST", self._collection, body=body, timeout=timeout)
        self._store(raw)

    async def update(self, record: LeaderElectionRecord, timeout: float | None = None) -> None:
        """PUT the record over the last Lease seen: a 409 means someone wrote in between."""
        if self.lease is None:
            raise RuntimeError("lease not initialized, call get or create first")
        # Fields this lock does not manage (strategy, preferredHolder) are kept, as client-go
        # carries them through its record.
        spec = {**(self.lease.get("spec") or {}), **record.to_spec()}
        body = {**self.lease, "spec": spec}
        _, raw = await self.client.request("PUT", self.path, body=body, timeout=timeout)
        self._store(raw)

    def _store(self, raw: bytes) -> LeaderElectionRecord:
        obj = msgspec.json.decode(raw)
        if not isinstance(obj, dict):
            raise APIError(500, "InternalError", "the Lease is not a JSON object")
        self.lease = obj
        return LeaderElectionRecord.from_spec(obj.get("spec") or {})

    def object_ref(self) -> dict[str, Any]:
        meta = (self.lease or {}).get("metadata") or {}
        ref = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "namespace": self.namespace,
            "name": self.name,
        }
        if meta.get("uid"):
            ref["uid"] = meta["uid"]
        if meta.get("resourceVersion"):
            ref["resourceVersion"] = meta["resourceVersion"]
        return ref


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _err(e: BaseException) -> str:
    return str(e) or type(e).__name__


class LeaderElector:
    """client-go's ``LeaderElector`` over a ``LeaseLock`` (see the module doc).

    ``clock`` measures everything that decides (observed time, deadlines, sleeps); ``wall``
    only stamps acquireTime/renewTime. ``event_component`` (the first profile's
    schedulerName, as upstream) turns on core/v1 ``LeaderElection`` events on the Lease.
    """

    def __init__(
        self,
        lock: LeaseLock,
        *,
        lease_duration: float,
        renew_deadline: float,
        retry_period: float,
        name: str = "ksched",
        clock: Clock | None = None,
        wall: Callable[[], dt.datetime] = _utcnow,
        rng: random.Random | None = None,
        metrics: LeaderMetrics | None = None,
        request_timeout: float | None = None,
        on_new_leader: Callable[[str], None] | None = None,
        event_component: str | None = None,
    ) -> None:
        problem = check_timings(lease_duration, renew_deadline, retry_period)
        if problem is not None:
            raise ValueError(problem)
        self.lock = lock
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.name = name
        self.clock: Clock = clock or RealClock()
        self.wall = wall
        self.rng = rng or random.Random()
        self.metrics = metrics
        self.request_timeout = (
            request_timeout if request_timeout is not None else max(renew_deadline / 2, 1.0)
        )
        self.on_new_leader = on_new_leader
        self.event_component = event_component
        self.observed_record = LeaderElectionRecord()
        self._observed_raw: LeaderElectionRecord | None = None
        self.observed_time = self.clock.now()
        self.reported_leader = ""
        # Between acquiring and losing (or releasing): what fencing and the metric follow.
        # ``is_leader()`` is client-go's IsLeader, true while the last record seen is ours.
        self.leading = False
        # Local time just before our last successful write: others cannot take the lease
        # before this plus leaseDuration, whenever they observed the write.
        self.renewed_at: float | None = None
        self._events: anyio.abc.TaskGroup | None = None
        # Why the last attempt could not even read or write the Lease when the API server
        # refused it (401/403): a candidate that can never lead is not ready.
        self.access_error: str | None = None
        # one line per cause, not one per retry
        self._throttle = LogThrottle(30.0, clock=self.clock.now)
        self._stop_requested = False
        self._sleep_scope: anyio.CancelScope | None = None
        if metrics is not None:
            metrics.leader_off(name)

    # -- state ------------------------------------------------------------------------------
    @property
    def identity(self) -> str:
        return self.lock.identity

    def get_leader(self) -> str:
        """The holder of the last record observed ("" when none or released)."""
        return self.observed_record.holder_identity

    def is_leader(self) -> bool:
        return self.observed_record.holder_identity == self.identity

    def is_lease_valid(self, now: float) -> bool:
        """The observed record's lease runs, by the local clock since it was observed."""
        return self.observed_time + self.observed_record.lease_duration_seconds > now

    def lease_remaining(self) -> float:
        """Seconds until others may take the lease we hold (0 when we do not hold it)."""
        if not self.is_leader() or self.renewed_at is None:
            return 0.0
        return max(0.0, self.renewed_at + self.lease_duration - self.clock.now())

    def check(self, max_tolerable_expired: float = HEALTHZ_TIMEOUT) -> str | None:
        """The healthz adaptor: unhealthy (a reason) when we still think we lead although
        nothing was renewed for leaseDuration + ``max_tolerable_expired`` — the renew loop is
        stuck and this process should have stopped leading long ago."""
        if not self.is_leader():
            return None
        if self.clock.now() - self.observed_time > self.lease_duration + max_tolerable_expired:
            return f"failed election to renew leadership on lease {self.name}"
        return None

    def may_write(self) -> bool:
        """Fencing (module doc): leading, and the lease confirmed less than renewDeadline
        ago by the monotonic clock."""
        at = self.renewed_at
        return self.leading and at is not None and self.clock.now() - at < self.renew_deadline

    def fence_check(self) -> str | None:
        """For /readyz: why a leader may not write now (None when it may, or when it does
        not lead: a standby is ready)."""
        if not self.leading or self.may_write():
            return None
        at = self.renewed_at
        ago = self.clock.now() - at if at is not None else 0.0
        return (
            f"lease {self.lock.describe()} not confirmed for {ago:.1f}s "
            f"(renewDeadline {self.renew_deadline:g}s): not binding until it is"
        )

    async def wait_writable(self, timeout: float) -> bool:
        """Until ``may_write`` (True), or leadership ends or ``timeout`` passes (False):
        a write held back while a renewal confirms the lease after a pause."""
        deadline = self.clock.now() + timeout
        while not self.may_write():
            now = self.clock.now()
            if not self.leading or now >= deadline:
                return False
            await self.clock.sleep(min(0.05, deadline - now))
        return True

    def access_check(self) -> str | None:
        """For /readyz: the API server's refusal of the Lease, while not leading."""
        return None if self.leading else self.access_error

    def _failed(self, what: str, e: BaseException) -> None:
        """Log a failed attempt: once per distinct cause, then every 30 s with a count."""
        if isinstance(e, APIError) and e.status in (401, 403):
            verb = "authenticate for" if e.status == 401 else "access"
            self.access_error = (
                f"cannot {verb} lease {self.lock.describe()} as this identity "
                f"({e.status} {e.reason}): {e.message}"
            )
        held = self._throttle.allow(f"{what}: {_err(e)}")
        if held is not None:
            log.error(what, lease=self.lock.describe(), error=_err(e), repeated=held)

    def _set_observed(self, record: LeaderElectionRecord) -> None:
        self.observed_record = record
        self.observed_time = self.clock.now()

    def _maybe_report_transition(self) -> None:
        holder = self.observed_record.holder_identity
        if holder == self.reported_leader:
            return
        self.reported_leader = holder
        if holder:
            log.info(
                "new leader observed",
                lease=self.lock.describe(),
                identity=holder,
                me=holder == self.identity,
            )
        else:
            log.info("lease released by its holder", lease=self.lock.describe())
        if self.on_new_leader is not None:
            self.on_new_leader(holder)

    # -- one attempt ------------------------------------------------------------------------
    async def try_acquire_or_renew(self, timeout: float | None = None) -> bool:
        """Acquire the lease if free or expired, renew it if ours; True on success."""
        timeout = self.request_timeout if timeout is None else timeout
        started = self.clock.now()
        stamp = micro_time(self.wall())
        record = LeaderElectionRecord(
            holder_identity=self.identity,
            lease_duration_seconds=int(self.lease_duration),
            acquire_time=stamp,
            renew_time=stamp,
        )
        # 1. The leader's fast path: update assuming the record we wrote last is current.
        if self.is_leader() and self.is_lease_valid(self.clock.now()):
            old = self.observed_record
            record = dataclasses.replace(
                record, acquire_time=old.acquire_time, leader_transitions=old.leader_transitions
            )
            try:
                await self._bounded(self.lock.update(record, timeout), timeout)
            except Exception as e:
                log.error(
                    "Failed to update lock optimistically, falling back to slow path",
                    lease=self.lock.describe(),
                    error=_err(e),
                )
            else:
                self._set_observed(record)
                self.renewed_at = started
                return True
        # 2. Obtain or create the record.
        try:
            old = await self._bounded(self.lock.get(timeout), timeout)
        except APIError as e:
            if e.status != 404:
                self._failed("error retrieving resource lock", e)
                return False
            try:
                await self._bounded(self.lock.create(record, timeout), timeout)
            except Exception as e:
                self._failed("error initially creating leader election record", e)
                return False
            self._set_observed(record)
            self.renewed_at = started
            self.access_error = None
            return True
        except Exception as e:
            self._failed("error retrieving resource lock", e)
            return False
        self.access_error = None
        # 3. Record obtained: a change restarts the local expiry clock. A leader finding
        # another holder's write since its own has lost the lease, free or not.
        mine = self.observed_record
        if self.leading and (
            old.holder_identity != self.identity
            or old.leader_transitions != mine.leader_transitions
        ):
            self._set_observed(old)
            self._observed_raw = old
            return False
        if old != self._observed_raw:
            self._set_observed(old)
            self._observed_raw = old
        if old.holder_identity and self.is_lease_valid(self.clock.now()) and not self.is_leader():
            log.debug(
                "lock is held by another candidate and has not yet expired",
                lease=self.lock.describe(),
                holder=old.holder_identity,
            )
            return False
        # 4. Take it over (a transition) or renew it (the slow path).
        if self.is_leader():
            record = dataclasses.replace(
                record, acquire_time=old.acquire_time, leader_transitions=old.leader_transitions
            )
            if self.metrics is not None:
                self.metrics.slowpath_exercised(self.name)
        else:
            record = dataclasses.replace(record, leader_transitions=old.leader_transitions + 1)
        try:
            await self._bounded(self.lock.update(record, timeout), timeout)
        except Exception as e:
            self._failed("Failed to update lock", e)
            return False
        self._set_observed(record)
        self.renewed_at = started
        return True

    @staticmethod
    async def _bounded(coro: Any, timeout: float) -> Any:
        """A lock call that gives up after ``timeout`` even across Retry-After retries."""
        with anyio.fail_after(max(timeout, 0.001)):
            return await coro

    # -- loops ------------------------------------------------------------------------------
    def stop(self) -> None:
        """End ``run`` at the next pause between attempts, never mid-request: a renewal cut
        off after the server applied it would leave a stale resourceVersion and make the
        following ``release`` fail with a 409."""
        self._stop_requested = True
        if self._sleep_scope is not None:
            self._sleep_scope.cancel()

    async def _pause(self, seconds: float) -> None:
        with anyio.CancelScope() as scope:
            self._sleep_scope = scope
            if not self._stop_requested:
                await self.clock.sleep(seconds)
        self._sleep_scope = None

    async def acquire(self) -> bool:
        """Try every retryPeriod (jittered) until the lease is ours; False if stopped."""
        desc = self.lock.describe()
        log.info("attempting to acquire leader lease", lease=desc, identity=self.identity)
        while not self._stop_requested:
            ok = await self.try_acquire_or_renew()
            self._maybe_report_transition()
            if ok:
                log.info(
                    "successfully acquired lease",
                    lease=desc,
                    identity=self.identity,
                    transitions=self.observed_record.leader_transitions,
                )
                return True
            await self._pause(self.retry_period * (1 + self.rng.random() * JITTER_FACTOR))
        return False

    async def renew(self) -> bool:
        """Renew every retryPeriod. Returns False once a round found no success within
        renewDeadline (the leadership is lost), True when ``stop()`` ended it."""
        desc = self.lock.describe()
        while not self._stop_requested:
            start = self.clock.now()
            ok = False
            while not self._stop_requested:
                remaining = start + self.renew_deadline - self.clock.now()
                if remaining <= 0:
                    break
                # The round's deadline bounds the whole attempt (fast path, GET and PUT).
                with anyio.move_on_after(remaining):
                    ok = await self.try_acquire_or_renew(min(self.request_timeout, remaining))
                if ok:
                    break
                remaining = start + self.renew_deadline - self.clock.now()
                if remaining <= 0:
                    break
                await self._pause(min(self.retry_period, remaining))
            gap = self.clock.now() - start - self.renew_deadline
            if not ok and not self._stop_requested and gap > self.retry_period:
                # The round overran its deadline: this process did not run (a pause). Writes
                # are fenced meanwhile (may_write); lead on only if the Lease is still ours.
                log.warning(
                    "lease renewal paused; re-reading the lease",
                    lease=desc,
                    identity=self.identity,
                    paused=round(gap, 3),
                )
                ok = await self.try_acquire_or_renew()
                if ok:
                    log.info("lease still held after the pause", lease=desc, identity=self.identity)
            self._maybe_report_transition()
            if not ok and not self._stop_requested:
                log.error(
                    "failed to renew lease",
                    lease=desc,
                    identity=self.identity,
                    renew_deadline=self.renew_deadline,
                )
                return False
            if ok:
                log.debug("successfully renewed lease", lease=desc, v=5)
            await self._pause(self.retry_period)
        return True

    async def run(
        self,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
    ) -> None:
        """Acquire, call ``on_started_leading``, renew; once renewing fails stop leading and
        call ``on_stopped_leading``. ``stop()`` ends it quietly — still holding the lease if
        it led: call ``release()`` once the work the lease guards is done."""
        async with anyio.create_task_group() as events:
            self._events = events
            try:
                if not await self.acquire():
                    return
                self.leading = True
                if self.metrics is not None:
                    self.metrics.leader_on(self.name)
                on_started_leading()
                self._record_event("became leader")
                if await self.renew():
                    return
                self._stop_leading()
                log.error("leaderelection lost", lease=self.lock.describe(), identity=self.identity)
                on_stopped_leading()
                self._record_event("stopped leading")
            finally:
                self._events = None

    def _stop_leading(self) -> None:
        self.leading = False
        if self.metrics is not None:
            self.metrics.leader_off(self.name)

    async def release(self) -> bool:
        """Give the lease up if the last record seen is ours: empty holder, same transitions,
        leaseDurationSeconds 1. A 409 (someone took it meanwhile) is a failed release."""
        if not self.is_leader():
            was_leading, self.leading = self.leading, False
            if was_leading and self.metrics is not None:
                self.metrics.leader_off(self.name)
            return True
        stamp = micro_time(self.wall())
        record = LeaderElectionRecord(
            lease_duration_seconds=1,
            acquire_time=stamp,
            renew_time=stamp,
            leader_transitions=self.observed_record.leader_transitions,
        )
        ok = False
        with anyio.CancelScope(shield=True):
            try:
                await self._bounded(
                    self.lock.update(record, self.renew_deadline), self.renew_deadline
                )
            except Exception as e:
                log.error("Failed to release lock", lease=self.lock.describe(), error=_err(e))
            else:
                self._set_observed(record)
                ok = True
                log.info("released lease", lease=self.lock.describe(), identity=self.identity)
            was_leading = self.leading
            self._stop_leading()
            if was_leading:
                await self._post_event("stopped leading")
        return ok

    # -- events -----------------------------------------------------------------------------
    def _record_event(self, what: str) -> None:
        if self.event_component is None or self._events is None:
            return
        self._events.start_soon(self._post_event, what)

    async def _post_event(self, what: str) -> None:
        """``LeaseLock.RecordEvent``: a best-effort core/v1 Event on the Lease."""
        if self.event_component is None or self.lock.lease is None:
            return
        now = self.wall()
        host = hostname()
        ref = self.lock.object_ref()
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{self.lock.name}.{time.time_ns():x}",
                "namespace": self.lock.namespace,
            },
            "involvedObject": ref,
            "reason": "LeaderElection",
            "message": f"{self.identity} {what}",
            "type": "Normal",
            "source": {"component": self.event_component, "host": host},
            "firstTimestamp": rfc3339(now),
            "lastTimestamp": rfc3339(now),
            "count": 1,
            "reportingComponent": self.event_component,
            "reportingInstance": host,
        }
        path = f"/api/v1/namespaces/{quote(self.lock.namespace, safe='')}/events"
        try:
            with anyio.fail_after(EVENT_TIMEOUT):
                await self.lock.client.request("POST", path, body=body, timeout=EVENT_TIMEOUT)
        except Exception as e:
            log.debug("recording a leader election event failed", error=_err(e))
