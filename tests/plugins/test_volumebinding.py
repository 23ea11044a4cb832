"""VolumeBinding: upstream's TestVolumeBinding table and binder cases, Reserve/PreBind,
the assume cache, args and queueing hints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec
import numpy as np
import pytest

from ksched.api.objects import (
    CSIDriver,
    CSIDriverSpec,
    CSINode,
    CSIStorageCapacity,
    CSIVolumeSource,
    InvalidObjectError,
    LabelSelector,
    Node,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    ObjectReference,
    OwnerReference,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeClaimSpec,
    PersistentVolumeClaimStatus,
    PersistentVolumeSpec,
    PersistentVolumeStatus,
    Pod,
    PodSpec,
    ResourceRequirements,
    StorageClass,
    TopologySelectorLabelRequirement,
    TopologySelectorTerm,
    Volume,
    VolumeNodeAffinity,
)
from ksched.api.objects import (
    EphemeralVolumeSource as Ephemeral,
)
from ksched.api.objects import (
    PersistentVolumeClaimVolumeSource as ClaimSource,
)
from ksched.api.volume import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    CandidateList,
    claim_candidates,
    find_matching_volume,
    get_bind_volume_to_claim,
)
from ksched.features import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import BindError, Handle
from ksched.framework.interface import NOT_SIGNABLE, QueueingHint
from ksched.framework.listers import RevisionedStore
from ksched.framework.registry import PluginArgsError
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins.volumebinding import VolumeBinding, VolumeBindingArgs
from ksched.plugins.volumebinding.assume_cache import AssumeCache, AssumeError
from ksched.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
)
from ksched.util.clock import FakeClock

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


# ---- builders (upstream test_utils.go) ------------------------------------------------------


def make_sc(name: str, mode: str | None, provisioner: str = "", **kw: Any) -> StorageClass:
    return StorageClass(
        metadata=ObjectMeta(name=name), volume_binding_mode=mode, provisioner=provisioner, **kw
    )


IMMEDIATE_SC = make_sc("immediate-sc", "Immediate")
WAIT_SC = make_sc("wait-sc", "WaitForFirstConsumer")
WAIT_HDD_SC = make_sc("wait-hdd-sc", "WaitForFirstConsumer")
PROVISION_SC = make_sc("provision-sc", "WaitForFirstConsumer", "ebs.csi.aws.com")
NO_PROVISION_SC = make_sc("no-provision-sc", "WaitForFirstConsumer", "kubernetes.io/no-provisioner")
TOPOLOGY_SC = make_sc(
    "topology-sc",
    "WaitForFirstConsumer",
    "ebs.csi.aws.com",
    allowed_topologies=[
        TopologySelectorTerm(
            match_label_expressions=[TopologySelectorLabelRequirement(key=ZONE, values=["a"])]
        )
    ],
)
CAPACITY_DRIVER = "driver-with-storage-capacity"
CAPACITY_SC = make_sc("wait-sc-with-storage-capacity", "WaitForFirstConsumer", CAPACITY_DRIVER)
CLASSES = (
    IMMEDIATE_SC,
    WAIT_SC,
    WAIT_HDD_SC,
    PROVISION_SC,
    NO_PROVISION_SC,
    TOPOLOGY_SC,
    CAPACITY_SC,
)


def make_driver(name: str, storage_capacity: bool | None) -> CSIDriver:
    return CSIDriver(
        metadata=ObjectMeta(name=name), spec=CSIDriverSpec(storage_capacity=storage_capacity)
    )


def make_capacity(
    name: str, sc: str, node: str | None, capacity: str = "", max_size: str = ""
) -> CSIStorageCapacity:
    """upstream ``makeCapacity``: ``node`` None reaches every node (an empty selector)."""
    return CSIStorageCapacity(
        metadata=ObjectMeta(name=name, namespace="kube-system"),
        storage_class_name=sc,
        node_topology=LabelSelector(match_labels={} if node is None else {HOSTNAME: node}),
        capacity=capacity or None,
        maximum_volume_size=max_size or None,
    )


def make_pvc(
    name: str,
    sc: str,
    *,
    bound_pv: str = "",
    size: str = "",
    phase: str = "",
    annotations: dict[str, str] | None = None,
    rv: str = "1",
    **spec: Any,
) -> PersistentVolumeClaim:
    ann = dict(annotations or {})
    if bound_pv:
        ann[ANN_BIND_COMPLETED] = "yes"
    return PersistentVolumeClaim(
        metadata=ObjectMeta(
            name=name, namespace="default", uid=f"uid-{name}", resource_version=rv, annotations=ann
        ),
        spec=PersistentVolumeClaimSpec(
            storage_class_name=sc,
            volume_name=bound_pv,
            resources=ResourceRequirements(requests={"storage": size} if size else {}),
            **spec,
        ),
        status=PersistentVolumeClaimStatus(phase=phase),
    )


def make_pv(
    name: str,
    sc: str,
    *,
    phase: str = "Available",
    capacity: str = "",
    affinity: dict[str, list[str]] | None = None,
    claim: PersistentVolumeClaim | None = None,
    rv: str = "1",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> PersistentVolume:
    na = None
    if affinity:
        reqs = [
            NodeSelectorRequirement(key=k, operator="In", values=v) for k, v in affinity.items()
        ]
        na = VolumeNodeAffinity(
            required=NodeSelector(node_selector_terms=[NodeSelectorTerm(match_expressions=reqs)])
        )
    ref = None
    if claim is not None:
        ref = ObjectReference(
            kind="PersistentVolumeClaim",
            namespace=claim.metadata.namespace,
            name=claim.metadata.name,
            uid=claim.metadata.uid,
        )
    return PersistentVolume(
        metadata=ObjectMeta(name=name, resource_version=rv, labels=labels or {}),
        spec=PersistentVolumeSpec(
            storage_class_name=sc,
            capacity={"storage": capacity} if capacity else {},
            node_affinity=na,
            claim_ref=ref,
            **spec,
        ),
        status=PersistentVolumeStatus(phase=phase),
    )


def make_node(name: str, **labels: str) -> Node:
    return Node(metadata=ObjectMeta(name=name, labels={HOSTNAME: name, **labels}))


def make_pod(name: str, *claims: str, ephemeral: tuple[str, ...] = ()) -> PodInfo:
    vols = [Volume(name=c, persistent_volume_claim=ClaimSource(claim_name=c)) for c in claims]
    vols += [Volume(name=v, ephemeral=Ephemeral()) for v in ephemeral]
    vols.append(Volume(name="kube-api-access"))  # a projected token volume: no claim
    pod = Pod(
        metadata=ObjectMeta(name=name, namespace="default", uid=f"uid-{name}"),
        spec=PodSpec(volumes=vols),
    )
    return PodInfo(pod)


def store(objs: Any, namespaced: bool = False) -> RevisionedStore[Any]:
    s: RevisionedStore[Any] = RevisionedStore()
    for o in objs:
        key = f"{o.metadata.namespace}/{o.metadata.name}" if namespaced else o.metadata.name
        s[key] = o
    return s


@dataclass
class FakeCluster:
    """Records the binder's writes; ``controller`` runs after each (the PV controller)."""

    pvcs: RevisionedStore[Any]
    pvs: RevisionedStore[Any]
    writes: list[tuple[str, str]] = field(default_factory=list)
    fail: BindError | None = None
    bind_on_write: bool = True

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        if self.fail is not None:
            raise self.fail
        self.writes.append(("pv", pv.metadata.name))
        new = _bump(pv)
        self.pvs[pv.metadata.name] = new
        ref = pv.spec.claim_ref
        if self.bind_on_write and ref is not None:
            key = f"{ref.namespace}/{ref.name}"
            claim = self.pvcs[key]
            ann = {**claim.metadata.annotations, ANN_BIND_COMPLETED: "yes"}
            self.pvcs[key] = _bump(
                msgspec.structs.replace(
                    claim,
                    metadata=msgspec.structs.replace(claim.metadata, annotations=ann),
                    spec=msgspec.structs.replace(claim.spec, volume_name=pv.metadata.name),
                )
            )
        return new

    async def update_persistent_volume_claim(
        self, pvc: PersistentVolumeClaim
    ) -> PersistentVolumeClaim:
        if self.fail is not None:
            raise self.fail
        self.writes.append(("pvc", pvc.metadata.name))
        new = _bump(pvc)
        self.pvcs[f"default/{pvc.metadata.name}"] = new
        if self.bind_on_write:
            pv = make_pv(f"pv-for-{pvc.metadata.name}", "provision-sc", claim=new)
            self.pvs[pv.metadata.name] = pv
            ann = {**new.metadata.annotations, ANN_BIND_COMPLETED: "yes"}
            self.pvcs[f"default/{pvc.metadata.name}"] = _bump(
                msgspec.structs.replace(
                    new,
                    metadata=msgspec.structs.replace(new.metadata, annotations=ann),
                    spec=msgspec.structs.replace(new.spec, volume_name=pv.metadata.name),
                )
            )
        return new


def _bump(obj: Any) -> Any:
    rv = str(int(obj.metadata.resource_version or "0") + 1)
    return msgspec.structs.replace(
        obj, metadata=msgspec.structs.replace(obj.metadata, resource_version=rv)
    )


class Env:
    def __init__(
        self,
        nodes: list[Node],
        pvcs: list[PersistentVolumeClaim] = (),  # type: ignore[assignment]
        pvs: list[PersistentVolume] = (),  # type: ignore[assignment]
        args: dict[str, Any] | None = None,
        capacities: list[CSIStorageCapacity] = (),  # type: ignore[assignment]
        opt_in: bool = True,
    ) -> None:
        self.nodes = [NodeInfo(node=n) for n in nodes]
        self.snap = Snapshot(self.nodes)
        self.pvcs = store(pvcs, namespaced=True)
        self.pvs = store(pvs)
        self.cluster = FakeCluster(self.pvcs, self.pvs)
        self.clock = FakeClock()
        # a shape scores only with StorageCapacityScoring on (upstream's tests turn it on)
        gates = set_feature_gates(["StorageCapacityScoring=true"] if args else [])
        handle = Handle(cluster=self.cluster, clock=self.clock, snapshot=self.snap, features=gates)  # type: ignore[arg-type]
        handle.listers.update(
            persistentvolumeclaims=self.pvcs,
            persistentvolumes=self.pvs,
            storageclasses=store(CLASSES),
            csinodes=store([CSINode(metadata=ObjectMeta(name=n.metadata.name)) for n in nodes]),
            csidrivers=store([make_driver(CAPACITY_DRIVER, opt_in)]),
            csistoragecapacities=store(capacities, namespaced=True),
        )
        self.pl = VolumeBinding(args, handle)

    def pre_filter(self, pod: PodInfo) -> tuple[CycleState, Status | None]:
        state = CycleState()
        _, st = self.pl.pre_filter(state, pod, self.snap)
        return state, st

    def filter_all(self, state: CycleState, pod: PodInfo) -> list[Status | None]:
        return [self.pl.filter(state, pod, ni) for ni in self.nodes]


def desc(st: Status | None) -> tuple[str, tuple[str, ...]] | None:
    return None if st is None else (st.code.label, st.reasons)


UNRESOLVABLE = "UnschedulableAndUnresolvable"
# upstream's default shape (StorageCapacityScoring): the emptier the better
DEFAULT_SHAPE = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]


# ---- TestVolumeBinding (PreFilter / Filter / Score) -----------------------------------------


CASES: list[tuple[str, dict[str, Any], Any, list[Any], list[int]]] = [
    # name, env kwargs + pod, want PreFilter, want Filter per node, want scores
    (
        "all bound",
        {
            "pod": ("pvc-a",),
            "pvcs": [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
            "pvs": [make_pv("pv-a", "wait-sc")],
        },
        None,
        [None],
        [0],
    ),
    (
        "PVC does not exist",
        {"pod": ("pvc-a",)},
        (UNRESOLVABLE, ('persistentvolumeclaim "pvc-a" not found',)),
        [],
        [],
    ),
    (
        "Part of PVCs do not exist",
        {"pod": ("pvc-a", "pvc-b"), "pvcs": [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")]},
        (UNRESOLVABLE, ('persistentvolumeclaim "pvc-b" not found',)),
        [],
        [],
    ),
    (
        "immediate claims not bound",
        {"pod": ("pvc-a",), "pvcs": [make_pvc("pvc-a", "immediate-sc")]},
        (UNRESOLVABLE, ("pod has unbound immediate PersistentVolumeClaims",)),
        [],
        [],
    ),
    (
        "unbound claims no matches",
        {"pod": ("pvc-a",), "pvcs": [make_pvc("pvc-a", "wait-sc")]},
        None,
        [(UNRESOLVABLE, (ERR_REASON_BIND_CONFLICT,))],
        [0],
    ),
    (
        "bound and unbound unsatisfied",
        {
            "pod": ("pvc-a", "pvc-b"),
            "nodes": [make_node("node-a", foo="barbar")],
            "pvcs": [
                make_pvc("pvc-a", "wait-sc", bound_pv="pv-a"),
                make_pvc("pvc-b", "wait-sc"),
            ],
            "pvs": [make_pv("pv-a", "wait-sc", affinity={"foo": ["bar"]})],
        },
        None,
        [(UNRESOLVABLE, (ERR_REASON_NODE_CONFLICT, ERR_REASON_BIND_CONFLICT))],
        [0],
    ),
    (
        "pv not found",
        {"pod": ("pvc-a",), "pvcs": [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")]},
        None,
        [(UNRESOLVABLE, (ERR_REASON_PV_NOT_EXIST,))],
        [0],
    ),
    (
        "pv not found claim lost",
        {
            "pod": ("pvc-a",),
            "pvcs": [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a", phase="Lost")],
        },
        (
            UNRESOLVABLE,
            ('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"',),
        ),
        [],
        [],
    ),
    (
        "local volumes with close capacity are preferred",
        {
            "pod": ("pvc-a",),
            "nodes": [make_node("node-a"), make_node("node-b"), make_node("node-c")],
            "pvcs": [make_pvc("pvc-a", "wait-sc", size="50Gi")],
            "pvs": [
                make_pv("pv-a-0", "wait-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
                make_pv("pv-a-1", "wait-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
                make_pv("pv-b-0", "wait-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
                make_pv("pv-b-1", "wait-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            ],
            "args": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
        },
        None,
        [None, None, (UNRESOLVABLE, (ERR_REASON_BIND_CONFLICT,))],
        [25, 50, 0],
    ),
    (
        "local volumes with close capacity are preferred (multiple pvcs)",
        {
            "pod": ("pvc-0", "pvc-1"),
            "nodes": [make_node("node-a"), make_node("node-b"), make_node("node-c")],
            "pvcs": [
                make_pvc("pvc-0", "wait-sc", size="50Gi"),
                make_pvc("pvc-1", "wait-hdd-sc", size="100Gi"),
            ],
            "pvs": [
                make_pv("pv-a-0", "wait-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
                make_pv("pv-a-1", "wait-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
                make_pv("pv-a-2", "wait-hdd-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
                make_pv("pv-a-3", "wait-hdd-sc", capacity="200Gi", affinity={HOSTNAME: ["node-a"]}),
                make_pv("pv-b-0", "wait-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
                make_pv("pv-b-1", "wait-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
                make_pv("pv-b-2", "wait-hdd-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
                make_pv("pv-b-3", "wait-hdd-sc", capacity="100Gi", affinity={HOSTNAME: ["node-b"]}),
            ],
            "args": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
        },
        None,
        [None, None, (UNRESOLVABLE, (ERR_REASON_BIND_CONFLICT,))],
        [38, 75, 0],
    ),
    (
        "dynamic provisioning where allowedTopologies allow",
        {
            "pod": ("pvc-a",),
            "nodes": [make_node("node-a", **{ZONE: "a"}), make_node("node-b", **{ZONE: "b"})],
            "pvcs": [make_pvc("pvc-a", "topology-sc", size="5Gi")],
        },
        None,
        [None, (UNRESOLVABLE, (ERR_REASON_BIND_CONFLICT,))],
        [0, 0],
    ),
    (
        "a class without provisioner cannot provision",
        {"pod": ("pvc-a",), "pvcs": [make_pvc("pvc-a", "no-provision-sc")]},
        None,
        [(UNRESOLVABLE, (ERR_REASON_BIND_CONFLICT,))],
        [0],
    ),
    (
        "claim being provisioned for another node",
        {
            "pod": ("pvc-a",),
            "nodes": [make_node("node-a"), make_node("node-b")],
            "pvcs": [make_pvc("pvc-a", "provision-sc", annotations={ANN_SELECTED_NODE: "node-b"})],
        },
        None,
        [(UNRESOLVABLE, (ERR_REASON_BIND_CONFLICT,)), None],
        [0, 0],
    ),
    *(
        (
            name,
            {
                "pod": pod,
                "nodes": [make_node("node-a"), make_node("node-b"), make_node("node-c")],
                "pvcs": [
                    make_pvc("pvc-dynamic", CAPACITY_SC.metadata.name, size="10Gi"),
                    make_pvc("pvc-static", "wait-sc", size="50Gi"),
                ],
                "pvs": [
                    make_pv(f"pv-{n}", "wait-sc", capacity="100Gi", affinity={HOSTNAME: [n]})
                    for n in ("node-a", "node-b", "node-c")
                ],
                "capacities": [
                    make_capacity(n, CAPACITY_SC.metadata.name, n, size)
                    for n, size in zip(("node-a", "node-b", "node-c"), sizes, strict=True)
                ],
                "args": {"shape": shape},
            },
            None,
            [None, None, None],
            scores,
        )
        for name, pod, sizes, shape, scores in [
            (
                "storage capacity score",
                ("pvc-dynamic",),
                ("100Gi", "50Gi", "10Gi"),
                None,
                [90, 80, 0],
            ),
            (
                "storage capacity score with static binds",
                ("pvc-dynamic", "pvc-static"),
                ("100Gi", "50Gi", "10Gi"),
                None,
                [50, 50, 50],
            ),
            (
                "prefer node with least allocatable",
                ("pvc-dynamic",),
                ("100Gi", "20Gi", "10Gi"),
                [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
                [10, 50, 100],
            ),
            (
                "prefer node with maximum allocatable",
                ("pvc-dynamic",),
                ("100Gi", "20Gi", "10Gi"),
                None,
                [90, 50, 0],
            ),
        ]
    ),
    (
        "dynamic provisioning with multiple PVCs of the same StorageClass",
        {
            "pod": ("pvc-dynamic-0", "pvc-dynamic-1"),
            "pvcs": [
                make_pvc("pvc-dynamic-0", CAPACITY_SC.metadata.name, size="50Gi"),
                make_pvc("pvc-dynamic-1", CAPACITY_SC.metadata.name, size="50Gi"),
            ],
            "capacities": [make_capacity("node-a", CAPACITY_SC.metadata.name, "node-a", "100Gi")],
            "args": {"shape": None},
        },
        None,
        [None],
        [0],  # the class's capacity counted once: 100Gi of 100Gi used
    ),
    (
        "a driver reporting capacity needs room on the node",
        {
            "pod": ("pvc-dynamic",),
            "nodes": [make_node("node-a"), make_node("node-b")],
            "pvcs": [make_pvc("pvc-dynamic", CAPACITY_SC.metadata.name, size="10Gi")],
            "capacities": [make_capacity("node-a", CAPACITY_SC.metadata.name, "node-a", "5Gi")],
        },
        None,
        [(UNRESOLVABLE, (ERR_REASON_NOT_ENOUGH_SPACE,))] * 2,
        [0, 0],
    ),
    (
        "a driver not reporting capacity provisions anywhere",
        {
            "pod": ("pvc-dynamic",),
            "nodes": [make_node("node-a"), make_node("node-b")],
            "pvcs": [make_pvc("pvc-dynamic", CAPACITY_SC.metadata.name, size="10Gi")],
            "opt_in": False,
            "args": {"shape": None},
        },
        None,
        [None, None],
        [0, 0],  # no capacity: nothing to score
    ),
    *(
        (
            f"provisioning stops at the first claim that cannot ({static_size} static claim)",
            {
                "pod": ("pvc-dynamic", "pvc-static"),
                "pvcs": [
                    make_pvc("pvc-dynamic", CAPACITY_SC.metadata.name, size="10Gi"),
                    make_pvc("pvc-static", "wait-sc", size=static_size),
                ],
            },
            None,
            # smallest claim first; the unmatched static claim's class has no provisioner
            [(UNRESOLVABLE, (reason,))],
            [0],
        )
        for static_size, reason in [
            ("50Gi", ERR_REASON_NOT_ENOUGH_SPACE),
            ("5Gi", ERR_REASON_BIND_CONFLICT),
        ]
    ),
]


@pytest.mark.parametrize(
    ("kw", "want_pre", "want_filter", "want_scores"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_volume_binding(
    kw: dict[str, Any], want_pre: Any, want_filter: list[Any], want_scores: list[int]
) -> None:
    kw = dict(kw)
    pod = make_pod("pod-a", *kw.pop("pod"))
    if kw.get("args") == {"shape": None}:
        kw["args"] = {"shape": DEFAULT_SHAPE}
    env = Env(kw.pop("nodes", [make_node("node-a")]), **kw)
    state, st = env.pre_filter(pod)
    assert desc(st) == want_pre
    if want_pre is not None:
        return
    assert [desc(s) for s in env.filter_all(state, pod)] == want_filter
    pre_score = env.pl.pre_score(state, pod, env.nodes)
    scores = [
        0 if pre_score is not None and pre_score.is_skip() else env.pl.score(state, pod, ni)
        for ni in env.nodes
    ]
    assert scores == want_scores
    if pre_score is None:  # the batch form agrees with Score node by node
        rows = np.arange(len(env.nodes), dtype=np.intp)
        assert env.pl.score_batch(state, pod, env.snap, rows).tolist() == want_scores


def test_a_shape_scores_only_with_storage_capacity_scoring() -> None:
    """Upstream's New builds its scorer only with the gate on (off by default in v1.36, on
    in v1.37): the same args without it leave Score skipped."""
    case = next(c for c in CASES if c[0] == "local volumes with close capacity are preferred")
    kw = dict(case[1])
    pod = make_pod("pod-a", *kw.pop("pod"))
    env = Env(kw.pop("nodes"), **kw)
    v136 = Handle(features=set_feature_gates([], ["1.36"]))
    assert VolumeBinding(kw["args"], v136)._score_table is None
    off = Handle(features=set_feature_gates(["StorageCapacityScoring=false"]))
    assert VolumeBinding(kw["args"], off)._score_table is None
    assert VolumeBinding(kw["args"], Handle())._score_table is not None  # v1.37's default
    state, _ = env.pre_filter(pod)
    env.filter_all(state, pod)
    assert env.pl.pre_score(state, pod, env.nodes) is None  # the Env turns the gate on


def test_pod_without_claims_is_skipped_and_signable() -> None:
    env = Env([make_node("node-a")])
    pod = make_pod("plain")
    state, st = env.pre_filter(pod)
    assert st is not None and st.is_skip()
    assert env.pl.sign_pod(pod) is None
    assert env.pl.reserve(state, pod, "node-a") is None
    assert anyio.run(env.pl.pre_bind, state, pod, "node-a") is None
    pre_score = env.pl.pre_score(state, pod, env.nodes)
    assert pre_score is not None and pre_score.is_skip()
    assert env.pl.sign_pod(make_pod("claims", "c")) is NOT_SIGNABLE
    assert env.pl.sign_pod(make_pod("eph", ephemeral=("scratch",))) is NOT_SIGNABLE


def test_ephemeral_volume_claims() -> None:
    """A generic ephemeral volume's claim is "<pod>-<volume>" and must belong to the pod."""
    pod = make_pod("pod-a", ephemeral=("scratch",))
    env = Env([make_node("node-a")])
    _, st = env.pre_filter(pod)
    assert desc(st) == (
        UNRESOLVABLE,
        (
            "waiting for ephemeral volume controller to create the persistentvolumeclaim "
            '"pod-a-scratch"',
        ),
    )
    claim = make_pvc("pod-a-scratch", "wait-sc", bound_pv="pv-a")
    env = Env([make_node("node-a")], [claim], [make_pv("pv-a", "wait-sc")])
    _, st = env.pre_filter(pod)
    assert desc(st) == (
        UNRESOLVABLE,
        ("PVC default/pod-a-scratch was not created for pod default/pod-a (pod is not owner)",),
    )
    owner = OwnerReference(kind="Pod", name="pod-a", uid="uid-pod-a", controller=True)
    meta = msgspec.structs.replace(claim.metadata, owner_references=[owner])
    env = Env(
        [make_node("node-a")],
        [msgspec.structs.replace(claim, metadata=meta)],
        [make_pv("pv-a", "wait-sc")],
    )
    state, st = env.pre_filter(pod)
    assert st is None
    assert env.filter_all(state, pod) == [None]


def test_claim_being_deleted_and_class_without_mode() -> None:
    gone = make_pvc("pvc-a", "wait-sc")
    gone = msgspec.structs.replace(
        gone, metadata=msgspec.structs.replace(gone.metadata, deletion_timestamp="2025-01-01")
    )
    _, st = Env([make_node("n")], [gone]).pre_filter(make_pod("p", "pvc-a"))
    assert desc(st) == (UNRESOLVABLE, ('persistentvolumeclaim "pvc-a" is being deleted',))
    env = Env([make_node("n")], [make_pvc("pvc-a", "odd-sc")])
    env.pl.handle.listers["storageclasses"]["odd-sc"] = make_sc("odd-sc", None)  # type: ignore[union-attr]
    _, st = env.pre_filter(make_pod("p", "pvc-a"))
    assert st is not None and st.code == Code.ERROR
    assert st.message() == 'VolumeBindingMode not set for StorageClass "odd-sc"'


def test_claims_of_a_missing_class_bind_immediately() -> None:
    """No class object: IsDelayBindingMode says immediate, so PreFilter rejects."""
    _, st = Env([make_node("n")], [make_pvc("pvc-a", "nope")]).pre_filter(make_pod("p", "pvc-a"))
    assert desc(st) == (UNRESOLVABLE, ("pod has unbound immediate PersistentVolumeClaims",))


# ---- FindMatchingVolume ---------------------------------------------------------------------


def test_find_matching_volume_picks_the_smallest_fit() -> None:
    claim = make_pvc("c", "wait-sc", size="10Gi", access_modes=["ReadWriteOnce"])
    node = {HOSTNAME: "n"}
    vols = [
        make_pv("big", "wait-sc", capacity="100Gi", access_modes=["ReadWriteOnce"]),
        make_pv("small", "wait-sc", capacity="20Gi", access_modes=["ReadWriteOnce"]),
        make_pv("tiny", "wait-sc", capacity="5Gi", access_modes=["ReadWriteOnce"]),
        make_pv("other-class", "wait-hdd-sc", capacity="10Gi", access_modes=["ReadWriteOnce"]),
        make_pv("rox", "wait-sc", capacity="10Gi", access_modes=["ReadOnlyMany"]),
        make_pv("released", "wait-sc", capacity="10Gi", phase="Released"),
        make_pv("block", "wait-sc", capacity="10Gi", volume_mode="Block"),
        make_pv("elsewhere", "wait-sc", capacity="10Gi", affinity={HOSTNAME: ["m"]}),
        make_pv("taken", "wait-sc", capacity="10Gi", claim=make_pvc("x", "wait-sc")),
    ]
    got = find_matching_volume(claim, vols, node, set())
    assert got is not None and got.metadata.name == "small"
    got = find_matching_volume(claim, vols, node, {"small"})
    assert got is not None and got.metadata.name == "big"
    assert find_matching_volume(claim, vols, node, {"small", "big"}) is None


def test_candidates_worked_out_once_match_the_full_search() -> None:
    """Filter reuses PreFilter-cycle ``claim_candidates`` on every node: same answers."""
    claim = make_pvc("c", "wait-sc", size="10Gi", access_modes=["ReadWriteOnce"])
    prebound = make_pvc("p", "wait-sc", size="10Gi")
    vols = [
        make_pv("a-big", "wait-sc", capacity="100Gi", affinity={HOSTNAME: ["a"]}),
        make_pv("a-small", "wait-sc", capacity="20Gi", affinity={HOSTNAME: ["a"]}),
        make_pv("b", "wait-sc", capacity="30Gi", affinity={HOSTNAME: ["b"]}),
        make_pv("any", "wait-sc", capacity="50Gi"),
        make_pv("tiny", "wait-sc", capacity="1Gi"),
        make_pv("released", "wait-sc", capacity="10Gi", phase="Released"),
        make_pv("taken", "wait-sc", capacity="10Gi", claim=make_pvc("x", "wait-sc")),
        make_pv("for-p", "wait-sc", capacity="10Gi", claim=prebound, affinity={HOSTNAME: ["b"]}),
    ]
    for pvc in (claim, prebound):
        cands = CandidateList(claim_candidates(pvc, vols))
        assert len(cands) < len(vols)
        for host in ("a", "b", "c"):
            for excluded in (set(), {"a-small"}, {"any", "b"}):
                full = find_matching_volume(pvc, vols, {HOSTNAME: host}, excluded)
                fast = find_matching_volume(pvc, cands, {HOSTNAME: host}, excluded)
                assert fast is full, (pvc.metadata.name, host, excluded)


def test_unparsable_storage_quantities_name_the_object_and_field() -> None:
    node = {HOSTNAME: "n"}
    bad_pv = make_pv("pv-bad", "wait-sc", capacity="lots")
    with pytest.raises(InvalidObjectError) as e:
        find_matching_volume(make_pvc("c", "wait-sc", size="1Gi"), [bad_pv], node, set())
    assert str(e.value) == (
        "PersistentVolume pv-bad: spec.capacity.storage: invalid quantity 'lots'"
    )
    good_pv = make_pv("pv", "wait-sc", capacity="1Gi")
    with pytest.raises(InvalidObjectError) as e:
        find_matching_volume(make_pvc("c", "wait-sc", size="1 Gi"), [good_pv], node, set())
    assert str(e.value).startswith(
        "PersistentVolumeClaim default/c: spec.resources.requests.storage: invalid quantity"
    )


def test_find_matching_volume_selector_and_prebound() -> None:
    sel = LabelSelector(match_labels={"tier": "gold"})
    claim = make_pvc("c", "wait-sc", selector=sel)
    gold = make_pv("gold", "wait-sc", capacity="1Gi", labels={"tier": "gold"})
    silver = make_pv("silver", "wait-sc", capacity="1Gi", labels={"tier": "silver"})
    got = find_matching_volume(claim, [silver, gold], {}, set())
    assert got is not None and got.metadata.name == "gold"
    # A PV pre-bound to the claim wins even if bigger; unless the node cannot use it.
    c2 = make_pvc("c2", "wait-sc")
    pre = make_pv("pre", "wait-sc", capacity="1Ti", claim=c2, affinity={HOSTNAME: ["n"]})
    small = make_pv("small", "wait-sc", capacity="1Gi")
    got = find_matching_volume(c2, [small, pre], {HOSTNAME: "n"}, set())
    assert got is not None and got.metadata.name == "pre"
    assert find_matching_volume(c2, [small, pre], {HOSTNAME: "m"}, set()) is None


def test_get_bind_volume_to_claim() -> None:
    claim = make_pvc("c", "wait-sc")
    pv, dirty = get_bind_volume_to_claim(make_pv("pv", "wait-sc"), claim)
    assert dirty
    assert pv.spec.claim_ref is not None
    assert (pv.spec.claim_ref.name, pv.spec.claim_ref.uid) == ("c", "uid-c")
    assert pv.metadata.annotations == {ANN_BOUND_BY_CONTROLLER: "yes"}
    # Pre-bound by the user: claimRef kept, no bound-by-controller annotation.
    prebound = make_pv("pv", "wait-sc", claim=claim)
    same, dirty = get_bind_volume_to_claim(prebound, claim)
    assert not dirty and same is prebound


# ---- Reserve / PreBind / Unreserve ----------------------------------------------------------


def run_to_reserve(env: Env, pod: PodInfo, node: str) -> CycleState:
    state, st = env.pre_filter(pod)
    assert st is None
    env.filter_all(state, pod)
    assert env.pl.reserve(state, pod, node) is None
    return state


def test_static_binding_reserve_prebind() -> None:
    env = Env(
        [make_node("node-a")],
        [make_pvc("pvc-a", "wait-sc", size="1Gi")],
        [make_pv("pv-a", "wait-sc", capacity="1Gi")],
    )
    pod = make_pod("pod-a", "pvc-a")
    state = run_to_reserve(env, pod, "node-a")
    assumed = env.pl.binder.pv_cache.get("pv-a")
    assert assumed is not None and assumed.spec.claim_ref is not None
    assert env.pl.binder.pv_cache.get_api("pv-a").spec.claim_ref is None  # type: ignore[union-attr]
    assert anyio.run(env.pl.pre_bind, state, pod, "node-a") is None
    assert env.cluster.writes == [("pv", "pv-a")]
    # The PV came back through the "watch": the assumption gave way to it.
    assert env.pl.binder.pv_cache.get("pv-a") is env.pvs["pv-a"]


def test_dynamic_provisioning_sets_selected_node() -> None:
    env = Env([make_node("node-a"), make_node("node-b")], [make_pvc("pvc-a", "provision-sc")])
    pod = make_pod("pod-a", "pvc-a")
    state = run_to_reserve(env, pod, "node-b")
    assumed = env.pl.binder.pvc_cache.get("default/pvc-a")
    assert assumed is not None
    assert assumed.metadata.annotations[ANN_SELECTED_NODE] == "node-b"
    assert anyio.run(env.pl.pre_bind, state, pod, "node-b") is None
    assert env.cluster.writes == [("pvc", "pvc-a")]


def test_assume_cache_keeps_a_pv_for_one_pod() -> None:
    """Pod 1 reserves the only PV; pod 2's cycle, before any API write, finds none left."""
    env = Env(
        [make_node("node-a")],
        [make_pvc("pvc-1", "wait-sc"), make_pvc("pvc-2", "wait-sc")],
        [make_pv("pv", "wait-sc")],
    )
    run_to_reserve(env, make_pod("p1", "pvc-1"), "node-a")
    p2 = make_pod("p2", "pvc-2")
    state, st = env.pre_filter(p2)
    assert st is None
    assert [desc(s) for s in env.filter_all(state, p2)] == [
        (UNRESOLVABLE, (ERR_REASON_BIND_CONFLICT,))
    ]


def test_unreserve_gives_the_pv_back() -> None:
    env = Env(
        [make_node("node-a")],
        [make_pvc("pvc-1", "wait-sc"), make_pvc("pvc-2", "wait-sc")],
        [make_pv("pv", "wait-sc")],
    )
    p1 = make_pod("p1", "pvc-1")
    state = run_to_reserve(env, p1, "node-a")
    env.pl.unreserve(state, p1, "node-a")
    env.pl.unreserve(state, p1, "node-a")  # idempotent
    p2 = make_pod("p2", "pvc-2")
    state2, _ = env.pre_filter(p2)
    assert env.filter_all(state2, p2) == [None]


def test_all_bound_pod_prebinds_nothing() -> None:
    env = Env(
        [make_node("node-a")],
        [make_pvc("pvc-a", "wait-sc", bound_pv="pv-a")],
        [make_pv("pv-a", "wait-sc", phase="Bound")],
    )
    pod = make_pod("pod-a", "pvc-a")
    state = run_to_reserve(env, pod, "node-a")
    assert anyio.run(env.pl.pre_bind, state, pod, "node-a") is None
    assert env.cluster.writes == []


def test_prebind_write_failure_is_an_error_and_reverts() -> None:
    env = Env([make_node("node-a")], [make_pvc("pvc-a", "wait-sc")], [make_pv("pv-a", "wait-sc")])
    env.cluster.fail = BindError("updating PersistentVolume pv-a: conflict", retry=True)
    pod = make_pod("pod-a", "pvc-a")
    state = run_to_reserve(env, pod, "node-a")
    st = anyio.run(env.pl.pre_bind, state, pod, "node-a")
    assert st is not None and st.code == Code.ERROR
    assert st.message() == "updating PersistentVolume pv-a: conflict"
    assert env.pl.binder.pv_cache.get("pv-a").spec.claim_ref is None  # type: ignore[union-attr]


def test_prebind_times_out_waiting_for_the_pv_controller() -> None:
    env = Env(
        [make_node("node-a")],
        [make_pvc("pvc-a", "wait-sc")],
        [make_pv("pv-a", "wait-sc")],
        args={"bindTimeoutSeconds": 5},
    )
    env.cluster.bind_on_write = False
    pod = make_pod("pod-a", "pvc-a")
    state = run_to_reserve(env, pod, "node-a")
    got: list[Status | None] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def prebind() -> None:
                got.append(await env.pl.pre_bind(state, pod, "node-a"))

            tg.start_soon(prebind)
            while not got:
                await anyio.sleep(0)
                env.clock.advance_to_next()

    anyio.run(main)
    (st,) = got
    assert st is not None and st.code == Code.ERROR
    assert st.message() == "binding volumes: context deadline exceeded"
    assert env.clock.now() == 5


def test_prebind_fails_when_the_provisioner_gives_up() -> None:
    """The provisioner drops selected-node to make the scheduler retry."""
    claim = make_pvc("pvc-a", "provision-sc", annotations={"team": "db"})
    env = Env([make_node("node-a")], [claim])
    env.cluster.bind_on_write = False
    pod = make_pod("pod-a", "pvc-a")
    state = run_to_reserve(env, pod, "node-a")

    async def main() -> Status | None:
        async with anyio.create_task_group() as tg:
            result: list[Status | None] = []

            async def prebind() -> None:
                result.append(await env.pl.pre_bind(state, pod, "node-a"))

            tg.start_soon(prebind)
            await anyio.sleep(0)
            cur = env.pvcs["default/pvc-a"]
            ann = {k: v for k, v in cur.metadata.annotations.items() if k != ANN_SELECTED_NODE}
            env.pvcs["default/pvc-a"] = _bump(
                msgspec.structs.replace(
                    cur, metadata=msgspec.structs.replace(cur.metadata, annotations=ann)
                )
            )
            while not result:
                env.clock.advance_to_next()
                await anyio.sleep(0)
        return result[0]

    st = anyio.run(main)
    assert st is not None and st.code == Code.ERROR
    assert st.message() == 'binding volumes: provisioning failed for PVC "pvc-a"'


# ---- assume cache ---------------------------------------------------------------------------


def test_assume_cache_versions() -> None:
    src: dict[str, PersistentVolume] = {"pv": make_pv("pv", "sc", rv="5")}
    cache: AssumeCache[PersistentVolume] = AssumeCache(lambda: src, "v1.PersistentVolume")
    newer = make_pv("pv", "sc", rv="5", phase="Bound")
    cache.assume("pv", newer)
    assert cache.get("pv") is newer and cache.get_api("pv") is src["pv"]
    with pytest.raises(AssumeError, match=r'"pv" is out of sync \(stored: 5, assume: 4\)'):
        cache.assume("pv", make_pv("pv", "sc", rv="4"))
    with pytest.raises(AssumeError, match='could not find v1\\.PersistentVolume "nope"'):
        cache.assume("nope", newer)
    src["pv"] = make_pv("pv", "sc", rv="5", phase="Released")  # same version: assumed stays
    assert cache.get("pv") is newer
    src["pv"] = make_pv("pv", "sc", rv="6")  # newer API version wins
    assert cache.get("pv") is src["pv"]
    cache.assume("pv", newer := make_pv("pv", "sc", rv="6", phase="Bound"))
    cache.restore("pv")
    assert cache.get("pv") is src["pv"]


# ---- args and hints -------------------------------------------------------------------------


def test_args() -> None:
    assert VolumeBindingArgs.parse("VolumeBinding", {}) == VolumeBindingArgs(600, ())
    with pytest.raises(PluginArgsError) as e:
        VolumeBindingArgs.parse("VolumeBinding", {"bindTimeoutSeconds": -1})
    assert str(e.value) == (
        "plugin VolumeBinding: args.bindTimeoutSeconds: Invalid value: -1: invalid "
        "BindTimeoutSeconds, should not be a negative value"
    )
    with pytest.raises(PluginArgsError, match=r"shape\[1\].utilization"):
        VolumeBindingArgs.parse(
            "VolumeBinding",
            {"shape": [{"utilization": 50, "score": 1}, {"utilization": 10, "score": 2}]},
        )
    with pytest.raises(PluginArgsError, match="unknown field"):
        VolumeBindingArgs.parse("VolumeBinding", {"bindTimeout": 1})


def test_queueing_hints() -> None:
    pl = VolumeBinding()
    pod = make_pod("p", "data")
    assert pl.is_schedulable_after_pvc(pod, None, make_pvc("data", "sc")) == QueueingHint.QUEUE
    assert pl.is_schedulable_after_pvc(pod, None, make_pvc("other", "sc")) == QueueingHint.SKIP
    elsewhere = make_pvc("data", "sc")
    elsewhere = msgspec.structs.replace(
        elsewhere, metadata=msgspec.structs.replace(elsewhere.metadata, namespace="prod")
    )
    assert pl.is_schedulable_after_pvc(pod, None, elsewhere) == QueueingHint.SKIP
    eph = make_pod("p", ephemeral=("scratch",))
    assert pl.is_schedulable_after_pvc(eph, None, make_pvc("p-scratch", "sc")) == QueueingHint.QUEUE

    sc_hint = pl.is_schedulable_after_storage_class_change
    assert sc_hint(pod, None, WAIT_SC) == QueueingHint.QUEUE
    assert sc_hint(pod, PROVISION_SC, TOPOLOGY_SC) == QueueingHint.QUEUE
    relabeled = msgspec.structs.replace(
        WAIT_SC, metadata=ObjectMeta(name="wait-sc", labels={"a": "b"})
    )
    assert sc_hint(pod, WAIT_SC, relabeled) == QueueingHint.SKIP

    cn_hint = pl.is_schedulable_after_csinode_change
    plain = CSINode(metadata=ObjectMeta(name="n"))
    migrated = CSINode(
        metadata=ObjectMeta(
            name="n",
            annotations={"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/gce-pd"},
        )
    )
    assert cn_hint(pod, None, plain) == QueueingHint.QUEUE
    assert cn_hint(pod, plain, migrated) == QueueingHint.QUEUE
    assert cn_hint(pod, plain, plain) == QueueingHint.SKIP
    events = {(e.event.resource, e.event.action) for e in pl.events_to_register()}
    assert ("PersistentVolume", "Update") in events
    assert ("Node", "UpdateNodeLabel") in events
    assert ("Node", "UpdateNodeTaint") not in events


# ---- TestCapacity (binder.go's hasEnoughCapacity) -------------------------------------------

NET = make_capacity("net", CAPACITY_SC.metadata.name, None, "1Gi")
NODE_A = make_capacity("node-a", CAPACITY_SC.metadata.name, "node-a", "1Gi")
NODE_B = make_capacity("node-b", CAPACITY_SC.metadata.name, "node-b", "1Gi")
CAPACITY_CASES: list[tuple[str, list[CSIStorageCapacity], CSIStorageCapacity | None]] = [
    # name, capacities, the capacity found (None: not enough space)
    ("network-attached", [NET], NET),
    ("local-storage", [NODE_A], NODE_A),
    ("multiple: the first reachable one by namespace/name", [NODE_B, NODE_A, NET], NET),
    ("multiple local", [NODE_B, NODE_A], NODE_A),
    ("no-storage", [], None),
    ("wrong-node", [NODE_B], None),
    ("wrong-storage-class", [make_capacity("c", "wait-sc", "node-a", "1Gi")], None),
    ("insufficient-storage", [make_capacity("c", CAPACITY_SC.metadata.name, None, "1Mi")], None),
    (
        "insufficient-volume-size: maximumVolumeSize wins",
        [make_capacity("c", CAPACITY_SC.metadata.name, None, "1Gi", "1Mi")],
        None,
    ),
    (
        "enough volume size without capacity",
        [make_capacity("c", CAPACITY_SC.metadata.name, None, "", "1Gi")],
        "found",
    ),
    ("zero-storage", [make_capacity("c", CAPACITY_SC.metadata.name, None, "0Mi")], None),
    ("nil-storage", [make_capacity("c", CAPACITY_SC.metadata.name, None)], None),
    (
        "no nodeTopology reaches no node",
        [msgspec.structs.replace(NET, node_topology=None)],
        None,
    ),
]


@pytest.mark.parametrize("opt_in", [True, False])
@pytest.mark.parametrize(
    ("capacities", "want"), [c[1:] for c in CAPACITY_CASES], ids=[c[0] for c in CAPACITY_CASES]
)
def test_capacity(opt_in: bool, capacities: list[CSIStorageCapacity], want: Any) -> None:
    """A driver that opts in needs room for the 1Gi claim; one that does not, never."""
    pvc = make_pvc("provisioned-pvc", CAPACITY_SC.metadata.name, size="1Gi")
    env = Env([make_node("node-a")], [pvc], capacities=capacities, opt_in=opt_in)
    pod = make_pod("pod-a", "provisioned-pvc")
    state, _ = env.pre_filter(pod)
    claims = env.pl._state(state).claims
    assert claims is not None
    volumes, reasons = env.pl.binder.find_pod_volumes(pod.pod, claims, env.nodes[0].node)  # type: ignore[arg-type]
    if opt_in and want is None:
        assert reasons == [ERR_REASON_NOT_ENOUGH_SPACE]
        assert volumes.dynamic_provisions == [] and volumes.node_capacities == {}
        return
    assert reasons == []
    assert volumes.dynamic_provisions == [pvc]
    found = volumes.node_capacities.get("default/provisioned-pvc")
    if not opt_in:
        assert found is None
    elif want == "found":
        assert found is capacities[0]
    else:
        assert found is want


def test_a_claim_without_a_storage_request_needs_no_capacity() -> None:
    pvc = make_pvc("pvc", CAPACITY_SC.metadata.name)
    env = Env([make_node("node-a")], [pvc])
    pod = make_pod("pod-a", "pvc")
    state, _ = env.pre_filter(pod)
    assert env.pl.filter(state, pod, env.nodes[0]) is None


def test_storage_capacity_hints() -> None:
    pl = VolumeBinding()
    pod = make_pod("p", "data")
    cap_hint = pl.is_schedulable_after_csi_storage_capacity_change
    small = make_capacity("c", "sc", None, "1Gi")
    big = make_capacity("c", "sc", None, "2Gi")
    assert cap_hint(pod, None, small) == QueueingHint.QUEUE
    assert cap_hint(pod, small, big) == QueueingHint.QUEUE
    assert cap_hint(pod, big, small) == QueueingHint.SKIP
    assert cap_hint(pod, small, small) == QueueingHint.SKIP
    # maximumVolumeSize is the limit when set
    capped = make_capacity("c", "sc", None, "5Gi", "1Gi")
    assert cap_hint(pod, small, capped) == QueueingHint.SKIP
    assert cap_hint(pod, make_capacity("c", "sc", None), small) == QueueingHint.QUEUE
    assert cap_hint(pod, small, make_capacity("c", "sc", None)) == QueueingHint.SKIP

    drv_hint = pl.is_schedulable_after_csidriver_change
    inline = PodInfo(
        Pod(
            metadata=ObjectMeta(name="i", namespace="default"),
            spec=PodSpec(volumes=[Volume(name="v", csi=CSIVolumeSource(driver=CAPACITY_DRIVER))]),
        )
    )
    on, off = make_driver(CAPACITY_DRIVER, True), make_driver(CAPACITY_DRIVER, False)
    unset = make_driver(CAPACITY_DRIVER, None)
    assert drv_hint(inline, on, off) == QueueingHint.QUEUE
    assert drv_hint(inline, on, unset) == QueueingHint.QUEUE
    assert drv_hint(inline, off, on) == QueueingHint.SKIP
    assert drv_hint(inline, on, on) == QueueingHint.SKIP
    # upstream looks at inline CSI volumes only, not at the claims' provisioners
    assert drv_hint(pod, on, off) == QueueingHint.SKIP
    other = make_driver("other", False)
    assert drv_hint(inline, make_driver("other", True), other) == QueueingHint.SKIP

    events = {(e.event.resource, e.event.action) for e in pl.events_to_register()}
    assert {
        ("CSIDriver", "Update"),
        ("CSIStorageCapacity", "Add"),
        ("CSIStorageCapacity", "Update"),
    } <= events


def test_score_batch_of_a_pod_without_claims_is_zeros() -> None:
    """With StorageCapacityScoring's scorer, upstream's PreScore does not skip a pod without
    claims and Score gives each node 0; the batch form gives the zeros at once, and, like
    Score, fails when PreFilter wrote no state."""
    case = next(c for c in CASES if c[0] == "local volumes with close capacity are preferred")
    kw = dict(case[1])
    kw.pop("pod")
    env = Env(kw.pop("nodes"), **kw)
    pod = make_pod("plain")
    state, st = env.pre_filter(pod)
    assert st is not None and st.is_skip()
    assert env.pl.pre_score(state, pod, env.nodes) is None
    rows = np.arange(len(env.nodes), dtype=np.intp)
    assert [env.pl.score(state, pod, ni) for ni in env.nodes] == [0] * len(env.nodes)
    got = env.pl.score_batch(state, pod, env.snap, rows)
    assert got.dtype == np.int64 and got.tolist() == [0] * len(env.nodes)
    with pytest.raises(KeyError):
        env.pl.score_batch(CycleState(), pod, env.snap, rows)
