"""Storage objects in a simulate cluster file fill the listers the volume plugins read, as
``ksched run`` fills them from its informers (``kubectl get nodes,pods,pvc,pv,sc,... -o yaml``)."""

from __future__ import annotations

from typing import Any

import anyio

from ksched.api.objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)
from ksched.framework import CycleState, FilterPlugin, PodInfo, Registry, Status
from ksched.framework.listers import RevisionedStore
from ksched.plugins import register_builtins
from ksched.sim import Simulation, parse_cluster
from tests.queue._util import config

STORAGE = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: data}
  spec: {storageClassName: fast, volumeName: pv-1, resources: {requests: {storage: 1Gi}}}
  status: {phase: Bound}
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-1}
  spec:
    capacity: {storage: 1Gi}
    claimRef: {namespace: default, name: data}
    csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
- {apiVersion: storage.k8s.io/v1, kind: StorageClass, metadata: {name: fast}, provisioner: ebs.csi.aws.com}
- apiVersion: storage.k8s.io/v1
  kind: CSINode
  metadata: {name: n1}
  spec: {drivers: [{name: ebs.csi.aws.com, nodeID: i-1, topologyKeys: null, allocatable: {count: 25}}]}
- {apiVersion: storage.k8s.io/v1, kind: CSINode, metadata: {name: n2}, spec: {drivers: null}}
- {apiVersion: storage.k8s.io/v1, kind: CSIDriver, metadata: {name: ebs.csi.aws.com}, spec: {attachRequired: true}}
- apiVersion: storage.k8s.io/v1
  kind: CSIStorageCapacity
  metadata: {name: cap-1}
  storageClassName: fast
  capacity: 10Gi
  nodeTopology: {matchLabels: {zone: a}}
- apiVersion: storage.k8s.io/v1
  kind: VolumeAttachment
  metadata: {name: va-1}
  spec: {attacher: ebs.csi.aws.com, nodeName: n1, source: {persistentVolumeName: pv-1}}
  status: {attached: true}
"""


def _pod(name: str, claim: str) -> str:
    return f"""
- apiVersion: v1
  kind: Pod
  metadata: {{name: {name}}}
  spec:
    schedulerName: ksched
    containers: [{{name: c}}]
    volumes: [{{name: v, persistentVolumeClaim: {{claimName: {claim}}}}}]
"""


class ClaimLookup(FilterPlugin):
    """Passes a pod whose claims are all in the lister, and records what it saw there."""

    name = "ClaimLookup"
    reads_listers = frozenset({"persistentvolumeclaims"})
    seen: dict[str, Any] = {}

    def filter(self, state: CycleState, pod: PodInfo, node: Any) -> Status | None:
        assert self.handle is not None
        ClaimLookup.seen = dict(self.handle.listers)
        claims = self.handle.listers["persistentvolumeclaims"]
        for v in pod.pod.spec.volumes:
            pvc = v.persistent_volume_claim
            if pvc is not None and f"{pod.namespace}/{pvc.claim_name}" not in claims:
                return Status.unschedulable(f'persistentvolumeclaim "{pvc.claim_name}" not found')
        return None


def _simulate(text: str) -> dict[str, Any]:
    reg = Registry()
    register_builtins(reg)
    reg.register(ClaimLookup.name, ClaimLookup, "tests")
    sim = Simulation(parse_cluster(text, "c.yaml"), config({"filter": ["ClaimLookup"]}), reg)
    return {r.name: r for r in anyio.run(sim.run)}


def test_cluster_file_decodes_storage_kinds() -> None:
    cf = parse_cluster(STORAGE, "c.yaml")
    (pvc,) = cf.storage["persistentvolumeclaims"]
    assert isinstance(pvc, PersistentVolumeClaim) and pvc.metadata.namespace == "default"
    assert pvc.status.phase == "Bound" and pvc.spec.storage_class_name == "fast"
    (pv,) = cf.storage["persistentvolumes"]
    assert isinstance(pv, PersistentVolume) and pv.metadata.namespace == ""
    assert isinstance(cf.storage["storageclasses"][0], StorageClass)
    n1, n2 = cf.storage["csinodes"]
    assert isinstance(n1, CSINode) and n1.spec.drivers[0].topology_keys == []
    assert n2.spec.drivers == []  # null lists, as the API returns empty ones
    assert isinstance(cf.storage["csidrivers"][0], CSIDriver)
    (cap,) = cf.storage["csistoragecapacities"]
    assert isinstance(cap, CSIStorageCapacity) and cap.metadata.namespace == "default"
    assert (cap.storage_class_name, cap.capacity) == ("fast", "10Gi")
    assert isinstance(cf.storage["volumeattachments"][0], VolumeAttachment)
    assert cf.others == {}


def test_storage_listers_reach_plugins_during_simulation() -> None:
    res = _simulate(STORAGE + _pod("has-claim", "data") + _pod("no-claim", "missing"))
    assert res["has-claim"].status == "Scheduled"
    assert res["no-claim"].status == "Unschedulable"
    assert 'persistentvolumeclaim "missing" not found' in res["no-claim"].message
    seen = ClaimLookup.seen
    assert list(seen["persistentvolumeclaims"]) == ["default/data"]
    assert list(seen["persistentvolumes"]) == ["pv-1"]
    assert list(seen["storageclasses"]) == ["fast"]
    assert list(seen["csinodes"]) == ["n1", "n2"]
    assert list(seen["csidrivers"]) == ["ebs.csi.aws.com"]
    assert list(seen["csistoragecapacities"]) == ["default/cap-1"]
    assert list(seen["volumeattachments"]) == ["va-1"]


def test_storage_listers_are_empty_not_missing_without_storage_in_the_file() -> None:
    node = STORAGE.split("- apiVersion: v1\n  kind: PersistentVolumeClaim")[0]
    res = _simulate(node + _pod("p", "data"))
    assert res["p"].status == "Unschedulable"
    for key in ("persistentvolumeclaims", "persistentvolumes", "csinodes", "volumeattachments"):
        assert isinstance(ClaimLookup.seen[key], RevisionedStore) and not ClaimLookup.seen[key]
