"""LeastAllocated: favours nodes with more unrequested capacity (upstream ``leastResourceScorer``).

score = sum(weight * (capacity - requested) * 100 / capacity) / sum(weight), in Go's
int64 arithmetic (which wraps: a node with 8Ei of cpu, 2**63 - 1 millicores, scores 0
for cpu, as upstream); a resource requested beyond capacity scores 0.
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

__all__ = ["LeastAllocated", "least_requested_score"]


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return tdiv(wrap_int64(wrap_int64(capacity - requested) * MAX_NODE_SCORE), capacity)


class LeastAllocated(WeightedMeanStrategy):
    resource_score = staticmethod(least_requested_score)

    def score_vec(self, cols: list[Column], n: int) -> IntArray:
        if dense(cols):
            total = np.zeros(n, dtype=np.int64)
            for i, req, _, cap in cols:
                # req > cap gives a negative quotient, which upstream turns into 0.
                total += np.maximum((cap - req) * MAX_NODE_SCORE // cap, 0) * self.weights[i]
            wsum = sum(self.weights[i] for i, *_ in cols)
            return total // wsum if wsum else total
        node_score = np.zeros(n, dtype=np.int64)
        weight_sum = np.zeros(n, dtype=np.int64)
        for i, req, _, cap in cols:
            w = self.weights[i]
            missing = cap == 0
            s = tdiv_vec((cap - req) * MAX_NODE_SCORE, np.where(missing, 1, cap))
            s[missing | (req > cap)] = 0
            node_score += s * w
            weight_sum += np.where(missing, 0, w)
        return weighted_mean(node_score, weight_sum)
