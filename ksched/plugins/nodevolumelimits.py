"""NodeVolumeLimits: a node's CSI drivers take at most so many volumes.

Mirrors kube-scheduler's ``nodevolumelimits`` CSI plugin (``CSILimits``) of v1.36/v1.37.
A volume is ``<driver>/<volume handle>``: a bound PVC's CSI PV, or for an unbound PVC (or
one whose PV is missing) its StorageClass's provisioner with a per-plugin random handle;
generic ephemeral volumes count through their ``<pod>-<volume>`` claim, which the pod
must own. Filter counts the unique volumes of the node's pods plus the CSI volumes its
VolumeAttachments name, adds the pod's new ones (a volume already on the node is free)
and compares per driver with ``CSINode.spec.drivers[].allocatable.count``; no CSINode
or no count means no limit. With VolumeLimitScaling (beta, on in v1.37), a driver whose
CSIDriver sets ``preventPodSchedulingIfMissing`` must be on the node's CSINode before
any of that. Pods without PVC or ephemeral volumes are skipped at PreFilter and cost
nothing.

Left out, deliberately: in-tree volumes (AWS EBS, GCE PD, ... inline or as PVs, and
in-tree provisioners of unbound claims) that upstream translates to their CSI driver
through CSI migration are not counted. Inline CSI volumes (``volumes[].csi``) are not
counted upstream either, nor is ``CSIDriver.spec.attachRequired`` consulted.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ..api.objects import CSIDriver, CSINode, PersistentVolume, PersistentVolumeClaim, Pod
from ..features import default_feature_gates
from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.handle import Handle
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
from ..framework.snapshot import Snapshot
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from . import names
from .volumeutil import (
    NotFoundError,
    claim_class,
    deleted_pod_resource,
    ephemeral_claim_name,
    ephemeral_volume_is_for_pod,
    get_pv,
    get_pvc,
    get_storage_class,
    lister,
    store_revision,
)

__all__ = ["ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED", "NodeVolumeLimits", "volume_limits"]

ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"
_CACHE = names.NODE_VOLUME_LIMITS + "/volumes"

# In-tree plugins CSI migration moves to these drivers (``csi-translation-lib``). Their
# volumes are not counted here; the names serve the VolumeAttachment hint and keep an
# in-tree provisioner from being taken for a CSI driver.
IN_TREE_DRIVERS = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}

# unique volume name -> driver
Volumes = dict[str, str]


def volume_limits(csi_node: CSINode | None) -> dict[str, int]:
    """``getVolumeLimits``: driver -> allocatable count of the node's CSINode."""
    if csi_node is None:
        return {}
    return {
        d.name: d.allocatable.count
        for d in csi_node.spec.drivers
        if d.allocatable is not None and d.allocatable.count is not None
    }


def _uses_claims(pod: Pod) -> bool:
    if not pod.spec.volumes:
        return False  # most pods: no generator to build
    return any(v.persistent_volume_claim or v.ephemeral for v in pod.spec.volumes)


class NodeVolumeLimits(PreFilterPlugin[NoArgs], FilterPlugin[NoArgs]):
    name = names.NODE_VOLUME_LIMITS
    reads_listers = frozenset(
        {
            Listers.PERSISTENT_VOLUME_CLAIMS,
            Listers.PERSISTENT_VOLUMES,
            Listers.STORAGE_CLASSES,
            Listers.CSI_NODES,
            Listers.CSI_DRIVERS,
            Listers.VOLUME_ATTACHMENTS,
        }
    )

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        # Unbound claims get ``<prefix>-<ns>/<claim>`` handles that no real one collides with.
        self.random_volume_id_prefix = secrets.token_hex(16)
        # Per instance: profiles' plugins name unbound claims differently.
        self._cache_key = f"{_CACHE}/{self.random_volume_id_prefix}"
        self._attachments: tuple[int, int, dict[str, list[Any]]] | None = None
        features = handle.features if handle is not None else default_feature_gates()
        self._volume_limit_scaling = features.enabled("VolumeLimitScaling")

    def sign_pod(self, pod: PodInfo) -> Any:
        """Claims make the answer depend on storage objects; without any it is always yes."""
        return NOT_SIGNABLE if _uses_claims(pod.pod) else b""

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        if _uses_claims(pod.pod):
            return None, None
        return None, Status(Code.SKIP)

    # -- counting ---------------------------------------------------------------------------
    def _driver_info(self, pvc: PersistentVolumeClaim) -> tuple[str, str]:
        """``getCSIDriverInfo``: the claim's driver and volume handle, ("", "") if none."""
        pv_name = pvc.spec.volume_name
        if pv_name:
            try:
                pv: PersistentVolume = get_pv(self.handle, pv_name)
            except NotFoundError:
                pass  # deleted, or pre-bound to a PV not created yet: count by class
            else:
                csi = pv.spec.csi
                return (csi.driver, csi.volume_handle) if csi is not None else ("", "")
        sc_name = claim_class(pvc)
        if not sc_name:
            return "", ""  # no class: an immediate claim, bound before scheduling
        try:
            provisioner = get_storage_class(self.handle, sc_name).provisioner
        except NotFoundError:
            return "", ""
        if provisioner in IN_TREE_DRIVERS:
            return "", ""
        m = pvc.metadata
        return provisioner, f"{self.random_volume_id_prefix}-{m.namespace}/{m.name}"

    def _attachable(self, pod: Pod, new_pod: bool) -> Volumes | Status:
        """``filterAttachableVolumes``: the pod's counted volumes, or the Filter verdict
        (an existing pod's missing claim is not counted; the new pod's is unresolvable)."""
        out: Volumes = {}
        ns = pod.metadata.namespace
        for v in pod.spec.volumes:
            if v.persistent_volume_claim is not None:
                claim, ephemeral = v.persistent_volume_claim.claim_name, False
            elif v.ephemeral is not None:
                claim, ephemeral = ephemeral_claim_name(pod, v), True
            else:
                continue
            if not claim:
                return Status(Code.ERROR, "PersistentVolumeClaim had no name")
            try:
                pvc: PersistentVolumeClaim = get_pvc(self.handle, ns, claim)
            except NotFoundError as e:
                if new_pod:
                    return Status(
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"looking up PVC {ns}/{claim}: {e}"
                    )
                continue
            if ephemeral:
                err = ephemeral_volume_is_for_pod(pod, pvc)
                if err is not None:
                    return Status(Code.ERROR, err)
            driver, handle = self._driver_info(pvc)
            if driver and handle:
                out[f"{driver}/{handle}"] = driver
        return out

    def _revisions(self) -> tuple[int | None, ...]:
        return tuple(
            store_revision(lister(self.handle, key))
            for key in (
                Listers.PERSISTENT_VOLUME_CLAIMS,
                Listers.PERSISTENT_VOLUMES,
                Listers.STORAGE_CLASSES,
            )
        )

    def _existing(self, pi: PodInfo, revisions: tuple[int | None, ...]) -> Volumes | Status:
        """An assigned pod's volumes, cached on the pod while the listers stay unchanged."""
        if not pi.pod.spec.volumes:
            return {}
        cached = pi.cache.get(self._cache_key)
        if cached is not None and cached[0] == revisions and None not in revisions:
            got: Volumes | Status = cached[1]
            return got
        got = self._attachable(pi.pod, new_pod=False)
        pi.cache[self._cache_key] = (revisions, got)
        return got

    def _node_attachments(self, node_name: str) -> Volumes:
        """``getNodeVolumeAttachmentInfo``: CSI volumes the node's VolumeAttachments name.

        The attachments are grouped by node once per lister revision."""
        store: Mapping[str, Any] = lister(self.handle, Listers.VOLUME_ATTACHMENTS)
        rev = store_revision(store)
        idx = self._attachments
        if idx is None or rev is None or idx[0] != id(store) or idx[1] != rev:
            by_node: dict[str, list[Any]] = {}
            for va in store.values():
                by_node.setdefault(va.spec.node_name, []).append(va)
            idx = self._attachments = (id(store), -1 if rev is None else rev, by_node)
        out: Volumes = {}
        for va in idx[2].get(node_name, ()):
            attacher, pv_name = va.spec.attacher, va.spec.source.persistent_volume_name
            if not attacher or pv_name is None:
                continue
            try:
                pv: PersistentVolume = get_pv(self.handle, pv_name)
            except NotFoundError:
                continue
            if pv.spec.csi is not None:
                out[f"{attacher}/{pv.spec.csi.volume_handle}"] = attacher
        return out

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if not pod.pod.spec.volumes:
            return None
        new = self._attachable(pod.pod, new_pod=True)
        if isinstance(new, Status):
            return new
        if not new:
            return None
        csi_node: CSINode | None = lister(self.handle, Listers.CSI_NODES).get(node.name)
        if self._volume_limit_scaling:
            # upstream walks a map; ksched the pod's volumes in order
            for driver in new.values():
                if not self._driver_installed(driver, csi_node):
                    return Status(
                        Code.UNSCHEDULABLE, f"{driver} CSI driver is not installed on the node"
                    )
        limits = volume_limits(csi_node)
        if not limits:
            return None
        revisions = self._revisions()
        attached: Volumes = {}
        for pi in node.pods:
            got = self._existing(pi, revisions)
            if isinstance(got, Status):
                return got
            attached.update(got)
        attached_count: Counter[str] = Counter()
        for volume, driver in attached.items():
            new.pop(volume, None)  # a volume already on the node costs nothing more
            attached_count[driver] += 1
        for volume, driver in self._node_attachments(node.name).items():
            if volume not in attached:
                attached_count[driver] += 1
        for driver, count in Counter(new.values()).items():
            limit = limits.get(driver)
            if limit is not None and attached_count[driver] + count > limit:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED)
        return None

    def _driver_installed(self, driver: str, csi_node: CSINode | None) -> bool:
        """``checkCSIDriverOnNode``: only a CSIDriver that opts in must be on the CSINode."""
        found: CSIDriver | None = lister(self.handle, Listers.CSI_DRIVERS).get(driver)
        if found is None or not found.spec.prevent_pod_scheduling_if_missing:
            return True
        return csi_node is not None and any(d.name == driver for d in csi_node.spec.drivers)

    # -- queueing hints ---------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """New or raised CSINode limits, volumes freed by pods or detached, claims created."""
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD)),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE),
                self.is_schedulable_after_csi_node_updated,
            ),
            ClusterEventWithHint(
                ClusterEvent(deleted_pod_resource(self.handle), ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                self.is_schedulable_after_pvc_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.VOLUME_ATTACHMENT, ActionType.DELETE),
                self.is_schedulable_after_volume_attachment_deleted,
            ),
        ]

    def is_schedulable_after_pod_deleted(self, pod: PodInfo, old: Any, new: Any) -> str:
        """An assigned pod with claims or migratable in-tree volumes went away."""
        if not isinstance(old, PodInfo):
            raise TypeError(f"expected PodInfo, got {type(old).__name__}")
        deleted = old.pod
        if not deleted.spec.volumes or not deleted.spec.node_name:
            return QueueingHint.SKIP
        for v in deleted.spec.volumes:
            if v.persistent_volume_claim or v.ephemeral or _in_tree_driver(v) is not None:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pvc_added(self, pod: PodInfo, old: Any, new: Any) -> str:
        """The pod's claim (or its ephemeral volume's claim) was created."""
        if not isinstance(new, PersistentVolumeClaim):
            raise TypeError(f"expected PersistentVolumeClaim, got {type(new).__name__}")
        if new.metadata.namespace != pod.namespace:
            return QueueingHint.SKIP
        for v in pod.pod.spec.volumes:
            if v.persistent_volume_claim is not None:
                claim = v.persistent_volume_claim.claim_name
            elif v.ephemeral is not None:
                claim = ephemeral_claim_name(pod.pod, v)
            else:
                continue
            if claim == new.metadata.name:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_volume_attachment_deleted(
        self, pod: PodInfo, old: Any, new: Any
    ) -> str:
        """The detached PV is one of the pod's claims', or its driver is the one of the
        pod's in-tree inline volume."""
        spec = getattr(old, "spec", None)
        if spec is None:
            raise TypeError(f"expected VolumeAttachment, got {type(old).__name__}")
        pv_name = spec.source.persistent_volume_name
        for v in pod.pod.spec.volumes:
            if v.persistent_volume_claim is not None and pv_name is not None:
                try:
                    pvc: PersistentVolumeClaim = get_pvc(
                        self.handle, pod.namespace, v.persistent_volume_claim.claim_name
                    )
                except NotFoundError:
                    continue
                if pvc.spec.volume_name == pv_name:
                    return QueueingHint.QUEUE
            driver = _in_tree_driver(v)
            if driver is not None and driver == spec.attacher:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_csi_node_updated(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Some driver's limit was raised or removed."""
        if not isinstance(old, CSINode) or not isinstance(new, CSINode):
            raise TypeError(f"expected CSINodes, got {type(old).__name__}, {type(new).__name__}")
        before, after = volume_limits(old), volume_limits(new)
        for driver, limit in before.items():
            raised = after.get(driver)
            if raised is None or raised > limit:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _in_tree_driver(v: Any) -> str | None:
    """The CSI driver an in-tree inline volume migrates to (AWS EBS, GCE PD)."""
    if v.aws_elastic_block_store is not None:
        return IN_TREE_DRIVERS["kubernetes.io/aws-ebs"]
    if v.gce_persistent_disk is not None:
        return IN_TREE_DRIVERS["kubernetes.io/gce-pd"]
    return None
