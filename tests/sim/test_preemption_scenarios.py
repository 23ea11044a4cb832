"""Simulate scenarios for DefaultPreemption: who gets evicted, who is spared, and the
messages kube-scheduler prints when preemption cannot or may not help."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from ksched.api.objects import Pod, PodCondition, decode
from ksched.cli import main
from ksched.config import load_config_data
from ksched.framework.types import PodInfo
from ksched.plugins import default_registry
from ksched.scheduler import dispatch, loop
from ksched.sim import parse_cluster, simulate
from ksched.sim.simulator import PodResult, SimulatedCluster

REG = default_registry(entry_points=False)


def node(name: str, cpu: str = "4", memory: str = "8Gi") -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def pod(
    name: str, cpu: str, node_name: str = "", labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    requests = {"cpu": cpu, "memory": "128Mi"}
    s: dict[str, Any] = {
        "schedulerName": "ksched",
        **spec,
        "containers": [{"name": "c", "image": "app:1", "resources": {"requests": requests}}],
    }
    if node_name:
        s["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": s,
    }


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def pdb(name: str, match_labels: dict[str, str], allowed: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": match_labels}},
        "status": {
            "disruptionsAllowed": allowed,
            "currentHealthy": 1,
            "desiredHealthy": 1,
            "expectedPods": 1,
        },
    }


def run(objs: list[dict[str, Any]], seed: int = 0) -> dict[str, PodResult]:
    cf = parse_cluster(yaml.safe_dump_all(objs), "scenario.yaml")
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg, _ = load_config_data(raw, "config", None)
    return {r.name: r for r in simulate(cf, cfg, REG, seed=seed)}


def cluster() -> list[dict[str, Any]]:
    """n1: a PDB-protected db pod and a web pod (2 CPU each); n2: four 1-CPU batch pods;
    n3: a 4-CPU system pod nobody may preempt. Every node is full."""
    return [
        priority_class("high", 1000),
        node("n1"),
        node("n2"),
        node("n3"),
        pod("db-0", "2", "n1", labels={"app": "db"}),
        pod("web-1", "2", "n1", labels={"app": "web"}),
        *[pod(f"batch-{i}", "1", "n2") for i in range(4)],
        pod("sys-0", "4", "n3", priorityClassName="high"),
        pdb("db", {"app": "db"}, allowed=0),
    ]


def test_high_priority_pod_preempts_fewest_victims_and_spares_the_pdb_pod() -> None:
    res = run([*cluster(), pod("urgent", "2", priorityClassName="high")])
    urgent = res["urgent"]
    assert (urgent.status, urgent.node, urgent.message) == ("Scheduled", "n1", "")
    # n1 needs one victim, n2 two: n1 wins; db-0's budget is spent, so web-1 goes.
    assert urgent.preempted == ["default/web-1"]


def test_pdb_violation_is_the_last_resort() -> None:
    """With only the PDB-protected pod to take, it is preempted (the budget is a preference)."""
    objs = [
        priority_class("high", 1000),
        node("n1"),
        pod("db-0", "3", "n1", labels={"app": "db"}),
        pdb("db", {"app": "db"}, allowed=0),
        pod("urgent", "2", priorityClassName="high"),
    ]
    res = run(objs)
    assert (res["urgent"].node, res["urgent"].preempted) == ("n1", ["default/db-0"])


def test_node_without_pdb_violation_beats_fewer_victims() -> None:
    """Fewest PDB violations comes before fewest victims."""
    objs = [
        priority_class("high", 1000),
        node("n1"),
        node("n2"),
        pod("db-0", "4", "n1", labels={"app": "db"}),
        pdb("db", {"app": "db"}, allowed=0),
        pod("batch-0", "2", "n2"),
        pod("batch-1", "2", "n2"),
        pod("urgent", "4", priorityClassName="high"),
    ]
    res = run(objs)
    assert res["urgent"].node == "n2"
    assert res["urgent"].preempted == ["default/batch-0", "default/batch-1"]


def test_preemption_policy_never_stays_unschedulable() -> None:
    res = run([*cluster(), pod("polite", "2", priorityClassName="high", preemptionPolicy="Never")])
    polite = res["polite"]
    assert (polite.status, polite.node, polite.preempted) == ("Unschedulable", None, [])
    assert polite.message == (
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_equal_priority_pods_are_never_preempted() -> None:
    res = run([*cluster(), pod("peer", "2")])
    peer = res["peer"]
    assert (peer.status, peer.preempted) == ("Unschedulable", [])
    assert peer.message == (
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
    )


def test_preemption_cannot_help_a_pod_larger_than_any_node() -> None:
    res = run([*cluster(), pod("huge", "8", priorityClassName="high")])
    assert res["huge"].message == (
        "0/3 nodes are available: 3 Insufficient cpu. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert res["huge"].preempted == []


def test_second_preemptor_respects_the_first_ones_nomination() -> None:
    """The first preemptor's freed node is reserved for it (nominated pods count in Filter),
    so the second preempts on another node instead of stealing it."""
    objs = [
        priority_class("high", 1000),
        node("n1"),
        node("n2"),
        pod("low-1", "4", "n1"),
        pod("low-2", "4", "n2"),
        pod("first", "3", priorityClassName="high"),
        pod("second", "3", priorityClassName="high"),
    ]
    res = run(objs)
    assert {res["first"].node, res["second"].node} == {"n1", "n2"}
    assert sorted(res["first"].preempted + res["second"].preempted) == [
        "default/low-1",
        "default/low-2",
    ]
    assert len(res["first"].preempted) == len(res["second"].preempted) == 1


def test_lower_priority_pending_pod_does_not_take_the_nominated_node() -> None:
    """A pod queued behind the preemptor (lower priority) sees the nomination as occupied."""
    objs = [
        priority_class("high", 1000),
        priority_class("mid", 500),
        node("n1"),
        pod("low-1", "4", "n1"),
        pod("urgent", "3", priorityClassName="high"),
        pod("filler", "3", priorityClassName="mid"),
    ]
    res = run(objs)
    assert (res["urgent"].node, res["urgent"].preempted) == ("n1", ["default/low-1"])
    assert res["filler"].status == "Unschedulable"
    assert res["filler"].preempted == []


@pytest.mark.parametrize("seed", [0, 7])
def test_preemption_is_deterministic_for_a_seed(seed: int) -> None:
    objs = [
        priority_class("high", 1000),
        *[node(f"n{i}") for i in range(6)],
        *[pod(f"low-{i}", "4", f"n{i}") for i in range(6)],
        *[pod(f"hi-{i}", "4", priorityClassName="high") for i in range(3)],
    ]

    def outcome() -> list[tuple[str, str | None, list[str]]]:
        return sorted((r.name, r.node, r.preempted) for r in run(objs, seed).values())

    first = outcome()
    assert first == outcome()
    assert all(node is not None and len(victims) == 1 for _, node, victims in first)


def test_cli_json_lists_the_victims(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "cluster.yaml"
    f.write_text(yaml.safe_dump_all([*cluster(), pod("urgent", "2", priorityClassName="high")]))
    assert main(["simulate", "--cluster", str(f), "--output", "json", "--seed", "3"]) == 0
    pods = {p["name"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
    assert pods["urgent"]["preempted"] == ["default/web-1"]
    assert (pods["urgent"]["status"], pods["urgent"]["node"]) == ("Scheduled", "n1")


def test_simulated_cluster_sets_a_condition_in_place_and_echoes_it() -> None:
    """The simulated API merges a condition by type (as the strategic merge patch does)
    and tells the scheduler, as the pod watch would; a missing pod reports False."""
    sc = SimulatedCluster(parse_cluster("", "empty.yaml"))
    updates: list[tuple[PodInfo, PodInfo]] = []

    class Watch:
        def on_pod_update(self, old: PodInfo, new: PodInfo) -> None:
            updates.append((old, new))

    sc.watch(Watch())  # type: ignore[arg-type]
    raw = pod("victim", "1", "n1")
    raw["metadata"]["uid"] = "u1"
    raw["status"] = {
        "conditions": [
            {"type": "DisruptionTarget", "status": "False"},
            {"type": "Ready", "status": "True"},
        ]
    }
    victim = PodInfo(decode(raw, Pod), raw)
    sc.pods["u1"] = victim
    cond = PodCondition(type="DisruptionTarget", status="True", reason="PreemptionByScheduler")
    assert anyio.run(sc.set_pod_condition, victim, cond) is True
    got = sc.pods["u1"].pod.status.conditions
    assert [(c.type, c.status) for c in got] == [("DisruptionTarget", "True"), ("Ready", "True")]
    assert [(old, new.pod.status.conditions) for old, new in updates] == [(victim, got)]
    del sc.pods["u1"]
    assert anyio.run(sc.set_pod_condition, victim, cond) is False


def _sim(objs: list[dict[str, Any]], version: str | None = None) -> Any:
    from ksched.features import FeatureGates
    from ksched.sim.simulator import Simulation

    cf = parse_cluster(yaml.safe_dump_all(objs), "scenario.yaml")
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    features = FeatureGates(version) if version is not None else None
    cfg, _ = load_config_data(raw, "config", None, features)
    return Simulation(cf, cfg, REG, seed=0)


def _trace(sim: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, str, str]]:
    """(virtual time, "attempt" | "gone" | "terminating", pod) as the scheduler sees them."""
    seen: list[tuple[float, str, str]] = []
    sched = sim.sched
    delete, update = sched.on_pod_delete, sched.on_pod_update

    async def schedule_entity(s: Any, qpi: Any, tg: Any) -> Any:
        seen.append((sim.clock.now(), "attempt", qpi.pod_info.name))
        return await dispatch.schedule_entity(s, qpi, tg)

    def on_pod_delete(p: PodInfo) -> None:
        seen.append((sim.clock.now(), "gone", p.name))
        delete(p)

    def on_pod_update(old: PodInfo, new: PodInfo) -> None:
        if new.pod.metadata.deletion_timestamp and not old.pod.metadata.deletion_timestamp:
            seen.append((sim.clock.now(), "terminating", new.name))
        update(old, new)

    monkeypatch.setattr(loop, "schedule_entity", schedule_entity)
    sched.on_pod_delete, sched.on_pod_update = on_pod_delete, on_pod_update
    return seen


@pytest.mark.parametrize(("version", "first", "second"), [("1.36", "b", "a"), ("1.37", "a", "b")])
def test_victims_terminate_like_on_a_node_one_at_a_time(
    version: str, first: str, second: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A victim on a node is only marked for deletion; its kubelet finishes it
    TERMINATION_SECONDS later, one pod at a time, and the scheduler reacts to each: the
    preemptor, retried when the first is gone, is not eligible to preempt again while the
    other still terminates (no third victim), and binds once both are gone. Unstarted
    ties: 1.36's sort reverses node order, 1.37 keeps it (MoreImportantVictim)."""
    from ksched.sim.simulator import TERMINATION_SECONDS

    objs = [
        priority_class("high", 1000),
        node("n1"),
        pod("a", "2", "n1"),
        pod("b", "2", "n1"),
        pod("urgent", "4", priorityClassName="high"),
    ]
    sim = _sim(objs, version)
    seen = _trace(sim, monkeypatch)
    results = {r.name: r for r in anyio.run(sim.run)}
    assert results["urgent"].node == "n1"
    assert sorted(results["urgent"].preempted) == ["default/a", "default/b"]
    t = TERMINATION_SECONDS
    assert [e for e in seen if e[1] != "attempt"] == [
        (0.0, "terminating", first),
        (0.0, "terminating", second),
        (t, "gone", first),
        (t, "gone", second),
    ]
    attempts = [e[0] for e in seen if e[1] == "attempt"]
    assert attempts[0] == 0.0 and attempts[-1] >= t and len(attempts) >= 2
    # between the two deletions the preemptor was retried, and did not preempt again
    gone = [i for i, e in enumerate(seen) if e[1] == "gone"]
    assert any(e[1] == "attempt" for e in seen[gone[0] : gone[1]])


def test_victims_without_a_grace_period_go_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """terminationGracePeriodSeconds: 0 (or a pod on no node): the API server deletes at once."""
    objs = [
        priority_class("high", 1000),
        node("n1"),
        pod("a", "4", "n1", terminationGracePeriodSeconds=0),
        pod("urgent", "4", priorityClassName="high"),
    ]
    sim = _sim(objs)
    seen = _trace(sim, monkeypatch)
    results = {r.name: r for r in anyio.run(sim.run)}
    assert results["urgent"].node == "n1"
    assert [e for e in seen if e[1] != "attempt"] == [(0.0, "gone", "a")]


@pytest.mark.parametrize(("version", "b_first_on_node"), [("1.36", False), ("1.37", True)])
def test_a_preemptor_waits_as_kube_scheduler_when_its_last_victims_deletion_interests_none(
    version: str, b_first_on_node: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen against kube-scheduler v1.36 (long differential run, seed 156). The victims are
    ``b`` (needed for cpu) and ``a`` (matching the preemptor's required anti-affinity,
    through a namespaceSelector). ``b`` goes first (1.36's sort reverses the unstarted
    pods' node order, 1.37 keeps it): NodeResourcesFit requeues the pod,
    which now fails InterPodAffinity on ``a``, still terminating, and may not preempt
    again. When ``a`` goes, InterPodAffinity's hint matches it against the term with no
    namespace labels (upstream's isSchedulableAfterPodChange), so a namespaceSelector term
    never matches and the event is skipped: the pod stays pending, nominated, until the
    unschedulable pool's five-minute flush."""
    ns = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "blue", "labels": {"team": "blue"}},
    }
    a = pod("a", "500m", "n1", labels={"app": "cache"})
    a["metadata"]["namespace"] = "blue"
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "cache"}},
                    "namespaceSelector": {"matchLabels": {"team": "blue"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    objs = [
        priority_class("high", 1000),
        ns,
        node("n1"),
        *([pod("b", "2", "n1"), a] if b_first_on_node else [a, pod("b", "2", "n1")]),
        pod("urgent", "3", priorityClassName="high", affinity=anti),
    ]
    sim = _sim(objs, version)
    seen = _trace(sim, monkeypatch)
    results = {r.name: r for r in anyio.run(sim.run)}
    urgent = results["urgent"]
    assert urgent.status == "Unschedulable" and urgent.node in ("", None)
    assert sorted(urgent.preempted) == ["blue/a", "default/b"]
    assert [e[2] for e in seen if e[1] == "gone"] == ["b", "a"]
    cur = next(p for p in sim.cluster.pods.values() if p.name == "urgent")
    assert cur.pod.status.nominated_node_name == "n1"
