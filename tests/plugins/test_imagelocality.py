"""ImageLocality: upstream image_locality_test.go table, ported (per node and batch)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest

from ksched.api.objects import Node, decode
from ksched.features import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import ImageStateSummary, PodInfo
from ksched.plugins.imagelocality import ImageLocality, calculate_priority, normalized_image_name
from tests.factories import make_node_info, make_pod, make_snapshot

MB = 1024 * 1024


def image_node(name: str, images: list[tuple[list[str], int]]) -> Node:
    return decode(
        {
            "metadata": {"name": name},
            "status": {"images": [{"names": n, "sizeBytes": size} for n, size in images]},
        },
        Node,
    )


def pod(containers: list[str], init: list[str] | None = None) -> PodInfo:
    spec: dict[str, Any] = {}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": img} for i, img in enumerate(init)]
    return make_pod(
        containers=[{"name": f"c{i}", "image": img} for i, img in enumerate(containers)], **spec
    )


NODE_40_300_2000 = [
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
    (["gcr.io/2000:latest"], 2000 * MB),
]
NODE_250_10 = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_600_40_900 = [
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/40:latest"], 40 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_300_600_900 = [
    (["gcr.io/300:latest"], 300 * MB),
    (["gcr.io/600:latest"], 600 * MB),
    (["gcr.io/900:latest"], 900 * MB),
]
NODE_4000_30 = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40 = [
    (["gcr.io/20:latest"], 20 * MB),
    (["gcr.io/30:latest"], 30 * MB),
    (["gcr.io/40:latest"], 40 * MB),
]
NO_IMAGES: list[tuple[list[str], int]] = []


@pytest.mark.parametrize(
    ("name", "make", "nodes", "want"),
    [
        (
            "two images spread on two nodes, prefer the larger image one",
            lambda: pod(["gcr.io/40", "gcr.io/250"]),
            [NODE_40_300_2000, NODE_250_10],
            [0, 5],
        ),
        (
            "two images on one node, prefer this node",
            lambda: pod(["gcr.io/40", "gcr.io/300"]),
            [NODE_40_300_2000, NODE_250_10],
            [7, 0],
        ),
        (
            "if exceed limit, use limit",
            lambda: pod(["gcr.io/10", "gcr.io/4000"]),
            [NODE_4000_30, NODE_250_10],
            [100, 0],
        ),
        (
            "if exceed limit, use limit (with node which has no images present)",
            lambda: pod(["gcr.io/10", "gcr.io/4000"]),
            [NODE_4000_30, NODE_250_10, NO_IMAGES],
            [66, 0, 0],
        ),
        (
            "pod with multiple large images, node2 is preferred",
            lambda: pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
            [NODE_600_40_900, NODE_300_600_900, NO_IMAGES],
            [32, 36, 0],
        ),
        (
            "pod with multiple small images",
            lambda: pod(["gcr.io/30", "gcr.io/40"]),
            [NODE_20_30_40, NODE_4000_30],
            [1, 0],
        ),
        (
            "include InitContainers: two images spread on two nodes, prefer the larger image one",
            lambda: pod(["gcr.io/30"], init=["gcr.io/300"]),
            [NODE_40_300_2000, NODE_20_30_40],
            [6, 0],
        ),
    ],
)
def test_image_locality_priority(name: str, make: Any, nodes: list[Any], want: list[int]) -> None:
    ns = [image_node(f"node{i + 1}", imgs) for i, imgs in enumerate(nodes)]
    snap = make_snapshot(ns)
    plugin = ImageLocality(None, Handle(snapshot=snap))
    p = make()
    state = CycleState()
    per_node = []
    for n in ns:
        ni = snap.get(n.metadata.name)
        assert ni is not None
        per_node.append(plugin.score(state, p, ni))
    assert per_node == want
    rows = np.array([snap.row(n.metadata.name) for n in ns], dtype=np.intp)
    assert plugin.score_batch(state, p, snap, rows).tolist() == want


def _digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


@pytest.mark.parametrize(
    ("image", "want"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
        ("root:tag", "root:tag"),
        ("root@" + _digest("root"), "root@" + _digest("root")),
    ],
)
def test_normalized_image_name(image: str, want: str) -> None:
    assert normalized_image_name(image) == want


def test_calculate_priority_bounds() -> None:
    assert calculate_priority(0, 0) == 0
    assert calculate_priority(10 * MB, 1) == 0
    assert calculate_priority(5000 * MB, 2) == 100


def test_pod_without_containers_scores_zero() -> None:
    snap = make_snapshot([image_node("node1", NODE_250_10)])
    plugin = ImageLocality(None, Handle(snapshot=snap))
    p = make_pod(containers=[])
    ni = snap.get("node1")
    assert ni is not None
    assert plugin.score(CycleState(), p, ni) == 0
    assert plugin.score_batch(CycleState(), p, snap, np.array([0], dtype=np.intp)).tolist() == [0]


def test_registered_with_framework() -> None:
    from ksched.plugins import default_registry

    spec = default_registry(entry_points=False).get("ImageLocality")
    assert spec is not None and spec.cls is ImageLocality
    assert spec.points == ["score"]


def test_batch_with_per_node_image_summaries() -> None:
    """Nodes holding their own (differing) summaries of an image: batch still matches."""
    infos = []
    for i, (size, num) in enumerate([(500 * MB, 1), (900 * MB, 2), (0, 0), (300 * MB, 3)]):
        ni = make_node_info(image_node(f"node{i}", []))
        if num:
            ni.image_states = {
                "gcr.io/x:latest": ImageStateSummary(size, num),
                "gcr.io/y:v1": ImageStateSummary(size // 2, num),
            }
        infos.append(ni)
    snap = Snapshot(infos)
    plugin = ImageLocality(None, Handle(snapshot=snap))
    p = pod(["gcr.io/x", "gcr.io/x", "gcr.io/y:v1"], init=["gcr.io/y:v1"])
    per_node = [plugin.score(CycleState(), p, ni) for ni in infos]
    rows = np.array([3, 1, 0, 2], dtype=np.intp)
    assert plugin.score_batch(CycleState(), p, snap, rows).tolist() == [per_node[r] for r in rows]
    # e.g. node0: (2 * 500M/4 + 2 * 250M/4 - 23M) * 100 / (4 * 1000M - 23M) = 8
    assert per_node == [8, 33, 0, 16]


@pytest.mark.parametrize(
    ("version", "want"),
    [
        # both: (428.6M + 351.4M - 23M) * 100 / (1000M - 23M) = 77; db: 33; tools: 41
        ("1.36", [77, 33, 33, 41]),
        # the volume raises the threshold to 2000M: 757M * 100 / 1977M = 38; db 16; tools 20
        ("1.37", [38, 16, 16, 20]),
    ],
)
def test_image_volumes_add_to_the_sum_and_from_v1_37_to_the_image_count(
    version: str, want: list[int]
) -> None:
    """v1.36 counts ``spec.volumes[].image`` references with the containers' images but
    keeps the threshold at 1000MB per container (the differential harness's seed 5, by
    hand: tools 1500MB on 2 of 7 nodes, db 820MB on 3 of 7); v1.37 adds 1000MB per image
    volume to the threshold (``sumImageScores`` returns the image count)."""
    tools = (["registry.example.com/tools:latest"], 1500 * MB)
    db = (["registry.example.com/db:2.3"], 820 * MB)
    nodes = [
        image_node("both", [db, tools]),
        image_node("db", [db]),
        image_node("db2", [db]),
        image_node("tools", [tools]),
        *(image_node(f"none{i}", []) for i in range(3)),
    ]
    snap = make_snapshot(nodes)
    gates = set_feature_gates([], [version])
    plugin = ImageLocality(None, Handle(snapshot=snap, features=gates))
    p = make_pod(
        containers=[{"name": "c", "image": "registry.example.com/tools:latest"}],
        volumes=[{"name": "data", "image": {"reference": "registry.example.com/db:2.3"}}],
    )
    infos = [snap.get(n.metadata.name) for n in nodes]
    per_node = [plugin.score(CycleState(), p, ni) for ni in infos if ni is not None]
    assert per_node[:4] == want
    rows = np.arange(len(nodes), dtype=np.intp)
    assert plugin.score_batch(CycleState(), p, snap, rows).tolist() == per_node
    # without the volume only the container's image counts, in both versions
    bare = make_pod(containers=[{"name": "c", "image": "registry.example.com/tools:latest"}])
    assert [plugin.score(CycleState(), bare, ni) for ni in infos if ni is not None][:4] == [
        41,
        0,
        0,
        41,
    ]
    # v1.37 counts an image volume whose image is not on any node (or has no reference)
    # in the threshold all the same
    other = make_pod(
        containers=[{"name": "c", "image": "registry.example.com/tools:latest"}],
        volumes=[{"name": "x", "image": {"reference": "elsewhere:1"}}, {"name": "y", "image": {}}],
    )
    got = [plugin.score(CycleState(), other, ni) for ni in infos if ni is not None][:4]
    assert got == ([41, 0, 0, 41] if version == "1.36" else [13, 0, 0, 13])
    assert plugin.score_batch(CycleState(), other, snap, rows).tolist()[:4] == got
