"""No import cycles: every module imports alone, and the static import graph (read with
``ast``: every import counts, at module level, inside a function or under
``if TYPE_CHECKING:``) has no cycle between modules or between rooms (the packages of
``docs/architecture.md``), and the low-level rooms (``api``, ``util``, ``logging``,
``features``) import nothing of the core.

A type-only or function-local import that closes a circle is still a circle: the two
modules can only be read, changed and tested together. Break one by moving the shared
thing (a protocol, a type) to the module below, not by hiding the import."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

import ksched

ROOT = Path(ksched.__file__).parent
LOW_LEVEL = frozenset({"ksched.api", "ksched.util", "ksched.logging", "ksched.features"})

# Imports every module of PACKAGE alone: importing ``pkg.x`` always runs ``pkg/__init__``
# to completion first, so a child forked after ``import pkg`` starts exactly as a fresh
# interpreter importing ``pkg.x`` would, without paying for the package root each time.
_IMPORT_EACH_ALONE = textwrap.dedent(
    """
    import importlib, json, os, pkgutil, sys
    package = sys.argv[1]
    root = importlib.import_module(package)
    names = sorted(
        m.name for m in pkgutil.walk_packages(root.__path__, package + ".")
        if not m.name.endswith(".__main__")
    )
    failed = {}
    for name in names:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                importlib.import_module(name)
                msg = b""
            except BaseException as e:
                msg = f"{type(e).__name__}: {e}".encode()
            os.write(w, msg)
            os._exit(0)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            out = f.read()
        os.waitpid(pid, 0)
        if out:
            failed[name] = out.decode()
    print(json.dumps({"modules": names, "failed": failed}))
    """
)


def _import_each_alone(package: str, path: Path | None = None) -> dict[str, object]:
    cmd = [sys.executable, "-c", _IMPORT_EACH_ALONE, package]
    env = None
    if path is not None:
        import os

        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), *sys.path])}
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, check=True)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_every_module_imports_alone() -> None:
    result = _import_each_alone("ksched")
    modules = result["modules"]
    assert isinstance(modules, list) and len(modules) > 100  # the walk found the package
    assert "ksched.cluster.pipeline" in modules and "ksched.extender.server" in modules
    assert result["failed"] == {}


def test_importing_alone_catches_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyc.b import B\nA = 1\n")
    (pkg / "b.py").write_text("from cyc.a import A\nB = 2\n")
    (pkg / "leaf.py").write_text("LEAF = 0\n")
    failed = _import_each_alone("cyc", tmp_path)["failed"]
    assert isinstance(failed, dict) and set(failed) == {"cyc.a", "cyc.b"}
    assert all("ImportError" in v for v in failed.values())


# ---- the static graph ------------------------------------------------------------------


def _module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_module(name: str, base: Path) -> bool:
    rel = base / Path(*name.split("."))
    return rel.with_suffix(".py").exists() or (rel / "__init__.py").exists()


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the ksched modules it imports anywhere in its body, type-only included."""
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        name = _module_name(path, root.parent)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name.split(".")[0] == "ksched")
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                if target.split(".")[0] != "ksched":
                    continue
                for alias in node.names:  # ``from pkg import submodule`` imports the submodule
                    sub = f"{target}.{alias.name}"
                    targets.add(sub if _is_module(sub, root.parent) else target)
        graph[name] = {t for t in targets if t != name}
    return graph


def _room(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _room_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph.items():
        if module == "ksched":
            continue  # the package root re-exports the public API from the rooms
        for t in targets:
            if _room(t) != _room(module):
                rooms[_room(module)].add(_room(t))
    return dict(rooms)


def _edges_into(graph: dict[str, set[str]], cycle: list[str]) -> list[str]:
    members = set(cycle)
    return sorted(f"{a} -> {b}" for a in cycle for b in graph.get(a, ()) if b in members)


def test_no_module_imports_the_package_root() -> None:
    """The root re-exports from the rooms, so a room importing it closes a cycle; reading
    ``__version__`` (bench's report) is the one harmless use, checked by source line."""
    graph = import_graph()
    importers = [m for m, targets in graph.items() if "ksched" in targets]
    assert importers == ["ksched.bench.real"]
    assert "from .. import __version__\n" in (ROOT / "bench" / "real.py").read_text()


def test_no_cycle_between_modules() -> None:
    graph = import_graph()
    assert len(graph) > 100
    cycles = _cycles(graph)
    assert not cycles, [_edges_into(graph, c) for c in cycles]


def test_no_cycle_between_rooms() -> None:
    rooms = _room_graph(import_graph())
    assert {"ksched.framework", "ksched.scheduler", "ksched.extender"} <= set(rooms)
    cycles = _cycles(rooms)
    assert not cycles, [_edges_into(rooms, c) for c in cycles]


def test_low_level_rooms_never_import_the_core() -> None:
    graph = import_graph()
    offending = sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if _room(m) in LOW_LEVEL
        for t in targets
        if _room(t) not in LOW_LEVEL
    )
    assert not offending


def test_the_graph_sees_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    """The checks above would miss a cycle the reader misses: a function-level import
    counts, and so does an ``if TYPE_CHECKING:`` one (the modules still need each other
    to be read and type-checked)."""
    pkg = tmp_path / "ksched"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("")
    (pkg / "a" / "x.py").write_text("def f():\n    from ..b.y import g\n    return g\n")
    (pkg / "a" / "t.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..b.z import Z\n"
    )
    (pkg / "b").mkdir()
    (pkg / "b" / "__init__.py").write_text("from . import y\n")
    (pkg / "b" / "y.py").write_text("from ..a import x\ndef g(): return x\n")
    (pkg / "b" / "z.py").write_text("from ..a import t\nclass Z: pass\n")
    graph = import_graph(pkg)
    assert graph["ksched.a.x"] == {"ksched.b.y"}
    assert graph["ksched.a.t"] == {"ksched.b.z"}
    assert graph["ksched.b"] == {"ksched.b.y"}
    assert _cycles(graph) == [["ksched.a.t", "ksched.b.z"], ["ksched.a.x", "ksched.b.y"]]
    assert _cycles(_room_graph(graph)) == [["ksched.a", "ksched.b"]]


# ---- the runtime / testing line --------------------------------------------------------

# What ships for plugin authors and ksched's own tests but never runs in a scheduler:
# ``ksched.testing`` (the in-process API server, builders, the plugin harness, the real
# control plane, the differential oracle) and ``ksched.bench``.
TEST_SIDE = ("ksched.testing", "ksched.bench")

# The CLI verbs that may load the test side, each only inside its own functions.
CLI_TEST_SIDE_FUNCTIONS = frozenset({"cmd_bench", "_bench_real"})


def _is_test_side(module: str) -> bool:
    return any(module == r or module.startswith(r + ".") for r in TEST_SIDE)


def _test_side_imports_in_functions(path: Path, package: str) -> dict[str, set[str]]:
    """function name (or "<module>") -> the test-side modules imported there."""
    tree = ast.parse(path.read_text(), str(path))
    out: dict[str, set[str]] = defaultdict(set)

    def walk(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                walk(child, child.name if where == "<module>" else where)
                continue
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                mod = ".".join([*base, *([child.module] if child.module else [])])
                mod = mod if child.level else child.module or ""
                names = [mod, *(f"{mod}.{a.name}" for a in child.names)]  # from . import bench
            out[where].update(n for n in names if _is_test_side(n))
            walk(child, where)

    walk(tree, "<module>")
    return {k: v for k, v in out.items() if v}


def test_the_runtime_never_imports_the_test_side() -> None:
    """Counting every import (lazy and type-only too), only the test side itself and the
    CLI's ``bench`` verb reach ``ksched.testing``/``ksched.bench``; and that lazy import
    closes no circle (nothing on the test side imports the CLI)."""
    graph = import_graph()
    importers = sorted(
        m
        for m, targets in graph.items()
        if not _is_test_side(m) and any(_is_test_side(t) for t in targets)
    )
    assert importers == ["ksched.cli"]
    where = _test_side_imports_in_functions(ROOT / "cli.py", "ksched")
    assert where and set(where) <= CLI_TEST_SIDE_FUNCTIONS, where
    assert not [m for m, targets in graph.items() if _is_test_side(m) and "ksched.cli" in targets]


def test_the_function_scan_sees_module_level_and_nested_imports(tmp_path: Path) -> None:
    path = tmp_path / "cli.py"
    path.write_text(
        "import ksched.bench.real\n"
        "def cmd_bench():\n    def inner():\n        from .testing import harness\n"
        "def cmd_run():\n    from .daemon import main\n"
        "async def cmd_x():\n    from . import bench\n"
    )
    got = _test_side_imports_in_functions(path, "ksched")
    assert got == {
        "<module>": {"ksched.bench.real"},
        "cmd_bench": {"ksched.testing", "ksched.testing.harness"},
        "cmd_x": {"ksched.bench"},
    }


_EXAMPLE_CLUSTER = ROOT.parent / "examples" / "cluster.yaml"

# Each front end as it starts: an import, or a CLI verb run to its first real work.
_FRONT_ENDS = {
    "import ksched": "import ksched",
    "daemon": "import ksched.daemon.main",
    "extender": "import ksched.extender.server",
    "sim": "import ksched.sim",
    "ksched run": (
        "from ksched.cli import main\n"
        "assert main(['run', '--kubeconfig', '/nonexistent/kubeconfig']) == 2\n"
        "assert 'ksched.daemon.daemon' in sys.modules"
    ),
    "ksched simulate": (
        "from ksched.cli import main\n"
        f"assert main(['simulate', '--cluster', {str(_EXAMPLE_CLUSTER)!r}]) == 0\n"
        "assert 'ksched.scheduler.schedule_one' in sys.modules"
    ),
}


@pytest.mark.parametrize("front_end", sorted(_FRONT_ENDS))
def test_a_front_end_loads_nothing_of_the_test_side(front_end: str) -> None:
    """Checked in a fresh interpreter: what the running process really loads, through
    ``importlib`` and plugin entry points too, which the static graph cannot see."""
    code = (
        "import sys, json\n"
        + _FRONT_ENDS[front_end]
        + "\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('ksched'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    loaded = json.loads(out.stdout.splitlines()[-1])
    assert "ksched.framework" in loaded
    assert [m for m in loaded if _is_test_side(m)] == []
