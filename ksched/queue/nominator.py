"""Pods nominated to nodes by preemption, which Filter must account for.

Mirrors upstream's ``nominator``: one entry per pod (re-adding replaces it), the
latest PodInfo is kept so Filter sees current requests, and a nomination made in
memory survives an update that does not mention nominatedNodeName at all.
"""

from __future__ import annotations

from collections.abc import KeysView
from typing import Any

from ..framework.types import PodInfo

__all__ = ["Nominator"]

# The views ``rows_at_least`` and ``nodes_at_least`` keep (preemptors of a few priorities).
_MAX_VIEWS = 8


class Nominator:
    def __init__(self) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}
        # ``rows_at_least``'s (by row of ``_index``, a snapshot's node -> row map) and
        # ``nodes_at_least``'s (by node name) answers per (by row, priority), kept up to
        # date by ``add`` and ``delete``.
        self._views: dict[tuple[bool, int], dict[Any, list[PodInfo]]] = {}
        self._index: dict[str, int] | None = None

    @staticmethod
    def _key(pod: PodInfo) -> str:
        return pod.uid or pod.key

    def add(self, pod: PodInfo, node_name: str = "") -> None:
        """Nominate ``pod`` to ``node_name`` (override), or to its status.nominatedNodeName."""
        self.delete(pod)
        node = node_name or pod.pod.status.nominated_node_name
        if not node:
            return
        self._node_of[self._key(pod)] = node
        self._by_node.setdefault(node, []).append(pod)
        if self._views:
            prio = pod.priority
            for (by_row, at_least), view in self._views.items():
                slot = self._slot(node, by_row)
                if prio >= at_least and slot is not None:
                    view[slot] = [*view.get(slot, ()), pod]  # a new list: given out ones stay

    def delete(self, pod: PodInfo) -> None:
        key = self._key(pod)
        node = self._node_of.pop(key, None)
        if node is None:
            return
        lst = self._by_node[node]
        lst[:] = [p for p in lst if self._key(p) != key]
        if not lst:
            del self._by_node[node]
        for (by_row, _), view in self._views.items():
            slot = self._slot(node, by_row)
            got = view.get(slot) if slot is not None else None
            if got is None:
                continue
            left = [p for p in got if self._key(p) != key]
            if left:
                view[slot] = left
            else:
                del view[slot]

    def _slot(self, node: str, by_row: bool) -> Any:
        """Where a view keeps ``node``'s pods: its row (None: not in the index), or its name."""
        if not by_row:
            return node
        return self._index.get(node) if self._index is not None else None

    def update(self, old: PodInfo, new: PodInfo) -> None:
        """``UpdateNominatedPod``: keep an in-memory nomination only if neither version names one.

        An update that adds, changes or clears status.nominatedNodeName wins; one
        that says nothing (common right after preemption, before our own status
        patch is observed) must not drop the node reserved in memory.
        """
        keep = ""
        if not old.pod.status.nominated_node_name and not new.pod.status.nominated_node_name:
            keep = self._node_of.get(self._key(old), "")
        self.delete(old)
        self.add(new, keep)

    def nominated_node(self, pod: PodInfo) -> str:
        return self._node_of.get(self._key(pod), "")

    def pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._by_node.get(node_name, ()))

    def nodes(self) -> dict[str, list[PodInfo]]:
        return self._by_node

    def rows_at_least(self, index: dict[str, int], priority: int) -> dict[int, list[PodInfo]]:
        """Per row of ``index`` (a snapshot's node -> row map), the pods nominated there of
        priority >= ``priority``, in nomination order; rows in no particular order.

        Kept up to date from one call to the next while ``index`` is the same object (a
        snapshot replaces it when its rows change), so a cycle does not walk every
        nominated pod. The answer is shared: callers must not change it."""
        if index is not self._index:
            self._index = index
            self._views = {k: v for k, v in self._views.items() if not k[0]}
        return self._view(True, priority)

    def nodes_at_least(self, priority: int) -> dict[str, list[PodInfo]]:
        """``rows_at_least`` by node name (what preemption's dry run reads)."""
        return self._view(False, priority)

    def _view(self, by_row: bool, priority: int) -> dict[Any, list[PodInfo]]:
        view = self._views.get((by_row, priority))
        if view is None:
            if len(self._views) >= _MAX_VIEWS:
                self._views = {}
            view = self._views[(by_row, priority)] = {}
            for node, pods in self._by_node.items():
                slot = self._slot(node, by_row)
                if slot is None:
                    continue
                sel = [p for p in pods if p.priority >= priority]
                if sel:
                    view[slot] = sel
        return view

    def keys(self) -> KeysView[str]:
        """The nominated pods' keys (uid, or namespace/name without one)."""
        return self._node_of.keys()

    def node_of_key(self, key: str) -> str:
        return self._node_of.get(key, "")

    def __len__(self) -> int:
        return len(self._node_of)
