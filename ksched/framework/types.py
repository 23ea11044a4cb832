"""PodInfo and NodeInfo: the scheduler's precomputed views of pods and nodes.

A ``PodInfo`` parses a pod's requests once; a ``NodeInfo`` keeps running aggregates
of the pods on a node, so plugins never re-sum a node's pods. Both mirror
kube-scheduler's ``framework.PodInfo``/``framework.NodeInfo``.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..api.nodefeatures import try_map
from ..api.objects import InvalidObjectError, Node, Pod, PodSpec, ResourceRequirements
from ..api.quantity import wrap_int64
from ..api.resources import CPU, MEMORY, PodRequests, Resource, ResourceError, pod_requests

__all__ = [
    "HostPortInfo",
    "ImageStateSummary",
    "InvalidObjectError",
    "NodeInfo",
    "PodInfo",
    "add_requests",
    "next_generation",
]

_generation = itertools.count(1)


def next_generation() -> int:
    return next(_generation)


DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"


class HostPortInfo:
    """Used host ports per IP (``framework.HostPortInfo``); 0.0.0.0 conflicts with every IP."""

    __slots__ = ("ports",)

    def __init__(self) -> None:
        self.ports: dict[str, set[tuple[str, int]]] = {}

    @staticmethod
    def _sanitize(ip: str, protocol: str) -> tuple[str, str]:
        return (ip or DEFAULT_BIND_ALL_HOST_IP), (protocol or "TCP")

    def add(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        self.ports.setdefault(ip, set()).add((protocol, port))

    def remove(self, ip: str, protocol: str, port: int) -> None:
        if port <= 0:
            return
        ip, protocol = self._sanitize(ip, protocol)
        s = self.ports.get(ip)
        if s is not None:
            s.discard((protocol, port))
            if not s:
                del self.ports[ip]

    def __len__(self) -> int:
        return sum(len(s) for s in self.ports.values())

    def check_conflict(self, ip: str, protocol: str, port: int) -> bool:
        if port <= 0:
            return False
        ip, protocol = self._sanitize(ip, protocol)
        pp = (protocol, port)
        if ip == DEFAULT_BIND_ALL_HOST_IP:
            return any(pp in s for s in self.ports.values())
        for key in (DEFAULT_BIND_ALL_HOST_IP, ip):
            s = self.ports.get(key)
            if s is not None and pp in s:
                return True
        return False

    def clone(self) -> HostPortInfo:
        h = HostPortInfo()
        h.ports = {k: set(v) for k, v in self.ports.items()}
        return h


class PodInfo:
    """A pod plus what scheduling derives from it once (requests, priority).

    ``error`` is set instead of raising when the pod's resources do not parse: the
    scheduling cycle reports it as the pod's Unschedulable message.

    ``non_zero_cpu``/``non_zero_mem`` are what a NodeInfo accounts for the pod,
    ``score_cpu``/``score_mem`` what the resource scorers use for it as the pod being
    scheduled (they differ only with pod-level requests, see ``PodRequests``).

    ``requests``, the non-zero figures and ``error`` are worked out on first
    use (``__getattr__`` runs only while a slot is unset): most versions of a pod the
    informer decodes (each update of a bound pod) are never asked, and a version whose
    spec equals one already worked out can take its values (``share_derived``).
    """

    __slots__ = (
        "__weakref__",
        "_raw",
        "cache",
        "error",
        "non_zero_cpu",
        "non_zero_mem",
        "pod",
        "requests",
        "score_cpu",
        "score_mem",
    )

    error: str | None
    requests: Resource
    non_zero_cpu: int
    non_zero_mem: int
    score_cpu: int
    score_mem: int

    def __init__(self, pod: Pod, raw: dict[str, Any] | bytes | None = None) -> None:
        self.pod = pod
        # The API JSON, for extender payloads and simulate output: kept as the bytes the
        # watch delivered and decoded only if asked (most pods never are), or as a dict.
        self._raw = raw
        # Per-plugin precomputations keyed by plugin name (e.g. compiled selectors).
        self.cache: dict[str, Any] = {}

    @property
    def raw(self) -> dict[str, Any] | None:
        r = self._raw
        if isinstance(r, bytes):
            r = self._raw = msgspec.json.decode(r)
        return r

    @raw.setter
    def raw(self, value: dict[str, Any] | bytes | None) -> None:
        self._raw = value

    def raw_json(self) -> bytes | None:
        """The API JSON as bytes (without a decode/encode round trip when kept as such)."""
        r = self._raw
        if r is None or isinstance(r, bytes):
            return r
        return msgspec.json.encode(r)

    def __getattr__(self, name: str) -> Any:
        # Only reached for an unset slot: the derived values are computed now.
        if name in _DERIVED:
            self._derive()
            return object.__getattribute__(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _derive(self) -> None:
        error: str | None = None
        try:
            key: Hashable = _requests_key(self.pod.spec)
            pr = _REQUESTS_MEMO.get(key)
        except TypeError:  # an unhashable quantity (not from JSON): no memo
            key, pr = None, None
        if pr is None:
            try:
                pr = pod_requests(self.pod)
            except ResourceError as e:
                error = str(e)  # names this pod: never shared
            else:
                if key is not None:
                    if len(_REQUESTS_MEMO) >= _REQUESTS_MEMO_SIZE:
                        _REQUESTS_MEMO.clear()
                    _REQUESTS_MEMO[key] = pr
        if pr is None:
            self.requests = Resource()
            self.non_zero_cpu = self.non_zero_mem = self.score_cpu = self.score_mem = 0
        else:
            self.requests = pr.requests
            self.non_zero_cpu = pr.non_zero_milli_cpu
            self.non_zero_mem = pr.non_zero_memory
            self.score_cpu = pr.score_milli_cpu
            self.score_mem = pr.score_memory
        if not _has(self, "error"):  # a decoding error set by hand wins
            self.error = error

    def share_derived(self, other: PodInfo) -> None:
        """Take ``other``'s requests (and their error) when this version has not worked
        them out yet; only for a version of the same pod with an equal spec."""
        if _has(self, "requests"):
            return
        self.requests = other.requests
        self.non_zero_cpu = other.non_zero_cpu
        self.non_zero_mem = other.non_zero_mem
        self.score_cpu = other.score_cpu
        self.score_mem = other.score_mem
        if not _has(self, "error"):
            self.error = other.error

    @property
    def name(self) -> str:
        return self.pod.metadata.name

    @property
    def namespace(self) -> str:
        return self.pod.metadata.namespace

    @property
    def uid(self) -> str:
        return self.pod.metadata.uid

    @property
    def key(self) -> str:
        m = self.pod.metadata
        return f"{m.namespace}/{m.name}"

    @property
    def labels(self) -> dict[str, str]:
        return self.pod.metadata.labels

    @property
    def priority(self) -> int:
        p = self.pod.spec.priority
        return p if p is not None else 0

    @property
    def node_name(self) -> str:
        return self.pod.spec.node_name

    def has_affinity(self) -> bool:
        a = self.pod.spec.affinity
        return a is not None and (a.pod_affinity is not None or a.pod_anti_affinity is not None)

    def has_required_anti_affinity(self) -> bool:
        a = self.pod.spec.affinity
        return (
            a is not None
            and a.pod_anti_affinity is not None
            and bool(a.pod_anti_affinity.required_during_scheduling_ignored_during_execution)
        )

    def with_pod(self, pod: Pod, raw: dict[str, Any] | bytes | None = None) -> PodInfo:
        return PodInfo(pod, raw if raw is not None else self._raw)

    def assumed_on(self, node_name: str) -> PodInfo:
        """A copy with ``spec.nodeName`` set, sharing the parsed requests (no re-parse)."""
        spec = msgspec.structs.replace(self.pod.spec, node_name=node_name)
        out = PodInfo.__new__(PodInfo)
        out.pod = msgspec.structs.replace(self.pod, spec=spec)
        out._raw = self._raw
        out.error = self.error
        out.cache = self.cache
        out.requests = self.requests
        out.non_zero_cpu = self.non_zero_cpu
        out.non_zero_mem = self.non_zero_mem
        out.score_cpu = self.score_cpu
        out.score_mem = self.score_mem
        return out

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


_DERIVED = frozenset(
    {"requests", "non_zero_cpu", "non_zero_mem", "score_cpu", "score_mem", "error"}
)

# Requests per distinct resource spec: the replicas of a workload share theirs, so
# quantities are parsed once per workload rather than once per pod (the parse costs
# several times the lookup). Like the versions of one pod (``share_derived``), pods then
# share one read-only ``Resource``.
_REQUESTS_MEMO: dict[Hashable, PodRequests] = {}
_REQUESTS_MEMO_SIZE = 4096


def _resources_key(r: ResourceRequirements) -> tuple[Any, ...]:
    return (tuple(r.requests.items()), tuple(r.limits.items()))


def _requests_key(spec: PodSpec) -> Hashable:
    """Everything of ``spec`` that ``pod_requests`` reads (its error messages aside)."""
    cs = spec.containers
    pod_level = spec.resources
    if len(cs) == 1 and not spec.init_containers and not spec.overhead and pod_level is None:
        return _resources_key(cs[0].resources)  # the usual pod: a pair, never equal to the 4-tuple
    return (
        tuple(_resources_key(c.resources) for c in cs),
        tuple(
            (_resources_key(c.resources), c.restart_policy == "Always")
            for c in spec.init_containers
        ),
        tuple(spec.overhead.items()),
        None if pod_level is None else _resources_key(pod_level),
    )


def _has(obj: object, name: str) -> bool:
    """Whether slot ``name`` is set (without computing it)."""
    try:
        object.__getattribute__(obj, name)
    except AttributeError:
        return False
    return True


def same_for_node(a: PodInfo, b: PodInfo) -> bool:
    """Whether two versions of a pod are interchangeable in a NodeInfo and in what plugins
    read from the pods on a node: equal spec (so requests, ports, affinity, priority),
    identity, labels, annotations, owners and deletion state, and status phase. What may
    differ is resourceVersion, generation and the rest of the status (conditions), as
    between an assumed pod ``a`` and its bound version ``b`` observed by the watch. With
    equal specs, ``b`` takes ``a``'s requests instead of parsing its own."""
    if a.pod.spec != b.pod.spec:
        return False
    b.share_derived(a)  # derived from the equal spec: no second parse
    if a.error != b.error:
        return False
    ma, mb = a.pod.metadata, b.pod.metadata
    sa, sb = a.pod.status, b.pod.status
    return (
        ma.uid == mb.uid
        and ma.name == mb.name
        and ma.namespace == mb.namespace
        and ma.labels == mb.labels
        and ma.annotations == mb.annotations
        and ma.owner_references == mb.owner_references
        and ma.creation_timestamp == mb.creation_timestamp
        and ma.deletion_timestamp == mb.deletion_timestamp
        and sa.phase == sb.phase
        and sa.nominated_node_name == sb.nominated_node_name
    )


def add_requests(req: Resource, r: Resource, sign: int) -> None:
    """``req += sign * r`` as a NodeInfo accounts a pod's requests: upstream's int64 ``+=``
    wraps round (exactly undone by the removal)."""
    req.milli_cpu = wrap_int64(req.milli_cpu + sign * r.milli_cpu)
    req.memory = wrap_int64(req.memory + sign * r.memory)
    req.ephemeral_storage = wrap_int64(req.ephemeral_storage + sign * r.ephemeral_storage)
    for k, v in r.scalar.items():
        req.scalar[k] = wrap_int64(req.scalar.get(k, 0) + sign * v)


@dataclass(slots=True)
class ImageStateSummary:
    size: int
    num_nodes: int


def _swap_last(pods: list[PodInfo], old: PodInfo, new: PodInfo) -> bool:
    """Replace the last ``old`` (by identity) in ``pods`` with ``new``; False if absent."""
    for i in range(len(pods) - 1, -1, -1):
        if pods[i] is old:
            pods[i] = new
            return True
    return False


@dataclass(slots=True)
class NodeInfo:
    """A node with aggregates over the pods assigned (or assumed) to it."""

    node: Node | None = None
    pods: list[PodInfo] = field(default_factory=list)
    pods_with_affinity: list[PodInfo] = field(default_factory=list)
    pods_with_required_anti_affinity: list[PodInfo] = field(default_factory=list)
    used_ports: HostPortInfo = field(default_factory=HostPortInfo)
    requested: Resource = field(default_factory=Resource)
    non_zero_requested: Resource = field(default_factory=Resource)
    allocatable: Resource = field(default_factory=Resource)
    image_states: dict[str, ImageStateSummary] = field(default_factory=dict)
    # ``node.status.declaredFeatures`` as a feature bitmap (``ksched.api.nodefeatures``)
    declared_features: int = 0
    generation: int = 0
    error: str | None = None

    @property
    def name(self) -> str:
        return self.node.metadata.name if self.node is not None else ""

    def set_node(self, node: Node) -> None:
        self.node = node
        self.error = None
        self.declared_features = try_map(node.status.declared_features)
        try:
            self.allocatable = Resource.from_list(
                node.status.allocatable, f"Node {node.metadata.name}: status.allocatable"
            )
        except ResourceError as e:
            self.allocatable = Resource()
            self.error = str(e)
        self.generation = next_generation()

    def add_pod(self, pi: PodInfo) -> None:
        self.pods.append(pi)
        if pi.has_affinity():
            self.pods_with_affinity.append(pi)
        if pi.has_required_anti_affinity():
            self.pods_with_required_anti_affinity.append(pi)
        self._update(pi, 1)

    def remove_pod(self, pi: PodInfo) -> bool:
        """Upstream's ``removeFromSlice``: the last pod takes the removed one's place. The
        order is observable: preemption sorts victims with a comparator that is not a
        strict order (unstarted pods), so ties come out as the node lists them."""
        uid, key = pi.uid, pi.key
        pods = self.pods
        for i, p in enumerate(pods):
            if (p.uid == uid and uid) or (not uid and p.key == key):
                pods[i] = pods[-1]
                pods.pop()
                for lst in (self.pods_with_affinity, self.pods_with_required_anti_affinity):
                    for j, q in enumerate(lst):
                        if q is p:
                            lst[j] = lst[-1]
                            lst.pop()
                            break
                self._update(p, -1)
                return True
        return False

    def swap_pod(self, old: PodInfo, new: PodInfo) -> bool:
        """Put ``new`` where ``old`` is (by identity) without touching the aggregates or the
        generation: only for a version of the same pod that counts exactly the same (see
        ``same_for_node``). False, changing nothing, if ``old`` is not on the node.

        Searched from the end: the usual ``old`` is a pod just assumed there, whose bind
        the watch now confirms, so it is among the last; from the front, a node holding
        30,000 pods (SchedulingDaemonset) made each confirmation a scan of them all."""
        if not _swap_last(self.pods, old, new):
            return False
        _swap_last(self.pods_with_affinity, old, new)
        _swap_last(self.pods_with_required_anti_affinity, old, new)
        return True

    def _update(self, pi: PodInfo, sign: int) -> None:
        add_requests(self.requested, pi.requests, sign)
        nz = self.non_zero_requested
        nz.milli_cpu = wrap_int64(nz.milli_cpu + sign * pi.non_zero_cpu)
        nz.memory = wrap_int64(nz.memory + sign * pi.non_zero_mem)
        spec = pi.pod.spec
        # Host ports of containers and of sidecars (``util.GetHostPorts``).
        for c in (
            *[ic for ic in spec.init_containers if ic.restart_policy == "Always"],
            *spec.containers,
        ):
            for p in c.ports:
                if sign > 0:
                    self.used_ports.add(p.host_ip, p.protocol, p.host_port)
                else:
                    self.used_ports.remove(p.host_ip, p.protocol, p.host_port)
        self.generation = next_generation()

    def clone(self) -> NodeInfo:
        return NodeInfo(
            node=self.node,
            pods=list(self.pods),
            pods_with_affinity=list(self.pods_with_affinity),
            pods_with_required_anti_affinity=list(self.pods_with_required_anti_affinity),
            used_ports=self.used_ports.clone(),
            requested=self.requested.clone(),
            non_zero_requested=self.non_zero_requested.clone(),
            allocatable=self.allocatable.clone(),
            image_states=self.image_states,
            declared_features=self.declared_features,
            generation=self.generation,
            error=self.error,
        )

    def resource_fields(self) -> dict[str, Any]:
        return {
            "requested": self.requested.to_dict(),
            "nonZeroRequested": {
                CPU: self.non_zero_requested.milli_cpu,
                MEMORY: self.non_zero_requested.memory,
            },
            "allocatable": self.allocatable.to_dict(),
        }
