"""``/prioritize``'s 0..10 scores: ksched's weighted totals stretched over the nodes asked
about (``extender_priorities``), so a MostAllocated extender still tells nodes apart after
kube-scheduler's 0..10 scale; one log line per request at ``-v 4``, none at ``-v 2``."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched import logging as klog
from ksched.extender.server import ExtenderServer, extender_priorities

from .conftest import node_manifest, pod_manifest
from .test_server import _registry, _serve, server_config, stateful_extender

pytestmark = pytest.mark.anyio

MOST_ALLOCATED = {
    "profiles": [
        {
            "schedulerName": "ksched",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {"scoringStrategy": {"type": "MostAllocated"}},
                }
            ],
        }
    ]
}


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    buf = io.StringIO()
    yield buf
    klog.reset()


@pytest.mark.parametrize(
    ("totals", "weights", "expected"),
    [
        # the spread is stretched: lowest 0, highest 10, halves rounded up
        ([500, 505, 510, 515, 520], 7, [0, 3, 5, 8, 10]),
        # a gap of one point among a hundred still separates the nodes
        ([361, 362, 362], 4, [0, 10, 10]),
        # order of the request kept; ties score alike
        ([90, 10, 50, 10], 1, [10, 0, 5, 0]),
        # nothing to stretch: the weighted average scaled down (55/100 -> 6)
        ([385, 385], 7, [6, 6]),
        ([385], 7, [6]),
        ([0], 0, [0]),
        ([], 3, []),
    ],
)
def test_extender_priorities(totals: list[int], weights: int, expected: list[int]) -> None:
    assert extender_priorities(totals, weights) == expected


def test_extender_priorities_keep_the_order_of_any_totals() -> None:
    totals = [3 * i * i % 701 for i in range(200)]
    out = extender_priorities(totals, 7)
    assert min(out) == 0 and max(out) == 10
    ranked = sorted(range(len(totals)), key=totals.__getitem__)
    assert [out[i] for i in ranked] == sorted(out)  # monotone in the total
    for t, s in zip(totals, out, strict=True):
        assert abs(s - 10 * (t - min(totals)) / (max(totals) - min(totals))) <= 0.5


async def test_most_allocated_nodes_of_one_size_with_different_loads(
    apiserver: Any, apiserver_kubeconfig: Path
) -> None:
    """The issue's case: seven equal nodes, MostAllocated, the pod fits everywhere. Scaling
    the weighted average down gave every node 6; the fullest node must score 10, the
    emptiest 0, and the scores fall with the load."""
    names = [f"n{i}" for i in range(7)]
    for n in names:
        apiserver.create(node_manifest(n, cpu="8"))
    for i, n in enumerate(names):
        for j in range(i):  # n0 empty, n6 holds six pods of 1 CPU
            busy = pod_manifest(f"busy-{n}-{j}", cpu="1", scheduler="default-scheduler")
            busy["spec"]["nodeName"] = n
            apiserver.create(busy)
    apiserver.create(pod_manifest("web", cpu="500m", scheduler="default-scheduler"))
    web = apiserver.get("Pod", "default", "web")
    async with stateful_extender(server_config(**MOST_ALLOCATED), apiserver_kubeconfig) as c:
        status, out = await c.json("prioritize", {"Pod": web, "NodeNames": names})
    assert status == 200, out
    scores = [h["Score"] for h in out]
    assert [h["Host"] for h in out] == names
    assert scores[0] == 0 and scores[-1] == 10
    assert scores == sorted(scores) and len(set(scores)) == len(scores)


async def test_one_line_per_prioritize_at_v4_none_at_v2(logs: io.StringIO) -> None:
    server = ExtenderServer(server_config(**MOST_ALLOCATED), _registry())
    pod = pod_manifest("web", cpu="1")
    nodes = [node_manifest("small", cpu="2"), node_manifest("big", cpu="16")]
    args = {"Pod": pod, "Nodes": {"items": nodes}}
    for v, expected in ((2, 0), (4, 1)):
        logs.seek(0)
        logs.truncate()
        klog.configure("json", v, stream=logs)
        async for c in _serve(server):
            assert (await c.json("filter", args))[0] == 200
            status, out = await c.json("prioritize", args)
            assert status == 200
            assert {h["Host"]: h["Score"] for h in out} == {"small": 10, "big": 0}
        lines = [json.loads(x) for x in logs.getvalue().splitlines()]
        per_request = [x for x in lines if x.get("pod") == "default/web"]
        assert len(per_request) == expected, lines
    (line,) = per_request
    assert line["msg"] == "extender prioritize"
    assert line["node"] == "small"  # MostAllocated: the node the pod fills most
    assert line["nodes"] == 2 and line["profile"] == "ksched"
    assert line["total_min"] < line["total_max"]
