"""The resource-allocation scorer shared by NodeResourcesFit and BalancedAllocation.

Mirrors upstream ``resourceAllocationScorer``: for every configured resource take the
node's allocatable, what the node already has requested ("allocated") and that plus
the pod's request ("requested"); a resource the node does not have (allocatable 0), or
an extended resource the pod does not ask for, is left out. A strategy turns the three
vectors into a score. The per-node and the batch (numpy) forms share each formula,
so they agree bit for bit; Go's truncating integer division is reproduced exactly, and
so is its int64 arithmetic, which wraps round (numpy's int64 does the same; the
per-node forms wrap with ``wrap_int64``). Where that gives a score outside
0..MAX_NODE_SCORE (only with amounts near the int64 bounds or negative ones), upstream
fails the cycle with "invalid score"; ksched clamps it into range instead.

Also holds what the two plugins' args have in common: ``ResourceSpec`` and the default
resources (cpu and memory, weight 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Protocol

import numpy as np

from ...api.quantity import INT64_MAX, wrap_int64
from ...api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource
from ...framework.args import EMPTY_IS_DEFAULT, ArgsErrors, KubeArgs
from ...framework.snapshot import IntArray, RowCache, Snapshot
from ...framework.types import NodeInfo, PodInfo

__all__ = [
    "DEFAULT_RESOURCES",
    "ArgsErrors",
    "Column",
    "ResourceAllocationScorer",
    "ResourceSpec",
    "Strategy",
    "WeightedMeanStrategy",
    "clamp_score",
    "clamp_scores",
    "dense",
    "tdiv",
    "tdiv_vec",
    "weighted_mean",
]

MAX_NODE_SCORE = 100

_KIND_CPU, _KIND_MEMORY, _KIND_EPH, _KIND_SCALAR, _KIND_NONE = range(5)


class ResourceSpec(KubeArgs):
    """One resource a scoring strategy looks at, with its weight (``config.ResourceSpec``);
    a weight of 0 is defaulted to 1, as upstream's v1 defaulting does."""

    name: str = ""
    weight: Annotated[int, EMPTY_IS_DEFAULT] = 1


# One considered resource in the batch form: (index into the configured resources,
# requested = allocated + pod request, allocated, allocatable), one entry per row.
Column = tuple[int, IntArray, IntArray, IntArray]


def tdiv(a: int, b: int) -> int:
    """Go's int64 division (truncates toward zero; Python's ``//`` floors), wrapped:
    ``MinInt64 / -1`` is ``MinInt64``."""
    q = abs(a) // abs(b)
    return wrap_int64(q if (a < 0) == (b < 0) else -q)


def tdiv_vec(a: IntArray, b: IntArray) -> IntArray:
    """``tdiv`` over arrays; ``b`` must be non-zero. Takes the floor path when all signs agree."""
    if a.size == 0 or (int(a.min()) >= 0 and int(b.min()) > 0):
        return a // b
    with np.errstate(over="ignore"):  # MinInt64 // -1 wraps to MinInt64, as in Go
        q = a // b
        inexact = a % b != 0
    # Floor and truncation differ by one where the division is inexact and signs differ.
    out: IntArray = q + (inexact & ((a < 0) != (b < 0)))
    return out


def weighted_mean(node_score: IntArray, weight_sum: IntArray) -> IntArray:
    """``nodeScore / weightSum`` per row, 0 where no resource counted."""
    none = weight_sum == 0
    out = tdiv_vec(node_score, np.where(none, 1, weight_sum))
    out[none] = 0
    return out


# Below this, ``x * MAX_NODE_SCORE`` cannot overflow int64.
NO_OVERFLOW = INT64_MAX // MAX_NODE_SCORE


def dense(cols: list[Column]) -> bool:
    """Whether every row has every considered resource, nothing is negative and nothing
    is large enough for ``* MAX_NODE_SCORE`` to overflow, so that floor division is Go's
    division, no row needs skipping and nothing wraps."""
    return all(
        len(cap) == 0
        or (
            int(cap.min()) > 0
            and int(req.min()) >= 0
            and int(cap.max()) <= NO_OVERFLOW
            and int(req.max()) <= NO_OVERFLOW
        )
        for _, req, _, cap in cols
    )


def clamp_score(score: int) -> int:
    """A node score forced into 0..MAX_NODE_SCORE (see the module docstring)."""
    return 0 if score < 0 else MAX_NODE_SCORE if score > MAX_NODE_SCORE else score


def clamp_scores(scores: IntArray) -> IntArray:
    """``clamp_score`` per row."""
    if scores.size and (int(scores.min()) < 0 or int(scores.max()) > MAX_NODE_SCORE):
        return np.clip(scores, 0, MAX_NODE_SCORE)
    return scores


class Strategy(Protocol):
    """Turns per-resource (requested, allocated, allocatable) into a node score.

    Resources with allocatable 0 are to be ignored (upstream skips them the same way).
    """

    def score(self, requested: list[int], allocated: list[int], allocatable: list[int]) -> int: ...

    def score_vec(self, cols: list[Column], n: int) -> IntArray: ...


class WeightedMeanStrategy:
    """A strategy that scores each resource on its own and takes the weighted mean over
    the resources the node has, in Go's int64 arithmetic: upstream's
    ``leastResourceScorer`` and ``mostResourceScorer``, which differ only in
    ``resource_score``."""

    def __init__(self, weights: Sequence[int]) -> None:
        self.weights = tuple(weights)

    @staticmethod
    def resource_score(requested: int, capacity: int) -> int:
        raise NotImplementedError

    def score(self, requested: list[int], allocated: list[int], allocatable: list[int]) -> int:
        node_score = weight_sum = 0
        for i, w in enumerate(self.weights):
            cap = allocatable[i]
            if cap == 0:
                continue
            node_score = wrap_int64(node_score + self.resource_score(requested[i], cap) * w)
            weight_sum += w
        return 0 if weight_sum == 0 else tdiv(node_score, weight_sum)


def _kind(name: str) -> int:
    if name == CPU:
        return _KIND_CPU
    if name == MEMORY:
        return _KIND_MEMORY
    if name == EPHEMERAL_STORAGE:
        return _KIND_EPH
    # Upstream's default branch only finds names in ScalarResources, which only ever
    # holds scalar resource names: anything else (pods, storage, ...) scores nothing.
    return _KIND_SCALAR if is_scalar_resource(name) else _KIND_NONE


class ResourceAllocationScorer:
    """Upstream ``resourceAllocationScorer`` with a per-node and a batch form.

    ``use_requested`` picks the node's plain requests for cpu/memory (BalancedAllocation)
    instead of the non-zero-defaulted ones (NodeResourcesFit), and likewise the pod's.
    """

    def __init__(
        self, resources: Sequence[ResourceSpec], use_requested: bool, strategy: Strategy
    ) -> None:
        self.resources = tuple(resources)
        self.use_requested = use_requested
        self.strategy = strategy
        self._kinds = tuple(_kind(r.name) for r in self.resources)
        # Scores of every row per distinct pod request, updated row by row as nodes
        # change: replicas pay one gather per cycle.
        self._columns: RowCache[tuple[int, ...]] = RowCache(self._score_all, self._score_row)

    # -- the pod side (calculatePodResourceRequestList) --------------------------------
    def pod_requests(self, pod: PodInfo) -> tuple[int, ...]:
        """The pod's request per configured resource, as upstream computes it for scoring."""
        r = pod.requests
        out: list[int] = []
        for spec, kind in zip(self.resources, self._kinds, strict=True):
            if kind == _KIND_CPU:
                out.append(r.milli_cpu if self.use_requested else pod.score_cpu)
            elif kind == _KIND_MEMORY:
                out.append(r.memory if self.use_requested else pod.score_mem)
            elif kind == _KIND_EPH:
                out.append(r.ephemeral_storage)
            elif kind == _KIND_SCALAR:
                out.append(r.scalar.get(spec.name, 0))
            else:
                out.append(0)
        return tuple(out)

    def _check(self) -> None:
        if not self.resources:
            # Upstream returns an Error status "resources not found".
            raise ValueError("resources not found")

    # -- per node (score / calculateResourceAllocatableRequest) --------------------------
    def score(self, ni: NodeInfo, pod_requests: Sequence[int]) -> int:
        self._check()
        requested, allocated, allocatable = self.node_amounts(ni, pod_requests)
        return clamp_score(self.strategy.score(requested, allocated, allocatable))

    def node_amounts(
        self, ni: NodeInfo, pod_requests: Sequence[int]
    ) -> tuple[list[int], list[int], list[int]]:
        """Per configured resource: requested (allocated plus the pod's), allocated and
        allocatable on ``ni``; all 0 for a resource left out (upstream's
        ``calculateNodeAllocatableRequest``)."""
        n = len(self.resources)
        requested = [0] * n
        allocated = [0] * n
        allocatable = [0] * n
        alloc_res = ni.allocatable
        node_req = ni.requested
        base = node_req if self.use_requested else ni.non_zero_requested
        for i, kind in enumerate(self._kinds):
            pr = pod_requests[i]
            if kind == _KIND_CPU:
                a, used = alloc_res.milli_cpu, base.milli_cpu
            elif kind == _KIND_MEMORY:
                a, used = alloc_res.memory, base.memory
            elif kind == _KIND_EPH:
                a, used = alloc_res.ephemeral_storage, node_req.ephemeral_storage
            elif kind == _KIND_SCALAR and pr != 0:
                name = self.resources[i].name
                a = alloc_res.scalar.get(name, 0)
                used = node_req.scalar.get(name, 0)
            else:
                continue
            if a == 0:
                continue
            allocatable[i] = a
            allocated[i] = used
            requested[i] = wrap_int64(used + pr)
        return requested, allocated, allocatable

    # -- a pod group's placement (scorePlacement) ----------------------------------------
    def placement_score(self, pods: Iterable[PodInfo], nodes: Iterable[NodeInfo]) -> int:
        """The placement as one big node: the pods' requests plus everything the nodes
        already have requested, against their summed allocatable.

        As upstream, each node's amounts are taken with the running total so far standing
        in for the pod's request, which only matters for extended resources: one the pods
        do not ask for stays out on every node."""
        n = len(self.resources)
        requested = [0] * n
        for pod in pods:
            for i, r in enumerate(self.pod_requests(pod)):
                requested[i] = wrap_int64(requested[i] + r)
        allocated = [0] * n
        allocatable = [0] * n
        for ni in nodes:
            _, used, cap = self.node_amounts(ni, requested)
            for i in range(n):
                allocatable[i] = wrap_int64(allocatable[i] + cap[i])
                allocated[i] = wrap_int64(allocated[i] + used[i])
                requested[i] = wrap_int64(requested[i] + used[i])
        return clamp_score(self.strategy.score(requested, allocated, allocatable))

    # -- batch ---------------------------------------------------------------------------
    def columns(self, snap: Snapshot, rows: IntArray, pod_requests: Sequence[int]) -> list[Column]:
        """Columns of the considered resources for ``rows`` (ones skipped on all rows left out)."""
        cols: list[Column] = []
        ur = self.use_requested
        for i, kind in enumerate(self._kinds):
            pr = pod_requests[i]
            if kind == _KIND_CPU:
                alloc = snap.alloc_cpu[rows]
                used = (snap.req_cpu if ur else snap.nz_cpu)[rows]
            elif kind == _KIND_MEMORY:
                alloc = snap.alloc_mem[rows]
                used = (snap.req_mem if ur else snap.nz_mem)[rows]
            elif kind == _KIND_EPH:
                alloc = snap.alloc_eph[rows]
                used = snap.req_eph[rows]
            elif kind == _KIND_SCALAR and pr != 0:
                a_col, r_col = snap.scalar_columns(self.resources[i].name)
                alloc = a_col[rows]
                used = r_col[rows]
            else:
                continue
            cols.append((i, used + pr if pr else used, used, alloc))
        return cols

    def score_rows(self, snap: Snapshot, rows: IntArray, pod_requests: Sequence[int]) -> IntArray:
        self._check()
        out: IntArray = self._columns.get(snap, tuple(pod_requests))[rows]
        return out

    def _score_all(self, snap: Snapshot, pod_requests: tuple[int, ...]) -> IntArray:
        rows = snap.all_rows
        cols = self.columns(snap, rows, pod_requests)
        return clamp_scores(self.strategy.score_vec(cols, len(rows)))

    def _score_row(self, snap: Snapshot, i: int, pod_requests: tuple[int, ...]) -> int:
        return self.score(snap.node_infos[i], pod_requests)


DEFAULT_RESOURCES: tuple[ResourceSpec, ...] = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))
