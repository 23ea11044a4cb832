"""The VolumeBinding plugin (upstream ``volumebinding/volume_binding.go``).

A pod without PVCs (plain or generic ephemeral volumes) is skipped at PreFilter and
costs a state lookup at Reserve and PreBind. For a pod with PVCs, PreFilter rejects it
while a claim is missing, lost, being deleted, or unbound with Immediate binding (the
PV controller binds those); Filter keeps the nodes where bound claims' PVs may be used
and unbound WaitForFirstConsumer claims can get a PV; Reserve assumes the chosen node's
bindings; PreBind writes them and waits for the PV controller; Unreserve reverts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from ...api.objects import Node, PersistentVolumeClaim, Pod
from ...api.quantity import parse_quantity
from ...api.volume import (
    CLAIM_LOST,
    claim_name,
    storage_request,
    volume_capacity,
    volume_is_for_pod,
)
from ...framework.cycle_state import CycleState
from ...framework.events import ActionType, EventResource
from ...framework.handle import Handle
from ...framework.interface import (
    NOT_SIGNABLE,
    ClusterEvent,
    ClusterEventWithHint,
    FilterPlugin,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ReservePlugin,
    ScorePlugin,
)
from ...framework.snapshot import IntArray, Snapshot
from ...framework.status import Code, Status
from ...framework.types import NodeInfo, PodInfo
from ...util.clock import Clock
from .. import names
from ..helper import RowArray
from ..noderesources.requested_to_capacity_ratio import (
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    broken_linear_function,
)
from .args import VolumeBindingArgs
from .binder import (
    CSI_DRIVERS,
    CSI_STORAGE_CAPACITIES,
    PVCS,
    PVS,
    STORAGE_CLASSES,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
    VolumeWriter,
    quantity_value,
    volume_limit,
)

__all__ = ["VolumeBinding"]

STATE_KEY = names.VOLUME_BINDING
_NOT_FOUND = f'reading "{STATE_KEY}" from cycleState: not found'
# CSINode's list of in-tree plugins migrated to CSI (v1.MigratedPluginsAnnotationKey).
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"


class _State:
    """``stateData``: one per cycle, shared (not copied) by clones as upstream's."""

    __slots__ = ("all_bound", "by_node", "claims")

    def __init__(self, claims: PodVolumeClaims | None) -> None:
        self.claims = claims
        self.all_bound = claims is None
        self.by_node: dict[str, PodVolumes] = {}

    def clone(self) -> _State:
        return self


def _uses_claims(pod: Pod) -> bool:
    if not pod.spec.volumes:
        return False  # most pods: no generator to build
    return any(
        v.persistent_volume_claim is not None or v.ephemeral is not None for v in pod.spec.volumes
    )


class VolumeBinding(
    PreFilterPlugin[VolumeBindingArgs],
    FilterPlugin[VolumeBindingArgs],
    PreScorePlugin[VolumeBindingArgs],
    ScorePlugin[VolumeBindingArgs],
    ReservePlugin[VolumeBindingArgs],
    PreBindPlugin[VolumeBindingArgs],
):
    """Binds a pod's PersistentVolumeClaims to PVs, or has them provisioned, on its node."""

    name = names.VOLUME_BINDING
    reads_listers = frozenset({PVCS, PVS, STORAGE_CLASSES, CSI_DRIVERS, CSI_STORAGE_CAPACITIES})
    Args = VolumeBindingArgs
    args: VolumeBindingArgs

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        self._handle: Handle = handle if handle is not None else Handle()
        super().__init__(args, self._handle)
        args = self.args
        self.binder = VolumeBinder(
            self._listers, self._cluster, self._clock, self._node, float(args.bind_timeout_seconds)
        )
        shape = args.shape
        self._score_table: list[int] | None = None
        # Upstream builds its scorer only with StorageCapacityScoring on (config validation
        # refuses a shape without it; plugin args given directly may still have one).
        if shape and self._handle.features.enabled("StorageCapacityScoring"):
            scale = 100 // MAX_CUSTOM_PRIORITY_SCORE
            scaled = [(p.utilization, p.score * scale) for p in shape]
            self._score_table = [
                broken_linear_function(scaled, p) for p in range(MAX_UTILIZATION + 1)
            ]

    # -- handle access (looked up late: the daemon fills listers after building plugins) ---
    def _listers(self) -> dict[str, Any]:
        listers: dict[str, Any] = self._handle.listers
        return listers

    def _cluster(self) -> VolumeWriter:
        # The scheduler's client offers the volume writes (``profile.SchedulerCluster``).
        return cast(VolumeWriter, self._handle.cluster)

    def _clock(self) -> Clock:
        clock: Clock = self._handle.clock
        return clock

    def _node(self, name: str) -> Node | None:
        ni = self._handle.snapshot.get(name)
        return None if ni is None else ni.node

    def sign_pod(self, pod: PodInfo) -> Any:
        """Claims' fate depends on PVs, classes and other pods' choices: not signable."""
        return NOT_SIGNABLE if _uses_claims(pod.pod) else None

    # -- PreFilter --------------------------------------------------------------------------
    def _pod_claims_problem(self, pod: Pod) -> str:
        """``podHasPVCs``'s error for the pod's claims as the API has them ("" if none)."""
        pvcs = self._listers().get(PVCS) or {}
        ns = pod.metadata.namespace
        for vol in pod.spec.volumes:
            name, ephemeral = claim_name(pod, vol)
            if not name:
                continue
            pvc: PersistentVolumeClaim | None = pvcs.get(f"{ns}/{name}")
            if pvc is None:
                if ephemeral:
                    return (
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{name}"'
                    )
                return f'persistentvolumeclaim "{name}" not found'
            if pvc.status.phase == CLAIM_LOST:
                return (
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                    f'"{pvc.spec.volume_name}"'
                )
            if pvc.metadata.deletion_timestamp is not None:
                return f'persistentvolumeclaim "{name}" is being deleted'
            if ephemeral:
                problem = volume_is_for_pod(pod, pvc)
                if problem:
                    return problem
        return ""

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        p = pod.pod
        if not _uses_claims(p):
            state.write(STATE_KEY, _State(None))
            return None, Status(Code.SKIP)
        problem = self._pod_claims_problem(p)
        if problem:
            return None, Status.unresolvable(problem)
        try:
            claims = self.binder.get_pod_volume_claims(p)
        except Exception as e:
            return None, Status.as_error(str(e))
        if claims.unbound_claims_immediate:
            return None, Status.unresolvable("pod has unbound immediate PersistentVolumeClaims")
        state.write(STATE_KEY, _State(claims))
        return None, None

    def _state(self, state: CycleState) -> _State:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            raise KeyError(_NOT_FOUND)
        return s

    # -- Filter -----------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        s = self._state(state)
        if s.claims is None or node.node is None:
            return None
        try:
            volumes, reasons = self.binder.find_pod_volumes(pod.pod, s.claims, node.node)
        except Exception as e:
            return Status.as_error(str(e))
        if reasons:
            return Status.unresolvable(*reasons)
        s.by_node[node.name] = volumes
        return None

    # -- PreScore / Score (only with args.shape and StorageCapacityScoring) -----------------
    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        if self._score_table is None:
            return Status(Code.SKIP)
        # The table exists only with StorageCapacityScoring on, and then upstream's PreScore
        # never skips: a pod without static bindings scores by its dynamic provisioning.
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Per storage class, how full the node's storage would be, averaged: the statically
        bound PVs if there are any, else the CSIStorageCapacity of each provisioning."""
        table = self._score_table
        if table is None:
            return 0
        volumes = self._state(state).by_node.get(node.name)
        if volumes is None:
            return 0
        classes: dict[str, list[int]] = {}
        for b in volumes.static_bindings:
            acc = classes.setdefault(b.storage_class_name(), [0, 0])
            acc[0] += quantity_value(storage_request(b.pvc))
            acc[1] += quantity_value(volume_capacity(b.pv))
        if not volumes.static_bindings:
            for pvc in volumes.dynamic_provisions:
                cap = volumes.node_capacities.get(f"{pvc.metadata.namespace}/{pvc.metadata.name}")
                if cap is None:
                    continue
                # spec.storageClassName as upstream (not the beta annotation); the class's
                # capacity is the node's, however many of its claims the pod provisions.
                acc = classes.setdefault(pvc.spec.storage_class_name or "", [0, 0])
                acc[1] = _capacity_value(cap.capacity)
                acc[0] += quantity_value(storage_request(pvc))
        if not classes:
            return 0
        total = 0
        for requested, capacity in classes.values():
            if capacity == 0 or requested > capacity:
                total += table[MAX_UTILIZATION]
            else:
                total += table[requested * MAX_UTILIZATION // capacity]
        return math.floor(total / len(classes) + 0.5)  # math.Round of a non-negative

    def score_batch(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: RowArray
    ) -> IntArray:
        """``score`` over ``rows``. Upstream's PreScore does not skip with
        StorageCapacityScoring on (the default from 1.37), so every pod is scored node by
        node; the nodes its Filter kept volumes for are the only ones not scoring 0, and
        a pod without claims has none."""
        if self._score_table is None:
            return np.zeros(len(rows), dtype=np.int64)
        by_node = self._state(state).by_node  # the same error as Score without PreFilter
        if not by_node:
            return np.zeros(len(rows), dtype=np.int64)
        infos = snap.node_infos
        return np.fromiter(
            (self.score(state, pod, infos[int(r)]) for r in rows), dtype=np.int64, count=len(rows)
        )

    # -- Reserve / Unreserve ----------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = self._state(state)
        volumes = s.by_node.get(node_name)
        if volumes is None:
            s.all_bound = True  # no claims
            return None
        try:
            s.all_bound = self.binder.assume_pod_volumes(pod.pod, node_name, volumes)
        except Exception as e:
            return Status.as_error(str(e))
        return None

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, _State):
            return
        volumes = s.by_node.get(node_name)
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    # -- PreBind ----------------------------------------------------------------------------
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        """Work ahead (claims to bind or provision) unless every claim is bound already."""
        return Status(Code.SKIP) if self._state(state).all_bound else None

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status | None:
        s = self._state(state)
        if s.all_bound:
            return None
        volumes = s.by_node.get(node_name)
        if volumes is None:
            return Status.as_error(f'no pod volumes found for node "{node_name}"')
        try:
            await self.binder.bind_pod_volumes(pod.pod, node_name, volumes)
        except Exception as e:
            return Status.as_error(str(e))
        return None

    # -- queueing hints ---------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """As upstream with QueueingHints on (the only way in v1.37)."""
        sc, pvc = self.is_schedulable_after_storage_class_change, self.is_schedulable_after_pvc
        csinode = self.is_schedulable_after_csinode_change
        driver, capacity = (
            self.is_schedulable_after_csidriver_change,
            self.is_schedulable_after_csi_storage_capacity_change,
        )
        return [
            ClusterEventWithHint(ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD), sc),
            ClusterEventWithHint(ClusterEvent(EventResource.STORAGE_CLASS, ActionType.UPDATE), sc),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD), pvc
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.UPDATE), pvc
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.UPDATE)),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL)),
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.ADD), csinode),
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_NODE, ActionType.UPDATE), csinode),
            ClusterEventWithHint(ClusterEvent(EventResource.CSI_DRIVER, ActionType.UPDATE), driver),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, ActionType.ADD), capacity
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.CSI_STORAGE_CAPACITY, ActionType.UPDATE), capacity
            ),
        ]

    def is_schedulable_after_pvc(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue for a claim the pod uses (in its namespace)."""
        meta = new.metadata
        p = pod.pod
        if meta.namespace != p.metadata.namespace:
            return QueueingHint.SKIP
        for vol in p.spec.volumes:
            name, _ = claim_name(p, vol)
            if name and name == meta.name:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_storage_class_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """A new class, or new allowedTopologies (the binding mode cannot change)."""
        if old is None or old.allowed_topologies != new.allowed_topologies:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_csinode_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """A new CSINode, or a change of the in-tree plugins migrated to CSI."""
        if old is None:
            return QueueingHint.QUEUE
        key = MIGRATED_PLUGINS_ANNOTATION
        if old.metadata.annotations.get(key) != new.metadata.annotations.get(key):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_csi_storage_capacity_change(
        self, pod: PodInfo, old: Any, new: Any
    ) -> str:
        """A new capacity, or a raised volume limit (class and topology are immutable)."""
        if old is None:
            return QueueingHint.QUEUE
        before, after = volume_limit(old), volume_limit(new)
        if after is not None and (before is None or after > before):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_csidriver_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        """The storage capacity check was turned off for a driver of the pod's inline CSI
        volumes (upstream looks at inline volumes only, not at claims' provisioners)."""
        was_on = old is not None and bool(old.spec.storage_capacity)
        if not was_on or new.spec.storage_capacity:
            return QueueingHint.SKIP
        for vol in pod.pod.spec.volumes:
            if vol.csi is not None and vol.csi.driver == new.metadata.name:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _capacity_value(raw: Any) -> int:
    """``Capacity.Value()`` of a capacity ``volume_limit`` already found sufficient (0 when
    unset: upstream's scorer would dereference nil there)."""
    if raw is None:
        return 0
    return quantity_value(parse_quantity(raw))
