"""The one scheduling loop (``scheduler.loop``) under each kind of policy: stopping drains
the bindings in flight, fencing cancels them at the lease's end and takes no more pods,
deciding only (shadow mode) requeues a failed pod exactly as a binding scheduler does,
and the simulator's settle waits on the loop's progress."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import pytest

from ksched.framework.handle import Handle
from ksched.queue.scheduling_queue import UNSCHEDULABLE, Entity, QueuedPodInfo
from ksched.scheduler.cycle_result import CycleResult
from ksched.scheduler.loop import Decided, LoopMode, RealTime, run_loop
from ksched.scheduler.scheduler import Progress, Scheduler
from ksched.util.clock import FakeClock
from tests.scheduler.test_binding_cycle import Harness


class _Once:
    """Decide what is queued now, in ``mode``, then end the loop."""

    drain_timeout: float | None = 0.0
    defer_api_calls = False

    def __init__(self, mode: LoopMode) -> None:
        self.mode = mode
        self.decided: list[Decided] = []

    async def pass_time(self, sched: Scheduler) -> None:
        return None

    async def next_entity(self, sched: Scheduler) -> Entity | None:
        return sched.queue.pop_nowait()

    async def after_decision(self, sched: Scheduler, entity: Entity, decided: Decided) -> None:
        self.decided.append(decided)


async def _until(cond: Callable[[], bool]) -> None:
    with anyio.fail_after(5):
        while not cond():
            await anyio.lowlevel.checkpoint()


@pytest.mark.anyio
async def test_stop_takes_no_more_pods_and_lets_the_bindings_in_flight_finish() -> None:
    h = Harness()
    h.binder.hold = anyio.Event()
    h.add("p0")
    h.add("p1")
    done = anyio.Event()

    async def loop() -> None:
        await run_loop(h.sched, RealTime(drain_timeout=None))
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(loop)
        await _until(lambda: h.binder.current == 2)
        h.sched.stop()
        h.add("late")
        for _ in range(20):
            await anyio.lowlevel.checkpoint()
        assert not done.is_set()  # draining: both bindings still held
        h.binder.hold.set()
        with anyio.fail_after(5):
            await done.wait()
    assert sorted(h.cluster.bound) == ["p0", "p1"]
    assert h.sched.in_flight_bindings == 0
    assert h.sched.loop.task_group is None  # nothing may start in the drained group


@pytest.mark.anyio
async def test_stop_gives_the_bindings_only_the_drain_timeout() -> None:
    h = Harness()
    h.binder.hold = anyio.Event()  # never set: the binding outlives the timeout
    h.add("p0")
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_loop, h.sched, RealTime(drain_timeout=0.05))
        await _until(lambda: h.binder.current == 1)
        h.sched.stop()
    assert h.cluster.bound == {} and h.binder.current == 0
    assert h.sched.in_flight_bindings == 0


@pytest.mark.anyio
async def test_fencing_cancels_the_bindings_at_the_lease_end_and_pops_nothing_more() -> None:
    h = Harness()
    h.binder.hold = anyio.Event()
    h.add("p0")
    async with anyio.create_task_group() as tg:
        # no drain limit of its own: only the fence ends the held binding
        tg.start_soon(run_loop, h.sched, RealTime(drain_timeout=None))
        await _until(lambda: h.binder.current == 1)
        h.sched.fence(anyio.current_time() + 0.05)
        h.add("p1")  # arrives after the lease is lost: never popped
    assert h.cluster.bound == {} and h.binder.current == 0
    assert h.sched.queue.pending_counts()["active"] == 1


@pytest.mark.anyio
async def test_a_scheduler_fenced_before_its_loop_starts_decides_nothing() -> None:
    h = Harness()
    h.add("p0")
    h.sched.fence(None)
    policy = _Once(LoopMode.BIND)
    with anyio.fail_after(5):
        await run_loop(h.sched, policy)
    assert policy.decided == [] and h.cluster.bound == {}


def _failed(mode: LoopMode) -> tuple[Harness, QueuedPodInfo, list[Decided]]:
    h = Harness(points={"preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"]})
    pod = h.add("big", cpu="100")  # fits nowhere: n0 has 64
    policy = _Once(mode)

    async def main() -> None:
        await run_loop(h.sched, policy)

    anyio.run(main, backend="asyncio")
    (qpi,) = [q for q in h.sched.queue.unschedulable_pods() if q.pod_info.uid == pod.uid]
    return h, qpi, policy.decided


@pytest.mark.parametrize("shadow", [LoopMode.DECIDE, LoopMode.DRY_RUN])
def test_deciding_only_requeues_a_failed_pod_as_the_binding_scheduler_does(
    shadow: LoopMode,
) -> None:
    """Shadow mode (and ``testing.schedule``'s dry run) go through the same failure
    handling: the same pool, the same rejecting plugins, the same report. (No PostFilter
    here: shadow mode runs none, so its message would lack the preemption's words.)"""
    bind, bind_qpi, _ = _failed(LoopMode.BIND)
    other, other_qpi, decided = _failed(shadow)
    assert bind.where(bind_qpi.pod_info) == other.where(other_qpi.pod_info) == UNSCHEDULABLE
    assert other_qpi.unschedulable_plugins == bind_qpi.unschedulable_plugins
    assert other_qpi.unschedulable_plugins == {"NodeResourcesFit"}
    assert other_qpi.pending_plugins == bind_qpi.pending_plugins
    assert other_qpi.attempts == bind_qpi.attempts == 1
    assert other.out.failed == bind.out.failed  # the same FailedScheduling message
    (res,) = decided
    assert isinstance(res, CycleResult) and res.fit_error is not None


def test_deciding_only_places_nothing() -> None:
    """A pod that fits leaves the queue, decided, with nothing assumed or bound."""
    h = Harness()
    pod = h.add("small")
    policy = _Once(LoopMode.DECIDE)

    async def main() -> None:
        await run_loop(h.sched, policy)

    anyio.run(main, backend="asyncio")
    (res,) = policy.decided
    assert isinstance(res, CycleResult) and res.node == "n0" and res.assumed is None
    assert h.where(pod) is None and not h.sched.cache.is_assumed(pod)
    assert h.cluster.bound == {} and h.sched.in_flight_bindings == 0


@pytest.mark.anyio
async def test_progress_wakes_its_waiter_on_each_notification_until_done() -> None:
    progress = Progress()
    state = {"n": 0}
    checks: list[int] = []

    def done() -> bool:
        checks.append(state["n"])
        return state["n"] >= 2

    async with anyio.create_task_group() as tg:
        tg.start_soon(progress.until, done)
        for _ in range(2):
            await anyio.lowlevel.checkpoint()
            state["n"] += 1
            progress.notify()
    assert checks == [0, 1, 2]  # checked once at the start, then once per notification


@pytest.mark.anyio
async def test_a_parked_binding_cycle_tells_the_loop() -> None:
    clock = FakeClock()
    told: list[int] = []
    handle = Handle(clock=clock)
    handle.on_park = lambda: told.append(handle.parked)
    async with anyio.create_task_group() as tg:
        tg.start_soon(handle.park, 5.0)
        await _until(lambda: clock.sleeping == 1)
        assert told == [1] and handle.parked == 1
        clock.advance(5.0)
    assert handle.parked == 0
