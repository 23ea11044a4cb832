"""NodeResourcesBalancedAllocation: favours nodes whose resource usage stays balanced.

Per node, the fractions requested/allocatable of the configured resources (capped at
1) give a balance score ``(1 - std) * 100`` (std simplified to ``|f0 - f1| / 2`` for
two resources, 0 for fewer), computed in float64 exactly as upstream. Since
kube-scheduler v1.36 (kubernetes#135573) the plugin scores the *change* of balance
the pod causes: ``50 + (50 + with_pod - without_pod) / 2``; ``SCORE_BALANCE_CHANGE``
selects that formula (False gives the v1.35-and-earlier ``with_pod`` score).
Best-effort pods (no request for any configured resource) skip the plugin in PreScore.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
import numpy.typing as npt

from ...framework.args import EMPTY_IS_DEFAULT, ArgsErrors, KubeArgs, show
from ...framework.cycle_state import CycleState
from ...framework.handle import Handle
from ...framework.interface import PreScorePlugin, ScorePlugin
from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.status import Code, Status
from ...framework.types import NodeInfo, PodInfo
from .. import names
from ..helper import requests_fragment
from .resource_allocation import (
    DEFAULT_RESOURCES,
    MAX_NODE_SCORE,
    Column,
    ResourceAllocationScorer,
    ResourceSpec,
    tdiv,
    tdiv_vec,
)

__all__ = [
    "SCORE_BALANCE_CHANGE",
    "BalancedAllocation",
    "BalancedAllocationArgs",
    "balanced_resource_score",
]

# kube-scheduler >= v1.36 scores the change of balance; False restores the old score.
SCORE_BALANCE_CHANGE = True

_HALF = MAX_NODE_SCORE // 2
# A fraction below 0 (a negative request or allocatable) can make ``(1 - std) * 100``
# any negative size; Go's float-to-int64 conversion of one beyond int64 is platform
# defined. Bounding it here keeps both forms exact wherever the final score can be in
# range (it cannot once this is below -MAX_NODE_SCORE) and the arithmetic after it small.
_FLOOR = -(2**31)

FloatArray = npt.NDArray[np.float64]


class BalancedAllocationArgs(KubeArgs):
    """``NodeResourcesBalancedAllocationArgs``; no resources means cpu and memory."""

    resources: Annotated[tuple[ResourceSpec, ...], EMPTY_IS_DEFAULT] = DEFAULT_RESOURCES

    def validate(self, errs: ArgsErrors) -> None:
        """Upstream ``ValidateNodeResourcesBalancedAllocationArgs``."""
        seen: set[str] = set()
        for i, r in enumerate(self.resources):
            if r.name in seen:
                errs.fail(f"resources[{i}].name", f"Duplicate value: {show(r.name)}")
            else:
                seen.add(r.name)
            if r.weight != 1:
                errs.invalid(f"resources[{i}].weight", r.weight, "must be 1")


def balanced_resource_score(values: Sequence[int], allocatable: Sequence[int]) -> int:
    """``(1 - std(fractions)) * 100`` truncated, over the resources the node has."""
    fractions: list[float] = []
    total = 0.0
    for v, cap in zip(values, allocatable, strict=True):
        if cap == 0:
            continue
        f = float(v) / float(cap)
        if f > 1:
            f = 1.0
        total += f
        fractions.append(f)
    std = 0.0
    n = len(fractions)
    if n == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif n > 2:
        mean = total / float(n)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / float(n))
    return max(int((1 - std) * float(MAX_NODE_SCORE)), _FLOOR)


def _to_score(std: FloatArray) -> IntArray:
    """``(1 - std) * 100`` truncated toward zero, bounded below like the per-node form."""
    out: IntArray = np.maximum((1 - std) * float(MAX_NODE_SCORE), _FLOOR).astype(np.int64)
    return out


def _balanced_vec(values: list[IntArray], caps: list[IntArray], n: int) -> IntArray:
    """``balanced_resource_score`` per row, with the same float64 operations in the same order."""
    if all(bool(c.all()) for c in caps):
        return _balanced_dense(values, caps, n)
    count = np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    fracs: list[tuple[BoolArray, FloatArray]] = []
    for v, cap in zip(values, caps, strict=True):
        valid = cap != 0
        f = v / np.where(valid, cap, 1)  # int64 / int64: both cast to float64, as in Go
        f[f > 1] = 1.0
        f[~valid] = 0.0
        total += f  # adding 0.0 for skipped resources leaves the sum unchanged
        fracs.append((valid, f))
        count += valid
    std = np.zeros(n, dtype=np.float64)
    two = count == 2
    if two.any():
        first = np.zeros(n, dtype=np.float64)
        second = np.zeros(n, dtype=np.float64)
        seen = np.zeros(n, dtype=np.int64)
        for valid, f in fracs:
            first = np.where(valid & (seen == 0), f, first)
            second = np.where(valid & (seen == 1), f, second)
            seen += valid
        std = np.where(two, np.abs((first - second) / 2), std)
    many = count > 2
    if many.any():
        cnt = np.where(many, count, 1).astype(np.float64)
        mean = total / cnt
        acc = np.zeros(n, dtype=np.float64)
        for valid, f in fracs:
            d = f - mean
            acc = np.where(valid, acc + d * d, acc)
        std = np.where(many, np.sqrt(acc / cnt), std)
    return _to_score(std)


def _balanced_dense(values: list[IntArray], caps: list[IntArray], n: int) -> IntArray:
    """``_balanced_vec`` when every row has every resource (the common case)."""
    fracs = [np.minimum(v / cap, 1.0) for v, cap in zip(values, caps, strict=True)]
    k = len(fracs)
    if k < 2:
        return np.full(n, MAX_NODE_SCORE, dtype=np.int64)
    if k == 2:
        std = np.abs((fracs[0] - fracs[1]) / 2)
    else:
        total = fracs[0].copy()
        for f in fracs[1:]:
            total += f
        mean = total / float(k)
        d = fracs[0] - mean
        acc = d * d
        for f in fracs[1:]:
            d = f - mean
            acc += d * d
        std = np.sqrt(acc / float(k))
    return _to_score(std)


class BalancedScorer:
    """The balance strategy over the shared resource-allocation vectors."""

    def score(self, requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
        with_pod = balanced_resource_score(requested, allocatable)
        if not SCORE_BALANCE_CHANGE:
            return with_pod
        without_pod = balanced_resource_score(allocated, allocatable)
        return _HALF + tdiv(_HALF + with_pod - without_pod, 2)

    def score_vec(self, cols: list[Column], n: int) -> IntArray:
        caps = [c[3] for c in cols]
        with_pod = _balanced_vec([c[1] for c in cols], caps, n)
        if not SCORE_BALANCE_CHANGE:
            return with_pod
        without_pod = _balanced_vec([c[2] for c in cols], caps, n)
        return _HALF + tdiv_vec(_HALF + with_pod - without_pod, np.full(n, 2, dtype=np.int64))


class BalancedAllocation(
    PreScorePlugin[BalancedAllocationArgs], ScorePlugin[BalancedAllocationArgs]
):
    """Score plugin (with PreScore) over the node's plain requests, as upstream (useRequested)."""

    name = names.NODE_RESOURCES_BALANCED_ALLOCATION

    def sign_pod(self, pod: PodInfo) -> Any:
        return requests_fragment(pod)

    Args = BalancedAllocationArgs
    args: BalancedAllocationArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.scorer = ResourceAllocationScorer(self.args.resources, True, BalancedScorer())
        self._key = f"{self.name}#{id(self)}"

    def _requests(self, pod: PodInfo) -> tuple[int, ...] | None:
        """The pod's requests per resource, or None for a best-effort pod (cached on the pod)."""
        cached: tuple[tuple[int, ...] | None] | None = pod.cache.get(self._key)
        if cached is None:
            reqs = self.scorer.pod_requests(pod)
            cached = (reqs if any(reqs) else None,)
            pod.cache[self._key] = cached
        return cached[0]

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        if self._requests(pod) is None:
            # Upstream skips best-effort pods so they do not pile onto one node (#129138).
            return Status(Code.SKIP)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        reqs = self._requests(pod)
        if reqs is None:
            return 0
        return self.scorer.score(node, reqs)

    def score_batch(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: IntArray
    ) -> IntArray:
        reqs = self._requests(pod)
        if reqs is None:
            return np.zeros(len(rows), dtype=np.int64)
        return self.scorer.score_rows(snap, rows, reqs)
