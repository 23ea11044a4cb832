"""VolumeRestrictions: volumes that one node, or one pod, must not share.

Mirrors kube-scheduler's ``volumerestrictions`` plugin. Filter rejects a node where
another pod mounts the same GCE PD (unless both mount it read-only), AWS EBS volume,
ISCSI IQN (unless both read-only) or RBD image (a shared monitor, same pool and image,
unless both read-only). PreFilter looks up the pod's PVCs: one missing is
UnschedulableAndUnresolvable, and a ReadWriteOncePod claim some scheduled pod already
uses makes every node Unschedulable (preemption can free it; PreFilter's AddPod/RemovePod
keep the count right for nominated pods and victims). Pods without such volumes are
skipped at PreFilter and cost nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import msgspec

from ..api.objects import PersistentVolumeClaim, Pod, Volume
from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.handle import Handle
from ..framework.interface import (
    NOT_SIGNABLE,
    ClusterEvent,
    ClusterEventWithHint,
    FilterPlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
)
from ..framework.listers import Listers
from ..framework.snapshot import Snapshot
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from . import names
from .helper import spec_fragment
from .volumeutil import NotFoundError, claim_names, deleted_pod_resource, get_pvc

__all__ = [
    "ERR_REASON_DISK_CONFLICT",
    "ERR_REASON_RWOP_CONFLICT",
    "VolumeRestrictions",
    "is_volume_conflict",
    "satisfies_volume_conflicts",
]

ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_RWOP_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
READ_WRITE_ONCE_POD = "ReadWriteOncePod"
PRE_FILTER_KEY = "PreFilter" + names.VOLUME_RESTRICTIONS
_NOT_FOUND = f'cannot read "{PRE_FILTER_KEY}" from cycleState'


def needs_restrictions_check(v: Volume) -> bool:
    """Whether ``v`` is one of the volume types that conflict between pods on a node."""
    return (
        v.gce_persistent_disk is not None
        or v.aws_elastic_block_store is not None
        or v.rbd is not None
        or v.iscsi is not None
    )


def is_volume_conflict(volume: Volume, pod: Pod) -> bool:
    """``isVolumeConflict``: ``volume`` may not be mounted beside ``pod``'s volumes."""
    for ev in pod.spec.volumes:
        gce, egce = volume.gce_persistent_disk, ev.gce_persistent_disk
        if (
            gce is not None
            and egce is not None
            and gce.pd_name == egce.pd_name
            and not (gce.read_only and egce.read_only)
        ):
            return True
        ebs, eebs = volume.aws_elastic_block_store, ev.aws_elastic_block_store
        if ebs is not None and eebs is not None and ebs.volume_id == eebs.volume_id:
            return True
        iscsi, eiscsi = volume.iscsi, ev.iscsi
        if (
            iscsi is not None
            and eiscsi is not None
            and iscsi.iqn == eiscsi.iqn
            and not (iscsi.read_only and eiscsi.read_only)
        ):
            return True
        rbd, erbd = volume.rbd, ev.rbd
        if (
            rbd is not None
            and erbd is not None
            and not set(rbd.monitors).isdisjoint(erbd.monitors)
            and rbd.pool == erbd.pool
            and rbd.image == erbd.image
            and not (rbd.read_only and erbd.read_only)
        ):
            return True
    return False


def satisfies_volume_conflicts(pod: Pod, pods: Iterable[PodInfo]) -> bool:
    """``satisfyVolumeConflicts``: none of ``pod``'s restricted volumes clashes with ``pods``."""
    wanted = [v for v in pod.spec.volumes if needs_restrictions_check(v)]
    if not wanted:
        return True
    for other in pods:
        if not other.pod.spec.volumes:
            continue
        if any(is_volume_conflict(v, other.pod) for v in wanted):
            return False
    return True


@dataclass(slots=True)
class _State:
    """``preFilterState``: the pod's ReadWriteOncePod claim names and how many scheduled
    pods reference them (upstream matches names only, not namespaces, in AddPod/RemovePod)."""

    rwop_claims: frozenset[str]
    conflicting_refs: int

    def clone(self) -> _State:
        return _State(self.rwop_claims, self.conflicting_refs)

    def update_with_pod(self, pi: PodInfo, sign: int) -> None:
        self.conflicting_refs += sign * sum(
            1 for name in claim_names(pi.pod) if name in self.rwop_claims
        )


class _UsedClaims:
    """``StorageInfos().IsPVCUsedByPods``: ``namespace/claim`` keys used by the snapshot's
    pods, kept per row and updated from the snapshot's change log (only pods with
    ReadWriteOncePod claims ask, so it is built on first use)."""

    __slots__ = ("_counts", "_epoch", "_position", "_rows", "_snap")

    def __init__(self) -> None:
        self._snap: Snapshot | None = None
        self._epoch = -1
        self._position = 0
        self._rows: list[tuple[str, ...]] = []
        self._counts: Counter[str] = Counter()

    @staticmethod
    def _of(ni: NodeInfo) -> tuple[str, ...]:
        return tuple(
            f"{p.namespace}/{name}"
            for p in ni.pods
            if p.pod.spec.volumes
            for name in claim_names(p.pod)
        )

    def used(self, snap: Snapshot, key: str) -> bool:
        changed = None
        if snap is self._snap:
            changed = snap.changed_rows(self._epoch, self._position)
        if changed is None:
            self._rows = [self._of(ni) for ni in snap.node_infos]
            self._counts = Counter(k for row in self._rows for k in row)
            self._snap = snap
        else:
            for i in set(changed):
                self._counts.subtract(self._rows[i])
                self._rows[i] = self._of(snap.node_infos[i])
                self._counts.update(self._rows[i])
        self._epoch, self._position = snap.epoch, snap.log_position
        return self._counts[key] > 0


# The fragment of a pod with no volumes the plugin checks (what spec_fragment gives for
# an empty list), without encoding it for every pod.
_NO_RESTRICTED_VOLUMES = msgspec.json.encode(([],))


class VolumeRestrictions(PreFilterPlugin[NoArgs], FilterPlugin[NoArgs]):
    name = names.VOLUME_RESTRICTIONS
    reads_listers = frozenset({Listers.PERSISTENT_VOLUME_CLAIMS})

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._used = _UsedClaims()

    def sign_pod(self, pod: PodInfo) -> Any:
        """Claims make the answer depend on PVC objects and other nodes' pods."""
        if not pod.pod.spec.volumes:
            return _NO_RESTRICTED_VOLUMES
        if claim_names(pod.pod):
            return NOT_SIGNABLE
        restricted = [v for v in pod.pod.spec.volumes if needs_restrictions_check(v)]
        return spec_fragment(pod, "sign/volumerestrictions", restricted)

    def _rwop_claims(self, pod: Pod) -> frozenset[str]:
        """``readWriteOncePodPVCsForPod``; raises NotFoundError for a missing claim."""
        out = set()
        for name in claim_names(pod):
            pvc: PersistentVolumeClaim = get_pvc(self.handle, pod.metadata.namespace, name)
            if READ_WRITE_ONCE_POD in pvc.spec.access_modes:
                out.add(pvc.metadata.name)
        return frozenset(out)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        spec_volumes = pod.pod.spec.volumes
        if not spec_volumes:
            return None, Status(Code.SKIP)
        needs_check = any(needs_restrictions_check(v) for v in spec_volumes)
        try:
            claims = self._rwop_claims(pod.pod)
        except NotFoundError as e:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(e))
        ns = pod.namespace
        refs = sum(1 for c in claims if self._used.used(nodes, f"{ns}/{c}"))
        if not needs_check and refs == 0:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, _State(claims, refs))
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        s: _State | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status(Code.ERROR, _NOT_FOUND)
        s.update_with_pod(to_add, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        s: _State | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status(Code.ERROR, _NOT_FOUND)
        s.update_with_pod(to_remove, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not satisfies_volume_conflicts(pod.pod, node.pods):
            return Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT)
        s: _State | None = state.get(PRE_FILTER_KEY)
        if s is None:
            return Status(Code.ERROR, _NOT_FOUND)
        if s.conflicting_refs > 0:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_RWOP_CONFLICT)
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pod deletions (volumes freed), new nodes, and the pod's claims appearing."""
        return [
            ClusterEventWithHint(
                ClusterEvent(deleted_pod_resource(self.handle), ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_pvc_added,
            ),
        ]

    def is_schedulable_after_pvc_added(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when a claim the pod names appears in its namespace."""
        if not isinstance(new, PersistentVolumeClaim):
            raise TypeError(f"expected PersistentVolumeClaim, got {type(new).__name__}")
        if new.metadata.namespace != pod.namespace:
            return QueueingHint.SKIP
        if new.metadata.name in claim_names(pod.pod):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pod_deleted(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when the deleted pod held a conflicting disk or shares one of the pod's
        claims (it may have been the ReadWriteOncePod user; the access mode is not read)."""
        if not isinstance(old, PodInfo):
            raise TypeError(f"expected PodInfo, got {type(old).__name__}")
        if old.namespace != pod.namespace:
            return QueueingHint.SKIP
        if not satisfies_volume_conflicts(pod.pod, (old,)):
            return QueueingHint.QUEUE
        claims = set(claim_names(pod.pod))
        if any(name in claims for name in claim_names(old.pod)):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP
