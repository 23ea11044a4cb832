"""scheduler_perf-style workloads: (nodes, init pods, measured pods) as manifests.

Each workload is a function ``(nodes, pods, init_pods) -> (node manifests, init pod
manifests, measured pod manifests)``, registered in ``WORKLOADS`` under its
scheduler_perf name. The first list may also hold the cluster's other objects (DRA's
DeviceClasses, ResourceSlices and ResourceClaimTemplates).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["IN_PROCESS_ONLY", "WORKLOADS", "Manifest", "Workload", "node_default", "pod_default"]

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
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80}],
                "resources": {
                    "limits": {"cpu": "100m", "memory": "500Mi"},
                    "requests": {"cpu": "100m", "memory": "500Mi"},
                },
            }
        ],
    }
    spec.update(extra)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{namespace}-{name}"},
        "spec": spec,
    }


def scheduling_basic(
    nodes: int, pods: int, init_pods: int
) -> tuple[list[Manifest], list[Manifest], list[Manifest]]:
    return (
        [node_default(i) for i in range(nodes)],
        [pod_default(f"init-pod-{i}", "sched-0") for i in range(init_pods)],
        [pod_default(f"pod-{i}", "sched-1") for i in range(pods)],
    )


_Result = tuple[list[Manifest], list[Manifest], list[Manifest]]


def _with_pod_affinity(m: Manifest, labels: dict[str, str], kind: str, key: str) -> Manifest:
    """scheduler_perf's pod-with-pod-(anti-)affinity.yaml: a required term selecting the
    pod's own label in both benchmark namespaces."""
    m["metadata"]["labels"] = dict(labels)
    term = {
        "labelSelector": {"matchLabels": dict(labels)},
        "topologyKey": key,
        "namespaces": ["sched-1", "sched-0"],
    }
    m["spec"]["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return m


def scheduling_pod_affinity(nodes: int, pods: int, init_pods: int) -> _Result:
    """Every node in zone1; all pods want a color=blue pod in their zone."""
    zone = "topology.kubernetes.io/zone"
    node_ms = [node_default(i) for i in range(nodes)]
    for m in node_ms:
        m["metadata"]["labels"][zone] = "zone1"

    def pod(name: str, ns: str) -> Manifest:
        return _with_pod_affinity(pod_default(name, ns), {"color": "blue"}, "podAffinity", zone)

    return (
        node_ms,
        [pod(f"init-pod-{i}", "sched-0") for i in range(init_pods)],
        [pod(f"pod-{i}", "sched-1") for i in range(pods)],
    )


def scheduling_pod_anti_affinity(nodes: int, pods: int, init_pods: int) -> _Result:
    """All pods refuse to share a node with another color=green pod."""

    def pod(name: str, ns: str) -> Manifest:
        return _with_pod_affinity(
            pod_default(name, ns), {"color": "green"}, "podAntiAffinity", "kubernetes.io/hostname"
        )

    return (
        [node_default(i) for i in range(nodes)],
        [pod(f"init-pod-{i}", "sched-0") for i in range(init_pods)],
        [pod(f"pod-{i}", "sched-1") for i in range(pods)],
    )


def topology_spreading(nodes: int, pods: int, init_pods: int) -> _Result:
    """scheduler_perf's TopologySpreading: nodes over 3 zones, plain init pods, measured pods
    (pod-with-topology-spreading.yaml) with a hard zone spread, maxSkew 1, on color=blue."""
    zone = "topology.kubernetes.io/zone"
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": zone,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
    ]

    def pod(name: str) -> Manifest:
        m = pod_default(name, "sched-1", topologySpreadConstraints=spread)
        m["metadata"]["labels"] = {"color": "blue"}
        return m

    return (
        [node_default(i, zones=3) for i in range(nodes)],
        [pod_default(f"init-pod-{i}", "sched-0") for i in range(init_pods)],
        [pod(f"pod-{i}") for i in range(pods)],
    )


def preemption_basic(nodes: int, pods: int, init_pods: int) -> _Result:
    """scheduler_perf's PreemptionBasic: low-priority init pods (900m, pod-low-priority.yaml)
    fill every node, four to a node by default (initPods = 4 x initNodes); each measured
    pod (pod-high-priority.yaml: priority 10, 3000m) fits only by preempting three of them."""

    def resources(cpu: str) -> dict[str, Any]:
        r = {"cpu": cpu, "memory": "500Mi"}
        return {"limits": dict(r), "requests": dict(r)}

    def pod(name: str, ns: str, cpu: str, **extra: Any) -> Manifest:
        m = pod_default(name, ns, **extra)
        m["spec"]["containers"][0]["resources"] = resources(cpu)
        return m

    init = init_pods or 4 * nodes
    return (
        [node_default(i) for i in range(nodes)],
        [
            pod(f"init-pod-{i}", "sched-0", "900m", terminationGracePeriodSeconds=0)
            for i in range(init)
        ],
        [pod(f"pod-{i}", "sched-1", "3000m", priority=10) for i in range(pods)],
    )


DRA_DRIVER = "test-driver.cdi.k8s.io"
DRA_DEVICES_PER_NODE = 10


def scheduling_with_resource_claim_template(nodes: int, pods: int, init_pods: int) -> _Result:
    """scheduler_perf's SchedulingWithResourceClaimTemplate (dra/performance-config.yaml,
    5000pods_500nodes: maxClaimsPerNode 10): every node's driver publishes a ResourceSlice
    of ten devices; a DeviceClass selects the driver's devices by CEL; each pod asks for
    one device through a ResourceClaimTemplate, its claim made by the (simulated)
    resourceclaim controller. The class, slices and templates come with the nodes."""
    cls = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "test-class"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]},
    }
    out: list[Manifest] = [cls]
    for ns in ("sched-0", "sched-1"):
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "test-claim-template", "namespace": ns},
                "spec": {
                    "spec": {
                        "devices": {
                            "requests": [
                                {"name": "req-0", "exactly": {"deviceClassName": "test-class"}}
                            ]
                        }
                    }
                },
            }
        )
    node_ms = [node_default(i) for i in range(nodes)]
    for n in node_ms:
        name = n["metadata"]["name"]
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceSlice",
                "metadata": {"name": f"{name}-{DRA_DRIVER}"},
                "spec": {
                    "driver": DRA_DRIVER,
                    "nodeName": name,
                    "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": f"instance-{d}"} for d in range(DRA_DEVICES_PER_NODE)],
                },
            }
        )

    def pod(name: str, ns: str) -> Manifest:
        m = pod_default(name, ns)
        m["spec"]["containers"][0]["resources"]["claims"] = [{"name": "resource"}]
        m["spec"]["resourceClaims"] = [
            {"name": "resource", "resourceClaimTemplateName": "test-claim-template"}
        ]
        return m

    return (
        node_ms + out,
        [pod(f"init-pod-{i}", "sched-0") for i in range(init_pods)],
        [pod(f"pod-{i}", "sched-1") for i in range(pods)],
    )


# Workloads with objects besides nodes and pods (DRA's classes, slices and templates),
# which need controllers the e2e mode's API server does not run: in process only.
IN_PROCESS_ONLY = frozenset({"SchedulingWithResourceClaimTemplate"})

WORKLOADS: dict[str, Workload] = {
    "SchedulingBasic": scheduling_basic,
    "SchedulingPodAffinity": scheduling_pod_affinity,
    "SchedulingPodAntiAffinity": scheduling_pod_anti_affinity,
    "TopologySpreading": topology_spreading,
    "PreemptionBasic": preemption_basic,
    "SchedulingWithResourceClaimTemplate": scheduling_with_resource_claim_template,
}
