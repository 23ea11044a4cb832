"""`ksched simulate` on cluster files with quantities at the int64 boundaries (issue 16,
item 1): a node of 8Ei, pods of 1e18 (one bound by nodeName for another scheduler),
2**63 - 1 millicores, 1n and negative amounts used to end in an uncaught ExceptionGroup
traceback. Now the run completes (exit 0), and a file it cannot use exits 2 with one
line naming the object and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.cli import main
from tests.sim.test_scenarios import node as scenario_node
from tests.sim.test_scenarios import pod as scenario_pod


def node(name: str, **alloc: str) -> dict[str, Any]:
    return scenario_node(name, extra=alloc)


def pod(
    name: str, node_name: str = "", scheduler: str = "ksched", **requests: str
) -> dict[str, Any]:
    p = scenario_pod(name, node_name=node_name, schedulerName=scheduler)
    p["spec"]["containers"][0]["resources"]["requests"] = requests
    return p


def write(tmp_path: Path, items: list[dict[str, Any]]) -> Path:
    f = tmp_path / "cluster.yaml"
    f.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    return f


def simulate(capsys: pytest.CaptureFixture[str], f: Path) -> tuple[int, str, str]:
    rc = main(["simulate", "--output", "json", "--explain", "--cluster", str(f)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_boundary_cluster_is_simulated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(
        tmp_path,
        [
            node("huge", cpu="8Ei", memory="8Ei", pods="8Ei"),
            node("nano", cpu="1n", memory="1n"),
            node("hogged"),
            # bound by nodeName, for another scheduler: 2**63 - 1 millicores used
            pod("hog", "hogged", "default-scheduler", cpu="1e18", memory="1e18"),
            pod("big", cpu="1e18"),
            pod("max-milli", cpu="9223372036854775807m"),
            pod("tiny", cpu="1n", memory="1n"),
        ],
    )
    rc, out, err = simulate(capsys, f)
    assert rc == 0, err
    assert "Traceback" not in err
    by = {p["name"]: p for p in json.loads(out)["pods"]}
    # only "huge" has 2**63 - 1 millicores; once "big" took them, nothing has
    assert (by["big"]["status"], by["big"]["node"]) == ("Scheduled", "huge")
    assert by["max-milli"]["status"] == "Unschedulable"
    assert "Insufficient cpu" in by["max-milli"]["message"]
    # one millicore: "nano" (or a node with room) takes it; never the hogged node
    assert by["tiny"]["status"] == "Scheduled" and by["tiny"]["node"] != "hogged"
    scored = 0
    for p in by.values():
        for plugin, per_node in ((p.get("explain") or {}).get("score") or {}).items():
            for s in per_node.values():
                assert 0 <= s["normalized"] <= 100, (p["name"], plugin)
                if plugin.startswith("NodeResources"):  # raw scores of others are counts
                    assert 0 <= s["raw"] <= 100, (p["name"], plugin)
                    scored += 1
    assert scored > 0


@pytest.mark.parametrize(
    ("item", "line"),
    [
        (
            node("negative", cpu="-4", memory="-8Gi"),
            'Node negative: status.capacity[cpu]: Invalid value: "-4": must be greater than '
            "or equal to 0 (and 3 more)",
        ),
        (
            pod("minus", memory="-1e18"),
            "Pod default/minus: spec.containers[0].resources.requests[memory]: Invalid value: "
            '"-1e18": must be greater than or equal to 0',
        ),
        (
            # an exponent beyond int32 is not a quantity (kube-apiserver rejects it too)
            pod("bad", cpu="1e2147483648"),
            "Pod default/bad: spec.containers[0].resources.requests[cpu]: Invalid value: "
            '"1e2147483648": quantity exponent out of range',
        ),
    ],
)
def test_a_quantity_the_api_server_would_refuse_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], item: dict[str, Any], line: str
) -> None:
    """Negative amounts and unreadable quantities: one line naming object and field."""
    f = write(tmp_path, [node("n"), item, pod("ok", cpu="1")])
    rc, out, err = simulate(capsys, f)
    assert (rc, out) == (2, "")
    assert err.splitlines() == [f"{f}: {line}"]


_QUANTITIES = st.one_of(
    st.sampled_from(
        ["1e18", "-1e18", "8Ei", "-8Ei", "9223372036854775807m", "1n", "-1", "0", "1e100"]
    ),
    st.integers(-(2**70), 2**70).map(str),
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-(10**6), 10**6), st.integers(-30, 40)),
    st.text("0123456789.-+eEimnukMGTP", max_size=8),  # mostly not quantities at all
)
_RESOURCES = st.dictionaries(
    st.sampled_from(["cpu", "memory", "ephemeral-storage", "pods", "example.com/gpu"]),
    _QUANTITIES,
    max_size=4,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    nodes=st.lists(_RESOURCES, min_size=1, max_size=3),
    pods=st.lists(st.tuples(_RESOURCES, st.booleans()), max_size=4),
)
def test_fuzzed_quantities_never_crash(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    nodes: list[dict[str, str]],
    pods: list[tuple[dict[str, str], bool]],
) -> None:
    items = [node(f"n{i}", **a) for i, a in enumerate(nodes)]
    items += [
        pod(f"p{i}", "n0" if bound else "", "other" if bound else "ksched", **r)
        for i, (r, bound) in enumerate(pods)
    ]
    rc, out, err = simulate(capsys, write(tmp_path, items))
    assert "Traceback" not in err and "Traceback" not in out
    assert rc in (0, 2), err
    if rc == 2:
        assert len(err.strip().splitlines()) == 1, err
