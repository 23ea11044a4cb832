"""The framework sits on the low-level rooms only: it declares what it needs of the rest
(extenders, the cluster client, the framework plugins run, the profile it is built from)
as protocols, so no import of it, not even a type-only or a function-local one, reaches
``config``, ``extender``, ``cache``, ``scheduler`` or anything else above it."""

from __future__ import annotations

import ast
from pathlib import Path

import ksched

ROOT = Path(ksched.__file__).parent
ALLOWED = ("ksched.framework", "ksched.api", "ksched.util", "ksched.features", "ksched.logging")


def _imports(path: Path, package: str) -> set[str]:
    """Every ksched module ``path`` names in an import statement, wherever it stands."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - (node.level - 1)]
                out.add(".".join([*base, *([node.module] if node.module else [])]))
            elif node.module:
                out.add(node.module)
    return {m for m in out if m.split(".")[0] == "ksched"}


def _framework_imports(root: Path) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted((root / "framework").rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
            package = ".".join(parts)
        else:
            package = ".".join(parts[:-1])
        graph[".".join(parts)] = _imports(path, package)
    return graph


def _outside(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        for t in targets
        if not any(t == a or t.startswith(a + ".") for a in ALLOWED)
    )


def test_the_framework_imports_only_the_low_level_rooms() -> None:
    graph = _framework_imports(ROOT)
    assert "ksched.framework.handle" in graph and "ksched.framework.runtime" in graph
    assert _outside(graph) == []


def test_the_check_sees_type_only_and_function_local_imports(tmp_path: Path) -> None:
    fw = tmp_path / "ksched" / "framework"
    fw.mkdir(parents=True)
    (tmp_path / "ksched" / "__init__.py").write_text("")
    (fw / "__init__.py").write_text("from .a import A\n")
    (fw / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from ..api.objects import Pod\n"
        "if TYPE_CHECKING:\n    from ..extender.client import ExtenderSet\n"
        "def f():\n    from ksched.config import types\n"
    )
    assert _outside(_framework_imports(tmp_path / "ksched")) == [
        "ksched.framework.a -> ksched.config",
        "ksched.framework.a -> ksched.extender.client",
    ]
