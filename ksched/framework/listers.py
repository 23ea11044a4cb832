"""Stores behind ``handle.listers`` that say when they changed.

A plugin that derives something costly from a lister (PodTopologySpread's default
selectors come from every Service in the cluster) can cache it while the lister's
``revision`` stays the same. A plain mapping has no revision, so whatever is derived
from it cannot be cached.
"""

from __future__ import annotations

from collections import deque
from typing import Any, TypeVar

__all__ = ["RevisionedStore"]

V = TypeVar("V")


class RevisionedStore(dict[str, V]):
    """A lister's ``key -> object`` dict whose writer calls ``bump()`` after each change.

    Writes through the dict methods do not count themselves: the writer (an informer's
    handlers) bumps once per add, update or delete it has applied.
    """

    __slots__ = ("_changes", "revision")

    # Changed objects remembered for ``changes_since`` (older ones: a full rescan).
    JOURNAL = 4096

    def __init__(self) -> None:
        super().__init__()
        self.revision = 0
        self._changes: deque[tuple[int, Any]] = deque(maxlen=self.JOURNAL)

    def bump(self, *objs: object) -> None:
        """Record a change; an informer handler's arguments (new; old, new; old) name the
        changed object, remembered for ``changes_since``."""
        self.revision += 1
        self._changes.append((self.revision, objs[-1] if objs else None))

    def changes_since(self, revision: int) -> list[Any] | None:
        """The objects changed after ``revision`` (one per change, oldest first), or None
        when that is not known (too long ago, or a change without its object): reread
        everything."""
        if revision == self.revision:
            return []
        changes = self._changes
        if not changes or changes[0][0] > revision + 1:
            return None
        out = []
        for rev, obj in reversed(changes):
            if rev <= revision:
                break
            if obj is None:
                return None
            out.append(obj)
        out.reverse()
        return out
