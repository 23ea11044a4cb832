"""Builders shared by the InterPodAffinity tests, shaped like upstream's ``st.MakePod()``."""

from __future__ import annotations

import itertools
from typing import Any

from ksched.api.objects import Namespace, Node, Pod, decode
from ksched.features import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.snapshot import Snapshot
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins.interpodaffinity import InterPodAffinity, InterPodAffinityArgs
from tests.factories import make_snapshot

REQUIRED, PREFERRED, BOTH = "required", "preferred", "both"

_uid = itertools.count(1)


class MakePod:
    """Chainable pod builder (``st.MakePod()``); namespace "" like upstream's tests."""

    def __init__(self) -> None:
        self.m: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "", "namespace": "", "labels": {}, "uid": ""},
            "spec": {"containers": [{"name": "c", "image": "pause"}]},
        }

    def name(self, name: str) -> MakePod:
        self.m["metadata"]["name"] = name
        return self

    def uid(self, uid: str) -> MakePod:
        self.m["metadata"]["uid"] = uid
        return self

    def namespace(self, ns: str) -> MakePod:
        self.m["metadata"]["namespace"] = ns
        return self

    def labels(self, labels: dict[str, str]) -> MakePod:
        self.m["metadata"]["labels"] = dict(labels)
        return self

    def label(self, k: str, v: str) -> MakePod:
        self.m["metadata"]["labels"][k] = v
        return self

    def node(self, name: str) -> MakePod:
        self.m["spec"]["nodeName"] = name
        return self

    def affinity(self, affinity: dict[str, Any]) -> MakePod:
        self.m["spec"]["affinity"] = affinity
        return self

    def _term(self, kind: str, anti: bool, topology_key: str, selector: dict[str, Any]) -> MakePod:
        a = self.m["spec"].setdefault("affinity", {})
        section = a.setdefault("podAntiAffinity" if anti else "podAffinity", {})
        term = {"labelSelector": selector, "topologyKey": topology_key}
        if kind in (REQUIRED, BOTH):
            section.setdefault("requiredDuringSchedulingIgnoredDuringExecution", []).append(term)
        if kind in (PREFERRED, BOTH):
            section.setdefault("preferredDuringSchedulingIgnoredDuringExecution", []).append(
                {"weight": 1, "podAffinityTerm": term}
            )
        return self

    def pod_affinity(self, topology_key: str, selector: dict[str, Any], kind: str) -> MakePod:
        return self._term(kind, False, topology_key, selector)

    def pod_anti_affinity(self, topology_key: str, selector: dict[str, Any], kind: str) -> MakePod:
        return self._term(kind, True, topology_key, selector)

    def pod_affinity_in(self, key: str, tk: str, values: list[str], kind: str) -> MakePod:
        return self._term(kind, False, tk, _expr(key, "In", values))

    def pod_affinity_not_in(self, key: str, tk: str, values: list[str], kind: str) -> MakePod:
        return self._term(kind, False, tk, _expr(key, "NotIn", values))

    def pod_affinity_exists(self, key: str, tk: str, kind: str) -> MakePod:
        return self._term(kind, False, tk, _expr(key, "Exists"))

    def pod_anti_affinity_in(self, key: str, tk: str, values: list[str], kind: str) -> MakePod:
        return self._term(kind, True, tk, _expr(key, "In", values))

    def pod_anti_affinity_not_in(self, key: str, tk: str, values: list[str], kind: str) -> MakePod:
        return self._term(kind, True, tk, _expr(key, "NotIn", values))

    def pod_anti_affinity_exists(self, key: str, tk: str, kind: str) -> MakePod:
        return self._term(kind, True, tk, _expr(key, "Exists"))

    def obj(self) -> PodInfo:
        meta = self.m["metadata"]
        if not meta["uid"]:
            meta["uid"] = f"uid-{next(_uid)}"
        if not meta["name"]:
            meta["name"] = f"pod-{meta['uid']}"
        return PodInfo(decode(self.m, Pod), self.m)


def _expr(key: str, op: str, values: list[str] | None = None) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        e["values"] = values
    return {"matchExpressions": [e]}


def pod(
    name: str = "",
    ns: str = "",
    labels: dict[str, str] | None = None,
    node: str = "",
    affinity: dict[str, Any] | None = None,
) -> PodInfo:
    """A pod like upstream's ``&v1.Pod{...}`` literals."""
    b = MakePod().name(name).namespace(ns).labels(labels or {})
    if node:
        b.node(node)
    if affinity is not None:
        b.affinity(affinity)
    return b.obj()


def node(name: str, labels: dict[str, str] | None = None) -> Node:
    """A node with exactly these labels (no implicit hostname label), as upstream's tests."""
    return decode(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": dict(labels or {})},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        },
        Node,
    )


def namespace(name: str, labels: dict[str, str] | None = None) -> Namespace:
    return decode(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": dict(labels or {})},
        },
        Namespace,
    )


NS_LABEL_T1 = {"team": "team1"}
NS_LABEL_T2 = {"team": "team2"}
NAMESPACES = [
    namespace("subteam1.team1", NS_LABEL_T1),
    namespace("subteam2.team1", NS_LABEL_T1),
    namespace("subteam1.team2", NS_LABEL_T2),
    namespace("subteam2.team2", NS_LABEL_T2),
]


def setup(
    pods: list[PodInfo],
    nodes: list[Node],
    namespaces: list[Namespace] | None = None,
    args: dict[str, Any] | None = None,
    version: str | None = None,
) -> tuple[InterPodAffinity, Snapshot]:
    """``SetupPluginWithInformers``: the plugin over a snapshot of ``pods`` on ``nodes``
    (``version``: the emulated one, else the default)."""
    snap = make_snapshot(nodes, pods)
    listers = {"namespaces": {ns.metadata.name: ns for ns in (namespaces or [])}}
    parsed = InterPodAffinityArgs.parse("InterPodAffinity", dict(args or {}))
    handle = Handle(snapshot=snap, listers=listers)
    if version is not None:
        handle = Handle(snapshot=snap, listers=listers, features=set_feature_gates([], [version]))
    return InterPodAffinity(parsed, handle), snap


def node_info(snap: Snapshot, name: str) -> NodeInfo:
    ni = snap.get(name)
    assert ni is not None, name
    return ni


def new_state() -> CycleState:
    return CycleState()
