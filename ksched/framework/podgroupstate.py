"""A pod group's members as the scheduler's cache knows them (upstream's
``backend/cache/podgroupstate.go``, without CompositePodGroups).

Every member pod the scheduler has seen is in ``all_pods``, and in exactly one of
unscheduled (pending), assumed (reserved by a cycle, binding not observed yet) and
assigned (bound); ``scheduled`` is assumed + assigned, what GangScheduling's quorum counts.
The PodGroup object is kept too, once observed: a state exists while either the object
or some member does.

The cache holds the live states; ``clone`` makes the copy a cycle's snapshot holds, which
the pod-group cycle may assume and forget pods in without touching the live one. It sits in
the framework, beside the ``Snapshot`` that holds those copies, so the framework imports
nothing of the cache.
Generations come from one process-wide counter, so a group deleted and recreated under
the same name never looks unchanged to the snapshot.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .podgroup import PodGroupState

if TYPE_CHECKING:
    from ..api.objects import Pod
    from ..api.workload import PodGroup
    from .types import PodInfo

__all__ = ["PodGroupStateData"]

_generations = itertools.count(1)


def _uid(pod: PodInfo) -> str:
    return pod.uid or pod.key


class PodGroupStateData:
    """One group's members by uid (``PodInfo``, so pods can be handed to
    ``handle.activate``); implements ``ksched.framework.podgroup.PodGroupState``."""

    __slots__ = ("all_pods", "assigned", "assumed", "generation", "pod_group", "unscheduled")

    def __init__(self) -> None:
        self.generation = 0
        self.all_pods: dict[str, PodInfo] = {}
        self.unscheduled: set[str] = set()
        self.assumed: dict[str, PodInfo] = {}
        self.assigned: set[str] = set()
        self.pod_group: PodGroup | None = None

    def _bump(self) -> None:
        self.generation = next(_generations)

    # -- changes (the cache's informer events and its assume/forget) ----------------------
    def add_pod(self, pod: PodInfo) -> None:
        """A bound pod is assigned (whatever it was before: bound by someone else);
        a pending one unscheduled."""
        self._bump()
        uid = _uid(pod)
        self.all_pods[uid] = pod
        if pod.node_name:
            self.assigned.add(uid)
            self.unscheduled.discard(uid)
            self.assumed.pop(uid, None)
        else:
            self.unscheduled.add(uid)

    def update_pod(self, old: PodInfo, new: PodInfo) -> None:
        """A new version; a binding moves the pod to assigned."""
        self._bump()
        uid = _uid(new)
        self.all_pods[uid] = new
        if not old.node_name and new.node_name:
            self.assigned.add(uid)
            self.unscheduled.discard(uid)
            self.assumed.pop(uid, None)

    def delete_pod(self, uid: str) -> None:
        self._bump()
        self.all_pods.pop(uid, None)
        self.unscheduled.discard(uid)
        self.assumed.pop(uid, None)
        self.assigned.discard(uid)

    def assume_pod(self, pod: PodInfo) -> None:
        """Reserved by a cycle; a pod the group never saw (deleted meanwhile) is ignored."""
        uid = _uid(pod)
        stored = self.all_pods.get(uid)
        if stored is None:
            return
        self._bump()
        if stored.node_name:
            self.assigned.add(uid)
        else:
            self.assumed[uid] = pod
        self.unscheduled.discard(uid)

    def forget_pod(self, uid: str) -> None:
        """Back from assumed to unscheduled (or assigned, if it was bound meanwhile)."""
        pod = self.all_pods.get(uid)
        if pod is None:
            return
        self._bump()
        self.assumed.pop(uid, None)
        if pod.node_name:
            self.assigned.add(uid)
        else:
            self.unscheduled.add(uid)

    def set_pod_group(self, pg: PodGroup | None) -> None:
        self._bump()
        self.pod_group = pg

    def empty(self) -> bool:
        return not self.all_pods and self.pod_group is None

    def clone(self) -> PodGroupStateData:
        """A copy for a snapshot (pods and the PodGroup are shared, never mutated)."""
        c = PodGroupStateData()
        c.generation = self.generation
        c.all_pods = dict(self.all_pods)
        c.unscheduled = set(self.unscheduled)
        c.assumed = dict(self.assumed)
        c.assigned = set(self.assigned)
        c.pod_group = self.pod_group
        return c

    # -- PodGroupState ----------------------------------------------------------------------
    def all_pods_count(self) -> int:
        return len(self.all_pods)

    def unscheduled_pods(self) -> Mapping[str, Pod]:
        """By pod name, as upstream's (the argument of ``PodActivator.Activate``)."""
        return {p.pod.metadata.name: p.pod for p in self.unscheduled_pod_infos()}

    def unscheduled_pod_infos(self) -> list[PodInfo]:
        """The unscheduled members, as ``handle.activate`` takes them."""
        return [self.all_pods[uid] for uid in self.unscheduled]

    def assumed_pods(self) -> frozenset[str]:
        return frozenset(self.assumed)

    def assigned_pods(self) -> frozenset[str]:
        return frozenset(self.assigned)

    def scheduled_pods(self) -> list[Pod]:
        out = [self.all_pods[uid].pod for uid in self.assigned]
        out.extend(p.pod for p in self.assumed.values())
        return out

    def scheduled_pods_count(self) -> int:
        return len(self.assumed) + len(self.assigned)


def _implements_protocol(s: PodGroupStateData) -> PodGroupState:
    """mypy checks here that the class satisfies the shared protocol."""
    return s
