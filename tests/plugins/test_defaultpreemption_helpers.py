"""Builders for the DefaultPreemption tests (no tests here): upstream's st.MakePod,
MakeNode and MakePDB and the fake plugins of its testing framework, as ksched objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ksched.api.objects import Node, Pod, PodDisruptionBudget, decode
from ksched.config import default_plugin_args
from ksched.config.types import PluginConfig, PluginRef, Plugins, PluginSet, Profile
from ksched.features import FeatureGates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import FilterPlugin, PreFilterPlugin, PreFilterResult
from ksched.framework.registry import Registry
from ksched.framework.runtime import Framework
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins import default_registry
from ksched.plugins.defaultpreemption import DefaultPreemption
from ksched.queue.nominator import Nominator
from tests.factories import make_snapshot

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000

SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
ONE_POD = {"pods": "1"}

LABEL_KEYS = ("hostname", "zone", "region")
ERR_REASON_FAKE = "Nodes failed the fake plugin"


def epoch(seconds: int) -> str:
    """``metav1.NewTime(time.Unix(0, n))`` in whole seconds (the order is what matters)."""
    return f"1970-01-01T00:00:{seconds:02d}Z"


def pod(
    name: str,
    *,
    uid: str | None = None,
    ns: str = "default",
    node: str = "",
    prio: int | None = None,
    req: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    start: str | None = None,
    policy: str | None = None,
    nominated: str = "",
    terminating: bool = False,
    conditions: Sequence[dict[str, str]] = (),
    anti_affinity_exists: tuple[str, str] | None = None,
    spread: Sequence[tuple[int, str, str]] = (),
) -> PodInfo:
    """``st.MakePod()``: a pause container with ``req`` as its requests."""
    container: dict[str, Any] = {"name": "pause", "image": "pause"}
    if req:
        container["resources"] = {"requests": dict(req)}
    spec: dict[str, Any] = {"containers": [container], "schedulerName": "default-scheduler"}
    if node:
        spec["nodeName"] = node
    if prio is not None:
        spec["priority"] = prio
    if policy is not None:
        spec["preemptionPolicy"] = policy
    if anti_affinity_exists is not None:
        key, topology = anti_affinity_exists
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]},
                        "topologyKey": topology,
                    }
                ]
            }
        }
    if spread:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": skew,
                "topologyKey": key,
                "whenUnsatisfiable": when,
                "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
            }
            for skew, key, when in spread
        ]
    meta: dict[str, Any] = {
        "name": name,
        "namespace": ns,
        "uid": uid if uid is not None else name,
        "labels": dict(labels or {}),
    }
    if terminating:
        meta["deletionTimestamp"] = epoch(59)
    status: dict[str, Any] = {}
    if start is not None:
        status["startTime"] = start
    if nominated:
        status["nominatedNodeName"] = nominated
    if conditions:
        status["conditions"] = list(conditions)
    m = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}
    return PodInfo(decode(m, Pod), m)


def node(
    spec: str, cap: dict[str, str] | None = None, labels: dict[str, str] | None = None
) -> Node:
    """``st.MakeNode().Capacity(cap)`` (32 pods unless ``cap`` says otherwise).

    ``spec`` "name/zone/region" also labels the node hostname/zone/region, as upstream's
    preemption tests do.
    """
    parts = spec.split("/")
    lbls = {LABEL_KEYS[i]: v for i, v in enumerate(parts)}
    lbls.update(labels or {})
    alloc: dict[str, Any] = {"pods": "32", **(cap or {})}
    m = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": parts[0], "labels": lbls},
        "status": {"capacity": alloc, "allocatable": alloc},
    }
    return decode(m, Node)


def pdb(
    name: str = "pdb",
    ns: str = "default",
    *,
    match_labels: dict[str, str] | None = None,
    allowed: int = 0,
    disrupted: Sequence[str] = (),
) -> PodDisruptionBudget:
    m: dict[str, Any] = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": {"matchLabels": dict(match_labels or {})}},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {p: "2024-01-01T00:00:00Z" for p in disrupted},
        },
    }
    return decode(m, PodDisruptionBudget)


# ---- fake plugins (pkg/scheduler/testing/framework) -------------------------------------------


class FakeFilter(FilterPlugin):
    """Counts Filter calls and fails the nodes listed in ``codes``."""

    name = "FakeFilter"

    def __init__(self, args: Any = None, handle: Handle | None = None) -> None:
        super().__init__(args, handle)
        self.calls = 0
        self.codes: dict[str, Code] = {}

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        self.calls += 1
        code = self.codes.get(node.name, Code.SUCCESS)
        if code == Code.SUCCESS:
            return None
        return Status(code, f"injecting failure for pod {pod.name}")


class FalseFilter(FilterPlugin):
    name = "FalseFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return Status(Code.UNSCHEDULABLE, ERR_REASON_FAKE)


class TrueFilter(FilterPlugin):
    name = "TrueFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


class MatchFilter(FilterPlugin):
    """Fits only the node named like the pod."""

    name = "MatchFilter"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None if pod.name == node.name else Status(Code.UNSCHEDULABLE, ERR_REASON_FAKE)


class ErrorExtensionPlugin(PreFilterPlugin):
    """upstream's "test-plugin": AddPod/RemovePod fail on nodes labelled error=true."""

    name = "test-plugin"

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def pre_filter_extensions(self) -> ErrorExtensionPlugin:
        return self

    def add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status | None:
        if node.node is not None and node.node.metadata.labels.get("error") == "true":
            return Status(Code.ERROR, f"failed to add pod: {pod.name}")
        return None

    def remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status | None:
        if node.node is not None and node.node.metadata.labels.get("error") == "true":
            return Status(Code.ERROR, f"failed to remove pod: {pod.name}")
        return None


def registry() -> Registry:
    reg = default_registry(entry_points=False)
    for cls in (FakeFilter, FalseFilter, TrueFilter, MatchFilter, ErrorExtensionPlugin):
        reg.register(cls.name, cls)
    return reg


# (plugin, its points) as upstream's tf.RegisterPluginAsExtensions.
FIT = ("NodeResourcesFit", ("preFilter", "filter"))
PTS = ("PodTopologySpread", ("preFilter", "filter"))
IPA = ("InterPodAffinity", ("preFilter", "filter"))

_ATTR = {"preFilter": "pre_filter", "filter": "filter"}


class Env:
    """A framework (with DefaultPreemption as its PostFilter) over a snapshot."""

    def __init__(
        self,
        nodes: Sequence[Node],
        pods: Sequence[PodInfo] = (),
        plugins: Sequence[tuple[str, Sequence[str]]] = (FIT,),
        *,
        pdbs: Sequence[PodDisruptionBudget] = (),
        args: dict[str, Any] | None = None,
        fake_filter: bool = False,
        version: str | None = None,
    ) -> None:
        self.snapshot = make_snapshot(list(nodes), list(pods))
        ps = Plugins(
            queue_sort=PluginSet([PluginRef("PrioritySort")]),
            bind=PluginSet([PluginRef("DefaultBinder")]),
            post_filter=PluginSet([PluginRef("DefaultPreemption")]),
        )
        if fake_filter:
            ps.filter.enabled.append(PluginRef("FakeFilter"))
        for name, points in plugins:
            for point in points:
                getattr(ps, _ATTR[point]).enabled.append(PluginRef(name))
        config = [PluginConfig("DefaultPreemption", dict(args))] if args is not None else []
        self.nominator = Nominator()
        handle = Handle(snapshot=self.snapshot, nominator=self.nominator)
        if version is not None:  # the emulated version (the default one if None)
            handle = Handle(
                snapshot=self.snapshot, features=FeatureGates(version), nominator=self.nominator
            )
        handle.listers["pdbs"] = {f"{p.metadata.namespace}/{p.metadata.name}": p for p in pdbs}
        self.fw = Framework(
            Profile("test", plugins=ps, plugin_config=config),
            registry(),
            handle,
            default_args=default_plugin_args,
        )
        pl = self.fw.plugins["DefaultPreemption"]
        assert isinstance(pl, DefaultPreemption)
        self.pl = pl
        self.fake: FakeFilter | None = self.fw.plugins.get("FakeFilter")

    def state_for(self, p: PodInfo) -> CycleState:
        """A CycleState filled by PreFilter, as the tests' RunPreFilterPlugins."""
        state = CycleState()
        _, st, _ = self.fw.run_pre_filter(state, p, self.snapshot)
        assert st.is_success(), st
        return state

    def node_infos(self) -> list[NodeInfo]:
        return sorted(self.snapshot.node_infos, key=lambda ni: ni.name)
