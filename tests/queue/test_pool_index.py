"""The pool index (pods by rejecting plugin) must move exactly the pods, in exactly the order,
that scanning the whole pool with the same hints would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.framework.interface import ClusterEvent
from ksched.queue import events as ev
from ksched.queue.scheduling_queue import ACTIVE_Q, QUEUE_SKIP
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod

from ._util import fail, make_queue, pop

PLUGINS = ["NodeAddOnly", "Hinted", "NoExt", "NothingHelps", "PodDelete", "OwnLabels", "Unknown"]
EVENTS = [
    (ev.NODE_ADD, None, make_node("plain")),
    (ev.NODE_ADD, None, make_node("good", labels={"good": "yes"})),
    (ev.ASSIGNED_POD_DELETE, make_pod("gone"), None),
    (ev.ASSIGNED_POD_UPDATE, make_pod("x"), make_pod("x")),
    (ClusterEvent("Pod", "UpdatePodLabel", "UnschedulablePodUpdatePodLabel"), None, make_pod("y")),
    (ClusterEvent("example.com/Thing", "Add"), None, None),
    (ev.UNSCHEDULABLE_TIMEOUT, None, None),
]

pods_st = st.lists(
    st.tuples(
        st.sets(st.sampled_from(PLUGINS), max_size=3),
        st.sets(st.sampled_from(PLUGINS), max_size=1),
        st.booleans(),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(
    pods=pods_st,
    events=st.lists(st.integers(0, len(EVENTS) - 1), min_size=1, max_size=6),
    late=st.booleans(),
)
def test_index_moves_what_a_full_scan_would(
    pods: list[tuple[set[str], set[str], bool]], events: list[int], late: bool
) -> None:
    clock = FakeClock()
    q = make_queue(clock)
    for i, (_, _, gated) in enumerate(pods):
        gates = [{"name": "g"}] if gated else []
        q.add(make_pod(f"p{i}", schedulingGates=gates), "ksched")
    while (qpi := q.pop_nowait()) is not None:
        i = int(qpi.pod.name[1:])
        unsched, pending, _ = pods[i]
        fail(q, qpi, *unsched, pending=tuple(pending))
        clock.advance(0.5)
    if late:
        clock.advance(30)  # backoff over: moved pods go to activeQ
    for e in events:
        event, old, new = EVENTS[e]
        pool = q.unschedulable_pods()
        expected = [
            p.key
            for p in pool
            if (not p.gated or q._gating_plugin_cares(p, event))
            and q._worth_requeuing(p, event, old, new) != QUEUE_SKIP
        ]
        q.move_all_to_active_or_backoff(event, old, new)
        left = {p.key for p in pool} - {p.key for p in q.unschedulable_pods()}
        # Gated pods may be re-gated by PreEnqueue and stay; everything else must leave.
        assert left <= set(expected)
        assert set(expected) - left <= {p.key for p in pool if p.gated}
    # Pop order among the moved pods follows pool order, as a scan would: activeQ's by
    # priority and age, then (SchedulerPopFromBackoffQ) those still backing off, by the
    # end of their backoff first.
    q.flush_backoff_completed()
    in_backoff = {p.key for p in q.backoff_pods()}
    popped = []
    while q.has_active():
        popped.append(pop(q))
    backing_off = {p.key for p in popped if p.key in in_backoff}
    active = [(p.priority, p.timestamp) for p in popped if p.key not in backing_off]
    assert active == sorted(active, key=lambda t: (-t[0], t[1]))
    assert all(p.key in backing_off for p in popped[len(active) :])
    releases = [q.backoff_release(p) for p in popped[len(active) :]]
    assert releases == sorted(releases)
    assert q.pending_counts()[ACTIVE_Q] == 0
