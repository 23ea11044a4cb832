"""`ksched config validate` and `ksched plugins`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ksched.cli import main


def test_plugins_lists_builtins_with_points_and_distribution(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plugins", "--output", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    for name in (
        "PrioritySort",
        "NodeResourcesFit",
        "TaintToleration",
        "NodeAffinity",
        "DefaultBinder",
    ):
        assert rows[name]["distribution"] == "ksched"
    assert rows["NodeResourcesFit"]["extensionPoints"] == [
        "preFilter",
        "filter",
        "preScore",
        "score",
    ]
    assert rows["PrioritySort"]["extensionPoints"] == ["queueSort"]
    assert rows["DefaultBinder"]["extensionPoints"] == ["bind"]


def test_plugins_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:2] == ["NAME", "EXTENSION"]
    assert any(line.startswith("TaintToleration") for line in lines)


def test_config_validate_prints_effective_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: bin-packing\n  pluginConfig:\n  - name: NodeResourcesFit\n"
        "    args: {scoringStrategy: {type: MostAllocated}}\n"
    )
    assert main(["config", "validate", str(f)]) == 0
    eff = yaml.safe_load(capsys.readouterr().out)
    assert eff["podInitialBackoffSeconds"] == 1 and eff["podMaxBackoffSeconds"] == 10
    prof = eff["profiles"][0]
    assert prof["schedulerName"] == "bin-packing"
    fit = next(pc for pc in prof["pluginConfig"] if pc["name"] == "NodeResourcesFit")
    assert fit["args"]["scoringStrategy"]["type"] == "MostAllocated"
    assert fit["args"]["scoringStrategy"]["resources"] == [
        {"name": "cpu", "weight": 1},
        {"name": "memory", "weight": 1},
    ]


def test_config_validate_reports_each_problem_on_a_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "percentageOfNodesToScore: 150\n"
        "profiles:\n- schedulerName: a\n  plugins:\n    filter:\n      enabled: [{name: NoSuchPlugin}]\n"
        "- schedulerName: a\n"
    )
    assert main(["config", "validate", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 3
    assert all(line.startswith(str(f)) for line in err)
    text = "\n".join(err)
    assert "percentageOfNodesToScore" in text
    assert "NoSuchPlugin" in text and "available:" in text
    assert 'Duplicate value: "a"' in text


def test_config_validate_bad_plugin_args_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n- schedulerName: ksched\n  pluginConfig:\n  - name: NodeResourcesFit\n"
        "    args: {scoringStrategy: {type: Sideways}}\n"
    )
    assert main(["config", "validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert "NodeResourcesFit" in err and "scoringStrategy" in err


def test_bench_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["bench", "--nodes", "50", "--pods", "100", "--init-pods", "20", "--output", "json"])
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {
        "workload",
        "nodes",
        "pods",
        "mode",
        "scheduled",
        "seconds",
        "pods_per_second",
        "p50_ms",
        "p99_ms",
        "peak_rss_mb",
    }
    assert out["scheduled"] == 100 and out["workload"] == "SchedulingBasic" and out["nodes"] == 50
    assert out["pods_per_second"] > 0 and out["p99_ms"] >= out["p50_ms"]


def test_bench_unknown_workload_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--workload", "Nope"]) == 2
    assert "SchedulingBasic" in capsys.readouterr().err
