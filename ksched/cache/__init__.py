"""The scheduler cache: nodes and assigned/assumed pods, and per-cycle snapshots."""

from .cache import Cache, CacheError, node_tree_order

__all__ = ["Cache", "CacheError", "node_tree_order"]
