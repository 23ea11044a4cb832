"""Hostile documents cost a bounded amount: alias bombs, deep nesting, recursive anchors
and bad UTF-8 get a one-line error and exit 2 from every loader, quickly."""

from __future__ import annotations

import time
from pathlib import Path

import msgspec
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.cli import main
from ksched.util.limits import (
    MAX_ALIAS_EXPANSION,
    MAX_DEPTH,
    SHAPE_LEVELS,
    BoundedLoaderMixin,
    DecodeLimitError,
    check_depth,
    clip,
    decode_json,
    json_depth,
    json_length,
    json_shape,
    loads_json,
)

NODE = b'{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}'
BIG_CPU = b'"status":{"allocatable":{"cpu":1e400,"pods":"10"}}}'


def alias_bomb(levels: int = 7, width: int = 9) -> str:
    """``levels`` anchors, each a list of ``width`` aliases of the previous: width**levels
    values from a few hundred bytes."""
    lines = ['a0: &a0 ["x"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


class Loader(BoundedLoaderMixin, yaml.SafeLoader):
    pass


def test_alias_expansion_is_bounded_and_cheap() -> None:
    bomb = alias_bomb()
    assert len(bomb) < 500
    t0 = time.monotonic()
    with pytest.raises(yaml.YAMLError, match="excessive aliasing"):
        yaml.load(bomb, Loader=Loader)
    assert time.monotonic() - t0 < 1.0
    # ordinary reuse is fine: 9**4 = 6561 values, well under the bound
    assert MAX_ALIAS_EXPANSION > 2 * 9**4
    doc = yaml.load(alias_bomb(levels=5), Loader=Loader)
    assert len(doc["a4"]) == 9


def test_recursive_anchor_is_refused() -> None:
    with pytest.raises(yaml.YAMLError, match="contains an alias to itself"):
        yaml.load("a: &a [1, *a]", Loader=Loader)


def test_yaml_nesting_is_bounded_with_a_position() -> None:
    with pytest.raises(yaml.MarkedYAMLError) as err:
        yaml.load("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), Loader=Loader)
    assert err.value.problem == f"nesting deeper than {MAX_DEPTH} levels"
    assert err.value.problem_mark is not None and err.value.problem_mark.column == MAX_DEPTH
    assert yaml.load("[" * MAX_DEPTH + "]" * MAX_DEPTH, Loader=Loader) is not None


@pytest.mark.parametrize("decode", [loads_json, decode_json])
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 900, 100_000])
def test_json_nesting_is_bounded(decode: object, depth: int) -> None:
    with pytest.raises(DecodeLimitError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        decode("[" * depth + "]" * depth)  # type: ignore[operator]


def _commas(value: object, level: int, out: list[int]) -> None:
    """The commas at each nesting of ``value``'s JSON: a container's, one fewer than its
    elements, at the nesting inside it."""
    children = list(value.values()) if isinstance(value, dict) else value
    if not isinstance(children, list):
        return
    if level < len(out):
        out[level] += max(len(children) - 1, 0)
    for c in children:
        _commas(c, level + 1, out)


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


# Strings made of the bytes that matter to the scan: brackets, quotes and backslash runs.
_tricky = st.text(alphabet='[]{}",\\ax\u2028', max_size=12)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _tricky,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_tricky, inner, max_size=4),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_json_depth_is_the_decoded_depth(value: object) -> None:
    """The byte scan agrees with walking the value, whatever the strings hold."""
    assert json_depth(msgspec.json.encode(value)) == _depth(value)


@settings(max_examples=300, deadline=None)
@given(_json, st.integers(1, 9), st.sampled_from([b"", b" ", b"\n  "]))
def test_the_scan_carries_strings_and_escapes_across_chunks(
    value: object, chunk: int, pad: bytes
) -> None:
    """Scanned a few bytes at a time, a string, an escape or a backslash run split between
    chunks counts as when scanned whole; json_length is the decoded length."""
    from ksched.util import limits

    text = msgspec.json.encode(value)
    if pad:  # whitespace where JSON allows it
        text = pad + text.replace(b",", b"," + pad) + pad
    original = limits._SCAN_CHUNK
    limits._SCAN_CHUNK = chunk
    try:
        assert json_depth(text) == _depth(value)
        if isinstance(value, (list, dict)):
            assert json_length(text) == len(value)
        want = [0] * SHAPE_LEVELS
        _commas(value, 1, want)
        assert json_shape(text)[2] == want
    finally:
        limits._SCAN_CHUNK = original


def test_json_length_needs_a_container() -> None:
    assert json_length(b"[]") == json_length(b" { } ") == 0
    assert json_length(b'[1, "a,b", [2, 3], {"x": [4, 5]}]') == 4
    with pytest.raises(ValueError):
        json_length(b'"a,b"')


def test_json_depth_of_escapes() -> None:
    assert json_depth(rb'["\\"]') == 1  # an escaped backslash ends before the quote
    assert json_depth(rb'["\"]]]"]') == 1  # an escaped quote does not end the string
    assert json_depth(rb'["\\\"[[[["]') == 1
    assert json_depth(b"") == json_depth(b"7") == 0


def test_deep_json_is_refused_before_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recursive decoder never sees a too-deep body."""

    def refuse(data: object) -> object:
        raise AssertionError("decoded a body beyond the depth bound")

    monkeypatch.setattr(msgspec.json, "decode", refuse)
    with pytest.raises(DecodeLimitError):
        decode_json(b"[" * 5000 + b"]" * 5000)


def test_depth_check_walks_shared_containers_once() -> None:
    shared: list[object] = []
    doc = {"a": [shared] * 1000}
    check_depth(doc)
    nested: list[object] = []
    cur = nested
    for _ in range(MAX_DEPTH):
        nxt: list[object] = []
        cur.append(nxt)
        cur = nxt
    with pytest.raises(DecodeLimitError):
        check_depth(nested)


def test_clip() -> None:
    assert clip("short") == "short"
    long = clip("x" * 10_000)
    assert len(long) == 200 and long.endswith("…")


CONFIG_HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "bomb.yaml",
            CONFIG_HEAD
            + "profiles:\n- schedulerName: x\n  pluginConfig:\n  - name: NodeAffinity\n"
            + "    args:\n"
            + "".join(f"      {line}\n" for line in alias_bomb().splitlines()),
            "line 1, column 1: document contains excessive aliasing",
        ),
        (
            "deep.json",
            '{"apiVersion": "kubescheduler.config.k8s.io/v1", "profiles": '
            + "[" * 3000
            + "]" * 3000
            + "}",
            "deep.json: nesting deeper than 100 levels",
        ),
        ("deep.yaml", CONFIG_HEAD + "profiles: " + "[" * 500 + "]" * 500, "nesting deeper"),
        ("self.yaml", CONFIG_HEAD + "profiles: &p [*p]\n", "contains an alias to itself"),
        ("latin1.yaml", CONFIG_HEAD + "profiles:\n- schedulerName: caf\xe9\n", ""),
    ],
)
def test_config_validate_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1"))
    t0 = time.monotonic()
    assert main(["config", "validate", str(path)]) == 2
    assert time.monotonic() - t0 < 3.0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{path}: "), err
    assert message in err[0]
    assert len(err[0]) < 400
    assert "Traceback" not in err[0]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "bomb.yaml",
            "kind: Node\nmetadata:\n  name: n\n  labels:\n"
            + "".join(f"    {line}\n" for line in alias_bomb().splitlines()),
            "excessive aliasing",
        ),
        (
            "deep.json",
            '{"kind": "List", "items": ' + "[" * 3000 + "]" * 3000 + "}",
            "nesting deeper than 100 levels",
        ),
        ("broken.yaml", "kind: Node\nmetadata: {name: a\n", "not valid YAML: line 3, column 1:"),
        ("broken.json", '{"kind": "Node",\n "metadata": }', "not valid JSON: line 2, column 14:"),
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
def test_simulate_exits_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str | bytes, message: str
) -> None:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert main(["simulate", "--cluster", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{path}: "), err
    assert message in err[0]
