"""`ksched simulate` end to end through the CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksched.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster.yaml"


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    rc = main(["simulate", "--output", "json", *args])
    out = capsys.readouterr().out
    assert rc == 0
    return json.loads(out)


def test_example_cluster_places_pods_as_the_default_profile_decides(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = run_json(capsys, "--cluster", str(EXAMPLE))
    by_name = {p["name"]: p for p in data["pods"]}
    # Only the ksched pods are considered; the default-scheduler pod is ignored.
    assert "other-scheduler-pod" not in by_name
    assert set(by_name) == {
        "web-0",
        "web-1",
        "trainer",
        "batch-zone-c",
        "edge-proxy",
        "analytics-huge",
        "second-trainer",
    }
    for p in data["pods"]:
        assert set(p) == {"namespace", "name", "node", "status", "message", "preempted"}
    # The GPU pod tolerates the taint and is the only pod that can use the GPU node.
    assert by_name["trainer"]["node"] == "gpu-b2"
    assert by_name["trainer"]["status"] == "Scheduled"
    # zone-c selector: only medium-c1 is in zone-c.
    assert by_name["batch-zone-c"]["node"] == "medium-c1"
    # hostPort 80 is taken on medium-c1, and the GPU node's taint repels the proxy.
    assert by_name["edge-proxy"]["status"] == "Scheduled"
    assert by_name["edge-proxy"]["node"] not in ("medium-c1", "gpu-b2")
    # Too big for every node: kube-scheduler's FitError text.
    huge = by_name["analytics-huge"]
    assert huge["status"] == "Unschedulable"
    assert huge["node"] is None
    assert huge["message"].startswith("0/5 nodes are available: ")
    assert "Insufficient cpu" in huge["message"] and "Insufficient memory" in huge["message"]
    assert "1 node(s) had untolerated taint(s)" in huge["message"]
    # The second GPU pod finds the only GPU taken.
    second = by_name["second-trainer"]
    assert second["status"] == "Unschedulable"
    assert "Insufficient nvidia.com/gpu" in second["message"]
    # No web pod lands on the tainted GPU node.
    assert by_name["web-0"]["node"] != "gpu-b2" and by_name["web-1"]["node"] != "gpu-b2"


def test_same_seed_same_result(capsys: pytest.CaptureFixture[str]) -> None:
    a = run_json(capsys, "--cluster", str(EXAMPLE), "--seed", "7")
    b = run_json(capsys, "--cluster", str(EXAMPLE), "--seed", "7")
    assert a == b


def test_explain_lists_filter_verdicts_and_scores(capsys: pytest.CaptureFixture[str]) -> None:
    data = run_json(capsys, "--cluster", str(EXAMPLE), "--explain")
    web = next(p for p in data["pods"] if p["name"] == "web-0")
    ex = web["explain"]
    assert set(ex["filter"]) == {"small-a1", "medium-b1", "medium-c1", "large-a2", "gpu-b2"}
    assert ex["filter"]["gpu-b2"]["TaintToleration"].startswith("UnschedulableAndUnresolvable")
    assert ex["filter"]["large-a2"]["NodeResourcesFit"] == "Success"
    feasible = set(ex["total"])
    assert "gpu-b2" not in feasible
    for plugin, per_node in ex["score"].items():
        assert set(per_node) == feasible, plugin
        for v in per_node.values():
            assert 0 <= v["normalized"] <= 100
    # The total is the sum of weighted scores.
    for node in feasible:
        assert ex["total"][node] == sum(ex["score"][p][node]["weighted"] for p in ex["score"])


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["POD", "NODE", "STATUS", "MESSAGE"]
    assert "batch/analytics-huge" in out and "Unschedulable" in out


def test_bad_cluster_file_exits_2_naming_file_and_object(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n"
        "spec: {containers: [{name: c, ports: [{containerPort: x}]}]}\n"
    )
    assert main(["simulate", "--cluster", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert (
        str(bad) in err[0]
        and "Pod ns/p" in err[0]
        and "spec.containers[0].ports[0].containerPort" in err[0]
    )


def test_missing_cluster_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


def test_bad_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: ksched\n  plugins:\n    filter:\n      enabled:\n      - nam: X\n"
    )
    assert main(["simulate", "--cluster", str(EXAMPLE), "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "profiles[0].plugins.filter.enabled[0].nam" in err


@pytest.mark.parametrize(
    ("cpu", "problem"),
    [
        ('"1x"', "quantities must match the regular expression"),
        ('"-1"', "must be greater than or equal to 0"),
        ("-0.5", "must be greater than or equal to 0"),
    ],
)
def test_malformed_pod_quantity_exits_2_naming_object_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cpu: str, problem: str
) -> None:
    """Input the API server would refuse is refused as it would be: one line, exit 2."""
    f = tmp_path / "c.yaml"
    f.write_text(f"""
apiVersion: v1
kind: List
items:
- {{apiVersion: v1, kind: Node, metadata: {{name: n1}}, status: {{allocatable: {{cpu: "4"}}}}}}
- apiVersion: v1
  kind: Pod
  metadata: {{name: broken, namespace: default}}
  spec: {{schedulerName: ksched, containers: [{{name: c, resources: {{requests: {{cpu: {cpu}}}}}}}]}}
""")
    assert main(["simulate", "--cluster", str(f)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(
        f"{f}: Pod default/broken: spec.containers[0].resources.requests[cpu]: Invalid value: "
    )
    assert problem in line
