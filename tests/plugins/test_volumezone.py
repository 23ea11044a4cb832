"""VolumeZone: upstream's table tests (volume_zone_test.go) through PreFilter and the
per-node Filter, the batch Filter agreeing with it, and the queueing hints."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.api.objects import PersistentVolume, PersistentVolumeClaim, StorageClass, decode
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import NOT_SIGNABLE, QueueingHint
from ksched.framework.listers import RevisionedStore
from ksched.framework.status import Code, Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins.volumezone import ERR_REASON_CONFLICT, VolumeZone
from tests.factories import make_node, make_node_info, make_pod, make_snapshot

BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def pv(name: str, labels: dict[str, str]) -> PersistentVolume:
    return decode({"metadata": {"name": name, "labels": labels}}, PersistentVolume)


def pvc(name: str, volume: str = "", sc: str | None = None, **meta: Any) -> PersistentVolumeClaim:
    spec: dict[str, Any] = {"volumeName": volume}
    if sc is not None:
        spec["storageClassName"] = sc
    return decode(
        {"metadata": {"name": name, "namespace": "default", **meta}, "spec": spec},
        PersistentVolumeClaim,
    )


def sc(name: str, mode: str | None = None) -> StorageClass:
    doc: dict[str, Any] = {"metadata": {"name": name}}
    if mode is not None:
        doc["volumeBindingMode"] = mode
    return decode(doc, StorageClass)


def store(objs: list[Any], namespaced: bool = False) -> RevisionedStore[Any]:
    s: RevisionedStore[Any] = RevisionedStore()
    for o in objs:
        m = o.metadata
        s[f"{m.namespace}/{m.name}" if namespaced else m.name] = o
    return s


def plugin(
    pvs: list[PersistentVolume], pvcs: list[PersistentVolumeClaim], scs: list[StorageClass] = ()
) -> VolumeZone:  # type: ignore[assignment]
    listers = {
        "persistentvolumes": store(pvs),
        "persistentvolumeclaims": store(pvcs, namespaced=True),
        "storageclasses": store(list(scs)),
    }
    return VolumeZone(None, Handle(listers=listers))


def pod_with(claim: str) -> PodInfo:
    return make_pod("pod_1", volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": claim}}])


def node(labels: dict[str, str]) -> NodeInfo:
    return make_node_info(make_node("host1", labels=labels))


def check(
    p: VolumeZone,
    pod: PodInfo,
    labels: dict[str, str],
    want_pre: Status | None,
    want: Status | None,
) -> None:
    """PreFilter, then Filter on the node (upstream calls Filter even after Skip), then the
    batch form over a one-node snapshot agreeing with Filter."""
    state = CycleState()
    _, got_pre = p.pre_filter(state, pod, make_snapshot([]))
    assert code(got_pre) == code(want_pre)
    got = p.filter(state, pod, node(labels))
    assert code(got) == code(want)
    if got_pre is None:
        snap = make_snapshot([make_node("host1", labels=labels)])
        assert p.filter_batch(state, pod, snap).tolist() == [got is None]


def code(st: Status | None) -> tuple[Code, str]:
    return (Code.SUCCESS, "") if st is None else (st.code, st.message())


SKIP = Status(Code.SKIP)
CONFLICT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)

SINGLE_PVS = [
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {REGION: "us-west1", "uselessLabel": "none"}),
    pv("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
]
SINGLE_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_4", "Vol_not_exist"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
    pvc("PVC_Stable_3", "Vol_Stable_3"),
]

SINGLE_ZONE = [
    ("pod without volume", None, {BETA_ZONE: "us-west1-a"}, SKIP, None),
    ("node without labels", "PVC_1", {}, None, None),
    (
        "beta zone label matched",
        "PVC_1",
        {BETA_ZONE: "us-west1-a", "uselessLabel": "none"},
        None,
        None,
    ),
    (
        "beta region label matched",
        "PVC_2",
        {BETA_REGION: "us-west1", "uselessLabel": "none"},
        None,
        None,
    ),
    ("beta region label doesn't match", "PVC_2", {BETA_REGION: "no_us-west1"}, None, CONFLICT),
    ("beta zone label doesn't match", "PVC_1", {BETA_ZONE: "no_us-west1-a"}, None, CONFLICT),
    (
        "zone label matched",
        "PVC_Stable_1",
        {ZONE: "us-west1-a", "uselessLabel": "none"},
        None,
        None,
    ),
    ("region label matched", "PVC_Stable_2", {REGION: "us-west1"}, None, None),
    ("region label doesn't match", "PVC_Stable_2", {REGION: "no_us-west1"}, None, CONFLICT),
    ("zone label doesn't match", "PVC_Stable_1", {ZONE: "no_us-west1-a"}, None, CONFLICT),
    (
        "pv with zone and region, node with only zone",
        "PVC_Stable_3",
        {ZONE: "us-west1-a"},
        None,
        CONFLICT,
    ),
    (
        "pv with zone, node with beta zone",
        "PVC_Stable_1",
        {BETA_ZONE: "us-west1-a"},
        None,
        CONFLICT,
    ),
    ("pv with beta label, node with ga label, matched", "PVC_1", {ZONE: "us-west1-a"}, None, None),
    (
        "pv with beta label, node with ga label, don't match",
        "PVC_1",
        {ZONE: "us-west1-b"},
        None,
        CONFLICT,
    ),
]


@pytest.mark.parametrize(("name", "claim", "labels", "want_pre", "want"), SINGLE_ZONE)
def test_single_zone(
    name: str,
    claim: str | None,
    labels: dict[str, str],
    want_pre: Status | None,
    want: Status | None,
) -> None:
    pod = make_pod("pod_1") if claim is None else pod_with(claim)
    check(plugin(SINGLE_PVS, SINGLE_PVCS), pod, labels, want_pre, want)


MULTI_PVS = [
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_ZONE: "us-west1-b", "uselessLabel": "none"}),
    pv("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Bad", {ZONE: "us-west1-c____"}),
]
MULTI_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_2", "Vol_2"),
    pvc("PVC_3", "Vol_3"),
    pvc("PVC_Stable_1", "Vol_Stable_1"),
    pvc("PVC_Stable_2", "Vol_Stable_2"),
    pvc("PVC_Bad", "Vol_Bad"),
]


@pytest.mark.parametrize(
    ("claim", "labels", "want_pre", "want"),
    [
        ("PVC_3", {}, None, None),
        ("PVC_3", {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, None, None),
        ("PVC_1", {BETA_ZONE: "us-west1-b"}, None, CONFLICT),
        ("PVC_Stable_2", {ZONE: "us-west1-a"}, None, None),
        ("PVC_Stable_1", {ZONE: "us-west1-b"}, None, CONFLICT),
        # An unparsable multi-zone value is ignored, as upstream: nothing to check.
        ("PVC_Bad", {ZONE: "us-west1-b"}, SKIP, None),
    ],
)
def test_multi_zone(
    claim: str, labels: dict[str, str], want_pre: Status | None, want: Status | None
) -> None:
    check(plugin(MULTI_PVS, MULTI_PVCS), pod_with(claim), labels, want_pre, want)


BINDING_PVCS = [
    pvc("PVC_1", "Vol_1"),
    pvc("PVC_NoSC", sc="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", sc="Class_Wait"),
    pvc("PVC_ImmediateSC", sc="Class_Immediate"),
    pvc("PVC_ExplicitImmediate", sc="Class_Explicit"),
    pvc("PVC_AnnotatedSC", annotations={"volume.beta.kubernetes.io/storage-class": "Class_Wait"}),
]
CLASSES = [
    sc("Class_Immediate"),
    sc("Class_Wait", "WaitForFirstConsumer"),
    sc("Class_Explicit", "Immediate"),
]


def unresolvable(msg: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)


@pytest.mark.parametrize(
    ("claim", "want_pre", "want"),
    [
        ("PVC_1", None, None),
        (
            "PVC_EmptySC",
            unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
            unresolvable("PersistentVolumeClaim had no pv name and storageClass name"),
        ),
        (
            "PVC_NoSC",
            unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
            unresolvable('storageclass.storage.k8s.io "Class_0" not found'),
        ),
        (
            "PVC_ImmediateSC",
            unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
            unresolvable('VolumeBindingMode not set for StorageClass "Class_Immediate"'),
        ),
        (
            "PVC_ExplicitImmediate",
            unresolvable("PersistentVolume had no name"),
            unresolvable("PersistentVolume had no name"),
        ),
        ("PVC_WaitSC", SKIP, None),
        ("PVC_AnnotatedSC", SKIP, None),
        (
            "PVC_missing",
            unresolvable('persistentvolumeclaim "PVC_missing" not found'),
            unresolvable('persistentvolumeclaim "PVC_missing" not found'),
        ),
    ],
)
def test_with_binding(claim: str, want_pre: Status | None, want: Status | None) -> None:
    """TestWithBinding (plus the beta class annotation and a missing claim)."""
    pvs = [pv("Vol_1", {BETA_ZONE: "us-west1-a"})]
    p = plugin(pvs, BINDING_PVCS, CLASSES)
    check(p, pod_with(claim), {BETA_ZONE: "us-west1-a", "uselessLabel": "none"}, want_pre, want)


def test_missing_pv_is_unresolvable() -> None:
    state = CycleState()
    _, got = plugin([], [pvc("PVC_4", "Vol_not_exist")]).pre_filter(
        state, pod_with("PVC_4"), make_snapshot([])
    )
    assert code(got) == code(unresolvable('persistentvolume "Vol_not_exist" not found'))


def test_batch_filter_over_mixed_nodes() -> None:
    p = plugin(SINGLE_PVS, SINGLE_PVCS)
    pod = make_pod(
        "p",
        volumes=[
            {"name": "a", "persistentVolumeClaim": {"claimName": "PVC_1"}},
            {"name": "b", "persistentVolumeClaim": {"claimName": "PVC_Stable_2"}},
        ],
    )
    label_sets = [
        {},
        {ZONE: "us-west1-a", REGION: "us-west1"},
        {BETA_ZONE: "us-west1-a", REGION: "us-west1"},
        {ZONE: "us-west1-b", REGION: "us-west1"},
        {ZONE: "us-west1-a"},
        {"other": "x"},
    ]
    nodes = [make_node(f"n{i}", labels=ls) for i, ls in enumerate(label_sets)]
    snap = make_snapshot(nodes)
    state = CycleState()
    assert p.pre_filter(state, pod, snap)[1] is None
    per_node = [p.filter(state, pod, ni) is None for ni in snap.node_infos]
    fits = {ni.name for ni, ok in zip(snap.node_infos, per_node, strict=True) if ok}
    assert fits == {"n0", "n1", "n2", "n5"}
    assert np.array_equal(p.filter_batch(state, pod, snap), per_node)


def test_sign_pod() -> None:
    p = plugin([], [])
    assert p.sign_pod(pod_with("PVC_1")) is NOT_SIGNABLE
    assert p.sign_pod(make_pod()) == p.sign_pod(make_pod(volumes=[{"name": "e", "emptyDir": {}}]))


# ---- queueing hints ----------------------------------------------------------------------

HINTS = plugin([], [])


def test_hint_pvc_change() -> None:
    other_ns = decode(
        {"metadata": {"name": "PVC_1", "namespace": "ns1"}, "spec": {"volumeName": "Vol_1"}},
        PersistentVolumeClaim,
    )
    h = HINTS.is_schedulable_after_pvc_change
    assert h(pod_with("PVC_1"), None, other_ns) == QueueingHint.SKIP
    assert h(pod_with("PVC_1"), None, pvc("PVC_1", "Vol_1")) == QueueingHint.QUEUE
    assert h(pod_with("PVC_1"), pvc("PVC_1"), pvc("PVC_1", "Vol_1")) == QueueingHint.QUEUE
    assert h(make_pod("pod_1"), pvc("PVC_1"), pvc("PVC_1", "Vol_1")) == QueueingHint.SKIP
    assert h(pod_with("PVC_2"), None, pvc("PVC_1", "Vol_1")) == QueueingHint.SKIP
    with pytest.raises(TypeError):
        h(pod_with("PVC_1"), None, "not-a-pvc")


def test_hint_storage_class_added() -> None:
    h = HINTS.is_schedulable_after_storage_class_added
    assert h(pod_with("PVC_1"), None, sc("SC_1")) == QueueingHint.SKIP
    assert h(pod_with("PVC_1"), None, sc("SC_1", "WaitForFirstConsumer")) == QueueingHint.QUEUE
    with pytest.raises(TypeError):
        h(pod_with("PVC_1"), None, "not-a-storageclass")


def test_hint_pv_change() -> None:
    h = HINTS.is_schedulable_after_pv_change
    pod = pod_with("PVC_1")
    a = pv("Vol_1", {BETA_ZONE: "us-west1-a"})
    assert h(pod, None, pv("Vol_1", {BETA_ZONE: "us-west1-b"})) == QueueingHint.QUEUE
    assert h(pod, a, pv("Vol_1", {BETA_ZONE: "us-west1-b"})) == QueueingHint.QUEUE
    both = pv("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone"})
    assert h(pod, a, both) == QueueingHint.QUEUE
    assert h(pod, both, pv("Vol_1", {BETA_ZONE: "us-west1-a", ZONE: "zone", "x": "y"})) == (
        QueueingHint.SKIP
    )
    with pytest.raises(TypeError):
        h(pod, None, "not-a-pv")
    with pytest.raises(TypeError):
        h(pod, "not-a-pv", a)


def test_events_to_register() -> None:
    got = {(e.event.resource, e.event.action) for e in HINTS.events_to_register()}
    assert got == {
        ("StorageClass", "Add"),
        ("Node", "Add"),
        ("Node", "UpdateNodeLabel"),
        ("PersistentVolumeClaim", "Add"),
        ("PersistentVolumeClaim", "Update"),
        ("PersistentVolume", "Add"),
        ("PersistentVolume", "Update"),
    }
