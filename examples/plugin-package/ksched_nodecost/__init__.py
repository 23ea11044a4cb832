"""ksched-nodecost: the NodeCost Score plugin for ksched (see README.md)."""

from .plugin import DEFAULT_LABEL, NodeCost

__all__ = ["DEFAULT_LABEL", "NodeCost"]
