"""Resource vectors and pod requests computed exactly as kube-scheduler does.

``Resource`` mirrors ``framework.Resource``: CPU in millicores, memory and
ephemeral storage in bytes, a pod count, and scalar (extended, hugepages,
prefixed-native, attachable-volumes) resources in whole units.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .objects import Container, InvalidObjectError, Pod, Quantity
from .quantity import QuantityError, milli_value, value

__all__ = [
    "CPU",
    "DEFAULT_MILLI_CPU_REQUEST",
    "DEFAULT_MEMORY_REQUEST",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "PodRequests",
    "Resource",
    "ResourceError",
    "is_extended_resource",
    "is_scalar_resource",
    "pod_requests",
]

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"
DEFAULT_MILLI_CPU_REQUEST = 100  # 0.1 core, schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # 200 MB, schedutil.DefaultMemoryRequest


class ResourceError(InvalidObjectError):
    """An unparsable quantity; the message names the object and field."""


def is_prefixed_native(name: str) -> bool:
    return "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """``v1helper.IsExtendedResourceName``: domain-prefixed, not kubernetes.io, not requests.*."""
    if "/" not in name or is_prefixed_native(name) or name.startswith("requests."):
        return False
    return True


def is_scalar_resource(name: str) -> bool:
    """``schedutil.IsScalarResourceName``."""
    return (
        is_extended_resource(name)
        or name.startswith("hugepages-")
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
                    self.milli_cpu += milli_value(q)
                elif name == MEMORY:
                    self.memory += value(q)
                elif name == PODS:
                    self.allowed_pod_number += value(q)
                elif name == EPHEMERAL_STORAGE:
                    self.ephemeral_storage += value(q)
                elif is_scalar_resource(name):
                    self.scalar[name] = self.scalar.get(name, 0) + value(q)
            except QuantityError as e:
                raise ResourceError(f"{where}.{name}: {e}" if where else f"{name}: {e}") from None

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) - v

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)
        for k, v in other.scalar.items():
            self.scalar[k] = max(self.scalar.get(k, 0), v)

    def clone(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage,
                        self.allowed_pod_number, dict(self.scalar))

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
        return (self.milli_cpu == 0 and self.memory == 0 and self.ephemeral_storage == 0
                and self.allowed_pod_number == 0 and not any(self.scalar.values()))

    def to_dict(self) -> dict[str, int]:
        d = {CPU: self.milli_cpu, MEMORY: self.memory, EPHEMERAL_STORAGE: self.ephemeral_storage,
             PODS: self.allowed_pod_number}
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
    """What a pod asks for: exact requests for filtering, non-zero ones for scoring."""

    requests: Resource
    non_zero_milli_cpu: int
    non_zero_memory: int


def _container_requests(c: Container) -> Mapping[str, Quantity]:
    # kube-apiserver defaults a missing request to its limit; do the same for manifests
    # that never went through an apiserver (simulate, extender payloads).
    req = c.resources.requests
    lim = c.resources.limits
    if not lim:
        return req
    merged = dict(lim)
    merged.update(req)
    return merged


def _non_zero(reqs: Mapping[str, Quantity], where: str) -> tuple[int, int]:
    try:
        cpu = milli_value(reqs[CPU]) if CPU in reqs else DEFAULT_MILLI_CPU_REQUEST
        mem = value(reqs[MEMORY]) if MEMORY in reqs else DEFAULT_MEMORY_REQUEST
    except QuantityError as e:
        raise ResourceError(f"{where}: {e}") from None
    return cpu, mem


def _aggregate(
    containers: Iterable[tuple[Container, str]],
    init_containers: Iterable[tuple[Container, str]],
    one: type[_Acc],
) -> _Acc:
    """``resourcehelper.PodRequests``: sum(containers) with sidecars, max'd with each init container."""
    total = one.zero()
    for c, where in containers:
        total.add(one.of(c, where))
    restartable = one.zero()
    init_max = one.zero()
    for c, where in init_containers:
        r = one.of(c, where)
        if c.restart_policy == "Always":
            total.add(r)
            restartable.add(r)
            r = restartable.clone()
        else:
            r.add(restartable)
        init_max.set_max(r)
    total.set_max(init_max)
    return total


class _Acc:
    """Resource accumulator protocol used by ``_aggregate`` for both request flavours."""

    def add(self, other: _Acc) -> None:
        raise NotImplementedError

    def set_max(self, other: _Acc) -> None:
        raise NotImplementedError

    def clone(self) -> _Acc:
        raise NotImplementedError

    @classmethod
    def zero(cls) -> _Acc:
        raise NotImplementedError

    @classmethod
    def of(cls, c: Container, where: str) -> _Acc:
        raise NotImplementedError


class _Full(Resource, _Acc):  # type: ignore[misc]
    __slots__ = ()

    @classmethod
    def zero(cls) -> _Full:
        return cls()

    @classmethod
    def of(cls, c: Container, where: str) -> _Full:
        r = cls()
        r.add_list(_container_requests(c), f"{where}.resources.requests")
        return r

    def clone(self) -> _Full:
        return _Full(self.milli_cpu, self.memory, self.ephemeral_storage,
                     self.allowed_pod_number, dict(self.scalar))


class _NonZero(_Acc):
    __slots__ = ("cpu", "mem")

    def __init__(self, cpu: int = 0, mem: int = 0) -> None:
        self.cpu, self.mem = cpu, mem

    @classmethod
    def zero(cls) -> _NonZero:
        return cls()

    @classmethod
    def of(cls, c: Container, where: str) -> _NonZero:
        return cls(*_non_zero(_container_requests(c), f"{where}.resources.requests"))

    def add(self, other: _Acc) -> None:
        assert isinstance(other, _NonZero)
        self.cpu += other.cpu
        self.mem += other.mem

    def set_max(self, other: _Acc) -> None:
        assert isinstance(other, _NonZero)
        self.cpu = max(self.cpu, other.cpu)
        self.mem = max(self.mem, other.mem)

    def clone(self) -> _NonZero:
        return _NonZero(self.cpu, self.mem)


def pod_requests(pod: Pod) -> PodRequests:
    """Effective requests (filtering) and non-zero requests (scoring) for ``pod``.

    Raises ``ResourceError`` naming the pod and field when a quantity does not parse.
    """
    ref = f"Pod {pod.metadata.namespace}/{pod.metadata.name}"
    spec = pod.spec
    cs = [(c, f"{ref}: spec.containers[{i}]") for i, c in enumerate(spec.containers)]
    ics = [(c, f"{ref}: spec.initContainers[{i}]") for i, c in enumerate(spec.init_containers)]
    full = _aggregate(cs, ics, _Full)
    nz = _aggregate(cs, ics, _NonZero)
    assert isinstance(full, _Full) and isinstance(nz, _NonZero)
    if spec.overhead:
        over = Resource()
        try:
            over.add_list(spec.overhead, f"{ref}: spec.overhead")
        except ResourceError:
            raise
        full.add(over)
        nz.cpu += over.milli_cpu
        nz.mem += over.memory
    req = Resource(full.milli_cpu, full.memory, full.ephemeral_storage, 0, full.scalar)
    return PodRequests(req, nz.cpu, nz.mem)
