"""Resource vectors and pod requests computed exactly as kube-scheduler does.

``Resource`` mirrors ``framework.Resource``: CPU in millicores, memory and
ephemeral storage in bytes, a pod count, and scalar (extended, hugepages,
prefixed-native, attachable-volumes) resources in whole units. Every amount is an
int64: a quantity converts saturating (``MilliValue``/``Value``), and sums wrap round
as upstream's ``+=`` on int64 fields does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from .objects import Container, InvalidObjectError, Pod, PodSpec, Quantity
from .quantity import (
    QuantityError,
    milli_value,
    parse_quantity,
    saturate_int64,
    value,
    wrap_int64,
)
from .validation import is_qualified_name

__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "PodRequests",
    "Resource",
    "ResourceError",
    "is_extended_resource",
    "is_scalar_resource",
    "is_supported_pod_level_resource",
    "pod_requests",
]

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"
HUGEPAGES_PREFIX = "hugepages-"
DEFAULT_MILLI_CPU_REQUEST = 100  # 0.1 core, schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # 200 MB, schedutil.DefaultMemoryRequest


class ResourceError(InvalidObjectError):
    """An unparsable quantity; the message names the object and field."""


def is_prefixed_native(name: str) -> bool:
    return "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: domain-prefixed, not kubernetes.io, not requests.*,
    and a qualified name once given the quota prefix ``requests.``."""
    if "/" not in name or is_prefixed_native(name) or name.startswith("requests."):
        return False
    return is_qualified_name("requests." + name)


def is_supported_pod_level_resource(name: str) -> bool:
    """``resourcehelper.IsSupportedPodLevelResource``: what ``spec.resources`` may set."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def is_scalar_resource(name: str) -> bool:
    """``schedutil.IsScalarResourceName``."""
    return (
        is_extended_resource(name)
        or name.startswith(HUGEPAGES_PREFIX)
        or is_prefixed_native(name)
        or name.startswith("attachable-volumes-")
    )


class Resource:
    """A mutable resource vector (``framework.Resource``)."""

    __slots__ = ("allowed_pod_number", "ephemeral_storage", "memory", "milli_cpu", "scalar")

    def __init__(
        self,
        milli_cpu: int = 0,
        memory: int = 0,
        ephemeral_storage: int = 0,
        allowed_pod_number: int = 0,
        scalar: dict[str, int] | None = None,
    ) -> None:
        self.milli_cpu = milli_cpu
        self.memory = memory
        self.ephemeral_storage = ephemeral_storage
        self.allowed_pod_number = allowed_pod_number
        self.scalar: dict[str, int] = scalar if scalar is not None else {}

    @classmethod
    def from_list(cls, rl: Mapping[str, Quantity], where: str = "") -> Resource:
        r = cls()
        r.add_list(rl, where)
        return r

    def add_list(self, rl: Mapping[str, Quantity], where: str = "") -> None:
        for name, q in rl.items():
            try:
                if name == CPU:
                    self.milli_cpu = wrap_int64(self.milli_cpu + milli_value(q))
                elif name == MEMORY:
                    self.memory = wrap_int64(self.memory + value(q))
                elif name == PODS:
                    self.allowed_pod_number = wrap_int64(self.allowed_pod_number + value(q))
                elif name == EPHEMERAL_STORAGE:
                    self.ephemeral_storage = wrap_int64(self.ephemeral_storage + value(q))
                elif is_scalar_resource(name):
                    self.scalar[name] = wrap_int64(self.scalar.get(name, 0) + value(q))
            except QuantityError as e:
                raise ResourceError(f"{where}.{name}: {e}" if where else f"{name}: {e}") from None

    def add(self, other: Resource, sign: int = 1) -> None:
        """Add ``sign`` (1 or -1) times ``other``, wrapping round like Go's int64."""
        self.milli_cpu = wrap_int64(self.milli_cpu + sign * other.milli_cpu)
        self.memory = wrap_int64(self.memory + sign * other.memory)
        self.ephemeral_storage = wrap_int64(self.ephemeral_storage + sign * other.ephemeral_storage)
        self.allowed_pod_number = wrap_int64(
            self.allowed_pod_number + sign * other.allowed_pod_number
        )
        for k, v in other.scalar.items():
            self.scalar[k] = wrap_int64(self.scalar.get(k, 0) + sign * v)

    def sub(self, other: Resource) -> None:
        self.add(other, -1)

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)
        for k, v in other.scalar.items():
            self.scalar[k] = max(self.scalar.get(k, 0), v)

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar),
        )

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def names(self) -> list[str]:
        out = [CPU, MEMORY, EPHEMERAL_STORAGE, PODS]
        out.extend(self.scalar)
        return out

    def is_zero(self) -> bool:
        return (
            self.milli_cpu == 0
            and self.memory == 0
            and self.ephemeral_storage == 0
            and self.allowed_pod_number == 0
            and not any(self.scalar.values())
        )

    def to_dict(self) -> dict[str, int]:
        d = {
            CPU: self.milli_cpu,
            MEMORY: self.memory,
            EPHEMERAL_STORAGE: self.ephemeral_storage,
            PODS: self.allowed_pod_number,
        }
        d.update(self.scalar)
        return d

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return f"Resource({self.to_dict()})"

    __hash__ = None  # type: ignore[assignment]


@dataclass(slots=True)
class PodRequests:
    """What a pod asks for: exact requests for filtering, and non-zero cpu/memory twice.

    ``non_zero_*`` is what a NodeInfo accounts for the pod (``PodInfo.CalculateResource``),
    ``score_*`` what NodeResourcesFit's scorer uses for the pod being scheduled
    (``calculatePodResourceRequest`` without pod-level resources: the containers' requests,
    missing cpu/memory defaulted, plus overhead). The two differ for pods with pod-level
    requests only.
    """

    requests: Resource
    non_zero_milli_cpu: int
    non_zero_memory: int
    score_milli_cpu: int
    score_memory: int


# Exact resource lists: upstream adds and maxes ``resource.Quantity`` values and only
# rounds (MilliValue/Value) once, on the pod total. A parsed quantity is a whole number
# of nanounits, so integers of nanounits are exact.
_Exact = dict[str, int]
_NANO = 10**9
_NON_MISSING: dict[str, int] = {
    CPU: DEFAULT_MILLI_CPU_REQUEST * (_NANO // 1000),
    MEMORY: DEFAULT_MEMORY_REQUEST * _NANO,
}


@lru_cache(maxsize=4096)
def _nanos(q: Quantity) -> int:
    return int(parse_quantity(q) * _NANO)  # exact: parsing rounds to whole nanounits


def _exact(rl: Mapping[str, Quantity], where: str) -> _Exact:
    out: _Exact = {}
    for name, q in rl.items():
        try:
            out[name] = _nanos(q)
        except QuantityError as e:
            raise ResourceError(f"{where}.{name}: {e}") from None
    return out


def _container_requests(c: Container, where: str) -> _Exact:
    """A container's requests, exact; the error names the field that did not parse."""
    # kube-apiserver defaults a missing request to its limit; do the same for manifests
    # that never went through an apiserver (simulate, extender payloads).
    out = _exact(c.resources.requests, f"{where}.resources.requests")
    lim = c.resources.limits
    if lim:
        missing = {k: v for k, v in lim.items() if k not in out}
        out.update(_exact(missing, f"{where}.resources.limits"))
    return out


def _add(into: _Exact, other: Mapping[str, int]) -> None:
    for k, v in other.items():
        into[k] = into.get(k, 0) + v


def _max(into: _Exact, other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if k not in into or v > into[k]:
            into[k] = v


def _aggregate(
    containers: Iterable[_Exact], init_containers: Iterable[tuple[_Exact, bool]]
) -> _Exact:
    """``resourcehelper.AggregateContainerRequests``: sum(containers) plus sidecars,
    max'd with each init container (which runs beside the sidecars started before it)."""
    total: _Exact = {}
    for c in containers:
        _add(total, c)
    restartable: _Exact = {}
    init_max: _Exact = {}
    for c, sidecar in init_containers:
        if sidecar:
            _add(total, c)
            _add(restartable, c)
            _max(init_max, restartable)
        else:
            tmp = dict(c)
            _add(tmp, restartable)
            _max(init_max, tmp)
    _max(total, init_max)
    return total


def _with_defaults(reqs: _Exact, defaults: Mapping[str, int] = _NON_MISSING) -> _Exact:
    """``applyNonMissing``: ``defaults`` for what a container does not request at all."""
    if all(k in reqs for k in defaults):
        return reqs
    out = dict(reqs)
    for k, v in defaults.items():
        out.setdefault(k, v)
    return out


def _pod_level_requests(spec: PodSpec, ref: str, containers: Mapping[str, int]) -> _Exact:
    """The supported pod-level requests (``spec.resources.requests``), empty when unset.

    Like container requests defaulted from limits, the apiserver's pod-level defaulting
    (``defaultHugePagePodLimits``, then ``defaultPodRequests``) is redone here for
    manifests that never went through one; on a pod that did it changes nothing.
    ``containers`` is the aggregate of the containers' requests.
    """
    res = spec.resources
    if res is None or not (res.requests or res.limits):
        return {}
    where = f"{ref}: spec.resources"
    supported = {k: q for k, q in res.requests.items() if is_supported_pod_level_resource(k)}
    reqs = _exact(supported, f"{where}.requests")
    supported = {k: q for k, q in res.limits.items() if is_supported_pod_level_resource(k)}
    lims = _exact(supported, f"{where}.limits")
    has_limits = bool(res.limits)
    # Hugepages the containers limit, and the pod neither requests nor limits, get a
    # pod-level limit of the containers' aggregate.
    huge = _aggregate(
        (
            _hugepage_limits(c, f"{ref}: spec.containers[{i}]")
            for i, c in enumerate(spec.containers)
        ),
        (
            (_hugepage_limits(c, f"{ref}: spec.initContainers[{i}]"), c.restart_policy == "Always")
            for i, c in enumerate(spec.init_containers)
        ),
    )
    for k, v in huge.items():
        if k not in res.requests and k not in lims:
            lims[k] = v
            has_limits = True
    if has_limits:
        # A pod with limits requests the containers' aggregate of cpu/memory (the
        # overcommittable resources), else its limit.
        for k in (CPU, MEMORY):
            if k in containers and k not in reqs:
                reqs[k] = containers[k]
        for k, v in lims.items():
            reqs.setdefault(k, v)
    return reqs


def _hugepage_limits(c: Container, where: str) -> _Exact:
    lim = {k: q for k, q in c.resources.limits.items() if k.startswith(HUGEPAGES_PREFIX)}
    return _exact(lim, f"{where}.resources.limits") if lim else {}


def _round(nanos: int, unit: int = _NANO) -> int:
    """Whole ``unit``s (a nanounit count per unit), rounded away from zero and saturated
    to int64 like Value()."""
    n = -(-abs(nanos) // unit)
    return saturate_int64(n if nanos >= 0 else -n)


def pod_requests(pod: Pod) -> PodRequests:
    """Effective requests (filtering) and non-zero requests (NodeInfo, scoring) for ``pod``.

    ``resourcehelper.PodRequests``: the containers' aggregate, in which pod-level requests
    replace the resources they set (PodLevelResources, on by default upstream), plus
    overhead. Raises ``ResourceError`` naming the pod and field when a quantity does not
    parse.
    """
    ref = f"Pod {pod.metadata.namespace}/{pod.metadata.name}"
    spec = pod.spec
    cs = [
        _container_requests(c, f"{ref}: spec.containers[{i}]")
        for i, c in enumerate(spec.containers)
    ]
    ics = [
        (_container_requests(c, f"{ref}: spec.initContainers[{i}]"), c.restart_policy == "Always")
        for i, c in enumerate(spec.init_containers)
    ]
    full = _aggregate(cs, ics)
    pod_level = _pod_level_requests(spec, ref, full)
    over = _exact(spec.overhead, f"{ref}: spec.overhead") if spec.overhead else {}

    def total(containers: _Exact) -> _Exact:
        containers.update(pod_level)
        _add(containers, over)
        return containers

    def containers_with(defaults: Mapping[str, int]) -> _Exact:
        return _aggregate(
            [_with_defaults(c, defaults) for c in cs],
            [(_with_defaults(c, defaults), a) for c, a in ics],
        )

    full = total(full)
    # NodeResourcesFit's scorer defaults every container's missing cpu/memory and never
    # looks at pod-level requests: upstream's Fit builds its resourceAllocationScorer
    # without enablePodLevelResources, so calculatePodResourceRequest skips them
    # (BalancedAllocation, which sets it, scores the effective ``requests``).
    score = containers_with(_NON_MISSING)
    _add(score, over)
    # A NodeInfo defaults them too, unless the pod has pod-level requests: then only
    # what the pod requests nowhere.
    node = score
    if pod_level:
        missing = {k: v for k, v in _NON_MISSING.items() if k not in full}
        node = total(containers_with(missing)) if missing else full
    req = Resource()
    for name, q in full.items():
        if name == CPU:
            req.milli_cpu = _round(q, _NANO // 1000)
        elif name == MEMORY:
            req.memory = _round(q)
        elif name == EPHEMERAL_STORAGE:
            req.ephemeral_storage = _round(q)
        elif name != PODS and is_scalar_resource(name):
            req.scalar[name] = _round(q)
    milli = _NANO // 1000
    return PodRequests(
        req,
        _round(node.get(CPU, 0), milli),
        _round(node.get(MEMORY, 0)),
        _round(score.get(CPU, 0), milli),
        _round(score.get(MEMORY, 0)),
    )
