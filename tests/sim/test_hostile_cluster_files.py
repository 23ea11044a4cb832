"""Hostile bytes in a cluster file: exit 2 with one line naming the file (and the object
and field where known), never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksched.cli import main

NODE = b'{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}'
BIG_CPU = b'"status":{"allocatable":{"cpu":1e400,"pods":"10"}}}'


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        # invalid UTF-8: in a List item's name, a whole document's name, a leading byte
        # order mark of another encoding, and YAML
        (
            "c.json",
            b'{"kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"n\xff1"}}]}',
            "not valid JSON: invalid UTF-8 at byte 78",
        ),
        (
            "c.json",
            b'{"kind":"Node","apiVersion":"v1","metadata":{"name":"n\xc3"}}',
            "can't decode byte 0xc3 in position 54",
        ),
        ("c.json", b'\xff\xfe{"kind":"Node"}', "not valid YAML/JSON"),
        ("c.yaml", b"kind: Node\napiVersion: v1\nmetadata:\n  name: n\xff1\n", "UTF-8"),
        # a typed item whose head decodes but a later string does not
        (
            "c.json",
            b'{"kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},'
            b'"spec":{"containers":[{"name":"c\xfe"}]}}]}',
            "Pod p: invalid JSON: invalid UTF-8 at byte 88 of the object",
        ),
        # numbers beyond float64: in a List item, a whole document, an untyped object
        (
            "c.json",
            b'{"kind":"List","items":[' + NODE + b"," + BIG_CPU + b"]}",
            "Node n1: Number out of range - at `status.allocatable[...]`",
        ),
        ("c.json", NODE + b"," + BIG_CPU, "not valid JSON: Number out of range"),
        (
            "c.json",
            b'{"kind":"List","items":[{"kind":"ConfigMap","apiVersion":"v1",'
            b'"metadata":{"name":"m"},"data":{"a":1e400}}]}',
            "not valid JSON: Number out of range",
        ),
        (
            "c.json",
            b'{"kind":"List","items":[{"kind":"Pod","apiVersion":"v1","metadata":'
            b'{"name":"p","namespace":"x"},"spec":{"priority":1e400,"containers":[]}}]}',
            "Pod x/p: Number out of range - at `spec.priority`",
        ),
        (
            "c.yaml",
            b"kind: Node\napiVersion: v1\nmetadata: {name: n1}\nstatus:\n"
            b"  allocatable: {cpu: 1.0e+400}\n",
            "Node n1: status.allocatable[cpu]: Invalid value: inf: quantity must be finite",
        ),
    ],
)
def test_hostile_bytes_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes, expected: str
) -> None:
    f = tmp_path / name
    f.write_bytes(data)
    assert main(["simulate", "--cluster", str(f)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"{f}: ")
    assert expected in line
