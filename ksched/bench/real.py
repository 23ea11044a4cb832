"""``ksched bench --apiserver real``: scheduler_perf's workloads on the real control plane.

For each workload and each contestant a fresh ``ControlPlane`` (etcd + kube-apiserver
v1.36.3, the PodReaper finishing deleted pods as kwok would) gets the workload's nodes,
its init pods (created bound, ``spec.nodeName`` set, round-robin) and its measured pods,
pending. Then the contestant starts, and the clock runs until a watch on the measured
namespace has seen every measured pod bound. Churn (PreemptionAsync's preemptors,
Unschedulable's pods that fit nowhere, SchedulingWithMixedChurn's node/pod/service)
is created while it runs, as scheduler_perf's ``churn`` op does.

Contestants, each alone on its own control plane:

* ``ksched``: a ``ksched run`` process;
* ``kube-scheduler``: the real one (``--against kube-scheduler``), with the same
  KubeSchedulerConfiguration;
* ``null``: a client in this process that makes no decisions (64 concurrent Binding
  POSTs, round-robin): what the API server's write path allows on this machine. Where a
  workload makes every scheduler write more than the Binding, the null client writes
  that too (``RealWorkload.null_writes``, ``NullWrites``): PreemptionBasic's preemptor
  status and three victims' DisruptionTarget status and deletion per preemptor, the DRA
  workload's nomination per pod and claim finalizer and allocation per claim. Elsewhere it
  is bind-only. The JSON
  says which, per workload (``null_writes``), and what each contestant wrote (``writes``).

Both schedulers run as ``system:kube-scheduler`` with client QPS/burst 5000. Reported per
contestant: pods/s from the first bind to the last, latency percentiles from the moment
the scheduler could see a pod (its creation, or the scheduler becoming ready for the
backlog) to the watch seeing it bound, the scheduler process's CPU seconds over the same
run and its peak RSS (VmHWM). The harness (pod creation, watch, churn, and the null
client) runs in this process, so it shares the machine with the contestant.
"""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
import json
import os
import platform
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import yaml

from .e2e import NullWrites, proc_cpu_seconds, proc_runqueue_seconds
from .workloads import (
    DELETING_NS,
    DRA_DRIVER,
    POD_GROUP_WORKLOADS,
    UPSTREAM_WORKLOADS,
    WORKLOADS,
    Manifest,
    PodGroupWorkload,
    UpstreamWorkload,
    Workload,
    collection_path,
    gate_setting,
    group_report,
    groups_of,
    high_priority_large_cpu_pod,
    high_priority_pod,
    node_default,
    scheduling_basic,
)

__all__ = [
    "CONTESTANTS",
    "REAL_WORKLOADS",
    "RealWorkload",
    "compare",
    "render_table",
    "run_real_bench",
]

CONTESTANTS = ("ksched", "kube-scheduler", "null")
CREATE_CONCURRENCY = 32
CLIENT_QPS = 5000
SCHEDULER_NAME = "ksched"
MEASURED_NS = "sched-1"
CHURN_NS = "sched-churn"

JSON = dict[str, Any]


# ---- workloads ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Churn:
    """scheduler_perf's ``churn`` op: every ``interval`` seconds, objects from ``make(i)``;
    ``recreate`` deletes the previous round's objects first (mode ``recreate``)."""

    make: Callable[[int], list[Manifest]]
    interval: float
    recreate: bool = False


@dataclass(frozen=True)
class Deletions:
    """scheduler_perf's ``deletePods`` op: the pods of ``namespace`` deleted, ``per_second``
    of them a second, from when the contestant is ready."""

    namespace: str
    per_second: float


@dataclass(frozen=True)
class RealWorkload:
    """A workload's objects and its (nodes, init pods, measured pods) per scale.

    ``setup`` returns extra objects created before the nodes (DeviceClasses,
    ResourceClaimTemplates...), each POSTed to the collection its apiVersion/kind names.
    """

    build: Workload
    scales: dict[str, tuple[int, int, int]]
    churn: Churn | None = None
    setup: Callable[[], list[Manifest]] | None = None
    note: str = ""
    #: run kube-controller-manager too (its resourceclaim controller makes the measured
    #: pods' claims from their templates); the harness waits for every claim before the
    #: contestant starts, so the controller is not part of what is measured
    controller_manager: bool = False
    #: the writes no scheduler can skip here, which the null client makes too (bind-only
    #: unless the workload needs preemption's evictions or DRA's claim allocations)
    null_writes: NullWrites = field(default_factory=NullWrites)
    #: the measured pods are created once the contestant is ready (as scheduler_perf's
    #: createPods op runs beside the scheduler), not before as a backlog
    live: bool = False
    #: pods deleted while the contestant runs
    deletions: Deletions | None = None

    @property
    def feature_gates(self) -> tuple[str, ...]:
        """The gates the API server and both schedulers run with (a pod-group workload's:
        GenericWorkload, and TopologyAwareWorkloadScheduling for tas; the others' as their
        scheduler_perf config sets them, ``Name=false`` for one turned off)."""
        b = self.build
        return b.feature_gates if isinstance(b, PodGroupWorkload | UpstreamWorkload) else ()

    @property
    def scheduler_config(self) -> JSON | None:
        """The KubeSchedulerConfiguration of the workload's scheduler_perf config, when it
        names one (``schedulerConfigPath``); the default configuration otherwise."""
        b = self.build
        return b.scheduler_config if isinstance(b, UpstreamWorkload) else None

    def variant(self, size: tuple[int, int, int]) -> str | None:
        """scheduler_perf's name of a pod-group workload at ``size``."""
        b = self.build
        return b.variant(size[0], size[2]) if isinstance(b, PodGroupWorkload) else None

    def null_writes_for(self, size: tuple[int, int, int]) -> NullWrites:
        """``null_writes`` at ``size``: claims start at the first device the init pods
        left free on each node (they hold ``ceil(init pods / nodes)`` each)."""
        nodes, init_pods, _ = size
        if not self.null_writes.claims:
            return self.null_writes
        return replace(self.null_writes, first_device=-(-init_pods // max(1, nodes)))


def _preemptors(i: int) -> list[Manifest]:
    return [high_priority_pod(f"churn-{i}", CHURN_NS)]


def _never_fit(i: int) -> list[Manifest]:
    return [high_priority_large_cpu_pod(f"churn-{i}", CHURN_NS)]


def _mixed_churn(i: int) -> list[Manifest]:
    """config/churn: a node, a pod that fits nowhere and a service, recreated each round."""
    node = node_default(90000 + i)
    node["metadata"]["name"] = f"churn-node-{i}"
    node["metadata"]["labels"] = {"kubernetes.io/hostname": f"churn-node-{i}"}
    svc = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"churn-svc-{i}", "namespace": CHURN_NS},
        "spec": {"selector": {"app": "churn"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    return [node, high_priority_large_cpu_pod(f"churn-{i}", CHURN_NS), svc]


# (nodes, init pods, measured pods): "full" is upstream's performance size where this
# 2-core machine can hold it, "small" its 500-node variant.
REAL_WORKLOADS: dict[str, RealWorkload] = {
    "SchedulingBasic": RealWorkload(
        scheduling_basic, {"small": (500, 500, 1000), "full": (5000, 1000, 10000)}
    ),
    "SchedulingPodAntiAffinity": RealWorkload(
        WORKLOADS["SchedulingPodAntiAffinity"],
        {"small": (500, 100, 400), "full": (5000, 1000, 2000)},
    ),
    "SchedulingPodAffinity": RealWorkload(
        WORKLOADS["SchedulingPodAffinity"],
        {"small": (500, 500, 1000), "full": (5000, 5000, 5000)},
    ),
    "TopologySpreading": RealWorkload(
        WORKLOADS["TopologySpreading"], {"small": (500, 1000, 1000), "full": (5000, 5000, 2000)}
    ),
    # each preemptor (3000m) fits only once three of its node's 900m pods are gone
    "PreemptionBasic": RealWorkload(
        WORKLOADS["PreemptionBasic"],
        {"small": (500, 2000, 500), "full": (1000, 4000, 1000)},
        null_writes=NullWrites(victims=3),
    ),
    "PreemptionAsync": RealWorkload(
        WORKLOADS["PreemptionAsync"],
        {"small": (500, 2000, 500), "full": (5000, 20000, 5000)},
        churn=Churn(_preemptors, 0.2),
    ),
    "Unschedulable": RealWorkload(
        WORKLOADS["Unschedulable"],
        {"small": (500, 10, 1000), "full": (5000, 100, 10000)},
        churn=Churn(_never_fit, 0.2),
    ),
    "MixedSchedulingBasePod": RealWorkload(
        WORKLOADS["MixedSchedulingBasePod"],
        {"small": (500, 200, 1000), "full": (5000, 2000, 5000)},
    ),
    "SchedulingWithMixedChurn": RealWorkload(
        scheduling_basic,
        {"small": (500, 0, 1000), "full": (5000, 0, 10000)},
        churn=Churn(_mixed_churn, 1.0, recreate=True),
    ),
    "SchedulingDaemonset": RealWorkload(
        WORKLOADS["SchedulingDaemonset"],
        {"small": (500, 0, 1000), "full": (15000, 0, 30000)},
    ),
    # dra/performance-config.yaml: small is 2000pods_200nodes, full 5000pods_500nodes
    # (maxClaimsPerNode 10 both: the init pods hold half the devices, the measured pods
    # take the rest). The init pods' claims are created allocated (as the allocResourceClaims
    # op does); the measured pods' come from the real resourceclaim controller.
    "SchedulingWithResourceClaimTemplate": RealWorkload(
        WORKLOADS["SchedulingWithResourceClaimTemplate"],
        {"small": (200, 1000, 1000), "full": (500, 2500, 2500)},
        controller_manager=True,
        null_writes=NullWrites(claims=True, driver=DRA_DRIVER, requests=("req-0",)),
    ),
    # podgroup/{basicscheduling,gangscheduling,tas}: full is upstream's first performance
    # size (5000Nodes_1000Gangs_3000Pods; tas 750 gangs of 4), small 500 nodes
    "BasicScheduling": RealWorkload(
        POD_GROUP_WORKLOADS["BasicScheduling"],
        {"small": (500, 0, 900), "full": (5000, 0, 3000)},
    ),
    "GangScheduling": RealWorkload(
        POD_GROUP_WORKLOADS["GangScheduling"],
        {"small": (500, 0, 900), "full": (5000, 0, 3000)},
    ),
    "TopologyAwareScheduling": RealWorkload(
        POD_GROUP_WORKLOADS["TopologyAwareScheduling"],
        {"small": (500, 0, 1000), "full": (5000, 0, 3000)},
    ),
    "BasicScheduling_1000PerGroup": RealWorkload(
        POD_GROUP_WORKLOADS["BasicScheduling_1000PerGroup"],
        {"small": (500, 0, 2000), "full": (5000, 0, 3000)},
    ),
    "GangScheduling_1000PerGroup": RealWorkload(
        POD_GROUP_WORKLOADS["GangScheduling_1000PerGroup"],
        {"small": (500, 0, 2000), "full": (5000, 0, 3000)},
    ),
    "TopologyAwareScheduling_1000PerGroup": RealWorkload(
        POD_GROUP_WORKLOADS["TopologyAwareScheduling_1000PerGroup"],
        {"small": (500, 0, 2000), "full": (5000, 0, 3000)},
    ),
    # 20 gangs of 500 (small: of 50) created one after another while the contestant runs:
    # per gang, the time from its last member created to its last member bound
    "Gangs20x500": RealWorkload(
        POD_GROUP_WORKLOADS["Gangs20x500"],
        {"small": (100, 0, 1000), "full": (1000, 0, 10000)},
        live=True,
    ),
}

# The workloads of v1.37's scheduler_perf users run now (misc/, batching/,
# topology_spreading/), their gates and scheduler config from UPSTREAM_WORKLOADS. "full" is
# upstream's (first) performance size; SchedulingBasic_50000Pods's small keeps its ten
# measured pods per node.
_U = UPSTREAM_WORKLOADS
REAL_WORKLOADS.update(
    {
        "SchedulingBasic_50000Pods": RealWorkload(
            _U["SchedulingBasic_50000Pods"],
            {"small": (500, 500, 5000), "full": (5000, 5000, 50000)},
        ),
        # one pod per node: upstream's 20000Nodes_20000Pods_10BatchSize (and _Disabled)
        **{
            name: RealWorkload(_U[name], {"small": (1000, 0, 1000), "full": (20000, 0, 20000)})
            for name in (
                "HostPortConflict",
                "HostPortConflict_OpportunisticBatchingDisabled",
                "ResourceSaturation",
                "ResourceSaturation_OpportunisticBatchingDisabled",
            )
        },
        "SchedulingWithExtendedResource": RealWorkload(
            _U["SchedulingWithExtendedResource"],
            {"small": (500, 0, 500), "full": (5000, 0, 5000)},
        ),
        # 1Node_10000GatedPods: 10000 gated, 20000 deleting (the init pods), 20000 measured
        "SchedulingWhileGated": RealWorkload(
            _U["SchedulingWhileGated"],
            {"small": (1, 2000, 2000), "full": (1, 20000, 20000)},
            deletions=Deletions("sched-0", 50),
        ),
        # 5000Node_5000DeletingPods (small: 1000Node_1000DeletingPods); init pods = deleting
        "SchedulingDeletedPodsWithFinalizers": RealWorkload(
            _U["SchedulingDeletedPodsWithFinalizers"],
            {"small": (1000, 1000, 1000), "full": (5000, 5000, 5000)},
            deletions=Deletions(DELETING_NS, 100),
        ),
        "PreferredTopologySpreading": RealWorkload(
            _U["PreferredTopologySpreading"],
            {"small": (500, 1000, 1000), "full": (5000, 5000, 5000)},
        ),
        "DefaultTopologySpreading": RealWorkload(
            _U["DefaultTopologySpreading"],
            {"small": (500, 1000, 1000), "full": (5000, 5000, 10000)},
        ),
    }
)

#: v1.37.2's kube-apiserver serves the PodGroups only with this API version enabled
#: (scheduler_perf's mustSetupCluster adds it when GenericWorkload is on).
POD_GROUP_RUNTIME_CONFIG = "scheduling.k8s.io/v1beta1=true"


def gate_args(gates: Sequence[str]) -> list[str]:
    """``--feature-gates`` turning ``gates`` on: for the API server and both schedulers
    (repeated flags add up in each)."""
    return [f"--feature-gates={','.join(gate_setting(g) for g in gates)}"] if gates else []


def apiserver_args(gates: Sequence[str]) -> list[str]:
    """kube-apiserver's flags for a workload's gates: the gates themselves (the pod field
    ``schedulingGroup`` is dropped without GenericWorkload) and the v1beta1 API."""
    if not gates:
        return []
    runtime = [f"--runtime-config={POD_GROUP_RUNTIME_CONFIG}"] if "GenericWorkload" in gates else []
    return [*gate_args(gates), *runtime]


def unsupported(wl: RealWorkload, kube_release: str) -> str | None:
    """Why ``wl`` cannot run on this control plane's release, or None: the pod-group
    workloads need v1.37's scheduling.k8s.io/v1beta1."""
    from ..features.versions import minor_of_release

    minor = tuple(int(x) for x in minor_of_release(kube_release).split("."))
    if "GenericWorkload" in wl.feature_gates and minor < (1, 37):
        return f"needs Kubernetes v1.37 (KSCHED_KUBE_VERSION=v1.37.2), not {kube_release}"
    return None


#: kube-controller-manager's client limits when a workload runs it (its default QPS 20
#: would take a minute to create a thousand claims).
CONTROLLER_MANAGER_ARGS = (f"--kube-api-qps={CLIENT_QPS}", f"--kube-api-burst={CLIENT_QPS}")


# ---- the API as admin ----------------------------------------------------------------------------


class _API:
    """aiohttp to the control plane as admin (many concurrent requests, one session)."""

    def __init__(self, url: str, token: str, ca_file: Path) -> None:
        self.url = url
        self.headers = {"Authorization": f"Bearer {token}"}
        self.ssl = ssl.create_default_context(cafile=str(ca_file))
        self.session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> _API:
        conn = aiohttp.TCPConnector(limit=CREATE_CONCURRENCY * 2, ssl=self.ssl)
        self.session = aiohttp.ClientSession(connector=conn, headers=self.headers)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.session is not None:
            await self.session.close()

    async def create(self, obj: Manifest) -> None:
        assert self.session is not None
        # a claim's allocation goes through its status subresource (_allocate_claims)
        claim = obj["kind"] == "ResourceClaim"
        body = {k: v for k, v in obj.items() if k != "status"} if claim else obj
        async with self.session.post(self.url + collection_path(obj), json=body) as r:
            if r.status >= 300 and r.status != 409:
                raise RuntimeError(
                    f"creating {obj['kind']} {obj['metadata']['name']}: {r.status} "
                    f"{(await r.text())[:300]}"
                )

    async def patch_status(self, obj: Manifest, status: JSON) -> None:
        """Merge-patch ``status`` into ``obj``'s status subresource."""
        assert self.session is not None
        path = f"{collection_path(obj)}/{obj['metadata']['name']}/status"
        headers = {"Content-Type": "application/merge-patch+json"}
        async with self.session.patch(
            self.url + path, data=json.dumps({"status": status}), headers=headers
        ) as r:
            if r.status >= 300:
                raise RuntimeError(
                    f"patching {obj['kind']} {obj['metadata']['name']} status: {r.status} "
                    f"{(await r.text())[:300]}"
                )

    async def delete(self, obj: Manifest) -> None:
        assert self.session is not None
        path = collection_path(obj) + "/" + obj["metadata"]["name"]
        async with self.session.delete(self.url + path, json={"gracePeriodSeconds": 0}):
            pass

    async def create_all(self, objects: Sequence[Manifest], on_done: Any = None) -> None:
        """POST ``objects`` from a few concurrent workers, in order of start."""
        todo = iter(enumerate(objects))

        async def worker() -> None:
            for i, obj in todo:
                await self.create(obj)
                if on_done is not None:
                    on_done(i, time.perf_counter())

        async with anyio.create_task_group() as tg:
            for _ in range(CREATE_CONCURRENCY):
                tg.start_soon(worker)

    async def get(self, path: str) -> JSON:
        assert self.session is not None
        async with self.session.get(self.url + path) as r:
            r.raise_for_status()
            data: JSON = await r.json()
            return data

    async def writes(self) -> dict[str, int]:
        """The API server's mutating requests so far, by "VERB resource[/subresource]"
        (its ``apiserver_request_total``): what each contestant made it do."""
        assert self.session is not None
        async with self.session.get(self.url + "/metrics") as r:
            r.raise_for_status()
            return request_counts(await r.text())


_MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE", "APPLY"})
_LABEL = re.compile(r'(\w+)="([^"]*)"')


def request_counts(text: str) -> dict[str, int]:
    """``apiserver_request_total`` summed over codes and versions, mutating verbs only."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_end = line.rindex("}")
        labels = dict(_LABEL.findall(line[: labels_end + 1]))
        verb = labels.get("verb", "")
        if verb not in _MUTATING or labels.get("dry_run"):
            continue
        sub = labels.get("subresource", "")
        key = f"{verb} {labels.get('resource', '')}" + (f"/{sub}" if sub else "")
        try:
            n = int(float(line[labels_end + 1 :].split()[0]))
        except (IndexError, ValueError):
            continue
        out[key] = out.get(key, 0) + n
    return out


def writes_between(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The requests made between two ``request_counts``, nonzero ones only."""
    diff = {k: n - before.get(k, 0) for k, n in after.items()}
    return dict(sorted((k, n) for k, n in diff.items() if n > 0))


# ---- measuring ---------------------------------------------------------------------------------


@dataclass
class _Binds:
    """Bind times of the measured pods, as a watch on their namespace sees them."""

    target: int
    bound: dict[str, float] = field(default_factory=dict)
    done: anyio.Event = field(default_factory=anyio.Event)

    def see(self, pod: JSON) -> None:
        name = pod["metadata"]["name"]
        if (pod.get("spec") or {}).get("nodeName") and name not in self.bound:
            self.bound[name] = time.perf_counter()
            if len(self.bound) >= self.target:
                self.done.set()


async def _watch(api: _API, binds: _Binds) -> None:
    """List then watch the measured namespace until cancelled (re-listing if it ends). A
    re-list the API server turns away (429: its in-flight limit, reached at 15,000 nodes
    on a loaded machine) is tried again a second later rather than ending the run."""
    assert api.session is not None
    path = f"/api/v1/namespaces/{MEASURED_NS}/pods"
    while True:
        try:
            listed = await api.get(path)
        except aiohttp.ClientResponseError as e:
            if e.status != 429:
                raise
            await anyio.sleep(1.0)
            continue
        for p in listed.get("items") or []:
            binds.see(p)
        rv = listed["metadata"]["resourceVersion"]
        params = {"watch": "1", "resourceVersion": rv, "timeoutSeconds": "3600"}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with api.session.get(api.url + path, params=params, timeout=timeout) as r:
            while True:
                line = await r.content.readline()
                if not line:
                    break
                ev = json.loads(line)
                if ev.get("type") in ("ADDED", "MODIFIED"):
                    binds.see(ev["object"])
                elif ev.get("type") == "ERROR":
                    break


async def _churn(api: _API, churn: Churn) -> None:
    """Create (and with ``recreate`` replace) churn objects until cancelled."""
    previous: list[Manifest] = []
    i = 0
    while True:
        if churn.recreate:
            for obj in previous:
                with contextlib.suppress(aiohttp.ClientError):
                    await api.delete(obj)
        previous = churn.make(i)
        for obj in previous:
            _priority_to_class(obj)
        for obj in previous:
            with contextlib.suppress(aiohttp.ClientError, RuntimeError):
                await api.create(obj)
        i += 1
        await anyio.sleep(churn.interval)


async def _delete_at_rate(api: _API, deletions: Deletions) -> None:
    """Delete the namespace's pods (as listed now, by name) at the rate, until done or
    cancelled; a pod with a finalizer then stays, with its deletionTimestamp."""
    ns = deletions.namespace
    listed = await api.get(f"/api/v1/namespaces/{ns}/pods")
    names = sorted(p["metadata"]["name"] for p in listed.get("items") or [])
    start = time.perf_counter()
    for i, name in enumerate(names):
        with contextlib.suppress(aiohttp.ClientError):
            await api.delete({"kind": "Pod", "metadata": {"name": name, "namespace": ns}})
        await anyio.sleep(max(0.0, start + (i + 1) / deletions.per_second - time.perf_counter()))


async def _writes_or_empty(api: _API) -> dict[str, int]:
    """``api.writes()``; empty when the API server would not say (a figure for the
    report, not worth failing a run)."""
    try:
        return await api.writes()
    except Exception:
        return {}


def _proc_peak_rss_mb(pid: int) -> float | None:
    """VmHWM (peak resident set) of a process, in MB (10^6 bytes); None when unknown."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) * 1024 / 1e6, 1)
    except OSError:
        pass
    return None


@dataclass(frozen=True)
class CPUSplit:
    """``--pin``: the CPUs of etcd, kube-apiserver (and kube-controller-manager), and the
    CPUs of the scheduler under test with the harness. On a shared machine the scheduler's
    CPU is taken from the API server's; split, the API server's cores are its own and
    are the bound for any scheduler that keeps up with them."""

    apiserver: frozenset[int]
    scheduler: frozenset[int]

    def describe(self) -> JSON:
        return {"apiserver": sorted(self.apiserver), "scheduler": sorted(self.scheduler)}


def cpu_split(cpus: Collection[int] | None = None) -> CPUSplit:
    """The CPUs this process may use, the first half for the control plane and the rest
    for the scheduler and the harness; ValueError with fewer than two."""
    avail = sorted(os.sched_getaffinity(0) if cpus is None else cpus)
    if len(avail) < 2:
        raise ValueError(f"--pin needs at least 2 CPUs, this process may use {len(avail)}")
    half = len(avail) // 2
    return CPUSplit(frozenset(avail[:half]), frozenset(avail[half:]))


def _plane_cpu(cp: Any) -> float:
    """kube-apiserver's and etcd's CPU seconds so far (-1 when unknown): what a
    contestant costs the control plane, steadier than the throughput it gets."""
    total = 0.0
    for c in cp.components:
        if c.name in ("kube-apiserver", "etcd"):
            cpu = proc_cpu_seconds(c.pid) if c.pid else -1.0
            if cpu < 0:
                return -1.0
            total += cpu
    return total


def _percentile(sorted_values: Sequence[float], q: float) -> float | None:
    if not sorted_values:
        return None
    return round(sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))] * 1e3, 1)


# ---- contestants ---------------------------------------------------------------------------------


def scheduler_config(base: JSON | None = None) -> JSON:
    """The KubeSchedulerConfiguration both schedulers get: ``base`` (default: the default
    profile named ``ksched``) with leader election off and client QPS/burst 5000."""
    cfg = copy.deepcopy(base) if base else {}
    cfg.setdefault("apiVersion", "kubescheduler.config.k8s.io/v1")
    cfg.setdefault("kind", "KubeSchedulerConfiguration")
    cfg.setdefault("profiles", [{"schedulerName": SCHEDULER_NAME}])
    cfg["leaderElection"] = {"leaderElect": False}
    conn = dict(cfg.get("clientConnection") or {})
    conn.update({"qps": CLIENT_QPS, "burst": CLIENT_QPS})
    cfg["clientConnection"] = conn
    return cfg


class _Contestant:
    """Starts one scheduler against a control plane; ``pid`` None for in-process."""

    pid: int | None = None
    # when it could start placing pods, if it knows better than "start() returned" (the
    # null client starts binding before that)
    ready_at: float | None = None
    # --pin: the CPUs the scheduler may run on (None: any)
    cpus: frozenset[int] | None = None
    # --feature-gates/--emulated-version flags, given to ksched and kube-scheduler alike
    gate_flags: tuple[str, ...] = ()

    async def start(self, cp: Any, cfg: JSON, tg: Any) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        return None

    async def metrics(self) -> str | None:
        """The scheduler's ``/metrics`` text (None: it serves none)."""
        return None


def queue_moves(text: str) -> JSON:
    """What the queue did, from a scheduler's ``/metrics``: pods moved per "queue/event"
    (``scheduler_queue_incoming_pods_total``) and queueing hint calls per
    "plugin/event/hint" (``scheduler_queueing_hint_execution_duration_seconds``)."""
    from prometheus_client.parser import text_string_to_metric_families

    moves: dict[str, float] = {}
    hints: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name == "scheduler_queue_incoming_pods_total":
                key = f"{labels.get('queue')}/{labels.get('event')}"
                moves[key] = moves.get(key, 0) + sample.value
            elif sample.name == "scheduler_queueing_hint_execution_duration_seconds_count":
                key = f"{labels.get('plugin')}/{labels.get('event')}/{labels.get('hint')}"
                hints[key] = hints.get(key, 0) + sample.value
    return {
        "moves": {k: int(v) for k, v in sorted(moves.items())},
        "hints": {k: int(v) for k, v in sorted(hints.items())},
    }


class _KschedProcess(_Contestant):
    def __init__(self, workload: str) -> None:
        self.workload = workload
        self.proc: subprocess.Popen[bytes] | None = None
        self.spy: subprocess.Popen[bytes] | None = None
        self.log: Any = None
        self.port = 0

    async def start(self, cp: Any, cfg: JSON, tg: Any) -> None:
        from ..testing.controlplane._process import child_setup, free_port

        path = cp.dir / "ksched-bench.yaml"
        path.write_text(yaml.safe_dump(cfg))
        port = free_port()
        self.log = open(cp.dir / "ksched-bench.log", "wb")  # noqa: SIM115 - closed in stop()
        # KSCHED_BENCH_PROFILE=DIR: run it under cProfile (timed by its CPU clock), one
        # DIR/<workload>.prof per run
        profile_dir = os.environ.get("KSCHED_BENCH_PROFILE")
        main = (
            ["ksched.bench.cpuprofile", str(Path(profile_dir) / f"{self.workload}.prof")]
            if profile_dir
            else ["ksched"]
        )
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                *main,
                "run",
                "--config",
                str(path),
                "--kubeconfig",
                str(cp.scheduler_kubeconfig),
                "--port",
                str(port),
                "--secure-port",
                "0",
                *self.gate_flags,
                *_emulation(cp, self.gate_flags),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
            # killed with the harness, as the control plane's processes are (no orphan
            # scheduler left running when a long table is interrupted)
            preexec_fn=child_setup(self.cpus),
        )
        self.pid = self.proc.pid
        self.port = port
        deadline = time.monotonic() + 120
        while not _http_ok(f"http://127.0.0.1:{port}/readyz"):
            if self.proc.poll() is not None:
                self.log.flush()
                tail = (cp.dir / "ksched-bench.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"ksched run exited with {self.proc.returncode}:\n{tail}")
            if time.monotonic() > deadline:
                raise RuntimeError("ksched run not ready after 120s")
            await anyio.sleep(0.05)
        # KSCHED_BENCH_PYSPY=DIR: sample it with py-spy from ready to the end of the run
        # (DIR/<workload>.txt, collapsed stacks; ``bench/pyspy_split.py`` sums them up)
        spy_dir = os.environ.get("KSCHED_BENCH_PYSPY")
        if spy_dir:
            out = Path(spy_dir) / f"{self.workload}.txt"
            spy = ["py-spy", "record", "--pid", str(self.pid), "--rate", "250"]
            self.spy = subprocess.Popen(
                [*spy, "--format", "raw", "--nonblocking", "-o", str(out)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )

    async def metrics(self) -> str | None:
        def get() -> str:
            url = f"http://127.0.0.1:{self.port}/metrics"
            with urllib.request.urlopen(url, timeout=10) as r:
                return str(r.read().decode())

        return await anyio.to_thread.run_sync(get)

    def stop(self) -> None:
        if self.spy is not None:
            self.spy.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.spy.wait(30)
            self.spy = None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.log is not None:
            self.log.close()


def _emulation(cp: Any, gate_flags: Sequence[str]) -> list[str]:
    """ksched at the control plane's kube-scheduler version (``KSCHED_KUBE_VERSION`` may
    have built another than ksched's default), unless the flags name one for both."""
    if any(f.startswith("--emulated-version") for f in gate_flags):
        return []
    return [f"--emulated-version={cp.emulated_version}"]


class _KubeScheduler(_Contestant):
    def __init__(self, workload: str) -> None:
        self.ks: Any = None

    async def start(self, cp: Any, cfg: JSON, tg: Any) -> None:
        self.ks = cp.kube_scheduler(cfg, cpus=self.cpus, args=self.gate_flags)
        await anyio.to_thread.run_sync(self.ks.start)
        self.pid = self.ks.component.pid

    async def metrics(self) -> str | None:
        return str(await anyio.to_thread.run_sync(self.ks.metrics))

    def stop(self) -> None:
        if self.ks is not None:
            self.ks.stop()


class _Null(_Contestant):
    """e2e's ``NullScheduler`` on ksched's client stack, in this process, making the
    workload's mandatory writes (``writes``) besides the Bindings."""

    def __init__(self, workload: str) -> None:
        self.client: Any = None
        self.writes = NullWrites()

    async def start(self, cp: Any, cfg: JSON, tg: Any) -> None:
        from ..cluster import APIClient, connect_scheduler
        from .e2e import NullScheduler

        names = [p.get("schedulerName", "default-scheduler") for p in cfg["profiles"]]
        self.client = await APIClient.from_kubeconfig(
            cp.scheduler_kubeconfig, qps=CLIENT_QPS, burst=CLIENT_QPS
        )
        null = NullScheduler(self.client, names, writes=self.writes)
        informers = connect_scheduler(null, self.client)
        tg.start_soon(informers.run)
        await informers.wait_synced()
        self.ready_at = time.perf_counter()
        tg.start_soon(null.run)

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.close()


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


_MAKERS: dict[str, Callable[[str], _Contestant]] = {
    "ksched": _KschedProcess,
    "kube-scheduler": _KubeScheduler,
    "null": _Null,
}


# ---- one run -------------------------------------------------------------------------------------


def _objects(
    wl: RealWorkload, nodes: int, init_pods: int, pods: int, scheduler_name: str
) -> tuple[list[Manifest], list[Manifest]]:
    """(setup objects, measured pods): namespaces, extras, nodes and bound init pods."""
    built, init_ms, measured = wl.build(nodes, pods, init_pods)
    node_ms = [m for m in built if m["kind"] == "Node"]
    extras = [m for m in built if m["kind"] != "Node"]
    namespaces = sorted(
        {m["metadata"].get("namespace", "default") for m in [*init_ms, *measured]}
        | {m["metadata"]["namespace"] for m in extras if m["metadata"].get("namespace")}
        | {CHURN_NS, MEASURED_NS}
    )
    setup: list[Manifest] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
        for n in namespaces
        if n != "default"
    ]
    if wl.setup is not None:
        setup += wl.setup()
    for m in extras:
        if m["kind"] == "Pod":  # pending, never measured (gated, or to be deleted)
            m["metadata"].pop("uid", None)
            m["spec"]["schedulerName"] = scheduler_name
    setup += extras
    setup += node_ms
    # init pods bound round-robin over the default nodes (not a daemonset's named node)
    names = [m["metadata"]["name"] for m in node_ms]
    templates = {
        (m["metadata"]["namespace"], m["metadata"]["name"]): m
        for m in extras
        if m["kind"] == "ResourceClaimTemplate"
    }
    for i, m in enumerate(init_ms):
        m["metadata"].pop("uid", None)
        m["spec"]["nodeName"] = names[i % len(names)]
        m["spec"]["schedulerName"] = scheduler_name
        setup += _preallocated_claims(m, templates, i // len(names))
        setup.append(m)
    for m in measured:
        m["metadata"].pop("uid", None)
        m["metadata"]["namespace"] = MEASURED_NS
        m["spec"]["schedulerName"] = scheduler_name
    churn = wl.churn.make(0) if wl.churn is not None else []
    values = {v for m in [*setup, *measured, *churn] if (v := _priority_to_class(m)) is not None}
    classes = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": _priority_class(v)},
            "value": v,
        }
        for v in sorted(values)
    ]
    return classes + setup, measured


def _preallocated_claims(
    pod: Manifest, templates: dict[tuple[str, str], Manifest], device: int
) -> list[Manifest]:
    """A bound init pod's claims, as the scheduler would have left them: for each
    template reference, a ResourceClaim named after the pod whose ``status`` (applied by
    ``_allocate_claims`` once the pod exists) allocates device ``instance-<device>`` of
    the pod's node's pool to every request and reserves it for the pod. The pod then
    references the claim by name. Scheduling them is not measured, so they are not
    scheduled (scheduler_perf's allocResourceClaims does the same)."""
    ns = pod["metadata"]["namespace"]
    node = pod["spec"]["nodeName"]
    out: list[Manifest] = []
    for ref in pod["spec"].get("resourceClaims") or []:
        template = templates.get((ns, ref.get("resourceClaimTemplateName", "")))
        if template is None:
            continue
        name = f"{pod['metadata']['name']}-{ref['name']}"
        requests = template["spec"]["spec"]["devices"]["requests"]
        driver = DRA_DRIVER
        results = [
            {"request": r["name"], "driver": driver, "pool": node, "device": f"instance-{device}"}
            for r in requests
        ]
        selector = {"key": "metadata.name", "operator": "In", "values": [node]}
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": name, "namespace": ns},
                "spec": copy.deepcopy(template["spec"]["spec"]),
                "status": {
                    "allocation": {
                        "devices": {"results": results},
                        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [selector]}]},
                    },
                    "reservedFor": [{"resource": "pods", "name": pod["metadata"]["name"]}],
                },
            }
        )
        ref.pop("resourceClaimTemplateName")
        ref["resourceClaimName"] = name
    return out


async def _allocate_claims(api: _API, setup: Sequence[Manifest]) -> None:
    """Apply the preallocated claims' status, each reserved for its pod by UID."""
    claims = [m for m in setup if m["kind"] == "ResourceClaim" and m.get("status")]
    if not claims:
        return
    uids: dict[tuple[str, str], str] = {}
    for ns in sorted({c["metadata"]["namespace"] for c in claims}):
        listed = await api.get(f"/api/v1/namespaces/{ns}/pods")
        for p in listed.get("items") or []:
            uids[(ns, p["metadata"]["name"])] = p["metadata"]["uid"]
    todo = iter(claims)

    async def worker() -> None:
        for c in todo:
            ns = c["metadata"]["namespace"]
            status = copy.deepcopy(c["status"])
            for ref in status.get("reservedFor") or []:
                ref["uid"] = uids[(ns, ref["name"])]
            await api.patch_status(c, status)

    async with anyio.create_task_group() as tg:
        for _ in range(CREATE_CONCURRENCY):
            tg.start_soon(worker)


async def _wait_for_claims(api: _API, pods: int, timeout: float) -> None:
    """Until every measured pod that uses a claim template has its claim (the
    resourceclaim controller records it in ``status.resourceClaimStatuses``)."""
    deadline = time.monotonic() + timeout
    while True:
        listed = await api.get(f"/api/v1/namespaces/{MEASURED_NS}/pods")
        items = listed.get("items") or []
        missing = sum(
            1
            for p in items
            if len((p.get("status") or {}).get("resourceClaimStatuses") or [])
            < len((p.get("spec") or {}).get("resourceClaims") or [])
        )
        if missing == 0 and len(items) >= pods:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"resourceclaim controller: {missing} pods still lack claims")
        await anyio.sleep(0.5)


def _priority_class(value: int) -> str:
    return f"bench-priority-{value}"


def _priority_to_class(m: Manifest) -> int | None:
    """kube-apiserver's Priority admission refuses ``spec.priority`` set by the client, so
    a template's priority becomes a PriorityClass of that value (returned, to create)."""
    spec = m.get("spec") if m.get("kind") == "Pod" else None
    if not isinstance(spec, dict) or "priority" not in spec:
        return None
    value = int(spec.pop("priority"))
    spec["priorityClassName"] = _priority_class(value)
    return value


async def _one(
    name: str,
    contestant: str,
    wl: RealWorkload,
    size: tuple[int, int, int],
    cfg: JSON,
    timeout: float,
    progress: Callable[[str], None] | None,
    split: CPUSplit | None = None,
    gate_flags: tuple[str, ...] = (),
) -> JSON:
    from ..testing.controlplane import ControlPlane
    from ..testing.controlplane._process import pin_process

    nodes, init_pods, pods = size
    harness_cpus = os.sched_getaffinity(0)
    if split is not None:
        # the harness (pod creation, watch, PodReaper, the null client) beside the scheduler
        pin_process(os.getpid(), split.scheduler)
    sched_name = cfg["profiles"][0].get("schedulerName", "default-scheduler")
    setup, measured = _objects(wl, nodes, init_pods, pods, sched_name)
    groups = groups_of(measured)
    created: dict[str, float] = {}
    gate_flags = (*gate_args(wl.feature_gates), *gate_flags)
    with tempfile.TemporaryDirectory(prefix="ksched-bench-") as tmp:
        plane = ControlPlane(
            workdir=tmp,
            with_controller_manager=wl.controller_manager,
            controller_manager_args=CONTROLLER_MANAGER_ARGS,
            apiserver_args=apiserver_args(wl.feature_gates),
            cpus=split.apiserver if split is not None else None,
        )
        async with plane as cp, _API(cp.url, cp.admin.token, cp.ca_file) as api:
            t = time.perf_counter()
            # namespaces before anything in them (create_all runs concurrently)
            first = [m for m in setup if m["kind"] in ("Namespace", "PriorityClass")]
            await api.create_all(first)
            await api.create_all(
                [m for m in setup if m["kind"] not in ("Namespace", "PriorityClass")]
            )
            await _allocate_claims(api, setup)
            if not wl.live:
                await api.create_all(measured)
            if wl.controller_manager:
                await _wait_for_claims(api, len(measured), timeout)
            if progress is not None:
                progress(
                    f"{name}/{contestant}: {len(setup) + len(measured)} objects "
                    f"in {time.perf_counter() - t:.0f}s"
                )
            binds = _Binds(pods)
            runner = _MAKERS[contestant](name)
            runner.cpus = split.scheduler if split is not None else None
            runner.gate_flags = gate_flags
            if isinstance(runner, _Null):
                runner.writes = wl.null_writes_for(size)
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_watch, api, binds)
                    # from before the start: a fast contestant binds pods made before it
                    # is seen ready (its lease and startup writes count too)
                    writes0 = await _writes_or_empty(api)
                    try:
                        await runner.start(cp, cfg, tg)
                    except RuntimeError as e:
                        # the others still run (e.g. a scheduler refusing a feature gate)
                        tg.cancel_scope.cancel()
                        return {"scheduled": 0, "pods_per_s": None, "error": str(e)[-1000:]}
                    ready = runner.ready_at or time.perf_counter()
                    if wl.live:

                        def creation(i: int, t: float) -> None:
                            created[measured[i]["metadata"]["name"]] = t

                        tg.start_soon(api.create_all, measured, creation)
                    cpu0 = proc_cpu_seconds(runner.pid) if runner.pid else -1.0
                    wait0 = proc_runqueue_seconds(runner.pid) if runner.pid else -1.0
                    plane0 = _plane_cpu(cp)
                    if wl.churn is not None:
                        tg.start_soon(_churn, api, wl.churn)
                    if wl.deletions is not None:
                        tg.start_soon(_delete_at_rate, api, wl.deletions)
                    with anyio.move_on_after(timeout):
                        while not binds.done.is_set():
                            with anyio.move_on_after(1.0):
                                await binds.done.wait()
                            if progress is not None:
                                progress(f"{name}/{contestant}: {len(binds.bound)}/{pods} bound")
                    cpu1 = proc_cpu_seconds(runner.pid) if runner.pid else -1.0
                    wait1 = proc_runqueue_seconds(runner.pid) if runner.pid else -1.0
                    plane1 = _plane_cpu(cp)
                    writes1 = await _writes_or_empty(api)
                    rss = _proc_peak_rss_mb(runner.pid) if runner.pid else None
                    try:
                        text = await runner.metrics()
                    except Exception:  # a figure for the report, not worth failing a run
                        text = None
                    tg.cancel_scope.cancel()
            finally:
                runner.stop()
                if isinstance(runner, _Null):
                    await runner.aclose()
                if split is not None:
                    pin_process(os.getpid(), harness_cpus)
    times = sorted(binds.bound.values())
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    # from when the contestant could first see the pod: its creation, or its start
    since = {p: max(created.get(p, ready), ready) for p in binds.bound}
    lat = sorted(max(0.0, t - since[p]) for p, t in binds.bound.items())
    out: JSON = {
        "pods_per_s": round((len(times) - 1) / span, 1) if span > 0 else None,
        "scheduled": len(times),
        # from ready to the last bind: the whole drain, where pods/s counts only the binds'
        # span (PreemptionBasic's binds come in one burst at the end, see drain_ratio)
        "drain_s": round(times[-1] - ready, 2) if times else None,
        "apiserver_cpu_s": round(plane1 - plane0, 2) if plane0 >= 0 and plane1 >= 0 else None,
    }
    if writes0 and writes1:
        out["writes"] = writes_between(writes0, writes1)
    if groups:
        seen = {p: max(created.get(p, ready), ready) for p in groups}
        out["pod_groups"] = group_report(groups, seen, binds.bound)
    if contestant != "null":
        out["p50_ms"] = _percentile(lat, 0.50)
        out["p99_ms"] = _percentile(lat, 0.99)
        out["cpu_s"] = round(cpu1 - cpu0, 2) if cpu0 >= 0 and cpu1 >= 0 else None
        # runnable but not running over the same span: the machine, not the API server,
        # kept it waiting (a low cpu_s is not idleness when this is high)
        out["runqueue_s"] = round(wait1 - wait0, 2) if wait0 >= 0 and wait1 >= 0 else None
        out["rss_mb"] = rss
        if text is not None:
            out["queue"] = queue_moves(text)
    return out


def run_real_bench(
    workloads: Sequence[str],
    *,
    scale: str = "small",
    contestants: Sequence[str] = ("ksched", "null"),
    config: JSON | None = None,
    sizes: dict[str, tuple[int, int, int]] | None = None,
    repeat: int = 1,
    progress: bool = False,
    pin: bool = False,
    gate_flags: Sequence[str] = (),
) -> JSON:
    """Run ``workloads`` for each contestant ``repeat`` times; the JSON document the CLI
    prints. ``gate_flags``: ``--feature-gates=...``/``--emulated-version=...`` arguments
    every scheduler contestant is started with.

    On a shared machine one run's throughput moves with everyone else's load, so with
    ``repeat`` > 1 the contestants run interleaved (round r starts with contestant r mod
    n, so none always runs first or last), each contestant's figures are the median over
    its runs, and the ratios are the median of each round's ratio: a round's contestants
    ran minutes apart, under similar load. ``sizes`` overrides (nodes, init pods,
    measured pods) per workload (tests use tiny ones). ``pin``: the API server on its own
    CPUs (``cpu_split``).
    """
    if repeat < 1:
        raise ValueError("repeat must be at least 1")
    split = cpu_split() if pin else None

    def report(line: str) -> None:
        print(f"\r{line}    ", end="", file=sys.stderr, flush=True)

    show = report if progress else None
    doc: JSON = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "scale": scale,
        "repeat": repeat,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "pinned": split.describe() if split is not None else None,
        "loadavg_start": _loadavg(),
        "versions": _versions(),
        "workloads": [],
    }
    release = doc["versions"]["kubernetes"]
    for name in workloads:
        wl = REAL_WORKLOADS[name]
        size = (sizes or {}).get(name) or wl.scales[scale]
        nodes, init_pods, pods = size
        why = unsupported(wl, release)
        if why is not None:
            doc["workloads"].append({"name": name, "skipped": why})
            if show is not None:
                print(f"{name}: skipped: {why}", file=sys.stderr)
            continue
        timeout = max(120.0, pods / 10)
        # the user's --config, else the workload's own (batching/'s), else the default
        cfg = scheduler_config(config if config is not None else wl.scheduler_config)
        rounds: list[JSON] = []
        for r in range(repeat):
            order = [*contestants[r % len(contestants) :], *contestants[: r % len(contestants)]]
            this: JSON = {}
            for contestant in order:
                res = anyio.run(
                    _one, name, contestant, wl, size, cfg, timeout, show, split, tuple(gate_flags)
                )
                res["loadavg"] = _loadavg()
                this[contestant] = res
                if show is not None:
                    print(file=sys.stderr)
            rounds.append(this)
        results = {c: _median_run([rd[c] for rd in rounds]) for c in contestants}
        entry: JSON = {
            "name": name,
            "nodes": nodes,
            "init_pods": init_pods,
            "pods": pods,
            "results": results,
            "ratios": _round_ratios(rounds),
            "null_writes": wl.null_writes_for(size).describe(),
        }
        variant = wl.variant(size)
        if variant is not None:
            entry["variant"] = variant
        if wl.feature_gates:
            entry["feature_gates"] = list(wl.feature_gates)
        doc["workloads"].append(entry)
    doc["loadavg_end"] = _loadavg()
    return doc


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _median(values: Sequence[float]) -> float | None:
    v = sorted(values)
    if not v:
        return None
    mid = len(v) // 2
    return round(v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2, 2)


#: A contestant's figures, each the median over its runs (the null client has the first two
#: and the API server's CPU).
FIGURES = (
    "pods_per_s",
    "drain_s",
    "p50_ms",
    "p99_ms",
    "cpu_s",
    "runqueue_s",
    "rss_mb",
    "apiserver_cpu_s",
)


def _median_run(runs: Sequence[JSON]) -> JSON:
    """One contestant's runs folded into one result: each figure's median (a run that
    bound nothing counts as 0 pods/s), ``scheduled`` the fewest any run bound, and every
    run's throughput, CPU and load average under ``runs``."""
    out: JSON = {}
    for key in FIGURES:
        if key not in runs[0]:
            continue
        values = [r.get(key) for r in runs]
        if key == "pods_per_s":
            values = [v or 0.0 for v in values]
        out[key] = _median([v for v in values if isinstance(v, int | float)])
    out["scheduled"] = min(r["scheduled"] for r in runs)
    errors = [r["error"] for r in runs if r.get("error")]
    if errors:
        out["error"] = errors[0]
    groups = [r["pod_groups"] for r in runs if r.get("pod_groups")]
    if len(groups) == 1:
        out["pod_groups"] = groups[0]
    elif groups:
        out["pod_groups"] = {
            "groups": groups[0]["groups"],
            "bound": min(g["bound"] for g in groups),
        } | {
            k: _median([g[k] for g in groups if g.get(k) is not None])
            for k in ("max_s", "median_s", "service_max_s", "service_median_s")
        }
    writes = [r["writes"] for r in runs if r.get("writes")]
    if writes:  # each request's median count
        keys = sorted({k for w in writes for k in w})
        out["writes"] = {k: round(_median([w.get(k, 0) for w in writes]) or 0) for k in keys}
    out["runs"] = [
        {
            k: r.get(k)
            for k in (
                "pods_per_s",
                "drain_s",
                "cpu_s",
                "runqueue_s",
                "apiserver_cpu_s",
                "loadavg",
                "pod_groups",
                "queue",
                "writes",
            )
            if k in r
        }
        for r in runs
    ]
    return out


#: The ratios reported per workload: (name, numerator contestant and key, denominator).
RATIOS = (
    ("ksched/kube-scheduler", ("ksched", "pods_per_s"), ("kube-scheduler", "pods_per_s")),
    ("ksched/null", ("ksched", "pods_per_s"), ("null", "pods_per_s")),
    # CPU the other way round: above 1 means ksched spent less CPU than kube-scheduler
    ("cpu kube-scheduler/ksched", ("kube-scheduler", "cpu_s"), ("ksched", "cpu_s")),
    # the whole drain (ready to last bind), null's over ksched's: where the binds come in a
    # burst after a long preemption phase (PreemptionBasic), pods/s measures only the burst
    # and its stragglers, and one straggler's backoff halves it
    ("ksched/null drain", ("null", "drain_s"), ("ksched", "drain_s")),
)


def _round_ratios(rounds: Sequence[JSON]) -> JSON:
    """Each ratio's median over the rounds that have both figures, with its range."""
    out: JSON = {}
    for label, (a, ka), (b, kb) in RATIOS:
        values = []
        for rd in rounds:
            x = (rd.get(a) or {}).get(ka)
            y = (rd.get(b) or {}).get(kb)
            if isinstance(x, int | float) and isinstance(y, int | float) and y > 0:
                values.append(x / y)
        if values:
            out[label] = {
                "median": _median(values),
                "min": round(min(values), 2),
                "max": round(max(values), 2),
            }
    return out


def _versions() -> JSON:
    from .. import __version__
    from ..testing.controlplane._build import kube_version

    return {
        "ksched": __version__,
        "kubernetes": kube_version(),
        "python": platform.python_version(),
    }


# ---- output --------------------------------------------------------------------------------------


def _cell(v: Any) -> str:
    return "-" if v is None else str(v)


def render_table(doc: JSON) -> str:
    """One row per workload: each contestant's figures, then the ksched/kube-scheduler and
    ksched/null throughput ratios and kube-scheduler/ksched CPU seconds (with their range
    over the rounds when there were several)."""
    header = ["WORKLOAD", "NODES", "PODS"]
    ran = [w for w in doc["workloads"] if "results" in w]
    present = [c for c in CONTESTANTS if any(c in w["results"] for w in ran)]
    for c in present:
        header.append(f"{c} pods/s")
        if c != "null":
            header += [f"{c} p50/p99 ms", f"{c} cpu s", f"{c} rss MB"]
        header.append(f"{c} apiserver ms/pod")
    header += ["ksched/kube", "ksched/null", "cpu kube/ksched", "ksched/null drain"]
    rows = [header]
    for w in ran:
        r = w["results"]
        row = [w["name"], str(w["nodes"]), str(w["pods"])]
        for c in present:
            res = r.get(c) or {}
            pps = _cell(res.get("pods_per_s"))
            if res and res.get("scheduled", w["pods"]) < w["pods"]:
                pps += f" ({res['scheduled']}/{w['pods']} bound)"
            row.append(pps)
            if c != "null":
                row += [
                    f"{_cell(res.get('p50_ms'))}/{_cell(res.get('p99_ms'))}",
                    _cell(res.get("cpu_s")),
                    _cell(res.get("rss_mb")),
                ]
            row.append(_cell(_apiserver_ms_per_pod(res)))
        ratios = w.get("ratios")
        if ratios is None:  # a document saved before ratios were recorded
            ratios = _round_ratios([r])
        for label, _, _ in RATIOS:
            q = ratios.get(label)
            cell = "-" if q is None else f"{q['median']:.2f}"
            if q is not None and q["min"] != q["max"]:
                cell += f" ({q['min']:.2f}-{q['max']:.2f})"
            row.append(cell)
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(row)).rstrip() for row in rows]
    # where the null client writes more than the Bindings, say what
    lines += [
        f"null writes, {w['name']}: {w['null_writes']}"
        for w in ran
        if w.get("null_writes", "binding") != "binding"
    ]
    lines += _group_lines(ran)
    lines += [f"skipped {w['name']}: {w['skipped']}" for w in doc["workloads"] if "skipped" in w]
    lines += [
        f"error, {c} on {w['name']}: {res['error'].strip().splitlines()[-1]}"
        for w in ran
        for c, res in w["results"].items()
        if res.get("error")
    ]
    pinned = doc.get("pinned")
    if pinned:
        lines.append(
            f"pinned: etcd and kube-apiserver on CPUs {pinned['apiserver']}, "
            f"the scheduler and the harness on CPUs {pinned['scheduler']}"
        )
    return "\n".join(lines)


def _group_lines(workloads: Sequence[JSON]) -> list[str]:
    """Per pod-group workload and contestant: the seconds from a group's last member
    created to the group bound, and its service time, max and median over the groups."""
    out = []
    for w in workloads:
        cells = []
        for c, res in w["results"].items():
            g = res.get("pod_groups")
            if g:
                cells.append(
                    f"{c} max {_cell(g['max_s'])} median {_cell(g['median_s'])}, "
                    f"service max {_cell(g.get('service_max_s'))} "
                    f"median {_cell(g.get('service_median_s'))} "
                    f"({g['bound']}/{g['groups']} bound)"
                )
        if cells:
            out.append(f"pod groups, {w['name']} {w.get('variant', '')}: " + "; ".join(cells))
    return out


def _apiserver_ms_per_pod(res: JSON) -> float | None:
    """kube-apiserver's and etcd's CPU per bound pod while a contestant ran: the load it
    put on the control plane."""
    cpu, n = res.get("apiserver_cpu_s"), res.get("scheduled")
    if not isinstance(cpu, int | float) or not n:
        return None
    return round(float(cpu) * 1000 / int(n), 2)


def compare(doc: JSON, saved: JSON, tolerance: float = 0.2) -> list[str]:
    """Workloads where a contestant's throughput fell below ``1 - tolerance`` of a saved
    run's (``--compare``): one line each; empty when nothing got slower."""
    before = {w["name"]: w for w in saved.get("workloads") or [] if isinstance(w, dict)}
    out: list[str] = []
    for w in doc["workloads"]:
        old = before.get(w["name"])
        if old is None:
            continue
        for c, res in (w.get("results") or {}).items():
            now = res.get("pods_per_s")
            was = ((old.get("results") or {}).get(c) or {}).get("pods_per_s")
            if not isinstance(now, int | float) or not isinstance(was, int | float):
                continue
            if was > 0 and now < was * (1 - tolerance):
                out.append(f"{w['name']}: {c} slower: {now} pods/s, was {was} ({now / was:.2f}x)")
    return out
