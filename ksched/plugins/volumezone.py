"""VolumeZone: a pod's bound volumes must be in the node's zone and region.

Mirrors kube-scheduler's ``volumezone`` plugin. PreFilter resolves the pod's PVCs to
their bound PVs and collects the PVs' zone/region labels (GA and deprecated beta keys,
values split on ``__``); unbound claims of a WaitForFirstConsumer class are left to
VolumeBinding, other unbound claims are UnschedulableAndUnresolvable. Filter passes a
node without any zone/region label (single-zone clusters) and otherwise requires each PV
label to match the node's (a beta PV key may match the node's GA key). The batch form
evaluates that over the snapshot's label columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..api.objects import PersistentVolume, PersistentVolumeClaim, Pod, StorageClass
from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.interface import (
    NOT_SIGNABLE,
    ClusterEvent,
    ClusterEventWithHint,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
)
from ..framework.listers import Listers
from ..framework.snapshot import BoolArray, Snapshot
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from . import names
from .helper import all_true
from .volumeutil import NotFoundError, claim_class, claim_names, get_pv, get_pvc, get_storage_class

__all__ = ["ERR_REASON_CONFLICT", "VolumeZone", "pv_topologies"]

ERR_REASON_CONFLICT = "node(s) had no available volume zone"
PRE_FILTER_KEY = "PreFilter" + names.VOLUME_ZONE

LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
TOPOLOGY_LABELS = (LABEL_BETA_ZONE, LABEL_BETA_REGION, LABEL_ZONE, LABEL_REGION)
_TO_GA = {LABEL_BETA_ZONE: LABEL_ZONE, LABEL_BETA_REGION: LABEL_REGION}
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"


@dataclass(frozen=True, slots=True)
class PVTopology:
    """``pvTopology``: one topology label of a PV and the values it allows."""

    pv_name: str
    key: str
    values: frozenset[str]


def _label_zones(value: str) -> frozenset[str] | None:
    """``volumehelpers.LabelZonesToSet``: ``a__b`` is {a, b}; an empty member is invalid."""
    zones = [z.strip() for z in value.split("__")]
    if any(not z for z in zones):
        return None
    return frozenset(zones)


def pv_topologies(pv: PersistentVolume) -> list[PVTopology]:
    """``getPVTopologies``: the PV's topology labels (unparsable values are ignored)."""
    out = []
    labels = pv.metadata.labels
    for key in TOPOLOGY_LABELS:
        value = labels.get(key)
        if value is None:
            continue
        zones = _label_zones(value)
        if zones is not None:
            out.append(PVTopology(pv.metadata.name, key, zones))
    return out


def _unresolvable(msg: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg)


def _node_fits(labels: dict[str, str], topologies: list[PVTopology]) -> bool:
    if not any(k in labels for k in TOPOLOGY_LABELS):
        return True  # a node without zone labels: single-zone cluster
    for t in topologies:
        v = labels.get(t.key)
        if v is None:
            v = labels.get(_TO_GA.get(t.key, t.key))
        if v is None or v not in t.values:
            return False
    return True


class VolumeZone(PreFilterPlugin[NoArgs], FilterPlugin[NoArgs]):
    name = names.VOLUME_ZONE
    reads_listers = frozenset(
        {Listers.PERSISTENT_VOLUME_CLAIMS, Listers.PERSISTENT_VOLUMES, Listers.STORAGE_CLASSES}
    )

    def sign_pod(self, pod: PodInfo) -> Any:
        """Claims make the answer depend on PVC/PV objects; without any it is always yes."""
        return NOT_SIGNABLE if claim_names(pod.pod) else b""

    def _topologies(self, pod: Pod) -> list[PVTopology] | Status:
        """``getPVbyPod``: the topologies of the pod's bound PVs, or the rejection."""
        out: list[PVTopology] = []
        ns = pod.metadata.namespace
        try:
            for claim in claim_names(pod):
                if not claim:
                    return _unresolvable("PersistentVolumeClaim had no name")
                pvc: PersistentVolumeClaim = get_pvc(self.handle, ns, claim)
                pv_name = pvc.spec.volume_name
                if not pv_name:
                    sc_name = claim_class(pvc)
                    if not sc_name:
                        return _unresolvable(
                            "PersistentVolumeClaim had no pv name and storageClass name"
                        )
                    sc: StorageClass = get_storage_class(self.handle, sc_name)
                    if sc.volume_binding_mode is None:
                        return _unresolvable(
                            f'VolumeBindingMode not set for StorageClass "{sc_name}"'
                        )
                    if sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                        continue  # VolumeBinding picks the PV with the node
                    return _unresolvable("PersistentVolume had no name")
                pv: PersistentVolume = get_pv(self.handle, pv_name)
                out.extend(pv_topologies(pv))
        except NotFoundError as e:
            return _unresolvable(str(e))
        return out

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        got = self._topologies(pod.pod)
        if isinstance(got, Status):
            return None, got
        if not got:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, got)
        return None, None

    def _state(self, state: CycleState, pod: PodInfo) -> list[PVTopology] | Status:
        got: list[PVTopology] | None = state.get(PRE_FILTER_KEY)
        return got if got is not None else self._topologies(pod.pod)  # upstream's fallback

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.pod.spec.volumes:
            return None
        got = self._state(state, pod)
        if isinstance(got, Status):
            return got
        labels = node.node.metadata.labels if node.node is not None else {}
        if _node_fits(labels, got):
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT)

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        """``_node_fits`` over the label columns: nodes without any topology label pass,
        the others need every PV label matched (a beta key by the node's GA key too)."""
        got = self._state(state, pod)
        if isinstance(got, Status):
            raise RuntimeError(got.message())
        if not got or not pod.pod.spec.volumes:
            return all_true(snap.n)
        labelled = np.zeros(snap.n, dtype=np.bool_)
        for key in TOPOLOGY_LABELS:
            labelled |= snap.label_column(key)[0] >= 0
        fits = np.ones(snap.n, dtype=np.bool_)
        for t in got:
            ids, vocab = snap.label_column(t.key)
            ok = _value_in(ids, vocab, t.values)
            ga = _TO_GA.get(t.key)
            if ga is not None:
                ga_ids, ga_vocab = snap.label_column(ga)
                ok = np.where(ids >= 0, ok, _value_in(ga_ids, ga_vocab, t.values))
            fits &= ok
        return np.asarray(fits | ~labelled)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """New WaitForFirstConsumer classes, node label changes, claims and PVs changing."""
        pvc_hint = self.is_schedulable_after_pvc_change
        pv_hint = self.is_schedulable_after_pv_change
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD),
                self.is_schedulable_after_storage_class_added,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), pvc_hint
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.UPDATE), pvc_hint
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD), pv_hint
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.UPDATE), pv_hint
            ),
        ]

    def is_schedulable_after_pvc_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when the pod names the added or updated claim."""
        if not isinstance(new, PersistentVolumeClaim):
            raise TypeError(f"expected PersistentVolumeClaim, got {type(new).__name__}")
        if new.metadata.namespace == pod.namespace and new.metadata.name in claim_names(pod.pod):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_storage_class_added(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Only a WaitForFirstConsumer class can make an unbound claim acceptable."""
        if not isinstance(new, StorageClass):
            raise TypeError(f"expected StorageClass, got {type(new).__name__}")
        if new.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pv_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """A new PV, or a PV whose topology labels changed."""
        if not isinstance(new, PersistentVolume):
            raise TypeError(f"expected PersistentVolume, got {type(new).__name__}")
        if old is None:
            return QueueingHint.QUEUE
        if not isinstance(old, PersistentVolume):
            raise TypeError(f"expected PersistentVolume, got {type(old).__name__}")
        if pv_topologies(old) != pv_topologies(new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _value_in(ids: Any, vocab: dict[str, int], values: frozenset[str]) -> BoolArray:
    """Per row: the label is present and its value is one of ``values``."""
    lut = np.zeros(len(vocab) + 1, dtype=np.bool_)  # last slot: label absent (-1)
    for v in values:
        vid = vocab.get(v)
        if vid is not None:
            lut[vid] = True
    return np.asarray(lut[ids])
