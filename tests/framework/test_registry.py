"""Plugin registry: registration, extension-point discovery, args, and entry points
installed from real distributions (a hand-written .dist-info and a pip install)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ksched.cli import main
from ksched.framework.interface import (
    BindPlugin,
    FilterPlugin,
    Plugin,
    PreFilterPlugin,
    ScorePlugin,
    extension_points_of,
)
from ksched.framework.registry import (
    ENTRY_POINT_GROUP,
    PluginArgsError,
    PluginLoadError,
    PluginSpec,
    Registry,
    parse_plugin_args,
)
from ksched.plugins import default_registry

# ---- register / extension points ---------------------------------------------------------


class OnlyFilter(FilterPlugin):
    name = "OnlyFilter"

    def filter(self, state: Any, pod: Any, node: Any) -> None:
        return None


class InheritsButOverridesNothing(FilterPlugin, ScorePlugin):
    name = "Nothing"


class MultiPoint(PreFilterPlugin, FilterPlugin, ScorePlugin, BindPlugin):
    name = "Multi"

    def pre_filter(self, state: Any, pod: Any, nodes: Any) -> Any:
        return None, None

    def score(self, state: Any, pod: Any, node: Any) -> int:
        return 0

    async def bind(self, state: Any, pod: Any, node_name: str) -> None:
        return None


class SubclassOfOnlyFilter(OnlyFilter):
    name = "Sub"


class DuckTyped:
    """No base class at all: methods decide, as Go interfaces do."""

    name = "Duck"

    def __init__(self, args: Any, handle: Any) -> None:
        self.args = args

    def sort_key(self, qpi: Any) -> Any:
        return 0

    def permit(self, state: Any, pod: Any, node_name: str) -> Any:
        return None, 0.0

    def post_bind(self, state: Any, pod: Any, node_name: str) -> None:
        return None

    filter = None  # not callable: not a Filter plugin


def test_extension_points_only_count_overridden_methods() -> None:
    assert extension_points_of(OnlyFilter) == ["filter"]
    assert extension_points_of(InheritsButOverridesNothing) == []
    assert extension_points_of(MultiPoint) == ["preFilter", "score", "bind"]
    assert extension_points_of(SubclassOfOnlyFilter) == ["filter"]
    assert extension_points_of(DuckTyped) == ["queueSort", "permit", "postBind"]
    assert extension_points_of(Plugin) == []
    # Instances work as classes do.
    assert extension_points_of(MultiPoint()) == ["preFilter", "score", "bind"]


def test_register_and_lookup() -> None:
    reg = Registry()
    reg.register("OnlyFilter", OnlyFilter, "mydist")
    reg.register("Duck", DuckTyped)
    spec = reg.get("OnlyFilter")
    assert spec is not None
    assert (spec.name, spec.cls, spec.distribution, spec.points) == (
        "OnlyFilter",
        OnlyFilter,
        "mydist",
        ["filter"],
    )
    assert "Duck" in reg and "Missing" not in reg and reg.get("Missing") is None
    assert reg.names() == ["Duck", "OnlyFilter"]
    assert {s.name for s in reg} == {"Duck", "OnlyFilter"}
    inst = spec.factory({"a": 1}, None)  # type: ignore[arg-type]
    assert isinstance(inst, OnlyFilter) and inst.args == {"a": 1}


def test_register_duplicate_names_both_distributions() -> None:
    reg = Registry()
    reg.register("X", OnlyFilter, "first-dist")
    with pytest.raises(PluginLoadError) as ei:
        reg.register("X", DuckTyped, "second-dist")
    msg = str(ei.value)
    assert "'X'" in msg and "first-dist" in msg and "second-dist" in msg
    assert reg.get("X").cls is OnlyFilter  # type: ignore[union-attr]


def test_register_factory_and_rejects_non_callables() -> None:
    reg = Registry()

    def factory(args: Any, handle: Any) -> OnlyFilter:
        return OnlyFilter(args, handle)

    reg.register("F", factory)
    spec = reg.get("F")
    assert spec is not None and spec.cls is None and spec.points == []
    assert isinstance(spec.factory(None, None), OnlyFilter)  # type: ignore[arg-type]
    with pytest.raises(PluginLoadError, match="neither a class nor a factory"):
        reg.register("Bad", 42, "baddist")


# ---- plugin args ---------------------------------------------------------------------


class WithParse(FilterPlugin):
    name = "WithParse"

    @dataclass
    class Args:
        threshold: int = 1

        @classmethod
        def parse(cls, plugin: str, data: dict[str, Any]) -> WithParse.Args:
            unknown = set(data) - {"threshold"}
            if unknown:
                raise PluginArgsError(plugin, sorted(unknown)[0], "unknown field")
            t = data.get("threshold", 1)
            if not isinstance(t, int) or t < 0:
                raise PluginArgsError(
                    plugin, "threshold", f"must be a non-negative integer, got {t!r}"
                )
            return cls(t)


class WithPlainArgs(FilterPlugin):
    name = "WithPlainArgs"

    @dataclass
    class Args:
        mode: str = "a"


def spec_of(cls: type) -> PluginSpec:
    reg = Registry()
    reg.register(cls.name, cls)  # type: ignore[attr-defined]
    spec = reg.get(cls.name)  # type: ignore[attr-defined]
    assert spec is not None
    return spec


def test_parse_plugin_args_uses_args_parse() -> None:
    spec = spec_of(WithParse)
    assert parse_plugin_args(spec, {"threshold": 5}) == WithParse.Args(5)
    assert parse_plugin_args(spec, None) == WithParse.Args(1)
    with pytest.raises(PluginArgsError) as ei:
        parse_plugin_args(spec, {"threshold": -1})
    assert str(ei.value) == (
        "plugin WithParse: args.threshold: must be a non-negative integer, got -1"
    )
    assert (ei.value.plugin, ei.value.path) == ("WithParse", "threshold")
    with pytest.raises(PluginArgsError, match=r"args\.bogus: unknown field"):
        parse_plugin_args(spec, {"bogus": 1})


def test_parse_plugin_args_without_parse_or_args() -> None:
    assert parse_plugin_args(spec_of(WithPlainArgs), {"mode": "b"}) == WithPlainArgs.Args("b")
    raw = {"x": [1]}
    got = parse_plugin_args(spec_of(OnlyFilter), raw)
    assert got == {"x": [1]} and got is not raw
    assert parse_plugin_args(spec_of(OnlyFilter), None) == {}


def test_plugin_args_error_text() -> None:
    assert str(PluginArgsError("P", "", "bad")) == "plugin P: args: bad"
    assert str(PluginArgsError("P", "a.b[0]", "bad")) == "plugin P: args.a.b[0]: bad"


# ---- entry points from installed distributions ----------------------------------------

PLUGIN_MODULE = '''
"""A third-party ksched plugin used by the registry tests."""

from ksched.framework.interface import FilterPlugin
from ksched.framework.status import Code, Status

LOADED_FROM = __file__
NOT_A_PLUGIN = 42


class MyFilter(FilterPlugin):
    """Only nodes labelled team=<args.team> (default blue) fit."""

    name = "MyFilter"

    def filter(self, state, pod, node):
        want = (self.args or {}).get("team", "blue")
        if node.node.metadata.labels.get("team") != want:
            return Status(Code.UNSCHEDULABLE, f"node(s) are not on team {want}")
        return None


def make_plugin(args, handle):
    return MyFilter(args, handle)
'''

MODULES = ("kschedtestplugin", "kschedbrokenplugin")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Path]]:
    """Make a directory importable (and scanned for distributions) for one test."""

    def _forget() -> None:
        for m in MODULES:
            sys.modules.pop(m, None)

    _forget()

    def add(path: Path) -> Path:
        monkeypatch.syspath_prepend(str(path))  # also invalidates importlib caches
        importlib.invalidate_caches()
        return path

    yield add
    _forget()
    importlib.invalidate_caches()


def write_dist(
    root: Path,
    dist: str,
    entry_points: dict[str, str],
    modules: dict[str, str],
    version: str = "0.1",
) -> Path:
    """A distribution installed by hand: modules plus <dist>-<version>.dist-info."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in modules.items():
        (root / f"{name}.py").write_text(text)
    info = root / f"{dist}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")
    return root


def test_entry_point_from_a_dist_info_is_discovered(
    tmp_path: Path, site: Callable[..., Path]
) -> None:
    root = site(
        write_dist(
            tmp_path / "site",
            "kschedtestplugin",
            {"MyFilter": "kschedtestplugin:MyFilter", "MyFactory": "kschedtestplugin:make_plugin"},
            {"kschedtestplugin": PLUGIN_MODULE},
        )
    )
    reg = Registry()
    reg.load_entry_points()
    spec = reg.get("MyFilter")
    assert spec is not None
    assert spec.distribution == "kschedtestplugin"
    assert spec.points == ["filter"]
    assert spec.cls is not None and spec.cls.__module__ == "kschedtestplugin"
    assert Path(sys.modules["kschedtestplugin"].LOADED_FROM).parent == root
    fac = reg.get("MyFactory")
    assert fac is not None and fac.distribution == "kschedtestplugin" and fac.cls is None
    assert type(fac.factory({"team": "red"}, None)).__name__ == "MyFilter"  # type: ignore[arg-type]


def test_entry_point_plugin_is_listed_with_builtins(
    tmp_path: Path, site: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    site(
        write_dist(
            tmp_path / "site",
            "kschedtestplugin",
            {"MyFilter": "kschedtestplugin:MyFilter"},
            {"kschedtestplugin": PLUGIN_MODULE},
        )
    )
    reg = default_registry()
    assert reg.get("MyFilter").distribution == "kschedtestplugin"  # type: ignore[union-attr]
    assert reg.get("PrioritySort").distribution == "ksched"  # type: ignore[union-attr]
    assert main(["plugins", "--output", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["MyFilter"] == {
        "name": "MyFilter",
        "extensionPoints": ["filter"],
        "distribution": "kschedtestplugin",
    }


def test_entry_point_without_the_group_is_not_loaded(
    tmp_path: Path, site: Callable[..., Path]
) -> None:
    root = tmp_path / "site"
    write_dist(
        root,
        "kschedtestplugin",
        {"MyFilter": "kschedtestplugin:MyFilter"},
        {"kschedtestplugin": PLUGIN_MODULE},
    )
    ep = next(root.glob("*.dist-info")) / "entry_points.txt"
    ep.write_text("[console_scripts]\nMyFilter = kschedtestplugin:MyFilter\n")
    site(root)
    reg = Registry()
    reg.load_entry_points()
    assert "MyFilter" not in reg
    assert "kschedtestplugin" not in sys.modules


def test_broken_entry_point_names_distribution_and_exception(
    tmp_path: Path, site: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    site(
        write_dist(
            tmp_path / "site",
            "kschedbroken",
            {"Broken": "kschedbrokenplugin:Broken"},
            {"kschedbrokenplugin": 'raise ImportError("libfoo.so.1 not found")\n'},
        )
    )
    with pytest.raises(PluginLoadError) as ei:
        Registry().load_entry_points()
    msg = str(ei.value)
    assert "Broken" in msg
    assert "kschedbroken" in msg
    assert "ImportError: libfoo.so.1 not found" in msg
    assert isinstance(ei.value.__cause__, ImportError)
    # The command line stops with exit code 2 and one line on stderr.
    assert main(["plugins"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "kschedbroken" in err[0] and "libfoo.so.1 not found" in err[0]


def test_entry_point_to_a_missing_attribute_or_non_plugin(
    tmp_path: Path, site: Callable[..., Path]
) -> None:
    site(
        write_dist(
            tmp_path / "a",
            "kschedtestplugin",
            {"Missing": "kschedtestplugin:NoSuchClass"},
            {"kschedtestplugin": PLUGIN_MODULE},
        )
    )
    with pytest.raises(PluginLoadError, match=r"Missing.*kschedtestplugin.*AttributeError"):
        Registry().load_entry_points()


def test_entry_point_that_is_not_a_plugin(tmp_path: Path, site: Callable[..., Path]) -> None:
    site(
        write_dist(
            tmp_path / "a",
            "kschedtestplugin",
            {"Answer": "kschedtestplugin:NOT_A_PLUGIN"},
            {"kschedtestplugin": PLUGIN_MODULE},
        )
    )
    with pytest.raises(PluginLoadError, match=r"Answer \(kschedtestplugin\).*neither"):
        Registry().load_entry_points()


def test_entry_point_clashing_with_a_builtin(tmp_path: Path, site: Callable[..., Path]) -> None:
    site(
        write_dist(
            tmp_path / "site",
            "kschedtestplugin",
            {"PrioritySort": "kschedtestplugin:MyFilter"},
            {"kschedtestplugin": PLUGIN_MODULE},
        )
    )
    with pytest.raises(
        PluginLoadError,
        match=r"'PrioritySort' from kschedtestplugin is already "
        r"registered by ksched",
    ):
        default_registry()
    assert "PrioritySort" in default_registry(entry_points=False)


# ---- the discovered plugin decides placement in `ksched simulate` -------------------------

CLUSTER = """\
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: red-1, labels: {team: red}},
   status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}}
- {apiVersion: v1, kind: Node, metadata: {name: blue-1, labels: {team: blue}},
   status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}}
- {apiVersion: v1, kind: Node, metadata: {name: plain-1},
   status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}}
- {apiVersion: v1, kind: Pod, metadata: {name: p1, namespace: default},
   spec: {schedulerName: ksched, containers: [{name: c, image: x}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: p2, namespace: default},
   spec: {schedulerName: ksched, containers: [{name: c, image: x}]}}
"""


def config(team: str | None) -> str:
    # Only our plugin filters, so the placement is its doing alone.
    args = (
        f"""
  pluginConfig:
  - name: MyFilter
    args: {{team: {team}}}"""
        if team
        else ""
    )
    return (
        textwrap.dedent("""\
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        profiles:
        - schedulerName: ksched
          plugins:
            multiPoint:
              enabled: [{name: PrioritySort}, {name: DefaultBinder}, {name: MyFilter}]
              disabled: [{name: "*"}]""")
        + args
        + "\n"
    )


def simulate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], team: str | None
) -> dict[str, dict[str, Any]]:
    cluster, cfg = tmp_path / "cluster.yaml", tmp_path / f"config-{team}.yaml"
    cluster.write_text(CLUSTER)
    cfg.write_text(config(team))
    rc = main(["simulate", "--cluster", str(cluster), "--config", str(cfg), "--output", "json"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return {p["name"]: p for p in json.loads(out.out)["pods"]}


def test_discovered_plugin_runs_in_simulate(
    tmp_path: Path, site: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    site(
        write_dist(
            tmp_path / "site",
            "kschedtestplugin",
            {"MyFilter": "kschedtestplugin:MyFilter"},
            {"kschedtestplugin": PLUGIN_MODULE},
        )
    )
    pods = simulate(tmp_path, capsys, None)
    assert {n: (p["status"], p["node"]) for n, p in pods.items()} == {
        "p1": ("Scheduled", "blue-1"),
        "p2": ("Scheduled", "blue-1"),
    }
    # Its args come from pluginConfig: no node is on team green.
    pods = simulate(tmp_path, capsys, "green")
    for p in pods.values():
        assert p["status"] == "Unschedulable" and p["node"] is None
        assert p["message"] == "0/3 nodes are available: 3 node(s) are not on team green."
    pods = simulate(tmp_path, capsys, "red")
    assert {p["node"] for p in pods.values()} == {"red-1"}


def test_simulate_without_the_distribution_rejects_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster, cfg = tmp_path / "cluster.yaml", tmp_path / "config.yaml"
    cluster.write_text(CLUSTER)
    cfg.write_text(config(None))
    assert main(["simulate", "--cluster", str(cluster), "--config", str(cfg)]) == 2
    assert "MyFilter" in capsys.readouterr().err


# ---- a real `pip install` of a distribution ----------------------------------------------

# A PEP 517 backend kept in the source tree, so pip builds the wheel offline without
# setuptools or wheel; the [project] table supplies name, version and entry points.
BACKEND = """
import base64, hashlib, os, tomllib, zipfile


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with open("pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    name, version = project["name"], project["version"]
    info = f"{name}-{version}.dist-info"
    files = {}
    for module in project["x-modules"] if "x-modules" in project else []:
        with open(f"{module}.py", "rb") as f:
            files[f"{module}.py"] = f.read()
    eps = "".join(f"[{group}]\\n" + "".join(f"{k} = {v}\\n" for k, v in entries.items()) + "\\n"
                  for group, entries in project.get("entry-points", {}).items())
    meta = f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n"
    files[f"{info}/METADATA"] = meta.encode()
    files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\\nGenerator: ksched-tests\\n"
                              b"Root-Is-Purelib: true\\nTag: py3-none-any\\n")
    files[f"{info}/entry_points.txt"] = eps.encode()
    record = [f"{path},sha256="
              + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
              + f",{len(data)}" for path, data in files.items()]
    files[f"{info}/RECORD"] = ("\\n".join([*record, f"{info}/RECORD,,"]) + "\\n").encode()
    wheel = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return wheel
"""

PYPROJECT = """\
[build-system]
requires = []
build-backend = "ksched_test_backend"
backend-path = ["."]

[project]
name = "kschedtestplugin"
version = "0.2"
x-modules = ["kschedtestplugin"]

[project.entry-points."ksched.plugins"]
MyFilter = "kschedtestplugin:MyFilter"
"""


def test_pip_installed_distribution_is_discovered_and_runs(
    tmp_path: Path, site: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "pyproject.toml").write_text(PYPROJECT)
    (src / "ksched_test_backend.py").write_text(BACKEND)
    (src / "kschedtestplugin.py").write_text(PLUGIN_MODULE)
    target = tmp_path / "target"
    env = {
        **os.environ,
        "PIP_ROOT_USER_ACTION": "ignore",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--target",
            str(target),
            str(src),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"pip cannot build/install offline here: {proc.stderr.strip()[-500:]}")
    assert (target / "kschedtestplugin-0.2.dist-info" / "entry_points.txt").exists()
    site(target)

    reg = Registry()
    reg.load_entry_points()
    spec = reg.get("MyFilter")
    assert spec is not None and spec.distribution == "kschedtestplugin"
    assert Path(sys.modules["kschedtestplugin"].LOADED_FROM).parent == target

    pods = simulate(tmp_path, capsys, None)
    assert {p["node"] for p in pods.values()} == {"blue-1"}
