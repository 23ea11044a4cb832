"""PreFilter/Filter state of PodTopologySpread (upstream ``filtering.go``).

Per hard constraint the state holds, indexed by the snapshot's value ids of the topology
label (``Snapshot.label_column``), the matching-pod count of every eligible domain and
which domains are eligible, plus the global minimum. Filter is then one lookup per
node, or a few numpy operations over all rows in ``filter_batch``.

The minimum is kept exact under AddPod/RemovePod. Upstream tracks two "critical paths"
instead; both give the same minimum whenever the updates of one state touch a single
node, which is how preemption and nominated pods use them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.types import PodInfo
from ..nodeaffinity import required_node_affinity
from .common import (
    MAX_INT32,
    Constraint,
    CounterCache,
    Layouts,
    taint_ok_mask,
)

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "PRE_FILTER_KEY",
    "DomainCounts",
    "PreFilterState",
    "compute_pre_filter_state",
]

PRE_FILTER_KEY = "PreFilterPodTopologySpread"
ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"


@dataclass(slots=True)
class DomainCounts:
    """One hard constraint's ``TpValueToMatchNum`` and minimum.

    ``counts``/``present`` are indexed by value id and have one extra trailing slot that
    stays 0/False, so rows without the label (id -1) read 0. ``extra`` holds domains
    added later whose value the snapshot's column did not know.
    """

    constraint: Constraint
    ids: npt.NDArray[np.int32]
    vocab: dict[str, int]
    counts: IntArray
    present: BoolArray
    self_match: int
    domains: int = 0
    min: int = MAX_INT32
    extra: dict[str, int] = field(default_factory=dict)
    # every row has the label (``fits`` need not mask the rows without it)
    labelled: bool = False

    def min_match(self) -> int:
        """``minMatchNum``: the global minimum, 0 while fewer than minDomains domains exist."""
        if self.domains < self.constraint.min_domains:
            return 0
        return self.min

    def count_of(self, value: str) -> int:
        vid = self.vocab.get(value)
        if vid is not None and vid < len(self.counts) - 1:
            return int(self.counts[vid])
        return self.extra.get(value, 0)

    def as_dict(self) -> dict[str, int]:
        """The eligible domains and their counts (upstream's map; for tests and debugging)."""
        names = {vid: v for v, vid in self.vocab.items()}
        out = {names[int(i)]: int(self.counts[i]) for i in np.flatnonzero(self.present)}
        out.update(self.extra)
        return out

    def add(self, value: str, delta: int) -> None:
        """``TpValueToMatchNum[v] += delta`` (creating the domain), keeping ``min`` exact."""
        vid = self.vocab.get(value)
        if vid is not None and vid < len(self.counts) - 1:
            was = bool(self.present[vid])
            old = int(self.counts[vid])
            self.counts[vid] = old + delta
            self.present[vid] = True
        else:
            was = value in self.extra
            old = self.extra.get(value, 0)
            self.extra[value] = old + delta
        cur = old + delta
        if not was:
            self.domains += 1
        if cur < self.min:
            self.min = cur
        elif was and old == self.min and cur > old:
            self._recompute_min()

    def _recompute_min(self) -> None:
        vals = self.counts[self.present]
        m = int(vals.min()) if len(vals) else MAX_INT32
        if self.extra:
            m = min(m, *self.extra.values())
        self.min = m

    def clone(self) -> DomainCounts:
        return DomainCounts(
            self.constraint,
            self.ids,
            self.vocab,
            self.counts.copy(),
            self.present.copy(),
            self.self_match,
            self.domains,
            self.min,
            dict(self.extra),
            self.labelled,
        )


@dataclass(slots=True)
class PreFilterState:
    """``preFilterState``: the hard constraints and their domain counts."""

    constraints: tuple[Constraint, ...]
    domains: list[DomainCounts]

    def clone(self) -> PreFilterState:
        return PreFilterState(self.constraints, [d.clone() for d in self.domains])

    def fits(self, snap: Snapshot) -> BoolArray:
        """Filter over every row: has each topology label and stays within maxSkew."""
        mask: BoolArray | None = None
        for d in self.domains:
            ids = d.ids
            limit = d.constraint.max_skew + d.min_match() - d.self_match
            fit = d.counts[ids] <= limit
            if not d.labelled:
                fit &= ids >= 0
            if mask is None:
                mask = fit
            else:
                mask &= fit
        if mask is None:
            return np.ones(snap.n, dtype=np.bool_)
        return mask


def compute_pre_filter_state(
    pod: PodInfo,
    constraints: tuple[Constraint, ...],
    snap: Snapshot,
    counters: CounterCache,
    comparison: bool = False,
    layouts: Layouts | None = None,
) -> PreFilterState:
    """``calPreFilterState`` over all rows at once.

    A row counts for a constraint when its node has every constraint's topology key
    and passes that constraint's node inclusion policies; its domain is then eligible
    even with no matching pod. ``layouts`` keeps what depends on the label columns alone
    (which rows have every key; with no inclusion policy to apply, the eligible domains)
    across cycles.
    """
    if layouts is None:
        layouts = Layouts()
    prep = layouts.prepare(constraints, pod.namespace, counters)
    lay = layouts.get(snap, prep.keys)
    affinity = None
    if prep.honor_affinity:
        affinity = required_node_affinity(pod).mask(snap)
    taints = None
    if prep.honor_taints:
        taints = taint_ok_mask(snap, pod.pod.spec.tolerations, comparison)
    labels = pod.labels
    # None: every row (each has every key)
    base = None if lay.all_have else lay.has_all
    out: list[DomainCounts] = []
    for i, (c, (ids, vocab)) in enumerate(zip(constraints, lay.cols, strict=True)):
        elig = base
        if c.honor_affinity and affinity is not None:
            elig = affinity if elig is None else elig & affinity
        if c.honor_taints and taints is not None:
            elig = taints if elig is None else elig & taints
        per_row = prep.counters[i].counts(snap)
        v = len(vocab)
        counts = np.zeros(v + 1, dtype=np.int64)
        if elig is None:
            counts[:v] = np.bincount(ids, weights=per_row, minlength=v)[:v]
            static, domains = lay.present_values(i)
            present = static.copy()  # AddPod may mark more
        else:
            sel_ids = ids[elig]
            counts[:v] = np.bincount(sel_ids, weights=per_row[elig], minlength=v)[:v]
            present = np.zeros(v + 1, dtype=np.bool_)
            present[:v] = np.bincount(sel_ids, minlength=v)[:v] > 0
            domains = int(present.sum())
        low = int(counts[present].min()) if domains else MAX_INT32
        d = DomainCounts(
            c, ids, vocab, counts, present, 1 if c.selector.matches(labels) else 0, domains, low
        )
        d.labelled = lay.labelled[i]
        out.append(d)
    return PreFilterState(constraints, out)
