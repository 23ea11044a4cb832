"""The README's "Real dumps" console block shows what ``ksched simulate`` really prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksched.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _console() -> list[tuple[str, list[str]]]:
    """(command, output lines) of the README's console block about real dumps."""
    text = (ROOT / "README.md").read_text()
    start = text.index("#### Real dumps")
    block = text[text.index("```console\n", start) + 11 :]
    block = block[: block.index("```")]
    out: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        else:
            out[-1][1].append(line.rstrip())
    return out


def test_real_dumps_output_is_real(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    (cmd1, shown1), (cmd2, shown2) = _console()
    assert cmd1 == "ksched simulate --cluster examples/cluster.yaml > /dev/null"
    assert main(["simulate", "--cluster", "examples/cluster.yaml"]) == 0
    assert capsys.readouterr().err.splitlines() == shown1
    assert cmd2.startswith("ksched simulate --cluster examples/cluster.yaml --scheduler-name ")
    assert cmd2.endswith(" 2> /dev/null | tail -1")
    args = cmd2.removeprefix("ksched ").removesuffix(" 2> /dev/null | tail -1").split()
    assert main(args) == 0
    assert [capsys.readouterr().out.splitlines()[-1].rstrip()] == shown2
