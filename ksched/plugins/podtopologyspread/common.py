"""What Filter and Score share: parsed constraints, default selectors, node inclusion
and the per-node counts of matching pods.

Counting matching pods is the expensive part of upstream's PreFilter/PreScore (every pod
of every node, every cycle). Here a ``PodCounter`` per (namespace, selector) keeps a
count per snapshot row and recounts only the rows whose NodeInfo object was replaced
since it last looked: the cache swaps in a fresh clone for every node that changed and,
as upstream, nothing mutates a snapshot's NodeInfo during a cycle (preemption and
nominated pods work on clones). The snapshot's change log names those rows; on another
snapshot the counter compares the NodeInfos it counted with the snapshot's by identity
(a C loop), so a cycle costs that plus numpy.

Default constraints (``defaultConstraints``/System defaulting) select pods with upstream's
``helper.DefaultSelector``: the selectors of the Services selecting the pod, and of the
ReplicationController, ReplicaSet or StatefulSet controlling it. They are read from
``handle.listers`` under ``services``, ``replicationcontrollers``, ``replicasets`` and
``statefulsets`` (``WORKLOAD_LISTERS``: mappings "namespace/name" -> typed object from
``ksched.api.objects`` or raw dict), which ``ksched run`` watches and ``ksched simulate``
fills from the kinds its cluster file holds. Only where a lister is absent (unit tests,
or a cluster file without objects of that kind):

* Services are unknown and contribute nothing (upstream would AND their selectors in);
* a pod whose controller is an RC/ReplicaSet/StatefulSet uses its own labels, minus the
  per-pod ones controllers stamp (``statefulset.kubernetes.io/pod-name``,
  ``apps.kubernetes.io/pod-index``, ``controller-revision-hash``), as the controller's
  selector: the controller writes its template labels on every replica, so siblings
  match, which is what the real selector selects in the common case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import compress
from operator import is_not
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from ...api.objects import LabelSelector, Node, Toleration, TopologySpreadConstraint
from ...api.selectors import (
    IN,
    Selector,
    compile_label_selector,
    find_untolerated_taint,
    selector_from_set,
)
from ...framework.listers import Listers
from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.types import NodeInfo, PodInfo
from ..helper import do_not_schedule_taint
from ..nodeaffinity import RequiredNodeAffinity

__all__ = [
    "HONOR",
    "HOSTNAME",
    "IGNORE",
    "WORKLOAD_LISTERS",
    "ZONE",
    "Constraint",
    "Layouts",
    "PodCounter",
    "changed_rows",
    "count_pods",
    "default_selector",
    "filter_constraints",
    "label_matcher",
    "node_has_keys",
    "services_by_namespace",
    "taint_ok_mask",
    "untolerated",
]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
HONOR = "Honor"
IGNORE = "Ignore"
MAX_INT32 = 2**31 - 1
# The handle.listers keys default selectors read.
WORKLOAD_LISTERS = frozenset(
    {Listers.SERVICES, Listers.REPLICATION_CONTROLLERS, Listers.REPLICA_SETS, Listers.STATEFUL_SETS}
)

_PER_POD_LABELS = frozenset(
    {
        "statefulset.kubernetes.io/pod-name",
        "apps.kubernetes.io/pod-index",
        "controller-revision-hash",
    }
)


@dataclass(frozen=True, slots=True)
class Constraint:
    """Upstream's internal ``topologySpreadConstraint``: selector parsed, defaults applied."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    @property
    def honor_affinity(self) -> bool:
        return self.node_affinity_policy == HONOR

    @property
    def honor_taints(self) -> bool:
        return self.node_taints_policy == HONOR


def filter_constraints(
    constraints: Sequence[TopologySpreadConstraint],
    pod_labels: Mapping[str, str],
    action: str,
    where: str,
    match_label_keys: bool = True,
) -> tuple[Constraint, ...]:
    """``filterTopologySpreadConstraints``: the constraints of one ``whenUnsatisfiable``.

    ``matchLabelKeys`` values taken from the pod are ANDed into the selector (a nil
    selector stays "nothing", as ``mergeLabelSetWithSelector`` leaves it), unless
    ``match_label_keys`` is off (the MatchLabelKeysInPodTopologySpread gate).
    """
    out: list[Constraint] = []
    for i, c in enumerate(constraints):
        if c.when_unsatisfiable != action:
            continue
        sel = compile_label_selector(c.label_selector, f"{where}[{i}].labelSelector")
        if match_label_keys and c.match_label_keys and not sel.nothing:
            extra = {k: pod_labels[k] for k in c.match_label_keys if k in pod_labels}
            if extra:
                sel = Selector(selector_from_set(extra).requirements + sel.requirements)
        out.append(
            Constraint(
                c.max_skew,
                c.topology_key,
                sel,
                c.min_domains if c.min_domains is not None else 1,
                c.node_affinity_policy if c.node_affinity_policy is not None else HONOR,
                c.node_taints_policy if c.node_taints_policy is not None else IGNORE,
            )
        )
    return tuple(out)


def with_selector(constraints: Iterable[Constraint], sel: Selector) -> tuple[Constraint, ...]:
    return tuple(replace(c, selector=sel) for c in constraints)


def node_has_keys(labels: Mapping[str, str], constraints: Iterable[Constraint]) -> bool:
    """``nodeLabelsMatchSpreadConstraints``: the node has every topology key."""
    return all(c.topology_key in labels for c in constraints)


def count_pods(pods: Iterable[PodInfo], sel: Selector, namespace: str) -> int:
    """``countPodsMatchSelector``: same-namespace, non-terminating pods the selector matches.

    An empty selector counts nothing (upstream returns 0 for ``selector.Empty()``).
    """
    if sel.empty or sel.nothing:
        return 0
    return _count(pods, sel.matches, namespace)


def _count(pods: Iterable[PodInfo], matches: Callable[[Mapping[str, str]], bool], ns: str) -> int:
    n = 0
    for p in pods:
        m = p.pod.metadata
        if m.deletion_timestamp is None and m.namespace == ns and matches(m.labels):
            n += 1
    return n


def label_matcher(sel: Selector) -> Callable[[Mapping[str, str]], bool]:
    """``sel.matches``, as key lookups when every requirement is ``key in (value)`` (a
    matchLabels selector, a Service's): counting replaced rows is per cycle."""
    reqs = sel.requirements
    if sel.nothing or not all(r.op == IN and len(r.values) == 1 for r in reqs):
        return sel.matches
    pairs = tuple((r.key, next(iter(r.values))) for r in reqs)
    if len(pairs) == 1:
        ((key, value),) = pairs
        return lambda labels: labels.get(key) == value
    return lambda labels: all(labels.get(k) == v for k, v in pairs)


# ---- node inclusion policies ---------------------------------------------------------


def untolerated(node: Node, tolerations: Sequence[Toleration], comparison: bool = False) -> bool:
    """A NoSchedule/NoExecute taint of ``node`` the pod does not tolerate (``comparison``:
    Lt/Gt tolerations compare, gate TaintTolerationComparisonOperators)."""
    taint = find_untolerated_taint(node.spec.taints, tolerations, do_not_schedule_taint, comparison)
    return taint is not None


def taint_ok_mask(
    snap: Snapshot, tolerations: Sequence[Toleration], comparison: bool = False
) -> BoolArray | None:
    """Rows without an untolerated NoSchedule/NoExecute taint; None when every row is fine."""
    if len(snap.taint_sets) == 1:
        return None
    bad = np.array(
        [
            find_untolerated_taint(ts, tolerations, do_not_schedule_taint, comparison) is not None
            for ts in snap.taint_sets
        ],
        dtype=np.bool_,
    )
    if not bad.any():
        return None
    return np.asarray(~bad[snap.taint_ids])


def matches_inclusion(
    c: Constraint,
    pod: PodInfo,
    node: Node,
    required: RequiredNodeAffinity,
    comparison: bool = False,
) -> bool:
    """``matchNodeInclusionPolicies`` for one node (parse problems count as no match)."""
    labels = node.metadata.labels
    if c.honor_affinity and not required.matches(labels, node.metadata.name):
        return False
    return not (c.honor_taints and untolerated(node, pod.pod.spec.tolerations, comparison))


# ---- counting matching pods ----------------------------------------------------------


def changed_rows(cur: list[NodeInfo], prev: list[NodeInfo]) -> list[int]:
    """Rows whose NodeInfo is another object: identity tests in C (``is_not`` over both
    lists). List equality would call NodeInfo's field-by-field ``__eq__`` on every
    replaced row."""
    return list(compress(range(len(cur)), map(is_not, cur, prev)))


class PodCounter:
    """Matching pods per snapshot row for one (namespace, selector), updated incrementally.

    On the snapshot it last counted, the rows to recount come from the snapshot's change
    log (``Snapshot.changed_rows``); on another one (a preemption clone) or past the log,
    from comparing the NodeInfos it counted with the snapshot's by identity."""

    __slots__ = (
        "_counts",
        "_epoch",
        "_matches",
        "_position",
        "_seen",
        "_snap",
        "namespace",
        "selector",
    )

    def __init__(self, namespace: str, selector: Selector) -> None:
        self.namespace = namespace
        self.selector = selector
        # None: an empty selector, which counts nothing
        self._matches = None if selector.empty or selector.nothing else label_matcher(selector)
        self._seen: list[NodeInfo] | None = None
        self._counts: IntArray = np.zeros(0, dtype=np.int64)
        self._snap: Snapshot | None = None
        self._epoch = 0
        self._position = 0

    def counts(self, snap: Snapshot) -> IntArray:
        """Counts aligned with ``snap``'s rows (shared until the next change: do not mutate)."""
        infos = snap.node_infos
        matches, ns = self._matches, self.namespace
        seen = self._seen
        if matches is None:
            if len(self._counts) != snap.n:
                self._counts = np.zeros(snap.n, dtype=np.int64)
            return self._counts
        if seen is None or len(seen) != len(infos):
            self._counts = np.fromiter(
                (_count(ni.pods, matches, ns) for ni in infos), dtype=np.int64, count=snap.n
            )
            seen = self._seen = list(infos)
        else:
            logged = snap.changed_rows(self._epoch, self._position) if self._snap is snap else None
            changed = changed_rows(infos, seen) if logged is None else set(logged)
            if changed:
                counts = self._counts.copy()
                for r in changed:
                    ni = seen[r] = infos[r]
                    counts[r] = _count(ni.pods, matches, ns)
                self._counts = counts
        self._snap = snap
        self._epoch = snap.epoch
        self._position = snap.log_position
        return self._counts


class CounterCache:
    """``PodCounter``s by (namespace, selector), bounded so departed workloads are dropped."""

    __slots__ = ("_by_key", "generation", "limit")

    def __init__(self, limit: int = 256) -> None:
        self._by_key: dict[tuple[str, Selector], PodCounter] = {}
        self.limit = limit
        # Bumped when the counters are dropped, for callers that hold on to some.
        self.generation = 0

    def get(self, namespace: str, sel: Selector) -> PodCounter:
        key = (namespace, sel)
        c = self._by_key.get(key)
        if c is None:
            if len(self._by_key) >= self.limit:
                self._by_key.clear()
                self.generation += 1
            c = self._by_key[key] = PodCounter(namespace, sel)
        return c


@dataclass(slots=True)
class _Layout:
    """What PreFilter and PreScore derive from the snapshot's label columns alone, for one
    tuple of topology keys: valid while the snapshot and its ``labels_version`` hold."""

    snap: Snapshot
    labels_version: int
    cols: list[tuple[npt.NDArray[np.int32], dict[str, int]]]
    has_all: BoolArray
    all_have: bool
    # per constraint: (slots, gather) for non-hostname keys, None for hostname ones
    slots: list[tuple[IntArray, npt.NDArray[np.intp]] | None]
    labelled: list[bool]
    # PreFilter, when every row has every key: per key the values some row has (with the
    # trailing always-False slot) and their number
    present: list[tuple[BoolArray, int]] | None = None

    def present_values(self, i: int) -> tuple[BoolArray, int]:
        got = self.present
        if got is None:
            got = self.present = []
            for ids, vocab in self.cols:
                v = len(vocab)
                p = np.zeros(v + 1, dtype=np.bool_)
                p[:v] = np.bincount(ids, minlength=v)[:v] > 0
                got.append((p, int(p.sum())))
        return got[i]


@dataclass(slots=True)
class _Prepared:
    """What PreFilter and PreScore read of one constraints tuple every cycle: its topology
    keys, whether any honors node affinity or taints, and its counters (of one namespace,
    while the counter cache keeps ``generation``)."""

    constraints: tuple[Constraint, ...]
    keys: tuple[str, ...]
    honor_affinity: bool
    honor_taints: bool
    namespace: str
    generation: int
    counters: list[PodCounter]


class Layouts:
    """``_Layout``s by topology keys (a plugin's few constraint shapes), kept across cycles,
    and ``_Prepared`` constraints by identity (the plugin shares parsed constraints
    between pods, so replicas hit)."""

    __slots__ = ("_by_keys", "_prepared")

    def __init__(self) -> None:
        self._by_keys: dict[tuple[str, ...], _Layout] = {}
        self._prepared: dict[int, _Prepared] = {}

    def prepare(
        self, constraints: tuple[Constraint, ...], namespace: str, counters: CounterCache
    ) -> _Prepared:
        got = self._prepared.get(id(constraints))
        if (
            got is not None
            and got.constraints is constraints
            and got.namespace == namespace
            and got.generation == counters.generation
        ):
            return got
        got = _Prepared(
            constraints,
            tuple(c.topology_key for c in constraints),
            any(c.honor_affinity for c in constraints),
            any(c.honor_taints for c in constraints),
            namespace,
            counters.generation,
            [counters.get(namespace, c.selector) for c in constraints],
        )
        if len(self._prepared) >= 64:
            self._prepared.clear()
        self._prepared[id(constraints)] = got
        return got

    def get(self, snap: Snapshot, keys: tuple[str, ...]) -> _Layout:
        got = self._by_keys.get(keys)
        # A snapshot replaces its label columns only when it rebuilds, and patches them
        # only for a relabelled row: both bump ``labels_version``.
        if got is not None and got.snap is snap and got.labels_version == snap.labels_version:
            return got
        cols = [snap.label_column(k) for k in keys]
        has_all: BoolArray = np.ones(snap.n, dtype=np.bool_)
        for ids, _ in cols:
            has_all &= ids >= 0
        slots: list[tuple[IntArray, npt.NDArray[np.intp]] | None] = []
        labelled: list[bool] = []
        for key, (ids, vocab) in zip(keys, cols, strict=True):
            labelled.append(bool((ids >= 0).all()))
            if key == HOSTNAME:
                slots.append(None)
                continue
            v = len(vocab)
            # A node without the label is in the "" domain (only possible when not require_all).
            slot = np.where(ids >= 0, ids, vocab.get("", v)).astype(np.int64)
            gather = np.where(ids >= 0, ids, v + 1).astype(np.intp)
            slots.append((slot, gather))
        if len(self._by_keys) >= 16:
            self._by_keys.clear()
        got = self._by_keys[keys] = _Layout(
            snap, snap.labels_version, cols, has_all, bool(has_all.all()), slots, labelled
        )
        return got


# ---- default selector ----------------------------------------------------------------

_RC = ("", "v1", "ReplicationController")
_RS = ("apps", "v1", "ReplicaSet")
_SS = ("apps", "v1", "StatefulSet")


def _meta_spec(obj: Any) -> tuple[str, Any]:
    """(``metadata.namespace``, ``spec.selector``) of a typed object or a raw dict."""
    if isinstance(obj, Mapping):
        meta, spec = obj.get("metadata"), obj.get("spec")
        ns = meta.get("namespace", "") if isinstance(meta, Mapping) else ""
        return ns, spec.get("selector") if isinstance(spec, Mapping) else None
    return obj.metadata.namespace, obj.spec.selector


def _parse_group_version(gv: str) -> tuple[str, str] | None:
    """``schema.ParseGroupVersion``: None for a malformed string."""
    if not gv or gv == "/":
        return "", ""
    n = gv.count("/")
    if n == 0:
        return "", gv
    if n == 1:
        group, _, version = gv.partition("/")
        return group, version
    return None


def _controller_of(pod: PodInfo) -> Any:
    """``metav1.GetControllerOfNoCopy``: the owner reference marked controller, if any."""
    for ref in pod.pod.metadata.owner_references:
        if ref.controller:
            return ref
    return None


def _label_selector(raw: Any) -> Selector | None:
    """A controller's ``spec.selector`` as a Selector; None when it does not parse."""
    if raw is None:
        return compile_label_selector(None)
    try:
        ls = raw if isinstance(raw, LabelSelector) else msgspec.convert(raw, LabelSelector)
        return compile_label_selector(ls)
    except (msgspec.ValidationError, ValueError):
        return None


def _matches_set(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


ServiceIndex = Mapping[str, Sequence[Mapping[str, str]]]


def services_by_namespace(services: Mapping[str, Any]) -> dict[str, list[Mapping[str, str]]]:
    """The Services' selectors per namespace (upstream's lister is namespace-indexed);
    Services with a nil selector, which selects nothing, are left out."""
    out: dict[str, list[Mapping[str, str]]] = {}
    for svc in services.values():
        ns, sel = _meta_spec(svc)
        if sel is not None:
            out.setdefault(ns, []).append(sel)
    return out


_EVERYTHING = selector_from_set({})


def default_selector(
    pod: PodInfo, listers: Mapping[str, Any], services: ServiceIndex | None = None
) -> Selector:
    """``helper.DefaultSelector`` over ``handle.listers``, with the fallback described above.

    ``services``: ``services_by_namespace`` of the Services lister, when the caller keeps
    one (each pod then looks at its own namespace's Services only)."""
    ns = pod.namespace
    labels = pod.labels
    label_set: dict[str, str] = {}
    if services is None:
        lister = listers.get(Listers.SERVICES)
        services = services_by_namespace(lister) if lister is not None else {}
    for sel in services.get(ns, ()):
        if _matches_set(sel, labels):
            label_set.update(sel)
    selector = selector_from_set(label_set) if label_set else _EVERYTHING
    owner = _controller_of(pod)
    if owner is None:
        return selector
    gv = _parse_group_version(owner.api_version)
    if gv is None:
        return selector
    gvk = (*gv, owner.kind)
    if gvk not in (_RC, _RS, _SS):
        return selector
    lister_name = {
        _RC: Listers.REPLICATION_CONTROLLERS,
        _RS: Listers.REPLICA_SETS,
        _SS: Listers.STATEFUL_SETS,
    }[gvk]
    lister = listers.get(lister_name)
    if lister is None:
        own = {k: v for k, v in labels.items() if k not in _PER_POD_LABELS}
        if gvk == _RC:
            label_set.update(own)
            return selector_from_set(label_set)
        return Selector(selector.requirements + selector_from_set(own).requirements)
    obj = lister.get(f"{ns}/{owner.name}")
    if obj is None:
        return selector
    spec_selector = _meta_spec(obj)[1]
    if gvk == _RC:
        label_set.update(spec_selector or {})
        return selector_from_set(label_set)
    other = _label_selector(spec_selector)
    if other is None or other.nothing:
        return selector
    return Selector(selector.requirements + other.requirements)
