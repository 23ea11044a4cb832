"""The fidelity oracle in CI: a fixed seed set replayed against the real kube-scheduler
v1.36.3 and ksched must agree on every pod (feasibility, node, per-plugin scores, FitError
text, PodScheduled condition, preemption). A long run is documented in docs/fidelity.md."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksched.testing.controlplane import ControlPlane
from ksched.testing.differential import FEATURES, run_differential
from ksched.testing.differential.golden import provenance, record
from ksched.testing.differential.local import KschedReplay
from tests.features.gatesets import NON_DEFAULT

pytestmark = pytest.mark.kube

# About 60 pending pods over every feature group: a minute and a half on 2 cores.
CI_SEEDS = [0, 1, 2, 3, 4, 5]


@pytest.fixture(scope="module")
def cp() -> Iterator[ControlPlane]:
    """Its own control plane: the PV binder must run, and no other kube-scheduler may
    serve the default profile."""
    with ControlPlane(with_controller_manager=True) as plane:
        yield plane


def test_fixed_seeds_agree_with_kube_scheduler(cp: ControlPlane, tmp_path: Path) -> None:
    report = run_differential(CI_SEEDS, tuple(FEATURES), cp=cp, outdir=tmp_path)
    groups = report.groups()
    assert set(FEATURES) <= set(groups), sorted(groups)
    assert groups["all"].pods >= 50
    # both verdicts and scores were compared, not only one kind of outcome
    assert 0 < groups["all"].unschedulable < groups["all"].pods
    assert not report.rejected, report.rejected
    assert not report.diverging, report.text()


def test_seeds_agree_under_a_non_default_gate_set(cp: ControlPlane, tmp_path: Path) -> None:
    """Both schedulers under the same non-default gates (tests/features/gatesets.py: no
    NodeDeclaredFeatures, StorageCapacityScoring on, no DRA filter timeout, no batching)
    on the groups those gates touch."""
    report = run_differential(
        [0, 1],
        ("volumes", "csi", "dra", "spread"),
        cp=cp,
        outdir=tmp_path,
        batching=False,
        feature_gates=NON_DEFAULT,
    )
    assert report.groups()["all"].pods >= 10
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


def test_the_recorder_reproduces_the_committed_goldens(cp: ControlPlane, tmp_path: Path) -> None:
    """Recording again from the pinned kube-scheduler gives the committed expectations
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
        committed = json.loads((golden_dir / f"{name}.golden.json").read_text())
        fresh = recorded[path]
        assert provenance(path) == []
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
