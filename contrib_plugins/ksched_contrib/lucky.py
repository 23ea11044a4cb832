"""Lucky: a coin flip per node, and a random score.

Useful as a chaos plugin (does the rest of the profile cope with arbitrary
rejections?) and as a demonstration of per-cycle state. Each node's verdict and
score are drawn once per scheduling attempt and kept in the CycleState, so the
explanation and the FitError diagnosis (which re-run Filter) see the same coin as
the decision did. With ``seed`` the draws, and so a whole simulation, are reproducible.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from ksched import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    NodeInfo,
    PluginArgs,
    PodInfo,
    ScorePlugin,
    Status,
)

__all__ = ["ERR_REASON", "Lucky"]

NAME = "Lucky"
ERR_REASON = "node(s) were unlucky"
_STATE_KEY = "ksched-contrib/Lucky"


@dataclass(slots=True)
class _Draws:
    passes: dict[str, bool] = field(default_factory=dict)
    scores: dict[str, int] = field(default_factory=dict)


class LuckyArgs(PluginArgs):
    seed: int | None = None


class Lucky(FilterPlugin[LuckyArgs], ScorePlugin[LuckyArgs]):
    name = NAME

    Args = LuckyArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        # No seed: seeded from the OS, a different sequence each run.
        self.rng = random.Random(self.args.seed)

    def _draws(self, state: CycleState) -> _Draws:
        d = state.get(_STATE_KEY)
        if d is None:
            d = _Draws()
            state.write(_STATE_KEY, d)
        assert isinstance(d, _Draws)
        return d

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        d = self._draws(state)
        ok = d.passes.get(node.name)
        if ok is None:
            ok = d.passes[node.name] = self.rng.random() < 0.5
        # Plain Unschedulable: the next attempt flips new coins, so a retry may pass.
        return None if ok else Status(Code.UNSCHEDULABLE, ERR_REASON)

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        d = self._draws(state)
        s = d.scores.get(node.name)
        if s is None:
            s = d.scores[node.name] = self.rng.randint(MIN_NODE_SCORE, MAX_NODE_SCORE)
        return s
