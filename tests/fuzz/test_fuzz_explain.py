"""Hostile cluster files through ``--explain``, ``--report`` and ``--compare``: exit 0 with
one JSON document (or the page written), or a clean exit 2; never a traceback."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.cli import main
from tests.fuzz.test_fuzz_files import CLUSTER, FUZZ, ROOT, _check, _mutate, _render


@FUZZ
@given(data=st.data())
def test_explain_report_and_compare_take_any_cluster_file(
    capsys: pytest.CaptureFixture[str], data: st.DataObject
) -> None:
    docs = [_mutate(d, data) if data.draw(st.booleans()) else d for d in CLUSTER]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "cluster.yaml"
        path.write_text(_render(docs, data))
        page = Path(d) / "report.html"
        extra = data.draw(
            st.sampled_from(
                [
                    ["--explain"],
                    ["--explain", "shop/web-0", "--top", "1"],
                    ["--report", str(page), "--explain"],
                    ["--compare", str(ROOT / "examples" / "most-allocated.yaml")],
                ]
            )
        )
        capsys.readouterr()
        rc = main(["simulate", "--cluster", str(path), "--output", "json", *extra])
        got = capsys.readouterr()
        _check(rc, got.err, path)
        if rc == 0:
            json.loads(got.out)  # all of stdout is one document
            if "--report" in extra:
                assert page.read_text().startswith("<!doctype html>")
