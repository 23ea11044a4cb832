"""GangScheduling (v1.37.2 framework/plugins/gangscheduling, without CompositePodGroups)."""

from __future__ import annotations

from collections.abc import Iterable

from ksched.api.objects import ObjectMeta
from ksched.api.workload import (
    BasicSchedulingPolicy,
    GangSchedulingPolicy,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
)
from ksched.cache import Cache
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import (
    PlacementFeasiblePlugin,
    QueueingHint,
    extension_points_of,
)
from ksched.framework.podgroup import PlacementProgress, PodGroupInfo
from ksched.framework.status import Code
from ksched.framework.types import PodInfo
from ksched.framework.waiting_pods import WaitingPod
from ksched.plugins import builtin_plugin
from ksched.plugins.gangscheduling import PERMIT_TIMEOUT, GangScheduling
from tests.factories import make_node, make_pod


def member(name: str, group: str = "g", node: str = "") -> PodInfo:
    return make_pod(
        name, uid=f"uid-{name}", node_name=node, schedulingGroup={"podGroupName": group}
    )


def pod_group(name: str = "g", min_count: int | None = 2, ns: str = "default") -> PodGroup:
    policy = (
        PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count=min_count))
        if min_count is not None
        else PodGroupSchedulingPolicy(basic=BasicSchedulingPolicy())
    )
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace=ns), spec=PodGroupSpec(scheduling_policy=policy)
    )


class Activator:
    def __init__(self) -> None:
        self.activated: list[str] = []

    def activate(self, pods: Iterable[PodInfo]) -> None:
        self.activated.extend(p.name for p in pods)


class Env:
    def __init__(self) -> None:
        self.cache = Cache(generic_workload=True)
        self.cache.add_node(make_node("n1"))
        self.activator = Activator()
        self.handle = Handle(pod_group_manager=self.cache, activator=self.activator)
        self.plugin = GangScheduling(handle=self.handle)

    def sync(self) -> None:
        self.cache.update_snapshot(self.handle.snapshot)


def test_registered_as_a_builtin_at_its_extension_points() -> None:
    assert builtin_plugin("GangScheduling") is GangScheduling
    assert {"preEnqueue", "permit"} <= set(extension_points_of(GangScheduling))
    # the placement points join extension_points_of with the pod-group cycle
    assert GangScheduling.placement_feasible is not PlacementFeasiblePlugin.placement_feasible


def test_pre_enqueue_waits_for_the_pod_group_then_for_min_count_members() -> None:
    env = Env()
    a, b = member("a"), member("b")
    assert env.plugin.pre_enqueue(make_pod("solo")) is None
    env.cache.add_pod_group_member(a)
    st = env.plugin.pre_enqueue(a)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == 'waiting for pods\'s pod group "g" to appear in scheduling queue'
    env.cache.add_pod_group(pod_group(min_count=2))
    st = env.plugin.pre_enqueue(a)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == "waiting for minCount pods from a gang to appear in scheduling queue"
    env.cache.add_pod_group_member(b)
    assert env.plugin.pre_enqueue(a) is None


def test_pre_enqueue_lets_a_basic_groups_pods_through() -> None:
    env = Env()
    env.cache.add_pod_group(pod_group(min_count=None))
    assert env.plugin.pre_enqueue(member("a")) is None


def test_events_it_registers() -> None:
    events = [(e.event.resource, e.event.action) for e in GangScheduling().events_to_register()]
    assert events == [
        ("UnscheduledPod", "Add"),
        ("AssignedPod", "Add"),
        ("PodGroup", "Add"),
        ("PodGroup", "Update"),
    ]


def test_a_pod_added_to_the_same_group_queues() -> None:
    hint = GangScheduling._pod_added
    a = member("a")
    assert hint(a, None, member("b")) == QueueingHint.QUEUE
    assert hint(a, None, member("c", group="other")) == QueueingHint.SKIP
    assert hint(a, None, make_pod("solo")) == QueueingHint.SKIP
    assert hint(make_pod("solo"), None, member("b")) == QueueingHint.SKIP
    other_ns = make_pod("d", namespace="x", schedulingGroup={"podGroupName": "g"})
    assert hint(a, None, other_ns) == QueueingHint.SKIP


def test_the_pods_own_pod_group_added_queues() -> None:
    hint = GangScheduling._pod_group_added
    a = member("a")
    assert hint(a, None, pod_group("g")) == QueueingHint.QUEUE
    assert hint(a, None, pod_group("h")) == QueueingHint.SKIP
    assert hint(a, None, pod_group("g", ns="x")) == QueueingHint.SKIP
    assert hint(make_pod("solo"), None, pod_group("g")) == QueueingHint.SKIP


def test_only_a_lower_min_count_of_the_pods_gang_queues() -> None:
    hint = GangScheduling._pod_group_updated
    a = member("a")
    assert hint(a, pod_group(min_count=3), pod_group(min_count=2)) == QueueingHint.QUEUE
    assert hint(a, pod_group(min_count=2), pod_group(min_count=2)) == QueueingHint.SKIP
    assert hint(a, pod_group(min_count=2), pod_group(min_count=3)) == QueueingHint.SKIP
    assert hint(a, pod_group(min_count=3), pod_group(min_count=None)) == QueueingHint.SKIP
    lower_other = (pod_group("h", min_count=3), pod_group("h", min_count=2))
    assert hint(a, *lower_other) == QueueingHint.SKIP


def test_permit_waits_and_activates_the_rest_until_the_quorum_then_allows_all() -> None:
    env = Env()
    env.cache.add_pod_group(pod_group(min_count=2))
    a, b = member("a"), member("b")
    for p in (a, b):
        env.cache.add_pod_group_member(p)
    env.cache.assume_pod(a, "n1")
    env.sync()
    st, timeout = env.plugin.permit(CycleState(), a, "n1")
    assert st is not None and st.code == Code.WAIT
    assert st.message() == "waiting for minCount pods from a gang to be scheduled"
    assert timeout == PERMIT_TIMEOUT == 300.0
    assert env.activator.activated == ["b"]
    waiting = WaitingPod(a, "n1", {"GangScheduling": timeout})
    env.handle.waiting_pods.add(waiting)
    env.cache.assume_pod(b, "n1")
    env.sync()
    st, timeout = env.plugin.permit(CycleState(), b, "n1")
    assert st is None and timeout == 0.0
    assert waiting.done and waiting.status is not None and waiting.status.is_success()


def test_permit_lets_pods_outside_gangs_through() -> None:
    env = Env()
    env.cache.add_pod_group(pod_group(min_count=None))
    a = member("a")
    env.cache.add_pod_group_member(a)
    env.sync()
    assert env.plugin.permit(CycleState(), a, "n1") == (None, 0.0)
    assert env.plugin.permit(CycleState(), make_pod("solo"), "n1") == (None, 0.0)


def test_permit_errs_without_the_pod_group_in_the_snapshot() -> None:
    env = Env()
    a = member("a")
    env.cache.add_pod_group_member(a)
    env.sync()
    st, _ = env.plugin.permit(CycleState(), a, "n1")
    assert st is not None and st.code == Code.ERROR
    assert st.message() == (
        "failed to get podGroup default/g: pod group object not found for pod group "
        "podgroup/default/g"
    )


def test_placement_feasible_by_progress_against_min_count() -> None:
    plugin = GangScheduling()
    group = PodGroupInfo("default", "g", pod_group(min_count=3))

    def judge(remaining: int, scheduled: int) -> tuple[Code, str]:
        st = plugin.placement_feasible(CycleState(), group, PlacementProgress(remaining, scheduled))
        return (Code.SUCCESS, "") if st is None else (st.code, st.message())

    assert judge(1, 1) == (
        Code.UNSCHEDULABLE,
        "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining",
    )
    assert judge(2, 1) == (Code.WAIT, "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining")
    assert judge(0, 3) == (Code.SUCCESS, "")
    basic = PodGroupInfo("default", "g", pod_group(min_count=None))
    st = plugin.placement_feasible(CycleState(), basic, PlacementProgress(0, 0))
    assert st is not None and st.message() == (
        "minCount (1) cannot be satisfied: 0 scheduled, 0 remaining"
    )
