"""scheduler_perf-style workloads: (nodes, init pods, measured pods) as manifests.

Each workload is a function ``(nodes, pods, init_pods) -> (node manifests, init pod
manifests, measured pod manifests)``, registered in ``WORKLOADS`` under its
scheduler_perf name. The first list may also hold the cluster's other objects (DRA's
DeviceClasses, ResourceSlices and ResourceClaimTemplates).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "IN_PROCESS_ONLY",
    "POD_GROUP_WORKLOADS",
    "UPSTREAM_WORKLOADS",
    "WORKLOADS",
    "Manifest",
    "PodGroupWorkload",
    "UpstreamWorkload",
    "Workload",
    "collection_path",
    "feature_gates_of",
    "gate_setting",
    "group_latencies",
    "group_report",
    "group_service_times",
    "groups_of",
    "node_default",
    "pod_default",
    "scheduler_config_of",
]

Manifest = dict[str, Any]
Workload = Callable[[int, int, int], tuple[list[Manifest], list[Manifest], list[Manifest]]]


def collection_path(obj: Manifest) -> str:
    """The collection URL path of ``obj`` from its apiVersion, kind and namespace."""
    api_version = str(obj.get("apiVersion", "v1"))
    kind = str(obj["kind"])
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    if plural.endswith("ys"):
        plural = plural[:-2] + "ies"
    ns = obj.get("metadata", {}).get("namespace")
    if ns and kind not in ("Namespace", "Node"):
        return f"{base}/namespaces/{ns}/{plural}"
    return f"{base}/{plural}"


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


# ---- the workloads users run now (v1.37's misc/, batching/, topology_spreading/) ------------


@dataclass(frozen=True)
class UpstreamWorkload:
    """A workload whose scheduler_perf config sets feature gates or a scheduler config of
    its own: every runner turns on ``feature_gates`` (``Name`` for on, ``Name=false``
    for off, as the config's ``featureGates`` say) in the API server and both
    schedulers, and, unless the user gives ``--config``, runs the schedulers with
    ``scheduler_config`` (its ``schedulerConfigPath``, profile named ``ksched``)."""

    build: Workload
    feature_gates: tuple[str, ...] = ()
    scheduler_config: Manifest | None = None

    def __call__(self, nodes: int, pods: int, init_pods: int) -> _Result:
        return self.build(nodes, pods, init_pods)


def gate_setting(gate: str) -> str:
    """``Name=bool`` for a ``feature_gates`` entry (a bare name means on)."""
    return gate if "=" in gate else f"{gate}=true"


#: batching/scheduler-config-no-topology.yaml: no default spreading constraints, so a
#: pod's labels (its "signature" label) do not make PodTopologySpread look at it
NO_TOPOLOGY_CONFIG: Manifest = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "ksched",
            "pluginConfig": [
                {
                    "name": "PodTopologySpread",
                    "args": {"defaultingType": "List", "defaultConstraints": []},
                }
            ],
        }
    ],
}


def _pause(version: str, **resources: Any) -> list[Manifest]:
    """The one pause container of a template (``resources`` as given, if any)."""
    c: Manifest = {"name": "pause", "image": f"registry.k8s.io/pause:{version}"}
    if resources:
        c["resources"] = resources
    return [c]


def light_pod(name: str, namespace: str = "sched-1") -> Manifest:
    """templates/light-pod.yaml: pause 3.10.1, no requests, terminationGracePeriodSeconds 0."""
    m = pod_default(name, namespace, terminationGracePeriodSeconds=0)
    m["spec"]["containers"] = _pause("3.10.1")
    return m


def _signature(m: Manifest, i: int, batch: int) -> Manifest:
    """createPods' signatureBatchSize: pods ``batch`` at a time share a "signature" label."""
    m["metadata"]["labels"] = {"signature": f"signature-label-{i // batch}"}
    return m


def hostport_pod(name: str, i: int, batch: int) -> Manifest:
    """templates/pod-hostport-80.yaml: host port 80 (one such pod per node), 100m/100Mi."""
    m = pod_default(name, "sched-1")
    m["spec"]["containers"] = _pause("3.10.1", requests={"cpu": "100m", "memory": "100Mi"})
    m["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
    return _signature(m, i, batch)


def saturation_pod(name: str, i: int, batch: int) -> Manifest:
    """templates/pod-saturation.yaml: 3 CPU and 1Gi (one such pod per 4-CPU node)."""
    m = pod_default(name, "sched-1")
    m["spec"]["containers"] = _pause("3.10.1", requests={"cpu": "3", "memory": "1Gi"})
    return _signature(m, i, batch)


def batching(pod: Callable[[str, int, int], Manifest], batch: int) -> Workload:
    """batching/performance-config.yaml's HostPortConflict and ResourceSaturation: nodes,
    then ``pods`` pods of ``pod``'s template, ``batch`` to a signature; no init pods."""

    def build(nodes: int, pods: int, init_pods: int) -> _Result:
        return (
            [node_default(i) for i in range(nodes)],
            [],
            [pod(f"pod-{i}", i, batch) for i in range(pods)],
        )

    return build


EXTENDED_RESOURCE = "foo.com/bar"


def scheduling_with_extended_resource(nodes: int, pods: int, init_pods: int) -> _Result:
    """misc/'s SchedulingWithExtendedResource (nodesWithoutExtendedResource 0, as at its
    two larger sizes): node ``i`` (templates/node-with-extended-resource.yaml) has one
    ``foo.com/bar-<i>``, and pod ``i`` (pod-with-extended-resource.yaml, pause 3.9) asks
    for exactly that one, so each pod fits one node."""
    node_ms = [node_default(i) for i in range(nodes)]
    for i, m in enumerate(node_ms):
        name = f"scheduler-perf-extended-resource-{i:05d}"
        m["metadata"] = {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "node-with-extended-resource": "true"},
        }
        for amounts in m["status"].values():
            amounts[f"{EXTENDED_RESOURCE}-{i}"] = "1"

    def pod(i: int) -> Manifest:
        m = pod_default(f"test-extended-resource-{i}", "sched-1")
        r = {f"{EXTENDED_RESOURCE}-{i}": "1"}
        m["spec"]["containers"] = _pause("3.9", requests=r, limits=dict(r))
        return m

    return node_ms, [], [pod(i) for i in range(pods)]


GATED_NS = "sched-gated"
SCHEDULING_GATE = "test.k8s.io/hold"


def scheduling_while_gated(nodes: int, pods: int, init_pods: int) -> _Result:
    """misc/'s SchedulingWhileGated: the named node (90000 pods) and ``nodes - 1`` default
    ones; ``pods // 2`` pods that stay gated (gated-pod.yaml, in their own namespace,
    with the cluster's other objects: pending, never measured), as upstream's 10000
    gated to 20000 measured; ``init_pods`` light pods bound (upstream's deletingPods,
    which the real harness deletes at 50/s while the measured light pods schedule)."""
    big, *_ = scheduling_daemonset(0, 0, 0)[0]
    gated = []
    for i in range(pods // 2):
        m = pod_default(f"gated-pod-{i}", GATED_NS, schedulingGates=[{"name": SCHEDULING_GATE}])
        m["spec"]["containers"] = _pause("3.10.1")
        gated.append(m)
    return (
        [big, *(node_default(i) for i in range(nodes - 1)), *gated],
        [light_pod(f"light-pod-{i}", "sched-0") for i in range(init_pods)],
        [light_pod(f"pod-{i}") for i in range(pods)],
    )


DELETING_NS = "sched-deleting"
FINALIZER = "test.k8s.io/finalizer"


def scheduling_deleted_pods_with_finalizers(nodes: int, pods: int, init_pods: int) -> _Result:
    """misc/'s SchedulingDeletedPodsWithFinalizers: default nodes; ``init_pods`` pending
    pods with a finalizer (pod-with-finalizer.yaml, with the cluster's other objects, in
    their own namespace: upstream's deletingPods, which the real harness deletes at
    100/s, so they linger with a deletionTimestamp); measured light pods."""
    deleting = []
    for i in range(init_pods):
        m = pod_default(f"pod-{i}", DELETING_NS)
        m["metadata"]["finalizers"] = [FINALIZER]
        m["spec"]["containers"] = _pause("3.10.1")
        deleting.append(m)
    return (
        [*(node_default(i) for i in range(nodes)), *deleting],
        [],
        [light_pod(f"light-pod-{i}") for i in range(pods)],
    )


MOON_ZONES = ("moon-1", "moon-2", "moon-3")


def _moon_nodes(nodes: int) -> list[Manifest]:
    """node-default.yaml with labelNodePrepareStrategy's zone label, the three values in
    turn."""
    node_ms = [node_default(i) for i in range(nodes)]
    for i, m in enumerate(node_ms):
        m["metadata"]["labels"]["topology.kubernetes.io/zone"] = MOON_ZONES[i % len(MOON_ZONES)]
    return node_ms


def preferred_topology_spreading(nodes: int, pods: int, init_pods: int) -> _Result:
    """topology_spreading/'s PreferredTopologySpreading: moon zones, plain init pods,
    measured pod-with-preferred-topology-spreading.yaml (maxSkew 5 on the zone,
    ScheduleAnyway, over color=blue; pause 3.10.2, 100m/500Mi)."""
    spread = [
        {
            "maxSkew": 5,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"color": "blue"}},
        }
    ]

    def pod(i: int) -> Manifest:
        m = pod_default(f"spreading-pod-{i}", "sched-1", topologySpreadConstraints=spread)
        m["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.10.2"
        m["metadata"]["labels"] = {"color": "blue"}
        return m

    return (
        _moon_nodes(nodes),
        [pod_default(f"init-pod-{i}", "sched-0") for i in range(init_pods)],
        [pod(i) for i in range(pods)],
    )


def default_topology_spreading(nodes: int, pods: int, init_pods: int) -> _Result:
    """topology_spreading/'s DefaultTopologySpreading: moon zones, a Service (service.yaml)
    selecting app=scheduler-perf in the measured namespace, plain init pods, measured
    pod-with-label.yaml (app=scheduler-perf, no requests): PodTopologySpread's default
    constraints take their selector from the Service."""
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "service-0", "namespace": "sched-1"},
        "spec": {
            "selector": {"app": "scheduler-perf"},
            "ports": [{"protocol": "TCP", "port": 80, "targetPort": 8000}],
        },
    }

    def pod(i: int) -> Manifest:
        m = pod_default(f"pod-{i}", "sched-1")
        m["metadata"]["labels"] = {"app": "scheduler-perf"}
        m["spec"]["containers"] = _pause("3.10.1")
        return m

    return (
        [svc, *_moon_nodes(nodes)],
        [pod_default(f"init-pod-{i}", "sched-0") for i in range(init_pods)],
        [pod(i) for i in range(pods)],
    )


BATCH_SIZE = 10  # the first of upstream's performance variants (20000Nodes_20000Pods_10BatchSize)

UPSTREAM_WORKLOADS: dict[str, UpstreamWorkload] = {
    # misc/'s 5000Nodes_50000Pods (SchedulerAsyncAPICalls off, as its config says)
    "SchedulingBasic_50000Pods": UpstreamWorkload(
        scheduling_basic, ("SchedulerAsyncAPICalls=false",)
    ),
    "HostPortConflict": UpstreamWorkload(
        batching(hostport_pod, BATCH_SIZE), ("OpportunisticBatching",), NO_TOPOLOGY_CONFIG
    ),
    "HostPortConflict_OpportunisticBatchingDisabled": UpstreamWorkload(
        batching(hostport_pod, 1), ("OpportunisticBatching=false",), NO_TOPOLOGY_CONFIG
    ),
    "ResourceSaturation": UpstreamWorkload(
        batching(saturation_pod, BATCH_SIZE), ("OpportunisticBatching",), NO_TOPOLOGY_CONFIG
    ),
    "ResourceSaturation_OpportunisticBatchingDisabled": UpstreamWorkload(
        batching(saturation_pod, 1), ("OpportunisticBatching=false",), NO_TOPOLOGY_CONFIG
    ),
    "SchedulingWithExtendedResource": UpstreamWorkload(
        scheduling_with_extended_resource, ("DynamicResourceAllocation", "DRAExtendedResource")
    ),
    "SchedulingWhileGated": UpstreamWorkload(scheduling_while_gated),
    "SchedulingDeletedPodsWithFinalizers": UpstreamWorkload(
        scheduling_deleted_pods_with_finalizers
    ),
    "PreferredTopologySpreading": UpstreamWorkload(preferred_topology_spreading),
    "DefaultTopologySpreading": UpstreamWorkload(default_topology_spreading),
}


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
WORKLOADS.update(UPSTREAM_WORKLOADS)


# ---- pod groups (scheduler_perf's podgroup/{basicscheduling,gangscheduling,tas}) --------------

SCHEDULING_API = "scheduling.k8s.io/v1beta1"
GENERIC_WORKLOAD = ("GenericWorkload",)
TOPOLOGY_AWARE = ("GenericWorkload", "TopologyAwareWorkloadScheduling")
RACK = "topology.kubernetes.io/rack"


def pod_group(name: str, namespace: str, min_count: int | None, topology: str = "") -> Manifest:
    """podgroup/*/templates/podgroup.yaml: a basic group (``min_count`` None) or a gang of
    ``min_count``, with tas's one topology constraint when ``topology`` names a key."""
    policy: Manifest = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    spec: Manifest = {"schedulingPolicy": policy}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return {
        "apiVersion": SCHEDULING_API,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def group_member(name: str, namespace: str, group: str) -> Manifest:
    """podgroup/*/templates/*-pod.yaml: pause 3.10.1 requesting 100m and 100Mi (no limits,
    no port), a member of ``group``."""
    m = pod_default(name, namespace, schedulingGroup={"podGroupName": group})
    m["spec"]["containers"] = [
        {
            "name": "pause",
            "image": "registry.k8s.io/pause:3.10.1",
            "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}},
        }
    ]
    return m


def tas_node(i: int) -> Manifest:
    """podgroup/tas/templates/node.yaml: node-default's capacity, a zone and a rack per
    hundred nodes."""
    m = node_default(i)
    name = f"node-{i}"
    m["metadata"] = {
        "name": name,
        "labels": {
            "kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": f"zone-{i // 100}",
            RACK: f"rack-{i // 100}",
        },
    }
    return m


@dataclass(frozen=True)
class PodGroupWorkload:
    """A scheduler_perf pod-group workload: ``createPodGroups`` (returned with the nodes,
    so every runner creates them before any pod) then ``createPods``, member ``i`` in group
    ``i // per_group``.

    Groups hold ``per_group`` pods each (the last one the remainder, its minCount its
    size, so every gang can be placed), or, with ``groups`` set, the pods split into that
    many groups. ``gang``: a gang of minCount its size, else ``basic``. ``topology``:
    tas's nodes (a rack per hundred) and the groups' rack constraint. ``feature_gates``:
    what the API server and both schedulers run with (the config's ``featureGates``).
    """

    kind: str  # the scheduler_perf test name, for docs and variant names
    pod_prefix: str
    group_prefix: str
    per_group: int = 3
    groups: int = 0
    gang: bool = True
    topology: str = ""
    feature_gates: tuple[str, ...] = GENERIC_WORKLOAD

    def sizes(self, pods: int) -> list[int]:
        """The member count of each group for ``pods`` measured pods."""
        if self.groups:
            base, extra = divmod(pods, self.groups)
            return [base + (1 if g < extra else 0) for g in range(self.groups) if base or g < extra]
        full, rest = divmod(pods, self.per_group)
        return [self.per_group] * full + ([rest] if rest else [])

    def variant(self, nodes: int, pods: int) -> str:
        """scheduler_perf's name for this size: ``5000Nodes_1000Gangs_3000Pods``, with
        ``_1000PerGroup`` for the thousand-pod groups."""
        sizes = self.sizes(pods)
        unit = "Gangs" if self.gang else "Groups"
        name = f"{nodes}Nodes_{len(sizes)}{unit}_{pods}Pods"
        return name + ("_1000PerGroup" if sizes and sizes[0] == 1000 else "")

    def __call__(self, nodes: int, pods: int, init_pods: int) -> _Result:
        ns = "sched-1"
        node_ms = [tas_node(i) if self.topology else node_default(i) for i in range(nodes)]
        groups: list[Manifest] = []
        measured: list[Manifest] = []
        for g, size in enumerate(self.sizes(pods)):
            name = f"{self.group_prefix}{g}"
            groups.append(pod_group(name, ns, size if self.gang else None, self.topology))
            first = len(measured)
            measured += [
                group_member(f"{self.pod_prefix}{first + k}", ns, name) for k in range(size)
            ]
        init = [pod_default(f"init-pod-{i}", "sched-0") for i in range(init_pods)]
        return node_ms + groups, init, measured


def feature_gates_of(workload: str) -> tuple[str, ...]:
    """The feature gates ``workload``'s config sets (on the API server and the
    schedulers): ``Name`` for on, ``Name=false`` for off (``gate_setting``)."""
    wl = WORKLOADS.get(workload)
    return wl.feature_gates if isinstance(wl, PodGroupWorkload | UpstreamWorkload) else ()


def scheduler_config_of(workload: str) -> Manifest | None:
    """The KubeSchedulerConfiguration ``workload``'s scheduler_perf config runs with, if
    not the default one."""
    wl = WORKLOADS.get(workload)
    return wl.scheduler_config if isinstance(wl, UpstreamWorkload) else None


def groups_of(measured: list[Manifest]) -> dict[str, str]:
    """Measured pod name -> its pod group's name (pods of no group left out)."""
    out: dict[str, str] = {}
    for m in measured:
        group = (m["spec"].get("schedulingGroup") or {}).get("podGroupName")
        if group:
            out[m["metadata"]["name"]] = group
    return out


def group_latencies(
    groups: Mapping[str, str], created: Mapping[str, float], bound: Mapping[str, float]
) -> dict[str, float | None]:
    """Per group, seconds from its last member created to the group bound (its last member
    bound), 0 when bound before (a backlog the scheduler drained before the harness saw
    it ready); None for a group with a member never bound. What "no pause between gangs"
    means: each group bound as soon as it can be, never waiting on another's timer."""
    members: dict[str, list[str]] = {}
    for pod, group in groups.items():
        members.setdefault(group, []).append(pod)
    out: dict[str, float | None] = {}
    for group, pods in members.items():
        if any(p not in bound for p in pods):
            out[group] = None
            continue
        out[group] = max(0.0, max(bound[p] for p in pods) - max(created[p] for p in pods))
    return out


#: Per-group figures are listed in a report up to this many groups (the summary always).
GROUPS_LISTED = 50


def group_service_times(
    groups: Mapping[str, str], created: Mapping[str, float], bound: Mapping[str, float]
) -> dict[str, float]:
    """Per bound group, in the order they were bound: seconds from the later of its last
    member created and the previous group bound, to the group bound. Where groups queue
    behind each other (created faster than placed) the latency grows with the queue; this
    does not: each is one group's own time, and a pause between two groups shows in it."""
    members: dict[str, list[str]] = {}
    for pod, group in groups.items():
        members.setdefault(group, []).append(pod)
    done = sorted(
        (max(bound[p] for p in pods), max(created[p] for p in pods), group)
        for group, pods in members.items()
        if all(p in bound for p in pods)
    )
    out: dict[str, float] = {}
    previous = float("-inf")
    for at, complete, group in done:
        out[group] = max(0.0, at - max(complete, previous))
        previous = at
    return out


def group_report(
    groups: Mapping[str, str], created: Mapping[str, float], bound: Mapping[str, float]
) -> Manifest:
    """The groups' summary for a bench result: how many, how many bound, the max and
    median of ``group_latencies`` and of ``group_service_times``, and (few groups) each
    group's latency, in group order."""
    latencies = group_latencies(groups, created, bound)
    done = sorted(v for v in latencies.values() if v is not None)
    service = sorted(group_service_times(groups, created, bound).values())

    def summary(values: list[float]) -> tuple[float | None, float | None]:
        if not values:
            return None, None
        return round(values[-1], 3), round(statistics.median(values), 3)

    out: Manifest = {"groups": len(latencies), "bound": len(done)}
    out["max_s"], out["median_s"] = summary(done)
    out["service_max_s"], out["service_median_s"] = summary(service)
    if len(latencies) <= GROUPS_LISTED:
        out["per_group_s"] = {
            g: (None if v is None else round(v, 3))
            for g, v in sorted(latencies.items(), key=lambda kv: _natural(kv[0]))
        }
    return out


def _natural(name: str) -> tuple[str, int]:
    """gang-2 before gang-10."""
    head, _, tail = name.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (name, -1)


POD_GROUP_WORKLOADS: dict[str, PodGroupWorkload] = {
    "BasicScheduling": PodGroupWorkload(
        "BasicScheduling", "test-basic-scheduling-", "basic-group-", gang=False
    ),
    "GangScheduling": PodGroupWorkload("GangScheduling", "test-gang-scheduling-", "gang-"),
    "TopologyAwareScheduling": PodGroupWorkload(
        "TopologyAwareScheduling",
        "test-tas-scheduling-",
        "gang-",
        per_group=4,
        topology=RACK,
        feature_gates=TOPOLOGY_AWARE,
    ),
    # the _1000PerGroup variants of the three
    "BasicScheduling_1000PerGroup": PodGroupWorkload(
        "BasicScheduling", "test-basic-scheduling-", "basic-group-", per_group=1000, gang=False
    ),
    "GangScheduling_1000PerGroup": PodGroupWorkload(
        "GangScheduling", "test-gang-scheduling-", "gang-", per_group=1000
    ),
    "TopologyAwareScheduling_1000PerGroup": PodGroupWorkload(
        "TopologyAwareScheduling",
        "test-tas-scheduling-",
        "gang-",
        per_group=1000,
        topology=RACK,
        feature_gates=TOPOLOGY_AWARE,
    ),
    # ksched's own: 20 gangs (of 500 pods at full size), the time each waits once complete
    "Gangs20x500": PodGroupWorkload("Gangs20x500", "gang-pod-", "gang-", groups=20),
}
WORKLOADS.update(POD_GROUP_WORKLOADS)
