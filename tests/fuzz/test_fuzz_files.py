"""Fuzzing the two kinds of file users hand ksched: KubeSchedulerConfigurations
(``ksched config validate``) and cluster files (``ksched simulate``). Whatever the
content, the answer is exit 0 or a clean exit 2 with short lines naming the file: never
a traceback, a crash or another exit status. The budget is bounded (a few hundred
examples) so this runs in CI."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.cli import main

ROOT = Path(__file__).parents[2]
CLUSTER = list(yaml.safe_load_all((ROOT / "examples" / "cluster.yaml").read_text()))
CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "percentageOfNodesToScore": 50,
    "profiles": [
        {
            "schedulerName": "ksched",
            "plugins": {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 2}]}},
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "MostAllocated",
                            "resources": [{"name": "cpu", "weight": 1}],
                        }
                    },
                },
                {"name": "PodTopologySpread", "args": {"defaultingType": "List"}},
            ],
        }
    ],
}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(
        ["", "-1", "1e18", "8Ei", "9223372036854775807", "1n", "0.5m", "-5Gi", "abc", "10Ki"]
    ),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _mutate(doc: Any, data: st.DataObject) -> Any:
    """Replace one randomly chosen value inside ``doc`` (a copy) with a random one."""
    doc = json.loads(json.dumps(doc))
    parent: Any = None
    key: Any = None
    cur = doc
    while isinstance(cur, (dict, list)) and cur and data.draw(st.booleans()):
        keys = list(cur) if isinstance(cur, dict) else list(range(len(cur)))
        parent, key = cur, data.draw(st.sampled_from(keys))
        cur = cur[key]
    new = data.draw(values)
    if parent is None:
        return new
    parent[key] = new
    return doc


def _render(doc: Any, data: st.DataObject) -> str:
    how = data.draw(st.sampled_from(["json", "yaml", "text"]))
    if how == "json":
        return json.dumps(doc)
    if how == "yaml":
        return yaml.safe_dump_all(doc if isinstance(doc, list) else [doc])
    return data.draw(st.text(max_size=80))


def _check(rc: int, err: str, path: Path) -> None:
    assert rc in (0, 2), (rc, err)
    assert "Traceback" not in err
    if rc == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert lines, "exit 2 without a word"
        assert all(len(line) < 2000 for line in lines), err[:500]
        assert str(path) in lines[0] or "ksched" in lines[0], lines[0]


FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(data=st.data())
def test_config_files(capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    doc = _mutate(CONFIG, data)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / data.draw(st.sampled_from(["c.yaml", "c.json"]))
        path.write_text(_render(doc, data))
        capsys.readouterr()
        rc = main(["config", "validate", str(path)])
        _check(rc, capsys.readouterr().err, path)


@FUZZ
@given(data=st.data())
def test_cluster_files(capsys: pytest.CaptureFixture[str], data: st.DataObject) -> None:
    docs = [_mutate(d, data) if data.draw(st.booleans()) else d for d in CLUSTER]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / data.draw(st.sampled_from(["cluster.yaml", "cluster.json"]))
        body = {"apiVersion": "v1", "kind": "List", "items": docs}
        path.write_text(_render(body if path.suffix == ".json" else docs, data))
        capsys.readouterr()
        rc = main(["simulate", "--cluster", str(path), "--output", "json"])
        _check(rc, capsys.readouterr().err, path)


def test_a_lone_surrogate_in_a_yaml_key_is_reported_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by the fuzz: YAML's "\\ud800" escape makes a lone surrogate, which printing
    the error about it used to turn into a UnicodeEncodeError traceback."""
    path = tmp_path / "c.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        'profiles: [{"\\ud800": 1}]\n'
    )
    assert main(["config", "validate", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"{path}: profiles[0].\\ud800: unknown field"
