"""PrioritySort: upstream's TestLess (priority_sort_test.go) and sort_key consistency."""

from __future__ import annotations

import itertools

import pytest

from ksched.api.objects import Pod, decode
from ksched.framework.types import PodInfo
from ksched.plugins.queuesort import PrioritySort
from ksched.queue.scheduling_queue import QueuedPodInfo

LOW, HIGH = 10, 100
T1, T2 = 1000.0, 1001.0


def qpi(priority: int | None, timestamp: float = 0.0) -> QueuedPodInfo:
    spec = {} if priority is None else {"priority": priority}
    m = {"kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    return QueuedPodInfo(pod_info=PodInfo(decode(m, Pod), m), profile="p", timestamp=timestamp)


@pytest.mark.parametrize(
    ("p1", "p2", "expected"),
    [
        (qpi(LOW), qpi(HIGH), False),  # p2 should be ahead of p1 in the queue
        (qpi(HIGH), qpi(LOW), True),  # p1 should be ahead of p2 in the queue
        (qpi(HIGH, T1), qpi(HIGH, T2), True),  # equal priority, p1 added earlier
        (qpi(HIGH, T2), qpi(HIGH, T1), False),  # equal priority, p2 added earlier
    ],
    ids=[
        "p1.priority less than p2.priority",
        "p1.priority greater than p2.priority",
        "equal priority. p1 is added to schedulingQ earlier than p2",
        "equal priority. p2 is added to schedulingQ earlier than p1",
    ],
)
def test_less(p1: QueuedPodInfo, p2: QueuedPodInfo, expected: bool) -> None:
    assert PrioritySort().less(p1, p2) is expected


def test_nil_priority_is_zero() -> None:
    assert PrioritySort().less(qpi(1), qpi(None))
    assert PrioritySort().less(qpi(None), qpi(-1))


def test_sort_key_consistent_with_less() -> None:
    s = PrioritySort()
    pods = [qpi(p, t) for p, t in itertools.product([None, -5, 0, LOW, HIGH], [T1, T2, 0.5])]
    for a, b in itertools.product(pods, repeat=2):
        if s.less(a, b):
            assert s.sort_key(a) < s.sort_key(b)
        elif not s.less(b, a):
            assert s.sort_key(a) == s.sort_key(b)
    ordered = sorted(pods, key=s.sort_key)
    assert all(not s.less(b, a) for a, b in itertools.pairwise(ordered))
