"""Shadow mode (``--shadow-of``): ksched decides for another scheduler's pods, writes
nothing, and scores its decisions against that scheduler's.

The test plays the shadowed scheduler (``default-scheduler``): it binds, or reports
unschedulable, each pod once ksched has decided it, by a plan whose comparison with
ksched's default profile the test knows: one node much larger than the other in every
resource, so LeastAllocated and BalancedAllocation both prefer it for a small pod.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import E2E, metric, wait_for

pytestmark = pytest.mark.e2e

SHADOWED = "default-scheduler"
READS = {"get", "list", "watch"}


def _unschedulable(srv: Any, ns: str, name: str) -> None:
    cond = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/2 nodes are available: 2 Insufficient cpu.",
    }
    srv.patch("pods", ns, name, {"status": {"conditions": [cond]}}, subresource="status")


@pytest.mark.fake_apiserver
def test_shadow_writes_nothing_and_scores_the_other_schedulers_bindings(e2e: E2E) -> None:
    srv = e2e.need_server()
    big = e2e.create_node("big", cpu="16", memory="64Gi")
    small = e2e.create_node("small", cpu="2", memory="4Gi")
    # pod -> what the shadowed scheduler does (a node, or None: reports it unschedulable),
    # and the result the test expects; in the order it acts (the huge pod bound last, so
    # its overcommitting big changes no earlier decision)
    plan: list[tuple[str, str, str | None, str]] = [
        ("fits-agree", "100m", big, "agree"),
        ("fits-disagree", "100m", small, "disagree"),
        ("fits-refused", "100m", None, "unschedulable_there"),
        ("huge-refused", "64", None, "agree"),
        ("huge-bound", "64", big, "unschedulable_here"),
    ]
    for name, cpu, _, _ in plan:
        e2e.create_pod(name, cpu=cpu, scheduler_name=SHADOWED)
    cfg = e2e.config()
    srv.clear_requests()
    with e2e.daemon(cfg, shadow_of=SHADOWED) as d:
        shadow = d.daemon.shadow
        assert shadow is not None and shadow.profile == e2e.scheduler_name
        for name, _, node, _ in plan:
            uid = e2e.pod(name)["metadata"]["uid"]
            wait_for(lambda uid=uid: d.call(lambda: uid in shadow.decisions), what=name)
            if node is None:
                _unschedulable(srv, e2e.namespace, name)
            else:
                srv.bind(e2e.namespace, name, node)
        expected = {r: sum(1 for *_, want in plan if want == r) for r in shadow_results()}
        wait_for(lambda: d.call(lambda: dict(shadow.counts)) == _nonzero(expected), 10)
        status, body = d.get("/metrics")
        assert status == 200
        got = {
            r: metric(body, "ksched_shadow_decisions_total", profile=e2e.scheduler_name, result=r)
            for r in expected
        }
        assert got == {r: float(n) for r, n in expected.items()}
        status, body = d.get("/debug/shadow")
        assert status == 200
        doc = json.loads(body)
        assert doc["shadowOf"] == SHADOWED and doc["counts"] == expected
        by_pod = {e["pod"].split("/")[1]: e for e in doc["disagreements"]}
        assert sorted(by_pod) == ["fits-disagree", "fits-refused", "huge-bound"]
        dis = by_pod["fits-disagree"]
        assert dis["ksched"]["node"] == big and dis[SHADOWED]["node"] == small
        # both nodes' breakdowns: totals and every default Score plugin's weighted score
        assert dis["ksched"]["total"] > dis[SHADOWED]["total"]
        assert "NodeResourcesFit" in dis["ksched"]["scores"]
        assert set(dis["ksched"]["scores"]) == set(dis[SHADOWED]["scores"])
        assert by_pod["huge-bound"]["ksched"]["node"] is None
        assert "Insufficient cpu" in by_pod["huge-bound"]["ksched"]["message"]
        # the node it was bound to, as ksched saw it: rejected by NodeResourcesFit
        assert by_pod["huge-bound"][SHADOWED]["filter"] == {
            "NodeResourcesFit": "UnschedulableAndUnresolvable: Insufficient cpu"
        }
        refused = by_pod["fits-refused"]
        assert refused["ksched"]["node"] == big
        assert refused[SHADOWED] == {
            "node": None,
            "message": "0/2 nodes are available: 2 Insufficient cpu.",
        }
    requests = srv.requests
    assert {r.verb for r in requests if r.resource} <= READS, [
        f"{r.verb} {r.path}" for r in requests if r.verb not in READS
    ]
    assert any(r.verb == "watch" and r.resource == "pods" for r in requests)
    # the pods stay where the shadowed scheduler put them, with only its conditions
    assert e2e.node_of("fits-disagree") == small
    assert e2e.node_of("fits-agree") == big


@pytest.mark.fake_apiserver
def test_shadow_counts_a_tie_between_equally_scored_nodes_as_its_own_result(e2e: E2E) -> None:
    """Bound to the twin of the node ksched chose (the same score): ``tie``, listed under
    ``ties`` with both equal totals; bound to a node ksched scored lower, or one it found
    infeasible: ``disagree``."""
    srv = e2e.need_server()
    twins = [e2e.create_node(n, cpu="8", memory="16Gi") for n in ("twin-a", "twin-b")]
    small = e2e.create_node("small", cpu="2", memory="4Gi")
    for name, cpu in (("tied", "100m"), ("lower", "100m"), ("infeasible", "3")):
        e2e.create_pod(name, cpu=cpu, scheduler_name=SHADOWED)
    with e2e.daemon(e2e.config(), shadow_of=SHADOWED) as d:
        shadow = d.daemon.shadow
        assert shadow is not None

        def decided(name: str) -> Any:
            uid = e2e.pod(name)["metadata"]["uid"]
            wait_for(lambda: d.call(lambda: uid in shadow.decisions), what=name)
            return d.call(lambda: shadow.decisions[uid])

        tied = decided("tied")
        assert tied.node in twins
        other = next(t for t in twins if t != tied.node)
        assert tied.scores[other]["total"] == tied.scores[tied.node]["total"]  # a real tie
        srv.bind(e2e.namespace, "tied", other)
        wait_for(lambda: d.call(lambda: shadow.counts["tie"]) == 1, 10)
        lower = decided("lower")
        assert lower.scores[small]["total"] < lower.scores[lower.node]["total"]
        srv.bind(e2e.namespace, "lower", small)
        infeasible = decided("infeasible")
        assert small in infeasible.rejected
        srv.bind(e2e.namespace, "infeasible", small)
        wait_for(lambda: d.call(lambda: shadow.counts["disagree"]) == 2, 10)
        status, body = d.get("/metrics")
        assert status == 200
        got = {
            r: metric(body, "ksched_shadow_decisions_total", profile=e2e.scheduler_name, result=r)
            for r in ("agree", "tie", "disagree")
        }
        assert got == {"agree": 0.0, "tie": 1.0, "disagree": 2.0}
        doc = json.loads(d.get("/debug/shadow")[1])
    assert doc["counts"] == {
        "agree": 0,
        "tie": 1,
        "disagree": 2,
        "unschedulable_here": 0,
        "unschedulable_there": 0,
    }
    [tie] = doc["ties"]
    assert tie["pod"] == f"{e2e.namespace}/tied" and tie["result"] == "tie"
    assert (tie["ksched"]["node"], tie[SHADOWED]["node"]) == (tied.node, other)
    assert tie["ksched"]["total"] == tie[SHADOWED]["total"]
    by_pod = {e["pod"].split("/")[1]: e for e in doc["disagreements"]}
    assert sorted(by_pod) == ["infeasible", "lower"]
    assert by_pod["lower"]["ksched"]["total"] > by_pod["lower"][SHADOWED]["total"]
    assert by_pod["infeasible"][SHADOWED]["filter"] == {
        "NodeResourcesFit": "UnschedulableAndUnresolvable: Insufficient cpu"
    }


def shadow_results() -> tuple[str, ...]:
    from ksched.daemon.shadow import RESULTS

    return RESULTS


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}


@pytest.mark.fake_apiserver
def test_shadow_process_logs_each_disagreement_and_refuses_a_lease(e2e: E2E, tmp_path: Any) -> None:
    """``ksched run --shadow-of`` as a process: one ``-v 2`` line per disagreement, none
    for an agreement, and ``--leader-elect`` beside it is refused before any request."""
    from .conftest import KschedProcess

    srv = e2e.need_server()
    cfg = e2e.write_config()
    base = ["--config", str(cfg), "--kubeconfig", str(e2e.kubeconfig), "--shadow-of", SHADOWED]
    srv.clear_requests()
    refused = KschedProcess([*base, "--leader-elect"])
    assert refused.p.wait(30) == 2
    assert srv.requests == []
    big = e2e.create_node("big", cpu="16", memory="64Gi")
    small = e2e.create_node("small", cpu="2", memory="4Gi")
    for name in ("a", "b"):
        e2e.create_pod(name, scheduler_name=SHADOWED)
    proc = KschedProcess([*base, "-v", "2"])
    try:
        proc.serving()
        # both decided before either is bound (an empty queue alone may mean not yet listed)
        wait_for(lambda: (_counts(proc) or {}).get("decided") == 2, 20)
        srv.bind(e2e.namespace, "a", big)
        srv.bind(e2e.namespace, "b", small)
        line = proc.wait_log("shadow decision differs")
        assert (line["pod"], line["result"], line["node"], line["their_node"]) == (
            f"{e2e.namespace}/b",
            "disagree",
            big,
            small,
        )
        wait_for(lambda: (_counts(proc) or {}).get("agree") == 1, 10)
        assert proc.count("shadow decision differs") == 1
    finally:
        assert proc.stop() == 0


def _counts(proc: Any) -> dict[str, Any] | None:
    status, body = proc.get("/debug/shadow")
    if status != 200:
        return None
    doc = json.loads(body)
    return {**doc["counts"], "undecided": doc["undecided"], "decided": doc["decided"]}


@pytest.mark.kube
@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_shadow_of_the_real_kube_scheduler_never_prefers_another_node(e2e: E2E) -> None:
    """ksched's default profile shadowing a real kube-scheduler with the default profile, on
    identical nodes: every pod is compared, and where the two chose different nodes ksched
    scored both the same (a tie each broke at random, counted as ``tie``), never one above
    the other, so nothing is a disagreement. ksched writes nothing: each pod's only
    Scheduled event is kube-scheduler's."""
    assert e2e.controlplane is not None
    kube = f"kube-{e2e.run_id}"
    kube_cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": kube}],
    }
    for i in range(4):
        e2e.create_node(f"n{i}", cpu="4", memory="8Gi")
    names = [f"p{i}" for i in range(12)]
    with (
        e2e.controlplane.kube_scheduler(kube_cfg, name=f"kube-scheduler-{e2e.run_id}"),
        e2e.daemon(shadow_of=kube) as d,
    ):
        shadow = d.daemon.shadow
        for i, name in enumerate(names):
            cpu = ("250m", "500m", "1")[i % 3]
            e2e.create_pod(name, cpu=cpu, memory="512Mi", scheduler_name=kube)
            e2e.wait_bound(name, timeout=30)
        wait_for(lambda: sum(d.call(lambda: dict(shadow.counts)).values()) == len(names), 20)
        counts = d.call(lambda: dict(shadow.counts))
        status, body = d.get("/metrics")
        doc = json.loads(d.get("/debug/shadow")[1])
    assert status == 200
    assert set(counts) <= {"agree", "tie"}, counts
    # four empty nodes tie for the first pod, three for the next...: both schedulers
    # picking the same one every time is a chance of well under one in a thousand
    assert counts.get("tie", 0) > 0, counts
    assert doc["counts"]["tie"] == counts["tie"] and doc["counts"]["disagree"] == 0
    assert metric(body, "ksched_shadow_decisions_total", result="tie") == counts["tie"]
    assert doc["disagreements"] == []
    assert len(doc["ties"]) == counts["tie"]
    for entry in doc["ties"]:
        assert entry["ksched"]["node"] != entry[kube]["node"], entry
        assert entry["ksched"]["total"] == entry[kube]["total"], entry
    for name in names:
        events = e2e.events(name, "Scheduled")
        assert [e["reportingController"] for e in events] == [kube], name
