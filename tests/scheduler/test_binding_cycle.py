"""The binding cycle (WaitOnPermit, PreBind, Bind, PostBind) beside the scheduling loop:
Permit allow/reject/timeout, bind failures (retryable or final), the in-flight binding
bound, and what failures do to cache and queue. FakeClock only; nothing sleeps."""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

import anyio
import anyio.abc
import msgspec
import pytest

from ksched.api.objects import PodCondition
from ksched.features import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import BindError, NullCluster
from ksched.framework.interface import (
    BindPlugin,
    ClusterEvent,
    ClusterEventWithHint,
    PermitPlugin,
    PreBindPlugin,
    ReservePlugin,
)
from ksched.framework.registry import Registry
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.plugins import register_builtins
from ksched.queue.scheduling_queue import BACKOFF_Q, UNSCHEDULABLE
from ksched.scheduler.cycle_result import CycleResult
from ksched.scheduler.dispatch import schedule_entity
from ksched.scheduler.loop import RealTime, run_loop
from ksched.scheduler.scheduler import Scheduler
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod
from tests.queue._util import config

pytestmark = pytest.mark.anyio


# -- fake plugins -------------------------------------------------------------------------


class Recorder(ReservePlugin):
    name = "Recorder"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.calls: list[tuple[str, str, str]] = []

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        self.calls.append(("reserve", pod.name, node_name))
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        self.calls.append(("unreserve", pod.name, node_name))


class Waiter(PermitPlugin):
    """Pods labelled wait=yes wait up to 10 s at Permit for someone to allow them."""

    name = "Waiter"

    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        if pod.labels.get("wait") == "yes":
            return Status(Code.WAIT), 10.0
        return None, 0.0

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("Node", "Add"))]


class Quorum(PermitPlugin):
    """Gang scheduling: pods labelled gang=<g> wait at Permit until 3 of the gang are there."""

    name = "Quorum"
    size = 3

    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        assert self.handle is not None
        gang = pod.labels.get("gang")
        if not gang:
            return None, 0.0
        waiting = [wp for wp in self.handle.waiting_pods if wp.pod.labels.get("gang") == gang]
        if len(waiting) + 1 >= self.size:
            for wp in waiting:
                wp.allow(self.name)
            return None, 0.0
        return Status(Code.WAIT), 30.0


class RejectPreBind(PreBindPlugin):
    name = "RejectPreBind"

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        if pod.labels.get("prebind") == "reject":
            return Status(Code.UNSCHEDULABLE, "volume not ready")
        return None

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Work ahead for pods labelled prebind=work|reject; prebind=broken fails."""
        label = pod.labels.get("prebind")
        if label == "broken":
            return Status(Code.ERROR, "cannot tell")
        return None if label in ("work", "reject") else Status(Code.SKIP)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("AssignedPod", "Delete"))]


class FlakyBinder(BindPlugin):
    """Binds through the cluster; can fail chosen pods once, and can hold every bind."""

    name = "FlakyBinder"

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        super().__init__(args, handle)
        self.fail_once: dict[str, BindError] = {}
        self.hold: anyio.Event | None = None
        self.current = 0
        self.peak = 0

    async def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        assert self.handle is not None
        self.current += 1
        self.peak = max(self.peak, self.current)
        try:
            await anyio.lowlevel.checkpoint()  # let other binding cycles interleave
            if self.hold is not None:
                await self.hold.wait()
            err = self.fail_once.pop(pod.name, None)
            if err is not None:
                raise err
            await self.handle.cluster.bind(pod, node_name)
        finally:
            self.current -= 1
        return None


class FakeCluster(NullCluster):
    """The API server: a bind updates the pod and echoes it back as a watch event."""

    def __init__(self) -> None:
        self.pods: dict[str, PodInfo] = {}
        self.sched: Scheduler | None = None
        self.bound: dict[str, str] = {}
        # set_nominated_node calls: (pod, node, already bound then)
        self.nominations: list[tuple[str, str, bool]] = []

    def create(self, pod: PodInfo) -> None:
        assert self.sched is not None
        self.pods[pod.uid] = pod
        self.sched.on_pod_add(pod)

    def remove(self, pod: PodInfo) -> None:
        assert self.sched is not None
        cur = self.pods.pop(pod.uid)
        self.sched.on_pod_delete(cur)

    async def bind(self, pod: PodInfo, node_name: str) -> None:
        assert self.sched is not None
        cur = self.pods.get(pod.uid)
        if cur is None:
            raise BindError(f'pods "{pod.name}" not found', retry=False)
        new = cur.with_pod(
            msgspec.structs.replace(
                cur.pod, spec=msgspec.structs.replace(cur.pod.spec, node_name=node_name)
            )
        )
        self.pods[pod.uid] = new
        self.bound[pod.name] = node_name
        self.sched.on_pod_update(cur, new)

    async def delete_pod(self, pod: PodInfo) -> None:
        return None

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        self.nominations.append((pod.name, node_name, pod.name in self.bound))

    async def set_pod_condition(self, pod: PodInfo, condition: PodCondition) -> bool:
        return True

    async def get_object(self, api_path: str) -> dict[str, Any] | None:
        return None


class Outcomes:
    def __init__(self) -> None:
        self.scheduled: list[str] = []
        self.failed: list[tuple[str, str]] = []


class _Observer:
    def __init__(self, out: Outcomes) -> None:
        self.out = out

    def scheduled(self, pod: PodInfo, node: str, profile: str, attempts: int) -> None:
        self.out.scheduled.append(pod.name)

    def failed(
        self, pod: PodInfo, profile: str, reason: str, message: str, result: CycleResult | None
    ) -> None:
        self.out.failed.append((pod.name, message))


def nominated(pi: PodInfo, node: str) -> PodInfo:
    status = msgspec.structs.replace(pi.pod.status, nominated_node_name=node)
    return pi.with_pod(msgspec.structs.replace(pi.pod, status=status))


# -- harness ----------------------------------------------------------------------------------


class Harness:
    def __init__(
        self,
        *,
        max_in_flight_bindings: int = 64,
        nodes: int = 1,
        gates: Sequence[str] = (),
        version: str | None = None,
        points: dict[str, list[str]] | None = None,
    ) -> None:
        reg = Registry()
        register_builtins(reg)
        for cls in (Recorder, Waiter, Quorum, RejectPreBind, FlakyBinder):
            reg.register(cls.name, cls, "tests")
        cfg = config(
            {
                "reserve": ["Recorder"],
                "permit": ["Waiter", "Quorum"],
                "preBind": ["RejectPreBind"],
                "bind": ["FlakyBinder"],
                **(points or {}),
            }
        )
        cfg.features = set_feature_gates(gates, [version] if version else [])
        self.clock = FakeClock()
        self.cluster = FakeCluster()
        self.out = Outcomes()
        self.sched = Scheduler(
            cfg,
            reg,
            cluster=self.cluster,
            clock=self.clock,
            observer=_Observer(self.out),
            seed=1,
            max_in_flight_bindings=max_in_flight_bindings,
            assumed_ttl=0,
        )
        self.cluster.sched = self.sched
        fw = self.sched.frameworks["ksched"]
        self.recorder: Recorder = fw.plugins["Recorder"]
        self.binder: FlakyBinder = fw.plugins["FlakyBinder"]
        for i in range(nodes):
            self.sched.on_node_add(make_node(f"n{i}", cpu="64", pods=500))

    def add(self, name: str, **kw: Any) -> PodInfo:
        pod = make_pod(name, **kw)
        self.cluster.create(pod)
        return pod

    async def settle(self) -> None:
        """Run binding cycles until each is done or parked at Permit (its timers set)."""
        quiet = 0
        for _ in range(10_000):
            await anyio.lowlevel.checkpoint()
            waiting = sum(1 for wp in self.sched.waiting_pods if not wp.done)
            quiet = quiet + 1 if self.sched.in_flight_bindings <= waiting else 0
            if quiet > 5:
                return
        raise AssertionError("binding cycles did not settle")

    async def schedule_all(self, tg: anyio.abc.TaskGroup) -> None:
        """One scheduling cycle per active pod, without waiting for bindings in between."""
        while (qpi := self.sched.queue.pop_nowait()) is not None:
            await schedule_entity(self.sched, qpi, tg)

    async def drive(
        self, tg: anyio.abc.TaskGroup, attempts: int = 100, advance: bool = True
    ) -> None:
        """Schedule until nothing can happen (jumping virtual time only if ``advance``)."""
        q = self.sched.queue
        while attempts > 0:
            qpi = q.pop_nowait()
            if qpi is not None:
                attempts -= 1
                await schedule_entity(self.sched, qpi, tg)
                await self.settle()
                continue
            await self.settle()
            if q.has_active():
                continue
            deadlines = [
                t for t in (q.next_backoff_expiry(), self.clock.next_deadline()) if t is not None
            ]
            if not advance or not deadlines:
                return
            self.clock.set(min(deadlines))

    def where(self, pod: PodInfo) -> str | None:
        return self.sched.queue.location(pod)


# -- Permit ------------------------------------------------------------------------------------


async def test_permit_wait_then_allow_binds() -> None:
    h = Harness()
    pod = h.add("p", labels={"wait": "yes"})
    async with anyio.create_task_group() as tg:
        await h.drive(tg, advance=False)
        wp = h.sched.waiting_pods.get(pod.uid)
        assert wp is not None and not wp.done
        assert h.sched.cache.is_assumed(pod) and h.where(pod) == "inFlight"
        wp.allow("Waiter")
        await h.settle()
    assert h.cluster.bound == {"p": "n0"} and h.out.scheduled == ["p"]
    assert not h.sched.cache.is_assumed(pod) and h.sched.cache.get_pod(pod) is not None
    assert h.sched.queue.in_flight() == 0 and len(h.sched.waiting_pods) == 0
    assert [c[0] for c in h.recorder.calls] == ["reserve"]


async def test_permit_reject_unreserves_forgets_and_requeues() -> None:
    h = Harness()
    pod = h.add("p", labels={"wait": "yes"})
    async with anyio.create_task_group() as tg:
        await h.drive(tg, advance=False)
        wp = h.sched.waiting_pods.get(pod.uid)
        assert wp is not None
        wp.reject("Waiter", "not now")
        await h.settle()
    assert h.recorder.calls == [("reserve", "p", "n0"), ("unreserve", "p", "n0")]
    assert h.sched.cache.get_pod(pod) is None
    assert h.sched.cache.nodes["n0"].requested.milli_cpu == 0
    assert h.where(pod) == UNSCHEDULABLE
    qpi = h.sched.queue.get(pod)
    assert qpi is not None and qpi.unschedulable_plugins == {"Waiter"}
    assert h.out.failed == [("p", "not now")] and h.cluster.bound == {}
    # nominated while it waited; cleared when the binding cycle failed (clearNominatedNode)
    assert h.cluster.nominations == [("p", "n0", False), ("p", "", False)]


async def test_permit_timeout_rejects_on_virtual_time_counted_from_permit() -> None:
    h = Harness()
    pod = h.add("p", labels={"wait": "yes"})
    async with anyio.create_task_group() as tg:
        qpi = h.sched.queue.pop_nowait()
        assert qpi is not None
        await schedule_entity(h.sched, qpi, tg)  # Permit said Wait at t=0
        h.clock.set(4)  # time passes before the binding cycle gets to wait
        await h.settle()
        assert h.clock.next_deadline() == 10.0
        h.clock.advance_to_next()
        await h.settle()
    assert h.out.failed == [("p", "rejected due to timeout after waiting 10s at plugin Waiter")]
    assert h.where(pod) == UNSCHEDULABLE and h.sched.cache.get_pod(pod) is None
    assert ("unreserve", "p", "n0") in h.recorder.calls


async def test_event_while_waiting_at_permit_sends_the_rejected_pod_to_backoff() -> None:
    h = Harness()
    pod = h.add("p", labels={"wait": "yes"})
    async with anyio.create_task_group() as tg:
        await h.drive(tg, advance=False)
        h.sched.on_node_add(make_node("late"))  # Waiter registered NodeAdd
        wp = h.sched.waiting_pods.get(pod.uid)
        assert wp is not None
        wp.reject("Waiter", "not now")
        await h.settle()
    assert h.where(pod) == BACKOFF_Q


async def test_pod_deleted_while_waiting_is_dropped_everywhere() -> None:
    h = Harness()
    pod = h.add("p", labels={"wait": "yes"})
    async with anyio.create_task_group() as tg:
        await h.drive(tg, advance=False)
        h.cluster.remove(pod)
        await h.settle()
    assert h.where(pod) is None and h.sched.queue.in_flight() == 0
    assert h.sched.cache.get_pod(pod) is None and len(h.sched.waiting_pods) == 0
    assert ("unreserve", "p", "n0") in h.recorder.calls


async def test_gang_larger_than_the_binding_bound_still_assembles() -> None:
    h = Harness(max_in_flight_bindings=1)
    for name in "abc":
        h.add(name, labels={"gang": "g"})
    async with anyio.create_task_group() as tg:
        await h.drive(tg)
    # Waiting at Permit does not hold a binding slot, so the third pod gets scheduled.
    assert h.cluster.bound == {"a": "n0", "b": "n0", "c": "n0"} and h.clock.now() == 0


# -- PreBind / Bind failures ---------------------------------------------------------------------


async def test_bind_failures_requeue_with_backoff_unless_the_pod_is_bound_or_gone(
    logs: list[MutableMapping[str, Any]],
) -> None:
    """Upstream's handleSchedulingFailure: any binding failure (a 409 too) requeues the
    pod; only the informer showing it bound or deleted drops it."""
    h = Harness()
    pods = [h.add(f"p{i}", cpu="1") for i in range(4)]
    h.binder.fail_once["p1"] = BindError("etcd timeout", retry=True)
    h.binder.fail_once["p2"] = BindError("pods p2 already bound", retry=False)
    h.binder.hold = anyio.Event()
    async with anyio.create_task_group() as tg:
        await h.schedule_all(tg)
        with anyio.fail_after(5):
            while h.binder.current < 4:  # all four binds in flight at once
                await anyio.lowlevel.checkpoint()
        h.binder.hold.set()
        await h.settle()
        assert sorted(h.cluster.bound) == ["p0", "p3"]
        unreserved = {c[1] for c in h.recorder.calls if c[0] == "unreserve"}
        assert unreserved == {"p1", "p2"}
        for p in (pods[1], pods[2]):
            assert h.sched.cache.get_pod(p) is None  # forgotten
        assert h.sched.cache.nodes["n0"].requested.milli_cpu == 2000
        assert h.where(pods[1]) == BACKOFF_Q
        assert h.where(pods[2]) == BACKOFF_Q and h.sched.queue.in_flight() == 0
        assert sorted(n for n, _ in h.out.failed) == ["p1", "p2"]
        await h.drive(tg)  # virtual time runs out the backoffs; the retries bind
    assert sorted(h.cluster.bound) == ["p0", "p1", "p2", "p3"]
    # 1 s of backoff, out one 1 s window later (SchedulerPopFromBackoffQ's comparison)
    assert h.clock.now() == 2.0


async def test_prebind_rejection_requeues_and_frees_resources_for_others_only() -> None:
    h = Harness()
    w = h.add("w", labels={"prebind": "reject"})
    async with anyio.create_task_group() as tg:
        await h.drive(tg, attempts=1, advance=False)
        assert h.where(w) == UNSCHEDULABLE
        r = h.add("r", labels={"prebind": "reject"})
        await h.drive(tg, attempts=1, advance=False)
    # r's forgotten resources are an AssignedPodDelete for w, but not for r itself.
    assert h.where(r) == UNSCHEDULABLE
    assert h.where(w) == BACKOFF_Q
    assert h.out.failed == [("w", "volume not ready"), ("r", "volume not ready")]


async def test_prebind_work_or_a_permit_wait_nominates_the_node_before_binding() -> None:
    """NominatedNodeNameForExpectation (v1.36): when a PreBind plugin's pre-flight says it
    has work, or the pod waits at Permit, the node goes to status.nominatedNodeName first;
    a pod that binds at once is not nominated. The differential harness saw kube-scheduler
    do this for pods whose claims VolumeBinding binds."""
    h = Harness()
    h.add("plain")
    h.add("work", labels={"prebind": "work"})
    async with anyio.create_task_group() as tg:
        await h.drive(tg, advance=False)
    assert h.cluster.bound == {"plain": "n0", "work": "n0"}
    assert h.cluster.nominations == [("work", "n0", False)]


async def test_without_nominated_node_name_for_expectation_nothing_is_nominated() -> None:
    """The gate off (upstream's ``nominatedNodeNameForExpectationEnabled``): no pre-flight,
    no nomination, and a pre-flight that would fail is never asked."""
    h = Harness(gates=["NominatedNodeNameForExpectation=false"])
    h.add("work", labels={"prebind": "work"})
    h.add("broken", labels={"prebind": "broken"})
    async with anyio.create_task_group() as tg:
        await h.drive(tg, advance=False)
    assert h.cluster.bound == {"work": "n0", "broken": "n0"}
    assert h.cluster.nominations == []


async def test_prebind_pre_flight_error_fails_the_binding_cycle() -> None:
    h = Harness()
    h.add("broken", labels={"prebind": "broken"})
    async with anyio.create_task_group() as tg:
        await h.drive(tg, attempts=1, advance=False)
    assert h.cluster.bound == {} and h.cluster.nominations == []
    (failed,) = h.out.failed
    assert failed[0] == "broken" and "cannot tell" in failed[1]


async def test_nomination_is_dropped_when_the_pod_is_assumed() -> None:
    h = Harness()
    pod = nominated(make_pod("p"), "n0")
    h.cluster.create(pod)
    assert h.sched.queue.nominator.nominated_node(pod) == "n0"
    async with anyio.create_task_group() as tg:
        await h.drive(tg, advance=False)
    assert len(h.sched.queue.nominator) == 0 and h.cluster.bound == {"p": "n0"}


# -- the in-flight binding bound --------------------------------------------------------------


async def test_max_in_flight_bindings_is_honoured() -> None:
    h = Harness(max_in_flight_bindings=2)
    h.binder.hold = anyio.Event()
    for i in range(5):
        h.add(f"p{i}")
    async with anyio.create_task_group() as tg:
        tg.start_soon(run_loop, h.sched, RealTime())
        with anyio.fail_after(5):
            while h.binder.current < 2:
                await anyio.lowlevel.checkpoint()
            for _ in range(50):
                await anyio.lowlevel.checkpoint()
        # Two binds in flight; the loop waits for a slot with the third pod assumed.
        assert h.binder.current == 2 and h.sched.in_flight_bindings == 2
        assert h.sched.queue.pending_counts()["active"] == 2
        assert h.sched.queue.in_flight() == 3
        h.binder.hold.set()
        with anyio.fail_after(5):
            while len(h.cluster.bound) < 5:
                await anyio.lowlevel.checkpoint()
        h.sched.stop()
    assert h.binder.peak == 2 and sorted(h.out.scheduled) == [f"p{i}" for i in range(5)]
