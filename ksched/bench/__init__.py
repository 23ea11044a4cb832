"""``ksched bench``: scheduler_perf-style workloads, in process.

Nodes and pods follow scheduler_perf's templates (node-default: 4 CPU, 32Gi, 110
pods; pod-default: 100m / 500Mi). ``--init-pods`` are scheduled first and not
measured; then the measured pods go through the real scheduler (queue, cycle,
cache, binding) on a simulated cluster, and we report throughput, per-pod
attempt latency percentiles and peak RSS. A pod-group workload's PodGroups come with
the nodes, and its report adds ``pod_groups``: per group, the time to its last bind.
"""

from __future__ import annotations

import gc
import resource
import sys
import time
from typing import TYPE_CHECKING, Any

import anyio

from ..api.objects import Node, Pod, decode
from ..framework.types import PodInfo
from ..sim.cluster_file import ClusterFile, file_kinds
from ..sim.simulator import Simulation

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration
    from ..framework.registry import Registry

__all__ = ["WORKLOADS", "Workload", "run_bench"]


from .workloads import WORKLOADS, Workload, group_report, groups_of


def _peak_rss_mb() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(r / 1024 if sys.platform != "darwin" else r / (1024 * 1024), 1)


def _record_binds(sim: Simulation) -> dict[str, float]:
    """Pod name -> when the simulated cluster bound it (wall clock), filled as it runs."""
    out: dict[str, float] = {}
    bind = sim.cluster.bind

    async def recording(pod: PodInfo, node_name: str) -> None:
        await bind(pod, node_name)
        out.setdefault(pod.name, time.perf_counter())

    sim.cluster.bind = recording  # type: ignore[method-assign]
    return out


def run_bench(
    workload: str,
    *,
    nodes: int,
    pods: int,
    init_pods: int = 0,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    seed: int = 0,
    progress: bool = False,
    placements: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``workload`` in process; ``placements``, if given, gets every pod's
    ``namespace/name`` and the node it ended on ("" for none), to check the outcome."""
    node_ms, init_ms, measured_ms = WORKLOADS[workload](nodes, pods, init_pods)
    cf = ClusterFile(
        nodes=[(decode(m, Node), m) for m in node_ms if m["kind"] == "Node"],
        pods=[(decode(m, Pod), m) for m in init_ms],
    )
    kinds = file_kinds()
    for m in node_ms:
        # the cluster's other pods (held by a scheduling gate, or to be deleted) are pending
        # from the start, never measured
        if m["kind"] == "Pod":
            cf.pods.append((decode(m, Pod), m))
            continue
        row = kinds.get(m["kind"])
        if row is not None and row.struct is not None and m["kind"] != "Node":
            cf.file(row, decode(m, row.struct))
    sim = Simulation(cf, config, registry, seed=seed)
    measured = [PodInfo(decode(m, Pod), m) for m in measured_ms]
    latencies: list[float] = []
    result: dict[str, Any] = {}
    groups = groups_of(measured_ms)
    bound_at = _record_binds(sim) if groups else {}

    async def main() -> None:
        pending = sim._load()
        await sim.drive(10 * max(1, len(pending)))
        sim.add_pending(measured)
        # As the daemon does once its informers have synced (SchedulerDaemon
        # .freeze_gc_after_sync): the loaded cluster is long-lived, not garbage to rescan.
        gc.collect()
        gc.freeze()
        last = [time.perf_counter()]
        done = [0]

        def on_attempt(_: Any) -> None:
            now = time.perf_counter()
            latencies.append(now - last[0])
            last[0] = now
            done[0] += 1
            if progress and done[0] % 500 == 0:
                print(f"\r{workload}: {done[0]}/{pods} pods", end="", file=sys.stderr, flush=True)

        t0 = time.perf_counter()
        last[0] = t0
        await sim.drive(10 * pods, on_attempt)
        elapsed = time.perf_counter() - t0
        if progress:
            print(file=sys.stderr)
        scheduled = sum(
            1 for p in sim.cluster.pods.values() if p.node_name and p.namespace == "sched-1"
        )
        lat = sorted(latencies)

        def pct(p: float) -> float:
            if not lat:
                return 0.0
            return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 3)

        result.update(
            {
                "workload": workload,
                "nodes": nodes,
                "pods": pods,
                "mode": "in-process",
                "scheduled": scheduled,
                "seconds": round(elapsed, 3),
                "pods_per_second": round(scheduled / elapsed, 1) if elapsed > 0 else 0.0,
                "p50_ms": pct(0.50),
                "p99_ms": pct(0.99),
                "peak_rss_mb": _peak_rss_mb(),
            }
        )
        if placements is not None:
            placements.update({p.key: p.node_name for p in sim.cluster.pods.values()})
        if groups:
            # every member pending from t0 on: a group's figure is when it was bound
            created = dict.fromkeys(groups, t0)
            result["pod_groups"] = group_report(groups, created, bound_at)

    try:
        anyio.run(main)
    finally:
        gc.unfreeze()
    return result
