"""The ``gang`` group (PodGroups of v1.37's workload-aware scheduling) and the parts of
the harness that replay and compare a PodGroup as one unit (no control plane)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ksched.config.types import DEFAULT_SCHEDULER_NAME
from ksched.testing.differential import (
    FEATURES,
    GangBatch,
    PendingPod,
    default_features,
    generate,
    parse_features,
)
from ksched.testing.differential import kube as kube_mod
from ksched.testing.differential.compare import compare, compare_group
from ksched.testing.differential.generator import (
    GANG_GATES,
    GANG_RUNTIME_CONFIG,
    GANG_TIMINGS,
    HOST,
    RACK,
    ZONE,
    apiserver_args,
)
from ksched.testing.differential.kube import PodRun, _Member, _observe, parse_scores
from ksched.testing.differential.local import KschedReplay
from ksched.testing.differential.outcome import Outcome, group_outcome
from ksched.testing.differential.report import PodReport, Report, _report

SEEDS = range(30)


def _scenarios(groups: tuple[str, ...] = ("gang",)) -> list[Any]:
    return [generate(seed, groups) for seed in SEEDS]


def test_gang_group_draws_every_kind_of_group() -> None:
    policies: set[str] = set()
    timings: set[str] = set()
    keys: set[str] = set()
    short = sizes = 0
    for sc in _scenarios():
        node_keys = {k for o in sc.objects if o["kind"] == "Node" for k in o["metadata"]["labels"]}
        for batch in sc.batches.values():
            spec = batch.pod_group["spec"]
            policies |= set(spec["schedulingPolicy"])
            timings.add(batch.timing)
            for t in (spec.get("schedulingConstraints") or {}).get("topology", []):
                keys.add(t["key"])
                assert t["key"] in node_keys  # a label the generator puts on nodes
            gang = spec["schedulingPolicy"].get("gang")
            if gang is not None:
                assert 1 <= gang["minCount"] <= 8
                # one cycle decides the whole group: never more members than the quorum
                assert len(batch.members) <= gang["minCount"]
                short += len(batch.members) < gang["minCount"]
            else:
                assert len(batch.members) == 1
            sizes = max(sizes, len(batch.members))
    assert policies == {"gang", "basic"}
    assert timings == set(GANG_TIMINGS)
    assert keys == {RACK, ZONE}
    assert short and sizes == 8


def test_members_are_consecutive_copies_sharing_the_groups_priority() -> None:
    plain = 0
    for sc in _scenarios(("gang", "preemption")):
        assert set(GANG_GATES) <= set(sc.gates)
        by_batch: dict[str, list[str]] = {}
        last = ""
        for p in sc.pending:
            if not p.batch:
                plain += 1
                assert "schedulingGroup" not in p.pod["spec"]
                last = ""
                continue
            assert p.batch == last or p.batch not in by_batch  # one run per group
            by_batch.setdefault(p.batch, []).append(p.name)
            last = p.batch
            batch = sc.batches[p.batch]
            assert p.pod["spec"]["schedulingGroup"] == {"podGroupName": batch.name}
            assert p.namespace == batch.namespace and "gang" in p.groups
            cls = p.pod["spec"].get("priorityClassName")
            assert batch.pod_group["spec"].get("priorityClassName") == cls
        assert by_batch == {k: b.members for k, b in sc.batches.items()}
        names = [p.name for p in sc.pending]
        assert len(names) == len(set(names))
    assert plain  # mixed with pods scheduled alone


def test_a_group_of_several_comes_after_its_pod_group() -> None:
    """``late`` (the members, then the PodGroup) only for a group of one: members moved
    into their group when it arrives race kube-scheduler's scheduling loop."""
    drawn = set()
    for sc in _scenarios():
        for batch in sc.batches.values():
            drawn.add(batch.timing)
            if batch.timing == "late":
                assert len(batch.members) == 1
    assert drawn == {"first", "late", "spread"}


def test_some_groups_may_need_preemption() -> None:
    high = low = 0
    for sc in _scenarios():
        classes = {
            o["metadata"]["name"]: o["value"] for o in sc.objects if o["kind"] == "PriorityClass"
        }
        running = [o for o in sc.objects if o["kind"] == "Pod"]
        low += sum(classes.get(p["spec"].get("priorityClassName", ""), 0) == 10 for p in running)
        for batch in sc.batches.values():
            high += classes.get(batch.pod_group["spec"].get("priorityClassName", ""), 0) == 1000
    assert high and low


def test_gang_leaves_the_other_groups_scenarios_alone() -> None:
    """Its own random source: with it, the other groups drew the same (the running pods
    it gives its low class aside)."""
    for seed in range(5):
        alone = generate(seed, ["taints", "resources"])
        both = generate(seed, ["taints", "resources", "gang"])

        def plain(objs: list[Any]) -> list[Any]:
            out = []
            for o in objs:
                if o["kind"] == "PriorityClass":
                    continue
                o = copy.deepcopy(o)
                o.get("spec", {}).pop("priorityClassName", None)
                out.append(o)
            return out

        assert plain(both.objects) == plain(alone.objects)
        firsts = {b.members[0] for b in both.batches.values()}
        alone_pods = {p.name: p.pod for p in alone.pending}
        for p in both.pending:
            if not p.batch:
                assert p.pod == alone_pods[p.name]
            elif p.name in firsts:
                assert p.name in alone_pods


def test_gang_is_opt_in_and_only_from_1_37() -> None:
    assert FEATURES["gang"].since == "1.37"
    assert "gang" not in default_features("1.37") and "gang" not in default_features("1.36")
    assert parse_features("") == default_features()
    assert parse_features("gang,taints", "1.37") == ("taints", "gang")
    with pytest.raises(ValueError, match=r"not offered at 1.36: gang \(from 1.37\)"):
        parse_features("gang", "1.36")
    with pytest.raises(ValueError, match=r"not offered at 1\.36"):
        generate(0, ["gang"], emulated_version="1.36")
    assert generate(0, ["taints"]).batches == {}


def test_apiserver_serves_the_workload_api_only_for_the_gang_group() -> None:
    assert apiserver_args("v1.37.2") == apiserver_args("v1.37.2", ["taints"])
    assert apiserver_args("v1.36.3", ["gang"]) == apiserver_args("v1.36.3")
    assert all("scheduling.k8s.io" not in a for a in apiserver_args("v1.36.3"))
    gates, runtime = apiserver_args("v1.37.2", ["gang"])
    assert gates.startswith(apiserver_args("v1.37.2")[0] + ",")
    assert all(g in gates for g in GANG_GATES)
    assert runtime == f"--runtime-config={GANG_RUNTIME_CONFIG}"


def _group(status: str | None, reason: str = "", message: str = "") -> dict[str, Any]:
    pg: dict[str, Any] = {"metadata": {"name": "g", "namespace": "ns"}}
    if status is not None:
        cond = {"type": "PodGroupInitiallyScheduled", "status": status, "reason": reason}
        pg["status"] = {"conditions": [{**cond, "message": message}]}
    return pg


def test_group_outcome_reads_the_condition_and_the_members() -> None:
    bound = [Outcome("Scheduled", node="n1"), Outcome("Scheduled", node="n2")]
    assert group_outcome(_group("True", "Scheduled"), bound, ["ns/v"]) == {
        "podGroup": "g",
        "condition": {"status": "True", "reason": "Scheduled", "message": ""},
        "allBound": True,
        "victims": ["ns/v"],
    }
    held = group_outcome(_group(None), [Outcome("Pending")], [])
    assert held["condition"] is None and held["allBound"] is False
    partly = group_outcome(_group("False", "Unschedulable"), [bound[0], Outcome("Pending")], [])
    assert partly["allBound"] is False


def test_compare_group_reports_each_fact_of_the_group() -> None:
    msg = "pod group is unschedulable, 0/1 placements are available"
    kube = group_outcome(_group("False", "Unschedulable", msg), [Outcome("Unschedulable")], [])
    assert compare_group(kube, copy.deepcopy(kube)) == []
    assert compare_group(None, None) == []
    assert [d.what for d in compare_group(kube, None)] == ["group"]
    other = group_outcome(_group("True", "Scheduled"), [Outcome("Scheduled", node="n")], ["a/b"])
    details = {d.detail for d in compare_group(kube, other)}
    assert details == {
        "PodGroupInitiallyScheduled status",
        "PodGroupInitiallyScheduled reason",
        "PodGroupInitiallyScheduled message",
        "every member bound",
        "victims",
    }
    unwritten = group_outcome(_group(None), [Outcome("Unschedulable")], [])
    assert [d.detail for d in compare_group(kube, unwritten)] == [
        "PodGroupInitiallyScheduled written"
    ]
    # a member's comparison carries its group's
    a, b = Outcome("Pending", group=kube), Outcome("Pending", group=unwritten)
    assert [d.what for d in compare(a, b)] == ["group"]
    assert compare(Outcome("Pending", group=kube), Outcome("Pending", group=kube)) == []


def _pod(node: str = "", cond: dict[str, Any] | None = None, nominated: str = "") -> Any:
    status: dict[str, Any] = {"nominatedNodeName": nominated} if nominated else {}
    if cond is not None:
        status["conditions"] = [{"type": "PodScheduled", **cond}]
    return {"metadata": {"name": "m"}, "spec": {"nodeName": node} if node else {}, "status": status}


def test_member_outcomes_from_watch_events() -> None:
    failed = {
        "status": "False",
        "reason": "Unschedulable",
        "message": "gang",
        "observedGeneration": 1,
    }
    m = _Member()
    assert not m.settled and m.outcome().status == "Pending"
    _observe(m, _pod(cond=failed, nominated="n1"))
    assert not m.settled  # waits on a preemption
    _observe(m, _pod(node="n1", cond={**failed, "message": "later"}))
    out = m.outcome()
    assert m.settled and (out.status, out.node, out.nominated) == ("Scheduled", "n1", "n1")
    assert out.message == "gang" and out.condition == {
        k: failed[k] for k in failed if k != "status"
    }
    err = _Member()
    _observe(err, _pod(cond={**failed, "reason": "SchedulerError"}))
    assert not err.settled  # kube-scheduler retries an error: its verdict is awaited
    _observe(err, _pod(cond={**failed, "reason": "SchedulerError", "message": "again"}))
    assert err.settled and err.outcome().status == "Error"
    assert err.outcome().message == "gang"  # the first of the two errors


def test_a_members_first_error_gives_way_to_its_retrys_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A gang's member popped before the others reach kube-scheduler's queue fails with
    an error (a CI run saw DynamicResources' PodGroupPostFilter's "not found"); its retry
    with the whole group gives the verdict the replay records."""
    error = {"status": "False", "reason": "SchedulerError", "message": "not found"}
    verdict = {
        "status": "False",
        "reason": "Unschedulable",
        "message": "pod group is unschedulable",
    }
    m = _Member()
    _observe(m, _pod(cond=error))
    _observe(m, _pod(cond=error))  # the same condition again is not a second error
    assert m.awaiting_retry and not m.settled
    _observe(m, _pod(cond=verdict))
    assert m.settled and not m.awaiting_retry
    assert (m.outcome().status, m.outcome().message) == ("Unschedulable", verdict["message"])
    _observe(m, _pod(cond={**error, "message": "later"}))  # a later error changes nothing
    assert m.outcome().message == verdict["message"]
    # No retry within ERROR_RETRY seconds: the error is the outcome.
    alone = _Member()
    _observe(alone, _pod(cond=error))
    assert not alone.settled
    monkeypatch.setattr(kube_mod, "ERROR_RETRY", 0.0)
    assert alone.settled and alone.outcome().status == "Error"


def _node(name: str, cpu: str) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "4Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOST: name}},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def _member(name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": uid},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
            "schedulingGroup": {"podGroupName": "g"},
        },
    }


def test_ksched_batch_gives_every_member_an_outcome_and_the_group_its_own() -> None:
    """ksched's side of a PodGroup: every member pending at once beside the PodGroup;
    under the default gates (no GenericWorkload) they are scheduled as pods alone, and
    the group is reported as ksched's lister left it (no condition written)."""
    pg = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
    }
    pods = [_member(f"m{i}", f"u{i}") for i in range(3)]
    outs = KschedReplay().batch([_node("n1", "1"), _node("n2", "1")], [pg], pods)
    assert [o.status for o in outs].count("Scheduled") == 2
    assert all(o.group == outs[0].group for o in outs)
    assert outs[0].group == {"podGroup": "g", "condition": None, "allBound": False, "victims": []}


def test_report_lists_kube_schedulers_pod_groups() -> None:
    group = group_outcome(_group("True", "Scheduled"), [Outcome("Scheduled", node="n1")], ["ns/v"])
    rep = PodReport(3, "ns/p1", ["gang"], "Scheduled", "-", [], node="n1", group=group)
    held = group_outcome(_group(None), [Outcome("Pending")], [])
    other = PodReport(3, "ns/p2", ["gang"], "Pending", "-", [], group={**held, "podGroup": "h"})
    report = Report([3], ("gang",), [rep, other], kube_version="v1.37.2")
    assert report.pod_groups() == [
        "seed 3 ns/g: True Scheduled, all bound, preempted ns/v [p1:Scheduled@n1]",
        "seed 3 ns/h: no condition, not all bound [p2:Pending]",
    ]
    assert "seed 3 ns/g: True Scheduled" in report.text()
    assert PodReport.from_dict(json.loads(json.dumps(rep.to_dict()))) == rep


def test_gang_batch_names_its_pod_group() -> None:
    batch = GangBatch(_group(None), "late", ["a"])
    assert (batch.name, batch.namespace) == ("g", "ns")


def test_a_diverging_members_scenario_file_holds_its_group_and_every_member(
    tmp_path: Path,
) -> None:
    pg = {**_group(None), "kind": "PodGroup", "apiVersion": "scheduling.k8s.io/v1beta1"}
    pods = [_member("m0", "u0"), _member("m1", "u1")]
    pending = PendingPod(pods[0], {"gang"}, "ns/g")
    held = group_outcome(pg, [Outcome("Pending")], [])
    run = PodRun(
        pending,
        [_node("n1", "1")],
        pods[0],
        Outcome("Pending", group=held),
        Outcome("Scheduled", node="n1", group=held),
        [pg, *pods],
    )
    rep = _report(run, 7, tmp_path, "v1.37.2", list(GANG_GATES))
    assert [d.what for d in rep.divergences] == ["feasibility"]
    items = json.loads(Path(rep.scenario).read_text())["items"]
    assert [(o["kind"], o["metadata"]["name"]) for o in items] == [
        ("Node", "n1"),
        ("PodGroup", "g"),
        ("Pod", "m0"),
        ("Pod", "m1"),
    ]
    assert all(o["spec"]["schedulerName"] == DEFAULT_SCHEDULER_NAME for o in items[2:])


def test_scores_of_a_members_attempt_are_read_from_the_log() -> None:
    """v1.37 names a member's PodGroup before the pod on its score lines."""
    log = (
        'I1 schedule_one.go:984] "Plugin scored node for pod" podGroupType="podgroup" '
        'podGroup="ns/g" pod="ns/m0" plugin="TaintToleration" node="n0" score=300\n'
        'I1 schedule_one.go:1052] "Calculated node\'s final score for pod" '
        'podGroupType="podgroup" podGroup="ns/g" pod="ns/m0" node="n0" score=400\n'
        'I1 schedule_one.go:984] "Plugin scored node for pod" pod="ns/p" plugin="A" '
        'node="n0" score=1\n'
    )
    assert parse_scores(log, "ns/m0") == ({"TaintToleration": {"n0": 300}}, {"n0": 400})
    assert parse_scores(log, "ns/p") == ({"A": {"n0": 1}}, {})
