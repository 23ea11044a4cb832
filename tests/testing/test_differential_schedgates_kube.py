"""The ``schedgates`` group against the real kube-scheduler of the session's control plane
($KSCHED_KUBE_VERSION): gated pods created, seen gated, then ungated (all gates, some, or
none) by a pod update, on both sides; ksched must agree on each, and a ksched that ignores
the gates is caught."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksched.testing.controlplane import ControlPlane
from ksched.testing.controlplane._build import kube_version
from ksched.testing.differential import run_differential
from ksched.testing.differential.generator import apiserver_args
from ksched.testing.differential.local import KschedReplay

pytestmark = pytest.mark.kube

# About 40 pods, half of them gated: every form of the ungate step (all, one of two, none).
SEEDS = [0, 1, 2, 3]
GROUPS = ("schedgates", "resources")


@pytest.fixture(scope="module")
def cp() -> Iterator[ControlPlane]:
    args = apiserver_args(kube_version(), GROUPS)
    with ControlPlane(with_controller_manager=True, apiserver_args=args) as plane:
        yield plane


def test_gated_pods_agree_with_kube_scheduler(cp: ControlPlane) -> None:
    report = run_differential(SEEDS, GROUPS, cp=cp, batching=False)
    gated = [p for p in report.pods if "schedgates" in p.groups]
    # some stay gated (both sides leave them alone), some are let in and then decided
    assert {p.kube_status for p in gated} >= {"Pending", "Scheduled", "Unschedulable"}, (
        report.text()
    )
    assert not report.rejected, report.rejected
    assert not report.diverging, report.text()


def test_a_ksched_that_ignores_scheduling_gates_is_caught(cp: ControlPlane, tmp_path: Path) -> None:
    cfg = tmp_path / "no-gates.yaml"
    # PreEnqueue without SchedulingGates (JSON is YAML)
    plugins = {"preEnqueue": {"disabled": [{"name": "SchedulingGates"}]}}
    cfg.write_text(
        json.dumps(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "profiles": [{"plugins": plugins}],
            }
        )
    )
    report = run_differential(
        [0], ("schedgates",), cp=cp, batching=False, ksched=KschedReplay(str(cfg))
    )
    caught = [
        p for p in report.diverging if p.kube_status == "Pending" and p.ksched_status == "Scheduled"
    ]
    assert caught, report.text()
