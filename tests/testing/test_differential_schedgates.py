"""The ``schedgates`` group: pending pods with ``spec.schedulingGates`` and the update
that removes them, generated per seed and replayed in ksched as kube-scheduler sees them
(created gated, then updated). The real binary's side is in
test_differential_schedgates_kube.py."""

from __future__ import annotations

import json
from typing import Any

from ksched.testing.differential.generator import (
    FEATURES,
    HOST,
    SCHEDULING_GATE_PREFIX,
    default_features,
    generate,
)
from ksched.testing.differential.local import KschedReplay
from ksched.testing.differential.outcome import HELD_BY_GATES, gated_outcome

GATED = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "SchedulingGated",
    "message": "Scheduling is blocked due to non-empty scheduling gates",
}


def _gates(pod: dict[str, Any]) -> list[str]:
    return [g["name"] for g in pod["spec"].get("schedulingGates", [])]


def test_gated_pods_carry_one_or_two_gates_and_an_ungate_step_of_their_own() -> None:
    forms: set[str] = set()
    for seed in range(30):
        for p in generate(seed, ["schedgates", "resources"]).pending:
            gates = _gates(p.pod)
            if "schedgates" not in p.groups:
                assert not gates and p.ungate == ()
                continue
            assert 1 <= len(gates) <= 2
            assert all(g.startswith(SCHEDULING_GATE_PREFIX) for g in gates)
            assert set(p.ungate) <= set(gates)
            forms.add("all" if set(p.ungate) == set(gates) else "some" if p.ungate else "none")
    assert forms == {"all", "some", "none"}


def test_same_seed_same_gates_and_the_rest_of_the_scenario_is_untouched() -> None:
    a, b = generate(5, ["schedgates", "resources"]), generate(5, ["schedgates", "resources"])
    assert [(p.pod, p.ungate) for p in a.pending] == [(p.pod, p.ungate) for p in b.pending]
    plain = generate(5, ["resources"])
    assert json.dumps(a.objects) == json.dumps(plain.objects)
    for gated, p in zip(a.pending, plain.pending, strict=True):
        spec = {k: v for k, v in gated.pod["spec"].items() if k != "schedulingGates"}
        assert spec == p.pod["spec"]
    assert any(_gates(p.pod) for p in a.pending)


def test_the_group_is_opt_in_and_leaves_pod_group_members_ungated() -> None:
    assert "schedgates" not in default_features()
    assert not FEATURES["schedgates"].default
    members = 0
    for seed in range(10):
        sc = generate(seed, ["gang", "schedgates"], emulated_version="1.37")
        for p in sc.pending:
            if p.batch:
                members += 1
                assert not _gates(p.pod) and not p.ungate
    assert members


# -- ksched's replay ---------------------------------------------------------------------------


def _node() -> dict[str, Any]:
    alloc = {"cpu": "1", "memory": "1Gi", "pods": "10"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {HOST: "n1"}},
        "spec": {},
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(gates: tuple[str, ...], generation: int = 1, cpu: str = "100m") -> dict[str, Any]:
    """The pod as the API server created it (gated condition) or as an update left it."""
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "d", "uid": "u-1", "generation": generation},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]
        },
        "status": {"phase": "Pending", "conditions": [dict(GATED)]},
    }
    if gates:
        pod["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    return pod


TWO = ("example.com/wait-0", "example.com/wait-1")


def test_a_pod_that_keeps_a_gate_stays_pending_with_the_api_servers_condition() -> None:
    replay = KschedReplay()
    for update in (None, _pod(TWO[1:], generation=2)):
        out = replay([_node()], _pod(TWO), update=update)
        assert out.status == "Pending" and out.node is None
        assert out.message == HELD_BY_GATES
        assert out.condition == {"reason": "SchedulingGated", "message": GATED["message"]}


def test_removing_every_gate_lets_the_pod_in_as_kube_schedulers_queue_does() -> None:
    replay = KschedReplay()
    out = replay([_node()], _pod(TWO), update=_pod((), generation=2))
    assert out.status == "Scheduled" and out.node == "n1"
    assert out.condition is None and out.totals
    # too big once let in: the scheduler's own condition, for the updated generation
    out = replay([_node()], _pod(TWO, cpu="2"), update=_pod((), generation=2, cpu="2"))
    assert out.status == "Unschedulable"
    assert out.condition is not None
    assert out.condition["reason"] == "Unschedulable"
    assert out.condition["observedGeneration"] == 2
    assert "Insufficient cpu" in out.message


def test_gated_outcome_reads_the_pod_as_it_stands() -> None:
    pending = gated_outcome(_pod(TWO))
    assert pending.status == "Pending" and pending.condition is not None
    assert pending.condition["reason"] == "SchedulingGated"
    bound = _pod(TWO)
    bound["spec"]["nodeName"] = "n1"
    assert gated_outcome(bound).status == "Scheduled"
    assert gated_outcome(bound).node == "n1"
