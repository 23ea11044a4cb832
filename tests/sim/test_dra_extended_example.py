"""examples/dra-extended-resources.yaml, as the README describes it: a pod asking for
two ``example.com/gpu`` gets the DRA node's devices through a claim the scheduler made,
one asking for one goes to the device plugin's node once the DRA GPUs are taken, and the
class's implicit resource name fits nowhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksched.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "dra-extended-resources.yaml"
MESSAGE = "0/3 nodes are available: 3 cannot allocate all claims."


def test_dra_extended_resources_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", str(EXAMPLE), "--output", "json", "--explain"]) == 0
    got = {p["name"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
    assert got["inference"]["node"] == "dra-node"
    assert got["notebook"]["node"] == "plugin-node"
    assert got["batch"]["node"] is None
    assert got["batch"]["message"].startswith(MESSAGE)
    # Fit leaves the request to DRA where it is not advertised, checks it where it is
    fit = {n: v["NodeResourcesFit"] for n, v in got["inference"]["explain"]["filter"].items()}
    assert fit == {
        "dra-node": "Success",
        "plugin-node": "UnschedulableAndUnresolvable: Insufficient example.com/gpu",
        "cpu-only": "Success",
    }
    # both DRA GPUs are held by the claim the scheduler made for the pod
    devices = got["inference"]["explain"]["devices"]["dra-node"]
    holders = set(devices.values())
    assert len(holders) == 1
    (holder,) = holders
    assert holder.startswith("ml/inference-extended-resources-")
    assert sorted(devices) == ["gpu.example.com/dra-node/gpu-0", "gpu.example.com/dra-node/gpu-1"]


def test_readme_describes_the_example() -> None:
    text = " ".join((ROOT / "README.md").read_text().split())
    for fragment in (
        "`examples/dra-extended-resources.yaml`",
        "`extendedResourceName: example.com/gpu`",
        "`inference` asks for two and lands on `dra-node`",
        "`notebook` asks for one and lands on `plugin-node`",
        "`batch` asks for the class's implicit name",
        f"`{MESSAGE}`",
    ):
        assert fragment in text, fragment
