"""``ksched bench --mode e2e``: the real daemon against an API server over HTTP.

The test API server (``python -m ksched.testing apiserver``) runs as its own process, so
it does not share the scheduler's CPU, as a real kube-apiserver would not. Per scheduler
measured, a fresh server gets the workload's nodes, running init pods (created with
``nodeName`` set) and the measured pending pods; then the scheduler starts, lists them
all, and the clock runs from informer sync until its pod informer has seen every measured
pod bound. That measures draining a backlog: the scheduler's own throughput, not the
rate at which a client can create pods.

``--baseline null`` runs, in the same invocation and on the same client stack (APIClient,
informers, ``APIClusterClient`` binder, same binding concurrency), a scheduler without
plugins that binds each pending pod to the next node round-robin. The ratio of the two
throughputs is what ksched's scheduling (queue, cache, snapshot, plugins, metrics, events)
costs over the bare minimum any scheduler pays for API I/O.

Client-side rate limiting (``clientConnection.qps``) is disabled for both: it would cap
both at the same rate and measure nothing.
"""

from __future__ import annotations

import contextlib
import copy
import os
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import anyio
import anyio.abc

from ..api.objects import Node
from ..framework.types import PodInfo
from .workloads import (
    WORKLOADS,
    Manifest,
    collection_path,
    group_report,
    groups_of,
)

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration
    from ..framework.registry import Registry

__all__ = ["NullScheduler", "NullWrites", "proc_cpu_seconds", "run_e2e_bench"]

CREATE_CONCURRENCY = 32


class _NullHandle:
    def __init__(self) -> None:
        self.listers: dict[str, Any] = {}


class _NullFramework:
    """Just enough of a Framework for ``connect_scheduler`` (it fills handle.listers)."""

    def __init__(self) -> None:
        self.handle = _NullHandle()


@dataclass(frozen=True)
class NullWrites:
    """The API writes a workload makes any scheduler do, which the null client makes too,
    still without deciding anything: the null client is then the API server's write path
    for that workload, the practical limit of a scheduler there.

    * ``victims``: before binding a pod with a priority above 0 (a preemptor), evict that
      many lower-priority pods bound to the node it picked as preemption must: each
      victim's DisruptionTarget condition (a status patch), then its deletion; and the
      preemptor's own status (PodScheduled=False with ``nominatedNodeName``), which the
      failed cycle writes; the preemptors are bound once every pending pod has been
      started (``run``);
    * ``claims``: before binding, the pod's nomination (``status.nominatedNodeName``: a
      scheduler announces the node when PreBind has work to do, NominatedNodeNameForExpectation,
      on by default in every release ksched implements), then allocate each of the pod's
      ResourceClaims to the next device of the picked node's pool (``instance-<n>`` from
      ``first_device`` on), as DynamicResources' PreBind does: the claim's finalizer, then
      its status (allocation and reservedFor) — two writes per claim.

    The default is bind-only: one Binding POST per pod.
    """

    victims: int = 0
    claims: bool = False
    driver: str = ""
    #: the claims' request names (one device each)
    requests: tuple[str, ...] = ()
    first_device: int = 0

    def describe(self) -> str:
        """What the null client writes per pod (the ``null_writes`` of the bench JSON)."""
        parts = []
        if self.victims:
            parts.append(
                f"per preemptor: its status (nomination) + {self.victims} victims' "
                "DisruptionTarget status + deletion"
            )
        if self.claims:
            parts.append(
                "per pod: its nomination + per claim: finalizer + status (allocation, reservedFor)"
            )
        return " + ".join([*parts, "binding"])


#: The message of a preemptor's PodScheduled=False condition from the null client (the
#: length of a scheduler's: "0/500 nodes are available: ...").
NULL_PREEMPTOR_MESSAGE = (
    "0/0 nodes are available: the null client evicts for this pod without deciding. "
    "preemption: victims are being deleted."
)

#: Seconds the null client waits for a preemptor's victims to be gone before binding it.
VICTIM_GONE_TIMEOUT = 60.0


class NullScheduler:
    """The baseline: informers in, binds out, no scheduling logic at all (plus the
    workload's ``NullWrites``)."""

    def __init__(
        self,
        client: Any,
        profiles: list[str],
        *,
        max_in_flight_bindings: int = 64,
        writes: NullWrites | None = None,
    ) -> None:
        from ..cluster import APIClusterClient

        self.frameworks: dict[str, Any] = {p: _NullFramework() for p in profiles}
        self.client = client
        self.binder = APIClusterClient(client)
        self.writes = writes or NullWrites()
        self.nodes: dict[str, None] = {}
        self._node_list: list[str] = []
        self.pending: deque[PodInfo] = deque()
        self._wakeup = anyio.Event()
        self._limit = anyio.Semaphore(max_in_flight_bindings)
        self._next = 0
        # bound pods by node (the victims' pool) and the next free device per node
        self._bound: dict[str, dict[str, PodInfo]] = {}
        self._devices: dict[str, int] = {}
        # preemptors whose victims were deleted, waiting for their Binding
        self._evicted: deque[tuple[PodInfo, str]] = deque()
        self._evicting = 0
        # victims deleted and not yet gone (their deletion not yet seen by the informer)
        self._going: dict[str, anyio.Event] = {}
        self.bound = 0
        self.deleted = 0
        self.errors = 0

    # -- informer handlers -------------------------------------------------------------------
    def on_node_add(self, node: Node) -> None:
        self.nodes[node.metadata.name] = None
        self._node_list = list(self.nodes)
        self._wakeup.set()

    def on_node_update(self, old: Node, new: Node) -> None:
        return None

    def on_node_delete(self, node: Node) -> None:
        self.nodes.pop(node.metadata.name, None)
        self._node_list = list(self.nodes)

    def on_pod_add(self, pod: PodInfo) -> None:
        if pod.node_name:
            if self.writes.victims:
                self._bound.setdefault(pod.node_name, {})[pod.key] = pod
        elif pod.pod.spec.scheduler_name in self.frameworks:
            self.pending.append(pod)
            self._wakeup.set()

    def on_pod_update(self, old: PodInfo, new: PodInfo) -> None:
        return None

    def on_pod_delete(self, pod: PodInfo) -> None:
        if pod.node_name:
            self._bound.get(pod.node_name, {}).pop(pod.key, None)
        gone = self._going.pop(pod.key, None)
        if gone is not None:
            gone.set()

    # -- loop --------------------------------------------------------------------------------
    async def run(self) -> None:
        """Pending pods round-robin over the nodes. A preemptor's evictions start as soon
        as it is popped, its Binding only once no pending pod is left to start and no
        eviction is in flight: as in a scheduler's queue, where a preemptor comes back
        (behind the pods never tried) after its victims are gone, the evictions come
        before the preemptors' binds."""
        async with anyio.create_task_group() as tg:
            while True:
                if self._node_list and self.pending:
                    pod = self.pending.popleft()
                    nodes = self._node_list
                    node = nodes[self._next % len(nodes)]
                    self._next += 1
                    evict = bool(self.writes.victims) and pod.priority > 0
                    await self._limit.acquire()
                    self._evicting += evict
                    tg.start_soon(self._evict_then_wait if evict else self._bind, pod, node)
                elif self._evicted and not self._evicting:
                    pod, node = self._evicted.popleft()
                    await self._limit.acquire()
                    tg.start_soon(self._bind, pod, node)
                else:
                    self._wakeup = anyio.Event()
                    await self._wakeup.wait()
                    continue
                await anyio.lowlevel.checkpoint()

    async def _bind(self, pod: PodInfo, node: str) -> None:
        try:
            if self.writes.claims:
                await self.binder.set_nominated_node(pod, node)
                await self._allocate(pod, node)
            await self.binder.bind(pod, node)
            self.bound += 1
        except Exception:
            self.errors += 1
        finally:
            self._limit.release()

    async def _evict_then_wait(self, pod: PodInfo, node: str) -> None:
        """A preemptor's evictions (holding a write slot), then, without the slot, the
        wait for its victims to be gone; then it waits (in ``_evicted``) for its Binding."""
        going: list[anyio.Event] = []
        try:
            try:
                going = await self._evict(pod, node)
            finally:
                self._limit.release()
            # A scheduler's cache frees a victim's room only once the victim is gone (a
            # bound pod stays Terminating until its kubelet, here the PodReaper, finishes
            # it), so the preemptor waits for that too; not for ever, should one go unseen.
            with anyio.move_on_after(VICTIM_GONE_TIMEOUT):
                for ev in going:
                    await ev.wait()
            self._evicted.append((pod, node))
        except Exception:
            self.errors += 1
        finally:
            self._evicting -= 1
            self._wakeup.set()

    async def _evict(self, pod: PodInfo, node: str) -> list[anyio.Event]:
        """Delete ``victims`` lower-priority pods bound to ``node`` (the first ones seen);
        returns the events set as each is seen gone."""
        on_node = self._bound.get(node, {})
        victims = [v for v in on_node.values() if v.priority < pod.priority]
        victims = victims[: self.writes.victims]
        going = []
        for v in victims:
            on_node.pop(v.key, None)
            going.append(self._going.setdefault(v.key, anyio.Event()))
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._nominate, pod, node)
            for v in victims:
                tg.start_soon(self._evict_one, v, pod)
        self.deleted += len(victims)
        return going

    async def _nominate(self, pod: PodInfo, node: str) -> None:
        """The preemptor's failed cycle's status: PodScheduled=False and the nomination,
        one strategic merge patch, as a scheduler's failure handler sends it."""
        from ..cluster.binder import condition_patch, patch_pod_status
        from ..cluster.status import scheduling_failed_condition

        cond = scheduling_failed_condition(
            pod.pod.metadata.generation, "Unschedulable", NULL_PREEMPTOR_MESSAGE
        )
        status = condition_patch(pod.pod.status, cond)
        status["nominatedNodeName"] = node
        path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
        await patch_pod_status(self.client, path, {"status": status})

    async def _evict_one(self, victim: PodInfo, preemptor: PodInfo) -> None:
        """A victim's DisruptionTarget condition, then its deletion (``PreemptPod``)."""
        from ..framework.preemption import preemption_condition

        cond = preemption_condition(victim, preemptor.pod.spec.scheduler_name)
        if cond is not None:
            await self.binder.set_pod_condition(victim, cond)
        await self.binder.delete_pod(victim)

    async def _allocate(self, pod: PodInfo, node: str) -> None:
        """Each claim of ``pod``: the finalizer, then the allocation of the node's next
        device and the reservation for the pod (merge patches, unconditional)."""
        from ..cluster.client import MERGE_PATCH

        w = self.writes
        for st in pod.pod.status.resource_claim_statuses:
            if not st.resource_claim_name:
                continue
            path = (
                f"/apis/resource.k8s.io/v1/namespaces/{pod.namespace}/resourceclaims/"
                f"{st.resource_claim_name}"
            )
            first = self._devices.get(node, w.first_device)
            self._devices[node] = first + len(w.requests)
            finalizer = {"metadata": {"finalizers": ["resource.kubernetes.io/delete-protection"]}}
            await self.client.request("PATCH", path, body=finalizer, content_type=MERGE_PATCH)
            results = [
                {"request": r, "driver": w.driver, "pool": node, "device": f"instance-{first + i}"}
                for i, r in enumerate(w.requests)
            ]
            selector = {"key": "metadata.name", "operator": "In", "values": [node]}
            status = {
                "allocation": {
                    "devices": {"results": results},
                    "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [selector]}]},
                },
                "reservedFor": [{"resource": "pods", "name": pod.name, "uid": pod.uid}],
            }
            await self.client.request(
                "PATCH", path + "/status", body={"status": status}, content_type=MERGE_PATCH
            )


# -- the API server process and the objects in it ------------------------------------------


@contextlib.asynccontextmanager
async def _apiserver_process() -> AsyncIterator[tuple[str, int]]:
    """A test API server in its own process; yields its URL and pid."""
    cmd = [
        sys.executable,
        "-m",
        "ksched.testing",
        "apiserver",
        "--port",
        "0",
        "--history",
        "200000",
        "--bookmark-interval",
        "0",
    ]
    proc = await anyio.open_process(cmd, stderr=None)
    try:
        assert proc.stdout is not None
        buf = b""
        with anyio.fail_after(60):
            while b"\n" not in buf:
                chunk = await proc.stdout.receive()
                buf += chunk
        yield buf.split(b"\n", 1)[0].decode().strip(), proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        with anyio.move_on_after(10) as scope:
            await proc.wait()
        if scope.cancelled_caught:
            proc.kill()
            await proc.wait()
        await proc.aclose()


async def _create_all(url: str, objects: list[Manifest]) -> None:
    """POST the objects in order (namespaces, nodes and the workload's other objects such
    as PodGroups, pods) from a few concurrent workers."""
    todo = iter(objects)
    conn = aiohttp.TCPConnector(limit=CREATE_CONCURRENCY)
    async with aiohttp.ClientSession(connector=conn) as session:

        async def worker() -> None:
            for obj in todo:
                kind = obj["kind"]
                async with session.post(url + collection_path(obj), json=obj) as resp:
                    if resp.status >= 300:
                        raise RuntimeError(
                            f"creating {kind} {obj['metadata']['name']}: "
                            f"{resp.status} {await resp.text()}"
                        )

        async with anyio.create_task_group() as tg:
            for _ in range(CREATE_CONCURRENCY):
                tg.start_soon(worker)


def _objects(
    workload: str, nodes: int, pods: int, init_pods: int
) -> tuple[list[Manifest], str, dict[str, str]]:
    """(everything to create, the measured namespace, measured pod -> its pod group)."""
    node_ms, init_ms, measured_ms = WORKLOADS[workload](nodes, pods, init_pods)
    namespaces = sorted(
        {m["metadata"].get("namespace", "default") for m in [*init_ms, *measured_ms]}
    )
    out: list[Manifest] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
        for n in namespaces
        if n != "default"
    ]
    out += node_ms
    names = [m["metadata"]["name"] for m in node_ms]
    for i, m in enumerate(init_ms):
        m = copy.deepcopy(m)
        m["metadata"].pop("uid", None)
        m["spec"]["nodeName"] = names[i % len(names)]
        out.append(m)
    for m in measured_ms:
        m = copy.deepcopy(m)
        m["metadata"].pop("uid", None)
        out.append(m)
    measured_ns = measured_ms[0]["metadata"].get("namespace", "default") if measured_ms else ""
    return out, measured_ns, groups_of(measured_ms)


class _BoundCounter:
    """Counts measured pods the pod informer has seen bound (the API's truth)."""

    def __init__(self, namespace: str, target: int) -> None:
        self.namespace = namespace
        self.target = target
        self.seen: set[str] = set()
        # pod name -> when it was seen bound
        self.bound_at: dict[str, float] = {}
        self.done = anyio.Event()
        self.last = 0.0

    def _see(self, pod: PodInfo) -> None:
        if pod.node_name and pod.namespace == self.namespace and pod.key not in self.seen:
            self.seen.add(pod.key)
            self.last = time.perf_counter()
            self.bound_at[pod.name] = self.last
            if len(self.seen) >= self.target:
                self.done.set()

    def on_add(self, pod: PodInfo) -> None:
        self._see(pod)

    def on_update(self, old: PodInfo, new: PodInfo) -> None:
        self._see(new)


async def _measure(
    name: str,
    url: str,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    namespace: str,
    pods: int,
    timeout: float,
    seed: int,
    progress: Callable[[str], None] | None,
    groups: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``groups``: measured pod -> its pod group, for the groups' times (all pending from
    informer sync on)."""
    from ..cluster import APIClient, connect_scheduler
    from ..daemon import SchedulerDaemon

    counter = _BoundCounter(namespace, pods)
    client = await APIClient.for_master(url, qps=0)
    t_start = time.perf_counter()
    try:
        if name in ("ksched", "noplugins"):
            daemon = SchedulerDaemon(
                config if name == "ksched" else _no_plugins(config),
                registry=registry,
                client=client,
                port=0,
                seed=seed,
                on_informers=lambda inf: inf.pods.add_handlers(counter.on_add, counter.on_update),
            )
            async with daemon:
                await daemon.wait_ready(timeout)
                t0, cpu0 = time.perf_counter(), time.process_time()
                await _wait(counter, timeout, progress, name)
                t1, cpu1 = counter.last, time.process_time()
        else:
            null = NullScheduler(client, [p.scheduler_name for p in config.profiles])
            informers = connect_scheduler(null, client)
            informers.pods.add_handlers(counter.on_add, counter.on_update)
            async with anyio.create_task_group() as tg:
                tg.start_soon(informers.run)
                await informers.wait_synced()
                t0, cpu0 = time.perf_counter(), time.process_time()
                tg.start_soon(null.run)
                await _wait(counter, timeout, progress, name)
                t1, cpu1 = counter.last, time.process_time()
                tg.cancel_scope.cancel()
    finally:
        await client.close()
    elapsed = max(t1 - t0, 1e-9) if counter.seen else 0.0
    scheduled = len(counter.seen)
    out: dict[str, Any] = {}
    if groups:
        created = dict.fromkeys(groups, t0)
        out["pod_groups"] = group_report(groups, created, counter.bound_at)
    return out | {
        "scheduler": name,
        "scheduled": scheduled,
        "sync_seconds": round(t0 - t_start, 3),
        "seconds": round(elapsed, 3),
        "pods_per_second": round(scheduled / elapsed, 1) if elapsed > 0 else 0.0,
        # the scheduler process's CPU per pod: robust to other load on the machine
        "cpu_ms_per_pod": round((cpu1 - cpu0) * 1000 / scheduled, 3) if scheduled else None,
    }


async def _wait(
    counter: _BoundCounter, timeout: float, progress: Callable[[str], None] | None, name: str
) -> None:
    with anyio.move_on_after(timeout):
        while not counter.done.is_set():
            with anyio.move_on_after(0.5):
                await counter.done.wait()
            if progress is not None:
                progress(f"{name}: {len(counter.seen)}/{counter.target} pods bound")


def run_e2e_bench(
    workload: str,
    *,
    nodes: int,
    pods: int,
    init_pods: int = 0,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    seed: int = 0,
    baseline: str | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Measure ksched (and the baseline) end to end; see the module docstring."""
    from ..logging import configure

    configure(None, 0, stream=sys.stderr)
    config.client_connection.qps = 0.0  # unlimited (see module docstring)
    objects, namespace, groups = _objects(workload, nodes, pods, init_pods)
    timeout = max(120.0, pods / 20)

    def report(line: str) -> None:
        print(f"\r{line}   ", end="", file=sys.stderr, flush=True)

    show = report if progress else None

    async def one(name: str) -> dict[str, Any]:
        async with _apiserver_process() as (url, pid):
            t = time.perf_counter()
            await _create_all(url, objects)
            if show is not None:
                show(f"{name}: created {len(objects)} objects in {time.perf_counter() - t:.1f}s")
            cpu0 = proc_cpu_seconds(pid)
            r = await _measure(
                name, url, config, registry, namespace, pods, timeout, seed, show, groups
            )
            # The API server's CPU per pod says whether it, not the scheduler, was the limit.
            cpu = proc_cpu_seconds(pid) - cpu0
            r["apiserver_cpu_ms_per_pod"] = (
                round(cpu * 1000 / r["scheduled"], 3) if r["scheduled"] and cpu >= 0 else None
            )
            if show is not None:
                print(file=sys.stderr)
            return r

    async def main() -> dict[str, Any]:
        runs: dict[str, dict[str, Any]] = {}
        if baseline is not None:
            runs["baseline"] = await one(baseline)
        runs["ksched"] = await one("ksched")
        return runs

    runs = anyio.run(main)
    k = runs["ksched"]
    result: dict[str, Any] = {
        "workload": workload,
        "nodes": nodes,
        "pods": pods,
        "init_pods": init_pods,
        "mode": "e2e",
        "scheduled": k["scheduled"],
        "seconds": k["seconds"],
        "pods_per_second": k["pods_per_second"],
        "sync_seconds": k["sync_seconds"],
        "cpu_ms_per_pod": k["cpu_ms_per_pod"],
        "apiserver_cpu_ms_per_pod": k["apiserver_cpu_ms_per_pod"],
        "peak_rss_mb": _peak_rss_mb(),
        "cpus": os.cpu_count(),
    }
    if "pod_groups" in k:
        result["pod_groups"] = k["pod_groups"]
    if "baseline" in runs:
        b = runs["baseline"]
        result["baseline"] = b
        result["ratio"] = (
            round(k["pods_per_second"] / b["pods_per_second"], 3) if b["pods_per_second"] else None
        )
    return result


def _no_plugins(config: KubeSchedulerConfiguration) -> KubeSchedulerConfiguration:
    """The same configuration with every profile reduced to PrioritySort + DefaultBinder.

    The ``noplugins`` baseline: ksched's whole daemon (queue, cache, binding cycle,
    events, status) with no Filter/Score work, so the ratio isolates what the plugins
    cost, where ``null`` (a bare round-robin binder) isolates everything ksched does.
    """
    import copy

    from ..config import PLUGIN_SETS, PluginRef, PluginSet

    cfg = copy.deepcopy(config)
    for prof in cfg.profiles:
        for attr, _ in PLUGIN_SETS:
            setattr(prof.plugins, attr, PluginSet([], []))
        prof.plugins.queue_sort = PluginSet([PluginRef("PrioritySort")], [])
        prof.plugins.bind = PluginSet([PluginRef("DefaultBinder")], [])
        prof.plugin_config = []
    return cfg


def proc_cpu_seconds(pid: int) -> float:
    """utime+stime of a process from /proc (Linux); -1 when unavailable."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return -1.0


def proc_runqueue_seconds(pid: int) -> float:
    """Seconds a process's threads spent runnable but waiting for a CPU, from
    /proc/<pid>/task/*/schedstat (Linux); -1 when unavailable. Beside ``cpu_s`` it tells
    a scheduler waiting for the machine (other processes on its cores) from one waiting
    for the API server (idle: neither running nor runnable)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return -1.0
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # a thread that ended meanwhile
    return total / 1e9


def _peak_rss_mb() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(r / 1024 if sys.platform != "darwin" else r / (1024 * 1024), 1)
