"""The PodTopologySpread plugin (upstream ``plugin.go``): constraints, extension points
and queueing hints; the state computations live in ``filtering`` and ``scoring``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from ...api.objects import Node, TopologySpreadConstraint
from ...features import default_feature_gates
from ...framework.cycle_state import CycleState
from ...framework.events import ActionType, EventResource
from ...framework.handle import Handle
from ...framework.interface import (
    PER_CYCLE,
    ClusterEvent,
    ClusterEventWithHint,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
)
from ...framework.listers import Listers
from ...framework.snapshot import BoolArray, IntArray, NodeInfoView, Snapshot
from ...framework.status import Code, Status
from ...framework.types import NodeInfo, PodInfo
from .. import names
from ..helper import comparison_operators
from ..nodeaffinity import required_node_affinity
from .args import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
)
from .common import (
    HOSTNAME,
    WORKLOAD_LISTERS,
    ZONE,
    Constraint,
    CounterCache,
    Layouts,
    ServiceIndex,
    default_selector,
    filter_constraints,
    matches_inclusion,
    node_has_keys,
    services_by_namespace,
    with_selector,
)
from .filtering import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_KEY,
    PreFilterState,
    compute_pre_filter_state,
)
from .scoring import (
    PRE_SCORE_KEY,
    PreScoreState,
    compute_pre_score_state,
    normalize,
)

__all__ = ["SYSTEM_DEFAULT_CONSTRAINTS", "PodTopologySpread"]

# ``systemDefaultConstraints``: soft spreading over hostnames and zones.
SYSTEM_DEFAULT_CONSTRAINTS: tuple[TopologySpreadConstraint, ...] = (
    TopologySpreadConstraint(max_skew=3, topology_key=HOSTNAME, when_unsatisfiable=SCHEDULE_ANYWAY),
    TopologySpreadConstraint(max_skew=5, topology_key=ZONE, when_unsatisfiable=SCHEDULE_ANYWAY),
)

_NOT_FOUND = 'reading "{}" from cycleState: not found'
# The cache revision of constraints that depend on the pod alone.
_POD_ONLY: Any = object()
_WORKLOAD_KEYS = tuple(sorted(WORKLOAD_LISTERS))
_ENCODE = msgspec.msgpack.Encoder().encode
# Entries of the shared constraint caches before they start afresh.
_SHARED_LIMIT = 1024


def _same_pod(a: PodInfo, b: PodInfo) -> bool:
    return (a.uid or a.key) == (b.uid or b.key)


class PodTopologySpread(
    PreFilterPlugin[PodTopologySpreadArgs],
    FilterPlugin[PodTopologySpreadArgs],
    PreScorePlugin[PodTopologySpreadArgs],
    ScorePlugin[PodTopologySpreadArgs],
):
    """Spreads pods over topology domains: hard constraints filter, soft ones score."""

    name = names.POD_TOPOLOGY_SPREAD
    # Default selectors come from these (upstream's New asks the informer factory for them).
    reads_listers = WORKLOAD_LISTERS

    def sign_pod(self, pod: PodInfo) -> Any:
        """Spreading is not local to a node: only pods no constraint applies to sign; the
        cycle cache runs the plugin every cycle for the others (its PreFilter never
        narrows; it has ``filter_batch``)."""
        if self.constraints(pod, DO_NOT_SCHEDULE) or self.constraints(pod, SCHEDULE_ANYWAY):
            return PER_CYCLE
        return None

    Args = PodTopologySpreadArgs
    args: PodTopologySpreadArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.comparison_operators = comparison_operators(handle)
        args = self.args
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else args.default_constraints
        )
        self.counters = CounterCache()
        self.layouts = Layouts()
        features = getattr(handle, "features", None) or default_feature_gates()
        self.match_label_keys = features.enabled("MatchLabelKeysInPodTopologySpread")
        self._cache_key = f"{self.name}#{id(self)}"
        # pod.cache keys per whenUnsatisfiable action
        self._cache_keys = {a: f"{self._cache_key}/{a}" for a in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY)}
        self._default_by_action: dict[str, tuple[Constraint, ...]] = {}
        # Parsed constraints shared across pods (``_own``, ``_defaulted``).
        self._own_cache: dict[tuple[str, bytes], tuple[Constraint, ...]] = {}
        self._defaulted_cache: dict[tuple[Any, ...], tuple[Any, tuple[Constraint, ...]]] = {}
        # (Services lister, its revision, its selectors per namespace)
        self._services: tuple[Any, int, ServiceIndex] | None = None

    # -- constraints ------------------------------------------------------------------------
    def _listers(self) -> Mapping[str, Any]:
        listers = getattr(self.handle, "listers", None)
        return listers if listers is not None else {}

    def _listers_revision(self) -> tuple[tuple[int, int], ...] | None:
        """What default selectors are derived from: (id, revision) of each workload lister
        present, or None when one is a plain mapping that cannot tell it changed."""
        listers = self._listers()
        out: list[tuple[int, int]] = []
        for key in _WORKLOAD_KEYS:
            lister = listers.get(key)
            if lister is None:
                continue
            revision = getattr(lister, "revision", None)
            if not isinstance(revision, int):
                return None
            out.append((id(lister), revision))
        return tuple(out)

    def _service_index(self) -> ServiceIndex | None:
        """The Services lister by namespace, rebuilt only when it changed (None: none, or
        one that cannot tell, which ``default_selector`` then scans itself)."""
        lister = self._listers().get(Listers.SERVICES)
        revision = getattr(lister, "revision", None)
        if lister is None or not isinstance(revision, int):
            return None
        got = self._services
        if got is None or got[0] is not lister or got[1] != revision:
            got = self._services = (lister, revision, services_by_namespace(lister))
        return got[2]

    def constraints(self, pod: PodInfo, action: str) -> tuple[Constraint, ...]:
        """The pod's own constraints of ``action``, else the default ones (``getConstraints``).

        Cached per pod; default ones only until a workload lister changes (a Service
        created, a ReplicaSet's selector edited, a lister added), and not at all when a
        lister cannot tell (see ``RevisionedStore``).
        """
        key = self._cache_keys.get(action) or f"{self._cache_key}/{action}"
        cached: tuple[Any, tuple[Constraint, ...]] | None = pod.cache.get(key)
        if cached is not None:
            revision, out = cached
            if revision is _POD_ONLY or revision == self._listers_revision():
                return out
        spec = pod.pod.spec
        revision = _POD_ONLY
        if spec.topology_spread_constraints:
            out = self._own(pod, action)
        else:
            out = self._defaults(pod, action)
            if out:
                revision = self._listers_revision()
                out = self._defaulted(pod, action, out, revision)
        if revision is not None:
            pod.cache[key] = (revision, out)
        return out

    def _own(self, pod: PodInfo, action: str) -> tuple[Constraint, ...]:
        """The pod's own constraints of ``action``, shared by pods with equal ones: replicas
        repeat them, and parsing selectors was a visible part of every cycle. Constraints
        with matchLabelKeys take values from the pod's labels and are parsed per pod."""
        spec = pod.pod.spec
        key = (action, _ENCODE(spec.topology_spread_constraints))
        got = self._own_cache.get(key)
        if got is not None:
            return got
        out = filter_constraints(
            spec.topology_spread_constraints,
            pod.labels,
            action,
            f"Pod {pod.key}: spec.topologySpreadConstraints",
            self.match_label_keys,
        )
        if not any(c.match_label_keys for c in spec.topology_spread_constraints):
            if len(self._own_cache) >= _SHARED_LIMIT:
                self._own_cache.clear()
            self._own_cache[key] = out
        return out

    def _defaulted(
        self,
        pod: PodInfo,
        action: str,
        defaults: tuple[Constraint, ...],
        revision: tuple[tuple[int, int], ...] | None,
    ) -> tuple[Constraint, ...]:
        """``defaults`` with the pod's default selector, shared by pods of one namespace with
        equal labels and controller while the workload listers stay at ``revision``
        (``default_selector`` reads nothing else of the pod)."""
        key: tuple[Any, ...] | None = None
        if revision is not None and self._default_by_action.get(action) is defaults:
            owner = next((r for r in pod.pod.metadata.owner_references if r.controller), None)
            ref = None if owner is None else (owner.api_version, owner.kind, owner.name)
            key = (action, pod.namespace, tuple(pod.labels.items()), ref)
            got = self._defaulted_cache.get(key)
            if got is not None and got[0] == revision:
                return got[1]
        sel = default_selector(pod, self._listers(), self._service_index())
        out = () if sel.empty else with_selector(defaults, sel)
        if key is not None:
            if len(self._defaulted_cache) >= _SHARED_LIMIT:
                self._defaulted_cache.clear()
            self._defaulted_cache[key] = (revision, out)
        return out

    def _defaults(self, pod: PodInfo, action: str) -> tuple[Constraint, ...]:
        """The default constraints of ``action``; the same for every pod (so computed once)
        unless one has matchLabelKeys, which take values from the pod's labels."""
        got = self._default_by_action.get(action)
        if got is not None:
            return got
        keys, where = self.match_label_keys, "defaultConstraints"
        out = filter_constraints(self.default_constraints, pod.labels, action, where, keys)
        if not keys or not any(c.match_label_keys for c in self.default_constraints):
            self._default_by_action[action] = out
        return out

    def _snapshot(self) -> Snapshot:
        snap = getattr(self.handle, "snapshot", None)
        return snap if isinstance(snap, Snapshot) else Snapshot()

    # -- PreFilter / Filter -------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None, Status(Code.SKIP)
        s = compute_pre_filter_state(
            pod, constraints, nodes, self.counters, self.comparison_operators, self.layouts
        )
        state.write(PRE_FILTER_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PodTopologySpread:
        return self

    def _pre_filter_state(self, state: CycleState) -> PreFilterState:
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            raise KeyError(_NOT_FOUND.format(PRE_FILTER_KEY))
        return s

    def add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, to_add, pod, node, 1)

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        return self._update_with_pod(state, to_remove, pod, node, -1)

    def _update_with_pod(
        self,
        state: CycleState,
        updated: PodInfo,
        preemptor: PodInfo,
        node: NodeInfo,
        delta: int,
    ) -> Status | None:
        """``updateWithPod``: a pod added to or removed from ``node`` in a what-if state."""
        try:
            s = self._pre_filter_state(state)
        except KeyError as e:
            return Status(Code.ERROR, str(e.args[0]))
        n = node.node
        if updated.namespace != preemptor.namespace or n is None:
            return None
        labels = n.metadata.labels
        if not node_has_keys(labels, s.constraints):
            return None
        required = required_node_affinity(preemptor)
        for d in s.domains:
            c = d.constraint
            if not c.selector.matches(updated.labels):
                continue
            if not matches_inclusion(c, preemptor, n, required, self.comparison_operators):
                continue
            d.add(labels[c.topology_key], delta)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        try:
            s = self._pre_filter_state(state)
        except KeyError as e:
            return Status(Code.ERROR, str(e.args[0]))
        if node.node is None:
            return Status(Code.ERROR, "node not found")
        labels = node.node.metadata.labels
        for d in s.domains:
            c = d.constraint
            value = labels.get(c.topology_key)
            if value is None:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)
            if d.count_of(value) + d.self_match - d.min_match() > c.max_skew:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        s = state.get(PRE_FILTER_KEY)
        if not isinstance(s, PreFilterState):
            raise RuntimeError(_NOT_FOUND.format(PRE_FILTER_KEY))
        return s.fits(snap)

    # -- PreScore / Score ---------------------------------------------------------------------
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        snap = self._snapshot()
        if snap.n == 0:
            return Status(Code.SKIP)
        # Only non-system-default rules require every topology key on a node, so that
        # nodes without a zone label still get hostname spreading.
        require_all = bool(pod.pod.spec.topology_spread_constraints) or not self.system_defaulted
        constraints = self.constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return Status(Code.SKIP)
        rows = self._rows(snap, nodes)
        s = compute_pre_score_state(
            pod,
            constraints,
            snap,
            rows,
            require_all,
            self.counters,
            self.comparison_operators,
            self.layouts,
        )
        state.write(PRE_SCORE_KEY, s)
        return None

    @staticmethod
    def _rows(snap: Snapshot, nodes: Sequence[NodeInfo]) -> npt.NDArray[np.intp]:
        if isinstance(nodes, NodeInfoView):
            rows = nodes.rows
            if len(rows) == 0 or snap.node_infos[int(rows[0])] is nodes[0]:
                return rows
        out = []
        for ni in nodes:
            r = snap.row(ni.name)
            if r is None:
                raise ValueError(f"node {ni.name!r} is not in the snapshot")
            out.append(r)
        return np.array(out, dtype=np.intp)

    def _pre_score_state(self, state: CycleState) -> PreScoreState:
        s = state.get(PRE_SCORE_KEY)
        if not isinstance(s, PreScoreState):
            raise RuntimeError(f'error reading "{PRE_SCORE_KEY}" from cycleState: not found')
        return s

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self._pre_score_state(state).score_node(node)

    def score_batch(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: npt.NDArray[np.intp]
    ) -> IntArray:
        return self._pre_score_state(state).score_rows(rows)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None:
        normalize(self._pre_score_state(state), scores)
        return None

    # -- queueing hints -----------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Assigned pods added, relabelled or deleted (and the pod's own tolerations, for
        taint-honoring constraints); nodes added, deleted, relabelled or retainted."""
        a = ActionType
        pods = (a.ADD, a.UPDATE_POD_LABEL, a.UPDATE_POD_TOLERATION, a.DELETE)
        nodes = (a.ADD, a.DELETE, a.UPDATE_NODE_LABEL, a.UPDATE_NODE_TAINT)
        return [
            ClusterEventWithHint(ClusterEvent(resource, action), hint)
            for resource, actions, hint in (
                (EventResource.POD, pods, self.is_schedulable_after_pod_change),
                (EventResource.NODE, nodes, self.is_schedulable_after_node_change),
            )
            for action in actions
        ]

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when a pod of the namespace starts or stops matching a hard constraint."""
        for obj in (old, new):
            if obj is not None and not isinstance(obj, PodInfo):
                raise TypeError(f"expected PodInfo, got {type(obj).__name__}")

        def involved(p: PodInfo) -> bool:
            # ``involvedInTopologySpreading``: on a node or nominated to one
            placed = bool(p.node_name or p.pod.status.nominated_node_name)
            return _same_pod(p, pod) or (placed and p.namespace == pod.namespace)

        if (new is not None and not involved(new)) or (old is not None and not involved(old)):
            return QueueingHint.SKIP
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        if old is not None and new is not None:
            if (
                _same_pod(new, pod)
                and old.pod.spec.tolerations != new.pod.spec.tolerations
                and any(c.honor_taints for c in constraints)
            ):
                return QueueingHint.QUEUE
            if old.labels == new.labels:
                return QueueingHint.SKIP
            for c in constraints:
                if c.selector.matches(old.labels) != c.selector.matches(new.labels):
                    return QueueingHint.QUEUE
            return QueueingHint.SKIP
        changed = new if new is not None else old
        if changed is not None and any(c.selector.matches(changed.labels) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when a node gains or loses the topology keys, changes a key's value or
        its taints, or when a node having every key comes or goes."""
        for obj in (old, new):
            if obj is not None and not isinstance(obj, Node):
                raise TypeError(f"expected Node, got {type(obj).__name__}")
        constraints = self.constraints(pod, DO_NOT_SCHEDULE)
        was = old is not None and node_has_keys(old.metadata.labels, constraints)
        now = new is not None and node_has_keys(new.metadata.labels, constraints)
        if old is not None and new is not None:
            if was != now:
                return QueueingHint.QUEUE
            ol, nl = old.metadata.labels, new.metadata.labels
            moved = any(
                ol.get(c.topology_key, "") != nl.get(c.topology_key, "") for c in constraints
            )
            if now and (moved or old.spec.taints != new.spec.taints):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new is not None:
            return QueueingHint.QUEUE if now else QueueingHint.SKIP
        return QueueingHint.QUEUE if was else QueueingHint.SKIP
