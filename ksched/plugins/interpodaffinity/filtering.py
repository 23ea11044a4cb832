"""InterPodAffinity PreFilter/Filter (upstream ``interpodaffinity/filtering.go``).

PreFilter counts, per topology pair, the existing pods whose required anti-affinity
matches the incoming pod, and the existing pods matching the incoming pod's required
affinity (all terms) and anti-affinity (each term). Filter then only looks up the
node's labels: affinity first (UnschedulableAndUnresolvable: preemption cannot add
pods), then the pod's anti-affinity, then the existing pods' anti-affinity (both
Unschedulable: evicting pods may help).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...api.objects import Node
from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.status import Code, Status
from ...framework.types import NodeInfo, PodInfo
from .. import names
from ..helper import all_true
from .index import ClusterIndex, TopologyCounts, by_topology
from .terms import NamespaceLabels, PodTerms, incoming_terms, pod_matches_all_terms, pod_terms

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "PRE_FILTER_STATE_KEY",
    "PreFilterState",
    "compute_pre_filter",
    "filter_mask",
    "filter_node",
]

PRE_FILTER_STATE_KEY = "PreFilter" + names.INTER_POD_AFFINITY

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

_NO_LABELS: Mapping[str, str] = {}


class PreFilterState:
    """``preFilterState``. Clones share the counts until either side updates them
    (preemption clones the state for every candidate node but updates few)."""

    __slots__ = (
        "_owned",
        "affinity_counts",
        "anti_affinity_counts",
        "existing_anti_affinity_counts",
        "namespace_labels",
        "pod",
        "self_match",
        "terms",
    )

    def __init__(
        self,
        pod: PodInfo,
        terms: PodTerms,
        namespace_labels: NamespaceLabels,
        existing: TopologyCounts,
        affinity: TopologyCounts,
        anti_affinity: TopologyCounts,
    ) -> None:
        self.pod = pod
        self.terms = terms
        self.namespace_labels = namespace_labels
        self.existing_anti_affinity_counts = existing
        self.affinity_counts = affinity
        self.anti_affinity_counts = anti_affinity
        self._owned = True
        # Whether the pod matches all its own affinity terms (the first pod of a group).
        self.self_match = pod_matches_all_terms(
            terms.required_affinity, pod.namespace, pod.labels, namespace_labels
        )

    def clone(self) -> PreFilterState:
        out = PreFilterState.__new__(PreFilterState)
        out.pod, out.terms, out.namespace_labels = self.pod, self.terms, self.namespace_labels
        out.self_match = self.self_match
        out.existing_anti_affinity_counts = self.existing_anti_affinity_counts
        out.affinity_counts = self.affinity_counts
        out.anti_affinity_counts = self.anti_affinity_counts
        out._owned = self._owned = False
        return out

    def _own(self) -> None:
        if not self._owned:
            self.existing_anti_affinity_counts = self.existing_anti_affinity_counts.clone()
            self.affinity_counts = self.affinity_counts.clone()
            self.anti_affinity_counts = self.anti_affinity_counts.clone()
            self._owned = True

    def update_with_pod(self, other: PodInfo, node: Node | None, multiplier: int) -> None:
        """``updateWithPod``: count ``other`` on ``node`` in (+1) or out (-1)."""
        self._own()
        labels = node.metadata.labels if node is not None else _NO_LABELS
        nsl = self.namespace_labels
        me = self.pod
        for t in pod_terms(other).required_anti_affinity:
            if t.matches(me.namespace, me.labels, nsl):
                _update(self.existing_anti_affinity_counts, labels, t.topology_key, multiplier)
        ns, olabels = other.namespace, other.labels
        if pod_matches_all_terms(self.terms.required_affinity, ns, olabels, nsl):
            for t in self.terms.required_affinity:
                _update(self.affinity_counts, labels, t.topology_key, multiplier)
        for t in self.terms.required_anti_affinity:
            if t.matches(ns, olabels, nsl):
                _update(self.anti_affinity_counts, labels, t.topology_key, multiplier)


def _update(counts: TopologyCounts, labels: Mapping[str, str], key: str, delta: int) -> None:
    value = labels.get(key)
    if value is not None:
        counts.update(key, value, delta)


def compute_pre_filter(
    index: ClusterIndex,
    snap: Snapshot,
    pod: PodInfo,
    namespaces: NamespaceLabels,
    token: object = None,
    v136_namespace_selectors: bool = False,
) -> tuple[PreFilterState | None, Status | None]:
    """PreFilter's counts over every node of ``snap``; Skip when nothing can reject.
    ``v136_namespace_selectors``: v1.36's reading of the pod's namespaceSelectors
    (``incoming_terms``)."""
    terms = incoming_terms(pod, v136_namespace_selectors)
    if terms.error:
        return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {terms.error}")
    index.sync(snap, token)
    if (
        not index.required_anti_affinity
        and not terms.required_affinity
        and not terms.required_anti_affinity
    ):
        return None, Status(Code.SKIP)  # every count below would stay empty
    n = snap.n
    ns, labels = pod.namespace, pod.labels

    existing = TopologyCounts()
    weights: dict[str, IntArray] = {}
    for term, rows in index.required_anti_affinity.items():
        if term.matches(ns, labels, namespaces):
            rows.add_into(_weights(weights, term.topology_key, n))
    for key, w in weights.items():
        existing.add_array(key, *by_topology(snap, key, w))

    affinity, anti_affinity = TopologyCounts(), TopologyCounts()
    if terms.required_affinity:
        w = np.zeros(n, dtype=np.int64)
        hit = False
        for g in index.signature_groups():
            if pod_matches_all_terms(terms.required_affinity, g.namespace, g.labels, namespaces):
                g.add_into(w)
                hit = True
        if hit:
            for t in terms.required_affinity:
                affinity.add_array(t.topology_key, *by_topology(snap, t.topology_key, w))
    if terms.required_anti_affinity:
        weights = {}
        for t in terms.required_anti_affinity:
            for g in index.signature_groups():
                if t.matches(g.namespace, g.labels, namespaces):
                    g.add_into(_weights(weights, t.topology_key, n))
        for key, w in weights.items():
            anti_affinity.add_array(key, *by_topology(snap, key, w))

    if existing.is_empty() and not terms.required_affinity and not terms.required_anti_affinity:
        return None, Status(Code.SKIP)
    return PreFilterState(pod, terms, namespaces, existing, affinity, anti_affinity), None


def _weights(weights: dict[str, IntArray], key: str, n: int) -> IntArray:
    w = weights.get(key)
    if w is None:
        w = weights[key] = np.zeros(n, dtype=np.int64)
    return w


# ---- Filter -------------------------------------------------------------------------------


def _satisfies_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    """``satisfyPodAffinity``: every topology key present, and a matching pod in each domain
    — unless no pod matches anywhere and the pod matches its own terms."""
    pods_exist = True
    for t in s.terms.required_affinity:
        value = labels.get(t.topology_key)
        if value is None:
            return False
        if s.affinity_counts.get(t.topology_key, value) <= 0:
            pods_exist = False
    if not pods_exist:
        return s.affinity_counts.is_empty() and s.self_match
    return True


def _satisfies_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    counts = s.anti_affinity_counts
    if counts.is_empty():
        return True
    for t in s.terms.required_anti_affinity:
        value = labels.get(t.topology_key)
        if value is not None and counts.get(t.topology_key, value) > 0:
            return False
    return True


def _satisfies_existing_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    counts = s.existing_anti_affinity_counts
    if counts.is_empty():
        return True
    return not any(counts.get(k, v) > 0 for k, v in labels.items())


def filter_node(s: PreFilterState, node: NodeInfo) -> Status | None:
    labels = node.node.metadata.labels if node.node is not None else _NO_LABELS
    if not _satisfies_affinity(s, labels):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH)
    if not _satisfies_anti_affinity(s, labels):
        return Status(Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH)
    if not _satisfies_existing_anti_affinity(s, labels):
        return Status(Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH)
    return None


def filter_mask(s: PreFilterState, snap: Snapshot) -> BoolArray:
    """``filter_node`` for every snapshot row: label-column gathers of the counts."""
    n = snap.n
    out: BoolArray | None = None
    if s.terms.required_affinity:
        has_all = np.ones(n, dtype=np.bool_)
        exist = np.ones(n, dtype=np.bool_)
        for t in s.terms.required_affinity:
            ids, vocab = snap.label_column(t.topology_key)
            has_all &= ids >= 0
            exist &= s.affinity_counts.positive_lut(t.topology_key, vocab)[ids]
        first_of_group = s.affinity_counts.is_empty() and s.self_match
        out = has_all if first_of_group else has_all & exist
    if s.terms.required_anti_affinity and not s.anti_affinity_counts.is_empty():
        bad = np.zeros(n, dtype=np.bool_)
        for t in s.terms.required_anti_affinity:
            ids, vocab = snap.label_column(t.topology_key)
            bad |= s.anti_affinity_counts.positive_lut(t.topology_key, vocab)[ids]
        out = ~bad if out is None else out & ~bad
    existing = s.existing_anti_affinity_counts
    if not existing.is_empty():
        bad = np.zeros(n, dtype=np.bool_)
        for key in existing.positive_keys():
            ids, vocab = snap.label_column(key)
            bad |= existing.positive_lut(key, vocab)[ids]
        out = ~bad if out is None else out & ~bad
    return out if out is not None else all_true(n)
