"""``Plugin[ArgsT]``: ``self.args`` has the plugin's args type, so ``mypy --strict`` (the
project's own setting, which plugin packages are advised to run) refuses a misspelt field,
and every built-in plugin names its args type on its bases."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest

import ksched
from ksched import NoArgs, Plugin, default_registry

REPO = Path(ksched.__file__).parent.parent

PLUGINS = textwrap.dedent(
    """
    from ksched import CycleState, NodeInfo, PluginArgs, PodInfo, ScorePlugin


    class WeightArgs(PluginArgs):
        weight: int = 1


    class Misspelt(ScorePlugin[WeightArgs]):
        Args = WeightArgs

        def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
            return int(self.args.wieght)


    class Spelt(ScorePlugin[WeightArgs]):
        Args = WeightArgs

        def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
            return int(self.args.weight)


    class Bare(ScorePlugin):  # written before the type parameter: still valid
        def score(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
            return int(self.args["weight"])
    """
)


@pytest.mark.slow
def test_mypy_strict_refuses_a_misspelt_args_field(tmp_path: Path) -> None:
    """One mypy run (its cache under the repository's ``.mypy_cache``) over three plugins:
    only the misspelt field is an error."""
    src = tmp_path / "plugins.py"
    src.write_text(PLUGINS)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--python-version",
            "3.11",
            "--cache-dir",
            str(REPO / ".mypy_cache"),
            "--no-error-summary",
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(REPO)},
    )
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    line = PLUGINS.splitlines().index("        return int(self.args.wieght)") + 1
    assert len(errors) == 1, out.stdout + out.stderr
    assert errors[0].startswith(f"{src.name}:{line}:")
    assert '"WeightArgs" has no attribute "wieght"' in errors[0]


def _args_type(cls: type) -> object:
    """The type argument of ``cls``'s first parameterized extension-point base."""
    for klass in cls.__mro__:
        for base in getattr(klass, "__orig_bases__", ()):
            origin = typing.get_origin(base)
            if isinstance(origin, type) and issubclass(origin, Plugin):
                (arg,) = typing.get_args(base)
                return arg
    raise AssertionError(f"{cls.__name__} names no args type")


def test_every_builtin_plugin_names_its_args_type(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plugin with an ``Args`` class names that class on its bases; one without, NoArgs
    (the two cannot drift apart, so ``self.args`` is typed as what the framework passes).
    Contrib's plugins come from the source tree (installed or not)."""
    monkeypatch.syspath_prepend(str(REPO / "contrib_plugins"))
    from ksched_contrib import PLUGINS

    contrib = []
    for target in PLUGINS.values():
        module, _, name = target.partition(":")
        contrib.append(getattr(importlib.import_module(module), name))
    specs = list(default_registry(entry_points=False))
    classes = [s.cls for s in specs if s.cls is not None] + contrib
    assert len(classes) > 25
    for cls in classes:
        want = getattr(cls, "Args", None) or NoArgs
        assert _args_type(cls) == want, cls.__name__
