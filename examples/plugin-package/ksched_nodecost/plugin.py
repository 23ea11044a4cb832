"""NodeCost: prefer cheap nodes.

Each node's price comes from a label (``example.com/hourly-cost: "0.35"`` by default, any
non-negative decimal). The plugin scores in two steps, as every ksched Score plugin may:

1. a raw score per node — here the price in thousandths (``350``), or ``UNKNOWN`` (-1)
   for a node without a readable price;
2. ``normalize_score`` over all the scored nodes at once: the cheapest gets 100, the most
   expensive 0, linearly in between; unpriced nodes get 0 unless ``missingCost`` prices them.

The raw score exists twice: ``score`` for one node (simple, used when a plugin has no batch
form), and ``score_batch`` for every candidate node in one numpy operation over the
snapshot's label column — what ksched calls when present. Both must agree; the tests
check that they do.
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np
from ksched import (
    MAX_NODE_SCORE,
    ArgsErrors,
    CycleState,
    IntArray,
    NodeInfo,
    PluginArgs,
    PodInfo,
    ScorePlugin,
    Snapshot,
    Status,
)

__all__ = ["DEFAULT_LABEL", "NAME", "UNKNOWN", "NodeCost"]

NAME = "NodeCost"
DEFAULT_LABEL = "example.com/hourly-cost"
UNKNOWN = -1  # raw score of a node without a readable price

# A label key: an optional DNS-subdomain prefix and "/", then a name of at most 63
# characters (alphanumerics, '-', '_', '.'; alphanumeric at both ends).
_NAME = r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
_LABEL_KEY = re.compile(rf"(?:{_PREFIX}/)?{_NAME}")


@functools.lru_cache(maxsize=4096)
def _milli(value: str) -> int | None:
    """A price label value in thousandths, or None when it is not a price (few distinct
    prices exist, so each is parsed once)."""
    try:
        cost = float(value)
    except ValueError:
        return None
    if not math.isfinite(cost) or cost < 0:
        return None
    return round(cost * 1000)


class NodeCost(ScorePlugin):
    name = NAME

    class Args(PluginArgs):
        """``pluginConfig`` args: ``label`` (the price label's key) and ``missingCost``
        (the price assumed for nodes without one; default: least preferred). ksched
        refuses unknown fields and wrong types, naming the field."""

        label: str = DEFAULT_LABEL
        missing_cost: float | None = None

        def validate(self, errs: ArgsErrors) -> None:
            """What the types cannot say: a typo must stop ksched at startup with the
            plugin and field named, never silently keep a default."""
            prefix, _, name = self.label.rpartition("/")
            if not self.label:
                errs.fail("label", f"must be a non-empty string, got {self.label!r}")
            elif not _LABEL_KEY.fullmatch(self.label) or len(prefix) > 253 or len(name) > 63:
                errs.fail("label", f"{self.label!r} is not a valid label key")
            cost = self.missing_cost
            if cost is not None and (not math.isfinite(cost) or cost < 0):
                errs.fail("missingCost", f"must be a non-negative number, got {cost!r}")

    args: Args  # decoded and validated by ksched (or from a dict, or the defaults, in tests)

    @property
    def label(self) -> str:
        return self.args.label

    @property
    def missing(self) -> int:
        """The raw score of a node without a readable price."""
        cost = self.args.missing_cost
        return UNKNOWN if cost is None else round(cost * 1000)

    def _raw(self, value: str | None) -> int:
        milli = None if value is None else _milli(value)
        return self.missing if milli is None else milli

    # -- Score, one node at a time -------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        labels = node.node.metadata.labels if node.node is not None else {}
        return self._raw(labels.get(self.label))

    # -- Score, every candidate node at once -------------------------------------------------
    def score_batch(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: IntArray
    ) -> IntArray:
        """Raw scores for the snapshot rows ``rows``: each distinct label value is priced
        once, then one lookup maps every node's value id (-1: no label) to its price."""
        ids, vocab = snap.label_column(self.label)
        table = np.empty(len(vocab) + 1, dtype=np.int64)
        table[-1] = self.missing  # id -1 (no label) reads the last entry
        for value, i in vocab.items():
            table[i] = self._raw(value)
        out: IntArray = table[ids[rows]]
        return out

    # -- NormalizeScore: prices to 0..100, cheapest best --------------------------------------
    def normalize_score(self, state: CycleState, pod: PodInfo, scores: IntArray) -> Status | None:
        known = scores != UNKNOWN
        if not known.any():
            scores[:] = 0
            return None
        lo, hi = int(scores[known].min()), int(scores[known].max())
        if hi == lo:
            normalized = np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64)
        else:
            normalized = MAX_NODE_SCORE * (hi - scores) // (hi - lo)
        scores[:] = np.where(known, normalized, 0)
        return None
