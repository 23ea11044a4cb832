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


def pod_with_cpu(name: str, ns: str, cpu: str, *, limits: bool = True, **extra: Any) -> Manifest:
    """pod-default with other CPU requests (pod-low/high-priority*.yaml)."""
    m = pod_default(name, ns, **extra)
    r = {"cpu": cpu, "memory": "500Mi"}
    m["spec"]["containers"][0]["resources"] = (
        {"limits": dict(r), "requests": dict(r)} if limits else {"requests": r}
    )
    return m


def low_priority_pods(nodes: int, init_pods: int) -> list[Manifest]:
    """pod-low-priority.yaml (900m), four to a node by default (initPods = 4 x initNodes)."""
    return [
        pod_with_cpu(f"init-pod-{i}", "sched-0", "900m", terminationGracePeriodSeconds=0)
        for i in range(init_pods or 4 * nodes)
    ]


def high_priority_pod(name: str, ns: str = "sched-1") -> Manifest:
    """pod-high-priority.yaml: priority 10, 3000m: fits only by preempting three 900m pods."""
    return pod_with_cpu(name, ns, "3000m", priority=10)


def high_priority_large_cpu_pod(name: str, ns: str = "sched-churn") -> Manifest:
    """pod-high-priority-large-cpu.yaml: priority 10, 9 CPU: fits on no 4-CPU node."""
    return pod_with_cpu(name, ns, "9", limits=False, priority=10)


def preemption_basic(nodes: int, pods: int, init_pods: int) -> _Result:
    """scheduler_perf's PreemptionBasic: low-priority init pods fill every node; each
    measured pod (pod-high-priority.yaml) fits only by preempting three of them."""
    return (
        [node_default(i) for i in range(nodes)],
        low_priority_pods(nodes, init_pods),
        [high_priority_pod(f"pod-{i}") for i in range(pods)],
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


def preemption_async(nodes: int, pods: int, init_pods: int) -> _Result:
    """scheduler_perf's PreemptionAsync: PreemptionBasic's full nodes, measured pods that
    fit (pod-default, 100m) while high-priority preemptors arrive as churn (the harness
    creates those)."""
    return (
        [node_default(i) for i in range(nodes)],
        low_priority_pods(nodes, init_pods),
        [pod_default(f"pod-{i}", "sched-1") for i in range(pods)],
    )


def unschedulable(nodes: int, pods: int, init_pods: int) -> _Result:
    """scheduler_perf's Unschedulable: plain pods to schedule while pods that fit nowhere
    (pod-high-priority-large-cpu.yaml, 9 CPU) keep arriving as churn."""
    return scheduling_basic(nodes, pods, init_pods)


def mixed_scheduling_base_pod(nodes: int, pods: int, init_pods: int) -> _Result:
    """scheduler_perf's MixedSchedulingBasePod: all nodes in zone1; ``init_pods`` each of
    plain, pod-affinity, pod-anti-affinity, preferred-affinity and preferred-anti-affinity
    pods in sched-0; measured plain pods."""
    zone = "topology.kubernetes.io/zone"
    node_ms = [node_default(i) for i in range(nodes)]
    for m in node_ms:
        m["metadata"]["labels"][zone] = "zone1"
    host = "kubernetes.io/hostname"
    kinds: list[Callable[[str], Manifest]] = [
        lambda n: pod_default(n, "sched-0"),
        lambda n: _with_pod_affinity(
            pod_default(n, "sched-0"), {"color": "blue"}, "podAffinity", zone
        ),
        lambda n: _with_pod_affinity(
            pod_default(n, "sched-0"), {"color": "green"}, "podAntiAffinity", host
        ),
        lambda n: _preferred(pod_default(n, "sched-0"), "red", "podAffinity"),
        lambda n: _preferred(pod_default(n, "sched-0"), "yellow", "podAntiAffinity"),
    ]
    init = [kind(f"init-pod-{k}-{i}") for k, kind in enumerate(kinds) for i in range(init_pods)]
    return node_ms, init, [pod_default(f"pod-{i}", "sched-1") for i in range(pods)]


def _preferred(m: Manifest, color: str, kind: str) -> Manifest:
    """pod-with-preferred-pod-(anti-)affinity.yaml: weight 1 on the pod's own color."""
    m["metadata"]["labels"] = {"color": color}
    term = {
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaces": ["sched-1", "sched-0"],
    }
    m["spec"]["affinity"] = {
        kind: {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"podAffinityTerm": term, "weight": 1}
            ]
        }
    }
    return m


DAEMONSET_NODE = "scheduler-perf-node"


def scheduling_daemonset(nodes: int, pods: int, init_pods: int) -> _Result:
    """scheduler_perf's SchedulingDaemonset: one node named scheduler-perf-node (90000 pods)
    that every measured pod (daemonset-pod.yaml: no requests) selects by a metadata.name
    field affinity, among ``nodes`` default nodes NodeAffinity's PreFilter rules out."""
    big = node_default(0)
    big["metadata"] = {"name": DAEMONSET_NODE, "labels": {"kubernetes.io/hostname": DAEMONSET_NODE}}
    alloc = {"pods": "90000", "cpu": "4", "memory": "32Gi"}
    big["status"] = {"capacity": alloc, "allocatable": dict(alloc)}
    field_term = {
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": [DAEMONSET_NODE]}]
    }

    def pod(i: int) -> Manifest:
        m = pod_default(f"pod-{i}", "sched-1")
        spec = m["spec"]
        spec["containers"] = [{"name": "pause", "image": "registry.k8s.io/pause:3.10.2"}]
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [field_term]
                }
            }
        }
        return m

    return [big, *(node_default(i) for i in range(nodes))], [], [pod(i) for i in range(pods)]


WORKLOADS: dict[str, Workload] = {
    "SchedulingBasic": scheduling_basic,
    "SchedulingPodAffinity": scheduling_pod_affinity,
    "SchedulingPodAntiAffinity": scheduling_pod_anti_affinity,
    "TopologySpreading": topology_spreading,
    "PreemptionBasic": preemption_basic,
    "PreemptionAsync": preemption_async,
    "Unschedulable": unschedulable,
    "MixedSchedulingBasePod": mixed_scheduling_base_pod,
    "SchedulingDaemonset": scheduling_daemonset,
    "SchedulingWithResourceClaimTemplate": scheduling_with_resource_claim_template,
}
