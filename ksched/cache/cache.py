"""Scheduler cache (``internal/cache``): the source of truth for the snapshot.

Assigned pods arrive from the watch; a pod the scheduler picked a node for is
*assumed* at Reserve so the next cycle already sees its resources, then confirmed
when its binding comes back from the watch, forgotten when binding fails, and
expired when its binding is never observed within the TTL. Snapshots are
incremental: only nodes changed since the previous snapshot are cloned into it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..api.objects import Node
from ..framework.snapshot import Snapshot
from ..framework.types import ImageStateSummary, NodeInfo, PodInfo, next_generation
from ..util.clock import Clock, RealClock

__all__ = ["Cache", "CacheError", "node_tree_order"]

REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")


class CacheError(RuntimeError):
    """An impossible transition (assume twice, forget a pod that was never assumed)."""


def zone_key(node: Node) -> str:
    """``utilnode.GetZoneKey``: region and zone joined, empty when neither is set."""
    labels = node.metadata.labels
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def node_tree_order(zones: dict[str, list[str]]) -> list[str]:
    """``nodeTree.list``: one node from each zone in turn, so early nodes span zones."""
    out: list[str] = []
    lists = list(zones.values())
    i = 0
    while True:
        added = False
        for lst in lists:
            if i < len(lst):
                out.append(lst[i])
                added = True
        if not added:
            return out
        i += 1


@dataclass(slots=True)
class _PodState:
    pod: PodInfo
    node: str
    assumed: bool = False
    binding_finished: bool = False
    deadline: float | None = None


class Cache:
    def __init__(self, clock: Clock | None = None, assumed_ttl: float = 30.0) -> None:
        self.clock = clock or RealClock()
        self.assumed_ttl = assumed_ttl  # upstream durationToExpireAssumedPod (15m→0 means never; we use 30s)
        self.nodes: dict[str, NodeInfo] = {}
        self._zones: dict[str, list[str]] = {}
        self._node_zone: dict[str, str] = {}
        self.pod_states: dict[str, _PodState] = {}
        self.assumed: set[str] = set()
        self._images: dict[str, tuple[ImageStateSummary, set[str]]] = {}
        self._dirty: set[str] = set()
        self._structure_changed = True

    # -- nodes ---------------------------------------------------------------------------
    def _node_info(self, name: str) -> NodeInfo:
        ni = self.nodes.get(name)
        if ni is None:
            ni = self.nodes[name] = NodeInfo()  # pods may arrive before their node
        return ni

    def add_node(self, node: Node) -> NodeInfo:
        name = node.metadata.name
        ni = self._node_info(name)
        if ni.node is not None:
            self._remove_images(ni)
        ni.set_node(node)
        self._add_images(ni)
        self._zone_add(name, zone_key(node))
        self._dirty.add(name)
        return ni

    def update_node(self, node: Node) -> NodeInfo:
        name = node.metadata.name
        old = self.nodes.get(name)
        if old is not None and old.node is not None:
            oz = self._node_zone.get(name)
            nz = zone_key(node)
            if oz != nz:
                self._zone_remove(name)
        return self.add_node(node)

    def remove_node(self, name: str) -> None:
        ni = self.nodes.get(name)
        if ni is None:
            return
        self._remove_images(ni)
        self._zone_remove(name)
        if ni.pods:
            # Pods still reference it (deletion events may arrive later): keep a node-less entry.
            ni.node = None
            ni.generation = next_generation()
        else:
            del self.nodes[name]
        self._dirty.discard(name)
        self._structure_changed = True

    def _zone_add(self, name: str, zone: str) -> None:
        if self._node_zone.get(name) == zone:
            return
        self._node_zone[name] = zone
        self._zones.setdefault(zone, []).append(name)
        self._structure_changed = True

    def _zone_remove(self, name: str) -> None:
        zone = self._node_zone.pop(name, None)
        if zone is None:
            return
        lst = self._zones[zone]
        i = lst.index(name)
        lst[i] = lst[-1]  # upstream removes by swapping in the last node
        lst.pop()
        if not lst:
            del self._zones[zone]
        self._structure_changed = True

    def _add_images(self, ni: NodeInfo) -> None:
        assert ni.node is not None
        states: dict[str, ImageStateSummary] = {}
        for img in ni.node.status.images:
            for name in img.names:
                entry = self._images.get(name)
                if entry is None:
                    entry = self._images[name] = (ImageStateSummary(img.size_bytes, 0), set())
                entry[1].add(ni.name)
                entry[0].num_nodes = len(entry[1])
                states[name] = entry[0]
        ni.image_states = states

    def _remove_images(self, ni: NodeInfo) -> None:
        for name in ni.image_states:
            entry = self._images.get(name)
            if entry is None:
                continue
            entry[1].discard(ni.name)
            entry[0].num_nodes = len(entry[1])
            if not entry[1]:
                del self._images[name]
        ni.image_states = {}

    # -- pods ----------------------------------------------------------------------------
    @staticmethod
    def _key(pod: PodInfo) -> str:
        return pod.uid or pod.key

    def _add_to_node(self, pod: PodInfo, node: str) -> None:
        self._node_info(node).add_pod(pod)
        self._dirty.add(node)
        if self.nodes[node].node is None:
            self._structure_changed = True

    def _remove_from_node(self, pod: PodInfo, node: str) -> None:
        ni = self.nodes.get(node)
        if ni is None:
            return
        ni.remove_pod(pod)
        self._dirty.add(node)
        if ni.node is None and not ni.pods:
            del self.nodes[node]
            self._dirty.discard(node)

    def assume_pod(self, pod: PodInfo, node: str) -> None:
        key = self._key(pod)
        if key in self.pod_states:
            raise CacheError(f"pod {pod.key} (uid {pod.uid}) is in the cache, so can't be assumed")
        self._add_to_node(pod, node)
        self.pod_states[key] = _PodState(pod, node, assumed=True)
        self.assumed.add(key)

    def finish_binding(self, pod: PodInfo) -> None:
        """Binding sent; start the expiry clock for the assumed pod."""
        st = self.pod_states.get(self._key(pod))
        if st is not None and st.assumed:
            st.binding_finished = True
            st.deadline = self.clock.now() + self.assumed_ttl if self.assumed_ttl > 0 else None

    def forget_pod(self, pod: PodInfo) -> None:
        key = self._key(pod)
        st = self.pod_states.get(key)
        if st is None:
            return
        if not st.assumed:
            raise CacheError(f"pod {pod.key} wasn't assumed so cannot be forgotten")
        self._remove_from_node(st.pod, st.node)
        del self.pod_states[key]
        self.assumed.discard(key)

    def is_assumed(self, pod: PodInfo) -> bool:
        return self._key(pod) in self.assumed

    def add_pod(self, pod: PodInfo) -> None:
        """An assigned pod seen by the watch; confirms an assumed pod."""
        key = self._key(pod)
        node = pod.node_name
        st = self.pod_states.get(key)
        if st is not None and st.assumed:
            if st.node != node:
                # Bound somewhere else than we assumed (another scheduler won): move it.
                self._remove_from_node(st.pod, st.node)
                self._add_to_node(pod, node)
            else:
                self._remove_from_node(st.pod, st.node)
                self._add_to_node(pod, node)
            self.pod_states[key] = _PodState(pod, node)
            self.assumed.discard(key)
            return
        if st is not None:
            self.update_pod(st.pod, pod)
            return
        self._add_to_node(pod, node)
        self.pod_states[key] = _PodState(pod, node)

    def update_pod(self, old: PodInfo, new: PodInfo) -> None:
        key = self._key(old)
        st = self.pod_states.get(key)
        if st is None:
            self.add_pod(new)
            return
        if st.assumed:
            # An assumed pod updated by the watch is now confirmed (upstream: add).
            self.add_pod(new)
            return
        self._remove_from_node(st.pod, st.node)
        self._add_to_node(new, new.node_name)
        self.pod_states[key] = _PodState(new, new.node_name)

    def remove_pod(self, pod: PodInfo) -> None:
        key = self._key(pod)
        st = self.pod_states.pop(key, None)
        if st is None:
            return
        self.assumed.discard(key)
        self._remove_from_node(st.pod, st.node)

    def get_pod(self, pod: PodInfo) -> PodInfo | None:
        st = self.pod_states.get(self._key(pod))
        return st.pod if st is not None else None

    def cleanup_expired(self) -> list[PodInfo]:
        """Drop assumed pods whose binding was never observed (``cleanupAssumedPods``)."""
        now = self.clock.now()
        expired = []
        for key in list(self.assumed):
            st = self.pod_states[key]
            if st.binding_finished and st.deadline is not None and now >= st.deadline:
                expired.append(st.pod)
                self._remove_from_node(st.pod, st.node)
                del self.pod_states[key]
                self.assumed.discard(key)
        return expired

    # -- snapshots -------------------------------------------------------------------------
    def node_count(self) -> int:
        return len(self._node_zone)

    def update_snapshot(self, snap: Snapshot) -> int:
        """Bring ``snap`` up to date; returns how many node rows were refreshed."""
        if self._structure_changed:
            order = node_tree_order(self._zones)
            snap.rebuild([self.nodes[n].clone() for n in order])
            self._structure_changed = False
            self._dirty.clear()
            return len(order)
        count = 0
        for name in self._dirty:
            i = snap.row(name)
            ni = self.nodes.get(name)
            if i is None or ni is None:
                continue
            snap.replace(i, ni.clone())
            count += 1
        self._dirty.clear()
        return count

    def dump(self) -> dict[str, Any]:
        """JSON-ready view for /debug/cache."""
        return {
            "nodes": {
                name: {
                    "pods": [p.key for p in ni.pods],
                    "generation": ni.generation,
                    **ni.resource_fields(),
                }
                for name, ni in sorted(self.nodes.items())
            },
            "assumedPods": sorted(self.pod_states[k].pod.key for k in self.assumed),
        }

    def list_pods(self) -> Iterable[PodInfo]:
        return (st.pod for st in self.pod_states.values())
