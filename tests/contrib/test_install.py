"""ksched-contrib as a separate distribution: installed, discovered, listed, configured."""

from __future__ import annotations

import json
import re
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import main
from ksched.framework.registry import ENTRY_POINT_GROUP
from ksched.plugins import default_registry

from ._install import CONTRIB_DIR, DIST, ROOT, Installed
from ._sim import node, pod, podgroup

EXPECTED = {
    "PodNameLength": ["filter"],
    "ShortNodeName": ["score"],
    "Lucky": ["filter", "score"],
    "Sample": ["preFilter", "filter", "preBind"],
    "Coscheduling": ["queueSort", "preFilter", "postFilter", "reserve", "permit"],
}


def test_ksched_plugins_lists_all_five_from_the_distribution(
    contrib: Installed, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plugins", "--output", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    for name, points in EXPECTED.items():
        assert rows[name] == {"name": name, "extensionPoints": points, "distribution": DIST}
    assert rows["PrioritySort"]["distribution"] == "ksched"
    assert main(["plugins"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert re.match(
        r"Coscheduling\s+queueSort, preFilter, postFilter, reserve, permit\s+"
        r"ksched-contrib$",
        next(line for line in table if line.startswith("Coscheduling")),
    )


def test_installed_files_come_from_the_install_not_the_source_tree(contrib: Installed) -> None:
    reg = default_registry()
    spec = reg.get("Coscheduling")
    assert spec is not None and spec.cls is not None
    where = Path(sys.modules[spec.cls.__module__].__file__ or "")
    if contrib.path is not None:
        assert where.is_relative_to(contrib.path), (contrib.how, where)


def test_pyproject_entry_points_match_the_package_table(contrib: Installed) -> None:
    with (CONTRIB_DIR / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    import ksched_contrib  # type: ignore[import-not-found,unused-ignore]

    assert project["name"] == DIST
    assert project["entry-points"][ENTRY_POINT_GROUP] == ksched_contrib.PLUGINS
    assert set(ksched_contrib.PLUGINS) == set(EXPECTED)


def test_ksched_never_imports_ksched_contrib() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "ksched").rglob("*.py")
        if "ksched_contrib" in p.read_text()
    ]
    assert offenders == []


def write(tmp_path: Path, name: str, docs: list[dict[str, Any]] | dict[str, Any]) -> str:
    p = tmp_path / name
    p.write_text(yaml.safe_dump_all(docs) if isinstance(docs, list) else yaml.safe_dump(docs))
    return str(p)


def profile_config(
    plugins: dict[str, Any], plugin_config: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    prof: dict[str, Any] = {"schedulerName": "ksched", "plugins": plugins}
    if plugin_config is not None:
        prof["pluginConfig"] = plugin_config
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [prof],
    }


def simulate_cli(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    objs: list[dict[str, Any]],
    cfg: dict[str, Any],
) -> dict[str, dict[str, Any]]:
    rc = main(
        [
            "simulate",
            "--cluster",
            write(tmp_path, "cluster.yaml", objs),
            "--config",
            write(tmp_path, "config.yaml", cfg),
            "--output",
            "json",
        ]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    return {p["name"]: p for p in json.loads(out.out)["pods"]}


def test_simulate_cli_places_by_name_lengths(
    contrib: Installed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = simulate_cli(
        tmp_path,
        capsys,
        [node("worker-long"), node("w1"), node("worker"), pod("pod1"), pod("test-pod")],
        profile_config(
            {"multiPoint": {"enabled": [{"name": "PodNameLength"}, {"name": "ShortNodeName"}]}}
        ),
    )
    assert (pods["pod1"]["status"], pods["pod1"]["node"]) == ("Scheduled", "w1")
    assert pods["test-pod"]["status"] == "Unschedulable"
    assert "3 pod name length 8 exceeds 4" in pods["test-pod"]["message"]


def test_simulate_cli_gang_from_a_cluster_file_with_podgroups(
    contrib: Installed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ksched.sim import Simulation, parse_cluster

    cfg = profile_config(
        {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
        }
    )
    from ksched.config import load_config_data

    probe = Simulation(
        parse_cluster("", "empty"), load_config_data(cfg, "c", None)[0], default_registry()
    )
    if not all("podgroups" in fw.handle.listers for fw in probe.sched.frameworks.values()):
        pytest.skip('ksched simulate does not provide handle.listers["podgroups"] yet')
    pods = simulate_cli(
        tmp_path,
        capsys,
        [
            node("n1", cpu="2"),
            podgroup("fits", 2),
            podgroup("too-big", 3),
            pod("f1", "500m", group="fits"),
            pod("f2", "500m", group="fits"),
            pod("t1", "500m", group="too-big"),
            pod("t2", "500m", group="too-big"),
            pod("t3", "500m", group="too-big"),
        ],
        cfg,
    )
    assert {n: p["status"] for n, p in pods.items()} == {
        "f1": "Scheduled",
        "f2": "Scheduled",
        "t1": "Unschedulable",
        "t2": "Unschedulable",
        "t3": "Unschedulable",
    }


@pytest.mark.parametrize(
    ("plugin", "args", "message"),
    [
        (
            "PodNameLength",
            {"maxNameLength": "4"},
            "plugin PodNameLength: args.maxNameLength: must be an integer, got '4'",
        ),
        (
            "PodNameLength",
            {"maxNameLength": -1},
            "plugin PodNameLength: args.maxNameLength: must be at least 0, got -1",
        ),
        ("Lucky", {"seed": True}, "plugin Lucky: args.seed: must be an integer or null, got True"),
        (
            "Sample",
            {"favourite_color": "red"},
            "plugin Sample: args.favourite_color: unknown field (known fields: favorite_color, "
            "favorite_number, thanks_to)",
        ),
        (
            "Coscheduling",
            {"permitWaitingTimeSeconds": 0},
            "plugin Coscheduling: args.permitWaitingTimeSeconds: must be at least 1, got 0",
        ),
    ],
)
def test_bad_args_stop_config_validate_with_the_field(
    contrib: Installed,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    plugin: str,
    args: dict[str, Any],
    message: str,
) -> None:
    points = {
        "Coscheduling": {
            "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
            "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
        }
    }
    plugins = points.get(plugin, {"multiPoint": {"enabled": [{"name": plugin}]}})
    path = write(tmp_path, "config.yaml", profile_config(plugins, [{"name": plugin, "args": args}]))
    assert main(["config", "validate", path]) == 2
    err = capsys.readouterr().err
    assert message in err, err


@pytest.mark.parametrize(
    "page", ["podnamelength", "shortnodename", "lucky", "sample", "coscheduling"]
)
def test_documented_config_is_valid(
    contrib: Installed, tmp_path: Path, page: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The configuration shown on each plugin's doc page validates as is."""
    doc = (CONTRIB_DIR / "docs" / f"{page}.md").read_text()
    block = re.search(r"```yaml\n(apiVersion: kubescheduler.*?)```", doc, re.S)
    assert block is not None
    path = tmp_path / "config.yaml"
    path.write_text(textwrap.dedent(block.group(1)))
    assert main(["config", "validate", str(path)]) == 0, capsys.readouterr().err
