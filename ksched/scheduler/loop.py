"""The scheduling loop: pop -> cycle -> bind, the one every front end runs.

``run_loop(sched, policy)`` is the only loop. The daemon, ``ksched simulate`` (and the
benchmarks and the differential oracle through it), shadow mode and
``ksched.testing.schedule`` differ only in the ``LoopPolicy`` they hand it:

* how time passes and work arrives: ``pass_time`` runs beside the loop (the real
  clock's queue flushers and assumed-pod expiry; nothing on virtual time) and
  ``next_entity`` waits for the next pod or pod group (the daemon blocks on the queue; the
  simulator settles the bindings and jumps its clock to the next deadline); None ends the
  loop;
* what a decision does (``mode``): bind it (the binding cycle and preemption's evictions
  in the loop's task group), keep it (a dry run: the scheduling cycle, nothing bound or
  evicted), or only decide (shadow mode: the scheduling algorithm on the cache as it
  stands);
* what follows a decision: ``after_decision`` (the simulator settles the bindings, shadow
  mode compares, the daemon yields and feeds its watchdog).

Stopping, fencing and draining are the loop's, not the policies': ``Scheduler.stop``
ends it between cycles and the bindings in flight get the policy's ``drain_timeout``;
``Scheduler.fence`` (leadership lost) cancels the running cycle at once and gives the
bindings only until the lease could expire for the others. A failed attempt goes through
``handle_scheduling_failure`` in every mode.
"""

from __future__ import annotations

import asyncio
import enum
import functools
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.abc
import structlog

from ..framework.cycle_state import CycleState
from ..framework.deadline import PluginTimeout
from ..framework.runtime import Framework
from ..framework.status import Code, Status
from ..framework.types import PodInfo
from ..queue.podgroups import QueuedPodGroupInfo
from ..queue.scheduling_queue import Entity, QueuedPodInfo
from .cycle_result import CycleResult
from .dispatch import schedule_entity
from .schedule_one import handle_scheduling_failure, schedule_pod, scheduling_cycle
from .schedule_one_podgroup import MemberDecision, decide_pod_group
from .scheduler import Scheduler

__all__ = [
    "Decided",
    "GroupDecision",
    "LoopMode",
    "LoopPolicy",
    "RealTime",
    "decide",
    "decide_pod",
    "run_loop",
]

log = structlog.get_logger("ksched.scheduler")


class LoopMode(enum.Enum):
    """What a decision does."""

    #: The scheduling cycle, then the binding cycle (and a preemption's evictions) in the
    #: loop's task group.
    BIND = "bind"
    #: The scheduling cycle (Reserve, Permit and PostFilter included); nothing is bound or
    #: evicted (``ksched.testing.schedule``).
    DRY_RUN = "dry-run"
    #: The scheduling algorithm alone on the cache as it stands: nothing assumed,
    #: reserved, permitted, preempted or bound (shadow mode).
    DECIDE = "decide"


@dataclass(slots=True)
class GroupDecision:
    """A pod group's dry run: the group's status and each member's decision."""

    status: Status
    members: list[MemberDecision]


#: What ``after_decision`` is told: a pod's cycle result, a group's decision (DECIDE and
#: DRY_RUN), or None when the decision was handed to the binding cycle (BIND).
Decided = CycleResult | GroupDecision | None


class LoopPolicy(Protocol):
    """A front end's part in the loop (see the module doc)."""

    #: What a decision does.
    mode: LoopMode
    #: Seconds the bindings in flight get once the loop stops (None: as long as they take).
    drain_timeout: float | None
    #: True: plugins' API calls from synchronous extension points (DynamicResources'
    #: Unreserve) run as tasks of the loop (a real API server); False: at once (an
    #: in-memory cluster, whose calls never suspend).
    defer_api_calls: bool

    async def pass_time(self, sched: Scheduler) -> None:
        """Runs beside the loop (cancelled when it ends): what moves time on."""

    async def next_entity(self, sched: Scheduler) -> Entity | None:
        """The next pod or pod group to decide, once there is one; None ends the loop."""

    async def after_decision(self, sched: Scheduler, entity: Entity, decided: Decided) -> None:
        """Called after each decision (its binding cycle started, in BIND mode)."""


class RealTime:
    """The policy of a scheduler on the real clock: wait for the queue, bind, and let the
    bindings in flight finish on stop. The daemon's policy builds on it; tests of the
    loop use it as it is."""

    mode = LoopMode.BIND
    defer_api_calls = True

    def __init__(self, drain_timeout: float | None = None) -> None:
        self.drain_timeout = drain_timeout

    async def pass_time(self, sched: Scheduler) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(sched.queue.run_flushers, name="queue flushers")
            tg.start_soon(sched.cache.run_cleanup, name="assumed pod expiry")

    async def next_entity(self, sched: Scheduler) -> Entity | None:
        return await sched.queue.pop()

    async def after_decision(self, sched: Scheduler, entity: Entity, decided: Decided) -> None:
        # anyio's checkpoint on asyncio, without its backend lookup: informer events and
        # binding cycles get their turn between cycles
        await asyncio.sleep(0)


def _spawn(tg: anyio.abc.TaskGroup, call: Callable[[], Coroutine[Any, Any, Any]]) -> None:
    tg.start_soon(call)


async def run_loop(
    sched: Scheduler, policy: LoopPolicy, *, on_started: Callable[[], None] | None = None
) -> None:
    """Decide pods and pod groups as ``policy`` says until it runs out of work or the
    scheduler is stopped or fenced; returns once the bindings in flight are done (or their
    time is up). ``on_started``: called once the loop takes pods."""
    loop = sched.loop
    mode = policy.mode
    frameworks = sched.frameworks.values()
    async with anyio.create_task_group() as aux:
        aux.start_soon(policy.pass_time, sched, name="the loop's clock")
        try:
            async with anyio.create_task_group() as bindings:
                scope = loop.bindings = bindings.cancel_scope
                if loop.fence_deadline is not None:
                    scope.deadline = loop.fence_deadline
                if mode is LoopMode.BIND:
                    # preemption tasks (and plugins' API calls) drain with the bindings
                    loop.task_group = bindings
                    if policy.defer_api_calls:
                        spawn = functools.partial(_spawn, bindings)
                        for fw in frameworks:
                            fw.handle.spawn = spawn
                if on_started is not None:
                    on_started()
                # Stopping ends the loop between cycles; fencing cancels even a running
                # cycle (this scope), never a binding already started.
                with anyio.CancelScope() as cycles:
                    loop.cycles = cycles
                    while not loop.stopping:
                        entity = await policy.next_entity(sched)
                        if entity is None:
                            break
                        decided = await _decide(sched, mode, entity, bindings)
                        await policy.after_decision(sched, entity, decided)
                loop.cycles = None
                if sched.in_flight_bindings and policy.drain_timeout:
                    log.info(
                        "waiting for in-flight bindings",
                        bindings=sched.in_flight_bindings,
                        timeout=policy.drain_timeout,
                    )
                if policy.drain_timeout is not None:
                    end = anyio.current_time() + policy.drain_timeout
                    scope.deadline = min(scope.deadline, end)
        finally:
            loop.cycles = loop.bindings = loop.task_group = None
            if mode is LoopMode.BIND and policy.defer_api_calls:
                for fw in frameworks:
                    fw.handle.spawn = None
            aux.cancel_scope.cancel()


async def _decide(
    sched: Scheduler, mode: LoopMode, entity: Entity, bindings: anyio.abc.TaskGroup
) -> Decided:
    if mode is LoopMode.BIND:
        await schedule_entity(sched, entity, bindings)
        return None
    if isinstance(entity, QueuedPodGroupInfo):
        return await decide_group(sched, entity)
    if mode is LoopMode.DECIDE:
        return decide(sched, entity)
    fw = sched.frameworks[entity.profile]
    res = scheduling_cycle(sched, fw, CycleState(), entity)
    if not res.status.is_success():
        handle_scheduling_failure(sched, fw, entity, res.status, res)
    return res


# == deciding only (shadow mode) ===========================================================
def decide_pod(sched: Scheduler, fw: Framework, pod: PodInfo) -> CycleResult:
    """The scheduling algorithm for ``pod`` on the cache as it stands, with its
    explanation, and nothing after it. A plugin's error (or one that hung) is the
    result's error status."""
    if pod.error is not None:
        return CycleResult(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, pod.error))
    sched.cache.update_snapshot(sched.snapshot)
    try:
        with sched.deadline:
            return schedule_pod(sched, fw, CycleState(), pod, True)
    except (Exception, PluginTimeout) as e:
        return CycleResult(Status(Code.ERROR, f"{type(e).__name__}: {e}"))


def decide(sched: Scheduler, qpi: QueuedPodInfo) -> CycleResult:
    """Decide a popped pod; then it leaves the queue (a node found) or goes through the
    failure handling as any failed attempt (the unschedulable pool, retried on events)."""
    fw = sched.frameworks[qpi.profile]
    res = decide_pod(sched, fw, qpi.pod_info)
    if res.status.is_success():
        sched.queue.done(qpi.pod_info)
    else:
        _requeue(sched, fw, qpi, res.status, res)
    return res


async def decide_group(sched: Scheduler, group: QueuedPodGroupInfo) -> GroupDecision:
    """Decide a popped pod group with its algorithm (every member at once, all or none
    placed); then the placed members leave the queue, the others go through the failure
    handling, and the group goes back to the queue."""
    try:
        with sched.deadline:
            status, members = await decide_pod_group(sched, group)
    except (Exception, PluginTimeout) as e:
        msg = f"{type(e).__name__}: {e}"
        status, members = (
            Status.as_error(msg),
            [MemberDecision(q, None, msg) for q in group.members],
        )
    q = sched.queue
    code = Code.ERROR if status.code == Code.ERROR else Code.UNSCHEDULABLE
    for m in members:
        fw = sched.frameworks.get(m.qpi.profile)
        if m.node is not None or fw is None:
            q.done(m.qpi.pod_info)
        else:
            _requeue(sched, fw, m.qpi, Status(code, m.message), m.result)
    q.add_attempted_pod_group_if_needed(group, q.scheduling_cycle, status)
    return GroupDecision(status, members)


def _requeue(
    sched: Scheduler, fw: Framework, qpi: QueuedPodInfo, st: Status, res: CycleResult | None
) -> None:
    """``handle_scheduling_failure`` for a decision that writes nothing: the pod keeps the
    nomination its own scheduler gave it (the failure handling may have dropped it)."""
    handle_scheduling_failure(sched, fw, qpi, st, res)
    if sched.queue.location(qpi.pod_info) is not None:
        sched.queue.nominator.add(qpi.pod_info)
