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

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from ksched import (
    MAX_NODE_SCORE,
    CycleState,
    Handle,
    IntArray,
    NodeInfo,
    PluginArgsError,
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


def _milli(value: str | None) -> int | None:
    """A price label value in thousandths, or None when absent or not a price."""
    if value is None:
        return None
    try:
        cost = float(value)
    except ValueError:
        return None
    if not math.isfinite(cost) or cost < 0:
        return None
    return round(cost * 1000)


class NodeCost(ScorePlugin):
    name = NAME

    @dataclass(frozen=True, slots=True)
    class Args:
        """``pluginConfig`` args: ``label`` (the price label's key) and ``missingCost``
        (the price assumed for nodes without one; default: least preferred)."""

        label: str = DEFAULT_LABEL
        missing_cost: float | None = None

        @classmethod
        def parse(cls, plugin: str, data: dict[str, Any]) -> NodeCost.Args:
            """Validate everything up front: a typo must stop ksched at startup with the
            plugin and field named, never silently keep a default."""
            known = ("label", "missingCost")
            for key in data:
                if key not in known:
                    raise PluginArgsError(plugin, str(key),
                                          f"unknown field (known fields: {', '.join(known)})")
            label = data.get("label", DEFAULT_LABEL)
            if not isinstance(label, str) or not label:
                raise PluginArgsError(plugin, "label", f"must be a non-empty string, got {label!r}")
            prefix, _, name = label.rpartition("/")
            if not _LABEL_KEY.fullmatch(label) or len(prefix) > 253 or len(name) > 63:
                raise PluginArgsError(plugin, "label", f"{label!r} is not a valid label key")
            missing = data.get("missingCost")
            if missing is not None:
                if isinstance(missing, bool) or not isinstance(missing, int | float):
                    raise PluginArgsError(plugin, "missingCost",
                                          f"must be a number or null, got {missing!r}")
                if not math.isfinite(missing) or missing < 0:
                    raise PluginArgsError(plugin, "missingCost",
                                          f"must be a non-negative number, got {missing!r}")
            return cls(label, None if missing is None else float(missing))

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        # ksched passes the parsed Args; tests may pass a dict or nothing.
        if not isinstance(args, NodeCost.Args):
            raw = dict(args) if isinstance(args, Mapping) else {}
            args = NodeCost.Args.parse(NAME, raw)
        super().__init__(args, handle)
        self.label = args.label
        self.missing = UNKNOWN if args.missing_cost is None else round(args.missing_cost * 1000)
        self._parsed: dict[str, int] = {}  # label value -> raw score (few distinct prices)

    def _raw(self, value: str | None) -> int:
        if value is None:
            return self.missing
        raw = self._parsed.get(value)
        if raw is None:
            milli = _milli(value)
            raw = self._parsed[value] = self.missing if milli is None else milli
        return raw

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
