"""NodeResourcesFit filter, queueing hints and args: upstream fit_test.go tables, ported.

Every filter case also runs the batch form on a one-row snapshot, which must agree.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import Node, PodCondition, decode
from ksched.features import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import ClusterEvent, QueueingHint
from ksched.framework.registry import PluginArgsError
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins.noderesources import (
    Fit,
    FitArgs,
    InsufficientResource,
    ScoringStrategy,
    insufficient_resources,
)
from ksched.plugins.noderesources.resource_allocation import ArgsErrors, ResourceSpec
from ksched.queue.events import matches, pending_pod_events, pod_update_events
from tests.factories import make_node_info, make_pod

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
DRA_EXT = "extended.resource.dra.io/something"


def res(cpu: int = 0, mem: int = 0, eph: int = 0, **scalar: int) -> dict[str, Any]:
    """Container requests as upstream's newResourcePod writes them (milli-cpu, bytes)."""
    out: dict[str, Any] = {
        "cpu": f"{cpu}m",
        "memory": str(mem),
        "pods": "0",
        "ephemeral-storage": str(eph),
    }
    out.update({k.replace("__", "/"): str(v) for k, v in scalar.items()})
    return out


def sc(**scalar: int) -> dict[str, int]:
    return scalar


def resource_pod(
    *usage: dict[str, Any],
    init: tuple[dict[str, Any], ...] = (),
    overhead: dict[str, str] | None = None,
    pod_level: dict[str, Any] | None = None,
) -> PodInfo:
    spec: dict[str, Any] = {}
    if init:
        spec["initContainers"] = [
            {"name": f"i{i}", "resources": {"requests": r}} for i, r in enumerate(init)
        ]
    if overhead:
        spec["overhead"] = overhead
    if pod_level:
        spec["resources"] = {"requests": pod_level}
    return make_pod(
        containers=[{"name": f"c{i}", "resources": {"requests": r}} for i, r in enumerate(usage)],
        **spec,
    )


def with_scalars(base: dict[str, Any], scalars: dict[str, int]) -> dict[str, Any]:
    return {**base, **{k: str(v) for k, v in scalars.items()}}


def node(alloc: dict[str, Any], name: str = "n") -> Node:
    return decode(
        {"metadata": {"name": name}, "status": {"allocatable": alloc, "capacity": alloc}}, Node
    )


DEFAULT_ALLOC = {
    "cpu": "10m",
    "memory": "20",
    "pods": "32",
    EXT_A: "5",
    "ephemeral-storage": "20",
    HUGE_A: "5",
}


def run_filter(fit: Fit, pod: PodInfo, ni: NodeInfo) -> tuple[Code, list[str]] | None:
    """Filter per node and in batch; both must agree. Returns (code, reasons) or None."""
    state = CycleState()
    snap = Snapshot([ni])
    assert fit.pre_filter(state, pod, snap) == (None, None)
    st = fit.filter(state, pod, ni)
    mask = fit.filter_batch(state, pod, snap)
    assert mask.shape == (1,)
    assert bool(mask[0]) == (st is None)
    return None if st is None else (st.code, list(st.reasons))


IR = InsufficientResource


def ir(name: str, requested: int, used: int, capacity: int, unresolvable: bool = False) -> IR:
    reason = "Too many pods" if name == "pods" else f"Insufficient {name}"
    return IR(name, reason, requested, used, capacity, unresolvable)


# (name, pod, node pods, args, want insufficient resources) -- TestEnoughRequests
ENOUGH: list[tuple[str, Any, Any, dict[str, Any], list[IR]]] = [
    ("no resources requested always fits", lambda: make_pod(containers=[]), [res(10, 20)], {}, []),
    (
        "too many resources fails",
        lambda: resource_pod(res(1, 1)),
        [res(10, 20)],
        {},
        [ir("cpu", 1, 10, 10), ir("memory", 1, 20, 20)],
    ),
    (
        "too many resources fails due to init container cpu",
        lambda: resource_pod(res(1, 1), init=(res(3, 1),)),
        [res(8, 19)],
        {},
        [ir("cpu", 3, 8, 10)],
    ),
    (
        "too many resources fails due to highest init container cpu",
        lambda: resource_pod(res(1, 1), init=(res(3, 1), res(2, 1))),
        [res(8, 19)],
        {},
        [ir("cpu", 3, 8, 10)],
    ),
    (
        "too many resources fails due to init container memory",
        lambda: resource_pod(res(1, 1), init=(res(1, 3),)),
        [res(9, 19)],
        {},
        [ir("memory", 3, 19, 20)],
    ),
    (
        "too many resources fails due to highest init container memory",
        lambda: resource_pod(res(1, 1), init=(res(1, 3), res(1, 2))),
        [res(9, 19)],
        {},
        [ir("memory", 3, 19, 20)],
    ),
    (
        "init container fits because it's the max, not sum, of containers and init containers",
        lambda: resource_pod(res(1, 1), init=(res(1, 1),)),
        [res(9, 19)],
        {},
        [],
    ),
    (
        "multiple init containers fit because it's the max, not sum, of containers and init "
        "containers",
        lambda: resource_pod(res(1, 1), init=(res(1, 1), res(1, 1))),
        [res(9, 19)],
        {},
        [],
    ),
    ("both resources fit", lambda: resource_pod(res(1, 1)), [res(5, 5)], {}, []),
    (
        "one resource memory fits",
        lambda: resource_pod(res(2, 1)),
        [res(9, 5)],
        {},
        [ir("cpu", 2, 9, 10)],
    ),
    (
        "one resource cpu fits",
        lambda: resource_pod(res(1, 2)),
        [res(5, 19)],
        {},
        [ir("memory", 2, 19, 20)],
    ),
    ("equal edge case", lambda: resource_pod(res(5, 1)), [res(5, 19)], {}, []),
    (
        "equal edge case for init container",
        lambda: resource_pod(res(4, 1), init=(res(5, 1),)),
        [res(5, 19)],
        {},
        [],
    ),
    (
        "extended resource fits",
        lambda: resource_pod(with_scalars(res(), {EXT_A: 1})),
        [res()],
        {},
        [],
    ),
    (
        "extended resource fits for init container",
        lambda: resource_pod(res(), init=(with_scalars(res(), {EXT_A: 1}),)),
        [res()],
        {},
        [],
    ),
    (
        "extended resource capacity enforced",
        lambda: resource_pod(with_scalars(res(1, 1), {EXT_A: 10})),
        [with_scalars(res(), {EXT_A: 0})],
        {},
        [ir(EXT_A, 10, 0, 5, True)],
    ),
    (
        "extended resource capacity enforced for init container",
        lambda: resource_pod(res(), init=(with_scalars(res(1, 1), {EXT_A: 10}),)),
        [with_scalars(res(), {EXT_A: 0})],
        {},
        [ir(EXT_A, 10, 0, 5, True)],
    ),
    (
        "extended resource allocatable enforced",
        lambda: resource_pod(with_scalars(res(1, 1), {EXT_A: 1})),
        [with_scalars(res(), {EXT_A: 5})],
        {},
        [ir(EXT_A, 1, 5, 5)],
    ),
    (
        "extended resource allocatable enforced for init container",
        lambda: resource_pod(res(), init=(with_scalars(res(1, 1), {EXT_A: 1}),)),
        [with_scalars(res(), {EXT_A: 5})],
        {},
        [ir(EXT_A, 1, 5, 5)],
    ),
    (
        "extended resource allocatable enforced for multiple containers",
        lambda: resource_pod(
            with_scalars(res(1, 1), {EXT_A: 3}), with_scalars(res(1, 1), {EXT_A: 3})
        ),
        [with_scalars(res(), {EXT_A: 2})],
        {},
        [ir(EXT_A, 6, 2, 5, True)],
    ),
    (
        "extended resource allocatable admits multiple init containers",
        lambda: resource_pod(
            res(), init=(with_scalars(res(1, 1), {EXT_A: 3}), with_scalars(res(1, 1), {EXT_A: 3}))
        ),
        [with_scalars(res(), {EXT_A: 2})],
        {},
        [],
    ),
    (
        "extended resource allocatable enforced for multiple init containers",
        lambda: resource_pod(
            res(), init=(with_scalars(res(1, 1), {EXT_A: 6}), with_scalars(res(1, 1), {EXT_A: 3}))
        ),
        [with_scalars(res(), {EXT_A: 2})],
        {},
        [ir(EXT_A, 6, 2, 5, True)],
    ),
    (
        "extended resource allocatable enforced for unknown resource",
        lambda: resource_pod(with_scalars(res(1, 1), {EXT_B: 1})),
        [res()],
        {},
        [ir(EXT_B, 1, 0, 0, True)],
    ),
    (
        "extended resource allocatable enforced for unknown resource for init container",
        lambda: resource_pod(res(), init=(with_scalars(res(1, 1), {EXT_B: 1}),)),
        [res()],
        {},
        [ir(EXT_B, 1, 0, 0, True)],
    ),
    (
        "kubernetes.io resource capacity enforced",
        lambda: resource_pod(with_scalars(res(1, 1), {K8S_A: 10})),
        [res()],
        {},
        [ir(K8S_A, 10, 0, 0, True)],
    ),
    (
        "kubernetes.io resource capacity enforced for init container",
        lambda: resource_pod(res(), init=(with_scalars(res(1, 1), {K8S_B: 10}),)),
        [res()],
        {},
        [ir(K8S_B, 10, 0, 0, True)],
    ),
    (
        "hugepages resource capacity enforced",
        lambda: resource_pod(with_scalars(res(1, 1), {HUGE_A: 10})),
        [with_scalars(res(), {HUGE_A: 0})],
        {},
        [ir(HUGE_A, 10, 0, 5, True)],
    ),
    (
        "hugepages resource capacity enforced for init container",
        lambda: resource_pod(res(), init=(with_scalars(res(1, 1), {HUGE_A: 10}),)),
        [with_scalars(res(), {HUGE_A: 0})],
        {},
        [ir(HUGE_A, 10, 0, 5, True)],
    ),
    (
        "hugepages resource allocatable enforced for multiple containers",
        lambda: resource_pod(
            with_scalars(res(1, 1), {HUGE_A: 3}), with_scalars(res(1, 1), {HUGE_A: 3})
        ),
        [with_scalars(res(), {HUGE_A: 2})],
        {},
        [ir(HUGE_A, 6, 2, 5, True)],
    ),
    (
        "skip checking ignored extended resource",
        lambda: resource_pod(with_scalars(res(1, 1), {EXT_B: 1})),
        [res()],
        {"ignoredResources": ["example.com/bbb"]},
        [],
    ),
    (
        "resources + pod overhead fits",
        lambda: resource_pod(res(1, 1), overhead={"cpu": "3m", "memory": "13"}),
        [res(5, 5)],
        {},
        [],
    ),
    (
        "requests + overhead does not fit for memory",
        lambda: resource_pod(res(1, 1), overhead={"cpu": "1m", "memory": "15"}),
        [res(5, 5)],
        {},
        [ir("memory", 16, 5, 20)],
    ),
    (
        "skip checking ignored extended resource via resource groups",
        lambda: resource_pod(with_scalars(res(1, 1), {EXT_B: 1, K8S_A: 1})),
        [res()],
        {"ignoredResourceGroups": ["example.com"]},
        [ir(K8S_A, 1, 0, 0, True)],
    ),
    (
        "skip checking extended resource request with quantity zero via resource groups",
        lambda: resource_pod(with_scalars(res(1, 1), {EXT_A: 0})),
        [with_scalars(res(), {EXT_A: 6})],
        {},
        [],
    ),
    (
        "skip checking resource request with quantity zero",
        lambda: resource_pod(with_scalars(res(), {EXT_A: 1})),
        [with_scalars(res(20, 30), {EXT_A: 1})],
        {},
        [],
    ),
    (
        "extended resource backed by DRA not enabled",
        lambda: resource_pod(with_scalars(res(1, 1), {DRA_EXT: 1})),
        [res()],
        {},
        [ir(DRA_EXT, 1, 0, 0, True)],
    ),
]

# Pod-level resources (PodLevelResources, beta and on by default upstream).
POD_LEVEL: list[tuple[str, Any, Any, dict[str, Any], list[IR]]] = [
    (
        "both pod-level and container-level resources fit",
        lambda: resource_pod(res(1, 1), pod_level={"cpu": "1m", "memory": "2"}),
        [res(5, 5)],
        {},
        [],
    ),
    (
        "pod-level cpu resource not fit",
        lambda: resource_pod(res(1, 1), pod_level={"cpu": "7m", "memory": "2"}),
        [res(5, 5)],
        {},
        [ir("cpu", 7, 5, 10)],
    ),
    (
        "pod-level memory resource not fit",
        lambda: resource_pod(res(1, 1), pod_level={"cpu": "3m", "memory": "2"}),
        [res(5, 19)],
        {},
        [ir("memory", 2, 19, 20)],
    ),
    (
        "pod-level hugepages resource fit",
        lambda: resource_pod(pod_level={"cpu": "3m", "memory": "2", HUGE_A: "5"}),
        [],
        {},
        [],
    ),
    (
        "both pod-level and container-level hugepages resource fit",
        lambda: resource_pod(
            with_scalars(res(1, 1), {HUGE_A: 3}),
            pod_level={"cpu": "3m", "memory": "2", HUGE_A: "5"},
        ),
        [],
        {},
        [],
    ),
    (
        "pod-level hugepages resource not fit",
        lambda: resource_pod(pod_level={"cpu": "3m", "memory": "2", HUGE_A: "10"}),
        [],
        {},
        [ir(HUGE_A, 10, 0, 5, True)],
    ),
    (
        "one pod-level cpu resource fits and all init and non-init containers resources fit",
        lambda: resource_pod(res(1, 1), init=(res(1, 1),), pod_level={"cpu": "3m", "memory": "2"}),
        [res(5, 19)],
        {},
        [ir("memory", 2, 19, 20)],
    ),
]


def _check_enough(make: Any, node_pods: Any, args: dict[str, Any], want: list[IR]) -> None:
    fit = Fit(FitArgs.parse("NodeResourcesFit", args))
    pod = make()
    ni = make_node_info(node(DEFAULT_ALLOC), [resource_pod(r) for r in node_pods])
    got = run_filter(fit, pod, ni)
    if not want:
        assert got is None
    else:
        code = (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            if any(w.unresolvable for w in want)
            else Code.UNSCHEDULABLE
        )
        assert got == (code, [w.reason for w in want])
    assert insufficient_resources(pod.requests, ni, fit.ignored, fit.ignored_groups) == want


@pytest.mark.parametrize(
    ("name", "make", "node_pods", "args", "want"), ENOUGH, ids=[c[0] for c in ENOUGH]
)
def test_enough_requests(
    name: str, make: Any, node_pods: Any, args: dict[str, Any], want: list[IR]
) -> None:
    _check_enough(make, node_pods, args, want)


@pytest.mark.parametrize(
    ("name", "make", "node_pods", "args", "want"), POD_LEVEL, ids=[c[0] for c in POD_LEVEL]
)
def test_enough_requests_pod_level(
    name: str, make: Any, node_pods: Any, args: dict[str, Any], want: list[IR]
) -> None:
    _check_enough(make, node_pods, args, want)


def test_prefilter_disabled() -> None:
    fit = Fit()
    ni = make_node_info(node({}))
    st = fit.filter(CycleState(), make_pod(containers=[]), ni)
    assert st is not None and st.code == Code.ERROR
    assert st.message() == 'error reading "PreFilterNodeResourcesFit" from cycleState: not found'
    with pytest.raises(RuntimeError, match="not found"):
        fit.filter_batch(CycleState(), make_pod(containers=[]), Snapshot([ni]))


@pytest.mark.parametrize(
    ("name", "pod", "node_pod"),
    [
        (
            "even without specified resources, predicate fails when there's no space for additional pod",
            lambda: make_pod(containers=[]),
            res(10, 20),
        ),
        (
            "even if both resources fit, predicate fails when there's no space for additional pod",
            lambda: resource_pod(res(1, 1)),
            res(5, 5),
        ),
        (
            "even for equal edge case, predicate fails when there's no space for additional pod",
            lambda: resource_pod(res(5, 1)),
            res(5, 19),
        ),
        (
            "even for equal edge case, predicate fails when there's no space for additional pod due "
            "to init container",
            lambda: resource_pod(res(5, 1), init=(res(5, 1),)),
            res(5, 19),
        ),
    ],
)
def test_not_enough_requests(name: str, pod: Any, node_pod: dict[str, Any]) -> None:
    alloc = {
        "cpu": "10m",
        "memory": "20",
        "pods": "1",
        EXT_A: "0",
        "ephemeral-storage": "0",
        HUGE_A: "0",
    }
    ni = make_node_info(node(alloc), [resource_pod(node_pod)])
    assert run_filter(Fit(), pod(), ni) == (Code.UNSCHEDULABLE, ["Too many pods"])


@pytest.mark.parametrize(
    ("name", "pod", "node_pod", "want"),
    [
        (
            "empty storage requested, and pod fits",
            lambda: resource_pod(res(1, 1)),
            res(2, 10),
            None,
        ),
        (
            "storage ephemeral local storage request exceeds allocatable",
            lambda: resource_pod(res(eph=25)),
            res(2, 2),
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["Insufficient ephemeral-storage"]),
        ),
        (
            "ephemeral local storage is sufficient",
            lambda: resource_pod(res(eph=5)),
            res(2, 2, 10),
            None,
        ),
        ("pod fits", lambda: resource_pod(res(eph=10)), res(2, 2), None),
    ],
)
def test_storage_requests(name: str, pod: Any, node_pod: dict[str, Any], want: Any) -> None:
    ni = make_node_info(node(DEFAULT_ALLOC), [resource_pod(node_pod)])
    assert run_filter(Fit(), pod(), ni) == want


def _sidecar_pod(request: dict[str, str] | None, sidecar: dict[str, str] | None) -> PodInfo:
    c: dict[str, Any] = {"name": "regular"}
    if request is not None:
        c["resources"] = {"requests": request}
    s: dict[str, Any] = {"name": "restartable-init", "restartPolicy": "Always"}
    if sidecar is not None:
        s["resources"] = {"requests": sidecar}
    return make_pod(containers=[c], initContainers=[s])


@pytest.mark.parametrize(
    ("name", "pod", "want"),
    [
        (
            "allow pod without restartable init containers if sidecar containers is enabled",
            lambda: make_pod(containers=[{"name": "regular"}]),
            None,
        ),
        (
            "allow pod with restartable init containers if sidecar containers is enabled",
            lambda: _sidecar_pod(None, None),
            None,
        ),
        (
            "allow pod if the total requested resources do not exceed the node's allocatable resources",
            lambda: _sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}),
            None,
        ),
        (
            "not allow pod if the total requested resources do exceed the node's allocatable resources",
            lambda: _sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}),
            (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ["Insufficient cpu"]),
        ),
    ],
)
def test_restartable_init_containers(name: str, pod: Any, want: Any) -> None:
    alloc = {
        "cpu": "2m",
        "memory": "0",
        "pods": "1",
        EXT_A: "0",
        "ephemeral-storage": "0",
        HUGE_A: "0",
    }
    assert run_filter(Fit(), pod(), make_node_info(node(alloc))) == want


def test_multiple_reasons_keep_upstream_order() -> None:
    """Pods, cpu, memory, ephemeral-storage, then scalars; one resolvable status."""
    alloc = {"cpu": "1m", "memory": "1", "pods": "1", "ephemeral-storage": "1", EXT_A: "1"}
    ni = make_node_info(node(alloc), [resource_pod(with_scalars(res(1, 1, 1), {EXT_A: 1}))])
    got = run_filter(Fit(), resource_pod(with_scalars(res(1, 1, 1), {EXT_A: 1})), ni)
    assert got == (
        Code.UNSCHEDULABLE,
        [
            "Too many pods",
            "Insufficient cpu",
            "Insufficient memory",
            "Insufficient ephemeral-storage",
            f"Insufficient {EXT_A}",
        ],
    )


# ---- queueing hints (Test_isSchedulableAfterPodChange / NodeChange) ---------------------------


def _fit(version: str = "1.37", *flags: str) -> Fit:
    return Fit(None, Handle(features=set_feature_gates(list(flags), [version])))


def test_events_to_register() -> None:
    """v1.37.2's fit.go EventsToRegister: in-place resize registers only scale-downs."""
    assert [e.event for e in _fit().events_to_register()] == [
        ClusterEvent("AssignedPod", "Delete"),
        ClusterEvent("Node", "Add"),
        ClusterEvent("Node", "UpdateNodeAllocatable"),
        # DRAExtendedResource: a class may now back a requested resource
        ClusterEvent("DeviceClass", "Add"),
        ClusterEvent("DeviceClass", "Update"),
        ClusterEvent("AssignedPod", "UpdatePodScaleDown"),
        ClusterEvent("TargetPod", "UpdatePodScaleDown"),
    ]


def test_events_to_register_v1_36() -> None:
    """v1.36.3's: one Pod registration (Delete|UpdatePodScaleDown), and no DeviceClass
    events without DRAExtendedResource."""
    assert [e.event for e in _fit("1.36", "DRAExtendedResource=false").events_to_register()] == [
        ClusterEvent("Pod", "Delete"),
        ClusterEvent("Pod", "UpdatePodScaleDown"),
        ClusterEvent("Node", "Add"),
        ClusterEvent("Node", "UpdateNodeAllocatable"),
    ]


def _hint(event: ClusterEvent, pod: PodInfo, old: Any, new: Any) -> str:
    for reg in _fit().events_to_register():
        if reg.event == event:
            assert reg.hint is not None
            return reg.hint(pod, old, new)
    raise AssertionError(event)


DELETE = ClusterEvent("AssignedPod", "Delete")
ASSIGNED_SCALE_DOWN = ClusterEvent("AssignedPod", "UpdatePodScaleDown")
NODE_ADD = ClusterEvent("Node", "Add")
NODE_UPDATE = ClusterEvent("Node", "UpdateNodeAllocatable")


def _req_pod(
    name: str, req: dict[str, str], node_name: str = "", uid: str = "", pod_level: bool = False
) -> PodInfo:
    if pod_level:
        return make_pod(
            name,
            containers=[{"name": "c"}],
            node_name=node_name,
            uid=uid or None,
            resources={"requests": req},
        )
    return make_pod(name, requests=req, node_name=node_name, uid=uid or None)


def test_hint_pod_wrong_objects() -> None:
    pod = make_pod(containers=[])
    with pytest.raises(TypeError):
        _hint(DELETE, pod, "not-a-pod", None)
    with pytest.raises(TypeError):
        _hint(ASSIGNED_SCALE_DOWN, pod, None, "not-a-pod")


def test_hint_queue_on_other_pod_deleted() -> None:
    pod = _req_pod("pod1", {"cpu": "1"})
    assert _hint(DELETE, pod, _req_pod("pod2", {"cpu": "1"}, "fake"), None) == QueueingHint.QUEUE


def test_hint_skip_on_unscheduled_pod_deleted() -> None:
    unscheduled = make_pod(containers=[])
    assert _hint(DELETE, make_pod(containers=[]), unscheduled, None) == QueueingHint.SKIP


_SCALE_DOWN: list[Any] = [
    (
        "skip-queue-on-other-unscheduled-pod",
        lambda: _req_pod("pod1", {"cpu": "1"}, uid="uid0"),
        lambda: _req_pod("pod2", {"cpu": "2"}, uid="uid1"),
        lambda: _req_pod("pod2", {"cpu": "1"}, uid="uid1"),
        QueueingHint.SKIP,
    ),
    (
        "skip-queue-on-other-pod-unrelated-resource-scaled-down",
        lambda: _req_pod("pod1", {"cpu": "1"}, uid="pod1"),
        lambda: _req_pod("pod2", {"memory": "2"}, "fake", uid="pod2"),
        lambda: _req_pod("pod2", {"memory": "1"}, "fake", uid="pod2"),
        QueueingHint.SKIP,
    ),
    (
        "skip-queue-on-other-pod-unrelated-pod-level-resource-scaled-down",
        lambda: _req_pod("pod1", {"cpu": "1"}, uid="pod1", pod_level=True),
        lambda: _req_pod("pod2", {"memory": "2"}, "fake", uid="pod2", pod_level=True),
        lambda: _req_pod("pod2", {"memory": "1"}, "fake", uid="pod2", pod_level=True),
        QueueingHint.SKIP,
    ),
    (
        "queue-on-other-pod-some-resource-scale-down",
        lambda: _req_pod("pod1", {"cpu": "1"}, uid="pod1"),
        lambda: _req_pod("pod2", {"cpu": "2"}, "fake", uid="pod2"),
        lambda: _req_pod("pod2", {"cpu": "1"}, "fake", uid="pod2"),
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-other-pod-some-pod-level-resource-scale-down",
        lambda: _req_pod("pod1", {"cpu": "1"}, uid="pod1", pod_level=True),
        lambda: _req_pod("pod2", {"cpu": "2"}, "fake", uid="pod2", pod_level=True),
        lambda: _req_pod("pod2", {"cpu": "1"}, "fake", uid="pod2", pod_level=True),
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-target-pod-some-resource-scale-down",
        lambda: _req_pod("pod1", {"cpu": "1"}, uid="pod1"),
        lambda: _req_pod("pod1", {"cpu": "2"}, uid="pod1"),
        lambda: _req_pod("pod1", {"cpu": "1"}, uid="pod1"),
        QueueingHint.QUEUE,
    ),
    (
        "queue-on-target-pod-some-pod-level-resource-scale-down",
        lambda: _req_pod("pod1", {"cpu": "1"}, uid="pod1", pod_level=True),
        lambda: _req_pod("pod1", {"cpu": "2"}, uid="pod1", pod_level=True),
        lambda: _req_pod("pod1", {"cpu": "1"}, uid="pod1", pod_level=True),
        QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    _SCALE_DOWN,
    ids=[c[0] for c in _SCALE_DOWN],
)
def _update_hints(version: str, pod: PodInfo, old: PodInfo, new: PodInfo) -> list[str]:
    """The answers of Fit's hints the queue runs for a pod update: every registration
    matching one of the update's events, derived as the queue does for the waiting pod's
    own update or another pod's."""
    pe = pending_pod_events(version != "1.36")
    resource = pe.target if new.uid == pod.uid else pe.other
    incoming = pod_update_events(old, new, resource, scale_up=pe.scale_up)
    regs = _fit(version).events_to_register()
    return [r.hint(pod, old, new) for e in incoming for r in regs if r.hint and matches(r.event, e)]


@pytest.mark.parametrize("version", ["1.37", "1.36"])
@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    _SCALE_DOWN,
    ids=[c[0] for c in _SCALE_DOWN],
)
def test_hint_pod_scale_down(
    version: str, name: str, pod: Any, old: Any, new: Any, want: str
) -> None:
    p, o, n = pod(), old(), new()
    got = _update_hints(version, p, o, n)
    if want == QueueingHint.QUEUE:
        assert got == [QueueingHint.QUEUE]
    else:
        assert QueueingHint.QUEUE not in got
    if version == "1.37" and not n.node_name and n.uid != p.uid:
        assert got == []  # another pending pod's update: v1.37 registers none


@pytest.mark.parametrize("version", ["1.37", "1.36"])
@pytest.mark.parametrize("target", [False, True])
def test_no_hint_on_updates_other_than_scale_down(version: str, target: bool) -> None:
    """A victim marked DisruptionTarget, a label change or a scale-up is no UpdatePodScaleDown:
    kube-scheduler runs none of Fit's hints for it (PreemptionBasic ran them thousands of
    times when Fit registered every pod Update)."""
    pod = _req_pod("pod1", {"cpu": "1"}, uid="pod1")
    node_name, uid = ("", "pod1") if target else ("fake", "pod2")
    old = _req_pod("pod2", {"cpu": "1"}, node_name, uid=uid)
    relabelled = _req_pod("pod2", {"cpu": "1"}, node_name, uid=uid)
    relabelled.pod.metadata.labels = {"a": "b"}
    conditioned = _req_pod("pod2", {"cpu": "1"}, node_name, uid=uid)
    conditioned.pod.status.conditions = [PodCondition(type="DisruptionTarget", status="True")]
    scaled_up = _req_pod("pod2", {"cpu": "2"}, node_name, uid=uid)
    for new in (relabelled, conditioned, scaled_up):
        assert _update_hints(version, pod, old, new) == []


def _cap(alloc: dict[str, str]) -> Node:
    """st.MakeNode().Capacity(...): 32 pods plus the given resources."""
    return node({"pods": "32", **alloc})


@pytest.mark.parametrize(
    ("name", "pod", "old", "new", "want"),
    [
        (
            "skip-queue-on-node-add-without-sufficient-resources",
            res(mem=2),
            None,
            {"memory": "1"},
            QueueingHint.SKIP,
        ),
        (
            "skip-queue-on-node-add-without-required-resource-type",
            with_scalars(res(), {EXT_A: 1}),
            None,
            {EXT_B: "1"},
            QueueingHint.SKIP,
        ),
        (
            "queue-on-node-add-with-sufficient-resources",
            with_scalars(res(mem=2), {EXT_A: 1}),
            None,
            {"memory": "4", EXT_A: "2"},
            QueueingHint.QUEUE,
        ),
        (
            "skip-queue-on-node-unrelated-changes",
            with_scalars(res(mem=2), {EXT_A: 1}),
            {"memory": "2", EXT_A: "2"},
            {"memory": "2", EXT_A: "1", EXT_B: "2"},
            QueueingHint.SKIP,
        ),
        (
            "queue-on-pod-requested-resources-increase",
            with_scalars(res(mem=2), {EXT_A: 1}),
            {"memory": "2", EXT_A: "1"},
            {"memory": "2", EXT_A: "2"},
            QueueingHint.QUEUE,
        ),
        (
            "skip-queue-on-node-changes-from-suitable-to-unsuitable",
            with_scalars(res(mem=2), {EXT_A: 1}),
            {"memory": "4", EXT_A: "2"},
            {"memory": "1", EXT_A: "2"},
            QueueingHint.SKIP,
        ),
        (
            "queue-on-node-changes-from-unsuitable-to-suitable",
            with_scalars(res(mem=2), {EXT_A: 1}),
            {"memory": "1", EXT_A: "2"},
            {"memory": "4", EXT_A: "2"},
            QueueingHint.QUEUE,
        ),
    ],
)
def test_hint_node_change(
    name: str, pod: dict[str, Any], old: dict[str, str] | None, new: dict[str, str], want: str
) -> None:
    p = resource_pod(pod)
    event = NODE_ADD if old is None else NODE_UPDATE
    assert _hint(event, p, None if old is None else _cap(old), _cap(new)) == want


def test_hint_node_wrong_objects() -> None:
    with pytest.raises(TypeError):
        _hint(NODE_ADD, make_pod(containers=[]), None, "not-a-node")
    with pytest.raises(TypeError):
        _hint(NODE_UPDATE, make_pod(containers=[]), "not-a-node", node({}))


# ---- args --------------------------------------------------------------------------------------


def _err(args: dict[str, Any]) -> str:
    with pytest.raises(PluginArgsError) as e:
        FitArgs.parse("NodeResourcesFit", args)
    return str(e.value)


def test_args_defaults() -> None:
    a = FitArgs.parse("NodeResourcesFit", {})
    default = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    assert a == FitArgs((), (), ScoringStrategy("LeastAllocated", default))
    a = FitArgs.parse(
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu"}, {"name": "memory", "weight": 0}],
            }
        },
    )
    assert a.scoring_strategy.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
    a = FitArgs.parse("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated"}})
    assert a.scoring_strategy.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


@pytest.mark.parametrize(
    ("args", "want"),
    [
        (
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "memory", "weight": -1}, {"name": "cpu"}],
                }
            },
            "plugin NodeResourcesFit: args.scoringStrategy.resources[0].weight: Invalid value: -1: "
            "resource weight of memory not in valid range (0, 100]",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "LeastAllocated",
                    "resources": [{"name": "memory"}, {"name": "cpu", "weight": 101}],
                }
            },
            "plugin NodeResourcesFit: args.scoringStrategy.resources[1].weight: Invalid value: 101: "
            "resource weight of cpu not in valid range (0, 100]",
        ),
        (
            {"scoringStrategy": {"type": "Foo"}},
            'plugin NodeResourcesFit: args.scoringStrategy.type: Unsupported value: "Foo": supported '
            'values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        ),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu"}]}},
            'plugin NodeResourcesFit: args.scoringStrategy.type: Unsupported value: "": supported '
            'values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"',
        ),
        (
            {"ignoredResourceGroups": ["example.com/aa"]},
            'plugin NodeResourcesFit: args.ignoredResourceGroups[0]: Invalid value: "example.com/aa": '
            "resource group name can't contain '/'",
        ),
        (
            {"ignoredResources": ["-bad"]},
            'plugin NodeResourcesFit: args.ignoredResources[0]: Invalid value: "-bad": name part '
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": []},
                }
            },
            "plugin NodeResourcesFit: args.scoringStrategy.shape: Required value: at least one point "
            "must be specified",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {
                        "shape": [{"utilization": 10, "score": 1}, {"utilization": 10, "score": 2}]
                    },
                }
            },
            "plugin NodeResourcesFit: args.scoringStrategy.shape[1].utilization: Invalid value: 10: "
            "values must be sorted in increasing order",
        ),
        (
            {
                "scoringStrategy": {
                    "type": "RequestedToCapacityRatio",
                    "requestedToCapacityRatio": {"shape": [{"utilization": 101, "score": 11}]},
                }
            },
            "plugin NodeResourcesFit: args: [scoringStrategy.shape[0].utilization: Invalid value: 101: "
            "not in valid range [0, 100], scoringStrategy.shape[0].score: Invalid value: 11: not in "
            "valid range [0, 10]]",
        ),
        (
            {"scoringStrategy": {"type": "RequestedToCapacityRatio"}},
            "plugin NodeResourcesFit: args.scoringStrategy.requestedToCapacityRatio: Required value: "
            "must be specified when type is RequestedToCapacityRatio",
        ),
        ({"foo": 1}, "plugin NodeResourcesFit: args.foo: unknown field"),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu", "weight": "1"}]}},
            "plugin NodeResourcesFit: args.scoringStrategy.resources[0].weight: must be an integer, "
            "got '1'",
        ),
    ],
)
def test_args_errors(args: dict[str, Any], want: str) -> None:
    assert _err(args) == want


def test_args_zero_weight_without_defaults() -> None:
    """Upstream's 'resource with zero weight' case validates un-defaulted args."""
    errs = ArgsErrors("NodeResourcesFit")
    FitArgs(
        scoring_strategy=ScoringStrategy(
            "LeastAllocated", (ResourceSpec("memory", 1), ResourceSpec("cpu", 0))
        )
    ).validate(errs)
    assert errs.errors == [
        (
            "scoringStrategy.resources[1].weight",
            "Invalid value: 0: resource weight of cpu not in valid range (0, 100]",
        )
    ]


def test_registered_with_framework() -> None:
    from ksched.plugins import default_registry

    reg = default_registry(entry_points=False)
    spec = reg.get("NodeResourcesFit")
    assert spec is not None and spec.cls is Fit
    assert spec.points == ["preFilter", "filter", "preScore", "score", "placementScore"]


def test_signature_follows_pod_level_resources() -> None:
    fit = Fit()

    def pl(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> Any:
        res = {k: v for k, v in (("requests", requests), ("limits", limits)) if v is not None}
        containers = [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}, {"name": "b"}]
        return fit.sign_pod(make_pod(containers=containers, resources=res))

    assert pl({"cpu": "1"}) == pl({"cpu": "1"})
    assert pl({"cpu": "1"}) != pl({"cpu": "2"})
    # Pod-level limits that default to the same requests give the same figures everywhere
    # (the scorer ignores pod-level resources: 200m, a default for container b, in both).
    with_limits, requests_only = pl(limits={"memory": "1Gi"}), pl({"memory": "1Gi"})
    assert with_limits == requests_only
    assert pl({"memory": "1Gi"}) != pl({"memory": "2Gi"})
