"""NodeResourcesFit and NodeResourcesBalancedAllocation (upstream ``noderesources``)."""

from __future__ import annotations

from .balanced_allocation import BalancedAllocation, BalancedAllocationArgs
from .fit import Fit, FitArgs, InsufficientResource, ScoringStrategy, insufficient_resources
from .resource_allocation import ResourceSpec

__all__ = [
    "BalancedAllocation",
    "BalancedAllocationArgs",
    "Fit",
    "FitArgs",
    "InsufficientResource",
    "ResourceSpec",
    "ScoringStrategy",
    "insufficient_resources",
]
