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
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ...api.objects import Node
from ...api.quantity import wrap_int64
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
from ...framework.cycle_state import CycleState
from ...framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
)
from ...framework.snapshot import BoolArray, IntArray, RowCache, Snapshot
from ...framework.status import Code, Status
from ...framework.types import NodeInfo, PodInfo, add_requests
from .. import names
from ..helper import requests_fragment
from .least_allocated import LeastAllocated
from .most_allocated import MostAllocated
from .requested_to_capacity_ratio import MAX_CUSTOM_PRIORITY_SCORE, RequestedToCapacityRatio
from .resource_allocation import (
    DEFAULT_RESOURCES,
    ArgsErrors,
    ResourceAllocationScorer,
    ResourceSpec,
    Strategy,
    join,
    show,
)

__all__ = [
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "REQUESTED_TO_CAPACITY_RATIO",
    "Fit",
    "FitArgs",
    "InsufficientResource",
    "ScoringStrategy",
    "insufficient_for",
    "insufficient_resources",
    "parse_shape",
    "validate_shape",
]

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
_SUPPORTED_TYPES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

PRE_FILTER_STATE_KEY = "PreFilter" + names.NODE_RESOURCES_FIT


# ---- args -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    """``config.ScoringStrategy``; ``shape`` is requestedToCapacityRatio.shape as
    (utilization, score) pairs, None when requestedToCapacityRatio is absent."""

    type: str = LEAST_ALLOCATED
    resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES
    shape: tuple[tuple[int, int], ...] | None = None


@dataclass(frozen=True, slots=True)
class FitArgs:
    """``NodeResourcesFitArgs`` after v1 defaulting."""

    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)

    @classmethod
    def parse(cls, plugin_name: str, data: dict[str, Any]) -> FitArgs:
        """Decode pluginConfig args, apply ``SetDefaults_NodeResourcesFitArgs``, validate."""
        errs = ArgsErrors(plugin_name)
        m = errs.obj(data, "", ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"))
        ignored = _strings(errs, m, "ignoredResources")
        groups = _strings(errs, m, "ignoredResourceGroups")
        strategy = ScoringStrategy()
        if "scoringStrategy" in m:
            p = "scoringStrategy"
            sm = errs.obj(
                m["scoringStrategy"], p, ("type", "resources", "requestedToCapacityRatio")
            )
            resources = errs.resources(errs.lst(sm, "resources", p), join(p, "resources"))
            shape: tuple[tuple[int, int], ...] | None = None
            if "requestedToCapacityRatio" in sm:
                rp = join(p, "requestedToCapacityRatio")
                rm = errs.obj(sm["requestedToCapacityRatio"], rp, ("shape",))
                shape = parse_shape(errs, errs.lst(rm, "shape", rp), join(rp, "shape"))
            strategy = ScoringStrategy(
                errs.string(sm, "type", p), tuple(resources) or DEFAULT_RESOURCES, shape
            )
        errs.raise_if_any()
        args = cls(tuple(ignored), tuple(groups), strategy)
        args.validate(errs)
        errs.raise_if_any()
        return args

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


def _strings(errs: ArgsErrors, m: dict[str, Any], key: str) -> list[str]:
    out = []
    for i, v in enumerate(errs.lst(m, key, "")):
        if isinstance(v, str):
            out.append(v)
        else:
            errs.fail(f"{key}[{i}]", f"must be a string, got {v!r}")
    return out


def parse_shape(errs: ArgsErrors, raw: list[Any], path: str) -> tuple[tuple[int, int], ...]:
    """``[]UtilizationShapePoint`` as (utilization, score) pairs; problems go to ``errs``."""
    points = []
    for i, item in enumerate(raw):
        pp = f"{path}[{i}]"
        pm = errs.obj(item, pp, ("utilization", "score"))
        points.append((errs.integer(pm, "utilization", pp), errs.integer(pm, "score", pp)))
    return tuple(points)


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
) -> list[InsufficientResource]:
    """Upstream ``fitsRequest``: every resource the node lacks for requests ``req``."""
    return insufficient_for(
        req, ni.allocatable, ni.requested, len(ni.pods), ignored, groups, scalars
    )


def insufficient_for(
    req: Resource,
    alloc: Resource,
    used: Resource,
    n_pods: int,
    ignored: frozenset[str] = frozenset(),
    groups: frozenset[str] = frozenset(),
    scalars: tuple[tuple[str, int], ...] | None = None,
) -> list[InsufficientResource]:
    """``insufficient_resources`` on a node's aggregates alone (allocatable, requested,
    number of pods): what preemption's dry run varies without building a NodeInfo."""
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
    for name, q in scalars:
        a = alloc.scalar.get(name, 0)
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


# (requests nothing, cpu, memory, ephemeral-storage, checked scalars): what the mask
# depends on besides the node.
_MaskKey = tuple[bool, int, int, int, tuple[tuple[str, int], ...]]


def _fit_mask(snap: Snapshot, key: _MaskKey) -> BoolArray:
    """``fitsRequest`` over every row: the pod count, then each requested resource."""
    nothing, cpu, mem, eph, scalars = key
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
    return mask


def _fits_row(snap: Snapshot, r: int, key: _MaskKey) -> bool:
    """``_fit_mask`` of one row."""
    nothing, cpu, mem, eph, scalars = key
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
    return not any(short(q, *snap.scalar_columns(name)) for name, q in scalars)


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
    nothing, q_cpu, q_mem, q_eph, scalars = key
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


class Fit(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin):
    name = names.NODE_RESOURCES_FIT
    Args = FitArgs

    def sign_pod(self, pod: PodInfo) -> Any:
        return requests_fragment(pod)

    def __init__(self, args: Any = None, handle: Any = None) -> None:
        if not isinstance(args, FitArgs):
            args = FitArgs.parse(self.name, dict(args or {}))
        super().__init__(args, handle)
        self.ignored = frozenset(args.ignored_resources)
        self.ignored_groups = frozenset(args.ignored_resource_groups)
        strategy = args.scoring_strategy
        self.scorer = ResourceAllocationScorer(strategy.resources, False, build_strategy(strategy))
        self._key = f"{self.name}#{id(self)}"
        self._masks: RowCache[_MaskKey] = RowCache(_fit_mask, _fits_row)

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
        self._data(pod)
        state.write(PRE_FILTER_STATE_KEY, True)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        if PRE_FILTER_STATE_KEY not in state:
            return Status(Code.ERROR, _NOT_FOUND)
        return self.verdict(pod, node.allocatable, node.requested, len(node.pods))

    def filter_with_added(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, added: Sequence[PodInfo]
    ) -> Status | None:
        """Filter as if ``added`` were on the node: its aggregates plus theirs."""
        if PRE_FILTER_STATE_KEY not in state:
            return Status(Code.ERROR, _NOT_FOUND)
        used = node.requested.clone()
        for p in added:
            add_requests(used, p.requests, 1)
        return self.verdict(pod, node.allocatable, used, len(node.pods) + len(added))

    def verdict(self, pod: PodInfo, alloc: Resource, used: Resource, n_pods: int) -> Status | None:
        """Filter's verdict from a node's aggregates (PreFilter must have run)."""
        d = self._data(pod)
        lacking = insufficient_for(pod.requests, alloc, used, n_pods, scalars=d.scalars)
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
        return self._masks.get(snap, self.mask_key(pod))

    def mask_key(self, pod: PodInfo) -> _MaskKey:
        """All Filter's verdict reads of ``pod``: (requests nothing, cpu, memory,
        ephemeral storage, checked scalars)."""
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
            )
        return key

    def filter_statuses(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: IntArray
    ) -> list[Status | None]:
        """``filter`` for many rows at once (the FitError's per-node reasons).

        Each row's verdict is a combination of "lacks resource k" and "k exceeds the whole
        allocatable" bits; rows with the same bits share one Status.
        """
        if PRE_FILTER_STATE_KEY not in state:
            raise RuntimeError(_NOT_FOUND)
        d = self._data(pod)
        req = pod.requests
        checks: list[tuple[str, int, IntArray, IntArray]] = []
        if not d.nothing:
            for name, q, alloc, used in (
                (CPU, req.milli_cpu, snap.alloc_cpu, snap.req_cpu),
                (MEMORY, req.memory, snap.alloc_mem, snap.req_mem),
                (EPHEMERAL_STORAGE, req.ephemeral_storage, snap.alloc_eph, snap.req_eph),
            ):
                if q > 0:
                    checks.append((name, q, alloc, used))
            for name, q in d.scalars:
                alloc, used = snap.scalar_columns(name)
                checks.append((name, q, alloc, used))
        lacking = np.zeros(len(rows), dtype=np.int64)
        unresolvable = np.zeros(len(rows), dtype=np.bool_)
        lacking |= (snap.num_pods[rows] + 1 > snap.alloc_pods[rows]).astype(np.int64)
        for k, (_, q, alloc, used) in enumerate(checks):
            a = alloc[rows]
            short = q > a - used[rows]
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

    # -- queueing hints ------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Upstream with queueing hints and in-place pod resize on: pod deletion or
        scale-down, and node add or allocatable change."""
        return [
            ClusterEventWithHint(ClusterEvent("AssignedPod", "Delete"), _after_pod_delete),
            ClusterEventWithHint(ClusterEvent("AssignedPod", "Update"), _after_pod_scale_down),
            ClusterEventWithHint(ClusterEvent("Pod", "Update"), _after_pod_scale_down),
            ClusterEventWithHint(ClusterEvent("Node", "Add"), _after_node_change),
            ClusterEventWithHint(ClusterEvent("Node", "UpdateNodeAllocatable"), _after_node_change),
        ]


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


def _after_pod_scale_down(pod: PodInfo, old: Any, new: Any) -> str:
    """``isSchedulableAfterPodScaleDown``: the target itself shrank, or a scheduled pod
    gave back something the target asks for."""
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


def _after_node_change(pod: PodInfo, old: Any, new: Any) -> str:
    """``isSchedulableAfterNodeChange``: queue only if the pod now fits the (empty) node
    and, for an update, some resource it requests (or the pod count) grew."""
    if not isinstance(new, Node) or (old is not None and not isinstance(old, Node)):
        raise TypeError("expected Node objects")
    if insufficient_resources(pod.requests, _node_allocatable(new)):
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
    return QueueingHint.SKIP
