"""The kind registry: one row per API kind ksched reads, writes or serves.

Before it, one kind was spelled out in about ten modules (its path in the informer wiring,
its lister key, its cluster events, its place in a cluster file and in ``ksched snapshot``,
the test API server's resource table), and a kind added to some of them and not the others
went unnoticed. Each of those now reads its table off these rows:

- ``cluster/wiring.py``: which collections the daemon watches (``watch``, ``gates``), from
  where (``path_for``), into which ``handle.listers`` key (``lister``), decoded into what
  (``struct``), and the cluster events their changes make (``events``);
- ``sim/cluster_file.py``, ``sim/simulator.py``: the kinds a cluster file may hold
  (``cluster_file``), what they decode into and who holds them in a simulation
  (``sim_owner``);
- ``sim/snapshot.py``: the collections ``ksched snapshot`` lists (``snapshot``,
  ``discover``, ``lacks``);
- ``testing/_resources.py``: what the test API server serves (``serve``);
- ``framework/events.py``: ``EventResource`` has a member for every row's ``events``
  (a test holds the two equal; the enum stays written out so mypy knows its members).

Adding a kind is its struct plus one row here (``ROWS``); a test or an embedder adds one at
run time with ``REGISTRY.register`` (``registered`` undoes it). The module sits in the
``api`` room, below everything that reads it, so it names cluster events and lister keys
by their strings.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeVar

from .objects import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
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
)
from .resource import (
    DeviceClass,
    DeviceTaintRule,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
)
from .workload import PodGroup, PodGroupV1Alpha2, Workload, WorkloadV1Alpha2

__all__ = [
    "REGISTRY",
    "ROWS",
    "Kind",
    "KindRegistry",
    "Older",
    "Serving",
    "SimOwner",
    "Watch",
    "guess_resource",
]

T = TypeVar("T")


class Watch(StrEnum):
    """When ``ksched run`` (and ``ksched simulate``, in its way) watches a collection."""

    NEVER = ""
    # Always: nodes and pods (the scheduler's own handlers), namespaces and PDBs.
    ALWAYS = "always"
    # When an enabled plugin names its lister in ``reads_listers`` (and ``gates`` are on),
    # as kube-scheduler's informer factory starts only the informers plugins asked for.
    ON_REQUEST = "on_request"
    # When ``gates`` are on, whatever the plugins read (kube-scheduler's own informer).
    GATED = "gated"


class SimOwner(StrEnum):
    """Who holds a cluster file's objects of a kind in ``ksched simulate``."""

    # A lister of its own, filled from the file (what the daemon's informer would hold).
    LISTER = ""
    # The scheduler's own handlers (nodes and pods).
    SCHEDULER = "scheduler"
    # The simulated PV controller, which answers VolumeBinding's writes.
    PV_CONTROLLER = "pv_controller"
    # The simulated resourceclaim controller, which answers DynamicResources' writes.
    CLAIM_CONTROLLER = "claim_controller"
    # The simulation's workload-aware scheduling (admission, the PodGroup handlers).
    POD_GROUPS = "pod_groups"


@dataclass(frozen=True, slots=True)
class Older:
    """The API version watched and listed for an emulated Kubernetes older than
    ``before`` (a server of that release serves no newer one), and the struct its objects
    decode into (None: the row's own); such a struct's ``convert()`` gives the row's."""

    before: str
    version: str
    struct: type[Any] | None = None


@dataclass(frozen=True, slots=True)
class Serving:
    """How the test API server (``ksched.testing``) serves a kind: its discovery entry."""

    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # CRD-like: unstructured list items keep kind/apiVersion, no strategic merge patch.
    crd: bool = False
    has_generation: bool = False
    # extra field labels (beyond metadata.name/namespace) -> dotted object path
    fields: Mapping[str, str] = field(default_factory=dict)
    # None: every verb; a review or a binding is only ever created
    verbs: tuple[str, ...] | None = None
    # False: answered, never stored (bindings, reviews)
    stored: bool = True


@dataclass(frozen=True, slots=True)
class Kind:
    """One API kind. Empty fields mean "not at all": no lister, no events, no watch."""

    kind: str
    group: str
    version: str
    resource: str
    namespaced: bool
    # what its objects decode into (None: ksched keeps none of them typed)
    struct: type[Any] | None = None
    # its ``handle.listers`` key (keys are namespace/name, name if cluster-scoped)
    lister: str = ""
    # the ``EventResource`` its changes are reported to the scheduling queue as
    events: str = ""
    # every change (add, update, delete) reported as an Update of ``events``: a
    # DeviceTaintRule changes the taints of slices' devices, a ResourceSlice update
    events_as_update: bool = False
    watch: Watch = Watch.NEVER
    # the scheduler's ``on_<handlers>_add/update/delete`` take its changes (instead of
    # ``events``), from release ``handlers_since`` on
    handlers: str = ""
    handlers_since: str = ""
    # feature gates that must all be on for it to be watched
    gates: tuple[str, ...] = ()
    older: Older | None = None
    # the informer's (and ``ksched snapshot``'s) field selector
    field_selector: str = ""
    # a list may say ``null`` for an empty list field (CSINodes' drivers)
    nulls: bool = False
    # ``ksched simulate --cluster`` reads it
    cluster_file: bool = False
    sim_owner: SimOwner = SimOwner.LISTER
    # A file without any leaves the lister unset rather than empty: a plain
    # ``kubectl get nodes,pods`` dump never listed them, and a plugin falls back (default
    # spreading of pods whose controllers were not listed).
    file_may_omit: bool = False
    # ``ksched snapshot`` lists it; ``discover``: only when the server serves it (a group
    # that is off unless enabled), in the first of ``version`` and ``older.version`` served
    snapshot: bool = False
    discover: bool = False
    # what a simulation of a snapshot without it lacks (``ksched snapshot``'s warning)
    lacks: str = ""
    # the test API server's entry (None: not served)
    serve: Serving | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path_for(self, version: str | None = None) -> str:
        """The collection's path (all namespaces), in ``version`` (default: the row's)."""
        v = version or self.version
        return (
            f"/apis/{self.group}/{v}/{self.resource}" if self.group else f"/api/{v}/{self.resource}"
        )

    @property
    def path(self) -> str:
        return self.path_for()

    def version_for(self, at_least: Callable[[str], bool] | None) -> str:
        """The API version of an emulated release (``at_least("1.37")``, as
        ``FeatureGates.at_least``; None: the newest)."""
        if self.older is not None and at_least is not None and not at_least(self.older.before):
            return self.older.version
        return self.version

    def struct_for(self, version: str) -> type[Any] | None:
        """The struct of ``version``'s objects (an ``older`` one converts to ``struct``)."""
        if self.older is not None and version == self.older.version and self.older.struct:
            return self.older.struct
        return self.struct


def guess_resource(kind: str) -> str:
    """apimachinery's ``UnsafeGuessKindToResource``: the plural resource of a kind, for a
    custom object known only by its kind (``PodGroup`` -> ``podgroups``)."""
    lower = kind.lower()
    if not lower:
        return ""
    if lower.endswith("s"):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u"):
        return lower[:-1] + "ies"
    return lower + "s"


_ALL = ("all",)
_STATUS = ("status",)
_POD_FIELDS = {
    f: f
    for f in (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    )
}
_REF_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_CORE_EVENT_FIELDS = {f"involvedObject.{f}": f"involvedObject.{f}" for f in _REF_FIELDS} | {
    "reason": "reason",
    "reportingComponent": "reportingComponent",
    "source": "source.component",
    "type": "type",
}
_EVENTS_V1_FIELDS = (
    {f"regarding.{f}": f"regarding.{f}" for f in _REF_FIELDS}
    | {f"involvedObject.{f}": f"regarding.{f}" for f in _REF_FIELDS}
    | {"reason": "reason", "reportingController": "reportingController", "type": "type"}
)
_STORAGE = "storage.k8s.io"
_DRA = "resource.k8s.io"
_SCHEDULING = "scheduling.k8s.io"
_SPREAD = "selectors for default topology spreading"

# The order is ``ksched snapshot``'s (namespaces first, for ``kubectl apply``) and the test
# API server's (discovery, and kubectl-like name resolution: the core Event before
# events.k8s.io's, scheduler-plugins' PodGroup CRD before scheduling.k8s.io's; and
# scheduling.k8s.io/v1 before v1beta1, its preferred version).
ROWS: tuple[Kind, ...] = (
    Kind(
        "Namespace", "", "v1", "namespaces", False, Namespace, lister="namespaces",
        watch=Watch.ALWAYS, cluster_file=True, snapshot=True,
        lacks="namespace labels (namespaceSelector of pod affinity terms matches none)",
        serve=Serving(("ns",), _STATUS, fields={"status.phase": "status.phase"}),
    ),
    Kind(
        "Node", "", "v1", "nodes", False, Node, events="Node", watch=Watch.ALWAYS,
        cluster_file=True, sim_owner=SimOwner.SCHEDULER, snapshot=True,
        serve=Serving(("no",), _STATUS, fields={"spec.unschedulable": "spec.unschedulable"}),
    ),
    Kind(
        "Pod", "", "v1", "pods", True, Pod, lister="pods", events="Pod", watch=Watch.ALWAYS,
        # kube-scheduler's pod informer: terminal pods hold no resources, need no scheduling
        field_selector="status.phase!=Succeeded,status.phase!=Failed",
        cluster_file=True, sim_owner=SimOwner.SCHEDULER, snapshot=True,
        # pods carry metadata.generation since v1.33 (PodObservedGenerationTracking); a
        # binding does not bump it
        serve=Serving(
            ("po",), ("binding", "status"), _ALL, has_generation=True, fields=_POD_FIELDS
        ),
    ),
    # On request: kube-scheduler watches none (pods carry their resolved priority), and
    # the stock system:kube-scheduler role may not list them.
    Kind(
        "PriorityClass", _SCHEDULING, "v1", "priorityclasses", False, PriorityClass,
        lister="priorityclasses", watch=Watch.ON_REQUEST, cluster_file=True, snapshot=True,
        lacks="priority for pods without spec.priority (admitted pods carry theirs)",
        serve=Serving(("pc",)),
    ),
    Kind(
        "PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", True,
        PodDisruptionBudget, lister="pdbs", watch=Watch.ALWAYS, cluster_file=True,
        snapshot=True, lacks="disruption budgets (preemption picks victims ignoring them)",
        serve=Serving(("pdb",), _STATUS, has_generation=True),
    ),
    Kind(
        "Service", "", "v1", "services", True, Service, lister="services",
        watch=Watch.ON_REQUEST, cluster_file=True, file_may_omit=True, snapshot=True,
        lacks=f"Services' {_SPREAD}", serve=Serving(("svc",), _STATUS, _ALL),
    ),
    Kind(
        "ReplicationController", "", "v1", "replicationcontrollers", True,
        ReplicationController, lister="replicationcontrollers", watch=Watch.ON_REQUEST,
        cluster_file=True, file_may_omit=True, snapshot=True,
        lacks="ReplicationControllers' selectors for default spreading",
        serve=Serving(("rc",), _STATUS, _ALL, has_generation=True),
    ),
    Kind(
        "ReplicaSet", "apps", "v1", "replicasets", True, ReplicaSet, lister="replicasets",
        watch=Watch.ON_REQUEST, cluster_file=True, file_may_omit=True, snapshot=True,
        lacks=f"ReplicaSets' {_SPREAD}",
        serve=Serving(("rs",), _STATUS, _ALL, has_generation=True),
    ),
    Kind(
        "StatefulSet", "apps", "v1", "statefulsets", True, StatefulSet,
        lister="statefulsets", watch=Watch.ON_REQUEST, cluster_file=True,
        file_may_omit=True, snapshot=True, lacks=f"StatefulSets' {_SPREAD}",
        serve=Serving(("sts",), _STATUS, _ALL, has_generation=True),
    ),
    Kind(
        "PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", True,
        PersistentVolumeClaim, lister="persistentvolumeclaims",
        events="PersistentVolumeClaim", watch=Watch.ON_REQUEST, cluster_file=True,
        sim_owner=SimOwner.PV_CONTROLLER, snapshot=True,
        lacks="claims (pods with a PersistentVolumeClaim stay pending)",
        serve=Serving(("pvc",), _STATUS),
    ),
    Kind(
        "PersistentVolume", "", "v1", "persistentvolumes", False, PersistentVolume,
        lister="persistentvolumes", events="PersistentVolume", watch=Watch.ON_REQUEST,
        cluster_file=True, sim_owner=SimOwner.PV_CONTROLLER, snapshot=True,
        lacks="volumes (pods with unbound claims find none to bind)",
        serve=Serving(("pv",), _STATUS),
    ),
    Kind(
        "Event", "", "v1", "events", True,
        serve=Serving(("ev",), fields=_CORE_EVENT_FIELDS),
    ),
    Kind(
        "Binding", "", "v1", "bindings", True,
        serve=Serving(verbs=("create",), stored=False),
    ),
    Kind(
        "Event", "events.k8s.io", "v1", "events", True,
        serve=Serving(("ev",), fields=_EVENTS_V1_FIELDS),
    ),
    Kind("Lease", "coordination.k8s.io", "v1", "leases", True, serve=Serving()),
    Kind(
        "StorageClass", _STORAGE, "v1", "storageclasses", False, StorageClass,
        lister="storageclasses", events="StorageClass", watch=Watch.ON_REQUEST,
        cluster_file=True, sim_owner=SimOwner.PV_CONTROLLER, snapshot=True,
        lacks="storage classes (claims to provision or bind late stay pending)",
        serve=Serving(("sc",)),
    ),
    Kind(
        "CSINode", _STORAGE, "v1", "csinodes", False, CSINode, lister="csinodes",
        events="CSINode", watch=Watch.ON_REQUEST, nulls=True, cluster_file=True,
        sim_owner=SimOwner.PV_CONTROLLER, snapshot=True, lacks="CSI volume limits per node",
        serve=Serving(),
    ),
    Kind(
        "CSIDriver", _STORAGE, "v1", "csidrivers", False, CSIDriver, lister="csidrivers",
        events="CSIDriver", watch=Watch.ON_REQUEST, cluster_file=True,
        sim_owner=SimOwner.PV_CONTROLLER, snapshot=True,
        lacks="CSI drivers (volume limits and attach requirements)", serve=Serving(),
    ),
    Kind(
        "CSIStorageCapacity", _STORAGE, "v1", "csistoragecapacities", True,
        CSIStorageCapacity, lister="csistoragecapacities", events="CSIStorageCapacity",
        watch=Watch.ON_REQUEST, cluster_file=True, sim_owner=SimOwner.PV_CONTROLLER,
        snapshot=True,
        lacks="storage capacity (claims of drivers reporting it find none free)",
        serve=Serving(),
    ),
    Kind(
        "VolumeAttachment", _STORAGE, "v1", "volumeattachments", False, VolumeAttachment,
        lister="volumeattachments", events="VolumeAttachment", watch=Watch.ON_REQUEST,
        cluster_file=True, sim_owner=SimOwner.PV_CONTROLLER, snapshot=True,
        lacks="attached volumes counted against CSI volume limits", serve=Serving((), _STATUS),
    ),
    # DRA (resource.k8s.io/v1): what DynamicResources reads, and the claims it writes.
    Kind(
        "DeviceClass", _DRA, "v1", "deviceclasses", False, DeviceClass,
        lister="deviceclasses", events="DeviceClass", watch=Watch.ON_REQUEST,
        cluster_file=True, sim_owner=SimOwner.CLAIM_CONTROLLER, snapshot=True, discover=True,
        lacks="device classes (pods with resource claims stay pending)", serve=Serving(),
    ),
    Kind(
        "ResourceSlice", _DRA, "v1", "resourceslices", False, ResourceSlice,
        lister="resourceslices", events="ResourceSlice", watch=Watch.ON_REQUEST,
        cluster_file=True, sim_owner=SimOwner.CLAIM_CONTROLLER, snapshot=True, discover=True,
        lacks="devices (pods with resource claims stay pending)", serve=Serving(),
    ),
    Kind(
        "ResourceClaim", _DRA, "v1", "resourceclaims", True, ResourceClaim,
        lister="resourceclaims", events="ResourceClaim", watch=Watch.ON_REQUEST,
        cluster_file=True, sim_owner=SimOwner.CLAIM_CONTROLLER, snapshot=True, discover=True,
        lacks="resource claims (pods with claims stay pending)", serve=Serving((), _STATUS),
    ),
    # The resourceclaim controller's (simulated in ``ksched simulate``), not the scheduler's.
    Kind(
        "ResourceClaimTemplate", _DRA, "v1", "resourceclaimtemplates", True,
        ResourceClaimTemplate, lister="resourceclaimtemplates", cluster_file=True,
        sim_owner=SimOwner.CLAIM_CONTROLLER, snapshot=True, discover=True,
        lacks="claim templates (pods whose claims the resourceclaim controller has not "
        "made yet stay pending)",
        serve=Serving(),
    ),
    # v1.36 serves DeviceTaintRules (beta there) only as v1beta2; kube-scheduler watches
    # them only with DRADeviceTaintRules on.
    Kind(
        "DeviceTaintRule", _DRA, "v1", "devicetaintrules", False, DeviceTaintRule,
        lister="devicetaintrules", events="ResourceSlice", events_as_update=True,
        watch=Watch.ON_REQUEST, gates=("DRADeviceTaints", "DRADeviceTaintRules"),
        older=Older("1.37", "v1beta2"), cluster_file=True,
        sim_owner=SimOwner.CLAIM_CONTROLLER, snapshot=True, discover=True,
        lacks="device taint rules (devices they taint are handed out as untainted)",
        serve=Serving((), _STATUS),
    ),
    # scheduler-plugins' PodGroup CRD (Coscheduling, in contrib): served for its tests; a
    # cluster file's are custom objects (plugins' ``watch_resources``).
    Kind(
        "PodGroup", "scheduling.x-k8s.io", "v1alpha1", "podgroups", True,
        serve=Serving(("pg", "pgs"), _STATUS, crd=True, has_generation=True),
    ),
    # Workload-aware scheduling (GenericWorkload): kube-apiserver v1.37 serves these with
    # --runtime-config=scheduling.k8s.io/v1beta1=true (v1.36: v1alpha2).
    Kind(
        "Workload", _SCHEDULING, "v1beta1", "workloads", True, Workload,
        older=Older("1.37", "v1alpha2", WorkloadV1Alpha2), cluster_file=True,
        sim_owner=SimOwner.POD_GROUPS, snapshot=True, discover=True,
        lacks="Workloads (their PodGroup templates)", serve=Serving(),
    ),
    # kube-scheduler's PodGroup informer, started only with GenericWorkload; at v1.37 its
    # changes go to the scheduler's on_pod_group_* handlers. "podgroups" is the CRD's key.
    Kind(
        "PodGroup", _SCHEDULING, "v1beta1", "podgroups", True, PodGroup,
        lister="scheduling.podgroups", events="PodGroup", watch=Watch.GATED,
        handlers="pod_group", handlers_since="1.37",
        gates=("GenericWorkload",), older=Older("1.37", "v1alpha2", PodGroupV1Alpha2),
        cluster_file=True, sim_owner=SimOwner.POD_GROUPS, snapshot=True, discover=True,
        lacks="pod groups (workload-aware scheduling)", serve=Serving((), _STATUS),
    ),
    # what the differential harness's scenarios create on a real control plane
    Kind("RuntimeClass", "node.k8s.io", "v1", "runtimeclasses", False),
    # answered, never stored (the test API server's authentication and authorization)
    Kind(
        "TokenReview", "authentication.k8s.io", "v1", "tokenreviews", False,
        serve=Serving(verbs=("create",), stored=False),
    ),
    Kind(
        "SubjectAccessReview", "authorization.k8s.io", "v1", "subjectaccessreviews", False,
        serve=Serving(verbs=("create",), stored=False),
    ),
)  # fmt: skip


class KindRegistry:
    """The rows, and their projections (each cached until a row is added or removed)."""

    def __init__(self, rows: tuple[Kind, ...]) -> None:
        self._rows = rows
        self._cache: dict[str, Any] = {}
        self._lock = threading.Lock()
        # bumped on every change: a table derived from the rows is stale when it differs
        self.generation = 0

    @property
    def rows(self) -> tuple[Kind, ...]:
        return self._rows

    def __iter__(self) -> Iterator[Kind]:
        return iter(self._rows)

    def register(self, row: Kind) -> Kind:
        """Add a kind (after the built-in ones). ValueError when its group and resource, or
        its lister key, is taken."""
        with self._lock:
            for r in self._rows:
                if (r.group, r.resource) == (row.group, row.resource):
                    name = f"{row.resource}.{row.group}" if row.group else row.resource
                    raise ValueError(f"{name}: already registered")
                if row.lister and r.lister == row.lister:
                    raise ValueError(f"lister {row.lister!r}: already {r.kind}'s")
            self._rows = (*self._rows, row)
            self._cache = {}
            self.generation += 1
        return row

    def unregister(self, row: Kind) -> None:
        with self._lock:
            self._rows = tuple(r for r in self._rows if r is not row)
            self._cache = {}
            self.generation += 1

    @contextmanager
    def registered(self, row: Kind) -> Iterator[Kind]:
        """``register(row)`` for the ``with`` block (a test's made-up kind)."""
        self.register(row)
        try:
            yield row
        finally:
            self.unregister(row)

    def derived(self, name: str, build: Callable[[tuple[Kind, ...]], T]) -> T:
        """``build(rows)``, computed once per generation under ``name``."""
        cache = self._cache
        if name not in cache:
            cache[name] = build(self._rows)
        got: T = cache[name]
        return got

    # -- the projections the modules above share ------------------------------------------
    def by_lister(self) -> Mapping[str, Kind]:
        """lister key -> row, for every row with one."""
        return self.derived(
            "by_lister", lambda rows: MappingProxyType({r.lister: r for r in rows if r.lister})
        )

    def watched(self, how: Watch) -> tuple[Kind, ...]:
        return self.derived(f"watch:{how}", lambda rows: tuple(r for r in rows if r.watch == how))

    def cluster_file_kinds(self) -> Mapping[str, Kind]:
        """kind -> row of every kind a cluster file may hold (one row per kind name: the
        typed one where a custom resource shares its name)."""

        def build(rows: tuple[Kind, ...]) -> Mapping[str, Kind]:
            return MappingProxyType({r.kind: r for r in rows if r.cluster_file})

        return self.derived("cluster_file", build)

    def event_resources(self) -> frozenset[str]:
        """Every row's ``events``: the EventResources kinds' changes are reported as."""
        return self.derived("events", lambda rows: frozenset(r.events for r in rows if r.events))

    def row(self, group: str, resource: str) -> Kind:
        """The row of ``resource.group`` (KeyError if none)."""
        found = self.derived(
            "by_gr", lambda rows: MappingProxyType({(r.group, r.resource): r for r in rows})
        )
        return found[(group, resource)]


REGISTRY = KindRegistry(ROWS)
