"""Per-group pod states in the cache (podgroupstate.go) and their copies in snapshots."""

from __future__ import annotations

from ksched.api.objects import ObjectMeta
from ksched.api.workload import (
    GangSchedulingPolicy,
    PodGroup,
    PodGroupSchedulingPolicy,
    PodGroupSpec,
)
from ksched.cache import Cache
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import PodInfo
from tests.factories import make_node, make_pod


def member(name: str, node: str = "", group: str = "g") -> PodInfo:
    return make_pod(
        name, uid=f"uid-{name}", node_name=node, schedulingGroup={"podGroupName": group}
    )


def pod_group(name: str = "g", min_count: int = 2) -> PodGroup:
    return PodGroup(
        metadata=ObjectMeta(name=name, namespace="default"),
        spec=PodGroupSpec(
            scheduling_policy=PodGroupSchedulingPolicy(gang=GangSchedulingPolicy(min_count))
        ),
    )


def cache() -> Cache:
    c = Cache(generic_workload=True)
    c.add_node(make_node("n1"))
    return c


def test_a_member_goes_unscheduled_assumed_assigned() -> None:
    c = cache()
    a, b = member("a"), member("b")
    c.add_pod_group_member(a)
    c.add_pod_group_member(b)
    st = c.pod_group_state("default", "g")
    assert st is not None
    assert st.all_pods_count() == 2
    assert set(st.unscheduled_pods()) == {"a", "b"}
    assert st.scheduled_pods_count() == 0
    c.assume_pod(a, "n1")
    assert st.assumed_pods() == {"uid-a"}
    assert set(st.unscheduled_pods()) == {"b"}
    assert [p.metadata.name for p in st.scheduled_pods()] == ["a"]
    bound = member("a", node="n1")
    c.add_pod(bound)  # the binding observed
    assert st.assumed_pods() == frozenset() and st.assigned_pods() == {"uid-a"}
    assert st.scheduled_pods_count() == 1
    assert [p.name for p in st.unscheduled_pod_infos()] == ["b"]


def test_a_forgotten_member_is_unscheduled_again() -> None:
    c = cache()
    a = member("a")
    c.add_pod_group_member(a)
    c.assume_pod(a, "n1")
    c.forget_pod(a)
    st = c.pod_group_state("default", "g")
    assert st is not None
    assert st.scheduled_pods_count() == 0 and set(st.unscheduled_pods()) == {"a"}


def test_the_state_lives_while_its_pod_group_or_a_member_does() -> None:
    c = cache()
    a = member("a")
    pg = pod_group()
    c.add_pod_group_member(a)
    assert c.pod_group("default", "g") is None  # members only: no object yet
    c.add_pod_group(pg)
    assert c.pod_group("default", "g") is pg
    c.remove_pod_group_member(a)
    st = c.pod_group_state("default", "g")
    assert st is not None and st.all_pods_count() == 0
    c.remove_pod_group(pg)
    assert c.pod_group_state("default", "g") is None


def test_bound_members_from_the_watch_are_assigned_and_removed_with_the_pod() -> None:
    c = cache()
    a = member("a", node="n1")
    c.add_pod(a)
    st = c.pod_group_state("default", "g")
    assert st is not None and st.assigned_pods() == {"uid-a"}
    c.remove_pod(a)
    assert c.pod_group_state("default", "g") is None


def test_updating_the_pod_group_keeps_the_members() -> None:
    c = cache()
    c.add_pod_group_member(member("a"))
    old, new = pod_group(min_count=2), pod_group(min_count=1)
    c.add_pod_group(old)
    c.update_pod_group(old, new)
    st = c.pod_group_state("default", "g")
    assert st is not None and st.pod_group is new and st.all_pods_count() == 1


def test_the_snapshot_gets_a_copy_that_a_cycle_may_change_alone() -> None:
    c = cache()
    a = member("a")
    c.add_pod_group_member(a)
    c.add_pod_group(pod_group())
    snap = Snapshot()
    c.update_snapshot(snap)
    copy = snap.pod_group_state("default", "g")
    live = c.pod_group_state("default", "g")
    assert copy is not None and live is not None and copy is not live
    assert snap.pod_group("default", "g") is live.pod_group
    c.update_snapshot(snap)
    assert snap.pod_group_state("default", "g") is copy  # unchanged generation: kept
    copy.assume_pod(a)
    assert copy.scheduled_pods_count() == 1 and live.scheduled_pods_count() == 0
    c.update_snapshot(snap)  # the cycle's own changes do not outlive it
    again = snap.pod_group_state("default", "g")
    assert again is not None and again.scheduled_pods_count() == 0
    c.add_pod_group_member(member("b"))
    c.update_snapshot(snap)
    fresh = snap.pod_group_state("default", "g")
    assert fresh is not again and fresh is not None and fresh.all_pods_count() == 2
    c.remove_pod_group(pod_group())
    c.remove_pod_group_member(a)
    c.remove_pod_group_member(member("b"))
    c.update_snapshot(snap)
    assert snap.pod_group_state("default", "g") is None


def test_without_generic_workload_members_are_ordinary_pods() -> None:
    c = Cache()
    c.add_node(make_node("n1"))
    c.add_pod_group_member(member("a"))
    c.add_pod(member("b", node="n1"))
    c.add_pod_group(pod_group())
    assert c.pod_group_states == {}
    assert c.pod_group_state("default", "g") is None
    snap = Snapshot()
    c.update_snapshot(snap)
    assert snap.pod_group_state("default", "g") is None
