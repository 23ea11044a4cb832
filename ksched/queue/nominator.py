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


class Nominator:
    def __init__(self) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}
        # Bumped on every change, so that readers can keep what they derive from the
        # nominations (the cycle's per-node lists) until the next change.
        self.version = 0
        # What readers derived from the nominations, dropped on every change.
        self.derived: dict[Any, Any] = {}

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
        self._changed()

    def delete(self, pod: PodInfo) -> None:
        key = self._key(pod)
        node = self._node_of.pop(key, None)
        if node is None:
            return
        self._changed()
        lst = self._by_node[node]
        lst[:] = [p for p in lst if self._key(p) != key]
        if not lst:
            del self._by_node[node]

    def _changed(self) -> None:
        self.version += 1
        if self.derived:
            self.derived = {}

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

    def keys(self) -> KeysView[str]:
        """The nominated pods' keys (uid, or namespace/name without one)."""
        return self._node_of.keys()

    def node_of_key(self, key: str) -> str:
        return self._node_of.get(key, "")

    def __len__(self) -> int:
        return len(self._node_of)
