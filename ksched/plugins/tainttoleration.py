"""TaintToleration: NoSchedule/NoExecute taints filter, PreferNoSchedule taints score.

Mirrors kube-scheduler's ``tainttoleration`` plugin; with the alpha gate
TaintTolerationComparisonOperators on, ``Lt``/``Gt`` tolerations compare the taint's value
with theirs as int64 (off, they tolerate nothing). Nodes share few
distinct taint sets, and pods share few distinct toleration lists (admission adds the
same not-ready/unreachable tolerations to almost every pod), so the batch forms
evaluate each (tolerations, taint set) pair once, cache it per toleration list, and
broadcast over the snapshot's ``taint_ids`` column.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..api.objects import Node, Taint, Toleration
from ..api.selectors import find_untolerated_taint, tolerations_tolerate_taint
from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.handle import Handle
from ..framework.interface import (
    MAX_NODE_SCORE,
    ClusterEvent,
    ClusterEventWithHint,
    NodeOnlyFilter,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
)
from ..framework.snapshot import BoolArray, IntArray, Snapshot
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from . import names
from .helper import (
    TAINT_EFFECT_PREFER_NO_SCHEDULE,
    RowArray,
    all_true,
    comparison_operators,
    default_normalize_score,
    do_not_schedule_taint,
    spec_fragment,
)

__all__ = ["ERR_REASON_UNTOLERATED", "TaintToleration"]


# ``ErrReasonNotMatch``: since v1.35 (kubernetes#134740) the reason no longer names the
# taint, whose key and value may be sensitive; nodes with different taints count together.
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


PRE_SCORE_KEY = "PreScore" + names.TAINT_TOLERATION

_SIG_CACHE = names.TAINT_TOLERATION + "/signature"
_MAX_CACHED_SIGNATURES = 4096

TolerationSig = tuple[tuple[str, str, str, str], ...]


def prefer_no_schedule_tolerations(tolerations: Sequence[Toleration]) -> list[Toleration]:
    """``getAllTolerationPreferNoSchedule``: empty effect means every effect."""
    return [t for t in tolerations if not t.effect or t.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE]


def count_intolerable_prefer_no_schedule(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], comparison: bool = False
) -> int:
    """``countIntolerableTaintsPreferNoSchedule``."""
    return sum(
        1
        for t in taints
        if t.effect == TAINT_EFFECT_PREFER_NO_SCHEDULE
        and not tolerations_tolerate_taint(tolerations, t, comparison)
    )


class _Verdicts:
    """Filter and score answers of one toleration list for each taint set of a snapshot."""

    __slots__ = ("bad", "comparison", "prefer", "sets", "tolerations")

    def __init__(
        self, sets: list[tuple[Taint, ...]], tolerations: Sequence[Toleration], comparison: bool
    ) -> None:
        self.sets = sets
        self.tolerations = list(tolerations)
        self.comparison = comparison
        self.bad: BoolArray = np.zeros(0, dtype=np.bool_)
        self.prefer: IntArray = np.zeros(0, dtype=np.int64)

    def update(self) -> None:
        """Evaluate taint sets added since the last call (the snapshot only appends)."""
        done = len(self.bad)
        if done == len(self.sets):
            return
        new = self.sets[done:]
        tols = self.tolerations
        prefer_tols = prefer_no_schedule_tolerations(tols)
        cmp = self.comparison
        bad = [
            find_untolerated_taint(ts, tols, do_not_schedule_taint, cmp) is not None for ts in new
        ]
        prefer = [count_intolerable_prefer_no_schedule(ts, prefer_tols, cmp) for ts in new]
        self.bad = np.concatenate((self.bad, np.array(bad, dtype=np.bool_)))
        self.prefer = np.concatenate((self.prefer, np.array(prefer, dtype=np.int64)))


def _same_pod(a: PodInfo, b: PodInfo) -> bool:
    return (a.uid or a.key) == (b.uid or b.key)


class TaintToleration(NodeOnlyFilter[NoArgs], PreScorePlugin[NoArgs], ScorePlugin[NoArgs]):
    name = names.TAINT_TOLERATION

    def sign_pod(self, pod: PodInfo) -> Any:
        return spec_fragment(pod, "sign/tolerations", pod.pod.spec.tolerations)

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self._by_tolerations: dict[TolerationSig, _Verdicts] = {}
        self.comparison_operators = comparison_operators(handle)

    def _verdicts(self, pod: PodInfo, snap: Snapshot) -> _Verdicts:
        sig: TolerationSig | None = pod.cache.get(_SIG_CACHE)
        if sig is None:
            sig = tuple((t.key, t.operator, t.value, t.effect) for t in pod.pod.spec.tolerations)
            pod.cache[_SIG_CACHE] = sig
        v = self._by_tolerations.get(sig)
        if v is None or v.sets is not snap.taint_sets:
            if len(self._by_tolerations) >= _MAX_CACHED_SIGNATURES:
                self._by_tolerations.clear()
            v = self._by_tolerations[sig] = _Verdicts(
                snap.taint_sets, pod.pod.spec.tolerations, self.comparison_operators
            )
        v.update()
        return v

    # -- Filter ----------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        taints = node.node.spec.taints if node.node is not None else []
        tols = pod.pod.spec.tolerations
        cmp = self.comparison_operators
        if find_untolerated_taint(taints, tols, do_not_schedule_taint, cmp) is None:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNTOLERATED)

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        if len(snap.taint_sets) == 1:  # only "no taints"
            return all_true(snap.n)
        bad = self._verdicts(pod, snap).bad
        if not bad.any():
            return all_true(snap.n)
        return np.logical_not(bad[snap.taint_ids])

    # -- PreScore / Score --------------------------------------------------------------------
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        state.write(PRE_SCORE_KEY, prefer_no_schedule_tolerations(pod.pod.spec.tolerations))
        return None

    def _prefer_tolerations(self, state: CycleState) -> list[Toleration]:
        if PRE_SCORE_KEY not in state:
            raise RuntimeError(f'failed to read "{PRE_SCORE_KEY}" from cycleState: not found')
        tols: list[Toleration] = state.read(PRE_SCORE_KEY)
        return tols

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        tols = self._prefer_tolerations(state)
        taints = node.node.spec.taints if node.node is not None else []
        return count_intolerable_prefer_no_schedule(taints, tols, self.comparison_operators)

    def score_batch(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: RowArray
    ) -> IntArray:
        self._prefer_tolerations(state)  # the same error as Score when PreScore did not run
        if len(snap.taint_sets) == 1:
            return np.zeros(len(rows), dtype=np.int64)
        prefer = self._verdicts(pod, snap).prefer
        return prefer[snap.taint_ids[rows]]

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None:
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    # -- queueing hints ------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Node Add|UpdateNodeTaint and the pod's own toleration updates (QueueingHints on)."""
        node_hint = self.is_schedulable_after_node_change
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD), node_hint),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_TAINT), node_hint
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when the node went from having an untolerated taint to having none."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            raise TypeError(f"expected Node, got {type(old).__name__}, {type(new).__name__}")
        tols = pod.pod.spec.tolerations

        def untolerated(node: Node) -> bool:
            taints = node.spec.taints
            cmp = self.comparison_operators
            return find_untolerated_taint(taints, tols, do_not_schedule_taint, cmp) is not None

        was_untolerated = old is None or untolerated(old)
        is_untolerated = untolerated(new)
        if was_untolerated and not is_untolerated:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pod_toleration_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """A toleration added to the rejected pod itself may make it fit."""
        if not isinstance(new, PodInfo):
            raise TypeError(f"expected PodInfo, got {type(new).__name__}")
        return QueueingHint.QUEUE if _same_pod(pod, new) else QueueingHint.SKIP
