"""The InterPodAffinity plugin (upstream ``interpodaffinity/plugin.go``).

The work is in ``filtering`` and ``scoring``; this class wires them to the framework,
keeps the per-snapshot ``ClusterIndex`` and answers queueing hints.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from ...api.objects import Namespace, Node
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
from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.status import Status
from ...framework.types import NodeInfo, PodInfo
from .. import names
from ..helper import RowArray, gates_of
from .args import InterPodAffinityArgs
from .filtering import (
    PRE_FILTER_STATE_KEY,
    PreFilterMemo,
    PreFilterState,
    compute_pre_filter,
    filter_mask,
    filter_node,
)
from .index import ClusterIndex
from .scoring import (
    PRE_SCORE_STATE_KEY,
    PreScoreState,
    compute_pre_score,
    normalize,
    score_node,
    score_rows,
)
from .terms import NamespaceLabels, no_namespace_labels, pod_matches_all_terms, pod_terms

__all__ = ["InterPodAffinity"]


def _not_found(key: str) -> str:
    return f'error reading "{key}" from cycleState: not found'


class InterPodAffinity(
    PreFilterPlugin[InterPodAffinityArgs],
    FilterPlugin[InterPodAffinityArgs],
    PreScorePlugin[InterPodAffinityArgs],
    ScorePlugin[InterPodAffinityArgs],
):
    name = names.INTER_POD_AFFINITY

    def sign_pod(self, pod: PodInfo) -> Any:
        """Terms reach across a topology domain: only with none on the pod and none on any
        pod in the cluster is the plugin a no-op, and the pod signable; otherwise the cycle
        cache runs it every cycle (its PreFilter never narrows; it has ``filter_batch``)."""
        a = pod.pod.spec.affinity
        if a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None):
            return PER_CYCLE
        snap = getattr(self.handle, "snapshot", None)
        if not isinstance(snap, Snapshot) or snap.any_pods_with_affinity:
            return PER_CYCLE
        return None

    Args = InterPodAffinityArgs
    args: InterPodAffinityArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.index = ClusterIndex()
        self.memo = PreFilterMemo()
        # v1.37's assigned-pod hint: an anti-affinity match is any term's, not all terms'
        self._any_anti_term = gates_of(handle).at_least("1.37")
        # v1.36 kept an incoming pod's namespaceSelector beside the namespaces it listed
        self._v136_namespace_selectors = not gates_of(handle).at_least("1.37")

    def _namespaces(self) -> NamespaceLabels:
        listers = getattr(self.handle, "listers", None) or {}
        lister: Mapping[str, Namespace] | None = listers.get(Listers.NAMESPACES)
        return NamespaceLabels(lister)

    def _namespaces_revision(self) -> Hashable | None:
        """What the namespace labels are read from, as of now: the lister and its
        revision (None: a plain mapping, which cannot tell it changed)."""
        listers = getattr(self.handle, "listers", None) or {}
        lister = listers.get(Listers.NAMESPACES)
        if lister is None:
            return ()
        revision = getattr(lister, "revision", None)
        return (id(lister), revision) if isinstance(revision, int) else None

    def _snapshot(self, nodes: Sequence[NodeInfo]) -> Snapshot:
        snap = getattr(self.handle, "snapshot", None)
        if isinstance(snap, Snapshot):
            return snap
        return Snapshot(list(nodes))

    # -- PreFilter / Filter ------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        s, st = compute_pre_filter(
            self.index,
            nodes,
            pod,
            self._namespaces(),
            state,
            self._v136_namespace_selectors,
            self.memo,
            self._namespaces_revision(),
        )
        if s is not None:
            state.write(PRE_FILTER_STATE_KEY, s)
        return None, st

    def pre_filter_extensions(self) -> InterPodAffinity:
        return self

    def _pre_filter_state(self, state: CycleState) -> PreFilterState | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        return s if isinstance(s, PreFilterState) else None

    def add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        s = self._pre_filter_state(state)
        if s is None:
            return Status.as_error(_not_found(PRE_FILTER_STATE_KEY))
        s.update_with_pod(to_add, node.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        s = self._pre_filter_state(state)
        if s is None:
            return Status.as_error(_not_found(PRE_FILTER_STATE_KEY))
        s.update_with_pod(to_remove, node.node, -1)
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = self._pre_filter_state(state)
        if s is None:
            return Status.as_error(_not_found(PRE_FILTER_STATE_KEY))
        return filter_node(s, node)

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        s = self._pre_filter_state(state)
        if s is None:
            raise RuntimeError(_not_found(PRE_FILTER_STATE_KEY))
        return filter_mask(s, snap)

    # -- PreScore / Score ------------------------------------------------------------------------
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        a = self.args
        s, st = compute_pre_score(
            self.index,
            self._snapshot(nodes),
            pod,
            self._namespaces(),
            a.hard_pod_affinity_weight,
            a.ignore_preferred_terms_of_existing_pods,
            state,
            self._v136_namespace_selectors,
        )
        if s is not None:
            state.write(PRE_SCORE_STATE_KEY, s)
        return st

    def _pre_score_state(self, state: CycleState) -> PreScoreState:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            raise RuntimeError(_not_found(PRE_SCORE_STATE_KEY))
        return s

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return score_node(self._pre_score_state(state), node)

    def score_batch(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: RowArray
    ) -> IntArray:
        return score_rows(self._pre_score_state(state), snap, rows)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return Status.as_error(_not_found(PRE_SCORE_STATE_KEY))
        normalize(s, scores)
        return None

    # -- queueing hints ----------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Pods added, relabelled or deleted (resource Pod, so the pending pod's own relabel
        is heard too); nodes added or relabelled (QueueingHints on: no UpdateNodeTaint)."""
        pod_hint = self.is_schedulable_after_pod_change
        node_hint = self.is_schedulable_after_node_change
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.ADD), pod_hint),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL), pod_hint
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.POD, ActionType.DELETE), pod_hint),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD), node_hint),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL), node_hint
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when the pending pod itself changed, a scheduled pod starts matching all its
        affinity terms, or one matching all its anti-affinity terms (or all of whose
        anti-affinity terms match it) goes away. Terms match with nil namespace labels, as
        upstream's hint does. From v1.37 (no gate) anti-affinity asks for any term, not
        all (``podMatchesAnyAffinityTerms``)."""
        for p in (old, new):
            if p is not None and not isinstance(p, PodInfo):
                raise TypeError(f"expected PodInfo, got {type(p).__name__}")
        if new is not None and _same_pod(new, pod):
            return QueueingHint.QUEUE

        def unplaced(p: PodInfo | None) -> bool:
            # neither on a node nor nominated to one (a nominated pod counts, as upstream)
            return p is not None and not (p.node_name or p.pod.status.nominated_node_name)

        if unplaced(new) or unplaced(old):
            return QueueingHint.SKIP
        terms = pod_terms(pod)
        if terms.error:
            return QueueingHint.QUEUE

        def all_match(ts: tuple[Any, ...], p: PodInfo) -> bool:
            return pod_matches_all_terms(ts, p.namespace, p.labels, no_namespace_labels)

        def anti_match(ts: tuple[Any, ...], p: PodInfo) -> bool:
            if not self._any_anti_term:
                return all_match(ts, p)
            return any(t.matches(p.namespace, p.labels, no_namespace_labels) for t in ts)

        aff, anti = terms.required_affinity, terms.required_anti_affinity
        if new is not None and old is not None:
            if not all_match(aff, old) and all_match(aff, new):
                return QueueingHint.QUEUE
            if anti_match(anti, old) and not anti_match(anti, new):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new is not None:
            return QueueingHint.QUEUE if all_match(aff, new) else QueueingHint.SKIP
        if old is None:
            return QueueingHint.SKIP
        if anti_match(anti, old):
            return QueueingHint.QUEUE
        # The deleted pod's own anti-affinity: upstream asks that its terms (v1.36: all, v1.37:
        # any) match the pending pod, with nil namespace labels (a namespaceSelector other
        # than {} never matches here), not with the namespaces' real labels.
        old_terms = pod_terms(old)
        if old_terms.error:
            return QueueingHint.QUEUE
        if anti_match(old_terms.required_anti_affinity, pod):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when a node joins or moves between domains of the pod's affinity topology
        keys, is added at all (with anti-affinity), or leaves an anti-affinity domain."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            raise TypeError(f"expected Node, got {type(old).__name__}, {type(new).__name__}")
        terms = pod_terms(pod)
        if terms.error:
            return QueueingHint.QUEUE
        labels = new.metadata.labels
        old_labels = old.metadata.labels if old is not None else None
        for t in terms.required_affinity:
            key = t.topology_key
            if old_labels is None:
                if key in labels:
                    return QueueingHint.QUEUE
                continue
            if key in labels and old_labels.get(key) != labels[key]:
                return QueueingHint.QUEUE  # gained the key, or changed its value
        for t in terms.required_anti_affinity:
            if old_labels is None:
                return QueueingHint.QUEUE
            key = t.topology_key
            if key in old_labels and old_labels[key] != labels.get(key):
                return QueueingHint.QUEUE  # lost the key, or changed its value
        return QueueingHint.SKIP


def _same_pod(a: PodInfo, b: PodInfo) -> bool:
    return (a.uid == b.uid) if (a.uid or b.uid) else a.key == b.key
