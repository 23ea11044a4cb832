"""RequestedToCapacityRatio: a user-shaped function of each resource's utilization.

Upstream ``requestedToCapacityRatioScorer``: shape scores (0..10) are scaled to
0..100, utilization ``requested * 100 / capacity`` (integer, clamped to [0, 100]) is
mapped through ``helper.BuildBrokenLinearFunction`` (integer interpolation, Go
truncation), and the weighted mean of the resources scoring above 0 is rounded half
away from zero. Utilization is always an integer in [0, 100], so both forms read the
function from one 101-entry table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...framework.snapshot import IntArray
from .resource_allocation import MAX_NODE_SCORE, Column, tdiv

__all__ = ["MAX_CUSTOM_PRIORITY_SCORE", "RequestedToCapacityRatio", "broken_linear_function"]

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10
_NO_OVERFLOW = (2**63 - 1) // MAX_UTILIZATION


def broken_linear_function(shape: Sequence[tuple[int, int]], p: int) -> int:
    """``helper.BuildBrokenLinearFunction`` evaluated at ``p``; shape is (utilization, score)."""
    for i, (u, s) in enumerate(shape):
        if p <= u:
            if i == 0:
                return s
            u0, s0 = shape[i - 1]
            return s0 + tdiv((s - s0) * (p - u0), u - u0)
    return shape[-1][1]


def scaled_utilization(requested: int, capacity: int) -> int:
    """``requested * 100 / capacity`` clamped to [0, 100] (upstream ``scaledUtilization``)."""
    if capacity <= 0 or requested <= 0:
        return 0
    if requested >= capacity:
        return MAX_UTILIZATION
    return requested * MAX_UTILIZATION // capacity


class RequestedToCapacityRatio:
    def __init__(self, weights: Sequence[int], shape: Sequence[tuple[int, int]]) -> None:
        self.weights = tuple(weights)
        scaled = [(u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]
        self.table = np.array(
            [broken_linear_function(scaled, p) for p in range(MAX_UTILIZATION + 1)], dtype=np.int64
        )
        self._table = [int(v) for v in self.table]

    def resource_score(self, requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return self._table[MAX_UTILIZATION]
        return self._table[scaled_utilization(requested, capacity)]

    def score(self, requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, w in enumerate(self.weights):
            cap = allocatable[i]
            if cap == 0:
                continue
            s = self.resource_score(requested[i], cap)
            if s > 0:
                node_score += s * w
                weight_sum += w
        if weight_sum == 0:
            return 0
        # int64(math.Round(float64(nodeScore) / float64(weightSum))): half away from
        # zero; exact in integers since both are small and non-negative.
        return (2 * node_score + weight_sum) // (2 * weight_sum)

    def score_vec(self, cols: list[Column], n: int) -> IntArray:
        node_score = np.zeros(n, dtype=np.int64)
        weight_sum = np.zeros(n, dtype=np.int64)
        for i, req, _, cap in cols:
            w = self.weights[i]
            over = req > cap
            if len(req) and int(req.max()) > _NO_OVERFLOW:
                # requested * 100 would overflow int64: use exact Python ints, as
                # upstream uses a 128-bit product.
                pairs = zip(req.tolist(), cap.tolist(), strict=True)
                util = np.fromiter(
                    (scaled_utilization(r, c) for r, c in pairs), dtype=np.int64, count=len(req)
                )
            else:
                safe = np.where(cap > 0, cap, 1)
                util = np.minimum(np.maximum(req, 0) * MAX_UTILIZATION // safe, MAX_UTILIZATION)
                util[(cap <= 0) | (req <= 0)] = 0
            util[over] = MAX_UTILIZATION
            s = self.table[util]
            counted = (s > 0) & (cap != 0)
            node_score += np.where(counted, s * w, 0)
            weight_sum += np.where(counted, w, 0)
        none = weight_sum == 0
        out = (2 * node_score + weight_sum) // np.where(none, 1, 2 * weight_sum)
        out[none] = 0
        return out
