"""Read a cluster from ordinary manifests (``kubectl get nodes,pods -o yaml`` output).

Multi-document YAML, JSON, and ``kind: List`` are all accepted. Objects of kinds
the scheduler does not use are skipped; kinds it uses must decode, and a decode
failure names the file and the object. Services, ReplicationControllers, ReplicaSets
and StatefulSets are kept for PodTopologySpread's default selectors, which the daemon
reads from its informers; like pods, they default to namespace ``default``. So are the
storage objects the volume plugins read (PersistentVolumeClaims and CSIStorageCapacities,
namespaced; PersistentVolumes, StorageClasses, CSINodes, CSIDrivers, VolumeAttachments), the
DRA objects DynamicResources reads (DeviceClasses, ResourceSlices, ResourceClaims,
ResourceClaimTemplates, the latter two namespaced, and DeviceTaintRules), and the
scheduling.k8s.io/v1beta1 Workloads and PodGroups of workload-aware scheduling (namespaced;
v1.36's v1alpha2 ones converted to that shape; a PodGroup of another group, scheduler-plugins'
``scheduling.x-k8s.io`` CRD, stays a custom object). Which kinds, what they decode into
and where a simulation keeps them are the kind registry's rows (``ksched.api.kinds``:
``cluster_file``, ``struct``, ``sim_owner``); a namespaced kind defaults to ``default``.
"""

from __future__ import annotations

import gc
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import yaml

from ..api.kinds import REGISTRY, Kind, SimOwner
from ..api.objects import (
    DecodeError,
    Namespace,
    Node,
    ObjectHead,
    Pod,
    PodDisruptionBudget,
    PriorityClass,
    decode,
    object_ref,
    without_nulls,
)
from ..api.objects import decode_json as decode_typed_json
from ..api.validation import object_errors
from ..framework.listers import Listers
from ..util.errors import KschedError
from ..util.limits import (
    MAX_DEPTH,
    BoundedSafeLoader,
    DecodeLimitError,
    decode_json,
    loads_json,
    utf8_error_offset,
)

__all__ = [
    "DRA_LISTERS",
    "KINDS",
    "SCHEDULING_KINDS",
    "STORAGE_LISTERS",
    "WORKLOAD_LISTERS",
    "ClusterFile",
    "ClusterFileError",
    "file_kinds",
    "load_cluster",
    "parse_cluster",
]


class ClusterFileError(KschedError, ValueError):
    """A cluster file that cannot be used; one line naming the file and the object."""


def file_kinds() -> dict[str, Kind]:
    """kind -> its registry row, for every kind a cluster file may hold."""
    return dict(REGISTRY.cluster_file_kinds())


def _listers_of(owner: SimOwner) -> dict[str, str]:
    """kind -> handle.listers key of the cluster-file kinds ``owner`` holds."""
    return {
        r.kind: r.lister for r in REGISTRY.cluster_file_kinds().values() if r.sim_owner == owner
    }


@dataclass
class ClusterFile:
    # with the object as the file had it: a mapping, or its JSON bytes
    nodes: list[tuple[Node, dict[str, Any] | bytes]] = field(default_factory=list)
    pods: list[tuple[Pod, dict[str, Any] | bytes]] = field(default_factory=list)
    # The kinds a simulation keeps in a lister of their own (``SimOwner.LISTER``:
    # Namespaces, PDBs, PriorityClasses, Services, controllers...), by listers key.
    listed: dict[str, list[Any]] = field(default_factory=dict)
    # PVCs, PVs, StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities,
    # VolumeAttachments by listers key (the simulated PV controller's).
    storage: dict[str, list[Any]] = field(default_factory=dict)
    # DeviceClasses, ResourceSlices, ResourceClaims, ResourceClaimTemplates, DeviceTaintRules
    # by listers key (the simulated resourceclaim controller's).
    dra: dict[str, list[Any]] = field(default_factory=dict)
    # scheduling.k8s.io/v1beta1 Workloads and PodGroups, by kind.
    scheduling: dict[str, list[Any]] = field(default_factory=dict)
    # Everything else by kind (PodGroups, ...), for plugins that read custom objects.
    others: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def namespaces(self) -> list[Namespace]:
        return self.listed.get(Listers.NAMESPACES, [])

    @property
    def priority_classes(self) -> list[PriorityClass]:
        return self.listed.get(Listers.PRIORITY_CLASSES, [])

    @property
    def pdbs(self) -> list[PodDisruptionBudget]:
        return self.listed.get(Listers.PDBS, [])

    @property
    def workloads(self) -> dict[str, list[Any]]:
        """Services, ReplicationControllers, ReplicaSets, StatefulSets (the kinds a file
        may omit) by listers key, those the file has."""
        may_omit = {r.lister for r in REGISTRY if r.file_may_omit}
        return {k: v for k, v in self.listed.items() if k in may_omit}

    def file(self, row: Kind, obj: Any) -> None:
        """Keep ``obj``, of ``row``'s kind, where the simulation reads it."""
        owner = row.sim_owner
        if owner is SimOwner.POD_GROUPS:
            self.scheduling.setdefault(row.kind, []).append(obj)
        elif owner is SimOwner.PV_CONTROLLER:
            self.storage.setdefault(row.lister, []).append(obj)
        elif owner is SimOwner.CLAIM_CONTROLLER:
            self.dra.setdefault(row.lister, []).append(obj)
        elif owner is SimOwner.SCHEDULER:
            raise ValueError(f"{row.kind}: filed with its JSON (nodes, pods)")
        else:
            self.listed.setdefault(row.lister, []).append(obj)


# kind -> the type its manifests decode into, whatever their apiVersion (the
# workload-aware kinds, SCHEDULING_KINDS, only in their own: "PodGroup" is also
# scheduler-plugins' CRD, left to plugins as a custom object). Snapshots of the registry:
# the parser reads the registry itself, so a kind registered later is read too.
KINDS: dict[str, Any] = {
    k: r.struct for k, r in file_kinds().items() if r.sim_owner is not SimOwner.POD_GROUPS
}
# kind -> the handle.listers key PodTopologySpread reads it under
WORKLOAD_LISTERS = {r.kind: r.lister for r in file_kinds().values() if r.file_may_omit}
# kind -> the handle.listers key the volume plugins read it under
STORAGE_LISTERS = _listers_of(SimOwner.PV_CONTROLLER)
# kind -> the handle.listers key DynamicResources (or the simulated resourceclaim
# controller, for templates) reads it under
DRA_LISTERS = _listers_of(SimOwner.CLAIM_CONTROLLER)
SCHEDULING_KINDS: dict[str, Any] = {
    k: r.struct for k, r in file_kinds().items() if r.sim_owner is SimOwner.POD_GROUPS
}


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


class _ListHead(msgspec.Struct):
    """A JSON document's top level, its items left undecoded."""

    kind: Any = None
    items: list[msgspec.Raw] | None = None


_LIST_HEAD = msgspec.json.Decoder(_ListHead)
_HEAD = msgspec.json.Decoder(ObjectHead)
# Kinds decoded straight from JSON bytes (no intermediate dicts): nearly all of a dump.
_TYPED: dict[str, type[Any]] = {"Node": Node, "Pod": Pod}


def _syntax_error(source: str, e: BaseException) -> ClusterFileError:
    if isinstance(e, json.JSONDecodeError):
        return ClusterFileError(
            f"{source}: not valid JSON: line {e.lineno}, column {e.colno}: {e.msg}"
        )
    if isinstance(e, yaml.MarkedYAMLError):
        mark = e.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        return ClusterFileError(f"{source}: not valid YAML: {where}{e.problem}")
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    return ClusterFileError(f"{source}: not valid YAML/JSON: {first}")


def _reason(e: Exception) -> str:
    """msgspec's message without the path of an untyped decode (only `$[...][...]`)."""
    return str(e).split(" - at `$[")[0]


def _json_docs(data: bytes, source: str) -> list[Any]:
    """A JSON file's objects: a ``kind: *List`` as raw items (decoded one by one later),
    anything else decoded whole. Malformed JSON is decoded again by the standard library
    only to say where (msgspec's errors carry a byte offset)."""
    try:
        try:
            head = _LIST_HEAD.decode(data) if data.lstrip().startswith(b"{") else None
        except msgspec.ValidationError:  # JSON, but not a list of objects: decode it whole
            head = None
        if (
            head is not None
            and isinstance(head.kind, str)
            and head.kind.endswith("List")
            and head.items is not None
        ):
            return list(head.items)
        return [decode_json(data)]
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        try:
            loads_json(data)
        except (json.JSONDecodeError, UnicodeDecodeError, DecodeLimitError) as syntax:
            raise _syntax_error(source, syntax) from None
        # Python's json takes what msgspec refuses: a number beyond float64 (1e400).
        raise ClusterFileError(f"{source}: not valid JSON: {_reason(e)}") from None
    except (RecursionError, DecodeLimitError):
        raise ClusterFileError(
            f"{source}: not valid JSON: nesting deeper than {MAX_DEPTH} levels"
        ) from None


def _typed(raw: msgspec.Raw, source: str) -> tuple[str, Any, bytes] | None:
    """(kind, object, its JSON bytes) for a Node or Pod item decoded straight from JSON;
    None for anything else (decoded as a mapping instead)."""
    try:
        head = _HEAD.decode(raw)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None
    cls = _TYPED.get(head.kind) if isinstance(head.kind, str) else None
    meta = head.metadata
    if cls is None or meta is None or not isinstance(meta.name, str) or not meta.name:
        return None
    if meta.namespace is not None and not isinstance(meta.namespace, str):
        return None
    data = bytes(raw)
    try:
        obj = decode_typed_json(data, cls)
    except RecursionError:
        raise ClusterFileError(
            f"{source}: {head.kind} {meta.name}: nesting deeper than {MAX_DEPTH} levels"
        ) from None
    except DecodeError as e:
        raise ClusterFileError(f"{source}: {e}") from None
    if cls is Pod and not obj.metadata.namespace:
        obj = msgspec.structs.replace(
            obj, metadata=msgspec.structs.replace(obj.metadata, namespace="default")
        )
    return head.kind, obj, data


def parse_cluster(text: str | bytes, source: str, *, validate: bool = True) -> ClusterFile:
    """The objects of a cluster file's text (YAML or JSON; bytes are read as UTF-8).
    ``validate=False`` keeps objects the API server would refuse (bad quantities), for
    tests of how the scheduler copes with one that reaches it anyway."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    docs: list[Any]
    if data.lstrip()[:1] in (b"{", b"["):
        docs = _json_docs(data, source)
    else:
        try:
            docs = list(yaml.load_all(data, Loader=BoundedSafeLoader))
        except (yaml.YAMLError, DecodeLimitError) as e:
            raise _syntax_error(source, e) from None
    cf = ClusterFile()
    kinds = REGISTRY.cluster_file_kinds()
    seen: set[tuple[str, str, str]] = set()
    objs: list[dict[str, Any]] = []
    for d in docs:
        if isinstance(d, msgspec.Raw):
            typed = _typed(d, source)
            if typed is not None:
                _add(cf, seen, source, *typed, None, validate)
                continue
            try:
                d = decode_json(d)
            except (msgspec.DecodeError, DecodeLimitError) as e:
                # an offset within the item names nothing: say where in the file
                bad = utf8_error_offset(data)
                why = _reason(e) if bad is None else f"invalid UTF-8 at byte {bad}"
                raise ClusterFileError(f"{source}: not valid JSON: {why}") from None
        if isinstance(d, list):
            for x in d:
                _flatten(x, source, objs)
        else:
            _flatten(d, source, objs)
    for raw in objs:
        kind = raw.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ClusterFileError(f"{source}: {object_ref(raw)}: kind: Required value")
        meta = raw.get("metadata")
        if not isinstance(meta, dict) or not meta.get("name"):
            raise ClusterFileError(f"{source}: {object_ref(raw)}: metadata.name: Required value")
        api_version = raw.get("apiVersion")
        row = kinds.get(kind)
        cls = _kind_type(row, api_version)
        if row is None or cls is None:
            cf.others.setdefault(kind, []).append(raw)
            continue
        if row.namespaced:
            meta.setdefault("namespace", "default")
        try:
            # a dump's CSINodes say `drivers: null`/`topologyKeys: null` for empty lists
            obj = decode(without_nulls(raw) if row.nulls else raw, cls)
        except DecodeError as e:
            raise ClusterFileError(f"{source}: {e}") from None
        if cls is not row.struct:  # an older version's: converted to the row's
            obj = obj.convert()
        _add(cf, seen, source, kind, obj, raw, raw, validate, row)
    return cf


def _add(
    cf: ClusterFile,
    seen: set[tuple[str, str, str]],
    source: str,
    kind: str,
    obj: Any,
    raw: Any,
    mapping: dict[str, Any] | None,
    validate: bool = True,
    row: Kind | None = None,
) -> None:
    """File ``obj`` (decoded from ``raw``: a mapping, or JSON bytes) under its kind."""
    meta = obj.metadata
    ident = (kind, meta.namespace, meta.name)
    ref = object_ref(mapping) if mapping is not None else f"{kind} {_ref_name(meta)}"
    if ident in seen:
        raise ClusterFileError(f"{source}: {ref}: duplicate object")
    seen.add(ident)
    errs = object_errors(kind, obj) if validate else []
    if errs:
        more = f" (and {len(errs) - 1} more)" if len(errs) > 1 else ""
        raise ClusterFileError(f"{source}: {ref}: {errs[0]}{more}")
    if kind == "Node":
        cf.nodes.append((obj, raw))
    elif kind == "Pod":
        cf.pods.append((obj, raw))
    else:
        assert row is not None
        cf.file(row, obj)


def _kind_type(row: Kind | None, api_version: Any) -> Any:
    """The type a manifest decodes into; None for a custom object. The workload-aware
    kinds only in their own API versions (an older one's type converts)."""
    if row is None:
        return None
    if row.sim_owner is SimOwner.POD_GROUPS:
        if row.older is not None and api_version == f"{row.group}/{row.older.version}":
            return row.struct_for(row.older.version)
        return row.struct if api_version == row.api_version else None
    return row.struct


def _ref_name(meta: Any) -> str:
    return f"{meta.namespace}/{meta.name}" if meta.namespace else str(meta.name)


def load_cluster(path: str) -> ClusterFile:
    """``parse_cluster`` of a file. The garbage collector is paused meanwhile: a dump
    decodes into millions of objects and no cycles, and collections triggered by their
    allocations would re-scan them all, again and again (over half the load time)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ClusterFileError(f"{path}: {e.strerror or e}") from None
    paused = gc.isenabled()
    gc.disable()
    try:
        return parse_cluster(data, path)
    finally:
        if paused:
            gc.enable()
