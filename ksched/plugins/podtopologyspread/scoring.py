"""PreScore/Score/NormalizeScore state of PodTopologySpread (upstream ``scoring.go``).

Scores are float sums rounded with Go's ``math.Round``; the topology weight uses a port
of Go's ``math.Log`` (the amd64 kube-scheduler's algorithm), which differs from libm in
the last bit for some inputs (log(3) among them), so raw scores match bit for bit.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.types import NodeInfo, PodInfo
from ..nodeaffinity import required_node_affinity
from .common import Constraint, CounterCache, Layouts, count_pods, taint_ok_mask

__all__ = [
    "PRE_SCORE_KEY",
    "PreScoreState",
    "compute_pre_score_state",
    "go_log",
    "go_round",
    "normalize",
    "topology_normalizing_weight",
]

PRE_SCORE_KEY = "PreScorePodTopologySpread"
FloatArray = npt.NDArray[np.float64]

_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_L1 = 6.666666666666735130e-01
_L2 = 3.999999999940941908e-01
_L3 = 2.857142874366239149e-01
_L4 = 2.222219843214978396e-01
_L5 = 1.818357216161805012e-01
_L6 = 1.531383769920937332e-01
_L7 = 1.479819860511658591e-01
_SQRT2_HALF = math.sqrt(2) / 2


def go_log(x: float) -> float:
    """Go's ``math.Log`` for finite x > 0 (FreeBSD ``e_log.c``, as Go computes it)."""
    f1, ki = math.frexp(x)
    if f1 < _SQRT2_HALF:
        f1 *= 2
        ki -= 1
    f = f1 - 1
    k = float(ki)
    s = f / (2 + f)
    s2 = s * s
    s4 = s2 * s2
    t1 = s2 * (_L1 + s4 * (_L3 + s4 * (_L5 + s4 * _L7)))
    t2 = s4 * (_L2 + s4 * (_L4 + s4 * _L6))
    r = t1 + t2
    hfsq = 0.5 * f * f
    return k * _LN2_HI - ((hfsq - (s * (hfsq + r) + k * _LN2_LO)) - f)


@functools.lru_cache(maxsize=4096)
def topology_normalizing_weight(size: int) -> float:
    """``topologyNormalizingWeight``: log(size + 2), so small topologies weigh less
    (memoised: a handful of sizes recur every cycle)."""
    return go_log(float(size + 2))


def go_round(x: float) -> int:
    """Go's ``math.Round``: half away from zero."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += 1 if x > 0 else -1
    return int(t)


def _go_round_vec(x: FloatArray) -> IntArray:
    t = np.trunc(x)
    t = t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0.0)
    return t.astype(np.int64)


@dataclass(slots=True)
class SoftDomains:
    """One soft constraint: pod counts per topology value (non-hostname) and its weight."""

    constraint: Constraint
    ids: npt.NDArray[np.int32]
    vocab: dict[str, int]
    weight: float
    # Non-hostname keys: value slot per row (rows without the label share the "" slot)
    # and the count per slot over all nodes. Hostname keys: counts per row instead.
    slots: IntArray | None
    totals: IntArray | None
    tracked: BoolArray | None
    row_counts: IntArray | None
    # Non-hostname keys, for ``score_rows``: each slot's term and a trailing 0.0, and per
    # row the slot to read (the trailing one where the node lacks the label).
    table: FloatArray | None = None
    gather: npt.NDArray[np.intp] | None = None
    # Hostname keys: every row has the label (no masking needed).
    labelled: bool = False

    def as_dict(self) -> dict[str, int]:
        """Counted topology values and their pod counts (upstream's TopologyValueToPodCounts
        entry; empty for hostname keys, counted per node at Score)."""
        if self.totals is None or self.tracked is None:
            return {}
        names = {vid: v for v, vid in self.vocab.items()}
        return {names.get(int(i), ""): int(self.totals[i]) for i in np.flatnonzero(self.tracked)}

    def term(self, count: int) -> float:
        """``scoreForCount``: weighted count plus maxSkew-1 to water down small skews."""
        return float(count) * self.weight + float(self.constraint.max_skew - 1)


@dataclass(slots=True)
class PreScoreState:
    """``preScoreState``; ``ignored`` is aligned with the nodes PreScore was given."""

    constraints: tuple[Constraint, ...]
    namespace: str
    require_all: bool
    has_all: BoolArray
    ignored: BoolArray
    domains: list[SoftDomains]
    # Some row lacks a topology key while ``require_all`` (else ``has_all`` needs no look).
    partial: bool = True
    any_ignored: bool = True

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore, as upstream

    def score_node(self, node: NodeInfo) -> int:
        """``Score`` for one node, from its labels and pods."""
        labels = node.node.metadata.labels if node.node is not None else {}
        if self.require_all and not all(c.topology_key in labels for c in self.constraints):
            return 0
        score = 0.0
        for d in self.domains:
            value = labels.get(d.constraint.topology_key)
            if value is None:
                continue
            if d.totals is None:
                cnt = count_pods(node.pods, d.constraint.selector, self.namespace)
            else:
                vid = d.vocab.get(value)
                cnt = int(d.totals[vid]) if vid is not None and vid < len(d.totals) else 0
            score += d.term(cnt)
        return go_round(score)

    def score_rows(self, rows: npt.NDArray[np.intp]) -> IntArray:
        """``Score`` for snapshot rows at once: the same float operations in the same order
        as ``score_node`` (a node lacking a key adds 0.0, which leaves a sum >= 0 as is)."""
        score: FloatArray | None = None
        for d in self.domains:
            term: FloatArray
            if d.table is not None and d.gather is not None:
                term = d.table[d.gather[rows]]
            else:
                assert d.row_counts is not None
                term = d.row_counts[rows].astype(np.float64) * d.weight + float(
                    d.constraint.max_skew - 1
                )
                if not d.labelled:
                    term = np.where(d.ids[rows] >= 0, term, 0.0)
            score = term if score is None else score + term
        if score is None:
            score = np.zeros(len(rows), dtype=np.float64)
        out = _go_round_vec(score)
        if self.require_all and self.partial:
            out[~self.has_all[rows]] = 0
        return out


def compute_pre_score_state(
    pod: PodInfo,
    constraints: tuple[Constraint, ...],
    snap: Snapshot,
    rows: npt.NDArray[np.intp],
    require_all: bool,
    counters: CounterCache,
    comparison: bool = False,
    layouts: Layouts | None = None,
) -> PreScoreState:
    """``initPreScoreState`` plus PreScore's count over all nodes, vectorised.

    ``rows`` are the filtered nodes. A filtered node missing a topology key is ignored
    (when ``require_all``); each non-hostname constraint's weight comes from how many
    values its key takes on the other filtered nodes, and only those values are counted,
    over every node that has all keys and passes the constraint's inclusion policies.
    ``layouts`` keeps what depends on the label columns alone across cycles.
    """
    if layouts is None:
        layouts = Layouts()
    prep = layouts.prepare(constraints, pod.namespace, counters)
    lay = layouts.get(snap, prep.keys)
    has_all = lay.has_all
    partial = not lay.all_have
    if require_all and partial:
        ignored = ~has_all[rows]
        kept = rows[~ignored]
        any_ignored = bool(ignored.any())
        base: BoolArray | None = has_all
    else:
        ignored = np.zeros(len(rows), dtype=np.bool_)
        kept = rows
        any_ignored = False
        base = None  # every row
    affinity = None
    if prep.honor_affinity:
        affinity = required_node_affinity(pod).mask(snap)
    taints = None
    if prep.honor_taints:
        taints = taint_ok_mask(snap, pod.pod.spec.tolerations, comparison)
    out: list[SoftDomains] = []
    for i, (c, (ids, vocab)) in enumerate(zip(constraints, lay.cols, strict=True)):
        per_row = prep.counters[i].counts(snap)
        got = lay.slots[i]
        if got is None:
            weight = topology_normalizing_weight(len(kept))
            out.append(
                SoftDomains(
                    c, ids, vocab, weight, None, None, None, per_row, labelled=lay.labelled[i]
                )
            )
            continue
        slots, gather = got
        v = len(vocab)
        tracked = np.zeros(v + 1, dtype=np.bool_)
        tracked[slots[kept]] = True
        weight = topology_normalizing_weight(int(np.count_nonzero(tracked)))
        incl = base
        if c.honor_affinity and affinity is not None:
            incl = affinity if incl is None else incl & affinity
        if c.honor_taints and taints is not None:
            incl = taints if incl is None else incl & taints
        if incl is None:
            counted = np.bincount(slots, weights=per_row, minlength=v + 1)
        else:
            counted = np.bincount(slots[incl], weights=per_row[incl], minlength=v + 1)
        totals = (counted[: v + 1] * tracked).astype(np.int64)
        table = np.empty(v + 2, dtype=np.float64)
        table[: v + 1] = totals * weight + float(c.max_skew - 1)
        table[v + 1] = 0.0
        out.append(
            SoftDomains(
                c, ids, vocab, weight, slots, totals, tracked, None, table, gather, lay.labelled[i]
            )
        )
    return PreScoreState(
        constraints, pod.namespace, require_all, has_all, ignored, out, partial, any_ignored
    )


def normalize(s: PreScoreState, scores: IntArray) -> None:
    """``NormalizeScore`` in place: 100 * (max + min - score) / max over non-ignored nodes."""
    ignored = s.ignored
    if len(ignored) != len(scores):
        raise ValueError(f"{len(scores)} scores for the {len(ignored)} nodes of PreScore")
    if not s.any_ignored:
        low = int(scores.min()) if len(scores) else 0
        high = max(int(scores.max()), 0) if len(scores) else 0
        if high == 0:
            scores[:] = 100
        else:
            scores[:] = 100 * (high + low - scores) // high
        return
    valid = ~ignored
    if not valid.any():
        scores[:] = 0
        return
    vals = scores[valid]
    low = int(vals.min())
    high = max(int(vals.max()), 0)
    if high == 0:
        scores[valid] = 100
    else:
        scores[valid] = 100 * (high + low - vals) // high
    scores[ignored] = 0
