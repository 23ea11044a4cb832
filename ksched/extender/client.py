"""HTTP extenders called the way kube-scheduler calls them (``pkg/scheduler/extender.go``).

Semantics kept from upstream:

* an extender is consulted only for pods it is interested in: any container or init
  container requesting or limiting one of its ``managedResources`` (none listed: all pods);
* Filter runs after the in-tree filters on the feasible nodes, extenders one after another,
  each seeing what the previous one left; ``FailedAndUnresolvableNodes`` win over
  ``FailedNodes``; both join the diagnosis (and so the FitError text), and a shrunk node
  set marks the pod rejected by ``Extender``, which any cluster event may requeue;
* Prioritize calls run concurrently; a score counts ``score * weight * (100 / 10)``; a
  failing prioritizer is logged and contributes nothing, ignorable or not (upstream too);
* the first interested extender with a ``bindVerb`` binds instead of the Bind plugins;
* an ignorable extender that fails Filter, Bind or ProcessPreemption is skipped (a log
  line and ``ksched_extender_requests_total{result="ignored"}``); a non-ignorable one
  fails the attempt with an Error status, which requeues the pod with backoff;
* ignorable extenders run after all the others, and managed resources marked
  ``ignoredByScheduler`` become NodeResourcesFit's ``ignoredResources``.

``httpTimeout`` keeps upstream's effective default of 5 s (``DefaultExtenderTimeout``): a
config written for kube-scheduler behaves the same under ksched, and a longer wait would
stall the whole scheduling loop behind one slow extender.

TLS follows ``makeTransport``: ``enableHTTPS`` without a CA means "don't verify";
``*Data`` wins over ``*File``; the scheme comes from ``urlPrefix``.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import anyio
import msgspec
import numpy as np
import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram

from ..api.objects import Node
from ..config.types import Extender, KubeSchedulerConfiguration
from ..framework.diagnosis import Diagnosis
from ..framework.interface import MAX_NODE_SCORE, Victims
from ..framework.snapshot import Snapshot
from ..framework.status import SUCCESS, Code, Status
from ..framework.types import NodeInfo, PodInfo
from ..util.errors import KschedError
from . import wire
from .wire import MAX_EXTENDER_PRIORITY

__all__ = [
    "DEFAULT_EXTENDER_TIMEOUT",
    "EXTENDER_NAME",
    "ExtenderConfigError",
    "ExtenderError",
    "ExtenderSet",
    "FilterResult",
    "HTTPExtender",
    "NodeEncoder",
    "PreemptionVictims",
    "apply_ignored_resources",
    "ssl_context_for",
]

log = structlog.get_logger("ksched.extender")

# framework.ExtenderName: the "plugin" a pod is unschedulable by when extenders filtered nodes.
EXTENDER_NAME = "Extender"
DEFAULT_EXTENDER_TIMEOUT = 5.0
_SCORE_SCALE = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
_INT64_MAX = 2**63 - 1
NODE_RESOURCES_FIT = "NodeResourcesFit"


class ExtenderConfigError(KschedError, ValueError):
    """An extender whose TLS material cannot be loaded."""


class ExtenderError(KschedError):
    """A failed extender call (transport, HTTP status, undecodable answer, or its Error)."""


@dataclass(slots=True)
class FilterResult:
    nodes: list[NodeInfo]
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)


# ``extenderv1.Victims`` with the pods as ksched PodInfos (the framework's type).
PreemptionVictims = Victims


# ---- object JSON ----------------------------------------------------------------------------


def pod_json(pod: PodInfo) -> bytes:
    """The pod as sent: its API JSON when kept (pending pods), else the decoded fields."""
    raw = pod.raw_json()
    return raw if raw is not None else msgspec.json.encode(pod.pod)


class NodeEncoder:
    """Node JSON for NodeList payloads, encoded once per node object, not once per call.

    ksched keeps only the node fields scheduling reads; a raw object registered with
    ``set_raw`` (simulate has the manifests) is sent instead while that node is current.
    """

    def __init__(self) -> None:
        self._cache: dict[str, tuple[Node, bytes]] = {}
        self._raw: dict[str, tuple[Node, Any]] = {}

    def set_raw(self, node: Node, raw: Any) -> None:
        self._raw[node.metadata.name] = (node, raw)

    def encode(self, node: Node) -> bytes:
        name = node.metadata.name
        hit = self._cache.get(name)
        if hit is not None and hit[0] is node:
            return hit[1]
        raw = self._raw.get(name)
        data = msgspec.json.encode(raw[1] if raw is not None and raw[0] is node else node)
        self._cache[name] = (node, data)
        return data

    def __len__(self) -> int:
        return len(self._cache)

    def forget_missing(self, names: Collection[str]) -> None:
        """Drop the JSON of nodes not in ``names`` (the cluster's nodes now): a deleted
        node's bytes would otherwise stay forever, a slow leak where node names churn."""
        for name in [n for n in self._cache if n not in names]:
            del self._cache[name]

    def forget_deleted(self, snap: Snapshot) -> None:
        """``forget_missing`` against the snapshot, when the cache holds more names than it:
        each encoded name is then a current node or a deleted one, so a cache larger than
        the cluster has a deleted one (and stale entries stay fewer than the nodes)."""
        if len(self._cache) > len(snap.index):
            self.forget_missing(snap.index.keys())


# ---- TLS -------------------------------------------------------------------------------------


def ssl_context_for(cfg: Extender) -> ssl.SSLContext | None:
    """``makeTransport`` + client-go's ``TLSConfigFor``; None means the default verification."""
    t = cfg.tls_config
    insecure = bool(t and t.insecure)
    has_ca = bool(t and (t.ca_data or t.ca_file))
    if cfg.enable_https and not has_ca:
        insecure = True
    has_cert = bool(t and (t.cert_data or t.cert_file))
    has_key = bool(t and (t.key_data or t.key_file))
    if not (insecure or has_ca or has_cert or has_key or (t and t.server_name)):
        return None
    if insecure and has_ca:
        raise ExtenderConfigError(
            f"extender {cfg.url_prefix}: specifying a root certificates file with the insecure "
            "flag is not allowed"
        )
    if has_cert != has_key:
        raise ExtenderConfigError(
            f"extender {cfg.url_prefix}: tlsConfig needs both a client certificate and its key"
        )
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    try:
        if t is not None and has_ca:
            if t.ca_data:
                ctx.load_verify_locations(cadata=t.ca_data.decode("ascii", "replace"))
            else:
                ctx.load_verify_locations(cafile=t.ca_file)
        if t is not None and has_cert:
            _load_cert_chain(ctx, t.cert_data, t.cert_file, t.key_data, t.key_file)
    except (OSError, ssl.SSLError, ValueError) as e:
        raise ExtenderConfigError(f"extender {cfg.url_prefix}: tlsConfig: {e}") from None
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _load_cert_chain(
    ctx: ssl.SSLContext, cert_data: bytes, cert_file: str, key_data: bytes, key_file: str
) -> None:
    # The ssl module loads client certificates from files only; PEM data goes through a
    # private temporary directory that is removed right after.
    if not cert_data and not key_data:
        ctx.load_cert_chain(cert_file, key_file)
        return
    with tempfile.TemporaryDirectory(prefix="ksched-ext-") as d:
        cert = cert_file
        key = key_file
        if cert_data:
            cert = os.path.join(d, "cert.pem")
            _write_private(cert, cert_data)
        if key_data:
            key = os.path.join(d, "key.pem")
            _write_private(key, key_data)
        ctx.load_cert_chain(cert, key)


def _write_private(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


# ---- one extender ----------------------------------------------------------------------------

RequestObserver = Callable[[str, str, str, float], None]


class HTTPExtender:
    """One configured extender (upstream ``HTTPExtender``), over a lazily opened aiohttp session."""

    def __init__(
        self,
        cfg: Extender,
        *,
        nodes: NodeEncoder | None = None,
        observe: RequestObserver | None = None,
    ) -> None:
        self.url_prefix = cfg.url_prefix
        self.filter_verb = cfg.filter_verb
        self.prioritize_verb = cfg.prioritize_verb
        self.preempt_verb = cfg.preempt_verb
        self.bind_verb = cfg.bind_verb
        self.weight = cfg.weight
        self.timeout = cfg.http_timeout or DEFAULT_EXTENDER_TIMEOUT
        self.node_cache_capable = cfg.node_cache_capable
        self.managed_resources = frozenset(r.name for r in cfg.managed_resources)
        self.ignorable = cfg.ignorable
        self.ssl = ssl_context_for(cfg)
        t = cfg.tls_config
        self.server_name = t.server_name if t is not None and t.server_name else None
        self.nodes = nodes if nodes is not None else NodeEncoder()
        self.observe = observe
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def name(self) -> str:
        return self.url_prefix

    def __repr__(self) -> str:
        return f"HTTPExtender({self.url_prefix})"

    @property
    def is_prioritizer(self) -> bool:
        return bool(self.prioritize_verb)

    @property
    def is_binder(self) -> bool:
        return bool(self.bind_verb)

    @property
    def supports_preemption(self) -> bool:
        return bool(self.preempt_verb)

    def is_interested(self, pod: PodInfo) -> bool:
        """``IsInterested``: some container asks for (requests or limits) a managed resource."""
        managed = self.managed_resources
        if not managed:
            return True
        spec = pod.pod.spec
        for c in (*spec.containers, *spec.init_containers):
            r = c.resources
            if any(k in managed for k in r.requests) or any(k in managed for k in r.limits):
                return True
        return False

    # -- transport -----------------------------------------------------------------------------

    def _get_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            # A session belongs to its event loop; simulate runs each simulation in a new one.
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                headers={"Content-Type": "application/json"},
            )
            self._loop = loop
        return self._session

    async def aclose(self) -> None:
        s, self._session = self._session, None
        if s is not None and not s.closed and self._loop is asyncio.get_running_loop():
            await s.close()

    async def send(self, verb: str, body: bytes) -> Any:
        """POST ``body`` to ``urlPrefix/verb``; the decoded JSON answer, or ExtenderError."""
        url = self.url_prefix.rstrip("/") + "/" + verb
        start = time.perf_counter()
        result = "error"
        try:
            data = await self._post(url, verb, body)
            try:
                out = msgspec.json.decode(data)
            except msgspec.DecodeError as e:
                raise ExtenderError(
                    f"decoding the {verb} answer of extender at URL {url}: {e}"
                ) from None
            result = "success"
            return out
        finally:
            if self.observe is not None:
                self.observe(self.url_prefix, verb, result, time.perf_counter() - start)

    async def _post(self, url: str, verb: str, body: bytes) -> bytes:
        session = self._get_session()
        kw: dict[str, Any] = {}
        if url.startswith("https:"):
            if self.ssl is not None:
                kw["ssl"] = self.ssl
            if self.server_name:
                kw["server_hostname"] = self.server_name
        try:
            async with session.post(url, data=body, **kw) as resp:
                if resp.status != 200:
                    raise ExtenderError(
                        f"failed {verb} with extender at URL {url}, code {resp.status}"
                    )
                return await resp.read()
        except TimeoutError:
            raise ExtenderError(
                f'Post "{url}": context deadline exceeded (Client.Timeout '
                "exceeded while awaiting headers)"
            ) from None
        except aiohttp.ClientError as e:
            raise ExtenderError(f'Post "{url}": {e or type(e).__name__}') from None

    def _args(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> bytes:
        names = [ni.name for ni in nodes]
        if self.node_cache_capable:
            return wire.encode_args_raw(pod_json(pod), None, names)
        enc = self.nodes.encode
        return wire.encode_args_raw(
            pod_json(pod), [enc(ni.node) for ni in nodes if ni.node is not None], None
        )

    # -- verbs ---------------------------------------------------------------------------------

    async def filter(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> FilterResult:
        """``Filter``: the nodes the extender keeps (a subset of ``nodes``) and its failures."""
        if not self.filter_verb:
            return FilterResult(list(nodes))
        raw = await self.send(self.filter_verb, self._args(pod, nodes))
        try:
            res = wire.decode_filter_result(raw)
        except wire.WireError as e:
            raise ExtenderError(f"extender {self.url_prefix}: {self.filter_verb}: {e}") from None
        if res.error:
            raise ExtenderError(res.error)
        by_name = {ni.name: ni for ni in nodes}
        if self.node_cache_capable and res.node_names is not None:
            kept = res.node_names
        elif res.nodes is not None:
            kept = [wire.object_meta(n)[0] for n in res.nodes]
        else:
            kept = []  # upstream: neither list means no node passed
        out: list[NodeInfo] = []
        for name in kept:
            ni = by_name.get(name)
            if ni is None:
                raise ExtenderError(
                    f"extender {self.url_prefix!r} claims a filtered node "
                    f"{name!r} which is not found in the input node list"
                )
            out.append(ni)
        return FilterResult(out, res.failed_nodes or {}, res.failed_and_unresolvable_nodes or {})

    async def prioritize(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[wire.HostPriority]:
        """``Prioritize``: the extender's 0..10 scores (the caller applies the weight)."""
        if not self.prioritize_verb:
            return [wire.HostPriority(ni.name, 0) for ni in nodes]
        raw = await self.send(self.prioritize_verb, self._args(pod, nodes))
        try:
            return wire.decode_host_priority_list(raw)
        except wire.WireError as e:
            raise ExtenderError(
                f"extender {self.url_prefix}: {self.prioritize_verb}: {e}"
            ) from None

    async def bind(self, pod: PodInfo, node: str) -> None:
        """``Bind``: the extender posts the Binding; its non-empty Error is a failure."""
        if not self.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        args = wire.ExtenderBindingArgs(pod.name, pod.namespace, pod.uid, node)
        raw = await self.send(self.bind_verb, wire.encode(args))
        try:
            res = wire.decode_binding_result(raw)
        except wire.WireError as e:
            raise ExtenderError(f"extender {self.url_prefix}: {self.bind_verb}: {e}") from None
        if res.error:
            raise ExtenderError(res.error)

    async def process_preemption(
        self,
        pod: PodInfo,
        node_to_victims: Mapping[str, Victims],
        snapshot: Snapshot,
    ) -> dict[str, Victims]:
        """``ProcessPreemption``: the candidates (and victims) the extender agrees with.

        A nodeCacheCapable extender gets victims as UIDs, others the full pods; the answer
        always names victims by UID, resolved against the pods on that node in ``snapshot``.
        """
        if not self.preempt_verb:
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.url_prefix} "
                "but run into ProcessPreemption"
            )
        pod_obj = msgspec.json.decode(pod_json(pod))
        if self.node_cache_capable:
            args = wire.ExtenderPreemptionArgs(
                pod=pod_obj,
                node_name_to_meta_victims={
                    n: wire.MetaVictims([wire.MetaPod(p.uid) for p in v.pods], v.num_pdb_violations)
                    for n, v in node_to_victims.items()
                },
            )
        else:
            args = wire.ExtenderPreemptionArgs(
                pod=pod_obj,
                node_name_to_victims={
                    n: wire.Victims(
                        [msgspec.json.decode(pod_json(p)) for p in v.pods], v.num_pdb_violations
                    )
                    for n, v in node_to_victims.items()
                },
            )
        raw = await self.send(self.preempt_verb, wire.encode(args))
        try:
            res = wire.decode_preemption_result(raw)
        except wire.WireError as e:
            raise ExtenderError(f"extender {self.url_prefix}: {self.preempt_verb}: {e}") from None
        out: dict[str, Victims] = {}
        for node, mv in (res.node_name_to_meta_victims or {}).items():
            ni = snapshot.get(node)
            if ni is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node}"')
            victims = Victims([], mv.num_pdb_violations if mv is not None else 0)
            for mp in (mv.pods or []) if mv is not None else []:
                uid = mp.uid if mp is not None else ""
                found = next((p for p in ni.pods if p.uid == uid), None)
                if found is None:
                    raise ExtenderError(
                        f"extender: {self.url_prefix} claims to preempt pod (UID: {uid}) on "
                        f"node: {node}, but the pod is not found on that node"
                    )
                victims.pods.append(found)
            out[node] = victims
        return out


# ---- metrics ---------------------------------------------------------------------------------


class ExtenderMetrics:
    """Extender calls by result; registered into a scheduler's registry once it has one."""

    def __init__(self) -> None:
        self.requests = Counter(
            "ksched_extender_requests",
            "Extender HTTP calls by extender, verb and result (success, error, or ignored: "
            "an ignorable extender's error that scheduling skipped).",
            ["extender", "verb", "result"],
            registry=None,
        )
        self.duration = Histogram(
            "ksched_extender_request_duration_seconds",
            "Extender HTTP call latency in seconds.",
            ["extender", "verb"],
            registry=None,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self._registries: list[CollectorRegistry] = []

    def register(self, registry: CollectorRegistry) -> None:
        if any(r is registry for r in self._registries):
            return
        registry.register(self.requests)
        registry.register(self.duration)
        self._registries.append(registry)

    def observe(self, extender: str, verb: str, result: str, seconds: float) -> None:
        self.requests.labels(extender, verb, result).inc()
        self.duration.labels(extender, verb).observe(seconds)

    def ignored(self, extender: str, verb: str) -> None:
        self.requests.labels(extender, verb, "ignored").inc()


# ---- all of them -----------------------------------------------------------------------------


class ExtenderSet:
    """The configured extenders, as the scheduling and binding cycles use them."""

    def __init__(
        self,
        extenders: Sequence[HTTPExtender],
        *,
        nodes: NodeEncoder | None = None,
        metrics: ExtenderMetrics | None = None,
    ) -> None:
        # Ignorable extenders go last (upstream buildExtenders).
        self.extenders = [e for e in extenders if not e.ignorable] + [
            e for e in extenders if e.ignorable
        ]
        self.nodes = nodes if nodes is not None else NodeEncoder()
        self.metrics = metrics if metrics is not None else ExtenderMetrics()
        for e in self.extenders:
            e.nodes = self.nodes
            e.observe = self.metrics.observe
        # Awaited after an extender bound a pod (simulate applies the binding there).
        self.on_bound: Callable[[PodInfo, str], Awaitable[None]] | None = None

    @classmethod
    def from_config(cls, configs: Sequence[Extender]) -> ExtenderSet:
        """Clients for ``config.extenders``; ExtenderConfigError for unusable TLS material."""
        return cls([HTTPExtender(c) for c in configs])

    def __len__(self) -> int:
        return len(self.extenders)

    def interested(self, pod: PodInfo) -> bool:
        return any(e.is_interested(pod) for e in self.extenders)

    def preempts_for(self, pod: PodInfo) -> bool:
        """Whether ``process_preemption`` would call any extender for ``pod``."""
        return any(e.supports_preemption and e.is_interested(pod) for e in self.extenders)

    def register_metrics(self, registry: CollectorRegistry | None) -> None:
        if registry is not None:
            self.metrics.register(registry)

    def register_requeue(self, queue: Any) -> None:
        """Upstream's ``defaultEnqueueExtension`` for ``Extender``: extenders have no queueing
        hints, so any cluster event may help a pod they rejected.

        The queue builds its registrations from plugins only; this adds the wildcard one.
        """
        queue.register_wildcard(EXTENDER_NAME)

    def _skip(self, e: HTTPExtender, verb: str, pod: PodInfo, err: Exception) -> None:
        log.warning(
            "skipping extender as it returned error and has ignorable flag set",
            extender=e.name,
            verb=verb,
            pod=pod.key,
            error=str(err),
        )
        self.metrics.ignored(e.name, verb)

    async def filter(
        self,
        pod: PodInfo,
        snap: Snapshot,
        rows: np.ndarray[Any, np.dtype[np.intp]],
        diagnosis: Diagnosis,
    ) -> tuple[np.ndarray[Any, np.dtype[np.intp]], Status]:
        """``findNodesThatPassExtenders`` over snapshot rows; failures go into ``diagnosis``."""
        try:
            return await self._filter(pod, snap, rows, diagnosis)
        finally:
            self.nodes.forget_deleted(snap)  # after encoding this call's nodes

    async def _filter(
        self,
        pod: PodInfo,
        snap: Snapshot,
        rows: np.ndarray[Any, np.dtype[np.intp]],
        diagnosis: Diagnosis,
    ) -> tuple[np.ndarray[Any, np.dtype[np.intp]], Status]:
        infos = snap.node_infos
        current = [infos[int(r)] for r in rows]
        before = len(current)
        statuses = diagnosis.node_to_status
        for e in self.extenders:
            if not current:
                break
            if not e.is_interested(pod):
                continue
            try:
                res = await e.filter(pod, current)
            except ExtenderError as err:
                if e.ignorable:
                    self._skip(e, e.filter_verb, pod, err)
                    continue
                return np.empty(0, dtype=np.intp), Status(Code.ERROR, str(err))
            for name, msg in res.failed_and_unresolvable.items():
                statuses.set(name, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg))
            for name, msg in res.failed.items():
                if name not in res.failed_and_unresolvable:
                    statuses.set(name, Status(Code.UNSCHEDULABLE, msg))
            current = res.nodes
        if len(current) != before:
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        out = np.array([snap.index[ni.name] for ni in current], dtype=np.intp)
        return out, SUCCESS

    async def prioritize(
        self,
        pod: PodInfo,
        snap: Snapshot,
        rows: np.ndarray[Any, np.dtype[np.intp]],
    ) -> np.ndarray[Any, np.dtype[np.int64]] | None:
        """The extenders' weighted scores per row (``score * weight * 10``), None if none ran."""
        exts = [e for e in self.extenders if e.is_prioritizer and e.is_interested(pod)]
        if not exts:
            return None
        infos = snap.node_infos
        nodes = [infos[int(r)] for r in rows]
        index = {ni.name: i for i, ni in enumerate(nodes)}
        sums = [0] * len(nodes)

        async def one(e: HTTPExtender) -> None:
            try:
                scores = await e.prioritize(pod, nodes)
            except ExtenderError as err:
                # Upstream ignores prioritize failures of any extender: others still score.
                log.info(
                    "extender prioritize failed; no score given by this extender",
                    extender=e.name,
                    pod=pod.key,
                    error=str(err),
                )
                self.metrics.ignored(e.name, e.prioritize_verb)
                return
            for hp in scores:
                i = index.get(hp.host)
                if i is not None:
                    sums[i] += hp.score * e.weight * _SCORE_SCALE

        if len(exts) == 1:
            await one(exts[0])
        else:
            async with anyio.create_task_group() as tg:
                for e in exts:
                    tg.start_soon(one, e)
        return np.array([max(-_INT64_MAX, min(_INT64_MAX, s)) for s in sums], dtype=np.int64)

    async def bind(self, pod: PodInfo, node: str) -> Status | None:
        """``extendersBinding``: a Status when an extender took the bind, None otherwise."""
        for e in self.extenders:
            if not e.is_binder or not e.is_interested(pod):
                continue
            try:
                await e.bind(pod, node)
            except ExtenderError as err:
                if e.ignorable:
                    self._skip(e, e.bind_verb, pod, err)
                    continue
                return Status(Code.ERROR, str(err))
            if self.on_bound is not None:
                try:
                    await self.on_bound(pod, node)
                except Exception as err:
                    st = Status(Code.ERROR, str(err))
                    st.cause = err
                    return st
            return SUCCESS
        return None

    async def process_preemption(
        self,
        pod: PodInfo,
        victims: Mapping[str, Victims],
        snapshot: Snapshot,
    ) -> tuple[dict[str, Victims], Status]:
        """``callExtenders`` of preemption: each interested preempting extender narrows the
        candidate nodes in turn; an Error status when a non-ignorable one fails."""
        current = dict(victims)
        for e in self.extenders:
            if not current:
                break
            if not e.supports_preemption or not e.is_interested(pod):
                continue
            try:
                got = await e.process_preemption(pod, current, snapshot)
            except ExtenderError as err:
                if e.ignorable:
                    self._skip(e, e.preempt_verb, pod, err)
                    continue
                return {}, Status(Code.ERROR, str(err))
            for node, v in list(got.items()):
                if not v.pods:
                    if e.ignorable:
                        del got[node]
                        continue
                    return {}, Status(
                        Code.ERROR, f'expected at least one victim pod on node "{node}"'
                    )
            current = got
        return current, SUCCESS

    async def aclose(self) -> None:
        for e in self.extenders:
            await e.aclose()


def apply_ignored_resources(config: KubeSchedulerConfiguration) -> list[str]:
    """Managed resources marked ``ignoredByScheduler`` become NodeResourcesFit's
    ``ignoredResources`` in every profile (upstream ``buildExtenders``: they replace the
    configured list). Returns the names."""
    names = [
        r.name for e in config.extenders for r in e.managed_resources if r.ignored_by_scheduler
    ]
    if names:
        for prof in config.profiles:
            for pc in prof.plugin_config:
                if pc.name == NODE_RESOURCES_FIT:
                    pc.args = {**(pc.args or {}), "ignoredResources": list(names)}
    return names
