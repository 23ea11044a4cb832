"""SchedulerPopFromBackoffQ (beta, on in v1.36 and v1.37): with activeQ empty the scheduler
does not idle out a backoff. backoffQ's rejected pods (not the errored ones) are popped at
once, ordered by their backoff expiry truncated to a 1 s window and then as activeQ orders
them; PreEnqueue runs when a pod enters backoffQ rather than when it leaves."""

from __future__ import annotations

import pytest

from ksched.framework.types import PodInfo
from ksched.queue import events as ev
from ksched.queue.scheduling_queue import ACTIVE_Q, BACKOFF_Q, UNSCHEDULABLE, SchedulingQueue
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod

from ._util import fail, make_queue, pop

OFF = {"SchedulerPopFromBackoffQ": False}


def backing_off(q: SchedulingQueue, *pods: PodInfo) -> None:
    """Each pod rejected by NodeAddOnly, then moved by a Node/Add while backing off."""
    for p in pods:
        q.add(p, "ksched")
    for _ in pods:
        fail(q, pop(q), "NodeAddOnly")
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))


@pytest.mark.parametrize("gates", [None, OFF])
def test_an_idle_queue_pops_a_backing_off_pod_at_once(gates: dict[str, bool] | None) -> None:
    moves: list[tuple[str, str]] = []
    q = make_queue(FakeClock(), on_move=lambda e, w: moves.append((e, w)), gates=gates)
    p = make_pod("p")
    backing_off(q, p)
    assert q.location(p) == BACKOFF_Q
    qpi = q.pop_nowait()
    if gates is None:
        assert qpi is not None and qpi.pod is p and qpi.attempts == 2
        assert moves[-1] == ("PopFromBackoffQ", ACTIVE_Q) and q.location(p) == "inFlight"
    else:
        assert qpi is None and not q.has_active() and q.location(p) == BACKOFF_Q


def test_errored_pods_wait_out_their_backoff() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    p = make_pod("p")
    q.add(p, "ksched")
    fail(q, pop(q), error=True)
    assert q.location(p) == BACKOFF_Q
    assert q.pop_nowait() is None and not q.has_active()
    # The expiry (1 s, truncated to its window: 1.0) is compared with the window the clock
    # is in (``isEntityBackingoff``): still backing off all through [1.0, 2.0).
    clock.advance(1.5)
    assert q.pop_nowait() is None and q.next_backoff_expiry() == 2.0
    clock.advance(0.5)
    assert q.pop_nowait() is not None


def test_backoffq_orders_by_truncated_expiry_then_as_activeq() -> None:
    clock = FakeClock()
    clock.set(10.2)
    q = make_queue(clock)
    low, high = make_pod("low", priority=1), make_pod("high", priority=100)
    q.add(low, "ksched")
    fail(q, pop(q), "NodeAddOnly")  # expiry 11.2
    clock.set(10.6)
    q.add(high, "ksched")
    fail(q, pop(q), "NodeAddOnly")  # expiry 11.6: the same 1 s window
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))
    assert [q.backoff_expiry(x) for x in q.backoff_pods()] == [11.0, 11.0]
    first = q.pop_nowait()
    assert first is not None and first.pod is high  # priority decides within the window


@pytest.mark.parametrize(("gates", "where"), [(None, UNSCHEDULABLE), (OFF, BACKOFF_Q)])
def test_preenqueue_runs_on_entering_backoffq(gates: dict[str, bool] | None, where: str) -> None:
    q = make_queue(FakeClock(), gates=gates)
    p = make_pod("p", uid="u")
    q.add(p, "ksched")
    qpi = pop(q)
    qpi.pod_info = make_pod("p", uid="u", labels={"hold": "yes"})  # LabelGate holds it now
    fail(q, qpi, "NodeAddOnly")
    q.move_all_to_active_or_backoff(ev.NODE_ADD, None, make_node("n"))
    assert q.location(p) == where and qpi.gated is (where == UNSCHEDULABLE)
