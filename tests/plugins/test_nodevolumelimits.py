"""NodeVolumeLimits: upstream's TestCSILimits cases (csi_test.go) that do not involve
CSI migration, VolumeAttachments counting, the per-pod cache, and the queueing hints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from ksched.api.objects import (
    CSIDriver,
    CSINode,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    decode,
)
from ksched.features import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import NOT_SIGNABLE, QueueingHint
from ksched.framework.listers import RevisionedStore
from ksched.framework.status import Code, Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins.nodevolumelimits import ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, NodeVolumeLimits
from tests.factories import make_node, make_node_info, make_pod

EBS = "ebs.csi.aws.com"
GCE = "pd.csi.storage.gke.io"
NODE = "node-for-max-pd-test-1"
SC_NAME = "csi-sc"


@dataclass
class _VASource:
    persistent_volume_name: str | None = None


@dataclass
class _VASpec:
    attacher: str = ""
    node_name: str = ""
    source: _VASource = field(default_factory=_VASource)


@dataclass
class _VA:
    """The fields of a storage.k8s.io/v1 VolumeAttachment the plugin reads."""

    spec: _VASpec


def store(items: dict[str, Any]) -> RevisionedStore[Any]:
    s: RevisionedStore[Any] = RevisionedStore()
    s.update(items)
    return s


def claim(
    name: str, volume: str = "", sc: str | None = None, ns: str = "default", **meta: Any
) -> PersistentVolumeClaim:
    spec: dict[str, Any] = {"volumeName": volume}
    if sc is not None:
        spec["storageClassName"] = sc
    return decode(
        {"metadata": {"name": name, "namespace": ns, **meta}, "spec": spec}, PersistentVolumeClaim
    )


def listers(
    drivers: list[str], va_count: int = 0, extra: list[PersistentVolumeClaim] = ()
) -> dict[str, Any]:  # type: ignore[assignment]
    """``getFakeCSIPVLister``/``getFakeCSIPVCLister``/``getFakeVolumeAttachmentLister``:
    claims ``csi-<driver>-<j>`` bound to CSI PVs of the same name (j < 4), ``csi-4``
    unbound with the class, ``csi-5`` without a class, ``csi-6`` naming a missing PV."""
    pvs, pvcs, vas = {}, {}, {}
    for d in drivers:
        for j in range(4):
            name = f"csi-{d}-{j}"
            pvs[name] = decode(
                {"metadata": {"name": name}, "spec": {"csi": {"driver": d, "volumeHandle": name}}},
                PersistentVolume,
            )
            pvcs[f"default/{name}"] = claim(name, name)
        for j in range(va_count):
            vas[f"va-{d}-{j}"] = _VA(_VASpec(d, NODE, _VASource(f"csi-{d}-{j}")))
    pvcs["default/csi-4"] = claim("csi-4", sc=SC_NAME)
    pvcs["default/csi-5"] = claim("csi-5")
    pvcs["default/csi-6"] = claim("csi-6", "missing-in-action", sc=SC_NAME)
    for c in extra:
        pvcs[f"{c.metadata.namespace}/{c.metadata.name}"] = c
    sc = decode({"metadata": {"name": SC_NAME}, "provisioner": drivers[0]}, StorageClass)
    return {
        "persistentvolumes": store(pvs),
        "persistentvolumeclaims": store(pvcs),
        "storageclasses": store({SC_NAME: sc}),
        "volumeattachments": store(vas),
    }


def csi_node(drivers: list[str], limit: int | None) -> CSINode:
    ds = []
    for d in drivers:
        entry: dict[str, Any] = {"name": d, "nodeID": NODE}
        if limit is not None:
            entry["allocatable"] = {"count": limit}
        ds.append(entry)
    return decode({"metadata": {"name": NODE}, "spec": {"drivers": ds}}, CSINode)


def pod(
    *claims: str, name: str = "", ns: str = "default", uid: str | None = None, **vols: Any
) -> PodInfo:
    volumes: list[dict[str, Any]] = [
        {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}} for i, c in enumerate(claims)
    ]
    volumes += [{"name": n, **v} for n, v in vols.items()]
    return make_pod(name, ns, uid=uid, volumes=volumes)


def ephemeral_pod(*names: str, uid: str = "12345") -> PodInfo:
    return pod(name="abc", ns="test", uid=uid, **{n: {"ephemeral": {}} for n in names})


def owned_claim(p: PodInfo, volume: str, owned: bool = True) -> PersistentVolumeClaim:
    refs = [{"kind": "Pod", "name": p.name, "uid": p.uid, "controller": True}] if owned else []
    return claim(f"{p.name}-{volume}", sc=SC_NAME, ns=p.namespace, ownerReferences=refs)


RUNNING = pod(f"csi-{EBS}-3")
PENDING = pod("csi-4")
UNBOUND2 = pod("csi-4")
MISSING_PV = pod("csi-6")
NO_SC = pod("csi-5")
GCE_TWO = pod(f"csi-{GCE}-1", f"csi-{GCE}-2")
EBS_ONE = pod(f"csi-{EBS}-0")
EBS_TWO = pod(f"csi-{EBS}-1", f"csi-{EBS}-2")
EPHEMERAL = ephemeral_pod("xyz")
EPHEMERAL_TWO = ephemeral_pod("x", "y", uid="12345II")
CONFIG_ONLY = pod(a={"configMap": {"name": "c"}}, b={"secret": {"secretName": "s"}})
PVC_AND_CONFIG = pod(f"csi-{EBS}-0", a={"configMap": {"name": "c"}})
EPHEMERAL_AND_CONFIG = pod(
    name="abc", ns="test", a={"configMap": {"name": "c"}}, xyz={"ephemeral": {}}
)

EXCEEDED = Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
SKIP = Status(Code.SKIP)


def missing(ns_name: str) -> Status:
    name = ns_name.split("/")[1]
    return Status(
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        f'looking up PVC {ns_name}: persistentvolumeclaim "{name}" not found',
    )


# name, new pod, existing pods, max volumes (None: CSINode without limits), drivers,
# VolumeAttachments per driver, extra claims, want PreFilter, want Filter
CASES: list[
    tuple[
        str,
        PodInfo,
        list[PodInfo],
        int | None,
        list[str],
        int,
        list[Any],
        Status | None,
        Status | None,
    ]
] = [
    (
        "should count VolumeAttachments towards volume limit when no pods exist",
        EBS_ONE,
        [],
        2,
        [EBS],
        2,
        [],
        None,
        EXCEEDED,
    ),
    (
        "should schedule pod when VolumeAttachments count does not exceed limit",
        EBS_ONE,
        [],
        2,
        [EBS],
        1,
        [],
        None,
        None,
    ),
    (
        # 1 and 2 by the pod and their attachments once, 0 by its attachment: 3 + 1 <= 4.
        "attachments of volumes the node's pods use count once",
        EBS_ONE,
        [EBS_TWO],
        4,
        [EBS],
        3,
        [],
        None,
        None,
    ),
    (
        "fits when node volume limit >= new pods CSI volume",
        EBS_ONE,
        [RUNNING, EBS_TWO],
        4,
        [EBS],
        0,
        [],
        None,
        None,
    ),
    (
        "doesn't when node volume limit <= pods CSI volume",
        EBS_ONE,
        [RUNNING, EBS_TWO],
        2,
        [EBS],
        0,
        [],
        None,
        EXCEEDED,
    ),
    (
        "should when driver does not support volume limits",
        EBS_ONE,
        [RUNNING, EBS_TWO],
        None,
        [EBS],
        0,
        [],
        None,
        None,
    ),
    (
        "count pending PVCs towards volume limit <= pods CSI volume",
        EBS_ONE,
        [PENDING, EBS_TWO],
        2,
        [EBS],
        0,
        [],
        None,
        EXCEEDED,
    ),
    (
        "count multiple pending pvcs towards volume limit >= pods CSI volume",
        EBS_ONE,
        [PENDING, UNBOUND2, EBS_TWO],
        4,
        [EBS],
        0,
        [],
        None,
        None,
    ),
    (
        "should count PVCs with invalid PV name but valid SC",
        EBS_ONE,
        [MISSING_PV, EBS_TWO],
        2,
        [EBS],
        0,
        [],
        None,
        EXCEEDED,
    ),
    (
        "don't count pvcs with missing SC towards volume limit",
        EBS_ONE,
        [RUNNING, NO_SC],
        2,
        [EBS],
        0,
        [],
        None,
        None,
    ),
    (
        "count pvcs with the same type towards volume limit",
        EBS_ONE,
        [GCE_TWO, EBS_TWO],
        2,
        [EBS, GCE],
        0,
        [],
        None,
        EXCEEDED,
    ),
    (
        "don't count pvcs with different type towards volume limit",
        GCE_TWO,
        [EBS_TWO, RUNNING],
        2,
        [EBS, GCE],
        0,
        [],
        None,
        None,
    ),
    (
        "a volume already on the node is not counted again",
        EBS_ONE,
        [pod(f"csi-{EBS}-0"), EBS_TWO],
        3,
        [EBS],
        0,
        [],
        None,
        None,
    ),
    ("ephemeral volume missing", EPHEMERAL, [], None, [EBS], 0, [], None, missing("test/abc-xyz")),
    (
        "ephemeral volume not owned",
        EPHEMERAL,
        [],
        None,
        [EBS],
        0,
        [owned_claim(EPHEMERAL, "xyz", owned=False)],
        None,
        Status(Code.ERROR, "PVC test/abc-xyz was not created for pod test/abc (pod is not owner)"),
    ),
    (
        "ephemeral volume unbound",
        EPHEMERAL,
        [],
        None,
        [EBS],
        0,
        [owned_claim(EPHEMERAL, "xyz")],
        None,
        None,
    ),
    (
        "ephemeral doesn't when node volume limit <= pods CSI volume",
        EPHEMERAL,
        [RUNNING, EBS_TWO],
        2,
        [EBS],
        0,
        [owned_claim(EPHEMERAL, "xyz")],
        None,
        EXCEEDED,
    ),
    (
        "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
        EBS_ONE,
        [RUNNING, EPHEMERAL_TWO],
        2,
        [EBS],
        0,
        [owned_claim(EPHEMERAL_TWO, "x"), owned_claim(EPHEMERAL_TWO, "y")],
        None,
        EXCEEDED,
    ),
    (
        "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",
        EBS_ONE,
        [RUNNING, EPHEMERAL, EBS_TWO],
        3,
        [EBS],
        0,
        [owned_claim(EPHEMERAL, "xyz")],
        None,
        EXCEEDED,
    ),
    (
        "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
        EBS_ONE,
        [RUNNING, EPHEMERAL, EBS_TWO],
        5,
        [EBS],
        0,
        [owned_claim(EPHEMERAL, "xyz")],
        None,
        None,
    ),
    (
        "skip Filter when the pod only uses secrets and configmaps",
        CONFIG_ONLY,
        [],
        2,
        [EBS],
        0,
        [],
        SKIP,
        None,
    ),
    ("don't skip Filter when the pod has pvcs", PVC_AND_CONFIG, [], 2, [EBS], 0, [], None, None),
    (
        "don't skip Filter when the pod has ephemeral volumes",
        EPHEMERAL_AND_CONFIG,
        [],
        None,
        [EBS],
        0,
        [],
        None,
        missing("test/abc-xyz"),
    ),
    ("no CSINode: no limits", EBS_ONE, [RUNNING, EBS_TWO], -1, [EBS], 0, [], None, None),
    (
        "an existing pod's missing claim is not counted",
        EBS_ONE,
        [pod("gone"), RUNNING],
        2,
        [EBS],
        0,
        [],
        None,
        None,
    ),
]


def code(st: Status | None) -> tuple[Code, str]:
    return (Code.SUCCESS, "") if st is None else (st.code, st.message())


def setup(
    existing: list[PodInfo], max_vols: int | None, drivers: list[str], va: int, extra: list[Any]
) -> tuple[NodeVolumeLimits, NodeInfo]:
    ls = listers(drivers, va, extra)
    ls["csinodes"] = store({} if max_vols == -1 else {NODE: csi_node(drivers, max_vols)})
    ni = make_node_info(make_node(NODE), [p.assumed_on(NODE) for p in existing])
    return NodeVolumeLimits(None, Handle(listers=ls)), ni


@pytest.mark.parametrize(
    ("name", "new", "existing", "max_vols", "drivers", "va", "extra", "want_pre", "want"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_csi_limits(
    name: str,
    new: PodInfo,
    existing: list[PodInfo],
    max_vols: int | None,
    drivers: list[str],
    va: int,
    extra: list[Any],
    want_pre: Status | None,
    want: Status | None,
) -> None:
    p, ni = setup(existing, max_vols, drivers, va, extra)
    state = CycleState()
    _, got_pre = p.pre_filter(state, new, None)  # type: ignore[arg-type]
    assert code(got_pre) == code(want_pre)
    if got_pre is None:
        assert code(p.filter(state, new, ni)) == code(want)


def test_existing_pods_volumes_are_cached_until_a_lister_changes() -> None:
    p, ni = setup([EBS_TWO], 2, [EBS], 0, [])
    assert p.filter(CycleState(), EBS_ONE, ni) is not None  # 2 + 1 > 2
    pvcs = p.handle.listers["persistentvolumeclaims"]  # type: ignore[union-attr]
    # Unbind one of the existing pod's claims without telling anyone: the cache holds.
    pvcs[f"default/csi-{EBS}-1"] = claim(f"csi-{EBS}-1")
    assert p.filter(CycleState(), EBS_ONE, ni) is not None
    pvcs.bump()  # now the claim (no class) no longer counts
    assert p.filter(CycleState(), EBS_ONE, ni) is None


def test_attachments_follow_the_lister() -> None:
    p, ni = setup([], 2, [EBS], 2, [])
    assert p.filter(CycleState(), EBS_ONE, ni) is not None
    vas = p.handle.listers["volumeattachments"]  # type: ignore[union-attr]
    del vas[f"va-{EBS}-1"]
    vas.bump()
    assert p.filter(CycleState(), EBS_ONE, ni) is None


def test_attachments_without_attacher_pv_or_csi_are_ignored() -> None:
    p, ni = setup([], 1, [EBS], 0, [])
    vas = p.handle.listers["volumeattachments"]  # type: ignore[union-attr]
    vas["a"] = _VA(_VASpec("", NODE, _VASource(f"csi-{EBS}-1")))
    vas["b"] = _VA(_VASpec(EBS, NODE, _VASource(None)))
    vas["c"] = _VA(_VASpec(EBS, NODE, _VASource("no-such-pv")))
    vas["d"] = _VA(_VASpec(EBS, "other-node", _VASource(f"csi-{EBS}-2")))
    vas.bump()
    assert p.filter(CycleState(), EBS_ONE, ni) is None


def test_sign_pod() -> None:
    p, _ = setup([], 2, [EBS], 0, [])
    assert p.sign_pod(EBS_ONE) is NOT_SIGNABLE
    assert p.sign_pod(EPHEMERAL) is NOT_SIGNABLE
    assert p.sign_pod(CONFIG_ONLY) == p.sign_pod(make_pod())


# ---- queueing hints ----------------------------------------------------------------------

HINTS, _ = setup([], 1, [EBS], 0, [])


@pytest.mark.parametrize(
    ("deleted", "scheduled", "want"),
    [
        (pod("placeholder"), True, QueueingHint.QUEUE),
        (pod(a={"awsElasticBlockStore": {"volumeID": ""}}), True, QueueingHint.QUEUE),
        (make_pod(), True, QueueingHint.SKIP),
        (pod(f"csi-{EBS}-0"), False, QueueingHint.SKIP),
        (pod(a={"configMap": {"name": "c"}}), True, QueueingHint.SKIP),
    ],
)
def test_hint_pod_deleted(deleted: PodInfo, scheduled: bool, want: str) -> None:
    old = deleted.assumed_on(NODE) if scheduled else deleted
    assert HINTS.is_schedulable_after_pod_deleted(pod(f"csi-{EBS}-2"), old, None) == want


@pytest.mark.parametrize(
    ("new_pod", "added", "want"),
    [
        (make_pod(ns="ns1"), claim("x", ns="ns2"), QueueingHint.SKIP),
        (pod("pvc1", ns="ns1"), claim("pvc1", ns="ns1"), QueueingHint.QUEUE),
        (
            pod(name="pod1", ns="ns1", ephemeral={"ephemeral": {}}),
            claim("pod1-ephemeral", ns="ns1"),
            QueueingHint.QUEUE,
        ),
        (pod("pvc1", ns="ns1"), claim("pvc2", ns="ns1"), QueueingHint.SKIP),
        (make_pod(ns="ns1"), claim("pvc2", ns="ns1"), QueueingHint.SKIP),
    ],
)
def test_hint_pvc_added(new_pod: PodInfo, added: PersistentVolumeClaim, want: str) -> None:
    assert HINTS.is_schedulable_after_pvc_added(new_pod, None, added) == want


def va_hint_plugin() -> NodeVolumeLimits:
    pvcs = store({"ns1/pvc1": claim("pvc1", "pv1", ns="ns1")})
    return NodeVolumeLimits(None, Handle(listers={"persistentvolumeclaims": pvcs}))


AWS_INLINE = {"awsElasticBlockStore": {"volumeID": "test"}}
GCE_INLINE = {"gcePersistentDisk": {"pdName": "test"}}


@pytest.mark.parametrize(
    ("new_pod", "va", "want"),
    [
        (
            pod("pvc1", ns="ns1"),
            _VA(_VASpec("test.storage.gke.io", "n", _VASource("pv1"))),
            QueueingHint.QUEUE,
        ),
        (pod(ns="ns1", a=AWS_INLINE), _VA(_VASpec(EBS, "n")), QueueingHint.QUEUE),
        (pod(ns="ns1", a=GCE_INLINE), _VA(_VASpec(EBS, "n")), QueueingHint.SKIP),
        (pod("pvc1", ns="ns1", a=AWS_INLINE), _VA(_VASpec(EBS, "n")), QueueingHint.QUEUE),
        (
            pod("pvc1", ns="ns1", a=AWS_INLINE),
            _VA(_VASpec("test.storage.gke.io", "n", _VASource("pv1"))),
            QueueingHint.QUEUE,
        ),
        (
            pod("pvc1", ns="ns1"),
            _VA(_VASpec("test.storage.gke.io", "n", _VASource("pv2"))),
            QueueingHint.SKIP,
        ),
        (
            make_pod(ns="ns1"),
            _VA(_VASpec("test.storage.gke.io", "n", _VASource("pv1"))),
            QueueingHint.SKIP,
        ),
    ],
)
def test_hint_volume_attachment_deleted(new_pod: PodInfo, va: _VA, want: str) -> None:
    assert (
        va_hint_plugin().is_schedulable_after_volume_attachment_deleted(new_pod, va, None) == want
    )


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (csi_node([EBS], 2), csi_node([EBS], 3), QueueingHint.QUEUE),
        (csi_node([EBS], 2), csi_node([EBS], None), QueueingHint.QUEUE),
        (csi_node([EBS], 2), csi_node([], None), QueueingHint.QUEUE),
        (csi_node([EBS], 2), csi_node([EBS], 2), QueueingHint.SKIP),
        (csi_node([EBS], 2), csi_node([EBS], 1), QueueingHint.SKIP),
        (csi_node([EBS], None), csi_node([EBS, GCE], 4), QueueingHint.SKIP),
    ],
)
def test_hint_csi_node_updated(old: CSINode, new: CSINode, want: str) -> None:
    assert HINTS.is_schedulable_after_csi_node_updated(EBS_ONE, old, new) == want


def test_hints_reject_unexpected_objects() -> None:
    with pytest.raises(TypeError):
        HINTS.is_schedulable_after_pvc_added(EBS_ONE, None, "not-a-pvc")
    with pytest.raises(TypeError):
        HINTS.is_schedulable_after_pod_deleted(EBS_ONE, "not-a-pod", None)
    with pytest.raises(TypeError):
        HINTS.is_schedulable_after_volume_attachment_deleted(EBS_ONE, "not-a-va", None)
    with pytest.raises(TypeError):
        HINTS.is_schedulable_after_csi_node_updated(EBS_ONE, None, csi_node([EBS], 1))


@pytest.mark.parametrize(("version", "pods"), [("1.36", "Pod"), ("1.37", "AssignedPod")])
def test_events_to_register(version: str, pods: str) -> None:
    """v1.37 registers deletions of bound pods only (AssignedPod), v1.36 of any pod."""
    pl = NodeVolumeLimits(None, Handle(features=set_feature_gates([], [version])))
    got = {(e.event.resource, e.event.action) for e in pl.events_to_register()}
    assert got == {
        ("CSINode", "Add"),
        ("CSINode", "Update"),
        (pods, "Delete"),
        ("PersistentVolumeClaim", "Add"),
        ("VolumeAttachment", "Delete"),
    }


def _scaling(
    gates: list[str], version: str, driver: dict[str, Any] | None, on_node: bool, limit: int
) -> Status | None:
    """``TestVolumeLimitScalingGate``: EBS_ONE's claim (an EBS CSI volume) on a node whose
    CSINode has the EBS driver or none, with the EBS CSIDriver ``driver`` spec (None:
    no CSIDriver object)."""
    ls = listers([EBS])
    ls["csinodes"] = store({NODE: csi_node([EBS] if on_node else [], limit)})
    ls["csidrivers"] = store(
        {}
        if driver is None
        else {EBS: decode({"metadata": {"name": EBS}, "spec": driver}, CSIDriver)}
    )
    features = set_feature_gates(gates, [version])
    pl = NodeVolumeLimits(None, Handle(listers=ls, features=features))
    return pl.filter(CycleState(), EBS_ONE, make_node_info(make_node(NODE), []))


PREVENT = {"preventPodSchedulingIfMissing": True}
MISSING = Status(Code.UNSCHEDULABLE, f"{EBS} CSI driver is not installed on the node")


@pytest.mark.parametrize(
    ("gates", "version", "driver", "on_node", "want"),
    [
        ([], "1.37", PREVENT, False, MISSING),  # beta, on by default
        ([], "1.37", {}, False, None),  # the driver does not opt in
        ([], "1.37", {"preventPodSchedulingIfMissing": False}, False, None),
        ([], "1.37", None, False, None),  # no CSIDriver: maybe not a CSI driver at all
        ([], "1.37", PREVENT, True, None),  # installed, within its limit
        (["VolumeLimitScaling=false"], "1.37", PREVENT, False, None),
        ([], "1.36", PREVENT, False, None),  # alpha, off by default
        (["VolumeLimitScaling=true"], "1.36", PREVENT, False, MISSING),
    ],
)
def test_volume_limit_scaling_requires_an_opted_in_driver_on_the_node(
    gates: list[str], version: str, driver: dict[str, Any] | None, on_node: bool, want: Any
) -> None:
    got = _scaling(gates, version, driver, on_node, 2)
    if want is None:
        assert got is None
    else:
        assert got is not None and (got.code, got.reasons) == (want.code, want.reasons)


def test_volume_limit_scaling_checks_the_driver_before_the_limits() -> None:
    """No CSINode limits at all (the driver missing from it): still refused."""
    ls = listers([EBS])
    ls["csidrivers"] = store({EBS: decode({"metadata": {"name": EBS}, "spec": PREVENT}, CSIDriver)})
    pl = NodeVolumeLimits(None, Handle(listers=ls))  # no CSINode for the node
    got = pl.filter(CycleState(), EBS_ONE, make_node_info(make_node(NODE), []))
    assert got is not None and got.reasons == MISSING.reasons
