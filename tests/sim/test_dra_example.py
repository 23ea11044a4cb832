"""examples/dra-gpus.yaml, as the README describes it: the big-memory GPU pod lands on
the node with such GPUs, the same-PCIe-root pair on the node with two GPUs per root, any
one GPU goes somewhere with one left, and eight GPUs fit nowhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ksched.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "dra-gpus.yaml"


def test_dra_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--cluster", str(EXAMPLE), "--output", "json", "--explain"]) == 0
    out = json.loads(capsys.readouterr().out)
    got = {p["name"]: p for p in out["pods"]}
    assert got["finetune"]["node"] == "gpu-a"  # the only 80Gi GPUs
    assert got["allreduce"]["node"] == "gpu-b"  # the only node with two GPUs on one root
    assert got["notebook"]["node"] in ("gpu-a", "gpu-b")
    assert got["pretrain"]["node"] is None
    assert got["pretrain"]["message"].startswith(
        "0/3 nodes are available: 3 cannot allocate all claims."
    )
    verdicts = got["pretrain"]["explain"]["filter"]
    assert verdicts["cpu-only"]["DynamicResources"] == (
        "UnschedulableAndUnresolvable: cannot allocate all claims"
    )
    # --explain shows each node's devices and the claims holding them
    devices = got["finetune"]["explain"]["devices"]
    assert sorted(devices) == ["gpu-a", "gpu-b"]
    assert devices["gpu-a"]["gpu.example.com/gpu-a/gpu-0"] == "ml/finetune-gpu"
    held = [c for node in devices.values() for c in node.values() if c]
    assert sorted(held) == [
        "ml/allreduce-gpus",
        "ml/allreduce-gpus",
        "ml/finetune-gpu",
        "ml/notebook-gpu",
    ]


def test_readme_describes_the_example() -> None:
    readme = (ROOT / "README.md").read_text()
    text = " ".join(readme.split())
    for fragment in (
        "`examples/dra-gpus.yaml`",
        "`finetune` asks for a GPU with at least 40Gi",
        "lands on `gpu-a`",
        "which only `gpu-b` has",
        "`pretrain` asks for eight and stays pending",
        "`0/3 nodes are available: 3 cannot allocate all claims.`",
    ):
        assert fragment in text, fragment
