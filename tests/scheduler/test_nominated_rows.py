"""``_nominated_rows`` keeps the queued pods' per-row lists between nominator changes and
works out again only the rows of pods seen otherwise (the pod itself, pods in flight or
out of the queue): on random nominator, queue and snapshot states it must give what the
walk over every nominated pod (``_nominated_rows_slow``) gives, row by row, in order.
Preemption's dry run reads the same kept lists by node name."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from ksched.framework.handle import NullCluster
from ksched.framework.registry import Registry
from ksched.framework.types import PodInfo
from ksched.plugins import register_builtins
from ksched.plugins.defaultpreemption.default_preemption import DefaultPreemption
from ksched.queue.nominator import Nominator
from ksched.scheduler.schedule_one import _nominated_rows, _nominated_rows_slow
from ksched.scheduler.scheduler import Scheduler
from ksched.util.clock import FakeClock
from tests.factories import make_node, make_pod
from tests.queue._util import config


def _scheduler(nodes: int) -> Scheduler:
    reg = Registry()
    register_builtins(reg)
    sched = Scheduler(config({}), reg, cluster=NullCluster(), clock=FakeClock(), seed=1)
    for i in range(nodes):
        sched.on_node_add(make_node(f"n{i}"))
    sched.cache.update_snapshot(sched.snapshot)
    return sched


def _same(sched: Scheduler, pod: PodInfo) -> None:
    fast, slow = _nominated_rows(sched, pod), _nominated_rows_slow(sched, pod)
    assert sorted(fast) == sorted(slow)
    for row, pods in slow.items():
        got = fast[row]
        assert [(p.key, p.priority) for p in got] == [(p.key, p.priority) for p in pods]


def test_matches_the_walk_on_random_states() -> None:
    rng = random.Random(33)
    for _ in range(25):
        sched = _scheduler(6)
        q, nom = sched.queue, sched.queue.nominator
        pods: list[PodInfo] = []
        for step in range(60):
            op = rng.random()
            if op < 0.35 or not pods:
                pod = make_pod(f"p{step}", priority=rng.choice([-5, 0, 3, 10, 10]))
                pods.append(pod)
                if rng.random() < 0.8:
                    q.add(pod, "ksched")
                nom.add(pod, f"n{rng.randrange(8)}")  # n6, n7: nodes the snapshot lacks
            elif op < 0.5:
                q.pop_nowait()  # its pod is in flight: seen bare
            elif op < 0.6:
                gone = rng.choice(pods)
                q.delete(gone)
                nom.add(gone, f"n{rng.randrange(6)}")  # nominated, out of the queue
            elif op < 0.7:
                nom.delete(rng.choice(pods))
            elif op < 0.75:
                nodes = list(sched.snapshot.node_infos)
                rng.shuffle(nodes)
                sched.snapshot.rebuild(nodes[: rng.randrange(3, 7)])  # rows renumbered
            else:
                nom.add(rng.choice(pods), f"n{rng.randrange(6)}")
            for me in rng.sample(pods, min(3, len(pods))):
                _same(sched, me)
            _same(sched, make_pod("outsider", priority=rng.choice([-10, 0, 10])))


def test_kept_lists_follow_the_nominator() -> None:
    """A change of nomination is seen by the next call (the kept lists follow it)."""
    sched = _scheduler(2)
    q, nom = sched.queue, sched.queue.nominator
    a, b = make_pod("a", priority=5), make_pod("b", priority=5)
    me = make_pod("me", priority=5)
    for p in (a, b):
        q.add(p, "ksched")
    nom.add(a, "n0")
    assert {r: [p.key for p in ps] for r, ps in _nominated_rows(sched, me).items()} == {
        0: ["default/a"]
    }
    nom.add(b, "n1")
    assert {r: [p.key for p in ps] for r, ps in _nominated_rows(sched, me).items()} == {
        0: ["default/a"],
        1: ["default/b"],
    }
    nom.delete(a)
    assert list(_nominated_rows(sched, me)) == [1]
    nom.add(a, "n1")  # after b on n1
    assert [p.key for p in _nominated_rows(sched, me)[1]] == ["default/b", "default/a"]
    nom.delete(a)
    # a pod in flight is seen bare (priority 0): below the pod's priority, left out
    while q.location(b) != "inFlight":
        assert q.pop_nowait() is not None
    assert _nominated_rows(sched, me) == {}


class _Walked:
    """The nominator seen through ``nodes`` alone: preemption then walks every list."""

    def __init__(self, nom: Nominator) -> None:
        self._nom = nom

    def nodes(self) -> dict[str, list[PodInfo]]:
        return self._nom.nodes()

    def pods_for_node(self, node: str) -> list[PodInfo]:
        return self._nom.pods_for_node(node)

    def __len__(self) -> int:
        return len(self._nom)


def _by_node(nom: Any, pod: PodInfo) -> dict[str, list[str]] | None:
    plugin = SimpleNamespace(handle=SimpleNamespace(nominator=nom))
    got = DefaultPreemption._nominated_by_node(plugin, pod, [])  # type: ignore[arg-type]
    return None if got is None else {n: [p.key for p in ps] for n, ps in got.items()}


def test_preemption_reads_the_kept_lists_as_the_walk() -> None:
    """The dry run's nominated pods per node (priority >= the preemptor's, itself left
    out) from the nominator's kept lists equal the walk over every list."""
    rng = random.Random(7)
    nom = Nominator()
    pods = [make_pod(f"p{i}", priority=rng.choice([-1, 0, 4, 9])) for i in range(40)]
    for _ in range(300):
        pod = rng.choice(pods)
        if rng.random() < 0.3:
            nom.delete(pod)
        else:
            nom.add(pod, f"n{rng.randrange(5)}")
        me = rng.choice([*pods, make_pod("other", priority=rng.choice([0, 4, 9]))])
        assert _by_node(nom, me) == _by_node(_Walked(nom), me)
