"""Scheduler cache (``pkg/scheduler/backend/cache``): the source of truth for the snapshot.

Assigned pods arrive from the watch; a pod the scheduler picked a node for is
*assumed* at Reserve so the next cycle already sees its resources, then confirmed
when its binding comes back from the watch, forgotten when binding fails, and
expired when its binding is never observed within the TTL after it was sent.
Transitions upstream rejects (assume twice, update an assumed pod, forget a pod
that is not assumed) raise ``CacheError`` without changing anything; the
scheduler's event handlers log them, as upstream's do.

Snapshots are incremental: only nodes changed since the previous snapshot are
cloned into it; adding or removing a node re-lays the rows out in node-tree order
(reusing the clones of unchanged nodes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..api.objects import Node
from ..api.workload import PodGroup
from ..framework.podgroup import pod_group_key, pod_group_of
from ..framework.podgroupstate import PodGroupStateData
from ..framework.snapshot import Snapshot
from ..framework.types import ImageStateSummary, NodeInfo, PodInfo, next_generation, same_for_node
from ..util.clock import Clock, RealClock, wall_clock
from ..util.errors import KschedError
from ..util.native import mypyc_attr

__all__ = ["Cache", "CacheError", "node_tree_order", "zone_key"]

REGION_LABELS = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")
ZONE_LABELS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
CLEANUP_PERIOD = 1.0  # upstream cleanAssumedPeriod


@mypyc_attr(native_class=False)  # a compiled class cannot subclass RuntimeError
class CacheError(KschedError, RuntimeError):
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


def _zone_label(key: str) -> str:
    """A zone key for humans: "zone", or "region/zone" when the region is set."""
    region, _, zone = key.partition(":\x00:")
    return f"{region}/{zone}" if region else zone


@dataclass(slots=True)
class _PodState:
    pod: PodInfo
    node: str
    assumed: bool = False
    binding_finished: bool = False
    deadline: float | None = None


class Cache:
    def __init__(
        self,
        clock: Clock | None = None,
        assumed_ttl: float = 30.0,
        *,
        generic_workload: bool = False,
    ) -> None:
        """``generic_workload``: GenericWorkload is on (v1.37), so pod groups' members are
        tracked per group (``pod_group_states``); off, they are ordinary pods."""
        self.clock: Clock = clock or RealClock()
        self.generic_workload = generic_workload
        self.pod_group_states: dict[str, PodGroupStateData] = {}
        # Seconds an assumed pod may stay unconfirmed after its binding was sent;
        # 0 never expires (upstream's durationToExpireAssumedPod is 0 nowadays).
        self.assumed_ttl = assumed_ttl
        self.nodes: dict[str, NodeInfo] = {}
        # nodeTree: zone -> node names (zones in first-seen order), node -> zone.
        self._zones: dict[str, list[str]] = {}
        self._node_zone: dict[str, str] = {}
        self.pod_states: dict[str, _PodState] = {}
        self.assumed: set[str] = set()
        # imageStates: per image name its size and how many nodes list it. Upstream keeps
        # the set of those nodes, but reads only its length; a node counts once per name
        # (its ``image_states`` is keyed by name), which is what the set guaranteed.
        self._images: dict[str, ImageStateSummary] = {}
        # What the snapshot reads is frozen per node: upstream's clone of a NodeInfo copies
        # each image's count as it is then (``ImageStateSummary.Snapshot``), and a node is
        # cloned only when it changed, so an unchanged node keeps the counts of its last
        # clone. A node's ``image_states`` holds those frozen summaries (shared with its
        # clones; ``_frozen`` is the latest one per name) as of ``_images_epoch`` (bumped
        # whenever a count changes) in ``_frozen_at``; right after the node changed, the
        # live ones, refreshed before its next clone.
        self._frozen: dict[str, ImageStateSummary] = {}
        self._images_epoch = 0
        self._frozen_at: dict[str, int] = {}
        # Nodes whose assumed pod the watch confirmed in place: upstream's confirmation is
        # an update of the pod, so it clones the node (with fresh counts) again.
        self._confirmed: set[str] = set()
        # Nodes changed since the last snapshot, and whether rows must be re-laid out.
        self._dirty: set[str] = set()
        self._structure_changed = True
        self._last_snap: Snapshot | None = None

    # -- nodes ---------------------------------------------------------------------------
    def _node_info(self, name: str) -> NodeInfo:
        ni = self.nodes.get(name)
        if ni is None:
            ni = self.nodes[name] = NodeInfo()  # pods may arrive before their node
        return ni

    def add_node(self, node: Node) -> NodeInfo:
        name = node.metadata.name
        ni = self._node_info(name)
        old = ni.node
        if old is not None and old.status.images == node.status.images:
            ni.set_node(node)  # the same images: counts and names stay as they are
        else:
            if old is not None:
                self._remove_images(ni)
            ni.set_node(node)
            self._add_images(ni)
        self._zone_add(name, zone_key(node))
        self._dirty.add(name)
        return ni

    def update_node(self, node: Node) -> NodeInfo:
        """``UpdateNode``: a zone change moves the node to the end of its new zone."""
        return self.add_node(node)

    def remove_node(self, name: str) -> None:
        """``RemoveNode``: the NodeInfo outlives the node while pods still reference it."""
        ni = self.nodes.get(name)
        if ni is None or ni.node is None:
            raise CacheError(f"node {name} is not found")
        self._remove_images(ni)
        self._frozen_at.pop(name, None)
        self._confirmed.discard(name)
        self._zone_remove(name)
        if ni.pods:
            # Pod deletions come on another watch and may arrive later.
            ni.node = None
            ni.generation = next_generation()
        else:
            del self.nodes[name]
        self._dirty.discard(name)

    def _zone_add(self, name: str, zone: str) -> None:
        old = self._node_zone.get(name)
        if old == zone:
            return
        if old is not None:
            self._zone_remove(name)
        self._node_zone[name] = zone
        self._zones.setdefault(zone, []).append(name)
        self._structure_changed = True

    def _zone_remove(self, name: str) -> None:
        """``nodeTree.removeNode``: order-preserving; an emptied zone leaves the rotation."""
        zone = self._node_zone.pop(name, None)
        if zone is None:
            return
        lst = self._zones[zone]
        lst.remove(name)
        if not lst:
            del self._zones[zone]
        self._structure_changed = True

    def _add_images(self, ni: NodeInfo) -> None:
        """``addNodeImageStates``: a name's size is the first node's that listed it."""
        assert ni.node is not None
        images = self._images
        states: dict[str, ImageStateSummary] = {}
        for img in ni.node.status.images:
            for name in img.names:
                if name in states:
                    continue  # listed twice by this node: still one node
                st = images.get(name)
                if st is None:
                    st = images[name] = ImageStateSummary(img.size_bytes, 0)
                st.num_nodes += 1
                states[name] = st
        if states:
            self._images_epoch += 1
        ni.image_states = states  # live until the node's next clone freezes them
        self._frozen_at.pop(ni.node.metadata.name, None)

    def _remove_images(self, ni: NodeInfo) -> None:
        """``removeNodeImageStates``: a name no node lists any more is forgotten."""
        images = self._images
        for name in ni.image_states:
            st = images.get(name)
            if st is None:
                continue
            st.num_nodes -= 1
            if st.num_nodes <= 0:
                del images[name]
                self._frozen.pop(name, None)
        if ni.image_states:
            self._images_epoch += 1
        ni.image_states = {}

    def _freeze_images(self, name: str, ni: NodeInfo, force: bool = False) -> bool:
        """Before ``ni`` is cloned: its image counts as they are now (upstream's
        ``ImageStateSummary.Snapshot`` in ``NodeInfo.Snapshot``). Nothing to do when no
        count changed since they were last frozen; a new dict only when one of this
        node's changed (so the snapshot can tell by identity). Whether it was replaced."""
        epoch = self._images_epoch
        if not force and self._frozen_at.get(name) == epoch:
            return False
        self._frozen_at[name] = epoch
        old = ni.image_states
        if not old:
            return False
        images, frozen = self._images, self._frozen
        new: dict[str, ImageStateSummary] = {}
        changed = False
        for img, st in old.items():
            live = images[img]
            f = frozen.get(img)
            if f is None or f.num_nodes != live.num_nodes:
                f = frozen[img] = ImageStateSummary(live.size, live.num_nodes)
            if f is not st:
                changed = True
            new[img] = f
        if changed:
            ni.image_states = new
        return changed

    # -- pods ----------------------------------------------------------------------------
    @staticmethod
    def _key(pod: PodInfo) -> str:
        return pod.uid or pod.key

    def _add_to_node(self, pod: PodInfo, node: str) -> None:
        self._node_info(node).add_pod(pod)
        self._dirty.add(node)

    def _remove_from_node(self, pod: PodInfo, node: str) -> None:
        ni = self.nodes.get(node)
        if ni is None:
            return
        ni.remove_pod(pod)
        self._dirty.add(node)
        if ni.node is None and not ni.pods:
            del self.nodes[node]
            self._dirty.discard(node)

    def _drop(self, key: str, st: _PodState) -> None:
        self._remove_from_node(st.pod, st.node)
        del self.pod_states[key]
        self.assumed.discard(key)

    def assume_pod(self, pod: PodInfo, node: str) -> None:
        """``AssumePod``: account the pod on ``node`` before the binding is even sent."""
        key = self._key(pod)
        if key in self.pod_states:
            raise CacheError(f"pod {pod.key} (uid {pod.uid}) is in the cache, so can't be assumed")
        self._add_to_node(pod, node)
        self.pod_states[key] = _PodState(pod, node, assumed=True)
        self.assumed.add(key)
        gkey = self._group_key(pod)
        if gkey is not None:
            st = self.pod_group_states.get(gkey)
            if st is None:
                st = self.pod_group_states[gkey] = PodGroupStateData()
                st.all_pods[key] = pod
            st.assume_pod(pod)

    def finish_binding(self, pod: PodInfo) -> None:
        """``FinishBinding``: the binding was sent; the expiry clock starts now."""
        st = self.pod_states.get(self._key(pod))
        if st is not None and st.assumed:
            st.binding_finished = True
            st.deadline = self.clock.now() + self.assumed_ttl if self.assumed_ttl > 0 else None

    def forget_pod(self, pod: PodInfo) -> None:
        """``ForgetPod``: the binding failed; give the node its resources back."""
        key = self._key(pod)
        st = self.pod_states.get(key)
        if st is not None and pod.node_name and st.node != pod.node_name:
            raise CacheError(
                f"pod {pod.key} was assumed on {pod.node_name} but assigned to {st.node}"
            )
        if st is None or not st.assumed:
            raise CacheError(f"pod {pod.key} wasn't assumed so cannot be forgotten")
        self._drop(key, st)
        gkey = self._group_key(pod)
        group = self.pod_group_states.get(gkey) if gkey is not None else None
        if group is not None:
            group.forget_pod(key)

    def is_assumed(self, pod: PodInfo) -> bool:
        return self._key(pod) in self.assumed

    def add_pod(self, pod: PodInfo) -> None:
        """``AddPod``: an assigned pod seen by the watch; confirms an assumed one.

        An assumed pod is replaced by the observed version (on the node it was
        really bound to, should that differ); an expired one is simply re-added.
        """
        key = self._key(pod)
        node = pod.node_name
        st = self.pod_states.get(key)
        if st is not None and not st.assumed:
            raise CacheError(f"pod {pod.key} was already in added state")
        if st is not None:
            ni = self.nodes.get(node) if st.node == node else None
            if ni is not None and same_for_node(st.pod, pod) and ni.swap_pod(st.pod, pod):
                # The usual confirmation: the bound version counts exactly as the assumed
                # one did, so the node (and the snapshot rows, and every per-row cache
                # derived from them) stays as it is.
                self.assumed.discard(key)
                self.pod_states[key] = _PodState(pod, node)
                self.add_pod_group_member(pod)
                self._confirmed.add(node)
                return
            self._remove_from_node(st.pod, st.node)
            self.assumed.discard(key)
        self._add_to_node(pod, node)
        self.pod_states[key] = _PodState(pod, node)
        self.add_pod_group_member(pod)

    def update_pod(self, old: PodInfo, new: PodInfo) -> None:
        """``UpdatePod``: only for added pods; an assumed pod must be confirmed by an Add first."""
        key = self._key(old)
        st = self.pod_states.get(key)
        if st is None:
            raise CacheError(f"pod {old.key} is not added to scheduler cache, so cannot be updated")
        if st.assumed:
            raise CacheError(f"assumed pod {old.key} should not be updated")
        # Upstream exits on a node change (corrupted cache); we follow the new version.
        self._remove_from_node(st.pod, st.node)
        self._add_to_node(new, new.node_name)
        self.pod_states[key] = _PodState(new, new.node_name)
        self.remove_pod_group_member(old)
        self.add_pod_group_member(new)

    def remove_pod(self, pod: PodInfo) -> None:
        """``RemovePod``: removes the cached version (assumed or added) from its node."""
        key = self._key(pod)
        st = self.pod_states.get(key)
        if st is None:
            raise CacheError(f"pod {pod.key} is not found in scheduler cache, so cannot be removed")
        self._drop(key, st)
        self.remove_pod_group_member(pod)

    def get_pod(self, pod: PodInfo) -> PodInfo | None:
        st = self.pod_states.get(self._key(pod))
        return st.pod if st is not None else None

    def cleanup_expired(self) -> list[PodInfo]:
        """``cleanupAssumedPods``: drop assumed pods whose binding was sent but never observed."""
        now = self.clock.now()
        expired = []
        for key in list(self.assumed):
            st = self.pod_states[key]
            if not st.binding_finished or st.deadline is None:
                continue  # binding still in progress, or TTL disabled
            if now > st.deadline:
                expired.append(st.pod)
                self._drop(key, st)
                self.remove_pod_group_member(st.pod)
        return expired

    # -- pod groups (GenericWorkload) --------------------------------------------------------
    def _group_key(self, pod: PodInfo) -> str | None:
        """``isPodGroupMember``: the pod's group key, None for an ordinary pod."""
        return pod_group_of(pod.pod) if self.generic_workload else None

    def add_pod_group_member(self, pod: PodInfo) -> None:
        """``AddPodGroupMember``: a member seen (pending: unscheduled; bound: assigned)."""
        gkey = self._group_key(pod)
        if gkey is None:
            return
        st = self.pod_group_states.get(gkey)
        if st is None:
            st = self.pod_group_states[gkey] = PodGroupStateData()
        st.add_pod(pod)

    def update_pod_group_member(self, old: PodInfo, new: PodInfo) -> None:
        """``UpdatePodGroupMember``: a pending member's new version."""
        gkey = self._group_key(new)
        st = self.pod_group_states.get(gkey) if gkey is not None else None
        if st is not None:
            st.update_pod(old, new)

    def remove_pod_group_member(self, pod: PodInfo) -> None:
        """``RemovePodGroupMember``: the state goes with its last member once its PodGroup
        is gone too."""
        gkey = self._group_key(pod)
        st = self.pod_group_states.get(gkey) if gkey is not None else None
        if gkey is None or st is None:
            return
        st.delete_pod(self._key(pod))
        if st.empty():
            del self.pod_group_states[gkey]

    def add_pod_group(self, pg: PodGroup) -> None:
        """``AddPodGroup`` (and ``UpdatePodGroup``): the object as last observed."""
        if not self.generic_workload:
            return
        gkey = pod_group_key(pg.metadata.namespace, pg.metadata.name)
        st = self.pod_group_states.get(gkey)
        if st is None:
            st = self.pod_group_states[gkey] = PodGroupStateData()
        st.set_pod_group(pg)

    def update_pod_group(self, old: PodGroup, new: PodGroup) -> None:
        gkey = pod_group_key(new.metadata.namespace, new.metadata.name)
        st = self.pod_group_states.get(gkey) if self.generic_workload else None
        if st is not None:
            st.set_pod_group(new)

    def remove_pod_group(self, pg: PodGroup) -> None:
        """``RemovePodGroup``: the state stays while members remain."""
        gkey = pod_group_key(pg.metadata.namespace, pg.metadata.name)
        st = self.pod_group_states.get(gkey) if self.generic_workload else None
        if st is None:
            return
        st.set_pod_group(None)
        if st.empty():
            del self.pod_group_states[gkey]

    def pod_group_state(self, namespace: str, name: str) -> PodGroupStateData | None:
        """The live state (``PodGroupManager``: upstream's ``PodGroupStates().Get``)."""
        if not self.generic_workload:
            return None
        return self.pod_group_states.get(pod_group_key(namespace, name))

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        """The observed PodGroup (upstream's ``PodGroups().Get`` of the cache)."""
        st = self.pod_group_state(namespace, name)
        return None if st is None else st.pod_group

    async def run_cleanup(
        self,
        interval: float = CLEANUP_PERIOD,
        on_expired: Callable[[list[PodInfo]], None] | None = None,
    ) -> None:
        """Expire assumed pods every ``interval`` seconds of the injected clock, until cancelled."""
        while True:
            await self.clock.sleep(interval)
            expired = self.cleanup_expired()
            if expired and on_expired is not None:
                on_expired(expired)

    # -- snapshots -------------------------------------------------------------------------
    def node_count(self) -> int:
        return len(self._node_zone)

    def node_order(self) -> list[str]:
        return node_tree_order(self._zones)

    def update_snapshot(self, snap: Snapshot) -> int:
        """Bring ``snap`` up to date; returns how many NodeInfos were cloned.

        Only the snapshot this cache last updated can be updated incrementally;
        any other one is rebuilt from scratch. Pod-group states are copied when changed
        (by generation), as ``updatePodGroupStateSnapshot``.
        """
        if self.generic_workload:
            snap.pod_groups_enabled = True
            states, live = snap.pod_group_states, self.pod_group_states
            for gkey in [k for k in states if k not in live]:
                del states[gkey]
            for gkey, st in live.items():
                cur = states.get(gkey)
                if cur is None or cur.generation != st.generation:
                    states[gkey] = st.clone()
        return self._update_nodes(snap)

    def _update_nodes(self, snap: Snapshot) -> int:
        reuse = snap is self._last_snap
        dirty = self._dirty
        if self._confirmed:
            # Upstream clones these again (the confirmation bumped their generation); only
            # their image counts can differ from the clone the snapshot holds.
            for name in self._confirmed:
                confirmed = self.nodes.get(name)
                if confirmed is None or confirmed.node is None or name in dirty:
                    continue
                if self._freeze_images(name, confirmed):
                    dirty.add(name)
            self._confirmed.clear()
        if self._structure_changed or not reuse:
            infos: list[NodeInfo] = []
            cloned = 0
            for name in node_tree_order(self._zones):
                old = snap.get(name) if reuse and name not in dirty else None
                if old is None:
                    live = self.nodes[name]
                    # a snapshot of its own clones every node with the counts of now
                    self._freeze_images(name, live, force=not reuse)
                    old = live.clone()
                    cloned += 1
                infos.append(old)
            snap.rebuild(infos)
            self._structure_changed = False
            self._dirty.clear()
            self._last_snap = snap
            return cloned
        count = 0
        for name in self._dirty:
            i = snap.row(name)
            ni = self.nodes.get(name)
            if i is None or ni is None or ni.node is None:
                continue
            self._freeze_images(name, ni)
            snap.replace(i, ni.clone())
            count += 1
        self._dirty.clear()
        return count

    def dump(self) -> dict[str, Any]:
        """JSON-ready view for /debug/cache: node aggregates, node-tree order, assumed pods."""

        def node_row(name: str, ni: NodeInfo) -> dict[str, Any]:
            return {
                "zone": _zone_label(self._node_zone.get(name, "")),
                "deleted": ni.node is None,
                "generation": ni.generation,
                "pods": [p.key for p in ni.pods],
                "podsWithAffinity": len(ni.pods_with_affinity),
                "podsWithRequiredAntiAffinity": len(ni.pods_with_required_anti_affinity),
                "usedPorts": sorted(
                    f"{ip}/{proto}/{port}"
                    for ip, pp in ni.used_ports.ports.items()
                    for proto, port in pp
                ),
                "images": len(ni.image_states),
                **ni.resource_fields(),
            }

        wall = wall_clock(self.clock)
        assumed = []
        for key in sorted(self.assumed):
            st = self.pod_states[key]
            assumed.append(
                {
                    "pod": st.pod.key,
                    "node": st.node,
                    "bindingFinished": st.binding_finished,
                    "deadline": wall(st.deadline),
                }
            )
        return {
            "now": wall(self.clock.now()),
            "nodeTree": node_tree_order(self._zones),
            "nodes": {name: node_row(name, ni) for name, ni in sorted(self.nodes.items())},
            "assumedPods": assumed,
            "pods": len(self.pod_states),
            "images": len(self._images),
        }

    def list_pods(self) -> Iterable[PodInfo]:
        return (st.pod for st in self.pod_states.values())
