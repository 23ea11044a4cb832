"""What one scheduler did with one pending pod, in a form both replays fill in."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Outcome"]


@dataclass
class Outcome:
    """``status``: Scheduled, Unschedulable, Error, Rejected (the API server refused the
    pod: not compared) or Timeout. ``condition`` is the first PodScheduled=False condition
    written (reason, message, observedGeneration); ``scores`` the weighted per-plugin
    scores of the attempt that placed the pod, by plugin then node, and ``totals`` the
    final score per node — kube-scheduler logs both only when more than one node is
    feasible. ``feasible`` is the set of nodes that passed every Filter in that attempt
    (None when unknown)."""

    status: str
    node: str | None = None
    message: str = ""
    condition: dict[str, Any] | None = None
    nominated: str = ""
    victims: list[str] = field(default_factory=list)
    scores: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    feasible: list[str] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
