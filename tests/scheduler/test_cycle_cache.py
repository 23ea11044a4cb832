"""The cycle cache changes the work, never the outcome: every scenario here runs twice from
the same seed, with and without the cache, and must place every pod identically (same
nodes, same messages, same round-robin start) while the cached run does hit."""

from __future__ import annotations

import copy
import random
from typing import Any, ClassVar
from unittest import mock

import anyio
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.objects import Node, Pod, decode
from ksched.config import load_config_data
from ksched.framework.interface import (
    FilterPlugin,
    NarrowsNodes,
    PreFilterPlugin,
    PreFilterResult,
)
from ksched.framework.runtime import Framework
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.metrics import SchedulerMetrics
from ksched.plugins import default_registry
from ksched.scheduler.cycle_cache import CycleCache
from ksched.sim import Simulation
from ksched.sim.cluster_file import ClusterFile

REG = default_registry(entry_points=False)
ZONES = ["a", "b", "c"]


def _node(i: int, rng: random.Random) -> dict[str, Any]:
    name = f"n{i:03d}"
    cpu = rng.choice(["2", "4", "8"])
    alloc = {
        "cpu": cpu,
        "memory": rng.choice(["4Gi", "8Gi", "16Gi"]),
        "pods": str(rng.randint(2, 6)),
    }
    taints = []
    if rng.random() < 0.15:
        taints.append({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})
    if rng.random() < 0.2:
        taints.append({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})
    images = []
    if rng.random() < 0.3:
        images.append({"names": ["registry.k8s.io/app:2"], "sizeBytes": 300 * 1024 * 1024})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": rng.choice(ZONES),
                "disk": rng.choice(["ssd", "hdd"]),
            },
        },
        "spec": {"taints": taints, "unschedulable": rng.random() < 0.03},
        "status": {"allocatable": alloc, "capacity": alloc, "images": images},
    }


def _template(kind: str) -> dict[str, Any]:
    c: dict[str, Any] = {
        "name": "c",
        "image": "app:1",
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
    }
    spec: dict[str, Any] = {"schedulerName": "ksched", "containers": [c]}
    labels = {"app": kind}
    if kind == "big":
        c["resources"]["requests"] = {"cpu": "1500m", "memory": "3Gi"}
    elif kind == "besteffort":
        del c["resources"]
    elif kind == "selector":
        spec["nodeSelector"] = {"disk": "ssd"}
    elif kind == "preferred":
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 10,
                        "preference": {
                            "matchExpressions": [
                                {
                                    "key": "topology.kubernetes.io/zone",
                                    "operator": "In",
                                    "values": ["a"],
                                }
                            ]
                        },
                    }
                ]
            }
        }
    elif kind == "tolerant":
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "gpu"}]
    elif kind == "hostport":
        c["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    elif kind == "image":
        c["image"] = "registry.k8s.io/app:2"
    elif kind == "spread":  # not signable: topology spread reaches across nodes
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": labels},
            }
        ]
    elif kind == "anti":  # not signable: inter-pod terms
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": labels},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    elif kind == "nodename":
        spec["nodeName"] = ""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": labels}, "spec": spec}


KINDS = ["plain", "big", "besteffort", "selector", "preferred", "tolerant", "hostport", "image"]


def _pods(rng: random.Random, count: int, kinds: list[str]) -> list[dict[str, Any]]:
    out = []
    for i in range(count):
        # Runs of replicas, as workloads arrive, with other pods interleaved.
        kind = rng.choice(kinds)
        m = copy.deepcopy(_template(kind))
        m["metadata"].update(name=f"p{i:04d}-{kind}", namespace="default", uid=f"uid-{i}")
        if rng.random() < 0.1:
            m["spec"]["priority"] = 1000
        out.append(m)
    return out


def _config(percentage: int | None) -> Any:
    data: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    if percentage is not None:
        data["percentageOfNodesToScore"] = percentage
    return load_config_data(data, "<test>", None)[0]


def _simulation(
    nodes: list[dict[str, Any]],
    cached: bool,
    seed: int,
    percentage: int | None,
    metrics: SchedulerMetrics | None = None,
) -> Simulation:
    cf = ClusterFile(nodes=[(decode(m, Node), m) for m in nodes], pods=[])
    sim = Simulation(cf, _config(percentage), REG, seed=seed, metrics=metrics)
    if not cached:
        for fw in sim.sched.frameworks.values():
            fw.cycle_cache = None
    return sim


def _run(
    nodes: list[dict[str, Any]],
    waves: list[list[dict[str, Any]]],
    *,
    cached: bool,
    seed: int,
    percentage: int | None = None,
    between: Any = None,
) -> tuple[dict[str, str | None], list[int], int]:
    """Schedule ``waves`` of pods one after the other; ``between(sim, k)`` changes the
    cluster after wave k. Returns placements, the start index after each wave, and hits."""
    sim = _simulation(nodes, cached, seed, percentage)
    starts: list[int] = []

    async def main() -> None:
        sim._load()
        for k, wave in enumerate(waves):
            sim.add_pending([PodInfo(decode(m, Pod), m) for m in wave])
            await sim.drive(20 * len(wave))
            starts.append(sim.sched.next_start_node_index)
            if between is not None:
                between(sim, k)

    anyio.run(main)
    placed = {p.key: p.node_name or None for p in sim.cluster.pods.values()}
    hits = sum(
        fw.cycle_cache.hits for fw in sim.sched.frameworks.values() if fw.cycle_cache is not None
    )
    return placed, starts, hits


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("percentage", [None, 30])
def test_same_placements_with_and_without_the_cache(seed: int, percentage: int | None) -> None:
    rng = random.Random(seed)
    nodes = [_node(i, rng) for i in range(120)]
    kinds = [*KINDS, "spread", "anti"] if seed % 2 else KINDS
    waves = [_pods(rng, 260, KINDS), _pods(rng, 260, kinds)]
    for w, wave in enumerate(waves):
        for m in wave:
            m["metadata"]["name"] += f"-w{w}"
            m["metadata"]["uid"] += f"-w{w}"
    plain, plain_starts, _ = _run(nodes, waves, cached=False, seed=seed, percentage=percentage)
    cached, cached_starts, hits = _run(nodes, waves, cached=True, seed=seed, percentage=percentage)
    assert cached == plain
    assert cached_starts == plain_starts
    # The cache did the work for most pods (in the second wave of odd seeds, once a pod
    # with anti-affinity terms runs, no pod signs: inter-pod terms reach across nodes).
    assert hits > 100
    assert any(n is None for n in plain.values())  # the clusters fill up: failures too


def change_node(sim: Simulation, by_name: dict[str, Any], name: str, edit: Any) -> None:
    """``edit`` node ``name``'s manifest (kept in ``by_name``) and report the update to the
    scheduler, as its informer would."""
    old = by_name[name]
    new = copy.deepcopy(old)
    edit(new)
    by_name[name] = new
    sim.sched.on_node_update(decode(old, Node), decode(new, Node))


def _node_changes(nodes: list[dict[str, Any]]) -> Any:
    """Between waves: taint one node, give another the image, shrink a third, drop a fourth
    (each a node object change, as the informer would report it)."""
    by_name = {m["metadata"]["name"]: m for m in nodes}

    def between(sim: Simulation, k: int) -> None:
        sched = sim.sched
        names = sorted(by_name)[4 * k : 4 * k + 4]

        def change(name: str, edit: Any) -> None:
            change_node(sim, by_name, name, edit)

        change(
            names[0],
            lambda m: m["spec"]["taints"].append(
                {"key": "x", "value": "y", "effect": "NoSchedule"}
            ),
        )
        change(
            names[1],
            lambda m: m["status"]["images"].append(
                {"names": ["registry.k8s.io/app:2"], "sizeBytes": 900 * 1024 * 1024}
            ),
        )
        small = {"cpu": "500m", "memory": "1Gi", "pods": "2"}
        change(names[2], lambda m: m["status"].update(allocatable=small, capacity=small))
        sched.on_node_delete(decode(by_name.pop(names[3]), Node))

    return between


def test_same_placements_when_nodes_change_between_pods() -> None:
    rng = random.Random(42)
    nodes = [_node(i, rng) for i in range(120)]
    waves = []
    for w in range(4):
        wave = _pods(rng, 60, KINDS)
        for m in wave:
            m["metadata"]["name"] += f"-w{w}"
            m["metadata"]["uid"] += f"-w{w}"
        waves.append(wave)
    plain = _run(nodes, waves, cached=False, seed=3, between=_node_changes(copy.deepcopy(nodes)))
    cached = _run(nodes, waves, cached=True, seed=3, between=_node_changes(copy.deepcopy(nodes)))
    assert cached[:2] == plain[:2]
    assert cached[2] > 50


class _Unsigned(FilterPlugin):
    """A third-party Filter plugin without ``sign_pod``: its pods take the full cycle."""

    name = "Unsigned"

    def filter(self, state: Any, pod: PodInfo, node: Any) -> None:
        return None


def test_a_plugin_that_cannot_sign_keeps_every_pod_on_the_full_cycle() -> None:
    reg = default_registry(entry_points=False)
    reg.register("Unsigned", _Unsigned)
    cfg, _ = load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"plugins": {"filter": {"enabled": [{"name": "Unsigned"}]}}}],
        },
        "<test>",
        None,
    )
    rng = random.Random(1)
    nodes = [_node(i, rng) for i in range(30)]
    cf = ClusterFile(nodes=[(decode(m, Node), m) for m in nodes], pods=[])
    sim = Simulation(cf, cfg, reg, seed=0)
    fw = next(iter(sim.sched.frameworks.values()))
    pods = [PodInfo(decode(m, Pod), m) for m in _pods(rng, 20, ["plain"])]
    assert fw.sign_pod(pods[0]) is None

    async def main() -> None:
        sim._load()
        sim.add_pending(pods)
        await sim.drive(100)

    anyio.run(main)
    assert isinstance(fw.cycle_cache, CycleCache)
    assert fw.cycle_cache.hits == 0
    assert sum(1 for p in sim.cluster.pods.values() if p.node_name) == 20


def test_signatures_separate_what_plugins_read() -> None:
    sim = _simulation([_node(0, random.Random(0))], True, 0, None)
    fw = next(iter(sim.sched.frameworks.values()))

    def sig(kind: str, name: str = "x") -> Any:
        m = copy.deepcopy(_template(kind))
        m["metadata"].update(name=name, namespace="default", uid=name)
        return fw.sign_pod(PodInfo(decode(m, Pod), m))

    assert sig("plain", "a") == sig("plain", "b")  # replicas share one signature
    distinct = {sig(k) for k in KINDS}
    assert len(distinct) == len(KINDS)
    assert sig("spread") is None
    assert sig("anti") is None


def _extension_point_counts(cached: bool) -> tuple[dict[tuple[str, str], float], int, int]:
    """(extension point, status) -> observations, the pods placed and the cache hits, of 30
    replicas on 40 nodes with metrics attached."""
    rng = random.Random(7)
    m = SchedulerMetrics(seed=0, process_metrics=False)
    sim = _simulation([_node(i, rng) for i in range(40)], cached, 0, None, m)
    pods = [PodInfo(decode(p, Pod), p) for p in _pods(rng, 30, ["plain"])]

    async def main() -> None:
        sim._load()
        sim.add_pending(pods)
        await sim.drive(100)

    anyio.run(main)
    fw = next(iter(sim.sched.frameworks.values()))
    counts = {
        (s.labels["extension_point"], s.labels["status"]): s.value
        for fam in m.registry.collect()
        if fam.name == "scheduler_framework_extension_point_duration_seconds"
        for s in fam.samples
        if s.name.endswith("_count") and s.labels["profile"] == fw.profile_name
    }
    scheduled = m.registry.get_sample_value(
        "scheduler_schedule_attempts_total",
        {"profile": fw.profile_name, "result": "scheduled"},
    )
    placed = sum(1 for p in sim.cluster.pods.values() if p.node_name)
    assert scheduled == placed > 0
    hits = fw.cycle_cache.hits if isinstance(fw.cycle_cache, CycleCache) else 0
    return counts, placed, hits


def test_cached_cycles_are_observed_at_every_extension_point_a_full_cycle_is() -> None:
    """Upstream observes every pod's cycle at each extension point it goes through; a cycle
    the cache answers goes through PreFilter, Filter, PreScore and Score too (the framework
    takes the known results), so the series and their counts are the full cycle's."""
    cached, placed, hits = _extension_point_counts(True)
    full, placed_full, no_hits = _extension_point_counts(False)
    assert hits > placed // 2 and no_hits == 0
    assert placed == placed_full
    for point in ("PreFilter", "Filter", "PreScore", "Score", "Reserve", "Permit"):
        assert cached.get((point, "Success")) == placed, (point, cached)
    for point in ("PreBind", "Bind", "PostBind"):
        assert cached.get((point, "Success")) == placed, (point, cached)
    assert cached.get(("PreEnqueue", "Success"), 0) >= placed
    # a pod is signed for the cache (upstream's Sign point: only with batching on)
    assert cached.pop(("Sign", "Success")) == placed
    assert ("Sign", "Success") not in full
    assert cached == full


# -- cycle by cycle: the cache's answer is selected by the full cycle's own routine ---------
_Cycle = tuple[str, str, str, tuple[str, ...] | None, int]


def _cycles(
    nodes: list[dict[str, Any]],
    waves: list[list[dict[str, Any]]],
    *,
    cached: bool,
    seed: int,
    percentage: int | None,
    between: Any = None,
) -> tuple[list[_Cycle], int]:
    """Every scheduling cycle's (pod, chosen node, message, nodes scored in order, next
    round-robin start), and the cache hits."""
    from ksched.scheduler import schedule_one

    cycles: list[_Cycle] = []
    scored: list[tuple[str, ...] | None] = [None]
    real_schedule_pod = schedule_one._schedule_pod
    real_prioritize = schedule_one.prioritize_nodes

    async def prioritize(a: Any, feasible: Any, *rest: Any) -> Any:
        infos = a.sched.snapshot.node_infos
        scored[0] = tuple(infos[int(r)].name for r in feasible)
        return await real_prioritize(a, feasible, *rest)

    async def schedule_pod(a: Any) -> Any:
        scored[0] = None
        res = await real_schedule_pod(a)
        cycles.append((a.pod.key, res.node, res.message, scored[0], a.rotation.next_start))
        return res

    with (
        mock.patch.object(schedule_one, "_schedule_pod", schedule_pod),
        mock.patch.object(schedule_one, "prioritize_nodes", prioritize),
    ):
        _, _, hits = _run(
            nodes, waves, cached=cached, seed=seed, percentage=percentage, between=between
        )
    return cycles, hits


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    num_nodes=st.integers(8, 160),
    percentage=st.sampled_from([None, 1, 30, 100]),
    change_nodes=st.booleans(),
    cross_node=st.booleans(),
)
def test_cache_and_full_cycle_choose_the_same_nodes_every_cycle(
    seed: int, num_nodes: int, percentage: int | None, change_nodes: bool, cross_node: bool
) -> None:
    """Over random clusters, cycle by cycle: the same nodes scored (in the same order, so
    the same tie-break), the same choice or FitError text, the same next start index."""
    rng = random.Random(seed)
    nodes = [_node(i, rng) for i in range(num_nodes)]
    waves = [
        _pods(rng, 40, KINDS),
        _pods(rng, 40, [*KINDS, "spread", "anti"] if cross_node else KINDS),
    ]
    for w, wave in enumerate(waves):
        for m in wave:
            m["metadata"]["name"] += f"-w{w}"
            m["metadata"]["uid"] += f"-w{w}"
    kw: dict[str, Any] = {"seed": seed, "percentage": percentage}

    def between() -> Any:
        # four nodes changed after each of the two waves, one of them dropped: 9 at least
        return _node_changes(copy.deepcopy(nodes)) if change_nodes and num_nodes >= 9 else None

    full, _ = _cycles(nodes, waves, cached=False, between=between(), **kw)
    cached, hits = _cycles(nodes, waves, cached=True, between=between(), **kw)
    assert cached == full
    assert hits > 0  # the cache answered some of those cycles
    assert any(c[3] is not None and len(c[3]) > 1 for c in full)  # and some were scored


class _PerNodeDisk(FilterPlugin):
    """A signable third-party Filter plugin with no batch form: the full cycle then walks
    the nodes one by one, the cache still knows every verdict at once."""

    name = "PerNodeDisk"

    def sign_pod(self, pod: PodInfo) -> Any:
        return b""

    def filter(self, state: Any, pod: PodInfo, node: Any) -> Status | None:
        if node.node.metadata.labels.get("disk") == "hdd":
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "hdd")
        return None


def _drive(
    cfg: Any, reg: Any, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], **kw: Any
) -> tuple[Simulation, Framework]:
    """Schedule ``pods`` on ``nodes`` under ``cfg`` (its only profile, with the cycle cache
    unless ``cached=False``), driving at most ``steps`` (100) steps."""
    cf = ClusterFile(nodes=[(decode(m, Node), m) for m in nodes], pods=[])
    sim = Simulation(cf, cfg, reg, seed=kw.get("seed", 0))
    fw = next(iter(sim.sched.frameworks.values()))
    if not kw.get("cached", True):
        fw.cycle_cache = None

    async def main() -> None:
        sim._load()
        sim.add_pending([PodInfo(decode(m, Pod), m) for m in pods])
        await sim.drive(kw.get("steps", 100))

    anyio.run(main)
    return sim, fw


@pytest.mark.parametrize("ssd", [99, 100, 101])
def test_a_per_node_filter_walk_moves_the_start_as_the_cache_does(ssd: int) -> None:
    """Exactly, one fewer and one more than numFeasibleNodesToFind (100 of 120) nodes pass,
    the hdd ones first in the walk and the last: the next start index is the same."""
    reg = default_registry(entry_points=False)
    reg.register("PerNodeDisk", _PerNodeDisk)
    cfg, _ = load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {
                    "schedulerName": "ksched",
                    "plugins": {"filter": {"enabled": [{"name": "PerNodeDisk"}]}},
                }
            ],
        },
        "<test>",
        None,
    )
    rng = random.Random(5)
    nodes = [_node(i, rng) for i in range(120)]
    for i, m in enumerate(nodes):
        m["spec"] = {"taints": [], "unschedulable": False}
        m["status"]["allocatable"] = m["status"]["capacity"] = {
            "cpu": "64",
            "memory": "64Gi",
            "pods": "100",
        }
        m["metadata"]["labels"]["disk"] = "ssd" if 5 <= i < 5 + ssd else "hdd"
    pods = _pods(rng, 6, ["plain"])
    starts = {}
    for cached in (False, True):
        sim, fw = _drive(cfg, reg, nodes, pods, cached=cached)
        starts[cached] = sim.sched.next_start_node_index
        if cached:
            assert fw.cycle_cache is not None and fw.cycle_cache.hits > 0
    assert starts[True] == starts[False]


def test_refreshed_rows_keep_the_plugin_weights() -> None:
    """After a binding the cache re-scores only the changed rows (with the per-node forms
    when they are few): with weights other than 1, every placement must still match the
    full cycle's."""
    reg = default_registry(entry_points=False)
    data = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "plugins": {
                    "score": {
                        "enabled": [
                            {"name": "NodeResourcesFit", "weight": 7},
                            {"name": "NodeResourcesBalancedAllocation", "weight": 3},
                            {"name": "ImageLocality", "weight": 5},
                        ]
                    }
                }
            }
        ],
    }
    rng = random.Random(11)
    nodes = [_node(i, rng) for i in range(80)]
    pods = _pods(rng, 220, ["plain", "big", "image", "plain"])

    def run(cached: bool) -> tuple[dict[str, str | None], int]:
        cfg, _ = load_config_data(copy.deepcopy(data), "<test>", None)
        sim, fw = _drive(cfg, reg, nodes, pods, cached=cached, seed=5, steps=20 * len(pods))
        hits = fw.cycle_cache.hits if fw.cycle_cache is not None else 0
        return {p.key: p.node_name or None for p in sim.cluster.pods.values()}, hits

    plain, _ = run(False)
    cached, hits = run(True)
    assert cached == plain
    assert hits > 100
    assert sum(1 for n in plain.values() if n) > 100


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_rows_rescored_after_a_binding_are_upstreams_batch_rescores(version: str) -> None:
    """Each refresh that re-scores rows (the node the previous replica went to, as upstream's
    rescoreHintedNode re-scores it) counts one ``batch_rescore_attempts_total`` and one
    duration observation; 1.36 has no such families."""
    from ksched.features import set_feature_gates

    rng = random.Random(7)
    m = SchedulerMetrics(seed=0, process_metrics=False, features=set_feature_gates([], [version]))
    sim = _simulation([_node(i, rng) for i in range(10)], True, 0, None, m)
    pods = [PodInfo(decode(p, Pod), p) for p in _pods(rng, 10, ["plain"])]

    async def main() -> None:
        sim._load()
        sim.add_pending(pods)
        await sim.drive(100)

    anyio.run(main)
    profile = {"profile": next(iter(sim.sched.frameworks))}
    attempts = m.registry.get_sample_value("scheduler_batch_rescore_attempts_total", profile)
    observed = m.registry.get_sample_value(
        "scheduler_batch_rescore_duration_seconds_count", profile
    )
    if version == "1.36":
        assert attempts is None and observed is None
    else:
        assert attempts is not None and attempts >= 5  # nearly every replica after the first
        assert observed == attempts


def _sized(name: str, cpu: str, priority: int = 0, kind: str = "plain") -> dict[str, Any]:
    m = _template(kind)
    m["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": "64Mi"}}
    m["spec"]["priority"] = priority
    m["metadata"].update(name=name, namespace="default", uid=f"uid-{name}")
    return m


def _full_nodes(count: int, seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``count`` 4-CPU nodes and the pods that take 3 CPUs of each: a 3500m preemptor then
    fits nowhere without evicting."""
    rng = random.Random(seed)
    nodes = [_node(i, rng) for i in range(count)]
    for m in nodes:
        alloc = {"cpu": "4", "memory": "16Gi", "pods": "20"}
        m["status"].update(allocatable=alloc, capacity=dict(alloc))
        m["spec"] = {"taints": [], "unschedulable": False}
    return nodes, [_sized(f"fill-{i:03d}", "1500m") for i in range(2 * count)]


@pytest.mark.parametrize("percentage", [None, 5, 100])
@pytest.mark.parametrize("kind", ["plain", "spread", "hostport"])
def test_cached_cycles_with_pods_nominated_elsewhere_match_the_full_cycle(
    percentage: int | None, kind: str
) -> None:
    """Preemptors nominated to nodes whose victims are still terminating: the pods
    scheduled meanwhile take the cache's verdicts except on the nominated nodes, where the
    nominated pods count as the full cycle counts them (their resources, their host ports,
    their labels for spreading). Cycle by cycle the same choices, and the cache answered
    cycles with nominations outstanding (the fast path ran, and changed verdicts)."""
    from ksched.scheduler import schedule_one

    nodes, fill = _full_nodes(24, 7)
    late = [_sized(f"pre-{i}", "3500m", priority=1000, kind=kind) for i in range(3)]
    late += [_sized(f"small-{i:03d}", "300m", kind=kind) for i in range(60)]
    real = schedule_one._with_nominated
    calls: list[int] = []

    def counting(fw: Any, known: Any, pod: Any, snap: Any, nominated: Any) -> Any:
        out = real(fw, known, pod, snap, nominated)
        if out is not None:
            calls.append(int(np.count_nonzero(out.feasible != known.feasible)))
        return out

    kw: dict[str, Any] = {"seed": 3, "percentage": percentage}
    full, _ = _cycles(nodes, [fill, late], cached=False, **kw)
    with mock.patch.object(schedule_one, "_with_nominated", counting):
        cached, hits = _cycles(nodes, [fill, late], cached=True, **kw)
    assert cached == full
    assert calls and hits >= len(calls)
    assert any(calls)  # some nominated node's verdict was not the cache's
    # the preemptors did get nominated and placed
    assert sum(1 for c in full if c[0].startswith("default/pre-") and c[1]) == 3


@pytest.mark.parametrize("most", [2, 3])
def test_more_nominated_rows_than_the_most_leave_the_pod_to_the_full_cycle(most: int) -> None:
    """Three preemptors nominated at once: with ``NOMINATED_ROWS_MAX`` 3 the cache's
    answers are judged again on their three rows; with 2 the full cycle decides those
    cycles. The same choices either way."""
    from ksched.scheduler import schedule_one

    nodes, fill = _full_nodes(24, 7)
    late = [_sized(f"pre-{i}", "3500m", priority=1000) for i in range(3)]
    late += [_sized(f"small-{i:03d}", "300m") for i in range(60)]
    judged: list[int] = []  # rows judged again, per answer

    def judging(fw: Any, known: Any, pod: Any, snap: Any, nominated: Any) -> Any:
        judged.append(len(nominated))
        return real(fw, known, pod, snap, nominated)

    real = schedule_one._with_nominated
    kw: dict[str, Any] = {"seed": 3, "percentage": None}
    full, _ = _cycles(nodes, [fill, late], cached=False, **kw)
    with (
        mock.patch.object(schedule_one, "NOMINATED_ROWS_MAX", most),
        mock.patch.object(schedule_one, "_with_nominated", judging),
    ):
        cached, _ = _cycles(nodes, [fill, late], cached=True, **kw)
    assert cached == full
    if most == 3:
        assert judged.count(3) > 10
    else:
        assert not judged


def _field_pod(name: str, terms: list[list[dict[str, Any]]], kind: str = "plain") -> dict[str, Any]:
    m = _sized(name, "100m", kind=kind)
    m["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": t} for t in terms]
            }
        }
    }
    return m


def _name_in(*names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def _naming_pods(rng: random.Random, names: list[str], count: int) -> list[dict[str, Any]]:
    """Pods whose required terms name one node, several, conflicting ones, or also a
    term that names none (with host ports now and then: a per-node Filter that rejects)."""
    any_node = [{"key": "metadata.name", "operator": "NotIn", "values": ["nowhere"]}]
    pods: list[dict[str, Any]] = []
    for i in range(count):
        pick = rng.random()
        if pick < 0.5:
            terms = [[_name_in(rng.choice(names))]]
        elif pick < 0.7:  # one term per node (a name requirement takes one value)
            terms = [[_name_in(n)] for n in rng.sample(names, rng.randint(2, 5))]
        elif pick < 0.75:
            terms = [[_name_in(names[0]), _name_in(names[1])]]  # ANDed: a conflict
        elif pick < 0.9:
            terms = [[_name_in(rng.choice(names))], any_node]  # one term names no node
        else:
            terms = [any_node]
        pods.append(_field_pod(f"f-{i:03d}", terms, kind=rng.choice(["plain", "hostport"])))
    return pods


@pytest.mark.parametrize("seed", range(4))
def test_few_candidates_judged_per_node_filter_as_the_batch_walk(seed: int) -> None:
    """Nodes a PreFilter narrowed to a few are judged with the per-node Filter forms when
    they all pass; every Filter outcome (nodes, count processed, rejections and their
    plugins) is the batch walk's, over nodes that fail (taints, cordons, host ports,
    full nodes: the batch walk then decides) and nodes that pass."""
    from ksched.framework import runtime

    rng = random.Random(seed)
    nodes = [_node(i, rng) for i in range(30)]
    pods = _naming_pods(rng, [m["metadata"]["name"] for m in nodes], 120)
    outcomes: list[Any] = []
    real = Framework.find_feasible

    def recording(fw: Any, *args: Any, **kw: Any) -> Any:
        out = real(fw, *args, **kw)
        st = out.statuses
        outcomes.append(
            (
                out.feasible.tolist(),
                out.processed,
                sorted(out.unschedulable_plugins),
                sorted((k, v.message(), v.plugin) for k, v in st.statuses.items()),
            )
        )
        return out

    answered: list[bool] = []
    real_few = Framework._few_all_pass

    def few(fw: Any, *args: Any) -> Any:
        out = real_few(fw, *args)
        answered.append(not isinstance(out, dict))
        return out

    kw: dict[str, Any] = {"seed": seed, "percentage": None}
    with mock.patch.object(Framework, "find_feasible", recording):
        with mock.patch.object(runtime, "FEW_CANDIDATES", 0):
            batch, _ = _cycles(nodes, [pods], cached=False, **kw)
        batch_outcomes, outcomes[:] = list(outcomes), []
        with mock.patch.object(Framework, "_few_all_pass", few):
            per_node, _ = _cycles(nodes, [pods], cached=False, **kw)
    assert per_node == batch
    assert outcomes == batch_outcomes
    assert any(answered) and not all(answered)  # both ways were taken


class _Flaky(FilterPlugin):
    """A per-node third-party Filter plugin that raises on some nodes and rejects on
    others, noting each call."""

    name = "Flaky"
    calls: ClassVar[list[tuple[str, str]]] = []

    def filter(self, state: Any, pod: PodInfo, node: Any) -> Status | None:
        name = node.node.metadata.name
        self.calls.append((pod.pod.metadata.name, name))
        if int(name[1:]) % 7 == 3:
            raise RuntimeError(f"flaky on {name}")
        if int(name[1:]) % 5 == 1:
            return Status(Code.UNSCHEDULABLE, "flaky says no")
        return None


@pytest.mark.parametrize("first", [True, False])
def test_a_raising_filter_plugin_is_called_once_per_node(first: bool) -> None:
    """A Filter plugin that raises on a few narrowed candidates (judged per node first) is
    called once per node of the attempt, not again by the batch walk or its diagnosis:
    first or last among the Filter plugins, every Filter outcome (nodes, count processed,
    rejections, the error) is the batch walk's alone, and so is every placement."""
    from ksched.framework import runtime

    reg = default_registry(entry_points=False)
    reg.register("Flaky", _Flaky)
    in_tree = ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"]
    in_tree += ["NodePorts", "NodeResourcesFit"]
    filters: dict[str, Any] = (
        {"enabled": [{"name": n} for n in ["Flaky", *in_tree]], "disabled": [{"name": "*"}]}
        if first
        else {"enabled": [{"name": "Flaky"}]}
    )
    data = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "ksched", "plugins": {"filter": filters}}],
    }
    rng = random.Random(4)
    nodes = [_node(i, rng) for i in range(30)]
    pods = _naming_pods(rng, [m["metadata"]["name"] for m in nodes], 60)
    outcomes: list[Any] = []
    twice: list[tuple[str, str]] = []
    real = Framework.find_feasible

    def recording(fw: Any, *args: Any, **kw: Any) -> Any:
        _Flaky.calls.clear()
        out = real(fw, *args, **kw)
        twice.extend(c for c in set(_Flaky.calls) if _Flaky.calls.count(c) > 1)
        st, absent = out.statuses, out.statuses.absent
        outcomes.append(
            (
                out.feasible.tolist(),
                out.processed,
                sorted(out.unschedulable_plugins),
                sorted((k, v.code, v.message(), v.plugin) for k, v in st.statuses.items()),
                None if absent is None else (absent.code, absent.message(), absent.plugin),
            )
        )
        return out

    placed = []
    for few in (0, runtime.FEW_CANDIDATES):
        outcomes.clear()
        cfg, _ = load_config_data(copy.deepcopy(data), "<test>", None)
        with (
            mock.patch.object(runtime, "FEW_CANDIDATES", few),
            mock.patch.object(Framework, "find_feasible", recording),
        ):
            sim, _ = _drive(cfg, reg, nodes, pods, cached=False)
        placed.append(({p.key: p.node_name for p in sim.cluster.pods.values()}, list(outcomes)))
    assert not twice
    assert placed[1] == placed[0]
    errors = [o[4] for o in placed[0][1] if o[4] is not None]
    assert errors and all("flaky on" in e[1] and e[2] == "Flaky" for e in errors)
    assert any("Flaky" in o[2] for o in placed[0][1])  # it rejected too
    assert any(o[0] for o in placed[0][1])  # and passed


@pytest.mark.parametrize("seed", range(3))
def test_pods_naming_their_nodes_skip_signing_and_place_as_the_full_cycle(seed: int) -> None:
    """Daemonset-style pods (a metadata.name term) are never signed: NodeAffinity's
    PreFilter narrows their nodes, so the cache could not answer them anyway. Pods with a
    term that names no node, or names conflicting ones, are mixed in: the first still
    sign, and every cycle is the full cycle's (with the shortcut and without it)."""
    from ksched.plugins.nodeaffinity import NodeAffinity, named_nodes

    rng = random.Random(seed)
    nodes = [_node(i, rng) for i in range(30)]
    pods = _naming_pods(rng, [m["metadata"]["name"] for m in nodes], 80)
    signed: list[str] = []
    real_sign = Framework.sign_pod_per_cycle

    def sign(fw: Any, pod: PodInfo, sampled: bool = False) -> Any:
        signed.append(pod.pod.metadata.name)
        return real_sign(fw, pod, sampled)

    kw: dict[str, Any] = {"seed": seed, "percentage": None}
    with mock.patch.object(NodeAffinity, "narrows_nodes", lambda self, pod: False):
        full, _ = _cycles(nodes, [pods], cached=True, **kw)
    with mock.patch.object(Framework, "sign_pod_per_cycle", sign):
        fast, _ = _cycles(nodes, [pods], cached=True, **kw)
    assert fast == full
    by_name = {m["metadata"]["name"]: PodInfo(decode(m, Pod), m) for m in pods}
    narrowed = {n for n, p in by_name.items() if named_nodes(p) is not None}
    assert narrowed and set(by_name) - narrowed  # both kinds were scheduled
    assert not narrowed & set(signed)
    assert set(by_name) - narrowed <= set(signed)
    assert any(not c[1] for c in full)  # the conflicting terms failed


class _Pinning(PreFilterPlugin):
    """A third-party PreFilter plugin: a pod labelled ``pin`` goes to the node it names."""

    name = "Pinning"

    def sign_pod(self, pod: PodInfo) -> Any:
        return pod.pod.metadata.labels.get("pin", "")

    def pre_filter(
        self, state: Any, pod: PodInfo, nodes: Any
    ) -> tuple[PreFilterResult | None, Status | None]:
        pin = pod.pod.metadata.labels.get("pin")
        if pin is None:
            return None, Status(Code.SKIP)
        return PreFilterResult({pin}), None


class _PinningThatSays(_Pinning):
    """``_Pinning`` that declares its narrowing (``NarrowsNodes``), without inheriting it."""

    name = "PinningThatSays"

    def narrows_nodes(self, pod: PodInfo) -> bool:
        return "pin" in pod.pod.metadata.labels


class _PinningThatErrs(_Pinning):
    """``_Pinning`` whose ``narrows_nodes`` raises: taken as no hint."""

    name = "PinningThatErrs"

    def narrows_nodes(self, pod: PodInfo) -> bool:
        raise RuntimeError("no idea")


@pytest.mark.parametrize(
    ("plugin", "says"), [(_Pinning, False), (_PinningThatSays, True), (_PinningThatErrs, False)]
)
def test_a_third_party_narrows_nodes_keeps_its_pods_unsigned(
    plugin: type[_Pinning], says: bool
) -> None:
    """A profile's PreFilter plugin that is ``NarrowsNodes`` spares the pods it narrows the
    signing (the cache could not answer them); one that is not, or whose hint raises, has
    them signed (their entry is then None). Either way every pod lands where the full
    cycle puts it."""
    reg = default_registry(entry_points=False)
    reg.register(plugin.name, plugin)
    data = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "ksched",
                "plugins": {"preFilter": {"enabled": [{"name": plugin.name}]}},
            }
        ],
    }
    rng = random.Random(2)
    nodes = [_node(i, rng) for i in range(20)]
    for m in nodes:
        m["spec"] = {"taints": [], "unschedulable": False}
    pods = _pods(rng, 30, ["plain"])
    for i, m in enumerate(pods[::3]):
        m["metadata"]["labels"]["pin"] = nodes[i]["metadata"]["name"]
    pinned = {m["metadata"]["name"] for m in pods if "pin" in m["metadata"]["labels"]}
    placed: dict[bool, dict[str, str | None]] = {}
    signed: list[str] = []
    real_sign = Framework.sign_pod_per_cycle

    def sign(fw: Any, pod: PodInfo, sampled: bool = False) -> Any:
        signed.append(pod.pod.metadata.name)
        return real_sign(fw, pod, sampled)

    for cached in (False, True):
        cfg, _ = load_config_data(copy.deepcopy(data), "<test>", None)
        with mock.patch.object(Framework, "sign_pod_per_cycle", sign):
            sim, fw = _drive(cfg, reg, nodes, pods, cached=cached)
        placed[cached] = {p.pod.metadata.name: p.node_name for p in sim.cluster.pods.values()}
        if cached:
            assert fw.cycle_cache is not None and fw.cycle_cache.hits > 0
    assert placed[True] == placed[False]
    assert all(placed[True][n] for n in pinned)
    assert isinstance(plugin(), NarrowsNodes) is (plugin is not _Pinning)
    assert not pinned & set(signed) if says else pinned <= set(signed)
    assert set(placed[True]) - pinned <= set(signed)


def test_an_erring_nominated_node_leaves_the_pod_to_the_full_cycle() -> None:
    """A Filter error on a node with nominated pods: the cache does not answer, and the
    full cycle decides (it may not even reach that node, or judge it by its batch first
    pass), so both runs go the same way."""
    from ksched.scheduler import schedule_one

    nodes, fill = _full_nodes(12, 11)
    late = [_sized("pre-0", "3500m", priority=1000)]
    late += [_sized(f"small-{i:03d}", "300m") for i in range(20)]
    error = Status(Code.ERROR, "nominated node exploded")

    def erring(*args: Any, **kw: Any) -> Status:
        return error

    real = schedule_one._with_nominated
    answers: list[bool] = []

    def counting(*args: Any) -> Any:
        out = real(*args)
        answers.append(out is not None)
        return out

    kw: dict[str, Any] = {"seed": 5, "percentage": None}
    with mock.patch.object(Framework, "run_filter_with_nominated_pods", erring):
        full, _ = _cycles(nodes, [fill, late], cached=False, **kw)
        with mock.patch.object(schedule_one, "_with_nominated", counting):
            cached, _ = _cycles(nodes, [fill, late], cached=True, **kw)
    assert cached == full
    assert answers and not any(answers)
