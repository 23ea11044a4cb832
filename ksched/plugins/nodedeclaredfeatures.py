"""NodeDeclaredFeatures: a pod that needs a node feature goes only where a node declares it.

kube-scheduler v1.36's plugin (feature gate ``NodeDeclaredFeatures``, beta and on). The
features a pod needs are inferred from its spec (``ksched.api.nodefeatures``, upstream's
``component-helpers/nodedeclaredfeatures``): a ``RestartAllContainers`` restart rule, the
host network with ``hostUsers: false`` and, from v1.37 (component-helpers v0.37.2), a
volume mount with ``bindMountOptions``. PreFilter skips pods that need none, so the plugin
costs nothing for the rest; Filter rejects nodes whose ``status.declaredFeatures`` lack
one (UnschedulableAndUnresolvable: preemption cannot add a feature). The batch form checks
every node at once against the snapshot's feature-bitmap column.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..api.nodefeatures import infer_for_pod_scheduling
from ..api.objects import Node
from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.handle import Handle
from ..framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    NodeOnlyFilter,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
)
from ..framework.snapshot import BoolArray, Snapshot
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from . import names
from .helper import gates_of

__all__ = ["ERR_REASON_UNSATISFIED_REQUIREMENTS", "NodeDeclaredFeatures", "pod_requirements"]

ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"
PRE_FILTER_KEY = "PreFilter" + names.NODE_DECLARED_FEATURES
_CACHE = names.NODE_DECLARED_FEATURES + "/requirements"


def pod_requirements(pod: PodInfo, release: tuple[int, int] = (1, 37)) -> int:
    """The features the pod's spec needs in ``release``, as a bitmap (inferred once per pod
    version and release)."""
    key = f"{_CACHE}/{release[0]}.{release[1]}"
    got = pod.cache.get(key)
    if got is None:
        got = pod.cache[key] = infer_for_pod_scheduling(pod.pod.spec, release=release)
    return int(got)


class NodeDeclaredFeatures(PreFilterPlugin[NoArgs], NodeOnlyFilter[NoArgs]):
    name = names.NODE_DECLARED_FEATURES

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        # the component-helpers registry of the emulated release
        self.release = (1, 37) if gates_of(handle).at_least("1.37") else (1, 36)

    def sign_pod(self, pod: PodInfo) -> Any:
        return pod_requirements(pod, self.release)

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        """Skip pods that need no feature; keep the requirements for Filter otherwise."""
        reqs = pod_requirements(pod, self.release)
        if not reqs:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, reqs)
        return None, None

    def _requirements(self, state: CycleState, pod: PodInfo) -> int:
        reqs = state.get(PRE_FILTER_KEY)
        return int(reqs) if reqs is not None else pod_requirements(pod, self.release)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        reqs = self._requirements(state, pod)
        if reqs & ~node.declared_features:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSATISFIED_REQUIREMENTS)
        return None

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        reqs = np.uint64(self._requirements(state, pod))
        out: BoolArray = (snap.declared_features & reqs) == reqs
        return out

    # -- queueing hints ----------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Node Add|UpdateNodeDeclaredFeature and updates of the pod itself, as upstream."""
        node_hint = self.is_schedulable_after_node_change
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD), node_hint),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_DECLARED_FEATURE),
                node_hint,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE),
                self.is_schedulable_after_pod_update,
            ),
        ]

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue on a new node or a change of a node's declared features (upstream does not
        check whether the node now has the pod's features)."""
        if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
            raise TypeError(f"expected Node, got {type(old).__name__}, {type(new).__name__}")
        if old is not None and old.status.declared_features == new.status.declared_features:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_update(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue when the rejected pod's own update changed the features it needs."""
        if not isinstance(new, PodInfo) or not isinstance(old, PodInfo):
            raise TypeError(f"expected PodInfo, got {type(old).__name__}, {type(new).__name__}")
        if (new.uid or new.key) != (pod.uid or pod.key):
            return QueueingHint.SKIP
        before = infer_for_pod_scheduling(old.pod.spec, release=self.release)
        after = infer_for_pod_scheduling(new.pod.spec, release=self.release)
        return QueueingHint.SKIP if before == after else QueueingHint.QUEUE
