"""Pod groups as one unit in simulate's outputs: membership by
``spec.schedulingGroup.podGroupName``, the report's table, ``--compare``'s gangs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksched.cli import main
from ksched.sim import PodResult, parse_cluster
from ksched.sim.compare import Run, compare_runs, render_compare
from ksched.sim.groups import group_rows, pod_groups
from ksched.sim.report import render_report
from tests.sim.test_report import parse

ROOT = Path(__file__).resolve().parents[2]
GANG = ROOT / "examples" / "gang-pending.yaml"

CLUSTER = """
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", pods: "10"}}}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: gang, namespace: ml}
  spec: {schedulingPolicy: {gang: {minCount: 2}}}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: short, namespace: ml}
  spec: {schedulingPolicy: {gang: {minCount: 3}}}
- apiVersion: scheduling.k8s.io/v1beta1
  kind: PodGroup
  metadata: {name: basic, namespace: ml}
  spec: {schedulingPolicy: {basic: {}}}
- {apiVersion: v1, kind: Pod, metadata: {name: g-0, namespace: ml},
   spec: {nodeName: n1, schedulingGroup: {podGroupName: gang}}}
- {apiVersion: v1, kind: Pod, metadata: {name: g-1, namespace: ml},
   spec: {schedulingGroup: {podGroupName: gang}}}
- {apiVersion: v1, kind: Pod, metadata: {name: g-2, namespace: ml},
   spec: {schedulingGroup: {podGroupName: gang}}}
- {apiVersion: v1, kind: Pod, metadata: {name: done, namespace: ml},
   spec: {schedulingGroup: {podGroupName: gang}}, status: {phase: Succeeded}}
- {apiVersion: v1, kind: Pod, metadata: {name: s-0, namespace: ml},
   spec: {schedulingGroup: {podGroupName: short}}}
- {apiVersion: v1, kind: Pod, metadata: {name: b-0, namespace: ml},
   spec: {schedulingGroup: {podGroupName: basic}}}
- {apiVersion: v1, kind: Pod, metadata: {name: o-0, namespace: ml},
   spec: {schedulingGroup: {podGroupName: orphan}}}
- {apiVersion: v1, kind: Pod, metadata: {name: alone, namespace: ml}, spec: {}}
"""


def results(**status: str | None) -> list[PodResult]:
    """Pending pods' results: ``name=node`` scheduled there, ``name=None`` unschedulable."""
    return [
        PodResult("ml", n, node, "Scheduled" if node else "Unschedulable", "" if node else f"{n}?")
        for n, node in status.items()
    ]


def test_membership_is_the_scheduling_group_of_live_pods() -> None:
    groups = pod_groups(parse_cluster(CLUSTER, "t"))
    assert list(groups) == ["ml/gang", "ml/short", "ml/basic", "ml/orphan"]
    gang = groups["ml/gang"]
    assert gang.members == ("ml/g-0", "ml/g-1", "ml/g-2")  # not the finished pod
    assert gang.bound == {"ml/g-0": "n1"}
    assert (gang.min_count, gang.required) == (2, 2)
    assert (groups["ml/basic"].min_count, groups["ml/basic"].required) == (None, 1)
    assert groups["ml/orphan"].pod_group is None


def test_rows_count_bound_members_and_say_why_a_group_has_not_started() -> None:
    rows = {
        r["group"]: r
        for r in group_rows(
            parse_cluster(CLUSTER, "t"),
            results(**{"g-1": None, "g-2": None, "s-0": "n1", "b-0": "n1", "o-0": None}),
        )
    }
    gang = rows["ml/gang"]
    assert (gang["bound"], gang["pending"], gang["started"]) == (1, 2, False)
    assert gang["members"][0] == {"pod": "ml/g-0", "node": "n1", "status": "Scheduled"}
    assert gang["members"][1] == {"pod": "ml/g-1", "node": None, "status": "Unschedulable"}
    assert gang["reason"] == "g-1?"
    short = rows["ml/short"]
    assert (short["bound"], short["started"]) == (1, False)
    assert short["reason"] == "gang minCount 3 not satisfiable: only 1 member pod(s) exist"
    assert rows["ml/basic"]["started"] and rows["ml/basic"]["reason"] == ""
    assert rows["ml/orphan"]["reason"] == "PodGroup ml/orphan is not in the cluster file"
    # one more bound member starts the gang (minCount 2)
    started = group_rows(parse_cluster(CLUSTER, "t"), results(**{"g-1": "n1", "g-2": None}))
    assert started[0]["started"] and started[0]["reason"] == ""


def test_report_has_a_row_per_group_linking_its_members() -> None:
    res = results(**{"g-1": None, "g-2": "n1", "alone": "n1"})
    rows = group_rows(parse_cluster(CLUSTER, "t"), res)
    page = parse(render_report(res, [], [], source="t", groups=rows))
    by_group = {tr.attrs["data-group"]: tr for tr in page.all("tr", "group")}
    assert set(by_group) == {"ml/gang", "ml/short", "ml/basic", "ml/orphan"}
    gang = by_group["ml/gang"]
    assert gang.attrs["data-started"] == "true"
    links = {a.attrs["href"]: a.content() for a in gang.all("a")}
    assert links == {"#pod-1": "ml/g-2", "#pod-0": "ml/g-1"}  # g-0 was bound before
    assert page.one("b", id="groups-started").content() == "1"
    # a file without groups: no such section
    assert 'id="groups"' not in render_report(res, [], [], source="t")


def test_compare_lists_the_gangs_each_config_starts() -> None:
    cf = parse_cluster(CLUSTER, "t")
    a = Run(results(**{"g-1": "n1", "g-2": None, "s-0": None, "b-0": "n1"}), [], [])
    b = Run(results(**{"g-1": None, "g-2": None, "s-0": None, "b-0": "n1"}), [], [])
    data = compare_runs(a, b, pod_groups(cf))
    gangs = {g["group"]: g for g in data["gangs"]}
    assert gangs["ml/gang"] == {
        "group": "ml/gang",
        "members": 3,
        "a": {"bound": 2, "started": True},
        "b": {"bound": 1, "started": False},
    }
    assert "gangs" not in compare_runs(a, b)
    text = render_compare(data, "x.yaml", "y.yaml")
    at = text.index("pod groups started: A 2/4, B 1/4")
    assert text[at + 1].split() == ["GANG", "A", "B"]
    assert text[at + 2].split() == [
        "ml/gang",
        "started",
        "(2/3",
        "bound)",
        "pending",
        "(1/3",
        "bound)",
    ]


def test_cli_report_and_compare_show_the_pending_gang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "r.html"
    assert main(["simulate", "--cluster", str(GANG), "--report", str(page)]) == 0
    tr = parse(page.read_text()).one("tr", data_group="ml/trainer")
    assert tr.attrs["data-started"] == "false"
    # why: the members' message (which the pod-group cycle words for the whole group)
    assert tr.all("td")[-1].content().strip()
    capsys.readouterr()
    assert main(["simulate", "--cluster", str(GANG), "--compare", str(ROOT / "examples" /
                 "most-allocated.yaml"), "--output", "json"]) == 0  # fmt: skip
    (gang,) = json.loads(capsys.readouterr().out)["gangs"]
    assert gang["group"] == "ml/trainer" and gang["members"] == 4
    assert not gang["a"]["started"] and not gang["b"]["started"]
