"""Scenario files whose expectations were recorded from the real kube-scheduler, not
derived by hand (``tests/sim/golden/*.golden.json``). After a version bump re-record them
with ``python -m ksched.testing.differential --record tests/sim/golden/*.yaml`` and read
the diff; a golden file the recorder did not write for the pinned version fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksched.testing.controlplane import DEFAULT_VERSION
from ksched.testing.differential.golden import check, golden_path, load_scenario, provenance

GOLDEN = Path(__file__).parent / "golden"
SCENARIOS = sorted(GOLDEN.glob("*.yaml"))


def test_every_scenario_has_its_golden_file() -> None:
    assert len(SCENARIOS) >= 30
    for path in SCENARIOS:
        golden = json.loads(golden_path(path).read_text())
        pending = {f"{p.namespace}/{p.name}" for p in load_scenario(path).pending}
        assert set(golden["pods"]) == pending, path.name


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_expectations_were_recorded_for_the_pinned_version(path: Path) -> None:
    assert provenance(path, DEFAULT_VERSION) == []


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_ksched_agrees_with_the_recorded_kube_scheduler(path: Path) -> None:
    assert check(path) == []


def _copy(tmp_path: Path, name: str) -> tuple[Path, dict[str, object]]:
    src = GOLDEN / name
    dst = tmp_path / src.name
    dst.write_text(src.read_text())
    golden_path(dst).write_text(golden_path(src).read_text())
    return dst, json.loads(golden_path(src).read_text())


def test_provenance_refuses_what_the_recorder_did_not_write(tmp_path: Path) -> None:
    path, golden = _copy(tmp_path, "fit_error_lists_every_reason_sorted.yaml")
    assert provenance(path, DEFAULT_VERSION) == []
    # another pinned version: re-record
    (problem, hint) = provenance(path, "v1.36.3")
    assert f"recorded from kube-scheduler {DEFAULT_VERSION}, pinned v1.36.3" in problem
    assert hint.startswith("re-record: python -m ksched.testing.differential --record ")
    # an expectation edited by hand
    pods = golden["pods"]
    assert isinstance(pods, dict)
    first = next(iter(pods.values()))
    first["message"] = "0/3 nodes are available: written by hand."
    golden_path(path).write_text(json.dumps(golden))
    assert any("not written by the recorder" in p for p in provenance(path, DEFAULT_VERSION))
    # the scenario edited after recording
    path, _ = _copy(tmp_path, "host_port_clash.yaml")
    path.write_text(path.read_text().replace("hostPort: 8080", "hostPort: 8081", 1))
    assert any("changed since it was recorded" in p for p in provenance(path, DEFAULT_VERSION))
    golden_path(path).unlink()
    assert provenance(path, DEFAULT_VERSION) == [f"{golden_path(path).name}: missing; record it"]


def test_check_reports_a_changed_expectation(tmp_path: Path) -> None:
    """The check is not vacuous: an edited golden message is reported."""
    path, golden = _copy(tmp_path, "fit_error_lists_every_reason_sorted.yaml")
    pods = golden["pods"]
    assert isinstance(pods, dict)
    key, first = next((k, v) for k, v in pods.items() if v["message"])
    first["message"] = first["message"].replace("0/", "9/", 1)
    golden_path(path).write_text(json.dumps(golden))
    (problem,) = check(path)
    assert problem.startswith(f"{key}: message ")
