"""Read a cluster from ordinary manifests (``kubectl get nodes,pods -o yaml`` output).

Multi-document YAML, JSON, and ``kind: List`` are all accepted. Objects of kinds
the scheduler does not use are skipped; kinds it uses must decode, and a decode
failure names the file and the object. Services, ReplicationControllers, ReplicaSets
and StatefulSets are kept for PodTopologySpread's default selectors, which the daemon
reads from its informers; like pods, they default to namespace ``default``. So are the
storage objects the volume plugins read (PersistentVolumeClaims, namespaced;
PersistentVolumes, StorageClasses, CSINodes, CSIDrivers, VolumeAttachments) and the
DRA objects DynamicResources reads (DeviceClasses, ResourceSlices, ResourceClaims and
ResourceClaimTemplates, the latter two namespaced).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..api.objects import (
    CSIDriver,
    CSINode,
    DecodeError,
    Namespace,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    ReplicaSet,
    ReplicationController,
    Service,
    StatefulSet,
    StorageClass,
    VolumeAttachment,
    decode,
    object_ref,
    without_nulls,
)
from ..api.resource import DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice
from ..util.limits import BoundedLoaderMixin, DecodeLimitError, loads_json

__all__ = [
    "DRA_LISTERS",
    "KINDS",
    "STORAGE_LISTERS",
    "WORKLOAD_LISTERS",
    "ClusterFile",
    "ClusterFileError",
    "load_cluster",
    "parse_cluster",
]


class ClusterFileError(ValueError):
    """A cluster file that cannot be used; one line naming the file and the object."""


@dataclass
class ClusterFile:
    nodes: list[tuple[Node, dict[str, Any]]] = field(default_factory=list)
    pods: list[tuple[Pod, dict[str, Any]]] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    priority_classes: list[PriorityClass] = field(default_factory=list)
    pdbs: list[PodDisruptionBudget] = field(default_factory=list)
    # Services, ReplicationControllers, ReplicaSets, StatefulSets by handle.listers key.
    workloads: dict[str, list[Any]] = field(default_factory=dict)
    # PVCs, PVs, StorageClasses, CSINodes, CSIDrivers, VolumeAttachments by listers key.
    storage: dict[str, list[Any]] = field(default_factory=dict)
    # DeviceClasses, ResourceSlices, ResourceClaims, ResourceClaimTemplates by listers key.
    dra: dict[str, list[Any]] = field(default_factory=dict)
    # Everything else by kind (PodGroups, ...), for plugins that read custom objects.
    others: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


# kind -> the type its manifests decode into
KINDS: dict[str, Any] = {
    "Node": Node,
    "Pod": Pod,
    "Namespace": Namespace,
    "PriorityClass": PriorityClass,
    "PodDisruptionBudget": PodDisruptionBudget,
    "Service": Service,
    "ReplicationController": ReplicationController,
    "ReplicaSet": ReplicaSet,
    "StatefulSet": StatefulSet,
    "PersistentVolumeClaim": PersistentVolumeClaim,
    "PersistentVolume": PersistentVolume,
    "StorageClass": StorageClass,
    "CSINode": CSINode,
    "CSIDriver": CSIDriver,
    "VolumeAttachment": VolumeAttachment,
    "DeviceClass": DeviceClass,
    "ResourceSlice": ResourceSlice,
    "ResourceClaim": ResourceClaim,
    "ResourceClaimTemplate": ResourceClaimTemplate,
}
# kind -> the handle.listers key PodTopologySpread reads it under
WORKLOAD_LISTERS = {
    "Service": "services",
    "ReplicationController": "replicationcontrollers",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
}
# kind -> the handle.listers key the volume plugins read it under
STORAGE_LISTERS = {
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "PersistentVolume": "persistentvolumes",
    "StorageClass": "storageclasses",
    "CSINode": "csinodes",
    "CSIDriver": "csidrivers",
    "VolumeAttachment": "volumeattachments",
}

# kind -> the handle.listers key DynamicResources (or the simulated resourceclaim
# controller, for templates) reads it under
DRA_LISTERS = {
    "DeviceClass": "deviceclasses",
    "ResourceSlice": "resourceslices",
    "ResourceClaim": "resourceclaims",
    "ResourceClaimTemplate": "resourceclaimtemplates",
}
_NAMESPACED = {"Pod", "PersistentVolumeClaim", "ResourceClaim", "ResourceClaimTemplate"}


def _flatten(doc: Any, source: str, out: list[dict[str, Any]]) -> None:
    if doc is None:
        return
    if not isinstance(doc, dict):
        raise ClusterFileError(
            f"{source}: expected a Kubernetes object (a mapping), got {type(doc).__name__}"
        )
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for item in doc["items"]:
            _flatten(item, source, out)
        return
    out.append(doc)


class _Loader(BoundedLoaderMixin, yaml.SafeLoader):
    """Safe YAML with nesting and alias expansion bounded (``ksched.util.limits``)."""


def parse_cluster(text: str, source: str) -> ClusterFile:
    try:
        if text.lstrip().startswith(("{", "[")):
            docs: list[Any] = [loads_json(text)]
        else:
            docs = list(yaml.load_all(text, Loader=_Loader))
    except json.JSONDecodeError as e:
        raise ClusterFileError(
            f"{source}: not valid JSON: line {e.lineno}, column {e.colno}: {e.msg}"
        ) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ClusterFileError(f"{source}: not valid YAML: {where}{e.problem}") from None
    except (yaml.YAMLError, DecodeLimitError) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ClusterFileError(f"{source}: not valid YAML/JSON: {first}") from None
    objs: list[dict[str, Any]] = []
    for d in docs:
        if isinstance(d, list):
            for x in d:
                _flatten(x, source, objs)
        else:
            _flatten(d, source, objs)
    cf = ClusterFile()
    seen: set[tuple[str, str, str]] = set()
    for raw in objs:
        kind = raw.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ClusterFileError(f"{source}: {object_ref(raw)}: kind: Required value")
        meta = raw.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name"):
            raise ClusterFileError(f"{source}: {object_ref(raw)}: metadata.name: Required value")
        cls = KINDS.get(kind)
        if cls is None:
            cf.others.setdefault(kind, []).append(raw)
            continue
        if kind in _NAMESPACED or kind in WORKLOAD_LISTERS:
            meta.setdefault("namespace", "default")
        ident = (kind, str(meta.get("namespace", "")), str(meta["name"]))
        if ident in seen:
            raise ClusterFileError(f"{source}: {object_ref(raw)}: duplicate object")
        seen.add(ident)
        try:
            # a dump's CSINodes say `drivers: null`/`topologyKeys: null` for empty lists
            obj = decode(without_nulls(raw) if kind == "CSINode" else raw, cls)
        except DecodeError as e:
            raise ClusterFileError(f"{source}: {e}") from None
        if kind == "Node":
            cf.nodes.append((obj, raw))
        elif kind == "Pod":
            cf.pods.append((obj, raw))
        elif kind == "Namespace":
            cf.namespaces.append(obj)
        elif kind == "PriorityClass":
            cf.priority_classes.append(obj)
        elif kind == "PodDisruptionBudget":
            cf.pdbs.append(obj)
        elif kind in WORKLOAD_LISTERS:
            cf.workloads.setdefault(WORKLOAD_LISTERS[kind], []).append(obj)
        elif kind in DRA_LISTERS:
            cf.dra.setdefault(DRA_LISTERS[kind], []).append(obj)
        else:
            cf.storage.setdefault(STORAGE_LISTERS[kind], []).append(obj)
    return cf


def load_cluster(path: str) -> ClusterFile:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise ClusterFileError(f"{path}: {e.strerror or e}") from None
    return parse_cluster(text, path)
