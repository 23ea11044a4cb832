"""PlacementCost: of the placements a pod group fits in, prefer the cheapest.

A pod group (scheduling.k8s.io/v1beta1 PodGroup) is placed as a whole: ksched proposes
placements (with TopologyPlacementGenerator, one per rack, zone, ... of the group's
topology constraint), tries every member on each, and asks the PlacementScore plugins
which of the feasible ones is best. This one scores a placement by what its members would
cost: each node's price is its ``cost`` label (a non-negative decimal, e.g. per hour),
and a placement's cost is the mean price of the nodes its members are proposed on.

Two steps, as every PlacementScore plugin may:

1. ``score_placement``: the raw score of one placement, here its cost in thousandths
   (``350`` for 0.35), or ``UNKNOWN`` (-1) when a member would land on an unpriced node;
2. ``normalize_placement_score`` over every feasible placement at once: the cheapest
   gets 100, the most expensive 0, linearly in between; unpriced placements get 0.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from ksched import (
    MAX_NODE_SCORE,
    CycleState,
    NodeInfo,
    PlacementScore,
    PlacementScorePlugin,
    PodGroupAssignments,
    PodGroupInfo,
    Status,
)

__all__ = ["LABEL", "NAME", "UNKNOWN", "PlacementCost", "placement_cost"]

NAME = "PlacementCost"
LABEL = "cost"
UNKNOWN = -1  # raw score of a placement with a member on an unpriced node


def node_cost(node: NodeInfo | None) -> int | None:
    """The node's ``cost`` label in thousandths, None when it has no readable one."""
    value = node.node.metadata.labels.get(LABEL) if node and node.node else None
    try:
        cost = Decimal(value) if value is not None else None
    except InvalidOperation:
        return None
    if cost is None or not cost.is_finite() or cost < 0:
        return None
    return int(cost * 1000)


def placement_cost(assignments: PodGroupAssignments) -> int:
    """The mean cost, in thousandths, of the nodes the members are proposed on."""
    nodes = {n.name: n for n in assignments.placement.nodes}
    costs = [node_cost(nodes.get(a.node_name)) for a in assignments.assignments]
    known = [c for c in costs if c is not None]
    if not costs or len(known) < len(costs):
        return UNKNOWN
    return sum(known) // len(known)


class PlacementCost(PlacementScorePlugin):
    name = NAME

    def score_placement(
        self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> int:
        return placement_cost(assignments)

    def normalize_placement_score(
        self, state: CycleState, group: PodGroupInfo, scores: list[PlacementScore]
    ) -> Status | None:
        known = [s.score for s in scores if s.score != UNKNOWN]
        lo, hi = min(known, default=0), max(known, default=0)
        for s in scores:
            if s.score == UNKNOWN:
                s.score = 0
            elif hi == lo:
                s.score = MAX_NODE_SCORE
            else:
                s.score = MAX_NODE_SCORE * (hi - s.score) // (hi - lo)
        return None
