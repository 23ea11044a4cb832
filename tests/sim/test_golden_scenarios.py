"""Scenario files whose expectations were recorded from the real kube-scheduler
(``tests/sim/golden/*.golden.json``; re-record with
``python -m ksched.testing.differential --record tests/sim/golden/*.yaml``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksched.testing.differential.golden import check, golden_path, load_scenario

GOLDEN = Path(__file__).parent / "golden"
SCENARIOS = sorted(GOLDEN.glob("*.yaml"))


def test_every_scenario_has_its_golden_file() -> None:
    assert SCENARIOS
    for path in SCENARIOS:
        golden = json.loads(golden_path(path).read_text())
        pending = {f"{p.namespace}/{p.name}" for p in load_scenario(path).pending}
        assert set(golden["pods"]) == pending, path.name
        assert golden["kubeScheduler"].startswith("v1.")


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_ksched_agrees_with_the_recorded_kube_scheduler(path: Path) -> None:
    assert check(path) == []


def test_check_reports_a_changed_expectation(tmp_path: Path) -> None:
    """The check is not vacuous: an edited golden message is reported."""
    src = SCENARIOS[0]
    copy = tmp_path / src.name
    copy.write_text(src.read_text())
    golden = json.loads(golden_path(src).read_text())
    key, first = next((k, v) for k, v in golden["pods"].items() if v["message"])
    first["message"] = first["message"].replace("0/", "9/", 1)
    golden_path(copy).write_text(json.dumps(golden))
    (problem,) = check(copy)
    assert problem.startswith(f"{key}: message ")
