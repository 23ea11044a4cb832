"""NodeResourcesFit: does the node have room for the pod's requests, and how full is it.

Filter follows upstream ``fitsRequest``: the pod count always, then (if the pod asks for
anything) cpu, memory, ephemeral-storage and each non-zero scalar request, skipping
ignored extended resources; every shortfall becomes one reason ("Insufficient cpu",
...), and the status is UnschedulableAndUnresolvable when some request exceeds the
node's whole allocatable (preemption cannot help). Score is the configured strategy
(LeastAllocated, MostAllocated, RequestedToCapacityRatio) over non-zero requests.

Scalar resources are checked in the order the pod lists them (upstream iterates a Go
map, so its order of several "Insufficient <scalar>" reasons is random). The free
amount ``allocatable - requested`` is computed in Go's int64, which wraps round, in both
forms (numpy's int64 columns wrap the same way).

DRA extended resources (KEP-5004, on in v1.36): a scalar request some DeviceClass backs
(``spec.extendedResourceName`` or ``deviceclass.resource.kubernetes.io/<class>``) is
not checked on a node whose allocatable has none of it: DynamicResources allocates
devices for it there (upstream ``ShouldDelegateResourceToDRA``). A node advertising the
resource is checked as usual. Which names a class backs is read in PreFilter, each cycle.

PlacementScore (v1.37, gate TopologyAwareWorkloadScheduling; in the profile through
multiPoint): a pod group's candidate placement scores as if its nodes were one node holding
the group's proposed pods, always with MostAllocated over the configured strategy's
resources and weights, whatever the strategy's type (upstream's ``placementScorer``), so
the group goes where it fills the capacity best. No normalization.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NamedTuple

import msgspec
import numpy as np

from ...api.objects import Node
from ...api.quantity import wrap_int64
from ...api.resource import DeviceClass
from ...api.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    Resource,
    is_extended_resource,
    is_scalar_resource,
)
from ...api.validation import qualified_name_errors as _qualified_name_errors
from ...dra.extended import CLASS_PREFIX, ClassResolver
from ...framework.args import EMPTY_IS_DEFAULT, ArgsErrors, Int32, KubeArgs, show
from ...framework.cycle_state import CycleState
from ...framework.events import ActionType, EventResource
from ...framework.handle import Handle
from ...framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    FilterPlugin,
    PlacementScorePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
)
from ...framework.podgroup import PodGroupAssignments, PodGroupInfo
from ...framework.snapshot import BoolArray, IntArray, RowCache, Snapshot
from ...framework.status import Code, Status, StatusError
from ...framework.types import NodeInfo, PodInfo, add_requests
from .. import names
from ..helper import gates_of, requests_fragment
from .least_allocated import LeastAllocated
from .most_allocated import MostAllocated
from .requested_to_capacity_ratio import MAX_CUSTOM_PRIORITY_SCORE, RequestedToCapacityRatio
from .resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceAllocationScorer,
    ResourceSpec,
    Strategy,
)

__all__ = [
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "Fit",
    "FitArgs",
    "InsufficientResource",
    "RequestedToCapacityRatioParam",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "insufficient_for",
    "insufficient_resources",
    "shape_pairs",
    "validate_shape",
]

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
_SUPPORTED_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

PRE_FILTER_STATE_KEY = "PreFilter" + names.NODE_RESOURCES_FIT


# ---- args -----------------------------------------------------------------------------------


class UtilizationShapePoint(KubeArgs):
    """One point of a requested-to-capacity-ratio shape (``config.UtilizationShapePoint``)."""

    utilization: Int32 = 0
    score: Int32 = 0


class RequestedToCapacityRatioParam(KubeArgs):
    """``config.RequestedToCapacityRatioParam``."""

    shape: tuple[UtilizationShapePoint, ...] = ()


def shape_pairs(points: Sequence[UtilizationShapePoint]) -> tuple[tuple[int, int], ...]:
    """A shape as (utilization, score) pairs."""
    return tuple((p.utilization, p.score) for p in points)


class ScoringStrategy(KubeArgs):
    """``config.ScoringStrategy``. An explicit strategy's type is not defaulted (upstream
    defaults only a missing strategy as a whole); its resources are when empty.

    ``requested_to_capacity_ratio`` may be given as (utilization, score) pairs by code
    that builds args by hand."""

    type: str = ""
    resources: Annotated[tuple[ResourceSpec, ...], EMPTY_IS_DEFAULT] = DEFAULT_RESOURCES
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    def __post_init__(self) -> None:
        r: Any = self.requested_to_capacity_ratio
        if r is not None and not isinstance(r, RequestedToCapacityRatioParam):
            points = tuple(UtilizationShapePoint(u, s) for u, s in r)
            self.requested_to_capacity_ratio = RequestedToCapacityRatioParam(points)

    @property
    def shape(self) -> tuple[tuple[int, int], ...] | None:
        """requestedToCapacityRatio.shape as (utilization, score) pairs; None when
        requestedToCapacityRatio is absent."""
        r = self.requested_to_capacity_ratio
        return None if r is None else shape_pairs(r.shape)


class FitArgs(KubeArgs):
    """``NodeResourcesFitArgs`` (v1 defaulting: LeastAllocated over cpu and memory)."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = msgspec.field(
        default_factory=lambda: ScoringStrategy(LEAST_ALLOCATED)
    )

    def validate(self, errs: ArgsErrors) -> None:
        """Upstream ``ValidateNodeResourcesFitArgs`` (same checks, paths and messages)."""
        for i, res in enumerate(self.ignored_resources):
            for msg in _qualified_name_errors(res):
                errs.invalid(f"ignoredResources[{i}]", res, msg)
        for i, group in enumerate(self.ignored_resource_groups):
            if "/" in group:
                errs.invalid(
                    f"ignoredResourceGroups[{i}]", group, "resource group name can't contain '/'"
                )
            for msg in _qualified_name_errors(group):
                errs.invalid(f"ignoredResourceGroups[{i}]", group, msg)
        s = self.scoring_strategy
        if s.type not in _SUPPORTED_TYPES:
            supported = ", ".join(show(t) for t in _SUPPORTED_TYPES)
            errs.fail(
                "scoringStrategy.type",
                f"Unsupported value: {show(s.type)}: supported values: {supported}",
            )
        for i, r in enumerate(s.resources):
            if r.weight <= 0 or r.weight > 100:
                errs.invalid(
                    f"scoringStrategy.resources[{i}].weight",
                    r.weight,
                    f"resource weight of {r.name} not in valid range (0, 100]",
                )
        if s.shape is not None:
            validate_shape(errs, s.shape, "scoringStrategy.shape")
        elif s.type == REQUESTED_TO_CAPACITY_RATIO:
            errs.fail(
                "scoringStrategy.requestedToCapacityRatio",
                "Required value: must be specified when type is RequestedToCapacityRatio",
            )


def validate_shape(errs: ArgsErrors, shape: Sequence[tuple[int, int]], path: str) -> None:
    """Upstream ``validateFunctionShape``."""
    if not shape:
        errs.fail(path, "Required value: at least one point must be specified")
        return
    for i in range(1, len(shape)):
        if shape[i - 1][0] >= shape[i][0]:
            errs.invalid(
                f"{path}[{i}].utilization", shape[i][0], "values must be sorted in increasing order"
            )
            break
    for i, (u, s) in enumerate(shape):
        if u < 0 or u > 100:
            errs.invalid(f"{path}[{i}].utilization", u, "not in valid range [0, 100]")
        if s < 0 or s > MAX_CUSTOM_PRIORITY_SCORE:
            errs.invalid(
                f"{path}[{i}].score", s, f"not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]"
            )


def build_strategy(s: ScoringStrategy) -> Strategy:
    weights = [r.weight for r in s.resources]
    if s.type == MOST_ALLOCATED:
        return MostAllocated(weights)
    if s.type == REQUESTED_TO_CAPACITY_RATIO:
        return RequestedToCapacityRatio(weights, s.shape or ())
    return LeastAllocated(weights)


# ---- filter -----------------------------------------------------------------------------------


class InsufficientResource(NamedTuple):
    """One resource the node lacks for the pod (upstream ``InsufficientResource``)."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    # The request exceeds the node's whole allocatable: preemption cannot help.
    unresolvable: bool = False


def _scalar_checks(
    req: Resource, ignored: frozenset[str], groups: frozenset[str]
) -> tuple[tuple[str, int], ...]:
    """The pod's non-zero scalar requests that are not ignored, in the pod's order."""
    out = []
    for name, q in req.scalar.items():
        if q == 0:
            continue
        if is_extended_resource(name) and (
            name in ignored or (groups and name.split("/", 1)[0] in groups)
        ):
            continue
        out.append((name, q))
    return tuple(out)


def _requests_nothing(req: Resource) -> bool:
    return req.milli_cpu == 0 and req.memory == 0 and req.ephemeral_storage == 0 and not req.scalar


def insufficient_resources(
    req: Resource,
    ni: NodeInfo,
    ignored: frozenset[str] = frozenset(),
    groups: frozenset[str] = frozenset(),
    scalars: tuple[tuple[str, int], ...] | None = None,
    dra: tuple[tuple[str, int], ...] = (),
) -> list[InsufficientResource]:
    """Upstream ``fitsRequest``: every resource the node lacks for requests ``req``."""
    return insufficient_for(
        req, ni.allocatable, ni.requested, len(ni.pods), ignored, groups, scalars, dra
    )


def insufficient_for(
    req: Resource,
    alloc: Resource,
    used: Resource,
    n_pods: int,
    ignored: frozenset[str] = frozenset(),
    groups: frozenset[str] = frozenset(),
    scalars: tuple[tuple[str, int], ...] | None = None,
    dra: tuple[tuple[str, int], ...] = (),
) -> list[InsufficientResource]:
    """``insufficient_resources`` on a node's aggregates alone (allocatable, requested,
    number of pods): what preemption's dry run varies without building a NodeInfo.
    ``dra``: DRA-backed scalar requests, checked only where the node advertises them."""
    out: list[InsufficientResource] = []
    if n_pods + 1 > alloc.allowed_pod_number:
        out.append(InsufficientResource(PODS, "Too many pods", 1, n_pods, alloc.allowed_pod_number))
    if _requests_nothing(req):
        return out
    for name, q, a, u in (
        (CPU, req.milli_cpu, alloc.milli_cpu, used.milli_cpu),
        (MEMORY, req.memory, alloc.memory, used.memory),
        (EPHEMERAL_STORAGE, req.ephemeral_storage, alloc.ephemeral_storage, used.ephemeral_storage),
    ):
        if q > 0 and q > wrap_int64(a - u):
            out.append(InsufficientResource(name, f"Insufficient {name}", q, u, a, q > a))
    if scalars is None:
        scalars = _scalar_checks(req, ignored, groups)
    for name, q in (*scalars, *dra) if dra else scalars:
        a = alloc.scalar.get(name, 0)
        if a <= 0 and dra and (name, q) in dra:
            continue  # delegated to DynamicResources on this node
        u = used.scalar.get(name, 0)
        if q > wrap_int64(a - u):
            out.append(InsufficientResource(name, f"Insufficient {name}", q, u, a, q > a))
    return out


_MISSING: Any = object()


@dataclass(slots=True)
class _PodData:
    """What Fit derives from a pod once (kept in ``PodInfo.cache``)."""

    scalars: tuple[tuple[str, int], ...]
    nothing: bool
    score_requests: tuple[int, ...] = ()
    has_score_requests: bool = False
    mask_key: _MaskKey | None = None


# (requests nothing, cpu, memory, ephemeral-storage, checked scalars, DRA-backed scalars
# checked only where advertised): what the mask depends on besides the node.
_Scalars = tuple[tuple[str, int], ...]
_MaskKey = tuple[bool, int, int, int, _Scalars, _Scalars]


@dataclass(frozen=True, slots=True)
class _FitState:
    """PreFilter's split of the pod's scalar requests when a DeviceClass backs some."""

    scalars: _Scalars
    dra: _Scalars


def _fit_mask(snap: Snapshot, key: _MaskKey) -> BoolArray:
    """``fitsRequest`` over every row: the pod count, then each requested resource."""
    nothing, cpu, mem, eph, scalars, dra = key
    mask: BoolArray = snap.num_pods < snap.alloc_pods  # len(pods)+1 <= allowed
    if nothing:
        return mask
    for q, alloc, used in (
        (cpu, snap.alloc_cpu, snap.req_cpu),
        (mem, snap.alloc_mem, snap.req_mem),
        (eph, snap.alloc_eph, snap.req_eph),
    ):
        if q > 0:
            mask &= (alloc - used) >= q
    for name, q in scalars:
        alloc, used = snap.scalar_columns(name)
        mask &= (alloc - used) >= q
    for name, q in dra:
        alloc, used = snap.scalar_columns(name)
        mask &= (alloc <= 0) | ((alloc - used) >= q)
    return mask


def _fits_row(snap: Snapshot, r: int, key: _MaskKey) -> bool:
    """``_fit_mask`` of one row."""
    nothing, cpu, mem, eph, scalars, dra = key
    if not snap.num_pods[r] < snap.alloc_pods[r]:
        return False
    if nothing:
        return True

    def short(q: int, alloc: IntArray, used: IntArray) -> bool:
        return wrap_int64(int(alloc[r]) - int(used[r])) < q

    if cpu > 0 and short(cpu, snap.alloc_cpu, snap.req_cpu):
        return False
    if mem > 0 and short(mem, snap.alloc_mem, snap.req_mem):
        return False
    if eph > 0 and short(eph, snap.alloc_eph, snap.req_eph):
        return False
    if any(short(q, *snap.scalar_columns(name)) for name, q in scalars):
        return False
    for name, q in dra:
        alloc, used = snap.scalar_columns(name)
        if alloc[r] > 0 and short(q, alloc, used):
            return False
    return True


def fits_aggregates(
    key: _MaskKey,
    alloc: Resource,
    cpu: int,
    mem: int,
    eph: int,
    scalar: Mapping[str, int],
    n_pods: int,
) -> bool:
    """Whether ``insufficient_for`` finds nothing lacking, without wording the reasons:
    the preemption dry run's reprieve check. The node's requested resources come as
    plain sums (``cpu``..., ``scalar`` for the key's scalars), wrapped here as int64."""
    if n_pods + 1 > alloc.allowed_pod_number:
        return False
    # The dry run's key is stateless (``mask_key(pod)``): it runs only when no PreFilter
    # is active, so DynamicResources has backed no resource and the DRA part is empty.
    nothing, q_cpu, q_mem, q_eph, scalars, _dra = key
    if nothing:
        return True
    if q_cpu > 0 and q_cpu > wrap_int64(alloc.milli_cpu - cpu):
        return False
    if q_mem > 0 and q_mem > wrap_int64(alloc.memory - mem):
        return False
    if q_eph > 0 and q_eph > wrap_int64(alloc.ephemeral_storage - eph):
        return False
    return all(
        q <= wrap_int64(alloc.scalar.get(name, 0) - scalar.get(name, 0)) for name, q in scalars
    )


_NOT_FOUND = f'error reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found'


def _added_columns(added: Sequence[Sequence[PodInfo]], names: Sequence[str]) -> list[IntArray]:
    """What the pods of each row add to the named resources (int64, wrapped as
    ``add_requests`` wraps), then their count: columns beside the snapshot's."""
    reqs = [[p.requests for p in pods] for pods in added]
    out: list[IntArray] = []
    for name in names:
        field = _REQUEST_FIELDS.get(name)
        if field is not None:
            col = [sum(map(field, rs)) for rs in reqs]
        else:
            col = [sum(r.scalar.get(name, 0) for r in rs) for rs in reqs]
        try:
            out.append(np.array(col, dtype=np.int64))
        except OverflowError:  # a sum beyond int64: wrapped, as Go's would be
            out.append(np.array([wrap_int64(v) for v in col], dtype=np.int64))
    out.append(np.array([len(pods) for pods in added], dtype=np.int64))
    return out


# ``Resource.get``'s fields of the named resources (the others are scalars).
_REQUEST_FIELDS: dict[str, Callable[[Resource], int]] = {
    CPU: operator.attrgetter("milli_cpu"),
    MEMORY: operator.attrgetter("memory"),
    EPHEMERAL_STORAGE: operator.attrgetter("ephemeral_storage"),
    PODS: operator.attrgetter("allowed_pod_number"),
}


class Fit(
    PreFilterPlugin[FitArgs],
    FilterPlugin[FitArgs],
    PreScorePlugin[FitArgs],
    ScorePlugin[FitArgs],
    PlacementScorePlugin[FitArgs],
):
    name = names.NODE_RESOURCES_FIT
    Args = FitArgs
    args: FitArgs

    def sign_pod(self, pod: PodInfo) -> Any:
        return requests_fragment(pod)

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        args = self.args
        self.ignored = frozenset(args.ignored_resources)
        self.ignored_groups = frozenset(args.ignored_resource_groups)
        strategy = args.scoring_strategy
        self.scorer = ResourceAllocationScorer(strategy.resources, False, build_strategy(strategy))
        # Built only with the gate, as upstream (which has no placement scoring without it).
        self.placement_scorer: ResourceAllocationScorer | None = None
        if gates_of(handle).enabled("TopologyAwareWorkloadScheduling"):
            weights = [r.weight for r in strategy.resources]
            self.placement_scorer = ResourceAllocationScorer(
                strategy.resources, False, MostAllocated(weights)
            )
        self._key = f"{self.name}#{id(self)}"
        self._masks: RowCache[_MaskKey] = RowCache(_fit_mask, _fits_row)
        self._classes = ClassResolver()

    def _data(self, pod: PodInfo) -> _PodData:
        d: _PodData | None = pod.cache.get(self._key)
        if d is None:
            req = pod.requests
            d = _PodData(
                _scalar_checks(req, self.ignored, self.ignored_groups), _requests_nothing(req)
            )
            pod.cache[self._key] = d
        return d

    # -- PreFilter / Filter --------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        # The requests are precomputed on PodInfo; the state entry only records that
        # PreFilter ran, since upstream's Filter fails without it.
        d = self._data(pod)
        state.write(PRE_FILTER_STATE_KEY, self._split(d))
        return None, None

    def _split(self, d: _PodData) -> _FitState | bool:
        """The scalar requests a DeviceClass backs, apart (True: none is)."""
        if not d.scalars:
            return True
        listers = getattr(self.handle, "listers", None) or {}
        backed = self._classes.backed(listers.get("deviceclasses") or {}, d.scalars)
        if not backed:
            return True
        return _FitState(
            tuple(s for s in d.scalars if s[0] not in backed),
            tuple(s for s in d.scalars if s[0] in backed),
        )

    def _scalars(self, state: CycleState, d: _PodData) -> tuple[_Scalars, _Scalars]:
        st = state.get(PRE_FILTER_STATE_KEY)
        return (st.scalars, st.dra) if isinstance(st, _FitState) else (d.scalars, ())

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if PRE_FILTER_STATE_KEY not in state:
            return Status(Code.ERROR, _NOT_FOUND)
        return self.verdict(pod, node.allocatable, node.requested, len(node.pods), state)

    def filter_with_added(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, added: Sequence[PodInfo]
    ) -> Status | None:
        """Filter as if ``added`` were on the node: its aggregates plus theirs."""
        if PRE_FILTER_STATE_KEY not in state:
            return Status(Code.ERROR, _NOT_FOUND)
        used = node.requested.clone()
        for p in added:
            add_requests(used, p.requests, 1)
        return self.verdict(pod, node.allocatable, used, len(node.pods) + len(added), state)

    def verdict(
        self,
        pod: PodInfo,
        alloc: Resource,
        used: Resource,
        n_pods: int,
        state: CycleState | None = None,
    ) -> Status | None:
        """Filter's verdict from a node's aggregates (PreFilter must have run)."""
        d = self._data(pod)
        scalars, dra = self._scalars(state, d) if state is not None else (d.scalars, ())
        lacking = insufficient_for(pod.requests, alloc, used, n_pods, scalars=scalars, dra=dra)
        if not lacking:
            return None
        code = (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            if any(r.unresolvable for r in lacking)
            else Code.UNSCHEDULABLE
        )
        return Status(code, *(r.reason for r in lacking))

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        """The fit mask, cached per distinct request (replicas share one) and brought up
        to date with the rows the snapshot replaced since; read-only for the caller."""
        if PRE_FILTER_STATE_KEY not in state:
            raise RuntimeError(_NOT_FOUND)
        return self._masks.get(snap, self.mask_key(pod, state))

    def mask_key(self, pod: PodInfo, state: CycleState | None = None) -> _MaskKey:
        """All Filter's verdict reads of ``pod``: (requests nothing, cpu, memory,
        ephemeral storage, checked scalars, DRA-backed scalars). Without ``state`` (the
        preemption dry run, which runs only when no PreFilter such as DynamicResources'
        is active) no resource is DRA-backed."""
        d = self._data(pod)
        key = d.mask_key
        if key is None:
            req = pod.requests
            key = d.mask_key = (
                d.nothing,
                req.milli_cpu,
                req.memory,
                req.ephemeral_storage,
                d.scalars,
                (),
            )
        if state is not None:
            st = state.get(PRE_FILTER_STATE_KEY)
            if isinstance(st, _FitState):
                key = (*key[:4], st.scalars, st.dra)
        return key

    #: ``filter_statuses`` takes ``added`` (the runtime's nominated-pods pass)
    filter_statuses_take_added = True

    def filter_statuses(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        rows: IntArray,
        added: Sequence[Sequence[PodInfo]] | None = None,
    ) -> list[Status | None]:
        """``filter`` for many rows at once (the FitError's per-node reasons); with
        ``added`` (pods per row), ``filter_with_added`` for each row instead (the
        nominated pods' pass over many nodes).

        Each row's verdict is a combination of "lacks resource k" and "k exceeds the whole
        allocatable" bits; rows with the same bits share one Status.
        """
        if PRE_FILTER_STATE_KEY not in state:
            raise RuntimeError(_NOT_FOUND)
        d = self._data(pod)
        req = pod.requests
        scalars, dra = self._scalars(state, d)
        checks: list[tuple[str, int, IntArray, IntArray]] = []
        n_plain = 0
        if not d.nothing:
            for name, q, alloc, used in (
                (CPU, req.milli_cpu, snap.alloc_cpu, snap.req_cpu),
                (MEMORY, req.memory, snap.alloc_mem, snap.req_mem),
                (EPHEMERAL_STORAGE, req.ephemeral_storage, snap.alloc_eph, snap.req_eph),
            ):
                if q > 0:
                    checks.append((name, q, alloc, used))
            for name, q in scalars:
                alloc, used = snap.scalar_columns(name)
                checks.append((name, q, alloc, used))
            n_plain = len(checks)
            for name, q in dra:
                alloc, used = snap.scalar_columns(name)
                checks.append((name, q, alloc, used))
        extra = None if added is None else _added_columns(added, [c[0] for c in checks])
        lacking = np.zeros(len(rows), dtype=np.int64)
        unresolvable = np.zeros(len(rows), dtype=np.bool_)
        n_pods = snap.num_pods[rows] if extra is None else snap.num_pods[rows] + extra[-1]
        lacking |= (n_pods + 1 > snap.alloc_pods[rows]).astype(np.int64)
        for k, (_, q, alloc, used) in enumerate(checks):
            a = alloc[rows]
            short = q > a - (used[rows] if extra is None else used[rows] + extra[k])
            if k >= n_plain:  # DRA-backed: only where the node advertises it
                short &= a > 0
            lacking |= short.astype(np.int64) << (k + 1)
            unresolvable |= short & (q > a)
        codes = lacking * 2 + unresolvable
        made: dict[int, Status | None] = {}
        out: list[Status | None] = []
        for c in codes.tolist():
            st = made.get(c, _MISSING)
            if st is _MISSING:
                bits, unres = c >> 1, c & 1
                reasons = ["Too many pods"] if bits & 1 else []
                reasons += [
                    f"Insufficient {checks[k][0]}"
                    for k in range(len(checks))
                    if bits >> (k + 1) & 1
                ]
                st = made[c] = (
                    Status(
                        Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unres else Code.UNSCHEDULABLE,
                        *reasons,
                    )
                    if reasons
                    else None
                )
            out.append(st)
        return out

    # -- PreScore / Score ----------------------------------------------------------------
    def _score_requests(self, pod: PodInfo) -> tuple[int, ...]:
        d = self._data(pod)
        if not d.has_score_requests:
            d.score_requests = self.scorer.pod_requests(pod)
            d.has_score_requests = True
        return d.score_requests

    def pre_score(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status | None:
        self._score_requests(pod)
        return None

    def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        return self.scorer.score(node, self._score_requests(pod))

    def score_batch(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: IntArray
    ) -> IntArray:
        return self.scorer.score_rows(snap, rows, self._score_requests(pod))

    # -- PlacementScore ------------------------------------------------------------------
    def score_placement(
        self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> int:
        if self.placement_scorer is None:
            raise StatusError(
                Status.as_error("placement scoring needs TopologyAwareWorkloadScheduling")
            )
        pods = (a.pod for a in assignments.assignments)
        return self.placement_scorer.placement_score(pods, assignments.placement.nodes)

    # -- queueing hints ------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Upstream's registrations for the emulated version (queueing hints on): pod
        deletion, node add or allocatable change, a DeviceClass that may now back a
        resource the pod asks for (DRAExtendedResource) and, with in-place resize, only a
        pod's scale-down (UpdatePodScaleDown; other pod updates never run the hint).
        v1.36 has one ``Pod`` registration for both; v1.37 splits it into AssignedPod and
        TargetPod (the pending pod's own update)."""
        gates = gates_of(self.handle)
        v137 = gates.at_least("1.37")
        scale_down = gates.enabled("InPlacePodVerticalScaling")
        node = self._after_node_change
        pod_resource = EventResource.ASSIGNED_POD if v137 else EventResource.POD
        events = [
            ClusterEventWithHint(ClusterEvent(pod_resource, ActionType.DELETE), _after_pod_delete)
        ]
        if scale_down and not v137:
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCALE_DOWN),
                    _after_pod_scale_down,
                )
            )
        events += [
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD), node),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_ALLOCATABLE), node
            ),
        ]
        if gates.enabled("DRAExtendedResource"):
            events += [
                ClusterEventWithHint(
                    ClusterEvent(EventResource.DEVICE_CLASS, ActionType.ADD), _after_device_class
                ),
                ClusterEventWithHint(
                    ClusterEvent(EventResource.DEVICE_CLASS, ActionType.UPDATE),
                    _after_device_class,
                ),
            ]
        if scale_down and v137:
            down = ActionType.UPDATE_POD_SCALE_DOWN
            events += [
                ClusterEventWithHint(
                    ClusterEvent(EventResource.ASSIGNED_POD, down), _after_assigned_pod_scale_down
                ),
                ClusterEventWithHint(
                    ClusterEvent(EventResource.TARGET_POD, down), _after_target_pod_scale_down
                ),
            ]
        return events

    def _after_node_change(self, pod: PodInfo, old: Any, new: Any) -> str:
        split = self._split(self._data(pod))
        dra = split.dra if isinstance(split, _FitState) else ()
        return _after_node_change(pod, old, new, dra)


def _after_device_class(pod: PodInfo, old: Any, new: Any) -> str:
    """``isSchedulableAfterDeviceClassEvent``: a new class whose implicit name, or a
    class whose changed ``extendedResourceName``, the pod requests."""
    if not isinstance(new, DeviceClass) or (old is not None and not isinstance(old, DeviceClass)):
        raise TypeError("expected DeviceClass objects")
    wants = pod.requests.scalar
    ext = new.spec.extended_resource_name
    if old is not None:
        if (old.spec.extended_resource_name or "") == (ext or ""):
            return QueueingHint.SKIP
    elif CLASS_PREFIX + new.metadata.name in wants:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE if ext and ext in wants else QueueingHint.SKIP


def _after_pod_delete(pod: PodInfo, old: Any, new: Any) -> str:
    if not isinstance(old, PodInfo):
        raise TypeError(f"expected a PodInfo, got {type(old).__name__}")
    if not old.node_name and not old.pod.status.nominated_node_name:
        return QueueingHint.SKIP  # an unscheduled pod frees nothing
    return QueueingHint.QUEUE


def _scaled_down(old: Resource, new: Resource) -> bool:
    """Upstream's UpdatePodScaleDown test: some request went down or disappeared."""
    if (
        old.milli_cpu > new.milli_cpu
        or old.memory > new.memory
        or old.ephemeral_storage > new.ephemeral_storage
    ):
        return True
    return any(name not in new.scalar or v > new.scalar[name] for name, v in old.scalar.items())


def _frees_requested(target: Resource, old: Resource, new: Resource) -> bool:
    """Whether a resource the target pod requests went down from ``old`` to ``new``."""
    if (
        (target.milli_cpu and old.milli_cpu > new.milli_cpu)
        or (target.memory and old.memory > new.memory)
        or (target.ephemeral_storage and old.ephemeral_storage > new.ephemeral_storage)
    ):
        return True
    return any(
        q and is_scalar_resource(name) and old.scalar.get(name, 0) > new.scalar.get(name, 0)
        for name, q in target.scalar.items()
    )


def _after_assigned_pod_scale_down(pod: PodInfo, old: Any, new: Any) -> str:
    """v1.37's ``isSchedulableAfterAssignedPodScaleDown``: a scheduled pod gave back
    something the target asks for."""
    if not isinstance(old, PodInfo) or not isinstance(new, PodInfo):
        raise TypeError("expected PodInfo objects")
    if new.node_name and _frees_requested(pod.requests, old.requests, new.requests):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _after_target_pod_scale_down(pod: PodInfo, old: Any, new: Any) -> str:
    """v1.37's ``isSchedulableAfterTargetPodScaleDown``: the pod itself shrank."""
    return QueueingHint.QUEUE


def _after_pod_scale_down(pod: PodInfo, old: Any, new: Any) -> str:
    """v1.36's ``isSchedulableAfterPodEvent`` for an update (UpdatePodScaleDown): the
    target itself shrank, or a scheduled pod gave back something the target asks for."""
    if not isinstance(old, PodInfo) or not isinstance(new, PodInfo):
        raise TypeError("expected PodInfo objects")
    if new.uid and new.uid == pod.uid:
        # Upstream only sees this when the pod was scaled down (UpdatePodScaleDown).
        return QueueingHint.QUEUE if _scaled_down(old.requests, new.requests) else QueueingHint.SKIP
    if not new.node_name:
        return QueueingHint.SKIP
    if _frees_requested(pod.requests, old.requests, new.requests):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _node_allocatable(node: Node) -> NodeInfo:
    ni = NodeInfo()
    ni.set_node(node)
    return ni


def _after_node_change(pod: PodInfo, old: Any, new: Any, dra: _Scalars = ()) -> str:
    """``isSchedulableAfterNodeChange``: queue only if the pod now fits the (empty) node
    and, for an update, some resource it requests (or the pod count) grew, or is one a
    class backs (``dra``) that the node does not advertise (DRA may provide it)."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        raise TypeError("expected Node objects")
    scalars = None
    if dra:
        scalars = tuple(x for x in pod.requests.scalar.items() if x[1] and x not in dra)
    if insufficient_resources(pod.requests, _node_allocatable(new), scalars=scalars, dra=dra):
        return QueueingHint.SKIP
    if old is None:
        return QueueingHint.QUEUE
    o = _node_allocatable(old).allocatable
    n = _node_allocatable(new).allocatable
    if n.allowed_pod_number > o.allowed_pod_number:
        return QueueingHint.QUEUE
    r = pod.requests
    if _requests_nothing(r):
        return QueueingHint.SKIP
    if (
        (r.milli_cpu > 0 and n.milli_cpu > o.milli_cpu)
        or (r.memory > 0 and n.memory > o.memory)
        or (r.ephemeral_storage > 0 and n.ephemeral_storage > o.ephemeral_storage)
    ):
        return QueueingHint.QUEUE
    for name, q in r.scalar.items():
        if q != 0 and n.scalar.get(name, 0) > o.scalar.get(name, 0):
            return QueueingHint.QUEUE
        if q != 0 and (name, q) in dra and n.scalar.get(name, 0) <= 0:
            return QueueingHint.QUEUE
    return QueueingHint.SKIP
