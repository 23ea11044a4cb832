"""The scheduler's volume binder (upstream ``volumebinding/binder.go``).

PreFilter sorts a pod's claims (``get_pod_volume_claims``); Filter asks, per node,
whether bound claims' PVs may be used there and whether unbound WaitForFirstConsumer
claims can get a PV — an existing one (static binding) or a new one from their class's
provisioner (dynamic provisioning, where a CSI driver that reports storage capacity must have room
for the claim in a CSIStorageCapacity the node can reach) — (``find_pod_volumes``);
Reserve records the choice for the chosen node in the assume caches
(``assume_pod_volumes``); PreBind writes it (PV claimRef, PVC selected-node annotation)
and waits until the PV controller reports every claim bound (``bind_pod_volumes``).

Left out, as the README's configuration section says: in-tree to CSI translation of PVs,
and VolumeAttributesClass matching.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

import msgspec

from ...api.objects import (
    CSIDriver,
    CSIStorageCapacity,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    StorageClass,
)
from ...api.quantity import QuantityError, parse_quantity
from ...api.selectors import SelectorError, compile_label_selector
from ...api.volume import (
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    CandidateList,
    check_node_affinity,
    claim_candidates,
    claim_class,
    claim_name,
    find_matching_volume,
    get_bind_volume_to_claim,
    is_delay_binding_mode,
    match_topology_selector_terms,
    storage_request,
    volume_class,
    volume_is_for_pod,
)
from ...framework.listers import Listers
from ...util.clock import Clock
from ...util.errors import KschedError
from .assume_cache import AssumeCache, resource_version

__all__ = [
    "CSI_DRIVERS",
    "CSI_STORAGE_CAPACITIES",
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "PVCS",
    "PVS",
    "STORAGE_CLASSES",
    "BindingInfo",
    "PodVolumeClaims",
    "PodVolumes",
    "VolumeBinder",
    "VolumeBindingError",
    "VolumeWriter",
    "volume_limit",
]

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
# ``ErrReasonNodeConflict`` as v1.36 prints it (older releases: "had volume node affinity
# conflict"); the differential harness reads it from the real kube-scheduler.
ERR_REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)

# handle.listers keys (the daemon's informers keep them current)
PVCS = Listers.PERSISTENT_VOLUME_CLAIMS
PVS = Listers.PERSISTENT_VOLUMES
STORAGE_CLASSES = Listers.STORAGE_CLASSES
CSI_DRIVERS = Listers.CSI_DRIVERS
CSI_STORAGE_CAPACITIES = Listers.CSI_STORAGE_CAPACITIES

# upstream polls the API objects once a second while waiting for the PV controller
_POLL_INTERVAL = 1.0


class VolumeBindingError(KschedError):
    """A failure the binder reports as an Error status (not a node's unfitness)."""


def pvc_key(pvc: PersistentVolumeClaim) -> str:
    return f"{pvc.metadata.namespace}/{pvc.metadata.name}"


@dataclass(slots=True)
class BindingInfo:
    """A PVC and the PV proposed for it."""

    pvc: PersistentVolumeClaim
    pv: PersistentVolume

    def storage_class_name(self) -> str:
        return self.pv.spec.storage_class_name


@dataclass(slots=True)
class PodVolumes:
    """What one node needs for the pod: PVs to bind, and PVCs to provision."""

    static_bindings: list[BindingInfo] = field(default_factory=list)
    dynamic_provisions: list[PersistentVolumeClaim] = field(default_factory=list)
    # claim key -> the CSIStorageCapacity that has room for it on the node (upstream's
    # DynamicProvision.NodeCapacity; absent when its driver reports no capacity)
    node_capacities: dict[str, CSIStorageCapacity] = field(default_factory=dict)


@dataclass(slots=True)
class PodVolumeClaims:
    """A pod's claims by state (upstream ``PodVolumeClaims``)."""

    bound_claims: list[PersistentVolumeClaim] = field(default_factory=list)
    # unbound, WaitForFirstConsumer: the scheduler binds or provisions them
    unbound_claims_delay_binding: list[PersistentVolumeClaim] = field(default_factory=list)
    # unbound, Immediate (or pre-bound to a PV): the PV controller should have bound them
    unbound_claims_immediate: list[PersistentVolumeClaim] = field(default_factory=list)
    # storage class -> its PVs, for the delay-binding claims
    unbound_volumes_delay_binding: dict[str, list[PersistentVolume]] = field(default_factory=dict)
    # claim key -> the PVs it may match on some node (``claim_candidates``), filled by the
    # first Filter call of the cycle and reused for every other node
    candidates: dict[str, CandidateList] = field(default_factory=dict)


def is_pvc_fully_bound(pvc: PersistentVolumeClaim) -> bool:
    return bool(pvc.spec.volume_name) and ANN_BIND_COMPLETED in pvc.metadata.annotations


class VolumeWriter(Protocol):
    """The API writes VolumeBinding's PreBind makes, declared by the plugin (no other
    plugin makes them); every cluster client ksched builds a scheduler with implements
    them (``ksched.profile.SchedulerCluster``)."""

    async def update_persistent_volume(self, pv: PersistentVolume) -> PersistentVolume:
        """Write ``pv``'s claimRef and annotations, only if its resourceVersion is still the
        stored one; return the stored PV. Raise ``BindError``."""

    async def update_persistent_volume_claim(
        self, pvc: PersistentVolumeClaim
    ) -> PersistentVolumeClaim:
        """Write ``pvc``'s annotations (the selected node that triggers provisioning), only
        if its resourceVersion is still the stored one; return the stored PVC. Raise
        ``BindError``."""


class VolumeBinder:
    """``volumeBinder`` over ``handle.listers`` and the handle's cluster client."""

    def __init__(
        self,
        listers: Callable[[], Mapping[str, Any]],
        cluster: Callable[[], VolumeWriter],
        clock: Callable[[], Clock],
        node: Callable[[str], Node | None],
        bind_timeout: float,
    ) -> None:
        self._listers = listers
        self._cluster = cluster
        self._clock = clock
        self._node = node
        self.bind_timeout = bind_timeout
        self.pvc_cache: AssumeCache[PersistentVolumeClaim] = AssumeCache(
            lambda: self._lister(PVCS), "v1.PersistentVolumeClaim"
        )
        self.pv_cache: AssumeCache[PersistentVolume] = AssumeCache(
            lambda: self._lister(PVS), "v1.PersistentVolume", volume_class
        )

    def _lister(self, key: str) -> Mapping[str, Any]:
        got = self._listers().get(key)
        return got if got is not None else {}

    # -- PreFilter ----------------------------------------------------------------------------
    def _is_volume_bound(
        self, pod: Pod, name: str, ephemeral: bool
    ) -> tuple[bool, PersistentVolumeClaim]:
        key = f"{pod.metadata.namespace}/{name}"
        pvc = self.pvc_cache.get(key)
        if pvc is None:
            raise VolumeBindingError(
                f'error getting PVC "{key}": could not find v1.PersistentVolumeClaim "{key}"'
            )
        if ephemeral:
            problem = volume_is_for_pod(pod, pvc)
            if problem:
                raise VolumeBindingError(problem)
        return is_pvc_fully_bound(pvc), pvc

    def get_pod_volume_claims(self, pod: Pod) -> PodVolumeClaims:
        """Sort the pod's claims into bound, delay-binding and immediate ones."""
        out = PodVolumeClaims()
        classes = self._lister(STORAGE_CLASSES)
        for vol in pod.spec.volumes:
            name, ephemeral = claim_name(pod, vol)
            if not name:
                continue
            bound, pvc = self._is_volume_bound(pod, name, ephemeral)
            if bound:
                out.bound_claims.append(pvc)
                continue
            try:
                delay = is_delay_binding_mode(pvc, classes)
            except ValueError as e:
                raise VolumeBindingError(str(e)) from None
            if delay and not pvc.spec.volume_name:
                out.unbound_claims_delay_binding.append(pvc)
            else:
                # Pre-bound claims count as immediate: the PV controller finishes them.
                out.unbound_claims_immediate.append(pvc)
        for pvc in out.unbound_claims_delay_binding:
            cls = claim_class(pvc)
            out.unbound_volumes_delay_binding[cls] = self.pv_cache.list_group(cls)
        return out

    # -- Filter -------------------------------------------------------------------------------
    def find_pod_volumes(
        self, pod: Pod, claims: PodVolumeClaims, node: Node
    ) -> tuple[PodVolumes, list[str]]:
        """``FindPodVolumes``: what the node needs for the pod, and why it does not fit.

        Raises ``VolumeBindingError`` for problems no node can fix here (a claim without a
        class to provision from, a missing class).
        """
        pv = PodVolumes()
        labels = node.metadata.labels
        bound_ok = unbound_ok = pvs_found = enough_space = True
        if claims.bound_claims:
            bound_ok, pvs_found = self._check_bound_claims(claims.bound_claims, labels)
        if claims.unbound_claims_delay_binding:
            unbound_ok, enough_space = self._find_unbound(pod, claims, node, pv)
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not enough_space:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return pv, reasons

    def _find_unbound(
        self, pod: Pod, claims: PodVolumeClaims, node: Node, out: PodVolumes
    ) -> tuple[bool, bool]:
        """(every claim gets a PV or a provisioner, the provisioners have room)."""
        to_match: list[PersistentVolumeClaim] = []
        to_provision: list[PersistentVolumeClaim] = []
        for pvc in claims.unbound_claims_delay_binding:
            selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is None:
                to_match.append(pvc)
            elif selected != node.metadata.name:
                return False, True  # being provisioned for another node
            else:
                to_provision.append(pvc)
        ok = enough = True
        if to_match:
            ok, out.static_bindings, unmatched = self._find_matching_volumes(
                to_match, claims.unbound_volumes_delay_binding, node, claims.candidates
            )
            to_provision += unmatched
        if to_provision:
            ok, enough = self._check_volume_provisions(to_provision, node, out)
        return ok, enough

    def _check_bound_claims(
        self, claims: list[PersistentVolumeClaim], labels: Mapping[str, str]
    ) -> tuple[bool, bool]:
        """(node affinity of every bound PV fits, every bound PV exists)."""
        for pvc in claims:
            pv = self.pv_cache.get(pvc.spec.volume_name)
            if pv is None:
                return True, False
            if check_node_affinity(pv, labels):
                return False, True
        return True, True

    def _find_matching_volumes(
        self,
        claims: list[PersistentVolumeClaim],
        volumes: Mapping[str, list[PersistentVolume]],
        node: Node,
        memo: dict[str, CandidateList] | None = None,
    ) -> tuple[bool, list[BindingInfo], list[PersistentVolumeClaim]]:
        """Smallest claims first, each taking the smallest fitting PV nobody took yet."""
        chosen: set[str] = set()
        bindings: list[BindingInfo] = []
        unmatched: list[PersistentVolumeClaim] = []
        for pvc in sorted(claims, key=storage_request):
            try:
                key = pvc_key(pvc)
                cands = None if memo is None else memo.get(key)
                if cands is None:
                    found = claim_candidates(pvc, volumes.get(claim_class(pvc), ()))
                    cands = CandidateList(found)
                    if memo is not None:
                        memo[key] = cands
                pv = find_matching_volume(pvc, cands, node.metadata.labels, chosen)
            except ValueError as e:
                raise VolumeBindingError(str(e)) from None
            if pv is None:
                unmatched.append(pvc)
                continue
            chosen.add(pv.metadata.name)
            bindings.append(BindingInfo(pvc, pv))
        return not unmatched, bindings, unmatched

    def _check_volume_provisions(
        self, claims: list[PersistentVolumeClaim], node: Node, out: PodVolumes
    ) -> tuple[bool, bool]:
        """``checkVolumeProvisions``: (every claim's class can provision a volume reachable
        from the node, its driver has room for it there); fills ``out`` when both hold."""
        classes: Mapping[str, StorageClass] = self._lister(STORAGE_CLASSES)
        capacities: dict[str, CSIStorageCapacity] = {}
        for pvc in claims:
            name = claim_class(pvc)
            if not name:
                raise VolumeBindingError(f'no class for claim "{pvc_key(pvc)}"')
            sc = classes.get(name)
            if sc is None:
                raise VolumeBindingError(f'failed to find storage class "{name}"')
            if sc.provisioner in ("", NOT_SUPPORTED_PROVISIONER):
                return False, True
            if not match_topology_selector_terms(sc.allowed_topologies, node.metadata.labels):
                return False, True
            enough, capacity = self._has_enough_capacity(sc, pvc, node)
            if not enough:
                return True, False
            if capacity is not None:
                capacities[pvc_key(pvc)] = capacity
        out.dynamic_provisions = list(claims)
        out.node_capacities = capacities
        return True, True

    def _has_enough_capacity(
        self, sc: StorageClass, pvc: PersistentVolumeClaim, node: Node
    ) -> tuple[bool, CSIStorageCapacity | None]:
        """``hasEnoughCapacity``: a driver that opts in (``CSIDriver.spec.storageCapacity``)
        needs a CSIStorageCapacity of the class, reachable from the node, whose volume
        limit holds the claim; the first one found is the node's capacity for scoring.

        Upstream lists capacities in informer (hash) order; ksched takes them by
        namespace/name, so only overlapping capacities of one class could tell apart.
        """
        if "storage" not in pvc.spec.resources.requests:
            return True, None
        driver: CSIDriver | None = self._lister(CSI_DRIVERS).get(sc.provisioner)
        if driver is None or not driver.spec.storage_capacity:
            return True, None
        size = quantity_value(storage_request(pvc))
        labels = node.metadata.labels
        store: Mapping[str, CSIStorageCapacity] = self._lister(CSI_STORAGE_CAPACITIES)
        for _, cap in sorted(store.items()):
            if cap.storage_class_name != sc.metadata.name:
                continue
            limit = volume_limit(cap)
            if limit is None or limit < size or not _node_has_access(cap, labels):
                continue
            return True, cap
        return False, None

    # -- Reserve / Unreserve ------------------------------------------------------------------
    def _are_pod_volumes_bound(self, pod: Pod) -> bool:
        for vol in pod.spec.volumes:
            name, _ = claim_name(pod, vol)
            if not name:
                continue
            pvc = self.pvc_cache.get(f"{pod.metadata.namespace}/{name}")
            if pvc is None or not is_pvc_fully_bound(pvc):
                return False
        return True

    def assume_pod_volumes(self, pod: Pod, node_name: str, volumes: PodVolumes) -> bool:
        """Record the node's bindings and provisionings in the caches; True when every
        claim is bound already (nothing for PreBind to do)."""
        if self._are_pod_volumes_bound(pod):
            return True
        bindings: list[BindingInfo] = []
        try:
            for b in volumes.static_bindings:
                new_pv, dirty = get_bind_volume_to_claim(b.pv, b.pvc)
                if dirty:
                    self.pv_cache.assume(new_pv.metadata.name, new_pv)
                bindings.append(BindingInfo(b.pvc, new_pv))
        except Exception:
            self._revert_pvs(bindings)
            raise
        provisions: list[PersistentVolumeClaim] = []
        try:
            for pvc in volumes.dynamic_provisions:
                annotations = {**pvc.metadata.annotations, ANN_SELECTED_NODE: node_name}
                meta = msgspec.structs.replace(pvc.metadata, annotations=annotations)
                clone = msgspec.structs.replace(pvc, metadata=meta)
                self.pvc_cache.assume(pvc_key(clone), clone)
                provisions.append(clone)
        except Exception:
            self._revert_pvs(bindings)
            self._revert_pvcs(provisions)
            raise
        volumes.static_bindings = bindings
        volumes.dynamic_provisions = provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        self._revert_pvs(volumes.static_bindings)
        self._revert_pvcs(volumes.dynamic_provisions)

    def _revert_pvs(self, bindings: list[BindingInfo]) -> None:
        for b in bindings:
            self.pv_cache.restore(b.pv.metadata.name)

    def _revert_pvcs(self, claims: list[PersistentVolumeClaim]) -> None:
        for pvc in claims:
            self.pvc_cache.restore(pvc_key(pvc))

    # -- PreBind ------------------------------------------------------------------------------
    async def bind_pod_volumes(self, pod: Pod, node_name: str, volumes: PodVolumes) -> None:
        """Write the assumed bindings, then wait (``bind_timeout``) until the PV controller
        bound every claim. Raises ``VolumeBindingError`` (or the client's ``BindError``)."""
        await self._bind_api_update(volumes)
        clock = self._clock()
        deadline = clock.now() + self.bind_timeout
        while True:
            try:
                if self._check_bindings(pod, node_name, volumes):
                    return
            except VolumeBindingError as e:
                raise VolumeBindingError(f"binding volumes: {e}") from None
            if clock.now() >= deadline:
                raise VolumeBindingError("binding volumes: context deadline exceeded")
            await clock.sleep(min(_POLL_INTERVAL, max(0.0, deadline - clock.now())))

    async def _bind_api_update(self, volumes: PodVolumes) -> None:
        """PV claimRefs first, then PVC annotations; what was not written is un-assumed."""
        bindings, claims = volumes.static_bindings, volumes.dynamic_provisions
        cluster = self._cluster()
        done_bindings = done_claims = 0
        try:
            for b in bindings:
                b.pv = await cluster.update_persistent_volume(b.pv)
                done_bindings += 1
            for i, pvc in enumerate(claims):
                claims[i] = await cluster.update_persistent_volume_claim(pvc)
                done_claims += 1
        finally:
            self._revert_pvs(bindings[done_bindings:])
            self._revert_pvcs(claims[done_claims:])

    def _check_bindings(self, pod: Pod, node_name: str, volumes: PodVolumes) -> bool:
        """``checkBindings`` on the API objects: True once every claim is fully bound; raises
        when binding can no longer succeed (claimRef or selected node reset, PV on a node
        the pod is not on)."""
        node = self._node(node_name)
        if node is None:
            raise VolumeBindingError(f'failed to get node "{node_name}": not found')
        labels = node.metadata.labels
        for b in volumes.static_bindings:
            pv = self.pv_cache.get_api(b.pv.metadata.name)
            if pv is None:
                raise VolumeBindingError(
                    "failed to check binding: could not find v1.PersistentVolume "
                    f'"{b.pv.metadata.name}"'
                )
            pvc = self.pvc_cache.get_api(pvc_key(b.pvc))
            if pvc is None:
                raise VolumeBindingError(
                    "failed to check binding: could not find v1.PersistentVolumeClaim "
                    f'"{pvc_key(b.pvc)}"'
                )
            if resource_version(b.pv) > resource_version(pv):
                return False  # our write has not come back through the watch yet
            self._check_affinity(pv, node_name, labels)
            if pv.spec.claim_ref is None or not pv.spec.claim_ref.uid:
                raise VolumeBindingError(f'ClaimRef got reset for pv "{pv.metadata.name}"')
            if not is_pvc_fully_bound(pvc):
                return False
        for claim in volumes.dynamic_provisions:
            pvc = self.pvc_cache.get_api(pvc_key(claim))
            if pvc is None:
                raise VolumeBindingError(
                    "failed to check provisioning pvc: could not find "
                    f'v1.PersistentVolumeClaim "{pvc_key(claim)}"'
                )
            if resource_version(claim) > resource_version(pvc):
                return False
            if not pvc.metadata.annotations:
                raise VolumeBindingError(
                    f'selectedNode annotation reset for PVC "{pvc.metadata.name}"'
                )
            if pvc.metadata.annotations.get(ANN_SELECTED_NODE) != node_name:
                # The provisioner drops the annotation to make the scheduler retry.
                raise VolumeBindingError(f'provisioning failed for PVC "{pvc.metadata.name}"')
            if pvc.spec.volume_name:
                pv = self.pv_cache.get_api(pvc.spec.volume_name)
                if pv is None:
                    return False  # not in the informer yet
                self._check_affinity(pv, node_name, labels)
            if not is_pvc_fully_bound(pvc):
                return False
        return True

    @staticmethod
    def _check_affinity(pv: PersistentVolume, node_name: str, labels: Mapping[str, str]) -> None:
        problem = check_node_affinity(pv, labels)
        if problem:
            raise VolumeBindingError(
                f'pv "{pv.metadata.name}" node affinity doesn\'t match node "{node_name}": '
                f"{problem}"
            )


def quantity_value(q: Fraction) -> int:
    """``Quantity.Value()``: whole units, rounded up."""
    return math.ceil(q)


def volume_limit(cap: CSIStorageCapacity) -> int | None:
    """``volumeLimit`` as ``Value()``: maximumVolumeSize when set (more precise), else
    capacity; None when neither is (or it does not parse: the API server validates it)."""
    raw = cap.maximum_volume_size if cap.maximum_volume_size is not None else cap.capacity
    if raw is None:
        return None
    try:
        return quantity_value(parse_quantity(raw))
    except QuantityError:
        return None


def _node_has_access(cap: CSIStorageCapacity, labels: Mapping[str, str]) -> bool:
    """``nodeHasAccess``: by nodeTopology labels; no topology (or a bad one) reaches none."""
    if cap.node_topology is None:
        return False
    try:
        selector = compile_label_selector(cap.node_topology, "nodeTopology")
    except SelectorError:
        return False
    return selector.matches(labels)
