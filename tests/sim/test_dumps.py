"""Real dumps: other schedulers' pending pods (``--scheduler-name``, ``--all-pending``),
the line saying which were skipped, and cluster files that are big, broken or hostile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import main
from ksched.sim import ClusterFileError, load_cluster, parse_cluster
from ksched.testing import make_node, make_pod

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster.yaml"


def _simulate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, Any], str]:
    rc = main(["simulate", "--output", "json", *args])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return {p["name"]: p for p in json.loads(out)["pods"]}, err


def test_other_schedulers_pods_are_skipped_with_one_line_saying_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pods, err = _simulate(capsys, "--cluster", str(EXAMPLE))
    assert "other-scheduler-pod" not in pods
    assert err.splitlines() == [
        "ksched simulate: skipped 1 pending pod of other schedulers: default-scheduler (1); "
        "--scheduler-name NAME or --all-pending schedules them"
    ]


@pytest.mark.parametrize("flags", [["--scheduler-name", "default-scheduler"], ["--all-pending"]])
def test_other_schedulers_pods_scheduled_with_the_first_profile(
    capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    before, _ = _simulate(capsys, "--cluster", str(EXAMPLE))
    pods, err = _simulate(capsys, "--cluster", str(EXAMPLE), *flags)
    assert pods["other-scheduler-pod"]["status"] == "Scheduled"
    assert "skipped" not in err
    # the adopted pod comes last (lowest priority, added last): the others are unchanged
    assert {n: p["node"] for n, p in pods.items() if n in before} == {
        n: p["node"] for n, p in before.items()
    }


def test_scheduler_name_is_repeatable_and_counts_per_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objs = [make_node("n1")]
    objs += [make_pod(f"a{i}", scheduler_name="alpha") for i in range(2)]
    objs += [make_pod("b0", scheduler_name="beta"), make_pod("c0", scheduler_name="gamma")]
    objs += [make_pod("bound", scheduler_name="gamma", node_name="n1")]
    f = tmp_path / "c.yaml"
    f.write_text(yaml.safe_dump_all(objs))
    pods, err = _simulate(capsys, "--cluster", str(f))
    assert pods == {}
    assert "skipped 4 pending pods of other schedulers: alpha (2), beta (1), gamma (1);" in err
    pods, err = _simulate(
        capsys, "--cluster", str(f), "--scheduler-name", "alpha", "--scheduler-name", "beta"
    )
    assert sorted(pods) == ["a0", "a1", "b0"]
    assert all(p["node"] == "n1" for p in pods.values())
    assert "skipped 1 pending pod of other schedulers: gamma (1);" in err


def test_json_and_yaml_dumps_load_the_same(tmp_path: Path) -> None:
    objs = [make_node("n1", labels={"zone": "a"}), make_pod("p", cpu="1", scheduler_name="x")]
    objs.append(make_pod("q", namespace="", cpu="500m", node_name="n1"))
    del objs[-1]["metadata"]["namespace"]  # a pod without namespace lives in "default"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump_all(objs))
    (tmp_path / "c.json").write_text(json.dumps({"kind": "List", "items": objs}))
    a, b = (load_cluster(str(tmp_path / f"c.{ext}")) for ext in ("yaml", "json"))
    assert [n for n, _ in a.nodes] == [n for n, _ in b.nodes]
    assert [p for p, _ in a.pods] == [p for p, _ in b.pods]
    assert [p.metadata.namespace for p, _ in b.pods] == ["default", "default"]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("kind: Node\nmetadata: {name: n1\n", "c.yaml: not valid YAML: line 3, column 1: "),
        (
            "kind: Node\nmetadata:\n  name: n1\n   bad: x\n",
            "c.yaml: not valid YAML: line 4, column 7: ",
        ),
        (
            '{"kind": "List", "items": [\n  {"kind": "Node",}\n]}',
            "c.yaml: not valid JSON: line 2, column 19: ",
        ),
    ],
)
def test_syntax_errors_name_file_line_and_column(text: str, where: str) -> None:
    with pytest.raises(ClusterFileError) as e:
        parse_cluster(text, "c.yaml")
    assert str(e.value).startswith(where)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    "text",
    [
        "[" * 200_000 + "]" * 200_000,  # YAML flow (libyaml's C composer would segfault)
        "- " * 200_000 + "x",  # YAML block sequences
        '{"kind": "List", "items": [' + "[" * 200_000 + "]" * 200_000 + "]}",  # JSON
        '{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}, "x": '
        + "[" * 200_000
        + "]" * 200_000
        + "}]}",
    ],
    ids=["yaml-flow", "yaml-block", "json-item", "json-in-pod"],
)
def test_deep_nesting_is_an_error_not_a_crash(text: str) -> None:
    with pytest.raises(ClusterFileError) as e:
        parse_cluster(text, "deep")
    assert "nesting deeper than 100 levels" in str(e.value)


def test_invalid_utf8_is_an_error_naming_the_place(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_bytes(b"kind: Node\nmetadata: {name: \xff\xfe}\n")
    with pytest.raises(ClusterFileError) as e:
        load_cluster(str(f))
    assert str(e.value).startswith(f"{f}: not valid YAML")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"kind": "List", "items": 5}', "deep: List ?: metadata.name: Required value"),
        (
            '{"kind": "NodeList", "items": [5]}',
            "deep: expected a Kubernetes object (a mapping), got int",
        ),
        (
            '{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": 5}}]}',
            "deep: Pod default/5: Expected `str`, got `int` - at `metadata.name`",
        ),
    ],
)
def test_json_of_the_wrong_shape_is_named(text: str, error: str) -> None:
    with pytest.raises(ClusterFileError) as e:
        parse_cluster(text, "deep")
    assert str(e.value).startswith(error)
