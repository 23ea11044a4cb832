"""The volume binder's assume cache (upstream ``assumecache.AssumeCache``).

Binding decisions are recorded in memory at Reserve, before the API writes of PreBind,
so the next pod's cycle already sees the PV as taken (its claimRef set) or the PVC as
being provisioned on a node. The cache overlays the informer-backed lister: an assumed
object shows until the lister holds a newer version of it (the write came back through
the watch, or someone else changed the object) or the assumption is restored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from ...util.errors import KschedError

__all__ = ["AssumeCache", "AssumeError", "resource_version"]

T = TypeVar("T")


class AssumeError(KschedError):
    """An assumption about an object the cache does not know, or an older version of it."""


def resource_version(obj: Any) -> int:
    """``metadata.resourceVersion`` as a number (0 when unset or not numeric)."""
    rv = obj.metadata.resource_version
    try:
        return int(rv) if rv else 0
    except ValueError:
        return 0


class AssumeCache(Generic[T]):
    """Objects of one lister (``key -> object``) with assumed versions layered on top.

    ``source`` returns the lister (looked up on each use: the daemon fills listers after
    plugins are built). ``index`` maps an object to a group name for ``list_group``
    (PVs by storage class); groups are rebuilt when a ``RevisionedStore`` lister changes.
    """

    def __init__(
        self,
        source: Callable[[], Mapping[str, T]],
        description: str,
        index: Callable[[T], str] | None = None,
    ) -> None:
        self._source = source
        self.description = description
        self._index = index
        self._assumed: dict[str, T] = {}
        self._groups: dict[str, list[str]] = {}
        self._groups_of: tuple[int, int] | None = None

    def get_api(self, key: str) -> T | None:
        """The informer's version, ignoring assumptions (upstream ``GetAPIObj``)."""
        return self._source().get(key)

    def get(self, key: str) -> T | None:
        """The latest version: the assumed one unless the lister has a newer one."""
        api = self._source().get(key)
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        if api is None or resource_version(api) > resource_version(assumed):
            # Deleted, or a newer version arrived: the assumption is obsolete.
            del self._assumed[key]
            return api
        return assumed

    def assume(self, key: str, obj: T) -> None:
        """Show ``obj`` instead of the stored version until the lister moves past it."""
        stored = self.get(key)
        if stored is None:
            raise AssumeError(f'could not find {self.description} "{key}"')
        new, old = resource_version(obj), resource_version(stored)
        if new < old:
            raise AssumeError(
                f'{self.description} "{key}" is out of sync (stored: {old}, assume: {new})'
            )
        self._assumed[key] = obj

    def restore(self, key: str) -> None:
        """Drop the assumption about ``key`` (idempotent)."""
        self._assumed.pop(key, None)

    def is_assumed(self, key: str) -> bool:
        return self.get(key) is not None and key in self._assumed

    def list_group(self, group: str) -> list[T]:
        """The latest version of every object of ``group`` (by ``index``)."""
        out: list[T] = []
        for key in self._group_keys().get(group, ()):
            obj = self.get(key)
            if obj is not None:
                out.append(obj)
        return out

    def _group_keys(self) -> dict[str, list[str]]:
        src = self._source()
        revision = getattr(src, "revision", None)
        stamp = (id(src), revision) if isinstance(revision, int) else None
        if stamp is None or stamp != self._groups_of:
            index = self._index or (lambda _: "")
            groups: dict[str, list[str]] = {}
            for key, obj in sorted(src.items()):
                groups.setdefault(index(obj), []).append(key)
            self._groups, self._groups_of = groups, stamp
        return self._groups
