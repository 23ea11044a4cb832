"""Scheduling outcomes written back to the API: pod conditions and events.k8s.io/v1 Events.

The scheduling loop must never wait on the API, so ``StatusReporter`` only enqueues: the
Observer and EventRecorder calls append to bounded in-memory queues and tasks in the
reporter's own task group make the calls.

Bindings first. Event creations (one per scheduled pod) go to their own queue, written
by one task in pipelined batches on one connection. While ``defer_to()`` says bindings
are in flight, that task waits, up to ``event_delay`` seconds after an event was
recorded: on an API server that is the bound, each Event written during a backlog is a
binding fewer per second. Once bindings are idle (or the oldest event has waited
``event_delay``), or on ``drain()``, the queue is written out, so nothing is lost at idle
and no event waits longer than ``event_delay`` plus the write. When the event queue is
full (``max_events``), a new event is dropped, as client-go's event broadcaster drops
what does not fit its channel: counted in ``events_dropped`` (the
``ksched_events_dropped_total`` metric) with one log line per 10 s. Condition patches and
series updates keep their own queue (dropping the oldest when full), written at once by
``workers`` tasks.

A failure is reported like kube-scheduler's ``handleSchedulingFailure``: a
``FailedScheduling`` Warning event with the (truncated) message, then ``updatePod``'s
strategic-merge patch of the PodScheduled=False condition on ``pods/{name}/status``,
skipped when the pod already carries the identical condition.

Events follow client-go's events/v1 recorder, rate-limited: the first occurrence of an
event (same pod, type, reason, action and note) is created at once; repeats are counted
in ``series.count``/``series.lastObservedTime`` and written as one patch of the existing
Event at most once per ``series_interval`` (60 s) — so a pod stuck failing the same way
produces one Event object and a patch a minute, not a write per attempt. A series ends
(and the next occurrence creates a new Event) after ``finish_after`` (6 min, client-go's
``finishTime``) without repeats. Unlike client-go the key leaves out the pod's
resourceVersion, which changes with every status patch.

An Event creation the server did not answer, or answered with a 5xx or 429, is tried again
like client-go's broadcaster does (``attemptRecording``): up to 12 tries, about
``event_retry_sleep`` (10 s, jittered +25 %) apart; ``drain`` writes them at once. A retry
of an Event that was in fact created meets 409 AlreadyExists (the name is fixed when it
is recorded), so none is written twice.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import msgspec
import structlog

from ..api.workload import API_VERSION, Condition, PodGroup
from ..framework.types import PodInfo
from ..util.clock import Clock, RealClock, rfc3339
from ..util.throttle import LogThrottle
from .binder import condition_patch, patch_pod_status, pod_path
from .client import (
    JSON_CT,
    STRATEGIC_MERGE_PATCH,
    APIClient,
    APIError,
    hostname,
)
from .pipeline import PipelinedConnection, as_error

__all__ = [
    "NOTE_LENGTH_LIMIT",
    "StatusReporter",
    "scheduling_failed_condition",
    "truncate_message",
]

log = structlog.get_logger("ksched.cluster.status")

# events/v1 validation: note ≤ 1 kB (kube-scheduler's truncateMessage uses the same limit)
NOTE_LENGTH_LIMIT = 1024
# client-go's events broadcaster: maxTriesPerEvent, and its sleep between tries.
MAX_EVENT_TRIES = 12
EVENT_RETRY_SLEEP = 10.0
EVENTS_API = "/apis/events.k8s.io/v1"
POD_GROUP_API = API_VERSION


def scheduling_failed_condition(
    generation: int, reason: str, message: str, transition_time: str | None = None
) -> dict[str, Any]:
    """The PodScheduled=False condition ``handleSchedulingFailure`` writes.

    v1.36 sets ``observedGeneration`` to the pod's ``metadata.generation``
    (PodObservedGenerationTracking, on by default); a pod without a generation (an API
    server that does not keep one) gets none.
    """
    cond: dict[str, Any] = {"type": "PodScheduled"}
    if generation > 0:
        cond["observedGeneration"] = generation
    cond.update(
        status="False",
        reason=reason,
        message=message,
        lastProbeTime=None,
        lastTransitionTime=transition_time or rfc3339(),
    )
    return cond


def pod_group_status_path(namespace: str, name: str) -> str:
    return f"/apis/{POD_GROUP_API}/namespaces/{namespace}/podgroups/{name}/status"


def condition_json(c: Condition) -> dict[str, Any]:
    """A ``metav1.Condition`` as its JSON: reason and message always (a patch without
    them would leave the previous ones), observedGeneration only when set."""
    out: dict[str, Any] = {"type": c.type, "status": c.status}
    if c.observed_generation:
        out["observedGeneration"] = c.observed_generation
    out.update(lastTransitionTime=c.last_transition_time, reason=c.reason, message=c.message)
    return out


def truncate_message(message: str, limit: int = NOTE_LENGTH_LIMIT) -> str:
    if len(message) <= limit:
        return message
    suffix = " ..."
    return message[: limit - len(suffix)] + suffix


def micro_time(t: dt.datetime | None = None) -> str:
    """metav1.MicroTime's JSON form (RFC 3339, microseconds, UTC)."""
    if t is None:
        return _micro_now()
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_second_text: tuple[int, str] = (-1, "")


def _micro_now() -> str:
    """``micro_time()`` of now; the date and time up to the second are formatted once per
    second (an event is recorded per scheduled pod)."""
    global _second_text
    ns = time.time_ns()
    sec, rest = divmod(ns, 1_000_000_000)
    cached, text = _second_text
    if cached != sec:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
        _second_text = (sec, text)
    return f"{text}.{rest // 1000:06d}Z"


EventKey = tuple[str, str, str, str, str, str, str]

_encode = msgspec.json.Encoder().encode


@dataclass(slots=True)
class _Series:
    """One deduplicated event: the Event object written and its unwritten repeats."""

    event: dict[str, Any]
    count: int = 1
    last_seen: float = 0.0  # clock time of the latest occurrence
    last_write: float = 0.0  # clock time of the latest API write for it
    last_observed: str = ""  # MicroTime of the latest occurrence
    dirty: bool = False  # repeats not yet written


@dataclass(slots=True)
class _Work:
    kind: str  # "event" | "series" | "condition"
    path: str
    body: dict[str, Any]
    key: Any = None
    at: float = 0.0  # clock time it was queued (events)
    tries: int = 1


class StatusReporter:
    """The daemon's scheduler ``Observer`` and framework ``EventRecorder``.

    Run ``run()`` in a task group; ``scheduled``/``failed``/``event`` never block.
    """

    def __init__(
        self,
        client: APIClient,
        *,
        controller: str = "ksched",
        instance: str | None = None,
        max_queue: int = 10_000,
        workers: int = 4,
        series_interval: float = 60.0,
        finish_after: float = 360.0,
        clock: Clock | None = None,
        pipelining: bool = True,
        batch_size: int = 64,
        max_events: int = 10_000,
        event_delay: float = 5.0,
        defer_to: Callable[[], bool] | None = None,
        defer_poll: float = 0.01,
    ) -> None:
        """``pipelining``: write queued Events in batches on one connection
        (``ksched.cluster.pipeline``), at most ``batch_size`` per write.
        ``defer_to``: true while work that goes first (bindings) is in flight; events
        then wait up to ``event_delay`` seconds, looked at every ``defer_poll``."""
        self.client = client
        self.max_events = max(1, max_events)
        self.event_delay = event_delay
        self.defer_to = defer_to
        self.defer_poll = defer_poll
        self._events: deque[_Work] = deque()
        # (due clock time, work): Event creations to try again (module doc)
        self._event_retries: list[tuple[float, _Work]] = []
        self.event_retry_sleep = EVENT_RETRY_SLEEP
        self._rng = random.Random()
        self._events_wakeup: anyio.Event | None = None
        self._events_busy = 0
        self._flushing = 0
        self.pipelining = pipelining
        self.batch_size = max(1, batch_size)
        self._pipe: PipelinedConnection | None = None
        self.controller = controller
        self.instance = instance or f"{controller}-{hostname()}"
        self.max_queue = max_queue
        self.workers = max(1, workers)
        self.series_interval = series_interval
        self.finish_after = finish_after
        self.clock: Clock = clock or RealClock()
        self._queue: deque[_Work] = deque()
        self._wakeup: anyio.Event | None = None
        self._busy = 0
        # Ordered by last occurrence (a repeat moves its series to the end), so the ticker
        # finds the series that went quiet at the front; and the ones with unwritten
        # repeats. The ticker's work is what it writes or ends, not every series there is.
        self._series: dict[EventKey, _Series] = {}
        self._dirty: dict[EventKey, None] = {}
        # uid -> (reason, message, resourceVersion) of the last condition we patched, so a
        # repeat failure before the watch shows our patch is not patched again
        self._conditions: OrderedDict[str, tuple[str, str, str]] = OrderedDict()
        # counters (metrics, tests)
        self.dropped = 0  # condition/series work dropped (its queue was full)
        self.events_dropped = 0  # events not recorded (the event queue was full)
        self.suppressed = 0
        self.api_errors = 0
        # a full queue logs once per 10 s per queue, not per dropped item
        self._drop_log = LogThrottle(10.0, clock=self.clock.now)

    # -- Observer -------------------------------------------------------------------------------

    def scheduled(self, pod: PodInfo, node: str, profile: str, attempts: int) -> None:
        self._conditions.pop(pod.uid or pod.key, None)
        self.event(
            pod,
            "Normal",
            "Scheduled",
            "Binding",
            f"Successfully assigned {pod.namespace}/{pod.name} to {node}",
        )

    def failed(
        self, pod: PodInfo, profile: str, reason: str, message: str, result: object | None
    ) -> None:
        self.event(pod, "Warning", "FailedScheduling", "Scheduling", message)
        self._update_condition(pod, reason, message, result)

    def pod_group_condition(self, pod_group: PodGroup, condition: Condition) -> None:
        """The pod-group cycle's PodGroupInitiallyScheduled condition (upstream's
        ``PatchPodGroupStatus``): a strategic merge patch of ``podgroups/{name}/status``
        (conditions merge by type), queued and written like the pods' conditions."""
        meta = pod_group.metadata
        self._enqueue(
            _Work(
                "condition",
                pod_group_status_path(meta.namespace, meta.name),
                {"status": {"conditions": [condition_json(condition)]}},
            )
        )

    # -- EventRecorder --------------------------------------------------------------------------

    def event(self, pod: PodInfo, type_: str, reason: str, action: str, note: str) -> None:
        if len(note) > NOTE_LENGTH_LIMIT:
            note = truncate_message(note)
        meta = pod.pod.metadata
        key: EventKey = (meta.namespace, meta.name, meta.uid, type_, reason, action, note)
        now = self.clock.now()
        wall = _micro_now()
        series = self._series
        s = series.pop(key, None)
        if s is not None and now - s.last_seen <= self.finish_after:
            series[key] = s  # now the latest
            s.count += 1
            s.last_seen = now
            s.last_observed = wall
            if now - s.last_write >= self.series_interval:
                self._write_series(key, s, now)
            else:
                s.dirty = True
                self._dirty[key] = None
                self.suppressed += 1
            return
        if s is not None and s.dirty:
            self._dirty.pop(key)  # it ended before the ticker wrote its repeats
        ev = self._new_event(pod, type_, reason, action, note, wall)
        series[key] = _Series(ev, last_seen=now, last_write=now, last_observed=wall)
        ns = ev["metadata"]["namespace"]
        self._enqueue_event(_Work("event", f"{EVENTS_API}/namespaces/{ns}/events", ev, key, now))

    def _new_event(
        self, pod: PodInfo, type_: str, reason: str, action: str, note: str, wall: str
    ) -> dict[str, Any]:
        meta = pod.pod.metadata
        regarding: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": meta.namespace,
            "name": meta.name,
        }
        if meta.uid:
            regarding["uid"] = meta.uid
        if meta.resource_version:
            regarding["resourceVersion"] = meta.resource_version
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": f"{meta.name}.{time.time_ns():x}",
                "namespace": meta.namespace or "default",
            },
            "eventTime": wall,
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "regarding": regarding,
            "note": note,
            "type": type_,
        }

    def _write_series(self, key: EventKey, s: _Series, now: float) -> None:
        s.dirty = False
        self._dirty.pop(key, None)
        s.last_write = now
        ev = s.event
        ns, name = ev["metadata"]["namespace"], ev["metadata"]["name"]
        series = {"count": s.count, "lastObservedTime": s.last_observed}
        self._enqueue(
            _Work("series", f"{EVENTS_API}/namespaces/{ns}/events/{name}", {"series": series}, key)
        )

    def _tick(self) -> None:
        """Flush repeats whose interval has passed; end series that went quiet."""
        now = self.clock.now()
        series = self._series
        for key in list(self._dirty):
            s = series[key]
            if now - s.last_write >= self.series_interval:
                self._write_series(key, s, now)
        while series:
            key = next(iter(series))
            s = series[key]
            if now - s.last_seen <= self.finish_after:
                break  # and so are all after it
            if s.dirty:
                self._write_series(key, s, now)
            del series[key]

    # -- conditions -----------------------------------------------------------------------------

    def _update_condition(
        self, pod: PodInfo, reason: str, message: str, result: object | None
    ) -> None:
        """``updatePod``: PodScheduled=False with reason and message, unless already so."""
        status = pod.pod.status
        current = next((c for c in status.conditions if c.type == "PodScheduled"), None)
        identical = (
            current is not None
            and current.status == "False"
            and current.reason == reason
            and current.message == message
        )
        uid = pod.uid or pod.key
        rv = pod.pod.metadata.resource_version
        if not identical and self._conditions.get(uid) == (reason, message, rv):
            identical = True  # we patched it already; the watch has not caught up yet
        # A PostFilter result overrides the nomination (upstream's nominatingInfo
        # ModeOverride): a preemption's node is written here, with the condition, and an
        # empty name (preemption found nothing) clears a stale one.
        post = getattr(result, "post_filter", None)
        nominate: str | None = None
        if post is not None:
            node = getattr(post, "nominated_node_name", "") or ""
            if node != (status.nominated_node_name or ""):
                nominate = node
        if identical and nominate is None:
            return
        cond = scheduling_failed_condition(
            pod.pod.metadata.generation,
            reason,
            message,
            current.last_transition_time
            if current is not None and current.status == "False" and current.last_transition_time
            else rfc3339(),
        )
        patch_status = condition_patch(status, cond)
        if nominate is not None:
            patch_status["nominatedNodeName"] = nominate or None
        self._conditions[uid] = (reason, message, rv)
        self._conditions.move_to_end(uid)
        while len(self._conditions) > 10_000:
            self._conditions.popitem(last=False)
        self._enqueue(
            _Work(
                "condition", pod_path(pod.namespace, pod.name, "status"), {"status": patch_status}
            )
        )

    # -- queues & workers -----------------------------------------------------------------------

    def _enqueue_event(self, work: _Work) -> None:
        """Queue an Event creation; when the queue is full the new one is dropped (client-go's
        broadcaster: DropIfChannelFull), counted, with a log line at most every 10 s."""
        if len(self._events) >= self.max_events:
            self.events_dropped += 1
            if self._drop_log.allow("event") is not None:
                log.warning(
                    "event queue full, dropping event",
                    reason=work.body.get("reason"),
                    path=work.path,
                    events_dropped_total=self.events_dropped,
                )
            return
        self._events.append(work)
        if self._events_wakeup is not None:
            self._events_wakeup.set()
            self._events_wakeup = None

    def _enqueue(self, work: _Work) -> None:
        if len(self._queue) >= self.max_queue:
            dropped = self._queue.popleft()
            self.dropped += 1
            if self._drop_log.allow("work") is not None:
                log.warning(
                    "status/event queue full, dropping oldest work",
                    dropped_kind=dropped.kind,
                    path=dropped.path,
                    dropped_total=self.dropped,
                )
        self._queue.append(work)
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    @property
    def pending(self) -> int:
        return (
            len(self._queue)
            + self._busy
            + len(self._events)
            + self._events_busy
            + len(self._event_retries)
        )

    def _retry_event(self, work: _Work, error: str) -> None:
        """Try a failed Event creation again later, up to ``MAX_EVENT_TRIES`` in all."""
        if work.tries >= MAX_EVENT_TRIES:
            log.error("Unable to write event (retry limit exceeded!)", path=work.path, error=error)
            return
        work.tries += 1
        jitter = 1.0 + self._rng.random() * 0.25
        self._event_retries.append((self.clock.now() + self.event_retry_sleep * jitter, work))

    def _requeue_due_events(self) -> float | None:
        """Move the retries that are due (all while draining) to the event queue; seconds
        until the next one is (None: none left)."""
        if not self._event_retries:
            return None
        now = self.clock.now()
        due = [w for t, w in self._event_retries if t <= now or self._flushing]
        if due:
            self._event_retries = [
                (t, w) for t, w in self._event_retries if not (t <= now or self._flushing)
            ]
            self._events.extend(due)
        if not self._event_retries:
            return None
        return max(0.0, min(t for t, _ in self._event_retries) - now)

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Workers plus the series ticker, until cancelled."""
        if self.pipelining and self._pipe is None:
            self._pipe = PipelinedConnection.for_client(self.client)
        try:
            async with anyio.create_task_group() as tg:
                for i in range(self.workers):
                    tg.start_soon(self._worker, name=f"status worker {i}")
                tg.start_soon(self._event_writer, name="event writer")
                tg.start_soon(self._ticker, name="event series ticker")
                task_status.started()
        finally:
            if self._pipe is not None:
                self._pipe.close()
                self._pipe = None

    async def _ticker(self) -> None:
        period = max(0.01, min(self.series_interval, self.finish_after) / 4)
        while True:
            await self.clock.sleep(period)
            self._tick()

    async def _worker(self) -> None:
        """Condition patches and series updates, one request at a time."""
        while True:
            q = self._queue
            if not q:
                if self._wakeup is None:
                    self._wakeup = anyio.Event()
                await self._wakeup.wait()
                continue
            work = q.popleft()
            self._busy += 1
            try:
                await self._write_one(work)
            finally:
                self._busy -= 1

    async def _write_one(self, work: _Work) -> None:
        """One write; a failure is counted and logged, never raised (the worker goes on)."""
        try:
            await self._perform(work)
        except APIError as e:
            self._write_failed(work, e)
        except Exception:
            self.api_errors += 1
            log.exception("status/event write failed", kind=work.kind, path=work.path)

    def _deferring(self) -> float:
        """Seconds the oldest queued event may still wait for bindings (0: write now)."""
        if self._flushing or self.defer_to is None or not self.defer_to():
            return 0.0
        return max(0.0, self._events[0].at + self.event_delay - self.clock.now())

    async def _event_writer(self) -> None:
        """The one task creating Events: in batches of up to ``batch_size``, pipelined on
        one connection (else ``workers`` requests at a time), after in-flight bindings."""
        q = self._events
        while True:
            next_retry = self._requeue_due_events()
            if not q:
                if self._events_wakeup is None:
                    self._events_wakeup = anyio.Event()
                # new events and a drain (its retries are due at once) wake it too
                with anyio.move_on_after(math.inf if next_retry is None else next_retry):
                    await self._events_wakeup.wait()
                continue
            wait = self._deferring()
            if wait > 0:
                await self.clock.sleep(min(wait, self.defer_poll))
                continue
            batch = [q.popleft() for _ in range(min(len(q), self.batch_size))]
            self._events_busy += len(batch)
            try:
                if self._pipe is not None:
                    await self._post_events(self._pipe, batch)
                else:
                    async with anyio.create_task_group() as tg:
                        for group in range(min(self.workers, len(batch))):
                            tg.start_soon(self._perform_each, batch[group :: self.workers])
            finally:
                self._events_busy -= len(batch)

    async def _perform_each(self, works: list[_Work]) -> None:
        for work in works:
            await self._write_one(work)

    def _write_failed(self, work: _Work, e: APIError) -> None:
        if work.kind == "event" and work.tries > 1 and e.status == 409:
            return  # an earlier try was created after all, its answer lost
        self.api_errors += 1
        if work.kind == "event" and _retriable(e):
            # one line per kind of failure every 10 s: an outage fails every event, often
            held = self._drop_log.allow(f"retry {e.status} {e.reason}")
            if held is not None:
                log.warning(
                    "status/event write failed; trying again later",
                    kind=work.kind,
                    path=work.path,
                    error=str(e),
                    repeated=held,
                )
            self._retry_event(work, str(e))
            return
        log.warning("status/event write failed", kind=work.kind, path=work.path, error=str(e))

    async def _post_events(self, pipe: PipelinedConnection, batch: list[_Work]) -> None:
        """Create the batch's Events in one pipelined write; an answer asking to retry later
        (Retry-After) is retried through ``APIClient.request``, which honours it."""
        try:
            results = await pipe.batch([("POST", w.path, _encode(w.body), JSON_CT) for w in batch])
        except Exception as e:
            self.api_errors += len(batch)
            log.exception("status/event write failed", kind="event", events=len(batch))
            for work in batch:
                self._retry_event(work, str(e))
            return
        for work, r in zip(batch, results, strict=True):
            err = r if isinstance(r, BaseException) else as_error(r)
            if err is None:
                continue
            if not isinstance(err, APIError):
                self._write_failed(work, APIError(0, type(err).__name__, str(err)))
                continue
            if err.status == 401:
                self.client.credentials_rejected()
            if err.retry_after is not None and (err.status == 429 or err.status >= 500):
                try:
                    await self.clock.sleep(err.retry_after)
                    await self._perform(work)
                except APIError as e:
                    self._write_failed(work, e)
                continue
            self._write_failed(work, err)

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait until everything queued so far has been written (tests, shutdown); events
        do not wait for bindings meanwhile."""
        self._flushing += 1
        if self._event_retries and self._events_wakeup is not None:
            self._events_wakeup.set()
            self._events_wakeup = None
        try:
            with anyio.fail_after(timeout):
                while self.pending:
                    await anyio.sleep(0.005)
        finally:
            self._flushing -= 1

    async def _perform(self, work: _Work) -> None:
        if work.kind == "event":
            await self.client.request("POST", work.path, body=work.body)
        elif work.kind == "series":
            try:
                await self.client.request(
                    "PATCH", work.path, body=work.body, content_type=STRATEGIC_MERGE_PATCH
                )
            except APIError as e:
                if e.status != 404:
                    raise
                # the Event expired (TTL) or was deleted: create it anew, with the series
                s = self._series.get(work.key)
                if s is None:
                    return
                ev = dict(s.event)
                ev["series"] = work.body["series"]
                ns = ev["metadata"]["namespace"]
                await self.client.request("POST", f"{EVENTS_API}/namespaces/{ns}/events", body=ev)
        elif work.kind == "condition":
            await patch_pod_status(self.client, work.path, work.body)  # a 404: pod gone


def _retriable(e: APIError) -> bool:
    """No answer, or the server asking to be tried later: client-go keeps the event."""
    return e.status == 0 or e.status == 429 or e.status >= 500
