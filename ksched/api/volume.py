"""PV/PVC helpers of ``component-helpers/storage/volume`` and ``.../ephemeral``.

What the scheduler's volume binder shares with the PV controller: the annotations both
read and write, a claim's and a volume's storage class, the PV node affinity check, and
``FindMatchingVolume`` (the smallest available PV that satisfies a claim on a node, a
PV pre-bound to the claim winning outright). Here, below both, because the simulated
PV controller (``sim/pv_controller.py``) uses them too, and a simulator reaching into a
plugin's internals breaks when the plugin changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

import msgspec

from .objects import (
    InvalidObjectError,
    NodeSelector,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    ResourceList,
    StorageClass,
    TopologySelectorTerm,
    Volume,
)
from .quantity import QuantityError, parse_quantity
from .selectors import (
    CompiledNodeSelector,
    SelectorError,
    compile_label_selector,
    compile_node_selector,
)

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_SELECTED_NODE",
    "NOT_SUPPORTED_PROVISIONER",
    "CandidateList",
    "check_node_affinity",
    "claim_candidates",
    "claim_class",
    "claim_name",
    "find_matching_volume",
    "get_bind_volume_to_claim",
    "is_delay_binding_mode",
    "is_volume_bound_to_claim",
    "match_topology_selector_terms",
    "storage_request",
    "volume_class",
    "volume_is_for_pod",
]

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
# The beta storage-class annotation still wins over spec.storageClassName.
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"

STORAGE = "storage"
VOLUME_AVAILABLE = "Available"
CLAIM_LOST = "Lost"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
_FILESYSTEM = "Filesystem"


def claim_name(pod: Pod, vol: Volume) -> tuple[str, bool]:
    """The PVC a pod volume uses and whether it is a generic ephemeral one ("" if none)."""
    if vol.persistent_volume_claim is not None:
        return vol.persistent_volume_claim.claim_name, False
    if vol.ephemeral is not None:
        # ephemeral.VolumeClaimName: the controller names the claim after pod and volume.
        return f"{pod.metadata.name}-{vol.name}", True
    return "", False


def volume_is_for_pod(pod: Pod, pvc: PersistentVolumeClaim) -> str:
    """``ephemeral.VolumeIsForPod``: an ephemeral volume's PVC must be controlled by the pod
    (a PVC of that name made by someone else must not be used); the error, or ""."""
    meta = pvc.metadata
    owned = meta.namespace == pod.metadata.namespace and any(
        ref.controller and ref.uid == pod.metadata.uid for ref in meta.owner_references
    )
    if owned:
        return ""
    return (
        f"PVC {meta.namespace}/{meta.name} was not created for pod "
        f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"
    )


def claim_class(pvc: PersistentVolumeClaim) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation, else spec (None is "")."""
    ann = pvc.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    if ann is not None:
        return ann
    return pvc.spec.storage_class_name or ""


def volume_class(pv: PersistentVolume) -> str:
    """``GetPersistentVolumeClass``."""
    ann = pv.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    return ann if ann is not None else pv.spec.storage_class_name


def _storage(resources: ResourceList, where: str) -> Fraction:
    """``storage`` of ``resources`` (0 when absent). The API server validates quantities;
    one that does not parse (a hand-written simulate file) is an InvalidObjectError naming
    the object and field, which fails the pod's attempt with that message."""
    raw = resources.get(STORAGE)
    if raw is None:
        return Fraction(0)
    try:
        return parse_quantity(raw)
    except QuantityError as e:
        raise InvalidObjectError(f"{where}.{STORAGE}: {e}") from None


def storage_request(pvc: PersistentVolumeClaim) -> Fraction:
    """The claim's ``resources.requests.storage`` (0 when absent)."""
    m = pvc.metadata
    where = f"PersistentVolumeClaim {m.namespace}/{m.name}: spec.resources.requests"
    return _storage(pvc.spec.resources.requests, where)


def volume_capacity(pv: PersistentVolume) -> Fraction:
    return _storage(pv.spec.capacity, f"PersistentVolume {pv.metadata.name}: spec.capacity")


# Compiled PV node affinities, by id of the selector (kept alive by the entry).
_AFFINITY_CACHE: dict[int, tuple[NodeSelector, CompiledNodeSelector | None]] = {}
_AFFINITY_CACHE_MAX = 8192


def _compiled_affinity(sel: NodeSelector) -> CompiledNodeSelector | None:
    """The PV's required node selector compiled once (None: it does not parse)."""
    got = _AFFINITY_CACHE.get(id(sel))
    if got is not None and got[0] is sel:
        return got[1]
    try:
        compiled: CompiledNodeSelector | None = compile_node_selector(sel, "nodeAffinity.required")
    except SelectorError:
        compiled = None
    if len(_AFFINITY_CACHE) >= _AFFINITY_CACHE_MAX:
        _AFFINITY_CACHE.clear()
    _AFFINITY_CACHE[id(sel)] = (sel, compiled)
    return compiled


def check_node_affinity(pv: PersistentVolume, node_labels: Mapping[str, str]) -> str:
    """``CheckNodeAffinity``: "" when a node with these labels may use ``pv``, else why not.

    As upstream, the node is matched by labels alone (matchFields on metadata.name are
    not evaluated without a node name).
    """
    na = pv.spec.node_affinity
    if na is None or na.required is None:
        return ""
    compiled = _compiled_affinity(na.required)
    if compiled is None:
        return "invalid node selector terms"
    if compiled.error:
        return compiled.error
    if not compiled.matches(node_labels, ""):
        return "no matching NodeSelectorTerms"
    return ""


def match_topology_selector_terms(
    terms: Iterable[TopologySelectorTerm], labels: Mapping[str, str]
) -> bool:
    """``MatchTopologySelectorTerms``: no terms match everything; a term matches when each
    of its keys has one of the listed values; an empty term (or one with a requirement
    without values) matches nothing."""
    any_term = False
    for term in terms:
        any_term = True
        exprs = term.match_label_expressions
        if not exprs or any(not e.values for e in exprs):
            continue
        if all(labels.get(e.key) in e.values for e in exprs):
            return True
    return not any_term


def is_volume_bound_to_claim(pv: PersistentVolume, pvc: PersistentVolumeClaim) -> bool:
    """``IsVolumeBoundToClaim``: claimRef names the claim (and its UID, when set)."""
    ref = pv.spec.claim_ref
    if ref is None:
        return False
    if ref.name != pvc.metadata.name or ref.namespace != pvc.metadata.namespace:
        return False
    return not ref.uid or ref.uid == pvc.metadata.uid


def _access_modes_ok(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    modes = set(pv.spec.access_modes)
    return all(m in modes for m in pvc.spec.access_modes)


def _volume_mode_mismatch(pvc: PersistentVolumeClaim, pv: PersistentVolume) -> bool:
    """``CheckVolumeModeMismatches``: an unset mode is Filesystem on both sides."""
    return (pvc.spec.volume_mode or _FILESYSTEM) != (pv.spec.volume_mode or _FILESYSTEM)


def find_matching_volume(
    pvc: PersistentVolumeClaim,
    volumes: Iterable[PersistentVolume] | CandidateList,
    node_labels: Mapping[str, str],
    excluded: Mapping[str, Any] | set[str],
) -> PersistentVolume | None:
    """``FindMatchingVolume`` on the scheduler path (a node is given).

    A volume pre-bound to the claim is returned if the node may use it, and none at all
    if it may not; otherwise the smallest Available volume of the claim's class whose
    capacity, volume mode, selector, access modes and node affinity fit. Volumes in
    ``excluded`` (chosen for the pod's other claims) are skipped.
    Raises ``SelectorError`` for a claim selector that does not parse.
    """
    smallest: PersistentVolume | None = None
    smallest_qty = Fraction(0)
    for pv, qty, bound_to_claim in _claim_candidates(pvc, volumes):
        if pv.metadata.name in excluded:
            continue
        affinity_ok = not check_node_affinity(pv, node_labels)
        if bound_to_claim:
            # Pre-bound: this volume or nothing (the claim is not for this node).
            return pv if affinity_ok else None
        if not affinity_ok:
            continue
        if smallest is None or smallest_qty > qty:
            smallest, smallest_qty = pv, qty
    return smallest


Candidate = tuple[PersistentVolume, Fraction, bool]


def claim_candidates(
    pvc: PersistentVolumeClaim, volumes: Iterable[PersistentVolume]
) -> list[Candidate]:
    """The volumes ``find_matching_volume`` may pick for ``pvc`` on some node, in order,
    with their capacity and whether they are pre-bound to it: every check but node
    affinity and ``excluded``. Worked out once per cycle (PreFilter), so Filter's per-node
    search scans these instead of every PV of the class on every node; passing the list
    to ``find_matching_volume`` gives the same answer as passing all the volumes."""
    return list(_claim_candidates(pvc, volumes))


def _claim_candidates(
    pvc: PersistentVolumeClaim, volumes: Iterable[PersistentVolume] | CandidateList
) -> Iterable[Candidate]:
    if isinstance(volumes, CandidateList):
        yield from volumes
        return
    requested = storage_request(pvc)
    requested_class = claim_class(pvc)
    selector = None
    if pvc.spec.selector is not None:
        where = f"{pvc.metadata.namespace}/{pvc.metadata.name}: spec.selector"
        selector = compile_label_selector(pvc.spec.selector, where)
    for pv in volumes:
        bound_to_claim = is_volume_bound_to_claim(pv, pvc)
        if pv.spec.claim_ref is not None and not bound_to_claim:
            continue
        qty = volume_capacity(pv)
        if qty < requested or _volume_mode_mismatch(pvc, pv):
            continue
        if pv.metadata.deletion_timestamp is not None:
            continue
        if bound_to_claim:
            yield pv, qty, True
            continue
        if pv.status.phase != VOLUME_AVAILABLE:
            continue
        if selector is not None and not selector.matches(pv.metadata.labels):
            continue
        if volume_class(pv) != requested_class:
            continue
        if not _access_modes_ok(pvc, pv):
            continue
        yield pv, qty, False


class CandidateList(list[Candidate]):
    """``claim_candidates`` already worked out (``find_matching_volume`` takes it as is)."""


def get_bind_volume_to_claim(
    pv: PersistentVolume, pvc: PersistentVolumeClaim
) -> tuple[PersistentVolume, bool]:
    """``GetBindVolumeToClaim``: ``pv`` with claimRef pointing at ``pvc`` (and marked
    bound-by-controller unless the user pre-bound it), and whether anything changed."""
    dirty = False
    should_set_bound_by_controller = not is_volume_bound_to_claim(pv, pvc)
    spec = pv.spec
    ref = spec.claim_ref
    meta = pvc.metadata
    if ref is None or (ref.name, ref.namespace, ref.uid) != (meta.name, meta.namespace, meta.uid):
        claim_ref = ObjectReference(
            kind="PersistentVolumeClaim",
            namespace=meta.namespace,
            name=meta.name,
            uid=meta.uid,
            api_version="v1",
            resource_version=meta.resource_version,
        )
        spec = msgspec.structs.replace(spec, claim_ref=claim_ref)
        dirty = True
    pv_meta = pv.metadata
    if should_set_bound_by_controller and ANN_BOUND_BY_CONTROLLER not in pv_meta.annotations:
        annotations = {**pv_meta.annotations, ANN_BOUND_BY_CONTROLLER: "yes"}
        pv_meta = msgspec.structs.replace(pv_meta, annotations=annotations)
        dirty = True
    if not dirty:
        return pv, False
    return msgspec.structs.replace(pv, metadata=pv_meta, spec=spec), True


def is_delay_binding_mode(pvc: PersistentVolumeClaim, classes: Mapping[str, StorageClass]) -> bool:
    """``IsDelayBindingMode``: the claim's class exists and is WaitForFirstConsumer.

    A claim without a class, or whose class is missing, binds immediately. Raises
    ``ValueError`` for a class without a binding mode (the API server defaults it).
    """
    name = claim_class(pvc)
    if not name:
        return False
    sc = classes.get(name)
    if sc is None:
        return False
    if sc.volume_binding_mode is None:
        raise ValueError(f'VolumeBindingMode not set for StorageClass "{name}"')
    return sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER
