"""DefaultPreemption inside the scheduler: nomination, eviction of the victims, the
preemptor held back (PreEnqueue) while they go, then scheduled on its nominated node;
nominations cleared when no longer meaningful. FakeClock only; nothing sleeps."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.abc
import msgspec
import pytest

from ksched.api.objects import PodCondition
from ksched.config import load_config_data
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import BindError, NullCluster
from ksched.framework.interface import PermitPlugin
from ksched.framework.registry import Registry
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.plugins import register_builtins
from ksched.queue.scheduling_queue import ACTIVE_Q, UNSCHEDULABLE
from ksched.scheduler.cycle_result import CycleResult
from ksched.scheduler.dispatch import schedule_entity
from ksched.scheduler.schedule_one import handle_scheduling_failure
from ksched.scheduler.scheduler import Scheduler
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class HoldAtPermit(PermitPlugin):
    """Pods labelled hold=yes wait at Permit (until preempted, in these tests)."""

    name = "HoldAtPermit"

    def permit(
        self, state: CycleState, pod: PodInfo, node_name: str
    ) -> tuple[Status | None, float]:
        if pod.labels.get("hold") == "yes":
            return Status(Code.WAIT), 600.0
        return None, 0.0


class Cluster(NullCluster):
    """The API server: writes update its pods and echo back as watch events. Deletions
    can be held (``hold``) or made to fail (``fail``), condition patches too
    (``fail_condition``). ``writes`` lists the victim writes in order."""

    def __init__(self) -> None:
        self.pods: dict[str, PodInfo] = {}
        self.sched: Scheduler | None = None
        self.deleted: list[str] = []
        self.started: list[str] = []  # deletions begun, held or not
        self.nominations: list[tuple[str, str]] = []
        self.writes: list[tuple[str, str]] = []
        self.hold: anyio.Event | None = None
        self.fail: set[str] = set()
        self.fail_condition: set[str] = set()

    def create(self, pod: PodInfo) -> None:
        assert self.sched is not None
        self.pods[pod.uid] = pod
        self.sched.on_pod_add(pod)

    def remove(self, pod: PodInfo) -> None:
        assert self.sched is not None
        self.sched.on_pod_delete(self.pods.pop(pod.uid))

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
        self.sched.on_pod_update(cur, new)

    async def delete_pod(self, pod: PodInfo) -> None:
        assert self.sched is not None
        self.started.append(pod.name)
        if self.hold is not None:
            await self.hold.wait()
        if pod.name in self.fail:
            raise RuntimeError("etcdserver: request timed out")
        cur = self.pods.pop(pod.uid, None)
        if cur is not None:
            self.deleted.append(cur.name)
            self.writes.append(("delete", cur.name))
            self.sched.on_pod_delete(cur)

    async def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        assert self.sched is not None
        self.nominations.append((pod.name, node_name))
        cur = self.pods.get(pod.uid)
        if cur is None:
            return
        status = msgspec.structs.replace(cur.pod.status, nominated_node_name=node_name)
        new = cur.with_pod(msgspec.structs.replace(cur.pod, status=status))
        self.pods[pod.uid] = new
        self.sched.on_pod_update(cur, new)

    async def set_pod_condition(self, pod: PodInfo, condition: PodCondition) -> bool:
        assert self.sched is not None
        if pod.name in self.fail_condition:
            raise RuntimeError("etcdserver: request timed out")
        cur = self.pods.get(pod.uid)
        if cur is None:
            return False
        self.writes.append(("condition", cur.name))
        conds = [c for c in cur.pod.status.conditions if c.type != condition.type]
        status = msgspec.structs.replace(cur.pod.status, conditions=[*conds, condition])
        new = cur.with_pod(msgspec.structs.replace(cur.pod, status=status))
        self.pods[pod.uid] = new
        self.sched.on_pod_update(cur, new)
        return True

    async def get_object(self, api_path: str) -> dict[str, Any] | None:
        return None


class Harness:
    def __init__(self, *, nodes: int = 1, cpu: str = "4") -> None:
        self._started = 0
        reg = Registry()
        register_builtins(reg)
        reg.register(HoldAtPermit.name, HoldAtPermit, "tests")
        data = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "ksched",
                    "plugins": {"permit": {"enabled": [{"name": "HoldAtPermit"}]}},
                }
            ],
        }
        cfg, _ = load_config_data(data, "test", None)
        self.clock = FakeClock()
        self.cluster = Cluster()
        self.sched = Scheduler(
            cfg, reg, cluster=self.cluster, clock=self.clock, seed=1, assumed_ttl=0
        )
        self.cluster.sched = self.sched
        self.fw = self.sched.frameworks["ksched"]
        for i in range(nodes):
            self.sched.on_node_add(make_node(f"n{i}", cpu=cpu, memory="8Gi"))

    def running(self, name: str, node: str, cpu: str, prio: int = 0, **kw: Any) -> PodInfo:
        """A running pod, started one second after the previous one: its kubelet set
        ``startTime`` (unstarted pods of one priority order as upstream's ``time.Now()``
        makes them, which is not what these tests are about)."""
        self._started += 1
        pod = make_pod(name, cpu=cpu, node_name=node, priority=prio, **kw)
        status = msgspec.structs.replace(
            pod.pod.status, start_time=f"2025-01-01T00:00:{self._started:02d}Z"
        )
        pod = pod.with_pod(msgspec.structs.replace(pod.pod, status=status))
        self.cluster.create(pod)
        return pod

    def pending(self, name: str, cpu: str, prio: int = 0, **kw: Any) -> PodInfo:
        pod = make_pod(name, cpu=cpu, priority=prio, **kw)
        self.cluster.create(pod)
        return pod

    def current(self, pod: PodInfo) -> PodInfo:
        return self.cluster.pods[pod.uid]

    async def settle(self) -> None:
        for _ in range(200):
            await anyio.lowlevel.checkpoint()

    async def attempt(self, tg: anyio.abc.TaskGroup) -> PodInfo:
        qpi = self.sched.queue.pop_nowait()
        assert qpi is not None
        self.sched.loop.task_group = tg  # the loop's task group runs the evictions
        await schedule_entity(self.sched, qpi, tg)
        await self.settle()
        return qpi.pod_info

    async def drive(self, tg: anyio.abc.TaskGroup, attempts: int = 50) -> None:
        q = self.sched.queue
        self.sched.loop.task_group = tg
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
            if not deadlines:
                return
            self.clock.set(min(deadlines))
            q.flush_backoff_completed()


async def test_preemptor_is_nominated_and_then_scheduled_on_the_nominated_node() -> None:
    h = Harness(nodes=2)
    h.running("low-0", "n0", "4")
    h.running("low-1", "n1", "3", prio=10)
    high = h.pending("high", "2", prio=1000)
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        # n0's victim has the lower priority; the nomination is in memory and the API.
        assert h.sched.queue.nominator.nominated_node(high) == "n0"
        assert h.current(high).pod.status.nominated_node_name == "n0"
        assert h.cluster.deleted == ["low-0"]
        assert h.sched.preemptions == {high.uid: ["default/low-0"]}
        await h.drive(tg)
        tg.cancel_scope.cancel()
    assert h.current(high).node_name == "n0"
    assert len(h.sched.queue.nominator) == 0  # cleared once bound
    assert h.sched.preempting == {}


async def test_preemptor_is_held_back_while_its_victims_are_evicted() -> None:
    h = Harness(nodes=1)
    h.running("low-a", "n0", "2")
    h.running("low-b", "n0", "2")
    high = h.pending("high", "4", prio=1000)
    h.cluster.hold = anyio.Event()
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        assert set(h.sched.preempting) == {high.uid}
        # A node that would fit arrives: the pod would back off, but PreEnqueue (run on
        # entering backoffQ, SchedulerPopFromBackoffQ) holds it instead of letting it be
        # retried mid-eviction.
        h.sched.on_node_add(make_node("n1", cpu="8", memory="8Gi"))
        assert h.sched.queue.next_backoff_expiry() is None
        assert h.sched.queue.pop_nowait() is None
        qpi = h.sched.queue.get(high)
        assert qpi is not None and h.sched.queue.location(high) == UNSCHEDULABLE
        assert qpi.gated and qpi.gating_plugin == "DefaultPreemption"
        assert qpi.gating_status is not None and qpi.gating_status.message() == (
            "waiting for the preemption for this pod to be finished"
        )
        h.cluster.hold.set()
        await h.settle()
        # The last victim's deletion requeued it.
        assert h.cluster.deleted == ["low-a", "low-b"]
        assert h.sched.preempting == {}
        assert h.sched.queue.location(high) in (ACTIVE_Q, "backoff")
        await h.drive(tg)
        tg.cancel_scope.cancel()
    assert h.current(high).node_name == "n0"  # the nominated node is tried first


@pytest.mark.parametrize(
    ("failing", "writes"),
    [("delete", [("condition", "low-a")]), ("condition", [])],
)
async def test_failed_eviction_activates_the_preemptor(
    failing: str, writes: list[tuple[str, str]]
) -> None:
    """A failed DisruptionTarget patch fails the eviction too, and skips the deletion."""
    h = Harness(nodes=1)
    h.running("low-a", "n0", "2")
    h.running("stuck", "n0", "2")
    high = h.pending("high", "4", prio=1000)
    if failing == "delete":
        h.cluster.fail = {"low-a"}
    else:
        h.cluster.fail_condition = {"low-a"}
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        tg.cancel_scope.cancel()
    # The first eviction failed: the last one is not attempted and the pod is retried.
    assert h.cluster.writes == writes
    assert h.cluster.deleted == []
    assert h.sched.preempting == {}
    assert h.sched.queue.location(high) == ACTIVE_Q


PREEMPTED_BY_KSCHED = PodCondition(
    type="DisruptionTarget",
    status="True",
    reason="PreemptionByScheduler",
    message="ksched: preempting to accommodate a higher priority pod",
    last_transition_time="2025-01-01T00:00:00Z",
)


def with_condition(pod: PodInfo, cond: PodCondition) -> PodInfo:
    status = msgspec.structs.replace(pod.pod.status, conditions=[cond])
    return pod.with_pod(msgspec.structs.replace(pod.pod, status=status))


async def test_victims_are_marked_disruption_target_before_deletion() -> None:
    """``PreemptPod``: the DisruptionTarget condition, then the deletion, then the event."""
    h = Harness(nodes=1)
    h.running("low-a", "n0", "2")
    h.running("low-b", "n0", "2")
    marked: list[PodCondition] = []
    set_condition = h.cluster.set_pod_condition

    async def spy(pod: PodInfo, cond: PodCondition) -> bool:
        marked.append(cond)
        return await set_condition(pod, cond)

    h.cluster.set_pod_condition = spy  # type: ignore[method-assign]
    high = h.pending("high", "4", prio=1000)
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        tg.cancel_scope.cancel()
    assert h.cluster.writes == [
        ("condition", "low-a"),
        ("delete", "low-a"),
        ("condition", "low-b"),
        ("delete", "low-b"),
    ]
    for cond in marked:
        assert (cond.type, cond.status, cond.reason, cond.message) == (
            "DisruptionTarget",
            "True",
            "PreemptionByScheduler",
            "ksched: preempting to accommodate a higher priority pod",
        )
        assert cond.last_transition_time
    events = [e for e in h.fw.handle.recorder.events if e.reason == "Preempted"]  # type: ignore[attr-defined]
    assert [(e.pod, e.note) for e in events] == [
        ("default/low-a", f"Preempted by pod {high.uid} on node n0"),
        ("default/low-b", f"Preempted by pod {high.uid} on node n0"),
    ]


async def test_victim_already_marked_is_deleted_without_a_new_patch() -> None:
    """The condition is there already (an earlier attempt's deletion failed): upstream's
    ``UpdatePodCondition`` reports no change, so only the deletion is sent."""
    h = Harness(nodes=1)
    h.cluster.create(with_condition(make_pod("low", cpu="4", node_name="n0"), PREEMPTED_BY_KSCHED))
    h.pending("high", "4", prio=1000)
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        tg.cancel_scope.cancel()
    assert h.cluster.writes == [("delete", "low")]


async def test_victim_gone_before_it_is_marked_is_neither_deleted_nor_reported() -> None:
    h = Harness(nodes=1)
    low = h.running("low", "n0", "4")
    del h.cluster.pods[low.uid]  # deleted in the API; the watch has not told us yet
    high = h.pending("high", "4", prio=1000)
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        tg.cancel_scope.cancel()
    assert h.cluster.writes == []
    assert not [e for e in h.fw.handle.recorder.events if e.reason == "Preempted"]  # type: ignore[attr-defined]
    assert h.sched.preempting == {}
    assert h.sched.queue.location(high) == UNSCHEDULABLE  # success: not activated


async def test_victim_waiting_at_permit_is_rejected_not_deleted() -> None:
    h = Harness(nodes=1)
    waiting = h.pending("waiting", "4", labels={"hold": "yes"})
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        wp = h.sched.waiting_pods.get(waiting.uid)
        assert wp is not None and not wp.done
        high = h.pending("high", "4", prio=1000)
        await h.attempt(tg)
        assert wp.done and wp.status is not None
        assert (wp.status.code, wp.status.message()) == (Code.UNSCHEDULABLE, "preempted")
        assert h.cluster.writes == []  # rejected: no condition, no deletion
        assert h.sched.preemptions == {high.uid: ["default/waiting"]}
        await h.drive(tg, attempts=3)
        tg.cancel_scope.cancel()
    assert h.current(high).node_name == "n0"
    assert h.current(waiting).node_name == ""


async def test_lower_priority_nominations_on_the_chosen_node_are_cleared() -> None:
    h = Harness(nodes=1)
    h.running("low", "n0", "4")
    mid = make_pod("mid", cpu="1", priority=500)
    status = msgspec.structs.replace(mid.pod.status, nominated_node_name="n0")
    mid = mid.with_pod(msgspec.structs.replace(mid.pod, status=status))
    h.cluster.create(mid)
    assert h.sched.queue.nominator.nominated_node(mid) == "n0"
    h.pending("high", "4", prio=1000)
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)  # PrioritySort: high first
        tg.cancel_scope.cancel()
    assert ("mid", "") in h.cluster.nominations
    assert h.sched.queue.nominator.nominated_node(mid) == ""


async def test_deleting_the_preemptor_clears_its_nomination() -> None:
    h = Harness(nodes=1)
    h.running("low", "n0", "4")
    high = h.pending("high", "4", prio=1000)
    h.cluster.hold = anyio.Event()
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        assert h.sched.queue.nominator.nominated_node(high) == "n0"
        h.cluster.remove(high)
        assert len(h.sched.queue.nominator) == 0
        h.cluster.hold.set()
        await h.settle()
        tg.cancel_scope.cancel()


async def test_binding_failure_clears_the_nomination() -> None:
    h = Harness(nodes=1)
    pod = make_pod("p", cpu="1")
    status = msgspec.structs.replace(pod.pod.status, nominated_node_name="n0")
    pod = pod.with_pod(msgspec.structs.replace(pod.pod, status=status))
    h.cluster.create(pod)
    qpi = h.sched.queue.pop_nowait()
    assert qpi is not None and h.sched.queue.nominator.nominated_node(pod) == "n0"
    handle_scheduling_failure(h.sched, h.fw, qpi, Status(Code.ERROR, "bind: boom"), None)
    assert h.sched.queue.nominator.nominated_node(pod) == ""


async def test_unschedulable_without_a_post_filter_result_keeps_the_status_nomination() -> None:
    """A FitError whose PostFilter returned no result (ModeNoop) keeps what the status says."""
    h = Harness(nodes=1)
    h.running("low", "n0", "4")
    pod = make_pod("never", cpu="4", priority=1000, preemptionPolicy="Never")
    status = msgspec.structs.replace(pod.pod.status, nominated_node_name="n0")
    pod = pod.with_pod(msgspec.structs.replace(pod.pod, status=status))
    h.cluster.create(pod)
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        tg.cancel_scope.cancel()
    assert h.sched.queue.nominator.nominated_node(pod) == "n0"
    assert h.cluster.deleted == []


async def test_no_candidate_clears_the_nomination() -> None:
    h = Harness(nodes=1)
    h.running("peer", "n0", "4")
    pod = make_pod("p", cpu="4")
    status = msgspec.structs.replace(pod.pod.status, nominated_node_name="n0")
    pod = pod.with_pod(msgspec.structs.replace(pod.pod, status=status))
    h.cluster.create(pod)
    seen: list[CycleResult | None] = []

    class Obs:
        def scheduled(self, *a: Any) -> None: ...

        def failed(
            self, pod: PodInfo, profile: str, reason: str, message: str, result: CycleResult | None
        ) -> None:
            seen.append(result)

    h.sched.observer = Obs()
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        tg.cancel_scope.cancel()
    assert h.sched.queue.nominator.nominated_node(pod) == ""
    (res,) = seen
    assert res is not None and res.post_filter is not None
    assert res.post_filter.nominated_node_name == ""
    assert res.message == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
        "1 No preemption victims found for incoming pod."
    )


async def test_victims_but_the_last_are_evicted_at_once_then_the_last() -> None:
    """``prepareCandidateAsync``: every victim but the last is deleted in parallel; the
    last only once they are all done."""
    h = Harness(nodes=1)
    for i in range(3):
        h.running(f"low-{i}", "n0", "1")
    h.pending("high", "4", prio=1000)
    h.cluster.hold = anyio.Event()
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        head = list(h.cluster.started)
        assert len(head) == 2 and h.cluster.deleted == []  # both in flight together
        h.cluster.hold.set()
        await h.settle()
        tg.cancel_scope.cancel()
    (last,) = {"low-0", "low-1", "low-2"} - set(head)
    assert h.cluster.started == [*head, last]
    assert h.cluster.deleted[-1] == last and len(h.cluster.deleted) == 3


async def test_a_failed_eviction_spares_the_last_victim() -> None:
    h = Harness(nodes=1)
    for i in range(3):
        h.running(f"low-{i}", "n0", "1")
    high = h.pending("high", "4", prio=1000)
    h.cluster.fail = {"low-0", "low-1", "low-2"}
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        tg.cancel_scope.cancel()
    assert len(h.cluster.started) == 2 and h.cluster.deleted == []
    # the preemptor is not left waiting for deletions that will not come
    assert h.sched.queue.location(high) in ("active", "backoff")
