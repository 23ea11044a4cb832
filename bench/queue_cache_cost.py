"""Cost of the scheduling queue and the cache at scale (default: 5000 nodes, 50k pods).

Not a test: prints per-operation timings for

* snapshot update per cycle with 1 dirty node, a full rebuild, a node-add re-layout;
* queue add / pop per pod (default profile, so PreEnqueue SchedulingGates runs);
* move_all_to_active_or_backoff with 50k unschedulable pods rejected by
  NodeResourcesFit, for events that no rejector registered, that its hint rejects
  for every pod, and that move every pod.

Run: ``python bench/queue_cache_cost.py [--nodes N] [--pods N]``.
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections.abc import Callable
from typing import Any

from ksched.api.objects import Node, Pod, decode
from ksched.cache import Cache
from ksched.config import default_config
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import PodInfo
from ksched.plugins import default_registry
from ksched.profile import build_frameworks
from ksched.queue import SchedulingQueue
from ksched.queue import events as ev
from ksched.util.clock import FakeClock


def node(i: int, cpu: str = "4", zones: int = 3) -> Node:
    name = f"node-{i:05d}"
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": f"zone-{i % zones}"}
    alloc = {"cpu": cpu, "memory": "32Gi", "pods": "110"}
    return decode(
        {
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": alloc, "capacity": alloc},
        },
        Node,
    )


PROFILE = default_config().profiles[0].scheduler_name


def pod(name: str, cpu: str = "100m", node_name: str = "") -> PodInfo:
    spec: dict[str, Any] = {
        "schedulerName": PROFILE,
        "containers": [
            {
                "name": "c",
                "image": "pause",
                "resources": {"requests": {"cpu": cpu, "memory": "500Mi"}},
            }
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    return PodInfo(
        decode(
            {"metadata": {"name": name, "namespace": "bench", "uid": f"uid-{name}"}, "spec": spec},
            Pod,
        )
    )


def timed(fn: Callable[[], object], repeat: int = 1) -> float:
    """Best-of wall time of ``fn`` in seconds (GC off while timing)."""
    best = float("inf")
    for _ in range(repeat):
        gc.disable()
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        gc.enable()
    return best


def row(what: str, seconds: float, per: int = 1, unit: str = "") -> None:
    if per > 1:
        print(f"  {what:<62} {seconds * 1e3:9.3f} ms total  {seconds / per * 1e6:8.3f} us/{unit}")
    else:
        print(f"  {what:<62} {seconds * 1e3:9.3f} ms")


def bench_cache(n_nodes: int, n_pods: int) -> None:
    print(f"cache / snapshot: {n_nodes} nodes, {n_pods} assigned pods")
    clock = FakeClock()
    cache = Cache(clock, assumed_ttl=30)
    nodes = [node(i) for i in range(n_nodes)]
    pods = [pod(f"bound-{j}", node_name=nodes[j % n_nodes].metadata.name) for j in range(n_pods)]
    row("add nodes", timed(lambda: [cache.add_node(n) for n in nodes]), n_nodes, "node")
    row("add assigned pods", timed(lambda: [cache.add_pod(p) for p in pods]), n_pods, "pod")
    snap = Snapshot()
    row(
        "first snapshot (clone every node, fill columns)",
        timed(lambda: cache.update_snapshot(snap)),
    )
    row("snapshot update, nothing changed", timed(lambda: cache.update_snapshot(snap), 20))

    rng = random.Random(0)
    cycles = 2000
    pending = [pod(f"assume-{k}") for k in range(cycles)]

    def one_dirty() -> None:
        for p in pending:
            name = nodes[rng.randrange(n_nodes)].metadata.name
            cache.assume_pod(p.assumed_on(name), name)
            cache.update_snapshot(snap)

    row(
        "per cycle: assume 1 pod + snapshot update (1 dirty node)",
        timed(one_dirty),
        cycles,
        "cycle",
    )
    row("full rebuild into a fresh Snapshot", timed(lambda: cache.update_snapshot(Snapshot()), 3))
    extra = iter(range(n_nodes, n_nodes + 10))

    def node_added() -> None:
        cache.add_node(node(next(extra)))
        cache.update_snapshot(snap)

    row("node add: re-layout, clones of unchanged nodes reused", timed(node_added, 3))


def bench_queue(n_pods: int) -> None:
    print(f"queue: {n_pods} pods, default profile (PrioritySort, SchedulingGates, hints on)")
    clock = FakeClock()
    fws = build_frameworks(default_config(), default_registry(entry_points=False), clock=clock)
    q = SchedulingQueue(fws, clock=clock)
    pods = [pod(f"p-{j}", cpu="8") for j in range(n_pods)]  # too big for the 4-CPU nodes
    row("add", timed(lambda: [q.add(p, PROFILE) for p in pods]), n_pods, "pod")
    popped = []

    def pop_all() -> None:
        while (qpi := q.pop_nowait()) is not None:
            popped.append(qpi)

    row("pop", timed(pop_all), n_pods, "pod")

    def fail_all() -> None:
        for qpi in popped:
            qpi.unschedulable_plugins = {"NodeResourcesFit"}
            q.add_unschedulable_if_not_present(qpi)

    row("add_unschedulable_if_not_present (to the pool)", timed(fail_all), n_pods, "pod")
    assert q.pending_counts()["unschedulable"] == n_pods
    clock.advance(60)  # backoff over: moved pods go straight to activeQ

    small, big = node(900_000), node(900_001, cpu="64")
    cases: list[tuple[str, Any, Any, Any]] = [
        (
            "NodeLabelChange (no rejector registered it)",
            ev.node_update_events(
                small,
                decode(
                    {
                        **_raw(small),
                        "metadata": {"name": small.metadata.name, "labels": {"x": "y"}},
                    },
                    Node,
                ),
            )[0],
            small,
            small,
        ),
        (
            "AssignedPodAdd (no rejector registered it)",
            ev.ASSIGNED_POD_ADD,
            None,
            pod("x", node_name="n"),
        ),
        ("NodeAdd, 4-CPU node: Fit's hint says QueueSkip for all", ev.NODE_ADD, None, small),
    ]
    for label, event, old, new in cases:
        t = timed(lambda e=event, o=old, n=new: q.move_all_to_active_or_backoff(e, o, n), 3)
        assert q.pending_counts()["unschedulable"] == n_pods
        row(f"move_all {label}", t, n_pods, "pooled pod")
    t = timed(lambda: q.move_all_to_active_or_backoff(ev.NODE_ADD, None, big))
    assert q.pending_counts()["active"] == n_pods
    row("move_all NodeAdd, 64-CPU node: every pod moves to activeQ", t, n_pods, "pooled pod")


def _raw(n: Node) -> dict[str, Any]:
    import msgspec

    out: dict[str, Any] = msgspec.to_builtins(n)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50_000)
    args = ap.parse_args()
    bench_cache(args.nodes, args.pods)
    bench_queue(args.pods)


if __name__ == "__main__":
    main()
