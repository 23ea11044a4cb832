"""PodGroup scenarios whose expectations were recorded from kube-scheduler v1.37.2
(``tests/testing/gang_golden/*.v1.37.2.golden.json``; v1.37 only, so apart from
``tests/sim/golden``, which every release shares). Re-record with
``KSCHED_KUBE_VERSION=v1.37.2 python -m ksched.testing.differential --record
tests/testing/gang_golden/*.yaml``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksched.testing.differential.generator import GANG_GATES
from ksched.testing.differential.golden import check, golden_path, load_scenario, provenance

GOLDEN = Path(__file__).parent / "gang_golden"
SCENARIOS = sorted(GOLDEN.glob("*.yaml"))
RELEASE = "v1.37.2"


def _id(path: Path) -> str:
    return path.stem


def test_every_scenario_is_a_pod_group_with_its_expectations() -> None:
    assert len(SCENARIOS) >= 7
    for path in SCENARIOS:
        scenario = load_scenario(path)
        assert scenario.batches and scenario.gates == GANG_GATES, path.name
        golden = json.loads(golden_path(path, RELEASE).read_text())["pods"]
        assert set(golden) == {f"{p.namespace}/{p.name}" for p in scenario.pending}
        for p in scenario.pending:
            entry = golden[f"{p.namespace}/{p.name}"]
            assert ("group" in entry) == bool(p.batch), (path.name, p.name)


@pytest.mark.parametrize("path", SCENARIOS, ids=_id)
def test_expectations_were_recorded_from_kube_scheduler(path: Path) -> None:
    assert provenance(path, RELEASE) == []


def test_the_recorded_outcomes_are_all_or_nothing_where_upstream_says_so() -> None:
    """What the files hold: the facts the pod-group cycle must reproduce."""

    def pods(name: str) -> dict[str, dict[str, object]]:
        path = GOLDEN / f"{name}.yaml"
        return dict(json.loads(golden_path(path, RELEASE).read_text())["pods"])

    short = pods("gang_of_three_waits_for_room_for_all")
    assert {v["status"] for v in short.values()} == {"Unschedulable"}
    held = pods("gang_short_of_its_quorum_is_never_tried")
    assert {v["status"] for v in held.values()} == {"Pending"}
    rack = pods("gang_stays_in_one_rack")
    assert {v["node"] for v in rack.values()} <= {"b1", "b2"}


@pytest.mark.parametrize("path", SCENARIOS, ids=_id)
def test_ksched_agrees_with_the_recorded_kube_scheduler(path: Path) -> None:
    assert check(path, RELEASE) == []


def test_a_pod_groups_members_must_be_consecutive(tmp_path: Path) -> None:
    text = (GOLDEN / "gang_of_three_binds_where_three_fit.yaml").read_text()
    docs = text.split("\n---\n")
    alone = next(d for d in docs if "name: alone" in d)
    m1 = next(d for d in docs if "name: m1" in d)
    docs = [d for d in docs if d not in (alone, m1)] + [alone, m1]
    path = tmp_path / "split.yaml"
    path.write_text("\n---\n".join(docs))
    with pytest.raises(ValueError, match="must be consecutive"):
        load_scenario(path)
