"""Stores behind ``handle.listers`` that say when they changed.

A plugin that derives something costly from a lister (PodTopologySpread's default
selectors come from every Service in the cluster) can cache it while the lister's
``revision`` stays the same. A plain mapping has no revision, so whatever is derived
from it cannot be cached.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["RevisionedStore"]

V = TypeVar("V")


class RevisionedStore(dict[str, V]):
    """A lister's ``key -> object`` dict whose writer calls ``bump()`` after each change.

    Writes through the dict methods do not count themselves: the writer (an informer's
    handlers) bumps once per add, update or delete it has applied.
    """

    __slots__ = ("revision",)

    def __init__(self) -> None:
        super().__init__()
        self.revision = 0

    def bump(self, *_: object) -> None:
        """Record a change (accepts and ignores handler arguments)."""
        self.revision += 1
