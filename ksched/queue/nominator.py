"""Pods nominated to nodes by preemption, which Filter must account for."""

from __future__ import annotations

from ..framework.types import PodInfo

__all__ = ["Nominator"]


class Nominator:
    def __init__(self) -> None:
        self._by_node: dict[str, list[PodInfo]] = {}
        self._node_of: dict[str, str] = {}

    @staticmethod
    def _key(pod: PodInfo) -> str:
        return pod.uid or pod.key

    def add(self, pod: PodInfo, node_name: str = "") -> None:
        """Nominate ``pod`` to ``node_name`` (or its status.nominatedNodeName)."""
        self.delete(pod)
        node = node_name or pod.pod.status.nominated_node_name
        if not node:
            return
        self._node_of[self._key(pod)] = node
        self._by_node.setdefault(node, []).append(pod)

    def delete(self, pod: PodInfo) -> None:
        node = self._node_of.pop(self._key(pod), None)
        if node is None:
            return
        lst = self._by_node[node]
        key = self._key(pod)
        lst[:] = [p for p in lst if self._key(p) != key]
        if not lst:
            del self._by_node[node]

    def update(self, old: PodInfo, new: PodInfo) -> None:
        node = self._node_of.get(self._key(old), "")
        # A pod update from the API may not carry a nomination made in memory yet.
        self.add(new, new.pod.status.nominated_node_name or node)

    def nominated_node(self, pod: PodInfo) -> str:
        return self._node_of.get(self._key(pod), "")

    def pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._by_node.get(node_name, ()))

    def nodes(self) -> dict[str, list[PodInfo]]:
        return self._by_node

    def __len__(self) -> int:
        return len(self._node_of)
