"""scheduler_perf-style workloads: (nodes, init pods, measured pods) as manifests.

Each workload is a function ``(nodes, pods, init_pods) -> (node manifests, init pod
manifests, measured pod manifests)``, registered in ``WORKLOADS`` under its
scheduler_perf name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["WORKLOADS", "Manifest", "Workload", "node_default", "pod_default"]

Manifest = dict[str, Any]
Workload = Callable[[int, int, int], tuple[list[Manifest], list[Manifest], list[Manifest]]]


def node_default(i: int, zones: int = 0) -> Manifest:
    name = f"scheduler-perf-{i:05d}"
    labels = {"kubernetes.io/hostname": name}
    if zones:
        labels["topology.kubernetes.io/zone"] = f"zone-{i % zones}"
    alloc = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": alloc, "allocatable": alloc},
    }


def pod_default(name: str, namespace: str = "sched-test", **extra: Any) -> Manifest:
    spec: dict[str, Any] = {
        "schedulerName": "ksched",
        "containers": [{
            "name": "pause",
            "image": "registry.k8s.io/pause:3.10",
            "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "100m", "memory": "500Mi"},
                          "requests": {"cpu": "100m", "memory": "500Mi"}},
        }],
    }
    spec.update(extra)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
            "spec": spec}


def scheduling_basic(nodes: int, pods: int, init_pods: int) -> tuple[list[Manifest], list[Manifest], list[Manifest]]:
    return (
        [node_default(i) for i in range(nodes)],
        [pod_default(f"init-pod-{i}", "sched-0") for i in range(init_pods)],
        [pod_default(f"pod-{i}", "sched-1") for i in range(pods)],
    )


WORKLOADS: dict[str, Workload] = {
    "SchedulingBasic": scheduling_basic,
}


