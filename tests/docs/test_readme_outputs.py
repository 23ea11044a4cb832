"""The README's example outputs are what the commands print.

A code block preceded by ``<!-- output checked by tests/docs/test_readme_outputs.py -->``
is a console session: every ``$ ksched ...`` line is run (from a directory where
``examples/`` is the repository's) and its stdout must be the lines shown under it. A block
preceded by ``<!-- command checked by ... -->`` holds commands that must succeed.
"""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import pytest

from ksched.cli import main

from ._install import ROOT

README = ROOT / "README.md"
MARK = r"<!-- (output|command) checked by tests/docs/test_readme_outputs\.py -->"


def sessions() -> list[tuple[str, str, list[str]]]:
    """(kind, command, shown output lines) of every checked command in the README."""
    out = []
    text = README.read_text()
    for kind, body in re.findall(MARK + r"\s*```(?:console|sh)\n(.*?)```", text, re.S):
        cmd: str | None = None
        shown: list[str] = []
        for line in body.splitlines():
            if line.startswith("$ ") or kind == "command":
                if cmd is not None:
                    out.append((kind, cmd, shown))
                cmd, shown = line.removeprefix("$ "), []
            else:
                shown.append(line)
        if cmd is not None:
            out.append((kind, cmd, shown))
    return out


def test_the_readme_has_checked_sessions() -> None:
    cmds = [c for _, c, _ in sessions()]
    for flag in ("--explain", "--report", "--compare"):
        assert any(flag in c for c in cmds), flag


@pytest.mark.parametrize(("kind", "cmd", "shown"), sessions(), ids=lambda v: str(v)[:60])
def test_readme_command_prints_what_is_shown(
    kind: str,
    cmd: str,
    shown: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(cmd)
    assert argv[0] == "ksched"
    assert main(argv[1:]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out.rstrip("\n").splitlines()
    if kind == "output":
        assert [line.rstrip() for line in printed] == shown
    for arg, value in itertools.pairwise(argv):
        if arg == "--report":
            assert "<!doctype html>" in (tmp_path / value).read_text()
