"""`ksched --version`, `ksched config validate` and `ksched plugins`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ksched.cli import main
from tests.config.cases import CASES


def case_file(tmp_path: Path, case_id: str) -> Path:
    """The config test case ``case_id`` (tests/config/cases.py) as a file."""
    case = CASES[case_id]
    f = tmp_path / ("c" + case.suffix)
    f.write_text(case.file_text())
    return f


def test_version_prints_ksched_and_the_kubernetes_release_it_follows() -> None:
    """Like ``kube-scheduler --version``: one line on stdout, exit 0, no subcommand needed."""
    import ksched
    from ksched.testing.controlplane import DEFAULT_VERSION

    out = subprocess.run(
        [sys.executable, "-m", "ksched", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    build = ", compiled" if ksched.COMPILED else ""
    assert out.stdout == f"ksched v{ksched.__version__} (follows kube-scheduler v1.37.2{build})\n"
    # one home for the release: the versions table's newest implemented row, which is also
    # the control plane the tests build
    from ksched.features import KUBE_VERSIONS

    newest = [v.kube for v in KUBE_VERSIONS if v.implemented][-1]
    assert ksched.KUBERNETES_VERSION == DEFAULT_VERSION == newest == "v1.37.2"


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
        "placementScore",
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
    f = case_file(tmp_path, "cli/effective-config")
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
    f = case_file(tmp_path, "cli/each-problem-on-a-line")
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
    f = case_file(tmp_path, "cli/bad-plugin-args")
    assert main(["config", "validate", str(f)]) == 2
    err = capsys.readouterr().err
    assert "NodeResourcesFit" in err and "scoringStrategy" in err


# What kube-scheduler v1.36 refuses (tests/config/test_parity_kube.py), with ksched's words.
@pytest.mark.parametrize(
    ("case_id", "problem"),
    [
        (
            "validation/negative-score-weight",
            'profile "ksched": total score of Score plugins could overflow: the weights of the '
            "Score plugins before TaintToleration add up to -2, and a negative sum cannot be "
            "followed by another one",
        ),
        (
            "validation/args-of-disabled-plugin",
            'profile "ksched": plugin DefaultPreemption: args.minCandidateNodesPercentage: '
            "Invalid value: 200: not in valid range [0, 100]",
        ),
        (
            "args/05-NodeAffinity",
            'profile "ksched": plugin NodeAffinity: args.addedAffinity.x: unknown field',
        ),
        (
            "load/removed-bind-addresses",
            "healthzBindAddress: unknown field (removed from KubeSchedulerConfiguration before v1; "
            "kube-scheduler serves /healthz and /metrics on its secure port)",
        ),
        ("load/yaml-merge-key", "line 5, column 3: duplicate key 'resourceName'"),
        ("validation/extender-ca-not-pem", "extender https://e: tlsConfig: "),
        ("load/yaml-one-letter-boolean", "profiles[0].schedulerName: must be a string, got false"),
        ("load/yaml-base-60-is-a-string", "parallelism: must be an integer, got '1:20'"),
        (
            "validation/requested-to-capacity-ratio-without-shape",
            'profile "ksched": plugin NodeResourcesFit: args.scoringStrategy.'
            "requestedToCapacityRatio: Required value: must be specified when type is "
            "RequestedToCapacityRatio",
        ),
    ],
)
def test_config_validate_refuses_what_kube_scheduler_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case_id: str, problem: str
) -> None:
    f = case_file(tmp_path, case_id)
    assert main(["config", "validate", str(f)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert any(line.startswith(f"{f}: {problem}") for line in lines), lines


@pytest.mark.parametrize(
    "case_id",
    [
        "validation/negative-score-weight-last",
        "validation/zero-score-weight",
        "validation/fit-args-of-disabled-plugin",
        "validation/plugin-config-not-enabled",
        "load/yaml-merge-key-no-override",
        "load/yaml-date-is-a-string",
    ],
)
def test_config_validate_accepts_what_kube_scheduler_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case_id: str
) -> None:
    f = case_file(tmp_path, case_id)
    assert main(["config", "validate", str(f)]) == 0, capsys.readouterr().err


def test_config_validate_warns_once_about_ignored_plugin_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = case_file(tmp_path, "validation/plugin-config-not-enabled")
    assert main(["config", "validate", str(f)]) == 0
    assert capsys.readouterr().err.splitlines() == [
        f"warning: {f}: profiles[0].pluginConfig[0]: plugin 'NotEnabled' is not registered; "
        "ignoring its args"
    ]


def test_config_validate_warns_once_about_v1beta3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a deliberate extension (docs/fidelity.md): kube-scheduler v1.36 refuses v1beta3
    f = case_file(tmp_path, "load/v1beta3")
    assert main(["config", "validate", str(f)]) == 0
    out = capsys.readouterr()
    assert yaml.safe_load(out.out)["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert out.err.splitlines() == [
        f"warning: {f}: apiVersion: kubescheduler.config.k8s.io/v1beta3 is deprecated (removed "
        "from kube-scheduler in Kubernetes 1.29); it is read as v1, change apiVersion to "
        "kubescheduler.config.k8s.io/v1"
    ]


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


def test_bench_dra_workload_fills_the_devices(capsys: pytest.CaptureFixture[str]) -> None:
    """SchedulingWithResourceClaimTemplate: ten devices per node, one per pod, so 20 nodes
    take 200 pods (100 init + 100 measured) and a 201st would not fit."""
    argv = ["bench", "--workload", "SchedulingWithResourceClaimTemplate", "--output", "json"]
    assert main([*argv, "--nodes", "20", "--pods", "100", "--init-pods", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scheduled"] == 100
    assert main([*argv, "--nodes", "2", "--pods", "15", "--init-pods", "10"]) == 0
    assert json.loads(capsys.readouterr().out)["scheduled"] == 10  # 20 devices, 10 taken


def test_bench_dra_workload_is_in_process_only(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["bench", "--workload", "SchedulingWithResourceClaimTemplate", "--mode", "e2e"]
    assert main(argv) == 2
    assert "runs in process only" in capsys.readouterr().err
