"""InterPodAffinity PreScore/Score/NormalizeScore (upstream ``interpodaffinity/scoring.go``).

A node's raw score sums, over the topology domains it is in, the weights of:
the incoming pod's preferred affinity (+) and anti-affinity (-) terms matched by
existing pods there; existing pods' required affinity terms matched by the incoming
pod (``hardPodAffinityWeight``); and existing pods' preferred affinity (+) and
anti-affinity (-) terms matched by the incoming pod. NormalizeScore maps [min, max]
of the scored nodes onto [0, 100] in float64 as upstream.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...api.objects import Pod
from ...framework.interface import MAX_NODE_SCORE
from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.status import Code, Status
from ...framework.types import NodeInfo, PodInfo
from .. import names
from ..helper import RowArray
from .index import ClusterIndex, RowCounts
from .terms import NamespaceLabels, incoming_terms

__all__ = [
    "PRE_SCORE_STATE_KEY",
    "PreScoreState",
    "compute_pre_score",
    "has_preferred_terms",
    "normalize",
    "score_node",
    "score_rows",
]

PRE_SCORE_STATE_KEY = "PreScore" + names.INTER_POD_AFFINITY


class PreScoreState:
    """``preScoreState.topologyScore`` by key, as sums by label-value id, plus row scores."""

    __slots__ = ("row_scores", "snap", "topology_score")

    def __init__(
        self,
        topology_score: dict[str, tuple[dict[str, int], IntArray]],
        snap: Snapshot,
        row_scores: IntArray,
    ) -> None:
        self.topology_score = topology_score
        self.snap = snap
        self.row_scores = row_scores

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as upstream


def has_preferred_terms(pod: Pod) -> bool:
    a = pod.spec.affinity
    if a is None:
        return False
    pa, pn = a.pod_affinity, a.pod_anti_affinity
    return bool(
        (pa is not None and pa.preferred_during_scheduling_ignored_during_execution)
        or (pn is not None and pn.preferred_during_scheduling_ignored_during_execution)
    )


def compute_pre_score(
    index: ClusterIndex,
    snap: Snapshot,
    pod: PodInfo,
    namespaces: NamespaceLabels,
    hard_pod_affinity_weight: int,
    ignore_preferred_terms_of_existing_pods: bool,
    token: object = None,
    v136_namespace_selectors: bool = False,
) -> tuple[PreScoreState | None, Status | None]:
    """Skip when no existing pod contributes anywhere (upstream's empty topologyScore).
    ``v136_namespace_selectors``: as in ``compute_pre_filter``."""
    has_constraints = has_preferred_terms(pod.pod)
    if ignore_preferred_terms_of_existing_pods and not has_constraints:
        return None, Status(Code.SKIP)
    terms = incoming_terms(pod, v136_namespace_selectors)
    if terms.error:
        return None, Status(Code.ERROR, f"failed to parse pod: {terms.error}")
    index.sync(snap, token)
    if (
        not terms.preferred_affinity
        and not terms.preferred_anti_affinity
        and not index.preferred
        and (hard_pod_affinity_weight <= 0 or not index.required_affinity)
    ):
        return None, Status(Code.SKIP)  # nothing below could add a weight
    n = snap.n
    weights: dict[str, IntArray] = {}
    touched: dict[str, BoolArray] = {}

    def add(key: str, rows: RowCounts, weight: int) -> None:
        w = weights.get(key)
        if w is None:
            w = weights[key] = np.zeros(n, dtype=np.int64)
            touched[key] = np.zeros(n, dtype=np.bool_)
        rows.add_into(w, weight)
        rows.mark(touched[key])

    # only the incoming pod's own preferred terms read the existing pods' signatures
    groups = (
        index.signature_groups()
        if terms.preferred_affinity or terms.preferred_anti_affinity
        else ()
    )
    for t, weight in terms.preferred_affinity:
        for g in groups:
            if t.matches(g.namespace, g.labels, namespaces):
                add(t.topology_key, g, weight)
    for t, weight in terms.preferred_anti_affinity:
        for g in groups:
            if t.matches(g.namespace, g.labels, namespaces):
                add(t.topology_key, g, -weight)
    ns, labels = pod.namespace, pod.labels
    if hard_pod_affinity_weight > 0:
        for t, rows in index.required_affinity.items():
            if t.matches(ns, labels, namespaces):
                add(t.topology_key, rows, hard_pod_affinity_weight)
    for (t, weight), rows in index.preferred.items():
        if t.matches(ns, labels, namespaces):
            add(t.topology_key, rows, weight)

    topology_score: dict[str, tuple[dict[str, int], IntArray]] = {}
    row_scores = np.zeros(n, dtype=np.int64)
    for key, w in weights.items():
        ids, vocab = snap.label_column(key)
        has = ids >= 0
        # Upstream creates a domain entry only for a matching pod on a node with the key.
        if not (touched[key] & has).any():
            continue
        sums = np.rint(np.bincount(ids[has], weights=w[has], minlength=len(vocab)))
        by_value = sums.astype(np.int64)
        topology_score[key] = (vocab, by_value)
        lut = np.zeros(len(vocab) + 1, dtype=np.int64)
        lut[: len(by_value)] = by_value
        row_scores += lut[ids]
    if not topology_score:
        return None, Status(Code.SKIP)
    return PreScoreState(topology_score, snap, row_scores), None


def score_node(s: PreScoreState, node: NodeInfo) -> int:
    labels: Mapping[str, str] = node.node.metadata.labels if node.node is not None else {}
    total = 0
    for key, (vocab, by_value) in s.topology_score.items():
        value = labels.get(key)
        if value is None:
            continue
        vid = vocab.get(value)
        if vid is not None and vid < len(by_value):
            total += int(by_value[vid])
    return total


def score_rows(s: PreScoreState, snap: Snapshot, rows: RowArray) -> IntArray:
    if snap is s.snap and len(s.row_scores) == snap.n:
        return s.row_scores[rows]
    infos = snap.node_infos
    return np.fromiter(
        (score_node(s, infos[int(r)]) for r in rows), dtype=np.int64, count=len(rows)
    )


def normalize(s: PreScoreState, scores: IntArray) -> None:
    """``NormalizeScore``: ``int64(100 * float64(s-min) / float64(max-min))``, 0 if flat."""
    if not s.topology_score or len(scores) == 0:
        return
    lo, hi = int(scores.min()), int(scores.max())
    diff = hi - lo
    if diff <= 0:
        scores[:] = 0
        return
    frac = (scores - lo).astype(np.float64) / np.float64(diff)
    scores[:] = (np.float64(MAX_NODE_SCORE) * frac).astype(np.int64)
