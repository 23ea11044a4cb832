"""Which nodes a scheduling cycle considers and picks: the one node-selection routine.

Upstream's ``findNodesThatPassFilters`` stops after ``numFeasibleNodesToFind`` feasible
nodes, walking the nodes round-robin from ``nextStartNodeIndex``, which then moves past
the nodes it went through; ``selectHost`` picks a highest total among them. The full
cycle (``Framework.find_feasible``) and the equivalence cache's answer
(``scheduler.cycle_cache``) both choose their nodes here, so the cache cannot pick a
different node set or move the start index differently than the full cycle would.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .cycle_state import CycleState
from .snapshot import BoolArray, IntArray

if TYPE_CHECKING:
    from .snapshot import Snapshot
    from .types import PodInfo

__all__ = [
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "BatchMetrics",
    "EquivalenceCache",
    "KnownResults",
    "NodeRotation",
    "first_in_rotation",
    "num_feasible_nodes_to_find",
    "passing_in_rotation",
    "select_host",
]

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5

Rows = np.ndarray[Any, np.dtype[np.intp]]


def num_feasible_nodes_to_find(
    percentage: int | None, global_percentage: int | None, num_all: int
) -> int:
    """How many feasible nodes are enough (the profile's percentage, else the global one).

    Adaptive: 50 - nodes/125 percent, at least 5 %, and never fewer than 100 nodes.
    """
    if num_all < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all
    pct = percentage if percentage is not None else (global_percentage or 0)
    if pct == 0:
        pct = 50 - num_all // 125
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND:
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND
    n = num_all * pct // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


class NodeRotation:
    """Upstream's ``nextStartNodeIndex``: where the next cycle's round-robin walk starts.

    ``advance`` is the only place it moves. A dry run (``/debug/explain``) works on a
    ``copy`` so that it leaves the scheduler's next decision unchanged.
    """

    __slots__ = ("next_start",)

    def __init__(self, next_start: int = 0) -> None:
        self.next_start = next_start

    def advance(self, processed: int, num_all: int) -> None:
        """Move past the ``processed`` nodes of the ``num_all`` in the snapshot."""
        if num_all:
            self.next_start = (self.next_start + processed) % num_all

    def copy(self) -> NodeRotation:
        return NodeRotation(self.next_start)


def first_in_rotation(rows: Rows, start: int, n: int, num_to_find: int) -> tuple[Rows, int]:
    """The first ``num_to_find`` of the sorted feasible ``rows`` in round-robin order from
    ``start`` (of ``n`` rows), and how many rows that order went through to find them."""
    total = len(rows)
    k = int(np.searchsorted(rows, start)) if start else 0
    if total > num_to_find:
        if total - k >= num_to_find:
            feasible = rows[k : k + num_to_find]
        else:
            feasible = np.concatenate((rows[k:], rows[: num_to_find - (total - k)]))
        return feasible, (int(feasible[-1]) - start) % n + 1
    return (np.concatenate((rows[k:], rows[:k])) if k else rows), n


def passing_in_rotation(
    passing: BoolArray, start: int, n: int, num_to_find: int
) -> tuple[Rows, int]:
    """The feasible nodes a cycle takes when every snapshot row's verdict is known
    (``passing``, indexed by row): ``first_in_rotation`` over the rows that pass."""
    return first_in_rotation(np.flatnonzero(passing), start, n, num_to_find)


def select_host(totals: np.ndarray[Any, Any], rng: random.Random) -> int:
    """Index of a highest total; ties broken uniformly at random.

    Equivalent in distribution to upstream's reservoir sampling over the tied
    nodes, with one random draw instead of one per tie.
    """
    best = totals.max()
    ties = np.flatnonzero(totals == best)
    if len(ties) == 1:
        return int(ties[0])
    return int(ties[rng.randrange(len(ties))])


@dataclass(slots=True)
class KnownResults:
    """Every snapshot row's Filter verdict and raw scores for a pod, known without running
    its plugins: an equivalence cache's answer, which the cycle then selects from with the
    same code as from the plugins' results (``passing_in_rotation``, ``Framework.run_score``)."""

    # The PreFilter/PreScore state the pod gets (merged into its cycle's state).
    state: CycleState
    # Indexed by snapshot row: passes every Filter plugin.
    feasible: BoolArray
    # Indexed by row: the weighted sum of the raw scores of Score plugins without
    # NormalizeScore (in range by construction).
    static: IntArray
    # Plugin name -> raw scores by row, for the Score plugins with NormalizeScore.
    columns: dict[str, IntArray]
    # Plugins run every cycle (``PER_CYCLE``): their PreFilter and Filter are in ``state``
    # and ``feasible``; the cycle runs their PreScore and Score on the nodes it takes.
    live: frozenset[str] = frozenset()


class BatchMetrics(Protocol):
    """Upstream's OpportunisticBatching metrics an equivalence cache reports to."""

    def batch_stored(self, profile: str, seconds: float) -> None: ...

    def batch_flushed(self, profile: str, reason: str) -> None: ...

    def batch_rescored(self, profile: str, seconds: float) -> None: ...


class EquivalenceCache(Protocol):
    """What a scheduling cycle asks of its profile's equivalence cache
    (``scheduler.cycle_cache.CycleCache``)."""

    hits: int

    def lookup(
        self, pod: PodInfo, snap: Snapshot, metrics: BatchMetrics | None, sampled: bool = False
    ) -> KnownResults | None:
        """The pod's known results on ``snap`` with at least one feasible row, or None
        (the cycle runs the plugins). ``sampled``: time the plugin calls made for it."""
        ...
