"""ksched-placementcost: the PlacementCost PlacementScore plugin for ksched (see README.md)."""

from .plugin import LABEL, UNKNOWN, PlacementCost, placement_cost

__all__ = ["LABEL", "UNKNOWN", "PlacementCost", "placement_cost"]
