"""``handle.listers``: the stores plugins read synchronously, by named key.

``Listers`` is a dict keyed by lister name; the built-in names are its constants
(``Listers.SERVICES``) and each has a typed property (``listers.services``: the store, or
None when nobody fills it: a unit test, the extender server without a kubeconfig).
Plugins' own collections (``WatchedResource.lister``) sit under their declared key.

``RevisionedStore``: a store that says when it changed. A plugin that derives something
costly from a lister (PodTopologySpread's default selectors come from every Service in the
cluster) can cache it while the lister's ``revision`` stays the same. A plain mapping has no
revision, so whatever is derived from it cannot be cached.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any, Final, Generic, TypeVar, overload

from ..api import objects as o
from ..api.resource import DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice
from ..api.workload import PodGroup
from .types import PodInfo

__all__ = ["Listers", "RevisionedStore"]

V = TypeVar("V")
T = TypeVar("T")


class _Entry(Generic[T]):
    """A typed read-only view of one key of a ``Listers`` (None when absent)."""

    __slots__ = ("key",)

    def __init__(self, key: str) -> None:
        self.key = key

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _Entry[T]: ...
    @overload
    def __get__(self, obj: Listers, owner: type[Any]) -> T | None: ...
    def __get__(self, obj: Listers | None, owner: type[Any]) -> _Entry[T] | T | None:
        if obj is None:
            return self
        got: T | None = obj.get(self.key)
        return got


class Listers(dict[str, Any]):
    """The stores behind ``handle.listers``, keyed as the constants below.

    The daemon and ``ksched simulate`` fill ``PODS``, ``NAMESPACES`` and ``PDBS`` always,
    and the on-request ones when an enabled plugin names them in ``reads_listers``. Keys
    are ``namespace/name`` (``name`` for cluster-scoped kinds). The scheduler's own state
    that preemption reads (nominated pods, preemptions in flight, the random source) is
    not a lister: it is a field of ``Handle``.
    """

    # always there in the daemon and simulate
    PODS: Final = "pods"  # PodInfo of every non-terminal pod, whatever its scheduler
    NAMESPACES: Final = "namespaces"
    PDBS: Final = "pdbs"
    # on request (``Plugin.reads_listers``)
    PRIORITY_CLASSES: Final = "priorityclasses"
    SERVICES: Final = "services"
    REPLICATION_CONTROLLERS: Final = "replicationcontrollers"
    REPLICA_SETS: Final = "replicasets"
    STATEFUL_SETS: Final = "statefulsets"
    PERSISTENT_VOLUME_CLAIMS: Final = "persistentvolumeclaims"
    PERSISTENT_VOLUMES: Final = "persistentvolumes"
    STORAGE_CLASSES: Final = "storageclasses"
    CSI_NODES: Final = "csinodes"
    CSI_DRIVERS: Final = "csidrivers"
    CSI_STORAGE_CAPACITIES: Final = "csistoragecapacities"
    VOLUME_ATTACHMENTS: Final = "volumeattachments"
    RESOURCE_CLAIMS: Final = "resourceclaims"
    RESOURCE_SLICES: Final = "resourceslices"
    DEVICE_CLASSES: Final = "deviceclasses"
    DEVICE_TAINT_RULES: Final = "devicetaintrules"  # with DRADeviceTaintRules on
    # with GenericWorkload (scheduling.k8s.io PodGroups; "podgroups" is Coscheduling's CRD)
    SCHEDULING_POD_GROUPS: Final = "scheduling.podgroups"

    pods = _Entry[Mapping[str, PodInfo]](PODS)
    namespaces = _Entry[Mapping[str, o.Namespace]](NAMESPACES)
    pdbs = _Entry[Mapping[str, o.PodDisruptionBudget]](PDBS)
    priority_classes = _Entry[Mapping[str, o.PriorityClass]](PRIORITY_CLASSES)
    services = _Entry[Mapping[str, o.Service]](SERVICES)
    replication_controllers = _Entry[Mapping[str, o.ReplicationController]](REPLICATION_CONTROLLERS)
    replica_sets = _Entry[Mapping[str, o.ReplicaSet]](REPLICA_SETS)
    stateful_sets = _Entry[Mapping[str, o.StatefulSet]](STATEFUL_SETS)
    persistent_volume_claims = _Entry[Mapping[str, o.PersistentVolumeClaim]](
        PERSISTENT_VOLUME_CLAIMS
    )
    persistent_volumes = _Entry[Mapping[str, o.PersistentVolume]](PERSISTENT_VOLUMES)
    storage_classes = _Entry[Mapping[str, o.StorageClass]](STORAGE_CLASSES)
    csi_nodes = _Entry[Mapping[str, o.CSINode]](CSI_NODES)
    csi_drivers = _Entry[Mapping[str, o.CSIDriver]](CSI_DRIVERS)
    csi_storage_capacities = _Entry[Mapping[str, o.CSIStorageCapacity]](CSI_STORAGE_CAPACITIES)
    volume_attachments = _Entry[Mapping[str, o.VolumeAttachment]](VOLUME_ATTACHMENTS)
    resource_claims = _Entry[Mapping[str, ResourceClaim]](RESOURCE_CLAIMS)
    resource_slices = _Entry[Mapping[str, ResourceSlice]](RESOURCE_SLICES)
    device_classes = _Entry[Mapping[str, DeviceClass]](DEVICE_CLASSES)
    device_taint_rules = _Entry[Mapping[str, DeviceTaintRule]](DEVICE_TAINT_RULES)
    scheduling_pod_groups = _Entry[Mapping[str, PodGroup]](SCHEDULING_POD_GROUPS)

    def store(self, key: str) -> Mapping[str, Any]:
        """``self[key]``, or an empty mapping when nobody fills it."""
        got: Mapping[str, Any] | None = self.get(key)
        return got if got is not None else {}


class RevisionedStore(dict[str, V]):
    """A lister's ``key -> object`` dict whose writer calls ``bump()`` after each change.

    Writes through the dict methods do not count themselves: the writer (an informer's
    handlers) bumps once per add, update or delete it has applied.
    """

    __slots__ = ("_changes", "revision")

    # Changed objects remembered for ``changes_since`` (older ones: a full rescan).
    JOURNAL = 4096

    def __init__(self) -> None:
        super().__init__()
        self.revision = 0
        self._changes: deque[tuple[int, Any]] = deque(maxlen=self.JOURNAL)

    def bump(self, *objs: object) -> None:
        """Record a change; an informer handler's arguments (new; old, new; old) name the
        changed object, remembered for ``changes_since``."""
        self.revision += 1
        self._changes.append((self.revision, objs[-1] if objs else None))

    def changes_since(self, revision: int) -> list[Any] | None:
        """The objects changed after ``revision`` (one per change, oldest first), or None
        when that is not known (too long ago, or a change without its object): reread
        everything."""
        if revision == self.revision:
            return []
        changes = self._changes
        if not changes or changes[0][0] > revision + 1:
            return None
        out = []
        for rev, obj in reversed(changes):
            if rev <= revision:
                break
            if obj is None:
                return None
            out.append(obj)
        out.reverse()
        return out
