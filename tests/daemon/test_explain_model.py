"""``/debug/explain`` answers with the same explanation model as ``simulate --explain``."""

from __future__ import annotations

import json
from typing import Any

import anyio

from ksched.config import default_config
from ksched.plugins import default_registry
from ksched.sim import Simulation, parse_cluster

from .conftest import CLUSTER, FakeDaemon
from .test_http import one

#: What the recomputation adds (when) and what only a real cycle can know.
RECOMPUTED_ONLY = {"computedAt"}


def explaining_sim() -> tuple[Simulation, FakeDaemon]:
    """The conftest cluster scheduled with explanations on, its outcomes fed to a daemon."""
    sim = Simulation(
        parse_cluster(CLUSTER, "test"), default_config(), default_registry(), seed=0, explain=True
    )
    d = FakeDaemon(sim)
    failed = sim.recorder.failed

    def both(pod: Any, profile: str, reason: str, message: str, result: Any) -> None:
        failed(pod, profile, reason, message, result)
        d.outcomes.failed(pod, reason, message, result)

    sim.recorder.failed = both  # type: ignore[method-assign]
    anyio.run(sim.run)
    return sim, d


def test_daemon_explains_a_pending_pod_as_simulate_does() -> None:
    sim, d = explaining_sim()
    simulated = sim.sched.explanations["default/huge"]
    status, _, body = one(d, "/debug/explain?pod=default/huge")
    assert status == 200
    out = json.loads(body)
    ex = out["explain"]
    assert set(ex) - RECOMPUTED_ONLY == set(simulated)
    for key in ("result", "node", "nodes", "ranking", "rejected", "filter"):
        assert ex[key] == simulated[key], key
    # The FitError's text, without PostFilter's part (it is not re-run).
    assert simulated["message"].startswith(ex["message"] + " ")
    assert " preemption: " in simulated["message"].removeprefix(ex["message"])
    assert [g["reason"] for g in ex["rejected"]] == ["Insufficient cpu"]
    assert ex["rejected"][0]["nodes"] == ["n1", "n2"]
    # PostFilter is not re-run: the preemption outcome is the last real attempt's.
    assert ex["preemption"] == out["lastAttempt"]["preemption"] == simulated["preemption"]
    assert "Preemption is not helpful" in ex["preemption"]["message"]


def test_daemon_ranks_feasible_nodes_once_a_pod_fits() -> None:
    sim, d = explaining_sim()
    from tests.factories import make_node

    sim.sched.on_node_add(make_node("n3", cpu="16"))
    sim.sched.on_node_add(make_node("n4", cpu="32"))
    status, _, body = one(d, "/debug/explain?pod=default/huge")
    assert status == 200
    ex = json.loads(body)["explain"]
    assert ex["result"] == "Scheduled"
    ranking = ex["ranking"]
    assert sorted(r["node"] for r in ranking) == ["n3", "n4"]
    assert [r["node"] for r in ranking if r["selected"]] == [ex["node"]]
    assert ranking[0]["total"] >= ranking[1]["total"]
    for r in ranking:
        assert sum(r["scores"].values()) == r["total"] == ex["total"][r["node"]]


def test_a_plugin_error_is_explained_with_the_same_keys() -> None:
    """A hung Filter plugin: result Error, the same model (nothing ranked or rejected)."""
    from ksched.daemon.explain import explain_pending
    from tests.scheduler.test_plugin_deadline import Harness

    h = Harness()
    h.add("stuck", hang="filter")
    qpi = h.sched.queue.pop_nowait()
    assert qpi is not None
    out = explain_pending(h.sched, qpi)
    sim, _ = explaining_sim()
    assert set(out) - RECOMPUTED_ONLY == set(sim.sched.explanations["default/huge"])
    assert (out["result"], out["node"], out["ranking"], out["rejected"]) == ("Error", None, [], [])
    assert "did not return within" in out["message"]
