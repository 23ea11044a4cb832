"""The scheduler's informer handlers with GenericWorkload (v1.37): pending members go to
the cache's pod-group state before the queue, PodGroup events reach cache, queue and the
queueing hints, and plugins see the cache through ``handle.pod_group_manager``."""

from __future__ import annotations

from ksched.framework.handle import NullCluster
from ksched.queue.podgroups import QueuedPodGroupInfo
from ksched.scheduler.scheduler import Scheduler
from ksched.util.clock import FakeClock
from tests.factories import make_node
from tests.queue._util import config, registry
from tests.queue.test_pod_groups import member, pod_group


def scheduler(version: str = "1.37") -> Scheduler:
    gating = ["GangScheduling"] if version == "1.37" else []  # v1.36's plugin is not ours
    cfg = config({"preEnqueue": gating}, version, {"GenericWorkload": True})
    sched = Scheduler(cfg, registry(), cluster=NullCluster(), clock=FakeClock(), assumed_ttl=0)
    sched.on_node_add(make_node("n1"))
    return sched


def test_pod_group_events_reach_cache_queue_and_hints() -> None:
    sched = scheduler()
    assert sched.frameworks["ksched"].handle.pod_group_manager is sched.cache
    a, b = member("a"), member("b")
    sched.on_pod_add(a)
    sched.on_pod_add(b)
    st = sched.cache.pod_group_state("default", "g")
    assert st is not None and st.all_pods_count() == 2
    assert sched.queue.location(a) == "incomplete"
    old = pod_group(min_count=3, rv="1")
    sched.on_pod_group_add(old)
    assert sched.cache.pod_group("default", "g") is old
    assert sched.queue.location(a) == "unschedulable"  # gated: 2 of 3
    new = pod_group(min_count=2, rv="2")
    sched.on_pod_group_update(old, new)  # minCount lowered: GangScheduling's hint
    group = sched.queue.pop_nowait()
    assert isinstance(group, QueuedPodGroupInfo) and len(group.members) == 2
    sched.on_pod_group_delete(new)
    assert sched.cache.pod_group("default", "g") is None
    assert sched.cache.pod_group_state("default", "g") is not None  # members remain


def test_a_deleted_pending_member_leaves_the_group_state() -> None:
    sched = scheduler()
    a = member("a")
    sched.on_pod_add(a)
    sched.on_pod_delete(a)
    assert sched.cache.pod_group_state("default", "g") is None
    assert sched.queue.location(a) is None


def test_at_1_36_members_are_ordinary_pods() -> None:
    sched = scheduler("1.36")
    a = member("a")
    sched.on_pod_add(a)
    assert sched.cache.pod_group_states == {}
    assert sched.queue.location(a) == "active"
