"""``ksched extender``: one profile's plugins served as a kube-scheduler HTTP extender.

A stock kube-scheduler (or ksched itself) POSTs extender/v1 payloads to ``/filter``,
``/prioritize``, ``/preempt`` and ``/bind``; the answers come from the very plugin code
``ksched run`` uses — a ``Framework`` over a ``Snapshot``:

* without ``--kubeconfig`` the snapshot holds the request's NodeList and no pods, so
  node-local plugins (resources against allocatable, taints, affinity to node labels,
  unschedulable) answer, and nodeCacheCapable (NodeNames-only) requests cannot be;
* with ``--kubeconfig`` informers keep a warm cache of nodes and bound pods, so stateful
  plugins (existing pods, inter-pod affinity, topology spread) answer, NodeNames-only
  requests work, and ``/bind`` posts the Binding through the API.

Filter: PreFilter, then Filter on the requested nodes; Unschedulable nodes go to
``FailedNodes``, UnschedulableAndUnresolvable ones to ``FailedAndUnresolvableNodes``.
Prioritize: PreScore/Score/NormalizeScore and weights as in the scheduler; the weighted
totals are stretched over the requested nodes to 0..10 (``extender_priorities``: the
lowest gets 0, the highest 10), so differences survive kube-scheduler's 0..10 scale. At
``-v 4`` each request logs one line with the spread and the best node.
Preempt: a candidate node stays when the pod passes Filter with its victims removed
(nodes the extender knows nothing about are passed through untouched).

Access: on a loopback address (the default, 127.0.0.1) every verb answers anyone who can
connect. With ``--client-ca-file`` (TLS) every request on the port must present a client
certificate that CA signed: none gets 401 ``{"Error": ...}`` (a certificate the CA did not
sign fails the TLS handshake). On any other address without ``--client-ca-file`` every
verb gets 403 (anyone reaching the port could bind any pod to any node, steer its
evictions, or read and feed the plugins; kube-scheduler's own secure port authenticates
everything but its health checks) unless ``--insecure-allow-unauthenticated`` says
otherwise, which is logged at start; /healthz, /readyz and /metrics answer anyone, as on
``--health-port``. Reads and writes of a connection are bounded
(``ksched.util.httpserver``).

Errors: a body that is not valid JSON or has wrong types gets 400 ``{"Error": ...}``; one
over a bound on what a request may hold (``ExtenderServer.bounds``: bytes, nodes, JSON
values, the size of one object) 413, decided from the bytes before anything is decoded;
a plugin failure during Filter or Bind is a 200 whose ``Error`` is set,
which kube-scheduler turns into a failed call; Prioritize and Preempt have no Error field,
so their failures are a 500 ``{"Error": ...}``. Never a traceback.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import ipaddress
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import numpy as np
from aiohttp import web
from prometheus_client import Counter, Histogram, generate_latest

from .. import logging as klog
from ..api.objects import (
    DecodeError,
    InvalidObjectError,
    Node,
    ObjectMeta,
    Pod,
    decode,
    decode_json,
)
from ..cache import Cache, CacheError
from ..framework.cycle_state import CycleState
from ..framework.deadline import DEFAULT_PLUGIN_TIMEOUT, PluginTimeout, SyncDeadline
from ..framework.handle import NullCluster
from ..framework.interface import MAX_NODE_SCORE
from ..framework.registry import Registry
from ..framework.runtime import PREFILTER_NARROWED_KEY, Framework
from ..framework.snapshot import NodeInfoView, Snapshot
from ..framework.status import Code, Status
from ..framework.types import NodeInfo, PodInfo
from ..metrics import SchedulerRegistry
from ..profile import SchedulerCluster, build_frameworks
from ..util.errors import KschedError
from ..util.httpserver import (
    Limits,
    answer_and_close,
    http_error_message,
    payload_error,
    start_app,
)
from ..util.tls import server_ssl_context
from . import DEFAULT_BIND_ADDRESS, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_NODES, DEFAULT_PORT, wire
from .wire import MAX_EXTENDER_PRIORITY

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration

__all__ = [
    "BIND_MAX_BODY_BYTES",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_PORT",
    "PROTECTED_PATHS",
    "Access",
    "ExtenderServer",
    "access_for",
    "extender_priorities",
    "is_loopback",
    "make_app",
    "make_health_app",
    "serve",
    "server_ssl_context",
    "start",
]

# A request its client abandoned (the status nginx logs for it); never sent.
CLIENT_CLOSED_REQUEST = 499
log = klog.get_logger("ksched.extender.server")

_JSON = "application/json"

#: Body limit of /bind: ExtenderBindingArgs is four short strings, so a larger body is not
#: one (the other verbs carry a NodeList and take ``max_body_bytes``).
BIND_MAX_BODY_BYTES = 64 * 1024

#: The body limit over this is the bound on a body's JSON values (array elements and
#: object members): what the decoded objects cost grows with their count, not their bytes
#: (a label of 10 bytes costs about 100 decoded). Nodes as kube-scheduler sends them
#: (managedFields trimmed) average over 30 bytes a value; a body of two-byte values
#: would otherwise decode to some 30 times its size.
BYTES_PER_VALUE = 16

#: The verbs: beyond loopback, only for callers with a client certificate.
PROTECTED_PATHS = frozenset({"/filter", "/prioritize", "/preempt", "/bind"})


@dataclass(frozen=True, slots=True)
class Access:
    """Who may call what on the extender's port."""

    #: the TLS context verifies client certificates (``--client-ca-file``): every request
    #: must present one (401 without)
    client_certs: bool = False
    #: ``PROTECTED_PATHS`` answer callers that presented no certificate (403 otherwise)
    open_verbs: bool = True


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` is a loopback address (127.0.0.0/8, ::1, ``localhost``); a wildcard
    (None, "", 0.0.0.0, ::) or any other name is not."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def access_for(host: str | None, *, client_certs: bool, insecure: bool = False) -> Access:
    """The access rules for listening on ``host``: with client certificates verified, they
    are required; else the verbs are open on loopback, or when ``insecure``
    (``--insecure-allow-unauthenticated``) says so."""
    if client_certs:
        return Access(client_certs=True, open_verbs=False)
    return Access(open_verbs=insecure or is_loopback(host))


class BadRequest(KschedError):
    """The request itself is wrong (400)."""


class CallFailed(KschedError):
    """The call could not be answered (500 where the result type has no Error field)."""


class TooLarge(KschedError):
    """The request is over a size or count bound (413)."""


class Busy(KschedError):
    """Too many request bodies in memory at once (503)."""


class NotReady(KschedError):
    """The informer caches are not synced yet (503)."""


@dataclass(slots=True)
class _Nodes:
    """The requested nodes: names in request order, their snapshot rows, raw objects."""

    names: list[str]
    rows: list[int | None]
    raw: list[wire.Obj] | None


@dataclass(slots=True)
class Request:
    """ExtenderArgs with their objects decoded: the pod and, without informers, a cache
    holding the request's NodeList. Pure work on request-local objects, so it runs in a
    worker thread while the event loop keeps answering (a 60 MiB NodeList takes seconds)."""

    args: wire.ExtenderArgs
    pod: PodInfo
    local: Cache | None


class _CacheFeeder:
    """What the informers drive (``SchedulerLike``): nodes and bound pods into the cache.

    Pending pods are of no interest: the scheduler asking sends the pod it schedules.
    """

    def __init__(self, cache: Cache, frameworks: Mapping[str, Framework]) -> None:
        self.cache = cache
        self.frameworks = frameworks

    def _op(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except CacheError as e:
            log.warning("extender cache update failed", error=str(e))

    def on_node_add(self, node: Node) -> None:
        self.cache.add_node(node)

    def on_node_update(self, old: Node, new: Node) -> None:
        self.cache.update_node(new)

    def on_node_delete(self, node: Node) -> None:
        self._op(self.cache.remove_node, node.metadata.name)

    def on_pod_add(self, pod: PodInfo) -> None:
        if pod.node_name:
            self._op(self.cache.add_pod, pod)

    def on_pod_update(self, old: PodInfo, new: PodInfo) -> None:
        if new.node_name and old.node_name:
            self._op(self.cache.update_pod, old, new)
        elif new.node_name:
            self._op(self.cache.add_pod, new)

    def on_pod_delete(self, pod: PodInfo) -> None:
        if pod.node_name:
            self._op(self.cache.remove_pod, pod)


class ExtenderServer:
    """The extender verbs over one profile's framework (HTTP lives in ``make_app``)."""

    def __init__(
        self,
        config: KubeSchedulerConfiguration,
        registry: Registry,
        *,
        profile: str | None = None,
        cluster: SchedulerCluster | None = None,
        stateful: bool = False,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        plugin_timeout: float | None = DEFAULT_PLUGIN_TIMEOUT,
        max_nodes: int = DEFAULT_MAX_NODES,
    ) -> None:
        self.cluster: SchedulerCluster = cluster if cluster is not None else NullCluster()
        self.can_bind = cluster is not None
        self._config, self._registry = config, registry
        name = profile or config.profiles[0].scheduler_name
        self.profile = name
        self._plugins: dict[int, str] = {}
        self._build()
        self.deadline = SyncDeadline(plugin_timeout, lambda: self._plugins)
        # Stateful (informer-fed) cache, or None: each request brings its nodes.
        self.cache: Cache | None = Cache(assumed_ttl=0) if stateful else None
        self.feeder = _CacheFeeder(self.cache, self.frameworks) if self.cache else None
        self.synced = not stateful
        self.max_body_bytes = max_body_bytes
        self.max_nodes = max_nodes
        # no _created series, as on the scheduler's /metrics
        self.metrics = SchedulerRegistry()
        self.requests = Counter(
            "ksched_extender_server_requests",
            "Extender requests served, by verb and HTTP code.",
            ["verb", "code"],
            registry=self.metrics,
        )
        self.duration = Histogram(
            "ksched_extender_server_request_duration_seconds",
            "Extender request latency in seconds, by verb.",
            ["verb"],
            registry=self.metrics,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
        )

    # -- request → snapshot ---------------------------------------------------------------------

    def bounds(self) -> wire.Bounds:
        """What a request body may hold: ``max_nodes`` nodes without informers (or before
        they have synced); with them, the nodes the cache holds and a tenth more (at least
        100) for nodes the informer has yet to deliver: more is no request a scheduler of
        this cluster sends. And a JSON value per ``BYTES_PER_VALUE`` bytes of the body
        limit."""
        values = self.max_body_bytes // BYTES_PER_VALUE
        if self.cache is None or not self.synced:  # not synced: 503 once decoded
            return wire.Bounds(self.max_nodes, max_values=values)
        known = self.cache.node_count()
        return wire.Bounds(known + max(100, known // 10), max_values=values)

    def _build(self) -> None:
        self.snapshot = Snapshot()
        self.frameworks = build_frameworks(
            self._config, self._registry, cluster=self.cluster, snapshot=self.snapshot
        )
        if self.profile not in self.frameworks:
            raise ValueError(
                f"unknown profile {self.profile!r}; the config has: "
                + ", ".join(sorted(self.frameworks))
            )
        self.fw: Framework = self.frameworks[self.profile]
        self._plugins = {id(inst): n for n, inst in self.fw.plugins.items()}

    def forget(self) -> None:
        """Without informers, drop what a request left behind once it is answered: its
        nodes stay in the snapshot, and in what plugins keep of it between cycles (the
        inter-pod affinity index), until the next request. For a large NodeList that was
        hundreds of MB (a 41 MB one left 1.5 GB resident); a new snapshot and frameworks
        cost 2 ms."""
        if self.cache is None:
            self._build()

    def _pod(self, raw: wire.Obj | None) -> PodInfo:
        if raw is None:
            raise BadRequest("Pod: required")
        try:
            if isinstance(raw, dict):
                return PodInfo(decode(raw, Pod), raw)
            data = bytes(raw)
            return PodInfo(decode_json(data, Pod), data)
        except DecodeError as e:
            raise BadRequest(str(e)) from None

    def decode_request(self, args: wire.ExtenderArgs | Request) -> Request:
        """The request's pod and (without informers) its NodeList decoded; touches nothing
        shared, so ``make_app`` runs it in a worker thread."""
        if isinstance(args, Request):
            return args
        pod = self._pod(args.pod)
        if self.cache is not None:
            return Request(args, pod, None)
        if args.nodes is None:
            if args.node_names is not None:
                raise CallFailed(
                    "NodeNames-only (nodeCacheCapable) requests need the "
                    "extender to run with --kubeconfig"
                )
            raise BadRequest("Nodes: required")
        local = Cache(assumed_ttl=0)
        for i, raw in enumerate(args.nodes):
            try:
                # straight from the body's bytes: fields no plugin reads are skipped
                node = decode(raw, Node) if isinstance(raw, dict) else decode_json(raw, Node)
            except DecodeError as e:
                raise BadRequest(f"Nodes.items[{i}]: {e}") from None
            if not node.metadata.name:
                raise BadRequest(f"Nodes.items[{i}]: metadata.name: required")
            local.add_node(node)
        return Request(args, pod, local)

    def _nodes(self, req: Request) -> _Nodes:
        """Make ``self.snapshot`` current for the request and find the requested nodes in it."""
        args = req.args
        if req.local is not None:
            assert args.nodes is not None
            req.local.update_snapshot(self.snapshot)
            names = [wire.object_meta(raw)[0] for raw in args.nodes]
            return _Nodes(names, [self.snapshot.row(n) for n in names], args.nodes)
        if not self.synced:
            raise NotReady("the extender's informer caches are not synced yet")
        assert self.cache is not None
        self.cache.update_snapshot(self.snapshot)
        if args.nodes is not None:
            names = [wire.object_meta(raw)[0] for raw in args.nodes]
        elif args.node_names is not None:
            names = list(args.node_names)
        else:
            raise BadRequest("Nodes or NodeNames: required")
        return _Nodes(names, [self.snapshot.row(n) for n in names], args.nodes)

    # -- verbs ----------------------------------------------------------------------------------

    def filter(self, args: wire.ExtenderArgs | Request) -> wire.ExtenderFilterResult:
        request = self.decode_request(args)
        pod = request.pod
        req = self._nodes(request)
        fw, snap = self.fw, self.snapshot
        failed: dict[str, str] = {}
        unresolvable: dict[str, str] = {}
        passed: set[str] = set()

        def reject(name: str, st: Status) -> None:
            target = unresolvable if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE else failed
            target[name] = st.message()

        def result() -> wire.ExtenderFilterResult:
            keep = [i for i, n in enumerate(req.names) if n in passed]
            if req.raw is not None:
                return wire.ExtenderFilterResult(
                    nodes=[req.raw[i] for i in keep],
                    failed_nodes=failed,
                    failed_and_unresolvable_nodes=unresolvable,
                )
            return wire.ExtenderFilterResult(
                node_names=[req.names[i] for i in keep],
                failed_nodes=failed,
                failed_and_unresolvable_nodes=unresolvable,
            )

        if pod.error is not None:
            for n in req.names:
                unresolvable[n] = pod.error
            return result()
        state = CycleState()
        pre, st, _ = fw.run_pre_filter(state, pod, snap)
        if not st.is_success():
            if not st.is_rejected():
                return wire.ExtenderFilterResult(error=st.message())
            for n in req.names:
                reject(n, st)
            return result()
        allowed = pre.node_names if pre is not None and pre.node_names is not None else None
        candidates: list[int] = []
        for name, row in zip(req.names, req.rows, strict=True):
            if row is None:
                failed[name] = "node not found in the extender's cache"
            elif allowed is not None and name not in allowed:
                plugins = state.get(PREFILTER_NARROWED_KEY) or []
                unresolvable[name] = (
                    f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"
                )
            else:
                candidates.append(row)
        rows = np.array(sorted(set(candidates)), dtype=np.intp)
        out = fw.find_feasible(state, pod, snap, rows, 0, len(rows))
        if out.statuses.absent is not None and out.statuses.absent.code == Code.ERROR:
            return wire.ExtenderFilterResult(error=out.statuses.absent.message())
        ok = {int(r) for r in out.feasible}
        infos = snap.node_infos
        for r in rows:
            ni = infos[int(r)]
            if int(r) in ok:
                passed.add(ni.name)
                continue
            st = out.statuses.statuses.get(ni.name) or fw.run_filter_plugins(state, pod, ni)
            if st.code == Code.ERROR:
                return wire.ExtenderFilterResult(error=st.message())
            if st.is_success():  # cannot happen: Filter is deterministic
                passed.add(ni.name)
            else:
                reject(ni.name, st)
        return result()

    def prioritize(self, args: wire.ExtenderArgs | Request) -> list[wire.HostPriority]:
        request = self.decode_request(args)
        pod = request.pod
        req = self._nodes(request)
        fw, snap = self.fw, self.snapshot
        known = [r for r in req.rows if r is not None]
        scores: dict[int, int] = {}
        if pod.error is None and known and fw.score_plugins:
            state = CycleState()
            # Score plugins may read what their PreFilter stored; a rejection is not ours to
            # report here (Filter does), scoring goes on.
            _, st, _ = fw.run_pre_filter(state, pod, snap)
            if st.code == Code.ERROR:
                raise CallFailed(st.message())
            rows = np.array(known, dtype=np.intp)
            st = fw.run_pre_score(state, pod, NodeInfoView(snap.node_infos, rows))
            if not st.is_success():
                raise CallFailed(st.message())
            res, st = fw.run_score(state, pod, snap, rows)
            if res is None:
                raise CallFailed(st.message())
            wsum = sum(
                fw.weights.get(p.name, 1)
                for p in fw.score_plugins
                if p.name not in state.skip_score_plugins
            )
            totals = res.totals.tolist()
            scores = dict(zip(known, extender_priorities(totals, wsum), strict=True))
            if klog.enabled(4):
                best = max(range(len(known)), key=totals.__getitem__)
                log.info(
                    "extender prioritize",
                    pod=pod.key,
                    node=snap.node_infos[known[best]].name,
                    profile=self.profile,
                    nodes=len(req.names),
                    total_min=min(totals),
                    total_max=totals[best],
                    weights=wsum,
                    v=4,
                )
        return [
            wire.HostPriority(n, scores.get(r, 0) if r is not None else 0)
            for n, r in zip(req.names, req.rows, strict=True)
        ]

    def preempt(self, args: wire.ExtenderPreemptionArgs) -> wire.ExtenderPreemptionResult:
        pod = self._pod(args.pod)
        wanted: dict[str, tuple[list[str], int]] = {}
        if args.node_name_to_meta_victims is not None:
            for node, mv in args.node_name_to_meta_victims.items():
                uids = [p.uid if p else "" for p in (mv.pods or [])] if mv else []
                wanted[node] = (uids, mv.num_pdb_violations if mv else 0)
        for node, v in (args.node_name_to_victims or {}).items():
            uids = [wire.object_meta(p)[1] for p in (v.pods or [])] if v else []
            wanted[node] = (uids, v.num_pdb_violations if v else 0)
        keep = dict(wanted)
        if self.cache is not None and wanted:
            if not self.synced:
                raise NotReady("the extender's informer caches are not synced yet")
            self.cache.update_snapshot(self.snapshot)
            keep = self._check_victims(pod, wanted)
        return wire.ExtenderPreemptionResult(
            {
                node: wire.MetaVictims([wire.MetaPod(u) for u in uids], npdb)
                for node, (uids, npdb) in keep.items()
            }
        )

    def _check_victims(
        self,
        pod: PodInfo,
        wanted: dict[str, tuple[list[str], int]],
    ) -> dict[str, tuple[list[str], int]]:
        """The candidates on which the pod passes Filter once their victims are gone."""
        fw, snap = self.fw, self.snapshot
        state = CycleState()
        pre, st, _ = fw.run_pre_filter(state, pod, snap)
        if st.code == Code.ERROR:
            raise CallFailed(st.message())
        if not st.is_success():
            return {}
        out: dict[str, tuple[list[str], int]] = {}
        for node, (uids, npdb) in wanted.items():
            ni = snap.get(node)
            if ni is None:
                out[node] = (uids, npdb)  # unknown to us: not ours to veto
                continue
            if pre is not None and pre.node_names is not None and node not in pre.node_names:
                continue
            fits = _fits_without(fw, state.clone(), pod, ni.clone(), uids)
            if fits is None:
                continue
            if fits.code == Code.ERROR:
                raise CallFailed(fits.message())
            if fits.is_success():
                out[node] = (uids, npdb)
        return out

    async def bind(self, args: wire.ExtenderBindingArgs) -> wire.ExtenderBindingResult:
        if not self.can_bind:
            return wire.ExtenderBindingResult(
                "this ksched extender has no API server to bind through (start it with "
                "--kubeconfig)"
            )
        meta = ObjectMeta(name=args.pod_name, namespace=args.pod_namespace, uid=args.pod_uid)
        try:
            await self.cluster.bind(PodInfo(Pod(metadata=meta)), args.node)
        except Exception as e:
            return wire.ExtenderBindingResult(str(e) or type(e).__name__)
        return wire.ExtenderBindingResult("")


def extender_priorities(totals: Sequence[int], weight_sum: int) -> list[int]:
    """ksched's weighted totals as extender scores (0..``MAX_EXTENDER_PRIORITY``).

    kube-scheduler multiplies an extender's score by its weight and by 10, so the 0..10
    scale has eleven steps where ksched's totals have ``100 * weight_sum + 1``. Scaling
    the weighted average straight down rounds the few points that separate feasible nodes
    (MostAllocated: 55, 58, 62) to one score; stretching ``[min, max]`` of the totals over
    the nodes asked about onto 0..10 keeps ksched's order and the ratios of its gaps, and
    loses only gaps under a twentieth of the spread. Equal totals give equal scores; when
    all are equal the average is scaled down, as there is no spread to stretch.
    """
    if not totals:
        return []
    lo, hi = min(totals), max(totals)
    if hi > lo:
        # round(MAX * (t - lo) / (hi - lo)), in integers
        den = 2 * (hi - lo)
        return [(2 * MAX_EXTENDER_PRIORITY * (t - lo) + hi - lo) // den for t in totals]
    den = 2 * MAX_NODE_SCORE * weight_sum
    # round(t / weight_sum / MAX_NODE_SCORE * MAX), in integers
    return [(2 * MAX_EXTENDER_PRIORITY * t + den // 2) // den if den > 0 else 0 for t in totals]


def _fits_without(
    fw: Framework, state: CycleState, pod: PodInfo, ni: NodeInfo, uids: Sequence[str]
) -> Status | None:
    """Filter on ``ni`` with the victims removed (None: a victim is not on that node)."""
    for uid in uids:
        victim = next((p for p in ni.pods if p.uid == uid), None)
        if victim is None:
            return None
        ni.remove_pod(victim)
        st = fw.run_pre_filter_remove_pod(state, pod, victim, ni)
        if not st.is_success():
            return st
    return fw.run_filter_plugins(state, pod, ni)


# ---- HTTP ------------------------------------------------------------------------------------


def _error(status: int, message: str) -> web.Response:
    return web.Response(
        status=status, body=wire.encode(wire.ExtenderBindingResult(message)), content_type=_JSON
    )


class _Budget:
    """Bytes of request bodies the process holds at once, counted as they arrive (a slow
    sender holds only what it has sent, so a few cannot lock the others out)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0


async def _read_body(request: web.Request, limit: int, budget: _Budget, held: list[int]) -> bytes:
    """The body, counted in ``budget`` (and in ``held``, for the caller to give back)."""
    if request.content_length is not None and request.content_length > limit:
        raise TooLarge(
            f"request body of {request.content_length} bytes is over the limit of {limit} bytes"
        )
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.content.iter_chunked(1 << 16):
        total += len(chunk)
        if total > limit:
            raise TooLarge(f"request body is over the limit of {limit} bytes")
        if budget.used + len(chunk) > budget.limit:
            raise Busy(
                f"the extender holds {budget.used} bytes of request bodies, near its limit "
                f"of {budget.limit}: retry"
            )
        budget.used += len(chunk)
        held[0] += len(chunk)
        chunks.append(chunk)
    return b"".join(chunks)


Handler = Callable[[Any], Awaitable[Any]]


def _authenticator(server: ExtenderServer, access: Access) -> Any:
    """Middleware: 401 without the client certificate ``access`` requires, 403 for a
    protected verb ``access`` does not open to unauthenticated callers."""

    def refuse(request: web.Request, status: int, message: str) -> web.Response:
        verb = request.path.strip("/")
        if request.method == "POST" and f"/{verb}" in _VERBS:
            server.requests.labels(verb, str(status)).inc()
        return _error(status, message)

    @web.middleware
    async def authenticate(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if access.client_certs:
            cert = request.transport.get_extra_info("peercert") if request.transport else None
            if not cert:
                return refuse(
                    request,
                    401,
                    "Unauthorized: a client certificate signed by the extender's "
                    "--client-ca-file CA is required",
                )
        elif request.path in PROTECTED_PATHS and not access.open_verbs:
            return refuse(
                request,
                403,
                f"Forbidden: {request.path} needs client-certificate authentication: this "
                "extender listens beyond loopback without --client-ca-file",
            )
        return await handler(request)

    return authenticate


_VERBS = frozenset({"/filter", "/prioritize", "/preempt", "/bind"})


@web.middleware
async def _json_http_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """aiohttp's own 4xx (an unknown path, GET /filter) as ``{"Error": ...}``, not text."""
    try:
        return await handler(request)
    except web.HTTPException as e:
        if e.status < 400:
            raise
        resp = _error(e.status, http_error_message(e, request))
        if "Allow" in e.headers:
            resp.headers["Allow"] = e.headers["Allow"]
        return resp


#: After a body this large, what the request left behind is dropped (``forget``) and the
#: freed memory given back to the OS: hundreds of MB, against 2 ms of work.
_LARGE_BODY_BYTES = 4 << 20


def _release_memory() -> None:
    """Return the heap's free pages to the OS (glibc's ``malloc_trim``): the objects of a
    large request are freed, but glibc keeps their pages (a 41 MB NodeList left 1.5 GB
    resident). Elsewhere a no-op."""
    gc.collect()
    if _libc is not None:
        _libc.malloc_trim(0)


def _load_libc() -> Any:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


_libc = _load_libc()


def make_app(server: ExtenderServer, access: Access | None = None) -> web.Application:
    """The aiohttp application: the four verbs plus /healthz, /readyz and /metrics, under
    ``access`` (default: open, as on loopback)."""
    middlewares = [_json_http_errors]
    if access is not None:
        middlewares.append(_authenticator(server, access))
    app = web.Application(client_max_size=server.max_body_bytes, middlewares=middlewares)

    # What the process holds is what one request may hold (``ExtenderServer.bounds``):
    # request bodies up to twice the body limit at once (503 beyond: a crowd of 60 MiB
    # uploads held 60 MiB each), and one request at a time decodes, runs and encodes (a
    # second 60 MiB NodeList waits as bytes rather than doubling the decoded objects).
    budget = _Budget(2 * server.max_body_bytes + BIND_MAX_BODY_BYTES)
    working = anyio.Lock()

    def endpoint(verb: str, decoder: Callable[[bytes, wire.Bounds], Any], call: Handler) -> Any:
        async def handle(request: web.Request) -> web.Response:
            start = time.perf_counter()
            resp = await _answer(request, verb, decoder, call)
            server.requests.labels(verb, str(resp.status)).inc()
            server.duration.labels(verb).observe(time.perf_counter() - start)
            return resp

        return handle

    async def _answer(
        request: web.Request,
        verb: str,
        decoder: Callable[[bytes, wire.Bounds], Any],
        call: Handler,
    ) -> web.Response:
        held = [0]  # bytes of the budget this request's body holds
        try:
            return await _answer_holding(request, verb, decoder, call, held)
        finally:
            budget.used -= held[0]

    async def _answer_holding(
        request: web.Request,
        verb: str,
        decoder: Callable[[bytes, wire.Bounds], Any],
        call: Handler,
        held: list[int],
    ) -> web.Response:
        try:
            limit = (
                server.max_body_bytes
                if verb != "bind"
                else min(server.max_body_bytes, BIND_MAX_BODY_BYTES)
            )

            def decode_body(body: bytes, bounds: wire.Bounds) -> Any:
                try:
                    args = decoder(body, bounds)
                except wire.TooLarge as e:
                    raise TooLarge(str(e)) from None
                except wire.WireError as e:
                    raise BadRequest(str(e)) from None
                if verb in ("filter", "prioritize"):
                    return server.decode_request(args)
                return args

            async def process(body: bytes) -> bytes:
                # Decoding and encoding are pure and may take seconds for a large
                # NodeList: a worker thread does them, so health checks go on meanwhile.
                # The verbs run plugin code on the loop, under the plugin deadline.
                args = await anyio.to_thread.run_sync(decode_body, body, server.bounds())
                try:
                    out = await call(args)
                finally:
                    if len(body) >= _LARGE_BODY_BYTES:
                        server.forget()
                return await anyio.to_thread.run_sync(wire.encode, out)

            body = await _read_body(request, limit, budget, held)
            if verb == "bind":  # small, and waits on the API server: not in line
                data = await process(body)
            else:
                async with working:
                    data = await process(body)
                    if len(body) >= _LARGE_BODY_BYTES:
                        await anyio.to_thread.run_sync(_release_memory)
            del body
        except BadRequest as e:
            return _error(400, str(e))
        except TooLarge as e:
            return _error(413, str(e))
        except (NotReady, Busy) as e:
            return _error(503, str(e))
        except CallFailed as e:
            if verb in ("filter", "bind"):
                err: Any = (
                    wire.ExtenderFilterResult(error=str(e))
                    if verb == "filter"
                    else wire.ExtenderBindingResult(str(e))
                )
                return web.Response(body=wire.encode(err), content_type=_JSON)
            return _error(500, str(e))
        except InvalidObjectError as e:
            return _error(400, str(e))
        except web.RequestPayloadError as e:
            # A corrupt gzip stream, a chunked body cut short: the rest of the stream is
            # unusable, so the connection closes (and says so) after the answer.
            return await answer_and_close(request, _error(400, payload_error(e)))
        except ConnectionResetError:
            # The client hung up mid-body: nobody is left to answer. Counted as 499 (the
            # "client closed request" status of proxies), not as a server error.
            log.debug("client closed the connection mid-request", verb=verb)
            return web.Response(status=CLIENT_CLOSED_REQUEST)
        except Exception as e:
            log.exception("extender request failed", verb=verb)
            return _error(500, f"internal error: {type(e).__name__}: {e}")
        return web.Response(body=data, content_type=_JSON)

    def bounded(verb: Callable[[Any], Any]) -> Handler:
        """A synchronous verb under the plugin deadline: a hung plugin fails the request."""

        async def call(a: Any) -> Any:
            try:
                return server.deadline.call(verb, a)
            except PluginTimeout as e:
                raise CallFailed(str(e)) from None

        return call

    do_filter = bounded(server.filter)
    do_prioritize = bounded(server.prioritize)
    do_preempt = bounded(server.preempt)

    async def do_bind(a: wire.ExtenderBindingArgs) -> Any:
        return await server.bind(a)

    def decode_bind(body: bytes, _: wire.Bounds) -> wire.ExtenderBindingArgs:
        return wire.decode_binding_args(wire.parse_json(body))  # at most 64 KiB

    args = wire.decode_extender_args_body
    app.router.add_post("/filter", endpoint("filter", args, do_filter))
    app.router.add_post("/prioritize", endpoint("prioritize", args, do_prioritize))
    app.router.add_post(
        "/preempt", endpoint("preempt", wire.decode_preemption_args_body, do_preempt)
    )
    app.router.add_post("/bind", endpoint("bind", decode_bind, do_bind))
    _add_health_routes(app, server)
    return app


def make_health_app(server: ExtenderServer) -> web.Application:
    """/healthz, /readyz and /metrics alone, for a plain-HTTP port beside an mTLS one
    (kubelet probes and Prometheus carry no client certificate)."""
    app = web.Application(middlewares=[_json_http_errors])
    _add_health_routes(app, server)
    return app


def _add_health_routes(app: web.Application, server: ExtenderServer) -> None:
    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(request: web.Request) -> web.Response:
        if server.synced:
            return web.Response(text="ok")
        return web.Response(status=503, text="informer caches not synced")

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(server.metrics),
            headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"},
        )

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)


def verifies_clients(ssl_context: ssl.SSLContext | None) -> bool:
    return ssl_context is not None and ssl_context.verify_mode != ssl.CERT_NONE


async def start(
    server: ExtenderServer,
    host: str = "127.0.0.1",
    port: int = 0,
    ssl_context: ssl.SSLContext | None = None,
    *,
    health_only: bool = False,
    access: Access | None = None,
    limits: Limits | None = None,
) -> tuple[web.AppRunner, int]:
    """Serve ``server`` in the running loop; the runner (``await runner.cleanup()`` to stop)
    and the bound port. ``access`` defaults to the rules for ``host`` and ``ssl_context``
    (``access_for``)."""
    if health_only:
        app = make_health_app(server)
    else:
        if access is None:
            access = access_for(host, client_certs=verifies_clients(ssl_context))
        app = make_app(server, access)
    return await start_app(app, host, port, ssl_context=ssl_context, limits=limits, error=_error)


async def serve(
    config: KubeSchedulerConfiguration,
    registry: Registry,
    *,
    profile: str | None = None,
    host: str = DEFAULT_BIND_ADDRESS,
    port: int = DEFAULT_PORT,
    ssl_context: ssl.SSLContext | None = None,
    kubeconfig: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    health_port: int | None = None,
    plugin_timeout: float | None = DEFAULT_PLUGIN_TIMEOUT,
    insecure_allow_unauthenticated: bool = False,
    limits: Limits | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run the extender until cancelled; ``task_status`` receives the bound port.

    ``health_port``: also serve /healthz, /readyz and /metrics there over plain HTTP.
    ``insecure_allow_unauthenticated``: the verbs answer anyone even beyond loopback
    without client certificates (logged at start).
    """
    runners: list[web.AppRunner] = []
    access = access_for(
        host,
        client_certs=verifies_clients(ssl_context),
        insecure=insecure_allow_unauthenticated,
    )

    async def listen(server: ExtenderServer) -> int:
        runner, bound = await start(server, host, port, ssl_context, access=access, limits=limits)
        runners.append(runner)
        if health_port is not None:
            runners.append(
                (await start(server, host, health_port, health_only=True, limits=limits))[0]
            )
        log.info(
            "ksched extender serving",
            profile=server.profile,
            address=host,
            port=bound,
            stateful=server.cache is not None,
            tls=ssl_context is not None,
            client_certificates=access.client_certs,
        )
        _warn_access(host, access)
        return bound

    try:
        options: dict[str, Any] = {
            "profile": profile,
            "max_body_bytes": max_body_bytes,
            "plugin_timeout": plugin_timeout,
            "max_nodes": max_nodes,
        }
        if kubeconfig is None:
            server = ExtenderServer(config, registry, **options)
            task_status.started(await listen(server))
            await anyio.sleep_forever()
        else:
            await _serve_stateful(config, registry, options, kubeconfig, listen, task_status)
    finally:
        with anyio.CancelScope(shield=True):
            for r in runners:
                await r.cleanup()


def _warn_access(host: str, access: Access) -> None:
    """One warning line when the verbs are open beyond loopback, or refused for want of
    client certificates."""
    if access.client_certs or is_loopback(host):
        return
    if access.open_verbs:
        log.warning(
            "INSECURE: /filter, /prioritize, /preempt and /bind answer unauthenticated "
            "requests on a non-loopback address (--insecure-allow-unauthenticated): anyone "
            "who can reach the port can bind any pod to any node",
            address=host,
        )
    else:
        log.warning(
            "/filter, /prioritize, /preempt and /bind are refused (403): the extender "
            "listens beyond loopback without client-certificate authentication "
            "(--client-ca-file); /healthz, /readyz and /metrics answer",
            address=host,
        )


async def _serve_stateful(
    config: KubeSchedulerConfiguration,
    registry: Registry,
    options: dict[str, Any],
    kubeconfig: str,
    listen: Callable[[ExtenderServer], Awaitable[int]],
    task_status: anyio.abc.TaskStatus[int],
) -> None:
    from ..cluster.binder import APIClusterClient
    from ..cluster.client import APIClient
    from ..cluster.wiring import connect_scheduler

    cc = config.client_connection
    async with await APIClient.from_kubeconfig(kubeconfig, qps=cc.qps, burst=cc.burst) as api:
        server = ExtenderServer(
            config, registry, cluster=APIClusterClient(api), stateful=True, **options
        )
        assert server.feeder is not None
        informers = connect_scheduler(server.feeder, api)
        async with anyio.create_task_group() as tg:
            tg.start_soon(informers.run)
            task_status.started(await listen(server))
            await informers.wait_synced()
            server.synced = True
            log.info("extender informer caches synced")
