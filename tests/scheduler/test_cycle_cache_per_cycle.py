"""Pods with inter-pod affinity or topology spread on the cycle cache (``PER_CYCLE``): the
cache answers the node-local plugins and runs InterPodAffinity and PodTopologySpread every
cycle. Over seeded random clusters and pod sequences (required and preferred affinity and
anti-affinity over three topology keys and two namespaces; spread constraints with every
whenUnsatisfiable, minDomains, node inclusion policy and matchLabelKeys; system-default
spreading; nodes relabelled, tainted and dropped and pods deleted between waves), every
cycle must be the full cycle's: the same nodes scored in the same order with the same
totals, the same choice or FitError text, the same next round-robin start."""

from __future__ import annotations

import copy
import random
from typing import Any
from unittest import mock

import anyio
import pytest

from ksched.api.objects import Node, Pod, decode
from ksched.framework.interface import PER_CYCLE
from ksched.framework.types import PodInfo
from ksched.plugins import default_registry, names
from ksched.scheduler import schedule_one
from ksched.scheduler.cycle_cache import CycleCache
from ksched.sim import Simulation
from ksched.sim.cluster_file import ClusterFile
from tests.scheduler.test_cycle_cache import _config, change_node

REG = default_registry(entry_points=False)
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
KEYS = [HOST, ZONE, REGION]
APPS = ["web", "db", "cache"]
NAMESPACES = ["default", "other"]


def _node(i: int, rng: random.Random) -> dict[str, Any]:
    name = f"n{i:03d}"
    labels = {HOST: name, "disk": rng.choice(["ssd", "hdd"])}
    if rng.random() < 0.9:  # some nodes lack a topology key: not counted, or filtered out
        labels[ZONE] = rng.choice(["a", "b", "c", "d"])
    if rng.random() < 0.85:
        labels[REGION] = rng.choice(["r1", "r2"])
    taints = []
    if rng.random() < 0.12:
        taints.append({"key": "dedicated", "value": "x", "effect": "NoSchedule"})
    alloc = {"cpu": rng.choice(["2", "4"]), "memory": "16Gi", "pods": str(rng.randint(3, 8))}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def _selector(rng: random.Random) -> dict[str, Any]:
    r = rng.random()
    if r < 0.6:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    if r < 0.85:
        return {
            "matchExpressions": [
                {"key": "app", "operator": "In", "values": rng.sample(APPS, rng.randint(1, 2))}
            ]
        }
    return {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}


def _term(rng: random.Random) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": _selector(rng), "topologyKey": rng.choice(KEYS)}
    r = rng.random()
    if r < 0.15:
        t["namespaces"] = rng.sample(NAMESPACES, rng.randint(1, 2))
    elif r < 0.25:
        t["namespaceSelector"] = {}  # every namespace
    return t


def _affinity(rng: random.Random) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        part: dict[str, Any] = {}
        if rng.random() < 0.3:
            part["requiredDuringSchedulingIgnoredDuringExecution"] = [
                _term(rng) for _ in range(rng.randint(1, 2))
            ]
        if rng.random() < 0.35:
            part["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": _term(rng)}
                for _ in range(rng.randint(1, 2))
            ]
        if part:
            out[kind] = part
    return out


def _spread(rng: random.Random) -> list[dict[str, Any]]:
    out = []
    seen = set()
    for _ in range(rng.randint(1, 2)):
        key = rng.choice(KEYS)
        when = rng.choice(["DoNotSchedule", "ScheduleAnyway"])
        if (key, when) in seen:
            continue
        seen.add((key, when))
        c: dict[str, Any] = {
            "maxSkew": rng.choice([1, 1, 2, 3]),
            "topologyKey": key,
            "whenUnsatisfiable": when,
            "labelSelector": _selector(rng),
        }
        if when == "DoNotSchedule" and rng.random() < 0.3:
            c["minDomains"] = rng.randint(1, 5)
        if rng.random() < 0.3:
            c["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.3:
            c["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.25:
            c["matchLabelKeys"] = ["version"]
        out.append(c)
    return out


def _template(rng: random.Random) -> dict[str, Any]:
    """A workload's pod: random labels, requests, node selection, tolerations, and (most
    of the time) inter-pod terms or spread constraints, or a ReplicaSet owner (system
    default spreading over its labels)."""
    app = rng.choice(APPS)
    labels = {"app": app, "version": rng.choice(["v1", "v2"])}
    if rng.random() < 0.4:
        labels["tier"] = rng.choice(["fe", "be"])
    c = {
        "name": "c",
        "image": "app:1",
        "resources": {"requests": {"cpu": rng.choice(["100m", "300m", "700m"])}},
    }
    spec: dict[str, Any] = {"schedulerName": "ksched", "containers": [c]}
    meta: dict[str, Any] = {"labels": labels, "namespace": rng.choice(NAMESPACES)}
    r = rng.random()
    if r < 0.35:
        spec["affinity"] = _affinity(rng)
    elif r < 0.65:
        spec["topologySpreadConstraints"] = _spread(rng)
    elif r < 0.8:
        spec["affinity"] = _affinity(rng)
        spec["topologySpreadConstraints"] = _spread(rng)
    if rng.random() < 0.5:
        meta["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"rs-{app}", "uid": app}
        ]
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"disk": "ssd"}
    if rng.random() < 0.2:
        spec.setdefault("affinity", {})["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b"]}]}
                ]
            }
        }
    if rng.random() < 0.2:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if rng.random() < 0.1:
        spec["priority"] = 100
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _wave(rng: random.Random, count: int, tag: str) -> list[dict[str, Any]]:
    """Runs of replicas of random templates (so signatures repeat), ``count`` pods."""
    out: list[dict[str, Any]] = []
    while len(out) < count:
        t = _template(rng)
        for _ in range(rng.randint(1, 6)):
            m = copy.deepcopy(t)
            i = len(out)
            m["metadata"].update(name=f"p{i:03d}-{tag}", uid=f"uid-{i}-{tag}")
            out.append(m)
    return out[:count]


def _between(nodes: list[dict[str, Any]], rng: random.Random) -> Any:
    """After a wave: move a node to another zone, drop another's region, taint a third,
    delete a node and a few bound pods (as informers would report them)."""
    by_name = {m["metadata"]["name"]: copy.deepcopy(m) for m in nodes}

    def between(sim: Simulation, k: int) -> None:
        sched = sim.sched
        if len(by_name) < 5:
            return
        names_ = rng.sample(sorted(by_name), 4)

        def change(name: str, edit: Any) -> None:
            change_node(sim, by_name, name, edit)

        change(names_[0], lambda m: m["metadata"]["labels"].update({ZONE: "e"}))
        change(names_[1], lambda m: m["metadata"]["labels"].pop(REGION, None))
        change(
            names_[2],
            lambda m: m["spec"]["taints"].append(
                {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
            ),
        )
        sched.on_node_delete(decode(by_name.pop(names_[3]), Node))
        bound = sorted(uid for uid, p in sim.cluster.pods.items() if p.node_name)
        for uid in rng.sample(bound, min(len(bound), 3)):
            sim.cluster._remove(uid)

    return between


_Cycle = tuple[str, str, str, tuple[str, ...] | None, tuple[int, ...] | None, int]


def _cycles(seed: int, cached: bool) -> tuple[list[_Cycle], int, int]:
    """Every cycle of the case ``seed``: (pod, node, message, nodes scored in order, their
    totals, next start); the cache hits, and those with plugins run every cycle."""
    rng = random.Random(seed)
    # A few cases above numFeasibleNodesToFind's floor of 100 nodes: PreScore of the
    # spread plugin then sees a rotation's subset of the feasible nodes.
    num_nodes = rng.randint(105, 130) if seed % 7 == 0 else rng.randint(6, 40)
    nodes = [_node(i, rng) for i in range(num_nodes)]
    percentage = rng.choice([None, 30, 100])
    waves = [_wave(rng, rng.randint(10, 30), f"w{w}") for w in range(3)]
    between = _between(nodes, random.Random(seed + 1))
    cf = ClusterFile(nodes=[(decode(m, Node), m) for m in nodes], pods=[])
    sim = Simulation(cf, _config(percentage), REG, seed=seed)
    if not cached:
        for fw in sim.sched.frameworks.values():
            fw.cycle_cache = None
    cycles: list[_Cycle] = []
    scored: list[Any] = [None, None]
    live_hits = [0]
    real_schedule_pod = schedule_one._schedule_pod
    real_prioritize = schedule_one.prioritize_nodes
    real_per_cycle = CycleCache._per_cycle

    async def prioritize(a: Any, feasible: Any, *rest: Any) -> Any:
        out = await real_prioritize(a, feasible, *rest)
        infos = a.sched.snapshot.node_infos
        scored[:] = [tuple(infos[int(r)].name for r in feasible), tuple(out[0].tolist())]
        return out

    async def schedule_pod(a: Any) -> Any:
        scored[:] = [None, None]
        res = await real_schedule_pod(a)
        cycles.append((a.pod.key, res.node, res.message, *scored, a.rotation.next_start))
        return res

    def per_cycle(self: CycleCache, *args: Any) -> Any:
        out = real_per_cycle(self, *args)
        live_hits[0] += out is not None
        return out

    async def main() -> None:
        sim._load()
        for k, wave in enumerate(waves):
            sim.add_pending([PodInfo(decode(m, Pod), m) for m in wave])
            await sim.drive(20 * len(wave))
            between(sim, k)

    with (
        mock.patch.object(schedule_one, "_schedule_pod", schedule_pod),
        mock.patch.object(schedule_one, "prioritize_nodes", prioritize),
        mock.patch.object(CycleCache, "_per_cycle", per_cycle),
    ):
        anyio.run(main)
    hits = sum(
        fw.cycle_cache.hits for fw in sim.sched.frameworks.values() if fw.cycle_cache is not None
    )
    return cycles, hits, live_hits[0]


CASES = 300


@pytest.mark.parametrize("block", range(10))
def test_per_cycle_plugins_on_the_cache_give_the_full_cycles_choices(block: int) -> None:
    """``CASES`` seeded cases in ten blocks; each case runs without and with the cache."""
    live_hits = scored = failed = 0
    for seed in range(block, CASES, 10):
        full, no_hits, _ = _cycles(seed, cached=False)
        cached, _, live = _cycles(seed, cached=True)
        assert no_hits == 0
        assert cached == full, seed
        live_hits += live
        scored += sum(1 for c in full if c[4] is not None and len(set(c[4])) > 1)
        failed += sum(1 for c in full if not c[1])
    # the cache answered with per-cycle plugins, over cycles with scores that tell nodes
    # apart, and the clusters filled up (FitErrors on both paths too)
    assert live_hits > 100 and scored > 100 and failed > 10, (live_hits, scored, failed)


def test_pods_with_terms_or_constraints_sign_per_cycle() -> None:
    """The two plugins answer ``PER_CYCLE`` (not NOT_SIGNABLE) for such pods, and the
    profile's signature names them, so one entry serves their replicas."""
    rng = random.Random(3)
    cf = ClusterFile(nodes=[(decode(m, Node), m) for m in [_node(0, rng)]], pods=[])
    sim = Simulation(cf, _config(None), REG, seed=0)
    fw = next(iter(sim.sched.frameworks.values()))

    def pod(name: str, **spec: Any) -> PodInfo:
        m = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": name, "labels": {"a": "b"}},
            "spec": {"schedulerName": "ksched", "containers": [{"name": "c"}], **spec},
        }
        return PodInfo(decode(m, Pod), m)

    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": HOST}
            ]
        }
    }
    spread = [{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]
    one, two = pod("x", affinity=anti), pod("y", affinity=anti)
    signed = fw.sign_pod_per_cycle(one)
    assert signed is not None and signed == fw.sign_pod_per_cycle(two)
    assert signed[1] == {names.INTER_POD_AFFINITY}
    assert PER_CYCLE in signed[0]
    assert fw.sign_pod(one) is None  # upstream's SignPod cannot sign it
    both = fw.sign_pod_per_cycle(pod("z", affinity=anti, topologySpreadConstraints=spread))
    assert both is not None
    assert both[1] == {names.INTER_POD_AFFINITY, names.POD_TOPOLOGY_SPREAD}
    plain = fw.sign_pod_per_cycle(pod("p"))
    assert plain is not None and not plain[1] and PER_CYCLE not in plain[0]
