"""VolumeRestrictions: upstream's table tests (volume_restrictions_test.go), the
ReadWriteOncePod PreFilter state under AddPod/RemovePod, and the queueing hints."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import PersistentVolumeClaim, decode
from ksched.features import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import NOT_SIGNABLE, QueueingHint
from ksched.framework.listers import RevisionedStore
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins.volumerestrictions import (
    ERR_REASON_DISK_CONFLICT,
    ERR_REASON_RWOP_CONFLICT,
    VolumeRestrictions,
)
from tests.factories import make_node, make_pod, make_snapshot

GCE = {"gcePersistentDisk": {"pdName": "foo"}}
GCE2 = {"gcePersistentDisk": {"pdName": "bar"}}
AWS = {"awsElasticBlockStore": {"volumeID": "foo"}}
AWS2 = {"awsElasticBlockStore": {"volumeID": "bar"}}
RBD = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
ISCSI = {
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2016-12.server:storage.target01",
        "fsType": "ext4",
        "lun": 0,
    }
}
ISCSI2 = {
    "iscsi": {
        "targetPortal": "127.0.0.1:3260",
        "iqn": "iqn.2017-12.server:storage.target01",
        "fsType": "ext4",
        "lun": 0,
    }
}


def vol_pod(*vols: dict[str, Any], name: str = "", node: str = "", ns: str = "default") -> PodInfo:
    volumes = [{"name": f"v{i}", **v} for i, v in enumerate(vols)]
    return make_pod(name, ns, node_name=node, volumes=volumes)


def pvc_pod(*claims: str, name: str = "", node: str = "", ns: str = "default") -> PodInfo:
    return vol_pod(
        *({"persistentVolumeClaim": {"claimName": c}} for c in claims), name=name, node=node, ns=ns
    )


def node_info(*pods: PodInfo) -> NodeInfo:
    ni = NodeInfo()
    for p in pods:
        ni.add_pod(p)
    return ni


def pvc(name: str, *modes: str, ns: str = "default") -> PersistentVolumeClaim:
    return decode(
        {"metadata": {"name": name, "namespace": ns}, "spec": {"accessModes": list(modes)}},
        PersistentVolumeClaim,
    )


def plugin(*claims: PersistentVolumeClaim) -> VolumeRestrictions:
    store: RevisionedStore[PersistentVolumeClaim] = RevisionedStore()
    for c in claims:
        store[f"{c.metadata.namespace}/{c.metadata.name}"] = c
    return VolumeRestrictions(None, Handle(listers={"persistentvolumeclaims": store}))


def run(
    p: VolumeRestrictions, pod: PodInfo, ni: NodeInfo, snap: Snapshot | None = None
) -> tuple[Status | None, Status | None]:
    state = CycleState()
    _, pre = p.pre_filter(state, pod, snap if snap is not None else Snapshot())
    if pre is not None:
        return pre, None
    return None, p.filter(state, pod, ni)


def code(st: Status | None) -> tuple[Code, str]:
    return (Code.SUCCESS, "") if st is None else (st.code, st.message())


SKIP = (Code.SKIP, "")
OK = (Code.SUCCESS, "")
DISK = (Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)


@pytest.mark.parametrize(
    ("kind", "vol", "other"),
    [("gce", GCE, GCE2), ("aws", AWS, AWS2), ("rbd", RBD, RBD2), ("iscsi", ISCSI, ISCSI2)],
)
@pytest.mark.parametrize("case", ["nothing", "one state", "same state", "different state"])
def test_disk_conflicts(kind: str, vol: dict[str, Any], other: dict[str, Any], case: str) -> None:
    """TestGCEDiskConflicts / AWS / RBD / ISCSI."""
    pod, ni, pre, filt = {
        "nothing": (make_pod(), node_info(), SKIP, OK),
        "one state": (make_pod(), node_info(vol_pod(vol)), SKIP, OK),
        "same state": (vol_pod(vol), node_info(vol_pod(vol)), OK, DISK),
        "different state": (vol_pod(other), node_info(vol_pod(vol)), OK, OK),
    }[case]
    got_pre, got_filter = run(plugin(), pod, ni)
    assert code(got_pre) == pre
    if pre == OK:
        assert code(got_filter) == filt


def test_volume_without_restrictions_is_skipped() -> None:
    got_pre, _ = run(plugin(), vol_pod({"emptyDir": {}}), node_info())
    assert code(got_pre) == SKIP


@pytest.mark.parametrize(
    ("mine", "theirs", "conflict"),
    [
        ({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}, GCE, True),
        (
            {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}},
            {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}},
            False,
        ),
        (
            {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}},
            {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}},
            True,
        ),
        (
            {"iscsi": {"iqn": "x", "readOnly": True}},
            {"iscsi": {"iqn": "x", "readOnly": True}},
            False,
        ),
        ({"iscsi": {"iqn": "x", "readOnly": True}}, {"iscsi": {"iqn": "x"}}, True),
        # One shared monitor is the same image; another pool or image is not.
        ({"rbd": {"monitors": ["b", "z"], "pool": "foo", "image": "bar"}}, RBD, True),
        ({"rbd": {"monitors": ["a"], "pool": "other", "image": "bar"}}, RBD, False),
        (
            {"rbd": {"monitors": ["a"], "image": "bar"}},
            {"rbd": {"monitors": ["a"], "image": "bar"}},
            True,
        ),
        (
            {"rbd": {"monitors": ["a"], "image": "i", "readOnly": True}},
            {"rbd": {"monitors": ["a"], "image": "i", "readOnly": True}},
            False,
        ),
        # Different volume types never conflict.
        (GCE, AWS, False),
    ],
)
def test_read_only_and_identity_rules(
    mine: dict[str, Any], theirs: dict[str, Any], conflict: bool
) -> None:
    _, got = run(plugin(), vol_pod(mine), node_info(vol_pod({"emptyDir": {}}, theirs)))
    assert code(got) == (DISK if conflict else OK)


# ---- ReadWriteOncePod (TestAccessModeConflicts) ------------------------------------------

RWOP1 = pvc("claim-with-rwop-1", "ReadWriteOncePod")
RWOP2 = pvc("claim-with-rwop-2", "ReadWriteOncePod")
RWX = pvc("claim-with-rwx", "ReadWriteMany")


def cluster(*pods: PodInfo) -> tuple[Snapshot, NodeInfo]:
    snap = make_snapshot([make_node("node-1")], list(pods))
    ni = snap.get("node-1")
    assert ni is not None
    return snap, ni


def test_access_mode_nothing() -> None:
    snap, ni = cluster()
    assert code(run(plugin(), make_pod(), ni, snap)[0]) == SKIP


def test_access_mode_missing_pvc_is_unresolvable() -> None:
    snap, ni = cluster()
    pre, _ = run(plugin(), pvc_pod("claim-with-rwop-1"), ni, snap)
    assert code(pre) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        'persistentvolumeclaim "claim-with-rwop-1" not found',
    )


def test_access_mode_no_conflict_skips() -> None:
    snap, ni = cluster(pvc_pod("claim-with-rwx", node="node-1"))
    pre, _ = run(plugin(RWOP1, RWX), pvc_pod("claim-with-rwop-1"), ni, snap)
    assert code(pre) == SKIP


@pytest.mark.parametrize(
    "claims", [("claim-with-rwop-1",), ("claim-with-rwop-1", "claim-with-rwop-2")]
)
def test_access_mode_conflict_is_unschedulable(claims: tuple[str, ...]) -> None:
    snap, ni = cluster(pvc_pod(*claims, node="node-1"), pvc_pod("claim-with-rwx", node="node-1"))
    pre, got = run(plugin(RWOP1, RWOP2, RWX), pvc_pod(*claims), ni, snap)
    assert pre is None
    assert code(got) == (Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT)


def test_rwop_user_in_other_namespace_does_not_conflict() -> None:
    snap, ni = cluster(pvc_pod("claim-with-rwop-1", node="node-1", ns="other"))
    pre, _ = run(plugin(RWOP1), pvc_pod("claim-with-rwop-1"), ni, snap)
    assert code(pre) == SKIP


def test_remove_and_add_pod_track_the_rwop_user() -> None:
    """Preemption removes the claim's user (the pod then fits); a nominated user adds it."""
    user = pvc_pod("claim-with-rwop-1", node="node-1")
    snap, ni = cluster(user)
    p = plugin(RWOP1)
    pod = vol_pod({"persistentVolumeClaim": {"claimName": "claim-with-rwop-1"}}, GCE)
    state = CycleState()
    _, pre = p.pre_filter(state, pod, snap)
    assert pre is None
    dry = state.clone()
    assert p.remove_pod(dry, pod, user, ni) is None
    assert p.filter(dry, pod, NodeInfo()) is None
    assert code(p.filter(state, pod, NodeInfo())) == (Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT)
    assert p.add_pod(dry, pod, user, ni) is None
    assert code(p.filter(dry, pod, NodeInfo())) == (Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT)


def test_used_claims_follow_snapshot_changes() -> None:
    """The cluster-wide claim index updates from replaced rows, not a rebuild."""
    snap, ni = cluster()
    p = plugin(RWOP1)
    pod = pvc_pod("claim-with-rwop-1")
    assert code(run(p, pod, ni, snap)[0]) == SKIP
    with_user = ni.clone()
    with_user.add_pod(pvc_pod("claim-with-rwop-1", node="node-1"))
    snap.replace(0, with_user)
    assert run(p, pod, with_user, snap)[0] is None
    snap.replace(0, NodeInfo(node=ni.node))
    assert code(run(p, pod, ni, snap)[0]) == SKIP


def test_filter_without_prefilter_state_is_an_error() -> None:
    got = plugin().filter(CycleState(), vol_pod(GCE), node_info())
    assert got is not None and got.code == Code.ERROR


def test_sign_pod() -> None:
    p = plugin()
    assert p.sign_pod(pvc_pod("c")) is NOT_SIGNABLE
    assert p.sign_pod(vol_pod(GCE)) == p.sign_pod(vol_pod(GCE))
    assert p.sign_pod(vol_pod(GCE)) != p.sign_pod(vol_pod(GCE2))
    assert p.sign_pod(make_pod()) == p.sign_pod(vol_pod({"emptyDir": {}}))


# ---- queueing hints ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pod", "deleted", "want"),
    [
        (vol_pod(GCE), vol_pod(GCE), QueueingHint.QUEUE),
        (vol_pod(GCE), vol_pod(GCE2), QueueingHint.SKIP),
        (vol_pod(AWS), vol_pod(AWS), QueueingHint.QUEUE),
        (vol_pod(AWS), vol_pod(AWS2), QueueingHint.SKIP),
        (vol_pod(RBD), vol_pod(RBD), QueueingHint.QUEUE),
        (vol_pod(RBD), vol_pod(RBD2), QueueingHint.SKIP),
        (vol_pod(ISCSI), vol_pod(ISCSI), QueueingHint.QUEUE),
        (vol_pod(ISCSI), vol_pod(ISCSI2), QueueingHint.SKIP),
        (pvc_pod("claim-rwop"), pvc_pod("claim-rwop"), QueueingHint.QUEUE),
        (pvc_pod("claim-1-rwop"), pvc_pod("claim-2-rwop"), QueueingHint.SKIP),
        (pvc_pod("claim-rwop"), pvc_pod("claim-rwop", ns="other"), QueueingHint.SKIP),
    ],
)
def test_hint_pod_deleted(pod: PodInfo, deleted: PodInfo, want: str) -> None:
    assert plugin().is_schedulable_after_pod_deleted(pod, deleted, None) == want


POD_TWO = pvc_pod("claim-with-rwx-1", "claim-with-rwx-2", node="node-1")


@pytest.mark.parametrize(
    ("pod", "new", "want"),
    [
        (POD_TWO, pvc("claim-with-rwx-1", "ReadWriteMany"), QueueingHint.QUEUE),
        (pvc_pod("claim-with-rwx-1"), pvc("claim-with-rwx-2", "ReadWriteMany"), QueueingHint.SKIP),
        (pvc_pod("claim-with-rwx-1", ns="kube-system"), pvc("claim-with-rwx-1"), QueueingHint.SKIP),
    ],
)
def test_hint_pvc_added(pod: PodInfo, new: PersistentVolumeClaim, want: str) -> None:
    assert plugin().is_schedulable_after_pvc_added(pod, None, new) == want


def test_hints_reject_unexpected_objects() -> None:
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_pvc_added(make_pod(), None, "not-a-pvc")
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_pod_deleted(make_pod(), "not-a-pod", None)


@pytest.mark.parametrize(("version", "pods"), [("1.36", "Pod"), ("1.37", "AssignedPod")])
def test_events_to_register(version: str, pods: str) -> None:
    """v1.37 registers deletions of bound pods only (AssignedPod), v1.36 of any pod."""
    pl = VolumeRestrictions(None, Handle(features=set_feature_gates([], [version])))
    got = {(e.event.resource, e.event.action) for e in pl.events_to_register()}
    assert got == {(pods, "Delete"), ("Node", "Add"), ("PersistentVolumeClaim", "Add")}
