"""examples/storage.yaml, as the README describes it: a local disk binds its pod to the
disk's node, provisioned EBS claims respect the CSINode volume limit, and a claim of an
Immediate class nobody has bound keeps its pod pending."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksched.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "storage.yaml"


def test_storage_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", str(EXAMPLE), "--output", "json", "--explain"]) == 0
    out = json.loads(capsys.readouterr().out)
    pods = out["pods"] if isinstance(out, dict) else out
    got = {p["name"]: p for p in pods}
    assert got["redis-0"]["node"] == "db-b1"  # the only node with the local disk
    assert got["postgres-0"]["node"] == "db-a1"
    # db-a1's CSINode allows one EBS volume, and postgres-0's provisioned one took it.
    assert got["postgres-1"]["node"] in ("db-a2", "db-b1")
    verdict = got["postgres-1"]["explain"]["filter"]["db-a1"]["NodeVolumeLimits"]
    assert verdict == "Unschedulable: node(s) exceed max volume count"
    assert got["reporter"]["node"] is None
    assert "pod has unbound immediate PersistentVolumeClaims" in got["reporter"]["message"]
