"""``simulate --explain``: the explanation model (ranking, rejections in the FitError's
order, preemption) and its human text, one pod or all, and JSON as one document."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import main
from ksched.config import default_config
from ksched.plugins import default_registry
from ksched.sim import parse_cluster, simulate
from tests.sim.test_preemption_scenarios import cluster as preemption_cluster
from tests.sim.test_preemption_scenarios import node, pod

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster.yaml"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["simulate", *args])
    got = capsys.readouterr()
    return rc, got.out, got.err


def explained(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, dict[str, Any]]:
    rc, out, _ = run_cli(capsys, "--output", "json", "--explain", *args)
    assert rc == 0
    return {p["name"]: p for p in json.loads(out)["pods"]}


def fit_error_counts(message: str) -> list[str]:
    """The ``"N reason"`` items of a FitError message, in its order (before what the
    PostFilter plugins add: DynamicResources' sentence, preemption's)."""
    head = re.split(r"\.(?: |$)", message, maxsplit=1)[0]
    body = re.sub(r"^0/\d+ nodes are available: ", "", head)
    return body.split(", ")


def test_ranking_is_by_total_with_every_plugins_weighted_share(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pods = explained(capsys, "--cluster", str(EXAMPLE))
    for name, p in pods.items():
        ex = p["explain"]
        ranking = ex["ranking"]
        if p["status"] != "Scheduled":
            assert ranking == [] and ex["node"] is None, name
            continue
        assert ex["result"] == "Scheduled" and ex["node"] == p["node"], name
        totals = [r["total"] for r in ranking]
        assert totals == sorted(totals, reverse=True), name
        assert [r["node"] for r in ranking if r["selected"]] == [p["node"]], name
        assert set(r["node"] for r in ranking) == set(ex["total"]), name
        for r in ranking:
            # Every Score plugin's weighted contribution, summing to the total.
            assert set(r["scores"]) == set(ex["score"]), name
            assert sum(r["scores"].values()) == r["total"] == ex["total"][r["node"]]
            for plugin, v in r["scores"].items():
                assert v == ex["score"][plugin][r["node"]]["weighted"]
        assert ex["weights"]["TaintToleration"] == 3


def test_rejections_follow_the_fit_error(capsys: pytest.CaptureFixture[str]) -> None:
    pods = explained(capsys, "--cluster", str(EXAMPLE))
    huge = pods["analytics-huge"]["explain"]
    assert huge["result"] == "Unschedulable"
    groups = huge["rejected"]
    # Same items, same counts, same order as the message kube-scheduler would print.
    assert [f"{g['count']} {g['reason']}" for g in groups] == fit_error_counts(
        pods["analytics-huge"]["message"]
    )
    taint = next(g for g in groups if "taint" in g["reason"])
    assert taint["nodes"] == ["gpu-b2"] and taint["plugins"] == ["TaintToleration"]
    cpu = next(g for g in groups if g["reason"] == "Insufficient cpu")
    assert cpu["count"] == len(cpu["nodes"]) == 4 and cpu["plugins"] == ["NodeResourcesFit"]
    # The pod was placed, yet the nodes Filter turned away are still accounted for.
    zone_c = pods["batch-zone-c"]["explain"]
    affinity = next(g for g in zone_c["rejected"] if g["plugins"] == ["NodeAffinity"])
    assert sorted(affinity["nodes"]) == ["large-a2", "medium-b1", "small-a1"]
    assert huge["preemption"]["nominatedNode"] is None
    assert "Preemption is not helpful" in huge["preemption"]["message"]


def test_nodes_a_prefilter_ruled_out_count_as_the_fit_error_counts_them() -> None:
    nodes = [node("n1", cpu="1"), node("n2"), node("n3")]
    only_n1 = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
                ]
            }
        }
    }
    cf = parse_cluster(yaml.safe_dump_all([*nodes, pod("p", "2", affinity=only_n1)]), "t.yaml")
    (r,) = simulate(cf, default_config(), default_registry(), explain=True)
    assert r.status == "Unschedulable" and r.explain is not None
    groups = r.explain["rejected"]
    assert [f"{g['count']} {g['reason']}" for g in groups] == fit_error_counts(r.message)
    narrowed = next(g for g in groups if "didn't satisfy plugin" in g["reason"])
    assert sorted(narrowed["nodes"]) == ["n2", "n3"]
    assert r.explain["unevaluated"] == 0
    # Placed: the nodes outside the PreFilter result are still counted, and only they.
    terms = only_n1["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    field = {"key": "metadata.name", "operator": "In", "values": ["n2"]}
    terms["nodeSelectorTerms"].append({"matchFields": [field]})  # n1 or n2
    cf = parse_cluster(yaml.safe_dump_all([*nodes, pod("p", "2", affinity=only_n1)]), "t.yaml")
    (r,) = simulate(cf, default_config(), default_registry(), explain=True)
    assert (r.status, r.node) == ("Scheduled", "n2") and r.explain is not None
    got = {g["reason"]: g["nodes"] for g in r.explain["rejected"]}
    assert got == {
        "Insufficient cpu": ["n1"],
        "node(s) didn't satisfy plugin(s) [NodeAffinity]": ["n3"],
    }
    assert [x["node"] for x in r.explain["ranking"]] == ["n2"]


def test_preemption_outcome_is_explained(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        yaml.safe_dump_all([*preemption_cluster(), pod("urgent", "2", priorityClassName="high")])
    )
    pods = explained(capsys, "--cluster", str(f))
    urgent = pods["urgent"]
    assert urgent["preempted"] == ["default/web-1"]
    pre = urgent["explain"]["preemption"]
    assert pre == {
        "nominatedNode": "n1",
        "victims": ["default/web-1"],
        # v1.37 words a successful preemption (v1.36: "")
        "message": "preemption: found a potential placement for pod on node n1, "
        "preempting 1 victims",
        "earlierAttempt": True,
    }
    rc, out, _ = run_cli(capsys, "--cluster", str(f), "--explain", "default/urgent")
    assert rc == 0
    assert "preemption (by an earlier attempt): nominated n1; victims: default/web-1" in out


def test_one_pod_in_text(capsys: pytest.CaptureFixture[str]) -> None:
    pods = explained(capsys, "--cluster", str(EXAMPLE))
    ranking = pods["web-0"]["explain"]["ranking"]
    rc, out, _ = run_cli(capsys, "--cluster", str(EXAMPLE), "--explain", "shop/web-0")
    assert rc == 0
    lines = out.splitlines()
    # Only that pod: no table of every pod, no other pod's explanation.
    assert lines[0] == f"shop/web-0: Scheduled on {pods['web-0']['node']}"
    assert "POD" not in out and "batch/" not in out
    head = next(i for i, line in enumerate(lines) if line.split()[:3] == ["#", "NODE", "TOTAL"])
    rows = [line.split() for line in lines[head + 1 : head + 1 + len(ranking)]]
    assert [r[-len(ranking[0]["scores"]) - 2] for r in rows] == [r["node"] for r in ranking]
    assert rows[0][0] == "*"  # the selected node is marked
    assert "TaintToleration(x3)" in lines[head]
    assert any("untolerated taint" in line and "gpu-b2" in line for line in lines)


def test_top_limits_the_ranking(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(capsys, "--cluster", str(EXAMPLE), "--explain", "shop/web-0", "--top", "2")
    assert rc == 0
    assert "top 2 of 4" in out
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if "TOTAL" in line)
    assert lines[head + 1].split()[:2] == ["*", "1"]
    assert lines[head + 2].split()[0] == "2"
    assert lines[head + 3].strip() == "(* selected)"


def test_all_pods_in_text_after_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(capsys, "--cluster", str(EXAMPLE), "--explain")
    assert rc == 0
    assert out.splitlines()[0].split() == ["POD", "NODE", "STATUS", "MESSAGE"]
    heads = re.findall(r"^(\S+/\S+): (Scheduled|Unschedulable)", out, re.M)
    assert len(heads) == 7
    assert "{" not in out.split("\n\n", 1)[1].replace("{nvidia.com/gpu: present}", "")
    assert "pods scheduled" in err and "pods scheduled" not in out


def test_json_is_one_document_and_one_pod_has_the_explanation(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run_cli(
        capsys, "--cluster", str(EXAMPLE), "--output", "json", "--explain", "ml/trainer"
    )
    assert rc == 0
    data = json.loads(out)  # the whole of stdout is one JSON document
    assert len(data["pods"]) == 7
    with_explain = [p["name"] for p in data["pods"] if "explain" in p]
    assert with_explain == ["trainer"]
    assert data["pods"][2]["explain"]["ranking"][0]["node"] == "gpu-b2"


@pytest.mark.parametrize(
    ("arg", "says"),
    [("nope", "NAMESPACE/NAME"), ("a/b/c", "NAMESPACE/NAME"), ("shop/nope", "no pod of that name")],
)
def test_bad_explain_target_exits_2(
    capsys: pytest.CaptureFixture[str], arg: str, says: str
) -> None:
    rc, out, err = run_cli(capsys, "--cluster", str(EXAMPLE), "--explain", arg)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and says in err


def test_negative_top_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["simulate", "--cluster", str(EXAMPLE), "--explain", "--top", "-1"])
    assert e.value.code == 2
    assert "not a whole number >= 0" in capsys.readouterr().err


def test_every_pod_keeps_its_explanation_beyond_the_schedulers_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ksched.scheduler.scheduler import Scheduler
    from ksched.sim import load_cluster

    monkeypatch.setattr(Scheduler, "explanations_kept", 2)
    results = simulate(
        load_cluster(str(EXAMPLE)), default_config(), default_registry(), explain=True
    )
    assert len(results) == 7
    for r in results:
        assert r.explain is not None, r.name
        assert r.explain["result"] == r.status


def test_top_zero_keeps_the_count_and_drops_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run_cli(capsys, "--cluster", str(EXAMPLE), "--explain", "shop/web-0", "--top", "0")
    assert rc == 0
    assert out.splitlines()[1] == "  feasible: 4 of 5 nodes"
    assert "TOTAL" not in out and "selected" not in out


def test_a_cycle_that_never_filtered_has_every_key() -> None:
    """A pod turned away before PreFilter (its resources do not parse) still gets the
    whole model."""
    from tests.sim.test_scenarios import node as plain_node
    from tests.sim.test_scenarios import pod as plain_pod

    objs = [plain_node("n1"), plain_pod("bad", cpu="lots")]
    cf = parse_cluster(yaml.safe_dump_all(objs), "t.yaml", validate=False)
    (r,) = simulate(cf, default_config(), default_registry(), explain=True)
    assert r.explain is not None
    with_filter = explained_keys()
    assert set(r.explain) == with_filter
    assert r.explain["result"] == "Unschedulable" and r.status == "Unschedulable"
    assert r.explain["message"] == r.message and "lots" in r.message
    assert r.explain["ranking"] == r.explain["rejected"] == []
    assert r.explain["filter"] == r.explain["score"] == r.explain["total"] == {}
    assert r.explain["unevaluated"] == 0 and r.explain["preemption"] is None


def explained_keys() -> set[str]:
    (r,) = [
        x
        for x in simulate(
            parse_cluster(EXAMPLE.read_text(), "example"),
            default_config(),
            default_registry(),
            explain=True,
        )
        if x.name == "web-0"
    ]
    assert r.explain is not None
    return set(r.explain)


def test_a_gated_pod_says_why_it_was_never_attempted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "c.yaml"
    gated = pod("gated", "1", schedulingGates=[{"name": "example.com/wait"}])
    f.write_text(yaml.safe_dump_all([node("n1"), gated]))
    (shown,) = explained(capsys, "--cluster", str(f)).values()
    assert shown["explain"] is None and "example.com/wait" in shown["message"]
    rc, out, _ = run_cli(capsys, "--cluster", str(f), "--explain", "default/gated")
    assert rc == 0
    assert out.splitlines() == [
        "default/gated: Unschedulable (no scheduling cycle)",
        f"  message: {shown['message']}",
    ]
