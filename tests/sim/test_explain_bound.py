"""``simulate --explain NS/NAME`` for a pod the file has bound already: explained as if
pending on the cluster without it, with where its node ranks; another scheduler's pod is
refused naming ``--scheduler-name``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import main
from tests.sim.test_preemption_scenarios import node, pod


def _file(tmp_path: Path) -> Path:
    """n1 holds a (1 CPU) and b (2 CPU); n2 is empty; n3 (1 CPU) holds c, 2 CPU the file
    overcommits it with; o is another scheduler's, on n2; p is pending."""
    docs: list[dict[str, Any]] = [
        node("n1"),
        node("n2"),
        node("n3", cpu="1"),
        pod("a", "1", "n1"),
        pod("b", "2", "n1"),
        pod("c", "2", "n3"),
        pod("o", "1", "n2", schedulerName="default-scheduler"),
        pod("p", "3"),
        pod("q", "1", schedulerName="default-scheduler"),
    ]
    f = tmp_path / "cluster.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    return f


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["simulate", *args])
    got = capsys.readouterr()
    return rc, got.out, got.err


def test_a_bound_pod_is_explained_as_if_pending_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _file(tmp_path)
    rc, out, err = _run(capsys, "--cluster", str(f), "--explain", "default/b", "--output", "json")
    assert rc == 0, err
    [b] = json.loads(out)["pods"]  # the one pod explained: p and the rest are not scheduled
    assert b["name"] == "b" and b["status"] == "Scheduled"
    ranking = b["explain"]["ranking"]
    # without b, n1 holds only a (1 of 4 CPUs), o holds 1 of n2's: the two tie on CPU and
    # n3 (1 CPU, c on it) cannot fit b
    assert sorted(r["node"] for r in ranking) == ["n1", "n2"]
    n1 = next(r for r in ranking if r["node"] == "n1")
    n2 = next(r for r in ranking if r["node"] == "n2")
    bound = b["bound"]
    assert bound["node"] == "n1" and bound["feasible"] == 2
    assert bound["total"] == n1["total"] and bound["scores"] == n1["scores"]
    assert bound["rank"] == (1 if n1["total"] >= n2["total"] else 2)
    assert bound["tiedWith"] == (1 if n1["total"] == n2["total"] else 0)
    assert bound["best"] == max(n1["total"], n2["total"])
    assert [g["nodes"] for g in b["explain"]["rejected"]] == [["n3"]]


def test_a_bound_pod_in_text_leads_with_its_nodes_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _file(tmp_path)
    rc, out, err = _run(capsys, "--cluster", str(f), "--explain", "default/a")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == (
        f"default/a: bound to n1 in {f}; explained as if pending on the cluster without it "
        "(its other bound pods stay, pending pods are left out)"
    )
    # without a, n1 holds b (2 CPUs) and n2 holds o (1): n2 is the better node
    assert lines[1].startswith("  its node n1: rank 2 of 2 feasible nodes, total ")
    assert "; the best total is " in lines[1]
    assert lines[2] == "default/a: Scheduled on n2"
    assert any(line.split()[:3] == ["*", "1", "n2"] for line in lines)


def test_a_bound_pod_on_a_node_it_no_longer_fits_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _file(tmp_path)
    rc, out, _ = _run(capsys, "--cluster", str(f), "--explain", "default/c")
    assert rc == 0
    assert out.splitlines()[1] == "  its node n3: rejected here: Insufficient cpu"


def test_another_schedulers_pod_names_the_flag_that_explains_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _file(tmp_path)
    for key, what in (
        ("default/o", "bound to n2 by scheduler default-scheduler"),
        ("default/q", "a pending pod of scheduler default-scheduler"),
    ):
        rc, out, err = _run(capsys, "--cluster", str(f), "--explain", key)
        assert rc == 2 and out == ""
        [line] = err.splitlines()
        assert line.startswith(f"ksched simulate: --explain {key}: {what}, which no profile")
        assert "--scheduler-name default-scheduler" in line
    rc, out, _ = _run(
        capsys, "--cluster", str(f), "--explain", "default/o", "--scheduler-name",
        "default-scheduler",
    )  # fmt: skip
    assert rc == 0
    assert out.splitlines()[1].startswith("  its node n2: rank ")


def test_a_bound_pods_report_is_of_the_run_that_explains_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = _file(tmp_path)
    page = tmp_path / "b.html"
    rc, out, _ = _run(capsys, "--cluster", str(f), "--explain", "default/b", "--report", str(page))
    assert rc == 0 and out.startswith("default/b: bound to n1")
    text = page.read_text()
    assert text.count('<section class="pod"') == 1 and 'data-pod="default/b"' in text
    rc, _, err = _run(
        capsys, "--cluster", str(f), "--explain", "default/b", "--report", str(tmp_path / "x/y")
    )
    assert rc == 2 and len(err.splitlines()) == 1 and "--report" in err
