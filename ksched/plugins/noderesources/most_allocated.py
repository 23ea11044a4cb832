"""MostAllocated: favours nodes with more requested capacity (upstream ``mostResourceScorer``).

score = sum(weight * requested * 100 / capacity) / sum(weight), in Go's int64
arithmetic (which wraps); requests beyond capacity (possible through non-zero defaults)
count as exactly full.
"""

from __future__ import annotations

import numpy as np

from ...api.quantity import wrap_int64
from ...framework.snapshot import IntArray
from .resource_allocation import (
    MAX_NODE_SCORE,
    Column,
    WeightedMeanStrategy,
    dense,
    tdiv,
    tdiv_vec,
    weighted_mean,
)

__all__ = ["MostAllocated", "most_requested_score"]


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    if requested > capacity:
        requested = capacity
    return tdiv(wrap_int64(requested * MAX_NODE_SCORE), capacity)


class MostAllocated(WeightedMeanStrategy):
    resource_score = staticmethod(most_requested_score)

    def score_vec(self, cols: list[Column], n: int) -> IntArray:
        if dense(cols):
            total = np.zeros(n, dtype=np.int64)
            for i, req, _, cap in cols:
                total += np.minimum(req, cap) * MAX_NODE_SCORE // cap * self.weights[i]
            wsum = sum(self.weights[i] for i, *_ in cols)
            return total // wsum if wsum else total
        node_score = np.zeros(n, dtype=np.int64)
        weight_sum = np.zeros(n, dtype=np.int64)
        for i, req, _, cap in cols:
            w = self.weights[i]
            missing = cap == 0
            s = tdiv_vec(np.minimum(req, cap) * MAX_NODE_SCORE, np.where(missing, 1, cap))
            s[missing] = 0
            node_score += s * w
            weight_sum += np.where(missing, 0, w)
        return weighted_mean(node_score, weight_sum)
