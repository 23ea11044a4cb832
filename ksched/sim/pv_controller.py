"""What ``ksched simulate`` does in place of the PV controller and the provisioners.

The cluster file's PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes
become the listers VolumeBinding reads. When the scheduler prebinds a PV (claimRef) the
claim is bound to it at once; when it selects a node for a claim whose class has a
provisioner, a PV is created and bound, with node affinity for that node's topology:
the keys the class's CSI driver reports in the node's CSINode, else the node's zone.
Every change is reported to the scheduler as the informers would.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import msgspec

from ..api.objects import (
    CSINode,
    CSIPersistentVolumeSource,
    NodeSelector,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ObjectMeta,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    PersistentVolumeSpec,
    PersistentVolumeStatus,
    StorageClass,
    VolumeNodeAffinity,
)
from ..api.volume import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    claim_class,
)
from ..framework.handle import BindError
from ..framework.interface import ClusterEvent
from ..framework.listers import Listers, RevisionedStore
from .cluster_file import STORAGE_LISTERS, ClusterFile

__all__ = ["SimulatedPVController"]

ZONE = "topology.kubernetes.io/zone"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
Emit = Callable[[ClusterEvent, Any, Any], None]


def _key(obj: Any) -> str:
    meta = obj.metadata
    return f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name


class SimulatedPVController:
    """The storage stores and the binding/provisioning reactions to the scheduler's writes."""

    def __init__(self, cluster: ClusterFile, emit: Emit) -> None:
        self.emit = emit
        self._rv = itertools.count(1)
        self.node_labels = {n.metadata.name: n.metadata.labels for n, _ in cluster.nodes}
        # Every storage lister the volume plugins read (empty when the file has none of a
        # kind, as the daemon's informers would give them), keyed as the informers key them.
        self.stores: dict[str, RevisionedStore[Any]] = {}
        for lister in STORAGE_LISTERS.values():
            store: RevisionedStore[Any] = RevisionedStore()
            for obj in cluster.storage.get(lister, ()):
                store[_key(obj)] = self._versioned(obj)
            self.stores[lister] = store

    @property
    def claims(self) -> RevisionedStore[PersistentVolumeClaim]:
        return self.stores[Listers.PERSISTENT_VOLUME_CLAIMS]

    @property
    def volumes(self) -> RevisionedStore[PersistentVolume]:
        return self.stores[Listers.PERSISTENT_VOLUMES]

    def _versioned(self, obj: Any) -> Any:
        meta = msgspec.structs.replace(obj.metadata, resource_version=str(next(self._rv)))
        if not meta.uid:
            meta = msgspec.structs.replace(meta, uid=f"sim-{obj.kind}-{_key(obj)}")
        return msgspec.structs.replace(obj, metadata=meta)

    def _store(self, kind: str, old: Any, new: Any) -> Any:
        """Write ``new`` with a fresh resourceVersion and report it."""
        new = self._versioned(new)
        store = self.stores[STORAGE_LISTERS[kind]]
        store[_key(new)] = new
        store.bump()
        self.emit(ClusterEvent(kind, "Add" if old is None else "Update"), old, new)
        return new

    def _current(self, kind: str, obj: Any) -> Any:
        plural = STORAGE_LISTERS[kind]
        cur = self.stores[plural].get(_key(obj))
        if cur is None:
            raise BindError(f'{plural} "{obj.metadata.name}" not found', retry=False)
        rv = obj.metadata.resource_version
        if rv and rv != cur.metadata.resource_version:
            raise BindError(
                f'Operation cannot be fulfilled on {plural} "{obj.metadata.name}": the object '
                "has been modified; please apply your changes to the latest version and try "
                "again",
                retry=True,
            )
        return cur

    # -- the scheduler's writes ------------------------------------------------------------
    def update_volume(self, pv: PersistentVolume) -> PersistentVolume:
        cur = self._current("PersistentVolume", pv)
        spec = msgspec.structs.replace(cur.spec, claim_ref=pv.spec.claim_ref)
        meta = msgspec.structs.replace(cur.metadata, annotations=dict(pv.metadata.annotations))
        written: PersistentVolume = self._store(
            "PersistentVolume", cur, msgspec.structs.replace(cur, metadata=meta, spec=spec)
        )
        ref = written.spec.claim_ref
        if ref is not None:
            claim = self.claims.get(f"{ref.namespace}/{ref.name}")
            if claim is not None and not claim.spec.volume_name:
                self._bind(written, claim)
        return written

    def update_claim(self, pvc: PersistentVolumeClaim) -> PersistentVolumeClaim:
        cur = self._current("PersistentVolumeClaim", pvc)
        meta = msgspec.structs.replace(cur.metadata, annotations=dict(pvc.metadata.annotations))
        written: PersistentVolumeClaim = self._store(
            "PersistentVolumeClaim", cur, msgspec.structs.replace(cur, metadata=meta)
        )
        node = written.metadata.annotations.get(ANN_SELECTED_NODE)
        if node and not written.spec.volume_name:
            self._provision(written, node)
        return written

    # -- the controllers' reactions --------------------------------------------------------
    def _bind(self, pv: PersistentVolume, pvc: PersistentVolumeClaim) -> None:
        """The PV controller's bind: claim -> volume, both Bound."""
        annotations = {
            **pvc.metadata.annotations,
            ANN_BIND_COMPLETED: "yes",
            ANN_BOUND_BY_CONTROLLER: "yes",
        }
        claim = msgspec.structs.replace(
            pvc,
            metadata=msgspec.structs.replace(pvc.metadata, annotations=annotations),
            spec=msgspec.structs.replace(pvc.spec, volume_name=pv.metadata.name),
            status=msgspec.structs.replace(
                pvc.status,
                phase="Bound",
                access_modes=list(pv.spec.access_modes),
                capacity=dict(pv.spec.capacity),
            ),
        )
        bound_claim = self._store("PersistentVolumeClaim", pvc, claim)
        ref = msgspec.structs.replace(
            pv.spec.claim_ref or ObjectReference(),
            kind="PersistentVolumeClaim",
            namespace=bound_claim.metadata.namespace,
            name=bound_claim.metadata.name,
            uid=bound_claim.metadata.uid,
        )
        volume = msgspec.structs.replace(
            pv,
            spec=msgspec.structs.replace(pv.spec, claim_ref=ref),
            status=PersistentVolumeStatus(phase="Bound"),
        )
        self._store("PersistentVolume", pv, volume)

    def _provision(self, pvc: PersistentVolumeClaim, node: str) -> None:
        """A provisioner's answer to the selected node: a new PV there, bound to the claim."""
        sc: StorageClass | None = self.stores[Listers.STORAGE_CLASSES].get(claim_class(pvc))
        if sc is None or sc.provisioner in ("", NOT_SUPPORTED_PROVISIONER):
            return
        name = f"pvc-{pvc.metadata.uid}"
        spec = PersistentVolumeSpec(
            capacity={"storage": pvc.spec.resources.requests.get("storage", "0")},
            access_modes=list(pvc.spec.access_modes),
            persistent_volume_reclaim_policy=sc.reclaim_policy or "Delete",
            storage_class_name=sc.metadata.name,
            volume_mode=pvc.spec.volume_mode,
            node_affinity=self._topology(sc.provisioner, node),
            # A CSI driver's volume (in-tree "kubernetes.io/..." provisioners make none):
            # what NodeVolumeLimits counts against the node's CSINode allocatable.
            csi=None
            if sc.provisioner.startswith("kubernetes.io/")
            else CSIPersistentVolumeSource(driver=sc.provisioner, volume_handle=name),
        )
        meta = ObjectMeta(name=name, annotations={ANN_PROVISIONED_BY: sc.provisioner})
        pv = PersistentVolume(metadata=meta, spec=spec)
        pv = self._store("PersistentVolume", None, pv)
        self._bind(pv, pvc)

    def _topology(self, driver: str, node: str) -> VolumeNodeAffinity | None:
        labels = self.node_labels.get(node, {})
        keys: list[str] = []
        csinode: CSINode | None = self.stores[Listers.CSI_NODES].get(node)
        if csinode is not None:
            for d in csinode.spec.drivers:
                if d.name == driver:
                    keys = list(d.topology_keys)
        if not keys and ZONE in labels:
            keys = [ZONE]
        reqs = [
            NodeSelectorRequirement(key=k, operator="In", values=[labels[k]])
            for k in keys
            if k in labels
        ]
        if not reqs:
            return None
        term = NodeSelectorTerm(match_expressions=reqs)
        return VolumeNodeAffinity(required=NodeSelector(node_selector_terms=[term]))
