"""InterPodAffinity PreFilter/Filter (upstream ``interpodaffinity/filtering.go``).

PreFilter counts, per topology pair, the existing pods whose required anti-affinity
matches the incoming pod, and the existing pods matching the incoming pod's required
affinity (all terms) and anti-affinity (each term). Filter then only looks up the
node's labels: affinity first (UnschedulableAndUnresolvable: preemption cannot add
pods), then the pod's anti-affinity, then the existing pods' anti-affinity (both
Unschedulable: evicting pods may help).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import NamedTuple

import numpy as np

from ...api.objects import Node
from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.status import Code, Status
from ...framework.types import NodeInfo, PodInfo
from ...util.native import mypyc_attr
from .. import names
from ..helper import all_true
from .index import ClusterIndex, RowCounts, RowKey, TopologyCounts, by_topology
from .terms import (
    AffinityTerm,
    NamespaceLabels,
    PodTerms,
    incoming_terms,
    pod_matches_all_terms,
    pod_terms,
)

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "PRE_FILTER_STATE_KEY",
    "PreFilterMemo",
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


# clone builds one with __new__, bypassing __init__, which a native class cannot.
@mypyc_attr(native_class=False)
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
    memo: PreFilterMemo | None = None,
    namespaces_revision: Hashable | None = None,
) -> tuple[PreFilterState | None, Status | None]:
    """PreFilter's counts over every node of ``snap``; Skip when nothing can reject.
    ``v136_namespace_selectors``: v1.36's reading of the pod's namespaceSelectors
    (``incoming_terms``). With ``memo`` (and ``namespaces_revision``, what the namespace
    labels are read from; None when that cannot be told), the counts of an earlier
    cycle for the same terms are brought up to date instead of recomputed."""
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
    if memo is not None:
        return memo.pre_filter(index, snap, pod, terms, namespaces, namespaces_revision)
    return _compute(index, snap, pod, terms, namespaces)


def _compute(
    index: ClusterIndex, snap: Snapshot, pod: PodInfo, terms: PodTerms, namespaces: NamespaceLabels
) -> tuple[PreFilterState | None, Status | None]:
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


_Arrays = dict[str, tuple[dict[str, int], IntArray]]


class _MemoEntry:
    """One set of incoming terms' counts, as of the index's journal ``position``."""

    __slots__ = (
        "affinity",
        "anti_affinity",
        "epoch",
        "existing",
        "generation",
        "images_version",
        "namespaces",
        "position",
        "reads_namespaces",
        "signatures",
        "snap",
        "terms_match",
    )

    def __init__(self, snap: Snapshot, index: ClusterIndex) -> None:
        self.snap = snap
        self.epoch = snap.epoch
        self.images_version = snap.images_version
        self.generation = index.generation
        self.position = index.position
        # Whether a match read namespace labels, and then the revision they were read at
        # (terms without a namespaceSelector never read them).
        self.reads_namespaces = False
        self.namespaces: Hashable | None = None
        self.existing: _Arrays = {}
        self.affinity: _Arrays = {}
        self.anti_affinity: _Arrays = {}
        # per existing pod's anti-affinity term: whether it matches the incoming pod
        self.terms_match: dict[object, bool] = {}
        # per signature group key: the topology keys its pods count in (affinity, anti)
        self.signatures: dict[object, tuple[tuple[str, ...], tuple[str, ...]]] = {}

    def valid(self, snap: Snapshot, index: ClusterIndex, namespaces: Hashable | None) -> bool:
        # Node labels (the label columns and their vocabularies) change only with a node
        # object, which bumps ``images_version``.
        return (
            self.snap is snap
            and self.epoch == snap.epoch
            and self.images_version == snap.images_version
            and self.generation == index.generation
            and (
                not self.reads_namespaces
                or (namespaces is not None and self.namespaces == namespaces)
            )
        )

    def read(self, namespaces: NamespaceLabels, revision: Hashable | None) -> None:
        if namespaces.read_any and not self.reads_namespaces:
            self.reads_namespaces = True
            self.namespaces = revision


class _Incoming(NamedTuple):
    pod: PodInfo
    terms: PodTerms
    namespaces: NamespaceLabels
    own: bool  # the pod has required (anti-)affinity terms of its own


class PreFilterMemo:
    """PreFilter's counts per incoming terms, kept up to date from the index's journal.

    A replica's PreFilter differs from the previous replica's only by the pods the cycles
    in between placed (and the informer confirmed): the journal names each group count
    that changed on which row, so the counts move by exactly those rows' contributions,
    counted as ``_compute`` counts them (each term of the pod, each matching existing
    term). Anything the journal cannot tell (the index or the snapshot rebuilt, a node
    relabelled, the namespace labels a match read changed, too long a gap) recomputes
    from scratch.
    """

    MAX_ENTRIES = 16
    # More journal entries than this to replay: recompute instead.
    MAX_REPLAY = 512

    def __init__(self) -> None:
        self._entries: dict[Hashable, _MemoEntry] = {}

    def pre_filter(
        self,
        index: ClusterIndex,
        snap: Snapshot,
        pod: PodInfo,
        terms: PodTerms,
        namespaces: NamespaceLabels,
        revision: Hashable | None,
    ) -> tuple[PreFilterState | None, Status | None]:
        own = bool(terms.required_affinity or terms.required_anti_affinity)
        me = _Incoming(pod, terms, namespaces, own)
        if own:
            index.signature_groups()  # brought up to date: its changes are in the journal
        key = (terms.signature, terms.required_affinity, terms.required_anti_affinity)
        e = self._entries.get(key)
        if e is not None and e.valid(snap, index, revision):
            changes = index.changes_since(e.generation, e.position)
            if changes is None or len(changes) > self.MAX_REPLAY:
                e = None
            elif changes:
                self._replay(e, changes, snap, me)
                e.position = index.position
                e.read(namespaces, revision)
        else:
            e = None
        if e is None:
            e = self._build(index, snap, me)
            e.read(namespaces, revision)
            if len(self._entries) >= self.MAX_ENTRIES:
                self._entries.clear()
            self._entries[key] = e
        existing = TopologyCounts.of_arrays(dict(e.existing))
        if existing.is_empty() and not own:
            return None, Status(Code.SKIP)
        return (
            PreFilterState(
                pod,
                terms,
                namespaces,
                existing,
                TopologyCounts.of_arrays(dict(e.affinity)),
                TopologyCounts.of_arrays(dict(e.anti_affinity)),
            ),
            None,
        )

    def _build(self, index: ClusterIndex, snap: Snapshot, me: _Incoming) -> _MemoEntry:
        """The entry from every group (``_compute``'s counts, kept per key)."""
        e = _MemoEntry(snap, index)
        _, terms, namespaces, own = me
        ns, labels = me.pod.namespace, me.pod.labels
        for term, rows in index.required_anti_affinity.items():
            if self._term_matches(e, term, ns, labels, namespaces):
                _add_rows(e.existing, snap, term.topology_key, rows)
        if own:
            for gkey, g in index.signatures.items():
                aff, anti = self._signature_keys(e, gkey, g.namespace, g.labels, terms, namespaces)
                for k in aff:
                    _add_rows(e.affinity, snap, k, g)
                for k in anti:
                    _add_rows(e.anti_affinity, snap, k, g)
        return e

    def _replay(
        self, e: _MemoEntry, changes: list[tuple[RowKey, int, int]], snap: Snapshot, me: _Incoming
    ) -> None:
        """Move the counts by each change's row (copying an array before its first change:
        states handed out earlier share it)."""
        _, terms, namespaces, own = me
        ns, labels = me.pod.namespace, me.pod.labels
        copied: set[tuple[int, str]] = set()
        for gkey, row, count in changes:
            kind = gkey[0]
            if kind == "a":
                term = gkey[1]
                if self._term_matches(e, term, ns, labels, namespaces):
                    _add_row(e.existing, 0, snap, term.topology_key, row, count, copied)
            elif kind == "s" and own:
                gns, glabels = gkey[1]
                aff, anti = self._signature_keys(e, gkey, gns, glabels, terms, namespaces)
                for k in aff:
                    _add_row(e.affinity, 1, snap, k, row, count, copied)
                for k in anti:
                    _add_row(e.anti_affinity, 2, snap, k, row, count, copied)

    @staticmethod
    def _term_matches(
        e: _MemoEntry,
        term: AffinityTerm,
        ns: str,
        labels: Mapping[str, str],
        namespaces: NamespaceLabels,
    ) -> bool:
        got = e.terms_match.get(term)
        if got is None:
            got = e.terms_match[term] = term.matches(ns, labels, namespaces)
        return got

    @staticmethod
    def _signature_keys(
        e: _MemoEntry,
        gkey: object,
        gns: str,
        glabels: Mapping[str, str] | frozenset[tuple[str, str]],
        terms: PodTerms,
        namespaces: NamespaceLabels,
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The topology keys a pod of the group counts in, once per matching term (as
        ``_compute`` adds one count array per term)."""
        got = e.signatures.get(gkey)
        if got is None:
            if isinstance(glabels, frozenset):
                glabels = dict(glabels)
            aff: tuple[str, ...] = ()
            if pod_matches_all_terms(terms.required_affinity, gns, glabels, namespaces):
                aff = tuple(t.topology_key for t in terms.required_affinity)
            anti = tuple(
                t.topology_key
                for t in terms.required_anti_affinity
                if t.matches(gns, glabels, namespaces)
            )
            got = e.signatures[gkey] = (aff, anti)
        return got


def _add_rows(arrays: _Arrays, snap: Snapshot, key: str, rows: RowCounts) -> None:
    """Add a group's pods on every row to ``arrays[key]`` (by the row's value of ``key``)."""
    w = np.zeros(snap.n, dtype=np.int64)
    rows.add_into(w)
    vocab, counts = by_topology(snap, key, w)
    cur = arrays.get(key)
    arrays[key] = (vocab, counts if cur is None else cur[1] + counts)


def _add_row(
    arrays: _Arrays,
    which: int,
    snap: Snapshot,
    key: str,
    row: int,
    count: int,
    copied: set[tuple[int, str]],
) -> None:
    ids, vocab = snap.label_column(key)
    vid = int(ids[row])
    if vid < 0:
        return  # a node without the key counts nowhere
    cur = arrays.get(key)
    if cur is None:
        counts = np.zeros(len(vocab), dtype=np.int64)
        copied.add((which, key))
    else:
        counts = cur[1]
        if (which, key) not in copied:
            counts = counts.copy()
            copied.add((which, key))
    counts[vid] += count
    arrays[key] = (vocab, counts)


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
