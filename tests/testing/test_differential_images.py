"""The oracle's frozen image counts: nodes that join while pods are scheduled (the
``images`` group), and ksched's replay of one pod given the states before the earlier
ones (``history``), so its snapshot holds what kube-scheduler's did."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.testing.differential import generator
from ksched.testing.differential.generator import IMAGES, generate
from ksched.testing.differential.local import KschedReplay

JSON = dict[str, Any]
MB = 1024 * 1024
IMG = "registry.example.com/db:2.3"
HOST = "kubernetes.io/hostname"


def _node(name: str, rv: str, images: bool) -> JSON:
    status: JSON = {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    if images:
        status["images"] = [{"names": [IMG], "sizeBytes": 820 * MB}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "resourceVersion": rv, "labels": {HOST: name}},
        "status": status,
    }


def _pod(name: str, rv: str = "", node: str = "") -> JSON:
    spec: JSON = {"containers": [{"name": "c", "image": IMG}]}
    if node:
        spec["nodeName"] = node
    meta = {"name": name, "namespace": "default", "uid": f"uid-{name}", "resourceVersion": rv}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def test_a_replay_with_history_scores_the_counts_kube_scheduler_froze() -> None:
    """kube-scheduler v1.37.2 and v1.36.3, run by hand on this sequence (a with the image,
    c without; p1 scheduled onto c; b with the image joins; p2), scored p2 25 on a and 53
    on b: a was cloned when it alone held the image, b with two of three nodes."""
    a, c = _node("a", "1", True), _node("c", "2", False)
    before_p1 = [a, c]
    now = [a, c, _pod("p1", "5", node="c"), _node("b", "6", True)]
    replay = KschedReplay()
    frozen = replay(now, _pod("p2"), [before_p1])
    assert frozen.scores["ImageLocality"] == {"a": 25, "b": 53, "c": 0}
    # alone, the state is all there is: every node cloned with the counts of now
    live = replay(now, _pod("p2"))
    assert live.scores["ImageLocality"] == {"a": 53, "b": 53, "c": 0}


def test_history_follows_updates_and_removals_by_resource_version() -> None:
    """A node updated since (a new resourceVersion) is cloned again: its counts are of
    now; a node gone from the state is gone from the snapshot."""
    a, c, d = _node("a", "1", True), _node("c", "2", False), _node("d", "3", True)
    now = [_node("a", "7", True), c, _node("b", "6", True)]
    out = KschedReplay()(now, _pod("p2"), [[a, c, d]])
    assert out.scores["ImageLocality"] == {"a": 53, "b": 53, "c": 0}


def test_late_nodes_join_before_pods_and_leave_the_other_draws_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = {n for n, _ in IMAGES}
    seen = 0
    for seed in range(8):
        sc = generate(seed, ["resources", "images"])
        assert not sc.pending[0].before
        for p in sc.pending:
            for node in p.before:
                seen += 1
                assert "images" in p.groups and not p.batch
                assert node["metadata"]["name"].startswith(sc.name_prefix)
                assert node["metadata"]["labels"][HOST] == node["metadata"]["name"]
                listed = {n for img in node["status"]["images"] for n in img["names"]}
                assert listed and listed <= names
        # the same scenario but for the late nodes
        feature = generator.FEATURES["images"]
        monkeypatch.setitem(
            generator.FEATURES,
            "images",
            generator.Feature("images", feature.setup, feature.decorate, feature.weight),
        )
        plain = generate(seed, ["resources", "images"])
        monkeypatch.setitem(generator.FEATURES, "images", feature)
        assert plain.objects == sc.objects
        assert [p.pod for p in plain.pending] == [p.pod for p in sc.pending]
    assert seen >= 4
