"""The fidelity oracle in CI: a fixed seed set replayed against the real kube-scheduler of
the session's control plane ($KSCHED_KUBE_VERSION, default the pinned release) and ksched
at that release's ``--emulated-version`` must agree on every pod (feasibility, node,
per-plugin scores, FitError text, PodScheduled condition, preemption), the ``gates``
group's random gate sets included. A long run is documented in docs/testing.md."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksched.features import gate_table
from ksched.testing.controlplane import ControlPlane
from ksched.testing.controlplane._build import kube_version
from ksched.testing.differential import default_features, run_differential
from ksched.testing.differential.gates import emulation_of
from ksched.testing.differential.generator import apiserver_args
from ksched.testing.differential.golden import golden_path, provenance, record
from ksched.testing.differential.local import KschedReplay

pytestmark = pytest.mark.kube

# About 60 pending pods over every feature group, a few of the seeds under random gate
# sets (one kube-scheduler each): about two minutes on 2 cores.
CI_SEEDS = [0, 1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def cp() -> Iterator[ControlPlane]:
    """Its own control plane: the PV binder must run, and no other kube-scheduler may
    serve the default profile."""
    args = apiserver_args(kube_version())
    with ControlPlane(with_controller_manager=True, apiserver_args=args) as plane:
        yield plane


def test_fixed_seeds_agree_with_kube_scheduler(cp: ControlPlane, tmp_path: Path) -> None:
    features = default_features(emulation_of(cp.assets.version))
    report = run_differential(CI_SEEDS, features, cp=cp, outdir=tmp_path)
    assert report.kube_version == cp.assets.version
    groups = report.groups()
    assert set(features) <= set(groups), sorted(groups)
    # some seeds ran under non-default gates, others at the defaults
    assert 0 < groups["gates"].pods < groups["all"].pods
    assert groups["all"].pods >= 50
    # both verdicts and scores were compared, not only one kind of outcome
    assert 0 < groups["all"].unschedulable < groups["all"].pods
    assert not report.rejected, report.rejected
    assert not report.diverging, report.text()


def test_seeds_agree_under_the_users_gates(cp: ControlPlane, tmp_path: Path) -> None:
    """``--feature-gates`` combine with the version and the gates group: both schedulers
    under StorageCapacityScoring's non-default value (off in v1.37, on in v1.36), no
    batching, and each seed's random draw of the other gates."""
    table = gate_table(emulation_of(cp.assets.version))
    value = "false" if table.gates["StorageCapacityScoring"].default else "true"
    scoring = f"StorageCapacityScoring={value}"
    report = run_differential(
        [0, 1],
        ("volumes", "csi", "dra", "spread", "gates"),
        cp=cp,
        outdir=tmp_path,
        batching=False,
        feature_gates=[scoring],
    )
    assert all(p.gates[0] == scoring for p in report.pods)
    assert report.groups()["all"].pods >= 10
    assert not report.rejected, report.rejected
    assert not report.diverging, report.text()


def test_kube_scheduler_with_device_taint_rules_on_is_ready(
    cp: ControlPlane, tmp_path: Path
) -> None:
    """DRADeviceTaintRules on (beta, off at 1.36; the gates group draws it): kube-scheduler
    lists DeviceTaintRules, so the API server must serve them and let it read them, or it
    is never ready and the run ends there."""
    report = run_differential(
        [0],
        ("resources", "dradevices"),
        cp=cp,
        outdir=tmp_path,
        batching=False,
        feature_gates=["DRADeviceTaintRules=true"],
    )
    assert report.groups()["all"].pods >= 1
    assert not report.rejected, report.rejected
    assert not report.diverging, report.text()


def test_a_wrong_weight_is_caught(cp: ControlPlane, tmp_path: Path) -> None:
    """The harness is not blind: ksched run with TaintToleration's weight at 1 instead of
    3 disagrees with kube-scheduler's logged scores, and the report says where."""
    cfg = tmp_path / "weights.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- plugins:\n"
        "    score:\n"
        "      enabled: [{name: TaintToleration, weight: 1}]\n"
    )
    report = run_differential(
        [0, 1], ("taints",), cp=cp, outdir=tmp_path / "out", ksched=KschedReplay(str(cfg))
    )
    kinds = report.by_kind()
    assert kinds.get("score:TaintToleration", 0) > 0, report.text()
    (first, *_) = report.diverging
    assert first.scenario and Path(first.scenario).is_file()
    assert "TaintToleration" in report.text()


def test_a_ksched_without_node_declared_features_is_caught(
    cp: ControlPlane, tmp_path: Path
) -> None:
    """The nodefeatures group reaches kube-scheduler's NodeDeclaredFeatures: ksched with the
    plugin disabled places pods kube-scheduler keeps off nodes lacking a feature."""
    cfg = tmp_path / "no-ndf.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- plugins:\n"
        "    multiPoint:\n"
        "      disabled: [{name: NodeDeclaredFeatures}]\n"
    )
    report = run_differential(
        [0, 2, 3],
        ("nodefeatures",),
        cp=cp,
        outdir=tmp_path / "out",
        batching=False,
        ksched=KschedReplay(str(cfg)),
    )
    assert not report.rejected, report.rejected
    assert report.diverging, report.text()
    assert all("nodefeatures" in p.groups for p in report.diverging)
    assert "didn't match Pod's required features" in report.text()


def test_the_recorder_reproduces_the_committed_goldens(cp: ControlPlane, tmp_path: Path) -> None:
    """Recording again from the control plane's kube-scheduler gives the committed
    expectations of that release
    (all but the tie-break's pick among equally good nodes, which is chance)."""
    golden_dir = Path(__file__).parents[1] / "sim" / "golden"
    names = [
        "fit_error_lists_every_reason_sorted",
        "hostname_spreading_puts_two_replicas_on_each_node",
    ]
    copies = []
    for name in names:
        src = golden_dir / f"{name}.yaml"
        dst = tmp_path / src.name
        dst.write_text(src.read_text())
        copies.append(dst)
    recorded = record(copies, cp)
    for name, path in zip(names, copies, strict=True):
        committed = json.loads(
            golden_path(golden_dir / f"{name}.yaml", cp.assets.version).read_text()
        )
        fresh = recorded[path]
        assert provenance(path, cp.assets.version) == []
        assert fresh["kubeScheduler"] == committed["kubeScheduler"] == cp.assets.version
        assert fresh["scenarioSha256"] == committed["scenarioSha256"]

        def comparable(pods: dict[str, dict[str, object]]) -> dict[str, object]:
            return {k: {f: v[f] for f in ("status", "message", "nodes")} for k, v in pods.items()}

        # Pods after the first tie-break that went another way see another state: the
        # comparison stops there (that pod's outcome and best nodes still compared).
        keys = list(committed["pods"])
        assert list(fresh["pods"]) == keys, name
        upto = len(keys)
        for i, k in enumerate(keys):
            if fresh["pods"][k].get("node") != committed["pods"][k].get("node"):
                upto = i + 1
                break
        same = keys[:upto]
        fresh_pods = {k: fresh["pods"][k] for k in same}
        committed_pods = {k: committed["pods"][k] for k in same}
        assert comparable(fresh_pods) == comparable(committed_pods), name
