"""Coscheduling, extension point by extension point, against scheduler-plugins' behaviour."""

from __future__ import annotations

import time
from typing import Any

import pytest
from contrib_helpers import QPI, FakeQueue, make_handle, make_node, make_pod, podgroup, refresh
from ksched.api.objects import InvalidObjectError
from ksched.cache import Cache
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import ClusterEvent, NodeToStatus, QueueingHint
from ksched.framework.registry import PluginArgsError
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.framework.waiting_pods import WaitingPod

from ksched_contrib.coscheduling import PODGROUP_RESOURCE, Coscheduling
from ksched_contrib.podgroup import parse_podgroup, parse_timestamp

# ---- args and PodGroup parsing -----------------------------------------------------------


def test_args_defaults_and_validation() -> None:
    assert Coscheduling.Args.parse("Coscheduling", {}) == Coscheduling.Args(60, 0)
    assert Coscheduling.Args.parse(
        "Coscheduling", {"permitWaitingTimeSeconds": 5, "podGroupBackoffSeconds": 30}
    ) == Coscheduling.Args(5, 30)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"permitWaitingTimeSeconds": 0}, "args.permitWaitingTimeSeconds: must be at least 1"),
        ({"podGroupBackoffSeconds": -1}, "args.podGroupBackoffSeconds: must be at least 0"),
        ({"podGroupBackoffSeconds": "1"}, "args.podGroupBackoffSeconds: must be an integer"),
        ({"kubeConfigPath": "x"}, "args.kubeConfigPath: unknown field"),
    ]
    for data, msg in cases:
        with pytest.raises(PluginArgsError, match=msg):
            Coscheduling.Args.parse("Coscheduling", data)


def test_parse_podgroup() -> None:
    pg = parse_podgroup(
        podgroup(
            "g",
            3,
            namespace="ml",
            created="2024-05-01T10:00:00Z",
            scheduleTimeoutSeconds=30,
            minResources={"cpu": "2"},
        )
    )
    assert (pg.full_name, pg.min_member, pg.schedule_timeout_seconds) == ("ml/g", 3, 30)
    assert pg.min_resources == {"cpu": "2"}
    assert pg.creation_timestamp == parse_timestamp("2024-05-01T10:00:00+00:00") == 1714557600.0
    bare = parse_podgroup({"metadata": {"name": "x"}})
    assert (bare.namespace, bare.min_member, bare.creation_timestamp) == ("default", 0, None)
    assert parse_timestamp("yesterday") is None and parse_timestamp(None) is None
    for spec, msg in [
        ({"minMember": "3"}, "spec.minMember: must be an integer, got '3'"),
        ({"minMember": -1}, "spec.minMember: must be non-negative"),
        ({"scheduleTimeoutSeconds": 1.5}, "spec.scheduleTimeoutSeconds"),
        ({"minResources": ["cpu"]}, "spec.minResources: must be a map"),
    ]:
        with pytest.raises(InvalidObjectError, match=f"PodGroup default/bad: {msg}"):
            parse_podgroup({"metadata": {"name": "bad"}, "spec": spec})


# ---- QueueSort ---------------------------------------------------------------------------


def plugin_with(groups: list[dict[str, Any]], **kw: Any) -> tuple[Coscheduling, Handle, Cache]:
    handle, cache = make_handle(
        [make_node("n1", cpu="4"), make_node("n2", cpu="4")], groups=groups, **kw
    )
    return Coscheduling(None, handle), handle, cache


def test_queue_sort_priority_then_group_age_then_group_name() -> None:
    cs, handle, _ = plugin_with(
        [
            podgroup("old", 2, created="2024-01-01T00:00:00Z"),
            podgroup("new", 2, created="2024-06-01T00:00:00Z"),
            podgroup("also-new", 2, created="2024-06-01T00:00:00Z"),
        ]
    )
    now = handle.clock.now()
    q = {
        "new-1": QPI(make_pod("new-1", group="new"), now),
        "old-2": QPI(make_pod("old-2", group="old"), now),
        "solo": QPI(make_pod("solo"), now),  # queued now: after any group created earlier
        "old-1": QPI(make_pod("old-1", group="old"), now),
        "also-new-1": QPI(make_pod("also-new-1", group="also-new"), now),
        "vip": QPI(make_pod("vip", priority=100), now + 50),
        "new-2": QPI(make_pod("new-2", group="new"), now),
    }
    order = [n for n, _ in sorted(q.items(), key=lambda kv: cs.sort_key(kv[1]))]
    assert order == ["vip", "old-1", "old-2", "also-new-1", "new-1", "new-2", "solo"]
    # less() is the same order.
    for a in q.values():
        for b in q.values():
            assert cs.less(a, b) == (cs.sort_key(a) < cs.sort_key(b))


def test_queue_sort_missing_group_or_timestamp() -> None:
    cs, _, _ = plugin_with([podgroup("undated", 2), podgroup("bad", 2, scheduleTimeoutSeconds="x")])
    undated = QPI(make_pod("u", group="undated"), 5.0)
    assert cs.sort_key(undated)[1] == float("-inf")  # Go's zero time: first
    # Without a PodGroup object (or with a malformed one), the pod's own queue time counts.
    ghost = QPI(make_pod("g", group="ghost"), 5.0, initial_attempt_timestamp=3.0)
    assert cs.sort_key(ghost) == (0, 3.0, "default/ghost", "default/g")
    assert cs.sort_key(QPI(make_pod("b", group="bad"), 7.0))[1] == 7.0


def test_queue_sort_maps_creation_time_onto_the_scheduler_clock() -> None:
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 100))
    cs, handle, _ = plugin_with([podgroup("g", 2, created=created)])
    t = cs.sort_key(QPI(make_pod("a", group="g"), 0.0))[1]
    # Created ~100 s before now, on a clock that reads 1000 now.
    assert 1000 - 102 < t < 1000 - 98
    handle.clock.advance(500)  # type: ignore[attr-defined]
    assert cs.sort_key(QPI(make_pod("b", group="g"), 0.0))[1] == t  # stable keys


# ---- PreFilter ---------------------------------------------------------------------------


def pods_store(*pods: PodInfo) -> dict[str, PodInfo]:
    return {p.uid: p for p in pods}


def test_prefilter_counts_every_pod_of_the_group() -> None:
    a, b = make_pod("a", group="g"), make_pod("b", group="g")
    other_ns = make_pod("c", group="g", namespace="other")
    cs, _, _ = plugin_with([podgroup("g", 3)], pods=pods_store(a, b, other_ns))
    res, st = cs.pre_filter(CycleState(), a, None)  # type: ignore[arg-type]
    assert res is None and st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == (
        "pre-filter pod a cannot find enough sibling pods, current pods "
        "number: 2, minMember of group: 3"
    )
    c = make_pod("c", group="g")
    cs.handle.listers["pods"] = pods_store(a, b, c)  # type: ignore[union-attr]
    assert cs.pre_filter(CycleState(), a, None) == (None, None)  # type: ignore[arg-type]


def test_prefilter_counts_bound_and_pending_members() -> None:
    """The pods lister (every pod, as the informer sees them) counts bound and queued
    members alike; pods of other groups do not count."""
    bound = make_pod("a", group="g", node="n1")
    queued, pooled = make_pod("b", group="g"), make_pod("c", group="g")
    me = make_pod("d", group="g")
    cs, _, _ = plugin_with(
        [podgroup("g", 4)],
        bound=[bound],
        queue=FakeQueue(active=[queued], pool=[pooled, make_pod("x")]),
    )
    assert cs.pre_filter(CycleState(), me, None) == (None, None)  # type: ignore[arg-type]
    cs.handle.listers["podgroups"]["default/g"]["spec"]["minMember"] = 5  # type: ignore[union-attr]
    _, st = cs.pre_filter(CycleState(), me, None)  # type: ignore[arg-type]
    assert st is not None and "current pods number: 4, minMember of group: 5" in st.message()


def test_prefilter_lets_pods_without_a_group_or_podgroup_through() -> None:
    cs, _, _ = plugin_with([], pods={})
    snap = cs.handle.snapshot  # type: ignore[union-attr]
    assert cs.pre_filter(CycleState(), make_pod("a"), snap) == (None, None)
    assert cs.pre_filter(CycleState(), make_pod("a", group="nope"), snap) == (None, None)


def test_prefilter_min_resources_excludes_the_groups_own_pods() -> None:
    a, b = make_pod("a", group="g", cpu="3", node="n1"), make_pod("b", group="g")
    filler = make_pod("filler", cpu="3", node="n2")
    cs, handle, _ = plugin_with(
        [podgroup("g", 2, minResources={"cpu": "4"})],
        bound=[a, filler],
        pods=pods_store(a, b, filler),
    )
    # Free without the group: n1 4 cpu (a's 3 given back), n2 1 cpu.
    assert cs.pre_filter(CycleState(), b, handle.snapshot) == (None, None)
    handle.listers["podgroups"]["default/g"]["spec"]["minResources"] = {
        "cpu": "6",
        "nvidia.com/gpu": 1,
        "memory": "1Gi",
    }
    _, st = cs.pre_filter(CycleState(), b, handle.snapshot)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == "resource gap: cpu: 1000m, nvidia.com/gpu: 1"
    handle.listers["podgroups"]["default/g"]["spec"]["minResources"] = {"cpu": "lots"}
    with pytest.raises(InvalidObjectError, match=r"PodGroup default/g: spec\.minResources"):
        cs.pre_filter(CycleState(), b, handle.snapshot)


def test_prefilter_min_resources_counts_pod_slots() -> None:
    handle, _ = make_handle(
        [make_node("tiny", pods=1)], groups=[podgroup("g", 2, minResources={"cpu": "1"})]
    )
    cs = Coscheduling(None, handle)
    pods = [make_pod("a", group="g"), make_pod("b", group="g")]
    handle.listers["pods"] = pods_store(*pods)
    _, st = cs.pre_filter(CycleState(), pods[0], handle.snapshot)
    assert st is not None and st.message() == "resource gap: pods: 1"


# ---- Permit ------------------------------------------------------------------------------


def park(handle: Handle, pod: PodInfo, status: tuple[Status | None, float]) -> WaitingPod:
    st, timeout = status
    assert st is not None and st.is_wait()
    wp = WaitingPod(pod, "n1", {"Coscheduling": timeout}, handle.clock.now())
    handle.waiting_pods.add(wp)
    return wp


def assume(cache: Cache, handle: Handle, pod: PodInfo, node: str = "n1") -> PodInfo:
    assumed = pod.assumed_on(node)
    cache.assume_pod(assumed, node)
    return assumed


def test_permit_waits_for_min_member_then_releases_the_whole_gang() -> None:
    queue = FakeQueue()
    cs, handle, cache = plugin_with(
        [podgroup("g", 3, scheduleTimeoutSeconds=30), podgroup("h", 2)], queue=queue
    )
    a, b, c = (make_pod(n, group="g") for n in "abc")
    other = make_pod("x", group="h")
    waiting = []
    for pod in (a, b):
        refresh(handle, cache)
        st = cs.permit(CycleState(), assume(cache, handle, pod), "n1")
        assert st[1] == 30.0  # the group's scheduleTimeoutSeconds
        waiting.append(park(handle, pod, st))
    refresh(handle, cache)
    waiting.append(park(handle, other, cs.permit(CycleState(), assume(cache, handle, other), "n1")))
    refresh(handle, cache)
    assert cs.permit(CycleState(), assume(cache, handle, c), "n1") == (None, 0.0)
    assert [wp.status.code if wp.status else None for wp in waiting] == [
        Code.SUCCESS,
        Code.SUCCESS,
        None,
    ]


def test_permit_default_timeout_and_sibling_activation() -> None:
    a, b, c = (make_pod(n, group="g") for n in "abc")
    queue = FakeQueue(backoff=[b], pool=[c, make_pod("z", group="other")])
    handle, cache = make_handle([make_node("n1")], groups=[podgroup("g", 3)], queue=queue)
    cs = Coscheduling({"permitWaitingTimeSeconds": 12}, handle)
    st, timeout = cs.permit(CycleState(), assume(cache, handle, a), "n1")
    assert st is not None and st.code == Code.WAIT and timeout == 12.0
    # The first member to park brings its siblings back from the pool and backoff.
    assert queue.activated == [["b", "c"]]
    refresh(handle, cache)
    st, _ = cs.permit(CycleState(), assume(cache, handle, b), "n1")
    assert st is not None and st.is_wait() and queue.activated == [["b", "c"]]


def test_permit_without_group_or_podgroup() -> None:
    cs, _, _ = plugin_with([])
    assert cs.permit(CycleState(), make_pod("a"), "n1") == (None, 0.0)
    st, timeout = cs.permit(CycleState(), make_pod("a", group="ghost"), "n1")
    assert st is not None and st.code == Code.UNSCHEDULABLE
    assert st.message() == "PodGroup not found" and timeout == 0.0


def test_permit_min_member_one_or_zero_never_waits() -> None:
    cs, _, _ = plugin_with([podgroup("one", 1), podgroup("zero", 0)])
    assert cs.permit(CycleState(), make_pod("a", group="one"), "n1") == (None, 0.0)
    assert cs.permit(CycleState(), make_pod("a", group="zero"), "n1") == (None, 0.0)


# ---- PostFilter / Unreserve --------------------------------------------------------------


def gang(n_waiting: int, min_member: int, **kw: Any) -> tuple[Coscheduling, Handle, list[Any]]:
    cs, handle, cache = plugin_with([podgroup("g", min_member), podgroup("h", 2)], **kw)
    parked = []
    for i in range(n_waiting):
        pod = make_pod(f"m{i}", group="g")
        refresh(handle, cache)
        verdict = cs.permit(CycleState(), assume(cache, handle, pod), "n1")
        if verdict[0] is not None:  # the last member is allowed, not parked
            parked.append(park(handle, pod, verdict))
    outsider = make_pod("o", group="h")
    refresh(handle, cache)
    parked.append(
        park(handle, outsider, cs.permit(CycleState(), assume(cache, handle, outsider), "n1"))
    )
    same_name_other_ns = make_pod("p", group="g", namespace="elsewhere")
    parked.append(park(handle, same_name_other_ns, (Status(Code.WAIT), 60.0)))
    refresh(handle, cache)
    return cs, handle, parked


def test_post_filter_rejects_the_parked_members_of_that_group_only() -> None:
    cs, _, parked = gang(2, 3)
    res, st = cs.post_filter(CycleState(), make_pod("m2", group="g"), NodeToStatus())
    assert res is not None and res.nominated_node_name == ""
    assert st is not None and st.code == Code.UNSCHEDULABLE
    assert st.message() == (
        "PodGroup default/g gets rejected due to Pod m2 is unschedulable even after PostFilter"
    )
    assert [wp.status.message() if wp.status else None for wp in parked] == [
        "optimistic rejection in PostFilter",
        "optimistic rejection in PostFilter",
        None,
        None,
    ]
    assert parked[0].status is not None and parked[0].status.plugin == "Coscheduling"
    assert cs.backed_off == {}


def test_post_filter_leaves_a_complete_or_nearly_complete_gang_alone() -> None:
    cs, _, parked = gang(3, 3)  # a fourth member does not fit: the three placed stay
    _, st = cs.post_filter(CycleState(), make_pod("m3", group="g"), NodeToStatus())
    assert st is not None and st.code == Code.UNSCHEDULABLE and st.message() == ""
    assert [wp.status.code for wp in parked[:2] if wp.status] == [Code.SUCCESS, Code.SUCCESS]
    cs, _, parked = gang(9, 10)  # 10 % missing: later members may still make it
    _, st = cs.post_filter(CycleState(), make_pod("m9", group="g"), NodeToStatus())
    assert st is not None and st.message() == "" and not any(wp.done for wp in parked)


def test_post_filter_for_a_pod_without_a_group() -> None:
    cs, _, _ = plugin_with([])
    _, st = cs.post_filter(CycleState(), make_pod("solo"), NodeToStatus())
    assert st is not None and st.code == Code.UNSCHEDULABLE
    assert st.message() == "can not find pod group"


def test_group_backoff_rejects_at_prefilter_until_it_expires() -> None:
    members = [make_pod(f"m{i}", group="g") for i in range(3)]
    handle, _ = make_handle([make_node("n1")], groups=[podgroup("g", 3)], pods=pods_store(*members))
    cs = Coscheduling({"podGroupBackoffSeconds": 20}, handle)
    cs.post_filter(CycleState(), members[2], NodeToStatus())
    assert cs.backed_off == {"default/g": handle.clock.now() + 20}
    _, st = cs.pre_filter(CycleState(), members[0], handle.snapshot)
    assert st is not None and st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == "podGroup default/g failed recently"
    handle.clock.advance(20)  # type: ignore[attr-defined]
    assert cs.pre_filter(CycleState(), members[0], handle.snapshot) == (None, None)
    assert cs.backed_off == {}
    # An incomplete group (fewer pods than minMember) is not backed off.
    handle.listers["pods"] = pods_store(*members[:2])
    cs.post_filter(CycleState(), members[1], NodeToStatus())
    assert cs.backed_off == {}


def test_unreserve_rejects_the_groups_parked_members() -> None:
    cs, _, parked = gang(2, 3)
    assert cs.reserve(CycleState(), make_pod("m2", group="g"), "n1") is None
    cs.unreserve(CycleState(), make_pod("m2", group="g"), "n1")
    assert [wp.status.message() if wp.status else None for wp in parked] == [
        "rejection in Unreserve",
        "rejection in Unreserve",
        None,
        None,
    ]
    cs.unreserve(CycleState(), make_pod("solo"), "n1")  # no group: nothing to do


# ---- queueing hints ----------------------------------------------------------------------


def test_events_and_sibling_hint() -> None:
    cs, _, _ = plugin_with([])
    regs = cs.events_to_register()
    assert [r.event for r in regs] == [
        ClusterEvent("Pod", "Add"),
        ClusterEvent(PODGROUP_RESOURCE, "Add"),
        ClusterEvent(PODGROUP_RESOURCE, "Update"),
    ]
    hint = regs[0].hint
    assert hint is not None
    me = make_pod("a", group="g")
    assert hint(me, None, make_pod("b", group="g")) == QueueingHint.QUEUE
    assert hint(me, None, make_pod("b", group="g", node="n1")) == QueueingHint.QUEUE
    assert hint(me, None, make_pod("b", group="h")) == QueueingHint.SKIP
    assert hint(me, None, make_pod("b", group="g", namespace="x")) == QueueingHint.SKIP
    assert hint(me, None, make_pod("b")) == QueueingHint.SKIP
    assert hint(make_pod("solo"), None, make_pod("b")) == QueueingHint.SKIP
    assert regs[1].hint is None and regs[2].hint is None
