"""examples/plugin-package, installed as a third-party distribution: discovered by
``ksched plugins``, placing pods in ``ksched simulate``, validated and benchmarked, and
passing its own test suite against the installed copy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from ksched.cli import main
from ksched.framework.registry import ENTRY_POINT_GROUP
from ksched.plugins import default_registry

from ._install import DIST, PACKAGE_DIR, Installed

EXAMPLES = PACKAGE_DIR / "examples"


def test_entry_point_and_discovery(nodecost: Installed) -> None:
    with (PACKAGE_DIR / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    assert project["name"] == DIST
    assert project["entry-points"][ENTRY_POINT_GROUP] == {"NodeCost": "ksched_nodecost:NodeCost"}
    spec = default_registry().get("NodeCost")
    assert spec is not None and spec.cls is not None
    assert (spec.distribution, spec.points) == (DIST, ["score"])
    where = Path(sys.modules[spec.cls.__module__].__file__ or "")
    if nodecost.path is not None:  # the installed copy, not the source tree
        assert where.is_relative_to(nodecost.path), (nodecost.how, where)


def test_ksched_plugins_lists_it_with_its_distribution(
    nodecost: Installed, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plugins", "--output", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["NodeCost"] == {
        "name": "NodeCost",
        "extensionPoints": ["score"],
        "distribution": DIST,
    }
    assert main(["plugins"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("NodeCost"))
    assert re.fullmatch(r"NodeCost\s+score\s+ksched-nodecost", line)


def test_simulate_places_web_pods_on_the_cheapest_fitting_nodes(
    nodecost: Installed, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(
            [
                "simulate",
                "--cluster",
                str(EXAMPLES / "cluster.yaml"),
                "--config",
                str(EXAMPLES / "config.yaml"),
                "--output",
                "json",
                "--explain",
            ]
        )
        == 0
    )
    pods = {p["name"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
    assert {n: (p["status"], p["node"]) for n, p in pods.items()} == {
        "web-1": ("Scheduled", "spot-a"),
        "web-2": ("Scheduled", "reserved-b"),
    }
    cost = pods["web-1"]["explain"]["score"]["NodeCost"]
    assert {n: s["normalized"] for n, s in cost.items()} == {
        "spot-a": 100,
        "reserved-b": 62,
        "on-demand-a": 22,
        "unpriced": 0,
    }
    assert cost["spot-a"]["weighted"] == 500  # weight 5 from config.yaml


def test_bad_args_stop_the_scheduler_with_the_field(
    nodecost: Installed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (EXAMPLES / "config.yaml").read_text().replace("missingCost: 1.0", "missingCost: -2")
    bad = tmp_path / "config.yaml"
    bad.write_text(text)
    assert main(["config", "validate", str(bad)]) == 2
    assert (
        "plugin NodeCost: args.missingCost: must be a non-negative number, got -2"
        in capsys.readouterr().err
    )
    assert main(["run", "--config", str(bad), "--master", "http://127.0.0.1:1"]) == 2


def test_bench_with_the_plugin(nodecost: Installed, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "bench",
                "--workload",
                "SchedulingBasic",
                "--nodes",
                "50",
                "--pods",
                "100",
                "--config",
                str(EXAMPLES / "config.yaml"),
                "--output",
                "json",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["scheduled"] == 100 and result["pods_per_second"] > 0


def test_its_own_tests_pass_against_the_installed_copy(nodecost: Installed, tmp_path: Path) -> None:
    """What the package's author runs (``pytest`` in the package), here against the
    installation rather than the source tree; nothing is written into the repository."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    path = [str(nodecost.path)] if nodecost.path is not None else []
    env["PYTHONPATH"] = os.pathsep.join([*path, env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-c",
            str(PACKAGE_DIR / "pyproject.toml"),
            "--rootdir",
            str(PACKAGE_DIR),
            "-p",
            "no:cacheprovider",
            "--import-mode=importlib",
            "-rs",
            str(PACKAGE_DIR / "tests"),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    summary = r.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"\d+ passed in [\d.]+s", summary), r.stdout[-2000:]
    probe = subprocess.run(
        [sys.executable, "-c", "import ksched_nodecost; print(ksched_nodecost.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    if nodecost.path is not None:
        assert Path(probe.stdout.strip()).is_relative_to(nodecost.path)
