"""ShortNodeName: prefer nodes with short names.

A minimal Score plugin with its own normalization, to show the two halves of
scoring: a raw per-node score and a rescale of all scores to 0..100.
"""

from __future__ import annotations

from ksched import (
    MAX_NODE_SCORE,
    CycleState,
    IntArray,
    NoArgs,
    NodeInfo,
    PodInfo,
    ScorePlugin,
    Status,
)

__all__ = ["BASE", "ShortNodeName"]

NAME = "ShortNodeName"
# Raw score is BASE minus the name's length, so names of BASE characters or more score 0.
BASE = 20


class ShortNodeName(ScorePlugin[NoArgs]):
    name = NAME

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return max(0, BASE - len(node.name))

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None:
        """Scale so the best node gets 100 (``helper.DefaultNormalizeScore``)."""
        if len(scores) == 0:
            return None
        best = int(scores.max())
        if best > 0:
            scores *= MAX_NODE_SCORE
            scores //= best
        return None
