"""SchedulingQueue: backoff, QueueSort order, hint-driven requeue, in-flight events, gates,
the leftover flush, updates and deletes. Virtual time only (FakeClock)."""

from __future__ import annotations

import json

import anyio
import msgspec
import pytest

from ksched.api.objects import Pod
from ksched.framework.interface import ClusterEvent
from ksched.framework.types import PodInfo
from ksched.queue import events as ev
from ksched.queue.scheduling_queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE, QueuedPodInfo
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod

from ._util import LabelGate, Waiting, fail, make_queue, pop

GATE = [{"name": "example.com/wait"}]


def relabel(pi: PodInfo, **labels: str) -> PodInfo:
    meta = msgspec.structs.replace(pi.pod.metadata, labels={**pi.labels, **labels})
    return pi.with_pod(msgspec.structs.replace(pi.pod, metadata=meta))


def ungate(pi: PodInfo) -> PodInfo:
    spec = msgspec.structs.replace(pi.pod.spec, scheduling_gates=[])
    return pi.with_pod(msgspec.structs.replace(pi.pod, spec=spec))


def nominated(pi: PodInfo, node: str) -> PodInfo:
    status = msgspec.structs.replace(pi.pod.status, nominated_node_name=node)
    return pi.with_pod(msgspec.structs.replace(pi.pod, status=status))


def annotate(pi: PodInfo) -> PodInfo:
    meta = msgspec.structs.replace(pi.pod.metadata, annotations={"a": "b"})
    return pi.with_pod(msgspec.structs.replace(pi.pod, metadata=meta))


# -- backoff -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("initial", "maximum", "expected"),
    [
        (1.0, 10.0, [0, 1, 2, 4, 8, 10, 10, 10]),
        (2.0, 7.0, [0, 2, 4, 7, 7]),
        (1.0, 1.0, [0, 1, 1, 1]),
    ],
)
def test_backoff_doubles_per_attempt_up_to_the_cap(
    initial: float, maximum: float, expected: list[float]
) -> None:
    q = make_queue()
    q.initial_backoff, q.max_backoff = initial, maximum
    qpi = QueuedPodInfo(make_pod(), "ksched", 0.0)
    for count, want in enumerate(expected):
        qpi.unschedulable_count = count
        assert q.backoff_duration(qpi) == want


def test_backoff_counts_errors_in_a_row_else_rejections() -> None:
    """``getBackoffTime``: after rejections an error backs off as a first error, and the
    next rejection picks up the rejections' count again (not the attempts)."""
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    backoffs = []
    for how in ("rejected", "rejected", "error", "error", "rejected"):
        qpi = pop(q)
        if how == "error":
            fail(q, qpi, error=True)
        else:
            fail(q, qpi, "NoExt")
            q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))
        backoffs.append(q.backoff_duration(qpi))
        clock.advance(60)
    assert backoffs == [1.0, 2.0, 1.0, 2.0, 4.0]
    assert qpi.attempts == 5


def test_failed_pod_waits_out_its_growing_backoff_before_it_pops_again() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    expiries = []
    for attempt in range(1, 7):
        qpi = pop(q)
        assert qpi.attempts == attempt
        fail(q, qpi, error=True)  # no rejecting plugin: straight to backoffQ
        assert q.location(qpi.pod) == BACKOFF_Q
        expiry = q.next_backoff_expiry()
        assert expiry is not None
        expiries.append(expiry - clock.now())
        clock.set(expiry - 0.001)
        assert q.pop_nowait() is None
        clock.set(expiry)
    # 1 s doubling to the 10 s cap, plus the 1 s window SchedulerPopFromBackoffQ compares
    # the truncated expiry with (``isEntityBackingoff``)
    assert expiries == [2, 3, 5, 9, 11, 11]


@pytest.mark.anyio
async def test_pop_sleeps_on_the_injected_clock_until_backoff_ends() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    fail(q, pop(q), error=True)
    got: list[QueuedPodInfo | None] = []
    async with anyio.create_task_group() as tg:

        async def popper() -> None:
            got.append(await q.pop())

        tg.start_soon(popper)
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        # 1 s backoff, out of backoff one 1 s window later (SchedulerPopFromBackoffQ)
        assert got == [] and clock.next_deadline() == 2.0
        clock.advance_to_next()
        with anyio.fail_after(1):
            while not got:
                await anyio.lowlevel.checkpoint()
    assert got[0] is not None and got[0].attempts == 2


# -- QueueSort order ----------------------------------------------------------------------


def test_activeq_pops_by_priority_then_by_queue_timestamp() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    for name, prio in [("low-old", 1), ("high-new", 10), ("low-new", 1), ("mid", 5)]:
        q.add(make_pod(name, priority=prio), "ksched")
        clock.advance(1)
    # "low-new" fails: it comes back with a newer timestamp than "low-old"'s.
    assert [pop(q).pod.name for _ in range(4)] == ["high-new", "mid", "low-old", "low-new"]
    assert q.pop_nowait() is None


def test_less_only_queue_sort_plugin_orders_the_heap() -> None:
    clock = FakeClock()
    q = make_queue(clock, {"queueSort": ["InverseSort"]})
    for name, prio in [("a", 5), ("b", 1), ("c", 3), ("d", 1)]:
        q.add(make_pod(name, priority=prio), "ksched")
        clock.advance(1)
    assert [pop(q).pod.name for _ in range(4)] == ["b", "d", "c", "a"]


def test_requeued_pod_sorts_by_its_new_timestamp() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("first"), "ksched")
    clock.advance(1)
    q.add(make_pod("second"), "ksched")
    first = pop(q)
    fail(q, first, "NoExt")
    clock.advance(5)
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))  # backoff (1s) is over
    assert q.location(first.pod) == ACTIVE_Q
    assert [pop(q).pod.name for _ in range(2)] == ["second", "first"]


# -- queueing hints ------------------------------------------------------------------------


def test_registered_event_moves_the_pod_and_an_unrelated_one_does_not() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    fail(q, qpi, "NodeAddOnly")
    assert q.location(qpi.pod) == UNSCHEDULABLE
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_UPDATE, make_pod(), make_pod()) == 0
    assert (
        q.move_all_to_active_or_backoff(
            ev.node_update_events(make_node("n"), make_node("n", cpu="8"))[0]
        )
        == 0
    )
    assert q.location(qpi.pod) == UNSCHEDULABLE
    # Still backing off (1 s after the failure): backoffQ, then activeQ once it ends.
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n")) == 1
    assert q.location(qpi.pod) == BACKOFF_Q
    clock.advance(1)
    assert pop(q) is qpi


def test_event_after_backoff_expired_goes_straight_to_activeq() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    fail(q, qpi, "NodeAddOnly")
    clock.advance(30)
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))
    assert q.location(qpi.pod) == ACTIVE_Q


def test_hint_returning_queue_skip_keeps_the_pod_in_the_pool() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    fail(q, qpi, "Hinted")
    clock.advance(30)
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("bad")) == 0
    assert q.location(qpi.pod) == UNSCHEDULABLE
    good = make_node("good", labels={"good": "yes"})
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, good) == 1
    assert q.location(qpi.pod) == ACTIVE_Q


def test_any_rejector_saying_queue_is_enough() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    fail(q, qpi, "Hinted", "NodeAddOnly")
    clock.advance(30)
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("bad")) == 1


def test_plugin_without_events_to_register_is_woken_by_every_event() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    pods = [make_pod(f"p{i}") for i in range(3)]
    for p in pods:
        q.add(p, "ksched")
    events = [ev.ASSIGNED_POD_UPDATE, ClusterEvent("example.com/PodGroup", "Add"), ev.NODE_ADD]
    for event in events:
        fail(q, pop(q), "NoExt")
        clock.advance(30)
        assert q.move_all_to_active_or_backoff(event) == 1


def test_plugin_registering_nothing_is_only_helped_by_the_flush() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    fail(q, qpi, "NothingHelps")
    for event in (ev.NODE_ADD, ev.ASSIGNED_POD_DELETE, ClusterEvent("Foo", "Add")):
        assert q.move_all_to_active_or_backoff(event) == 0
    clock.advance(301)
    assert q.flush_unschedulable_leftover() == 1
    assert q.location(qpi.pod) == ACTIVE_Q


def test_a_failing_hint_counts_as_queue() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    fail(q, qpi, "RaisingHint")
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n")) == 1


def test_pending_plugin_queue_skips_backoff() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    fail(q, qpi, pending=("NodeAddOnly",))
    assert q.is_backing_off(qpi)
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))
    assert q.location(qpi.pod) == ACTIVE_Q  # queueImmediately, despite the backoff


def test_pod_resource_registration_also_hears_assigned_pod_events() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    fail(q, qpi, "PodDelete")
    clock.advance(30)
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_ADD, None, make_pod()) == 0
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, make_pod(), None) == 1


def test_event_matching_rules() -> None:
    upd_label = ClusterEvent("Node", "UpdateNodeLabel")
    assert ev.matches(ClusterEvent("Node", "Update"), upd_label)
    assert ev.matches(ClusterEvent("Node", "*"), upd_label)
    assert ev.matches(ClusterEvent("*", "UpdateNodeLabel"), upd_label)
    assert ev.matches(ev.WILDCARD, upd_label)
    assert not ev.matches(upd_label, ClusterEvent("Node", "Update"))  # specific != generic
    assert not ev.matches(ClusterEvent("Node", "Add"), upd_label)
    assert ev.matches(ClusterEvent("Pod", "Delete"), ev.ASSIGNED_POD_DELETE)
    assert not ev.matches(ev.ASSIGNED_POD_DELETE, ClusterEvent("Pod", "Delete"))
    assert not ev.matches(ClusterEvent("Node", "*"), ev.UNSCHEDULABLE_TIMEOUT)


# -- in-flight events ----------------------------------------------------------------------


def test_event_during_the_attempt_sends_the_pod_to_backoff_not_the_pool() -> None:
    q = make_queue()
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))  # while in flight
    fail(q, qpi, "NodeAddOnly")
    assert q.location(qpi.pod) == BACKOFF_Q
    assert q.in_flight() == 0 and q.dump()["inFlightEvents"] == []


def test_unrelated_or_earlier_events_do_not_count() -> None:
    q = make_queue()
    a, b = make_pod("a"), make_pod("b")
    q.add(a, "ksched")
    q.add(b, "ksched")
    qa = pop(q)
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))  # before b's attempt
    qb = pop(q)
    q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_UPDATE, make_pod(), make_pod())
    fail(q, qb, "NodeAddOnly")
    assert q.location(b) == UNSCHEDULABLE
    fail(q, qa, "NodeAddOnly")
    assert q.location(a) == BACKOFF_Q


def test_in_flight_events_are_kept_until_the_oldest_attempt_that_needs_them_ends() -> None:
    q = make_queue()
    for n in "abc":
        q.add(make_pod(n), "ksched")
    qa = pop(q)
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n1"))
    qb = pop(q)
    q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, make_pod(), None)
    assert q.dump()["inFlightEvents"] == ["NodeAdd", "AssignedPodDelete"]
    q.done(qa.pod)  # a bound: NodeAdd predates b, so nobody needs it any more
    assert q.dump()["inFlightEvents"] == ["AssignedPodDelete"]
    fail(q, qb, "NodeAddOnly")
    assert q.location(qb.pod) == UNSCHEDULABLE
    assert q.dump()["inFlightEvents"] == []
    # No pod in flight: events are not recorded at all.
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n2"))
    assert q.dump()["inFlightEvents"] == []


def test_update_while_in_flight_is_replayed_and_the_latest_version_requeued() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    pod = make_pod("p", labels={"v": "1"})
    q.add(pod, "ksched")
    qpi = pop(q)
    newer = relabel(pod, v="2")
    q.update(pod, newer)
    assert q.location(pod) == "inFlight"
    fail(q, qpi, "OwnLabels")
    assert q.location(pod) == BACKOFF_Q
    clock.advance(1)
    assert pop(q).pod_info is newer


def test_pod_deleted_while_in_flight_is_not_requeued() -> None:
    q = make_queue()
    pod = nominated(make_pod("p"), "n1")
    q.add(pod, "ksched")
    assert q.nominator.nominated_node(pod) == "n1"
    qpi = pop(q)
    q.delete(pod)
    fail(q, qpi, "NodeAddOnly")
    assert q.location(pod) is None and q.in_flight() == 0
    assert len(q.nominator) == 0
    # A later pod with the same name but a new uid is a different pod.
    q.add(make_pod("p"), "ksched")
    assert q.pending_counts()[ACTIVE_Q] == 1


def test_activate_of_an_in_flight_pod_requeues_only_that_pod() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    a, b = make_pod("a"), make_pod("b")
    q.add(a, "ksched")
    q.add(b, "ksched")
    qa, qb = pop(q), pop(q)
    q.activate([a])
    fail(q, qa, "NothingHelps")
    fail(q, qb, "NothingHelps")
    assert q.location(a) == BACKOFF_Q  # ForceActivate requeues after backoff
    assert q.location(b) == UNSCHEDULABLE


def test_activate_moves_pool_and_backoff_pods_to_activeq() -> None:
    q = make_queue()
    a, b = make_pod("a"), make_pod("b")
    q.add(a, "ksched")
    q.add(b, "ksched")
    fail(q, pop(q), "NothingHelps")
    fail(q, pop(q), error=True)
    assert {q.location(a), q.location(b)} == {UNSCHEDULABLE, BACKOFF_Q}
    q.activate([a, b])
    assert q.location(a) == ACTIVE_Q and q.location(b) == ACTIVE_Q


# -- PreEnqueue gates ------------------------------------------------------------------------


def test_gated_pod_is_counted_apart_and_released_when_its_gates_are_removed() -> None:
    q = make_queue()
    pod = make_pod("g", schedulingGates=GATE)
    q.add(pod, "ksched")
    assert q.location(pod) == UNSCHEDULABLE
    assert q.pending_counts() == {ACTIVE_Q: 0, BACKOFF_Q: 0, UNSCHEDULABLE: 0, "gated": 1}
    qpi = q.get(pod)
    assert qpi is not None and qpi.gated and qpi.gating_plugin == "SchedulingGates"
    # Events the gating plugin did not register never touch it, not even wildcard ones.
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n")) == 0
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, make_pod(), None) == 0
    q.clock.set(1000)  # type: ignore[attr-defined]
    assert q.flush_unschedulable_leftover() == 0
    # An unrelated update keeps it gated; removing the gates sends it to activeQ.
    relabelled = relabel(pod, x="y")
    q.update(pod, relabelled)
    assert q.location(pod) == UNSCHEDULABLE
    q.update(relabelled, ungate(relabelled))
    assert q.location(pod) == ACTIVE_Q
    assert q.pending_counts() == {ACTIVE_Q: 1, BACKOFF_Q: 0, UNSCHEDULABLE: 0, "gated": 0}
    assert pop(q).attempts == 1


def test_pod_gated_by_a_plugin_without_registrations_is_rechecked_on_events() -> None:
    q = make_queue()
    pod = make_pod("h", labels={"hold": "yes"})
    q.add(pod, "ksched")
    assert q.pending_counts()["gated"] == 1
    try:
        assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n")) == 0
        assert q.pending_counts()["gated"] == 1
        LabelGate.open_all = True
        assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n")) == 1
    finally:
        LabelGate.open_all = False
    assert q.location(pod) == ACTIVE_Q


def test_a_pod_its_gate_still_holds_is_left_in_the_pool_without_running_hints() -> None:
    """A preemptor waiting for its victims: each victim deletion would requeue it (its
    rejector's hint queues on any pod deletion) only for PreEnqueue to gate it again. While
    the gate holds, events leave it where it is: no hint, no move; once the gate lifts,
    the next deletion moves it as before."""
    moves: list[tuple[str, str]] = []
    hints: list[tuple[str, str]] = []
    q = make_queue(
        points={"preEnqueue": ["SchedulingGates", "LabelGate", "Waiting"]},
        on_move=lambda event, queue: moves.append((event, queue)),
    )
    q.hint_observer = lambda plugin, event, hint, _s: hints.append((plugin, hint))
    pod = make_pod("p")
    q.add(pod, "ksched")
    qpi = pop(q)
    victim = make_pod("victim", nodeName="n")
    try:
        Waiting.held = frozenset({"p"})
        fail(q, qpi, "PodDelete")  # rejected by a plugin every pod deletion may help
        # the first deletion requeues it into PreEnqueue, which gates it
        assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, victim, None) == 0
        assert q.get(pod) is not None and q.get(pod).gated  # type: ignore[union-attr]
        moves.clear()
        hints.clear()
        for _ in range(3):
            assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, victim, None) == 0
        assert (moves, hints) == ([], [])
        assert q.location(pod) == UNSCHEDULABLE and q.pending_counts()["gated"] == 1
        Waiting.held = frozenset()
        assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, victim, None) == 1
    finally:
        Waiting.held = frozenset()
    assert q.location(pod) in (ACTIVE_Q, BACKOFF_Q)
    assert moves == [("AssignedPodDelete", q.location(pod))]


def test_a_gated_pod_is_asked_its_gating_plugin_first() -> None:
    """Upstream runs the plugin that gated a pod first, and asks no other while it still
    gates: a plugin before it in order that would gate the pod now too does not take
    over (nor requeue the pod into the pool under its name)."""
    moves: list[tuple[str, str]] = []
    q = make_queue(
        points={"preEnqueue": ["SchedulingGates", "LabelGate", "Waiting"]},
        on_move=lambda event, queue: moves.append((event, queue)),
    )
    pod = make_pod("p", labels={"hold": "yes"})
    victim = make_pod("victim", nodeName="n")
    try:
        LabelGate.open_all = True
        q.add(pod, "ksched")
        qpi = pop(q)
        Waiting.held = frozenset({"p"})
        fail(q, qpi, "PodDelete")
        assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, victim, None) == 0
        gated = q.get(pod)
        assert gated is not None and gated.gating_plugin == "Waiting"
        moves.clear()
        LabelGate.open_all = False  # LabelGate, before Waiting, would gate it now as well
        for _ in range(2):
            assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, victim, None) == 0
        assert moves == [] and gated.gating_plugin == "Waiting"
        assert gated.gating_status is not None and gated.gating_status.message() == "waiting"
        # once Waiting lets it through, the others are asked: LabelGate gates it
        Waiting.held = frozenset()
        assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_DELETE, victim, None) == 0
        assert gated.gating_plugin == "LabelGate" and q.location(pod) == UNSCHEDULABLE
    finally:
        Waiting.held = frozenset()
        LabelGate.open_all = False


# -- leftover flush, updates, deletes --------------------------------------------------------


def test_pods_unschedulable_for_over_five_minutes_are_flushed() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("old"), "ksched")
    fail(q, pop(q), "NothingHelps")
    clock.advance(100)
    q.add(make_pod("young"), "ksched")
    fail(q, pop(q), "NothingHelps")
    clock.set(300)
    assert q.flush_unschedulable_leftover() == 0  # not *longer* than 5 minutes yet
    clock.set(300.5)
    assert q.flush_unschedulable_leftover() == 1
    assert [p.pod.name for p in q.unschedulable_pods()] == ["young"]


@pytest.mark.anyio
async def test_periodic_flushers_run_on_the_fake_clock() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    fail(q, qpi, "NothingHelps")
    async with anyio.create_task_group() as tg:
        tg.start_soon(q.run_flushers)
        await anyio.lowlevel.checkpoint()
        while clock.now() < 330:
            clock.advance_to_next()
            for _ in range(3):
                await anyio.lowlevel.checkpoint()
        assert q.location(qpi.pod) == ACTIVE_Q
        q.close()
        tg.cancel_scope.cancel()


def test_update_that_may_help_requeues_and_one_that_cannot_does_not() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    pod = make_pod("p", labels={"v": "1"})
    q.add(pod, "ksched")
    fail(q, pop(q), "OwnLabels")
    clock.advance(30)
    annotated = annotate(pod)
    q.update(pod, annotated)  # a plain Update: OwnLabels registered UpdatePodLabel only
    assert q.location(pod) == UNSCHEDULABLE
    relabelled = relabel(annotated, v="2")
    q.update(annotated, relabelled)
    assert q.location(pod) == ACTIVE_Q
    assert pop(q).pod_info is relabelled


def test_update_in_activeq_replaces_the_pod_and_unknown_pod_is_added() -> None:
    q = make_queue()
    pod = make_pod("p")
    q.add(pod, "ksched")
    newer = relabel(pod, a="b")
    q.update(pod, newer)
    assert q.pending_counts()[ACTIVE_Q] == 1
    assert pop(q).pod_info is newer
    assert q.pop_nowait() is None  # the stale heap entry is not popped twice
    stranger = make_pod("s")
    q.update(stranger, relabel(stranger, x="y"))
    assert q.location(stranger) == ACTIVE_Q


def test_pod_with_invalid_fields_waits_for_its_own_update() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    pod, other = make_pod("broken"), make_pod("other")
    q.add(pod, "ksched")
    fail(q, pop(q), "__invalid__")
    clock.advance(30)
    assert q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n")) == 0
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_UPDATE, other, other) == 0
    q.update(pod, annotate(pod))
    assert q.location(pod) == ACTIVE_Q


@pytest.mark.parametrize("where", [ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE, "gated"])
def test_delete_leaves_every_queue(where: str) -> None:
    q = make_queue()
    if where == "gated":
        pod = nominated(make_pod("p", schedulingGates=GATE), "n1")
        q.add(pod, "ksched")
    else:
        pod = nominated(make_pod("p"), "n1")
        q.add(pod, "ksched")
        if where != ACTIVE_Q:
            qpi = pop(q)
            fail(
                q,
                qpi,
                *(["NothingHelps"] if where == UNSCHEDULABLE else []),
                error=where == BACKOFF_Q,
            )
    assert q.location(pod) == (UNSCHEDULABLE if where == "gated" else where)
    q.nominator.add(pod, "n1")
    q.delete(pod)
    assert q.location(pod) is None
    assert q.pending_counts() == {ACTIVE_Q: 0, BACKOFF_Q: 0, UNSCHEDULABLE: 0, "gated": 0}
    assert len(q.nominator) == 0
    q.clock.set(10_000)  # type: ignore[attr-defined]
    assert q.pop_nowait() is None
    assert q.move_all_to_active_or_backoff(ev.WILDCARD) == 0


def test_add_of_a_queued_pod_is_an_update() -> None:
    q = make_queue()
    pod = make_pod("p")
    q.add(pod, "ksched")
    q.add(relabel(pod, a="b"), "ksched")
    assert q.pending_counts()[ACTIVE_Q] == 1


def test_same_resource_version_is_ignored() -> None:
    q = make_queue()
    m = msgspec.to_builtins(make_pod("p", labels={"v": "1"}).pod)
    m["metadata"]["resourceVersion"] = "7"
    pod = PodInfo(msgspec.convert(m, Pod))
    q.add(pod, "ksched")
    fail(q, pop(q), "OwnLabels")
    q.clock.set(60)  # type: ignore[attr-defined]
    q.update(pod, relabel(pod, v="2"))  # same resourceVersion: a resync, not a change
    assert q.location(pod) == UNSCHEDULABLE


# -- introspection ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "added"), [("1.36", "UnschedulablePodAdd"), ("1.37", "UnscheduledPodAdd")]
)
def test_dump_is_json_and_shows_every_queue(version: str, added: str) -> None:
    """v1.37 renamed the pending pods' event resource: the moves' labels follow."""
    moves: list[tuple[str, str]] = []
    clock = FakeClock()
    q = make_queue(clock, on_move=lambda e, w: moves.append((e, w)), version=version)
    for name in ("a", "b", "c", "d"):
        q.add(make_pod(name), "ksched")
    q.add(make_pod("g", schedulingGates=GATE), "ksched")
    fail(q, pop(q), "NodeAddOnly")
    fail(q, pop(q), error=True)
    flying = pop(q)
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))
    q.nominator.add(flying.pod, "n")
    d = json.loads(json.dumps(q.dump()))
    assert [r["pod"] for r in d[ACTIVE_Q]] == ["default/d"]
    assert {r["pod"] for r in d[BACKOFF_Q]} == {"default/a", "default/b"}
    assert d["gated"][0]["gatingPlugin"] == "SchedulingGates"
    assert d["gated"][0]["gatingMessage"].startswith("waiting for scheduling gates")
    assert d["inFlight"] == [flying.key] and d["inFlightEvents"] == ["NodeAdd"]
    assert d["nominated"] == {"n": [flying.pod.key]}
    assert d["counts"] == {ACTIVE_Q: 1, BACKOFF_Q: 2, UNSCHEDULABLE: 0, "gated": 1}
    assert ("NodeAdd", BACKOFF_Q) in moves and (added, UNSCHEDULABLE) in moves


def test_registered_wildcard_rejector_is_woken_by_any_event() -> None:
    """Extenders are not plugins: the queue learns of them through register_wildcard."""
    clock = FakeClock()
    q = make_queue(clock)
    q.add(make_pod("p"), "ksched")
    qpi = pop(q)
    fail(q, qpi, "Extender")
    # Unknown rejector: no event helps it yet.
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_UPDATE, make_pod(), make_pod()) == 0
    q.register_wildcard("Extender")
    q.register_wildcard("Extender")  # idempotent
    assert q.move_all_to_active_or_backoff(ev.ASSIGNED_POD_UPDATE, make_pod(), make_pod()) == 1
    assert q.location(qpi.pod) in (BACKOFF_Q, ACTIVE_Q)


def test_node_condition_changes_are_an_update_event_heartbeats_are_not() -> None:
    """Upstream's extractNodeConditionsChange: type -> status only."""
    from ksched.api.objects import Node

    def node(ready: str, beat: str = "t1", extra: bool = False) -> Node:
        conds = [{"type": "Ready", "status": ready, "lastHeartbeatTime": beat}]
        if extra:
            conds.append({"type": "DiskPressure", "status": "False"})
        return msgspec.convert({"metadata": {"name": "n"}, "status": {"conditions": conds}}, Node)

    assert ev.node_update_events(node("True"), node("True", beat="t2")) == []
    (e,) = ev.node_update_events(node("False"), node("True"))
    assert (e.resource, e.action, e.label) == (
        "Node",
        "UpdateNodeCondition",
        "NodeUpdateNodeCondition",
    )
    assert [x.action for x in ev.node_update_events(node("True"), node("True", extra=True))] == [
        "UpdateNodeCondition"
    ]
