"""``ksched extender`` with quantities at the int64 boundaries (issue 16, item 1): nodes
reporting 8Ei, 2**63 - 1 millicores, 1n or negative amounts and pods asking for 1e18 used
to get 500s (an OverflowError building the snapshot, or an out-of-range score). Every
answer is now a 200 with valid scores, in the NodeList mode and the informer-backed one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ksched.extender.server import ExtenderServer

from .conftest import node_manifest, pod_manifest
from .test_server import Client, _registry, _serve, server_config, stateful_extender

pytestmark = pytest.mark.anyio

NODES = [
    node_manifest("huge", cpu="8Ei", memory="8Ei", pods="8Ei"),
    node_manifest("max-milli", cpu="9223372036854775807m"),
    node_manifest("nano", cpu="1n", memory="1n"),
    node_manifest("negative", cpu="-4", memory="-8Gi"),
    node_manifest("plain"),
]
PODS = {
    "1e18": pod_manifest("p", cpu="1e18", memory="1e18"),
    "8Ei": pod_manifest("p", cpu="8Ei", memory="8Ei"),
    "max-milli": pod_manifest("p", cpu="9223372036854775807m"),
    "negative": pod_manifest("p", cpu="-1", memory="-1e18"),
    "1n": pod_manifest("p", cpu="1n", memory="1n"),
    "plain": pod_manifest("p"),
}
STRATEGIES: list[dict[str, Any]] = [
    {},
    {"scoringStrategy": {"type": "MostAllocated"}},
    {
        "scoringStrategy": {
            "type": "RequestedToCapacityRatio",
            "requestedToCapacityRatio": {
                "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
            },
        }
    },
]


def _config(fit_args: dict[str, Any]) -> Any:
    if not fit_args:
        return server_config()
    return server_config(
        profiles=[
            {
                "schedulerName": "ksched",
                "pluginConfig": [{"name": "NodeResourcesFit", "args": fit_args}],
            }
        ]
    )


@pytest.mark.parametrize("fit_args", STRATEGIES, ids=["least", "most", "ratio"])
async def test_filter_and_prioritize_answer_200_with_valid_scores(fit_args: dict[str, Any]) -> None:
    async for c in _serve(ExtenderServer(_config(fit_args), _registry())):
        for which, pod in PODS.items():
            args = {"Pod": pod, "Nodes": {"items": NODES}}
            status, out = await c.json("filter", args)
            assert status == 200 and out["Error"] == "", (which, out)
            passed = {n["metadata"]["name"] for n in out["Nodes"]["items"]}
            failed = {**out["FailedNodes"], **out["FailedAndUnresolvableNodes"]}
            assert passed | set(failed) == {n["metadata"]["name"] for n in NODES}
            status, out = await c.json("prioritize", args)
            assert status == 200, (which, out)
            assert [h["Host"] for h in out] == [n["metadata"]["name"] for n in NODES]
            assert all(0 <= h["Score"] <= 10 for h in out), (which, out)


async def _passed(c: Client, pod: str) -> set[str]:
    status, out = await c.json("filter", {"Pod": PODS[pod], "Nodes": {"items": NODES}})
    assert status == 200
    return {n["metadata"]["name"] for n in out["Nodes"]["items"]}


async def test_the_fit_verdicts_at_the_boundaries() -> None:
    async for c in _serve(ExtenderServer(server_config(), _registry())):
        # 1e18 cpu saturates to 2**63 - 1 millicores: only the nodes with as much fit it
        # (1e18 bytes of memory: only "huge")
        assert await _passed(c, "1e18") == {"huge"}
        assert await _passed(c, "max-milli") == {"huge", "max-milli"}
        # 1n is one millicore and one byte: "nano" has exactly that
        assert await _passed(c, "1n") == {"huge", "max-milli", "nano", "plain"}
        # upstream checks only requests above 0: a negative one fits anywhere
        assert await _passed(c, "negative") == {n["metadata"]["name"] for n in NODES}


async def test_informer_backed_mode_with_a_bound_1e18_pod(
    apiserver: Any, apiserver_kubeconfig: Path
) -> None:
    """A pod bound by nodeName for another scheduler with 1e18 cpu, and a node of 8Ei:
    the extender's cache takes both and answers as usual."""
    apiserver.create(node_manifest("hogged"))
    apiserver.create(node_manifest("huge", cpu="8Ei"))
    apiserver.create(node_manifest("plain"))
    hog = pod_manifest("hog", cpu="1e18", scheduler="default-scheduler")
    hog["spec"]["nodeName"] = "hogged"
    apiserver.create(hog)
    apiserver.create(pod_manifest("web", cpu="1", scheduler="default-scheduler"))
    web = apiserver.get("Pod", "default", "web")
    async with stateful_extender(server_config(), apiserver_kubeconfig) as c:
        args = {"Pod": web, "Nodes": None, "NodeNames": ["hogged", "huge", "plain"]}
        status, out = await c.json("filter", args)
        assert status == 200, out
        assert out["NodeNames"] == ["huge", "plain"]
        assert out["FailedNodes"] == {"hogged": "Insufficient cpu"}
        status, out = await c.json("prioritize", args)
        assert status == 200, out
        assert all(0 <= h["Score"] <= 10 for h in out)
