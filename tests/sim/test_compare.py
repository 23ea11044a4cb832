"""``simulate --compare``: the same pending pods under two configurations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CLUSTER = str(EXAMPLES / "cluster.yaml")
LEAST = str(EXAMPLES / "least-allocated.yaml")
MOST = str(EXAMPLES / "most-allocated.yaml")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["simulate", *args])
    got = capsys.readouterr()
    return rc, got.out, got.err


def compare_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    rc, out, err = cli(capsys, "--output", "json", *args)
    assert rc == 0, err
    return json.loads(out)  # the whole of stdout is the one document


def placements(capsys: pytest.CaptureFixture[str], cluster: str, config: str) -> dict[str, Any]:
    rc, out, _ = cli(capsys, "--output", "json", "--cluster", cluster, "--config", config)
    assert rc == 0
    return {(p["namespace"], p["name"]): (p["node"], p["status"]) for p in json.loads(out)["pods"]}


def test_most_allocated_packs_the_example_on_fewer_nodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = compare_json(capsys, "--cluster", CLUSTER, "--config", LEAST, "--compare", MOST)
    assert set(data) == {"summary", "differences"}
    a, b = data["summary"]["A"], data["summary"]["B"]
    assert b["nodesUsed"] < a["nodesUsed"]
    assert a["scheduled"] == b["scheduled"] == 5
    for side in (a, b):
        assert {"scheduled", "nodesUsed", "allocation"} <= set(side)
        for res, figures in side["allocation"].items():
            assert set(figures) == {"mean", "max", "nodesAbove80"}, res
            assert 0 <= figures["mean"] <= figures["max"]
    # Packing raises the busiest node's CPU share.
    assert b["allocation"]["cpu"]["max"] > a["allocation"]["cpu"]["max"]
    # The differences are exactly the pods two plain runs place differently.
    pa = placements(capsys, CLUSTER, LEAST)
    pb = placements(capsys, CLUSTER, MOST)
    expected = sorted(k for k in pa if pa[k] != pb[k])
    assert expected  # the example does tell the strategies apart
    assert [(d["namespace"], d["name"]) for d in data["differences"]] == expected
    for d in data["differences"]:
        assert set(d) == {"namespace", "name", "a", "b"}
        key = (d["namespace"], d["name"])
        assert (d["a"]["node"], d["a"]["status"]) == pa[key]
        assert (d["b"]["node"], d["b"]["status"]) == pb[key]


def test_same_seed_same_comparison(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--cluster", CLUSTER, "--compare", MOST, "--seed", "3")
    assert compare_json(capsys, *args) == compare_json(capsys, *args)


def node(name: str, zone: str) -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "10"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
        },
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "w"}},
        "spec": {
            "schedulerName": "ksched",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        },
    }


def test_summary_figures_on_a_cluster_worked_out_by_hand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two 4-CPU nodes in two zones, four 1-CPU pods: spread 2+2, or packed 4+0."""
    f = tmp_path / "c.yaml"
    f.write_text(
        yaml.safe_dump_all([node("n1", "a"), node("n2", "b")] + [pod(f"p{i}") for i in range(4)])
    )
    data = compare_json(capsys, "--cluster", str(f), "--config", LEAST, "--compare", MOST)
    a, b = data["summary"]["A"], data["summary"]["B"]
    assert (a["scheduled"], a["nodesUsed"], b["scheduled"], b["nodesUsed"]) == (4, 2, 4, 1)
    assert a["allocation"]["cpu"] == {"mean": 50.0, "max": 50.0, "nodesAbove80": 0}
    assert b["allocation"]["cpu"] == {"mean": 50.0, "max": 100.0, "nodesAbove80": 1}
    assert a["allocation"]["memory"] == {"mean": 25.0, "max": 25.0, "nodesAbove80": 0}
    assert a["allocation"]["pods"] == {"mean": 20.0, "max": 20.0, "nodesAbove80": 0}
    assert a["topologySpread"]["zones"] == {"a": 2, "b": 2} and a["topologySpread"]["skew"] == 0
    assert sorted(b["topologySpread"]["zones"].values()) == [0, 4]
    assert b["topologySpread"]["skew"] == 4
    assert b["topologySpread"]["workloads"]["default/app=w"]["skew"] == 4
    # Two of the four pods moved to the other node.
    assert len(data["differences"]) == 2
    rc, out, _ = cli(capsys, "--cluster", str(f), "--config", LEAST, "--compare", MOST)
    assert rc == 0
    rows = {line.split("  ")[0]: line for line in out.splitlines()}
    assert rows["nodes used"].split()[2:] == ["2/2", "1/2"]
    assert rows["pods scheduled"].split()[2:] == ["4/4", "4/4"]
    assert "2 pod(s) differ:" in out


def config_file(path: Path, profiles: list[dict[str, Any]]) -> Path:
    kind = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    path.write_text(yaml.safe_dump({**kind, "profiles": profiles}))
    return path


def test_a_pod_only_one_config_schedules_is_a_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = config_file(tmp_path / "other.yaml", [{"schedulerName": "someone-else"}])
    data = compare_json(capsys, "--cluster", CLUSTER, "--compare", str(other))
    assert data["summary"]["B"]["scheduled"] == 0
    assert len(data["differences"]) == 7
    assert {d["b"]["status"] for d in data["differences"]} == {"NotConsidered"}


def explained_alone(capsys: pytest.CaptureFixture[str], config: str, key: str) -> Any:
    """``key``'s explanation from a plain ``--explain`` run of ``config``."""
    rc, out, _ = cli(
        capsys, "--output", "json", "--cluster", CLUSTER, "--config", config, "--explain", key
    )
    assert rc == 0
    return next(p for p in json.loads(out)["pods"] if f"{p['namespace']}/{p['name']}" == key)


def test_compare_explain_one_pod_has_both_configs_explanations(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each side is exactly what that config's own --explain says of the pod."""
    data = compare_json(
        capsys, "--cluster", CLUSTER, "--config", LEAST, "--compare", MOST,
        "--explain", "shop/web-0",
    )  # fmt: skip
    [pair] = data["explain"]
    assert (pair["namespace"], pair["name"]) == ("shop", "web-0")
    assert pair["a"] == explained_alone(capsys, LEAST, "shop/web-0")
    assert pair["b"] == explained_alone(capsys, MOST, "shop/web-0")
    assert pair["a"]["node"] != pair["b"]["node"]  # the pod moved
    assert data["differences"]  # and the comparison is all there


def test_compare_explain_in_text_ranks_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = cli(
        capsys, "--cluster", CLUSTER, "--config", LEAST, "--compare", MOST,
        "--explain", "shop/web-0", "--top", "3",
    )  # fmt: skip
    assert rc == 0, err
    a = explained_alone(capsys, LEAST, "shop/web-0")["explain"]
    b = explained_alone(capsys, MOST, "shop/web-0")["explain"]
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("shop/web-0  A: "))
    block = lines[head:]
    assert block[0].split() == ["shop/web-0", "A:", LEAST, "B:", MOST]
    assert block[1].split()[:4] == ["result", "Scheduled", "on", a["node"]]
    assert block[1].split()[-1] == b["node"]
    ranks = [line.split() for line in block if line.startswith("#")]
    assert len(ranks) == 3  # --top 3
    for i, cells in enumerate(ranks):
        ra, rb = a["ranking"][i], b["ranking"][i]
        want = ["*"] * ra["selected"] + [ra["node"], str(ra["total"])]
        want += ["*"] * rb["selected"] + [rb["node"], str(rb["total"])]
        assert cells[1:] == want
    # the weighted scores of the nodes the two chose, under each config
    table = block[block.index("  weighted scores on the chosen nodes, per config:") + 1 :]
    assert table[0].split() == ["PLUGIN", "A", a["node"], "A", b["node"], "B", a["node"], "B",
                                b["node"]]  # fmt: skip
    fit = next(line.split() for line in table if line.split()[0] == "NodeResourcesFit")
    by_node_a = {r["node"]: r for r in a["ranking"]}
    by_node_b = {r["node"]: r for r in b["ranking"]}
    assert fit[1:] == [
        str(by_node_a[a["node"]]["scores"]["NodeResourcesFit"]),
        str(by_node_a[b["node"]]["scores"]["NodeResourcesFit"]),
        str(by_node_b[a["node"]]["scores"]["NodeResourcesFit"]),
        str(by_node_b[b["node"]]["scores"]["NodeResourcesFit"]),
    ]


def test_compare_explain_alone_explains_every_pod_that_differs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = compare_json(capsys, "--cluster", CLUSTER, "--config", LEAST, "--compare", MOST,
                        "--explain")  # fmt: skip
    moved = [(d["namespace"], d["name"]) for d in data["differences"]]
    assert [(e["namespace"], e["name"]) for e in data["explain"]] == moved
    for e in data["explain"]:
        assert e["a"]["explain"]["node"] == e["a"]["node"]
        assert e["b"]["explain"]["node"] == e["b"]["node"]


def test_compare_explain_of_a_bound_pod_shows_its_node_under_both(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = ("--cluster", CLUSTER, "--config", LEAST, "--compare", MOST,
            "--explain", "shop/postgres-0", "--scheduler-name", "default-scheduler")  # fmt: skip
    data = compare_json(capsys, *args)
    [pair] = data["explain"]
    for side in ("a", "b"):
        bound = pair[side]["bound"]
        assert bound["node"] == "medium-b1"
        ranking = pair[side]["explain"]["ranking"]
        row = next(r for r in ranking if r["node"] == "medium-b1")
        assert bound["total"] == row["total"]
        assert bound["rank"] == 1 + sum(1 for r in ranking if r["total"] > row["total"])
    rc, out, _ = cli(capsys, *args)
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("shop/postgres-0: bound to medium-b1 in ")
    its = next(line for line in lines if line.startswith("its node medium-b1"))
    ba, bb = pair["a"]["bound"], pair["b"]["bound"]
    assert f"#{ba['rank']} of {ba['feasible']}, total {ba['total']}" in its
    assert f"#{bb['rank']} of {bb['feasible']}, total {bb['total']}" in its
    assert "  weighted scores on its node and the chosen nodes, per config:" in lines


def test_compare_explain_of_a_pod_of_neither_config_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for key, says in (("shop/postgres-0", "bound to medium-b1 by scheduler default-scheduler"),
                      ("shop/nope", "no pod of that name")):  # fmt: skip
        rc, out, err = cli(capsys, "--cluster", CLUSTER, "--compare", MOST, "--explain", key)
        assert rc == 2 and out == ""
        assert len(err.splitlines()) == 1 and says in err


def test_bad_compare_config_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nope = {"schedulerName": "ksched", "plugins": {"score": {"enabled": [{"name": "Nope"}]}}}
    bad = config_file(tmp_path / "b.yaml", [nope])
    rc, out, err = cli(capsys, "--cluster", CLUSTER, "--compare", str(bad))
    assert rc == 2 and out == ""
    assert str(bad) in err and "Nope" in err
