"""Scenario files whose expectations were recorded from the real kube-scheduler, not
derived by hand (``tests/sim/golden/*.<release>.golden.json``), one set per release ksched
supports, each checked with ksched at that release's ``--emulated-version``. For a new
release record them with ``KSCHED_KUBE_VERSION=<release> python -m
ksched.testing.differential --record tests/sim/golden/*.yaml`` and read the diff; a golden
file the recorder did not write for its release fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksched.features import KUBE_VERSIONS
from ksched.testing.controlplane import DEFAULT_VERSION
from ksched.testing.differential.golden import check, golden_path, load_scenario, provenance

GOLDEN = Path(__file__).parent / "golden"
SCENARIOS = sorted(GOLDEN.glob("*.yaml"))
#: every release whose behaviour ksched implements: each has its own golden files
RELEASES = [v.kube for v in KUBE_VERSIONS if v.implemented]
CASES = [(path, release) for release in RELEASES for path in SCENARIOS]


def _id(case: object) -> str:
    return case.stem if isinstance(case, Path) else str(case)


def test_every_scenario_has_its_golden_file_per_release() -> None:
    assert len(SCENARIOS) >= 30
    assert DEFAULT_VERSION in RELEASES and len(RELEASES) >= 2
    for release in RELEASES:
        for path in SCENARIOS:
            golden = json.loads(golden_path(path, release).read_text())
            pending = {f"{p.namespace}/{p.name}" for p in load_scenario(path).pending}
            assert set(golden["pods"]) == pending, (release, path.name)


@pytest.mark.parametrize(("path", "release"), CASES, ids=_id)
def test_expectations_were_recorded_from_that_release(path: Path, release: str) -> None:
    assert provenance(path, release) == []


@pytest.mark.parametrize(("path", "release"), CASES, ids=_id)
def test_ksched_agrees_with_the_recorded_kube_scheduler(path: Path, release: str) -> None:
    assert check(path, release) == []


def _copy(tmp_path: Path, name: str) -> tuple[Path, dict[str, object]]:
    src = GOLDEN / name
    dst = tmp_path / src.name
    dst.write_text(src.read_text())
    for release in RELEASES:
        golden_path(dst, release).write_text(golden_path(src, release).read_text())
    return dst, json.loads(golden_path(src).read_text())


def test_each_release_is_checked_at_its_own_emulated_version(tmp_path: Path) -> None:
    """A golden file is replayed with ksched at its release's emulation: the 1.36 file of a
    scenario whose outcome is the same in both releases passes only under its own name."""
    src = GOLDEN / "fit_error_lists_every_reason_sorted.yaml"
    dst = tmp_path / src.name
    dst.write_text(src.read_text())
    old = golden_path(src, "v1.36.3")
    golden_path(dst, "v1.36.3").write_text(old.read_text())
    assert check(dst, "v1.36.3") == []
    assert provenance(dst, "v1.36.3") == []
    missing = golden_path(dst, "v1.37.2").name
    assert provenance(dst, "v1.37.2") == [f"{missing}: missing; record it"]


def test_provenance_refuses_what_the_recorder_did_not_write(tmp_path: Path) -> None:
    path, golden = _copy(tmp_path, "fit_error_lists_every_reason_sorted.yaml")
    assert provenance(path, DEFAULT_VERSION) == []
    # another release's file under this release's name: re-record
    golden_path(path, "v1.37.0").write_text(golden_path(path, "v1.36.3").read_text())
    (problem, hint) = provenance(path, "v1.37.0")
    assert "recorded from kube-scheduler v1.36.3, pinned v1.37.0" in problem
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
