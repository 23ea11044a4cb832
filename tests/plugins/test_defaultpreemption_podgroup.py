"""DefaultPreemption's PodGroupPostFilter (v1.37 workload-aware preemption).

The victim-selection table is upstream's ``TestPodGroupEvaluator_SelectVictimsOnDomain``
(``framework/preemption/podgrouppreemption_test.go``) with its mock Filter (pods sized by a
``size`` label against fixed node capacities) and its mock scheduling function (members
placed round-robin where they fit, over the snapshot as it is when called), run through
the plugin's public method. Then what the table does not show: the snapshot the
scheduling function sees and gets back, statuses and messages, nominations, metrics,
PreEnqueue of the members, and the evictions through the scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import anyio
import msgspec
import pytest

from ksched.api.objects import PodSchedulingGroup, decode
from ksched.api.workload import PodGroup
from ksched.config import default_plugin_args
from ksched.config.types import PluginRef, Plugins, PluginSet, Profile
from ksched.features import FeatureGates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.interface import FilterPlugin, NodeToStatus
from ksched.framework.podgroup import (
    NominatingInfo,
    Placement,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterResult,
    ProposedAssignment,
)
from ksched.framework.preemption import PodGroupPreemptor, PreemptionInFlight
from ksched.framework.runtime import Framework
from ksched.framework.status import Code, Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.metrics import SchedulerMetrics
from ksched.plugins.defaultpreemption import DefaultPreemption
from ksched.plugins.defaultpreemption.podgroup_preemption import (
    DomainVictim,
    SnapshotMutations,
    more_important_victim,
)
from ksched.queue.nominator import Nominator
from tests.factories import make_snapshot
from tests.plugins.test_defaultpreemption_helpers import node, pdb, pod, registry

LOW, MID, HIGH = 10, 100, 1000  # upstream's lowPriority, midPriority, highPriority
WORKLOAD = FeatureGates("1.37", MappingProxyType({"GenericWorkload": True}))
U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
PREEMPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}


def gpod(name: str, *, group: str | None = None, size: int | None = None, **kw: Any) -> PodInfo:
    """``st.MakePod()`` with ``PodGroupName(group)`` and a ``size`` label."""
    labels = dict(kw.pop("labels", None) or {})
    if size is not None:
        labels["size"] = str(size)
    pi = pod(name, labels=labels, **kw)
    if group is None:
        return pi
    spec = msgspec.structs.replace(
        pi.pod.spec, scheduling_group=PodSchedulingGroup(pod_group_name=group)
    )
    return pi.with_pod(msgspec.structs.replace(pi.pod, spec=spec))


def pgroup(
    name: str,
    prio: int | None,
    mode: str | None = None,
    *,
    min_count: int | None = None,
    basic: bool = False,
    uid: str | None = None,
) -> PodGroup:
    """``st.MakePodGroup()``: ``mode`` "all" or "single" (DisruptionModeAll/Single)."""
    spec: dict[str, Any] = {}
    if prio is not None:
        spec["priority"] = prio
    if mode is not None:
        spec["disruptionMode"] = {mode: {}}
    if min_count is not None:
        spec["schedulingPolicy"] = {"gang": {"minCount": min_count}}
    elif basic:
        spec["schedulingPolicy"] = {"basic": {}}
    meta = {"name": name, "namespace": "default", "uid": uid if uid is not None else name}
    return decode({"metadata": meta, "spec": spec}, PodGroup)


def _size(p: PodInfo) -> int:
    v = p.labels.get("size", "")
    return int(v) if v.isdigit() else 1


class MockFilter(FilterPlugin):
    """upstream's mockFilterPlugin: the pods on the node plus this one, by size, must not
    exceed the node's capacity (the first entry naming it)."""

    name = "mockFilterPlugin"
    capacities: list[tuple[str, int]] = []

    def filter(self, state: CycleState, p: PodInfo, ni: NodeInfo) -> Status | None:
        cap = next((c for n, c in self.capacities if n == ni.name), 0)
        if sum(_size(q) for q in ni.pods) + _size(p) > cap:
            return Status(Code.UNSCHEDULABLE, "not enough capacity")
        return None


@dataclass
class World:
    """A 1.37 GenericWorkload framework (DefaultPreemption, the mock Filter) over a
    snapshot, with its PodGroups, PDBs and nominator."""

    nodes: list[str]
    pods: list[PodInfo]
    groups: list[PodGroup] = field(default_factory=list)
    pdbs: list[Any] = field(default_factory=list)
    capacities: list[tuple[str, int]] = field(default_factory=list)
    features: FeatureGates = WORKLOAD
    filters: Sequence[str] = ("mockFilterPlugin",)
    node_capacity: dict[str, str] | None = None

    def __post_init__(self) -> None:
        nodes = [node(n, self.node_capacity) for n in self.nodes]
        self.snapshot = make_snapshot(nodes, self.pods)
        reg = registry()
        cls = type("MockFilter", (MockFilter,), {"capacities": list(self.capacities)})
        reg.register(MockFilter.name, cls)
        plugins = Plugins(
            queue_sort=PluginSet([PluginRef("PrioritySort")]),
            bind=PluginSet([PluginRef("DefaultBinder")]),
            post_filter=PluginSet([PluginRef("DefaultPreemption")]),
        )
        for name in self.filters:
            if name != "test-plugin":  # a PreFilter with extensions only
                plugins.filter.enabled.append(PluginRef(name))
            if name in ("NodeResourcesFit", "test-plugin"):
                plugins.pre_filter.enabled.append(PluginRef(name))
        self.nominator = Nominator()
        self.preempting: dict[str, PreemptionInFlight] = {}
        handle = Handle(
            snapshot=self.snapshot,
            features=self.features,
            nominator=self.nominator,
            preempting=self.preempting,
        )
        handle.listers["pdbs"] = {f"default/pdb{i}": p for i, p in enumerate(self.pdbs)}
        handle.listers["scheduling.podgroups"] = {
            f"{g.metadata.namespace}/{g.metadata.name}": g for g in self.groups
        }
        self.fw = Framework(
            Profile("test", plugins=plugins), reg, handle, default_args=default_plugin_args
        )
        pl = self.fw.plugins["DefaultPreemption"]
        assert isinstance(pl, DefaultPreemption)
        self.pl = pl

    def layout(self) -> dict[str, list[str]]:
        return {ni.name: sorted(p.name for p in ni.pods) for ni in self.snapshot.node_infos}

    def round_robin(self, members: list[PodInfo], min_count: int) -> Callable[..., Any]:
        """upstream's mockSchedulingFunc: each member on the first node from the one after
        the previous member's where it fits by size; Unschedulable below ``min_count``."""
        caps = [c for _, c in self.capacities]

        def schedule() -> tuple[PodGroupAssignments, Status | None]:
            used = {ni.name: sum(_size(p) for p in ni.pods) for ni in self.snapshot.node_infos}
            out: list[ProposedAssignment] = []
            at = 0
            for m in members:
                for step in range(len(self.nodes)):
                    i = (at + step) % len(self.nodes)
                    name = self.nodes[i]
                    if used[name] + _size(m) <= caps[i]:
                        out.append(ProposedAssignment(m, name, CycleState()))
                        used[name] += _size(m)
                        at = (i + 1) % len(self.nodes)
                        break
            assignments = PodGroupAssignments(Placement("", []), out)
            if len(out) >= min_count:
                return assignments, None
            return assignments, Status(Code.UNSCHEDULABLE)

        return schedule

    def run(
        self, group: PodGroup, members: list[PodInfo], schedule: Callable[..., Any] | None = None
    ) -> tuple[PodGroupPostFilterResult | None, Status | None]:
        if schedule is None:
            gang = group.spec.scheduling_policy.gang
            schedule = self.round_robin(members, gang.min_count if gang is not None else 1)
        info = PodGroupInfo("default", group.metadata.name, group, list(members))
        return self.pl.pod_group_post_filter(CycleState(), info, schedule)


# ---- upstream's TestPodGroupEvaluator_SelectVictimsOnDomain ---------------------------------


@dataclass
class Case:
    name: str
    nodes: list[str]
    pods: list[PodInfo]
    preemptor: PodGroup
    members: list[PodInfo]
    capacities: list[int]
    victims: set[str]
    code: Code = Code.SUCCESS
    groups: list[PodGroup] = field(default_factory=list)
    pdbs: list[Any] = field(default_factory=list)
    disruptions: int = 0
    pdb_violations: int = 0
    # capacities' node names, when they are not ``nodes`` (upstream's typo in one case)
    capacity_names: list[str] | None = None


def _n(k: int) -> list[str]:
    return [f"node{i}" for i in range(1, k + 1)]


def _members(*names: str, prio: int = HIGH, **kw: Any) -> list[PodInfo]:
    return [gpod(n, prio=prio, **kw) for n in names]


FOO_PDB = [pdb(match_labels={"app": "foo"}, allowed=0)]

CASES = [
    Case(
        "Priority: mix of no groups and pod groups",
        _n(1),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW, size=1),
            gpod("p2", uid="v2", node="node1", prio=LOW, size=1, group="pg1"),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p", size=1),
        [2],
        {"p1"},  # p1 is less important than p2: it is not in a pod group
        groups=[pgroup("pg1", LOW, "single")],
    ),
    Case(
        "Priority: StartTime of pods from same group with disruption mode single",
        _n(1),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW, group="pg1", start="1970-01-01T00:00:01Z"),
            gpod("p2", uid="v2", node="node1", prio=LOW, group="pg1", start="1970-01-01T00:00:00Z"),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [2],
        {"p1"},  # started later
        groups=[pgroup("pg1", LOW, "single")],
        disruptions=1,
    ),
    Case(
        "Pod group with disruption mode group not reprieved",
        _n(2),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW, group="pg1"),
            gpod("p2", uid="v2", node="node2", prio=LOW, group="pg1"),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [1, 1],
        {"p1", "p2"},
        groups=[pgroup("pg1", LOW, "all")],
        disruptions=1,
    ),
    Case(
        "Complex Mixed: Shared, different, and no groups",
        _n(5),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW, group="pg1", start="1970-01-01T00:00:02Z"),
            gpod("p2", uid="v2", node="node2", prio=LOW, group="pg1", start="1970-01-01T00:00:01Z"),
            gpod("p3", uid="v3", node="node3", prio=LOW, group="pg2", start="1970-01-01T00:00:00Z"),
            gpod("p4", uid="v4", node="node4", prio=MID),
            gpod(
                "p5", uid="v5", node="node5", prio=HIGH, group="pg3", start="1970-01-01T00:00:00Z"
            ),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p-1", "p-2", "p-3"),
        [2, 1, 2, 2, 2],
        {"p2"},
        groups=[
            pgroup("pg1", LOW, "single"),
            pgroup("pg2", LOW, "single"),
            pgroup("pg3", HIGH, "single"),
        ],
        disruptions=1,
    ),
    Case(
        "PDB: Mixed groups",
        _n(1),
        [
            gpod(
                "victim-pdb", uid="v1", node="node1", prio=LOW, group="pg1", labels={"app": "foo"}
            ),
            gpod("victim-no-pdb", uid="v2", node="node1", prio=LOW, group="pg1"),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [2],
        {"victim-no-pdb"},
        pdbs=FOO_PDB,
        disruptions=1,
    ),
    Case(
        "PodGroup preemptor with PreemptLowerPriority preemption policy performs preemption",
        _n(3),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW),
            gpod("p2", uid="v2", node="node2", prio=LOW, group="pg1"),
            gpod("p3", uid="v3", node="node3", prio=LOW, group="pg2"),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p-1"),
        [1, 1, 1],
        {"p1"},
    ),
    Case(
        "Preemptor group is eligible if terminating pods are on non-nominated nodes",
        _n(2),
        [
            gpod(
                "victim",
                uid="v1",
                node="node2",
                prio=LOW,
                conditions=[PREEMPTED],
                terminating=True,
            ),
            gpod("other-victim", uid="v2", node="node1", prio=LOW),
        ],
        pgroup("preemptor-pg", HIGH),
        [gpod("p1", prio=HIGH), gpod("p2", prio=HIGH, nominated="node1")],
        [1, 1],
        {"other-victim", "victim"},
    ),
    Case(
        "Preemptor group is eligible if nominated node has terminating pod belonging to a pod "
        "group of higher priority",
        _n(2),
        [
            gpod(
                "victim",
                uid="v1",
                node="node1",
                prio=LOW,
                group="victim-pg",
                conditions=[PREEMPTED],
                terminating=True,
            ),
            gpod("other-victim", uid="v2", node="node1", prio=LOW),
        ],
        pgroup("preemptor-pg", MID),
        [gpod("p1", prio=MID), gpod("p2", prio=MID, nominated="node1")],
        [2, 1],
        {"other-victim"},
        groups=[pgroup("victim-pg", HIGH, "all")],
    ),
    Case(
        "Preemptor group is eligible if nominated node has terminating pod belonging to a pod "
        "group of higher priority with nil DisruptionMode",
        _n(2),
        [
            gpod(
                "victim",
                uid="v1",
                node="node1",
                prio=LOW,
                group="victim-pg",
                conditions=[PREEMPTED],
                terminating=True,
            ),
            gpod("other-victim", uid="v2", node="node1", prio=LOW),
        ],
        pgroup("preemptor-pg", MID),
        [gpod("p1", prio=MID), gpod("p2", prio=MID, nominated="node1")],
        [2, 1],
        {"other-victim"},
        groups=[pgroup("victim-pg", HIGH, "single")],
    ),
    Case(
        "Preempt single lower priority pod",
        _n(1),
        [gpod("p1", uid="v1", node="node1", prio=LOW)],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [1],
        {"p1"},
    ),
    Case(
        "Priority: Prefer lower priority victim",
        _n(1),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW),
            gpod("p2", uid="v2", node="node1", prio=MID),
            gpod("p3", uid="v3", node="node1", prio=HIGH),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [2],
        {"p1", "p2"},
    ),
    Case(
        "Efficiency: Preempt minimum number of victims",
        _n(1),
        [gpod(f"p{i}", uid=f"v{i}", node="node1", prio=LOW) for i in range(1, 5)],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [3],
        {"p3", "p4"},
    ),
    Case(
        "PDB: Prefer non-violating victim",
        _n(1),
        [
            gpod("victim-pdb", uid="v1", node="node1", prio=LOW, labels={"app": "foo"}),
            gpod("victim-no-pdb", uid="v2", node="node1", prio=LOW),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [2],
        {"victim-no-pdb"},
        pdbs=FOO_PDB,
    ),
    Case(
        "PDB: Prefer removing non-violating victim over lower priority violating victim",
        _n(1),
        [
            gpod("victim-pdb", uid="v1", node="node1", prio=LOW, labels={"app": "foo"}),
            gpod("victim-no-pdb", uid="v2", node="node1", prio=MID),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [2],
        {"victim-no-pdb"},
        pdbs=FOO_PDB,
    ),
    Case(
        "PodGroup preemptor with PreemptLowerPriority preemption policy performs preemption "
        "with PodGroup victims",
        _n(3),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW),
            gpod("p2", uid="v2", node="node2", prio=LOW, group="pg1"),
            gpod("p3", uid="v3", node="node3", prio=LOW, group="pg2"),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p-1"),
        [1, 1, 1],
        {"p1"},
        groups=[pgroup("pg1", LOW, "single"), pgroup("pg2", LOW, "single")],
    ),
    Case(
        "PDB: Prefer lower priority pod for preemption, when preemption without pdb violation "
        "is not possible",
        _n(1),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW, labels={"app": "foo"}),
            gpod("p2", uid="v2", node="node1", prio=MID, labels={"app": "foo"}),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [2],
        {"p1"},
        pdbs=FOO_PDB,
        pdb_violations=1,
    ),
    Case(
        "PodGroup: Preempt group as a whole",
        _n(2),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW, group="pg1"),
            gpod("p2", uid="v2", node="node2", prio=LOW, group="pg1"),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [1, 2],
        {"p1", "p2"},
        groups=[pgroup("pg1", LOW, "all")],
        disruptions=1,
        capacity_names=["node1", "node1"],
    ),
    Case(
        "PodGroup: Prefer single pod over podGroup for preemption candidate",
        _n(1),
        [
            gpod("p1", uid="p1", node="node1", prio=LOW),
            gpod("g1-1", uid="g1", node="node1", prio=LOW, group="pg1"),
            gpod("g1-2", uid="g2", node="node1", prio=LOW, group="pg1"),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [3],
        {"p1"},
        groups=[pgroup("pg1", LOW, "all")],
    ),
    Case(
        "PodGroup: Preempt group as a whole on single node",
        _n(1),
        [
            gpod("g1-1", uid="g1", node="node1", prio=LOW, group="pg1"),
            gpod("g1-2", uid="g2", node="node1", prio=LOW, group="pg1"),
            gpod("p1", uid="p1", node="node1", prio=MID),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [3],
        {"g1-1", "g1-2"},
        groups=[pgroup("pg1", LOW, "all")],
        disruptions=1,
    ),
    Case(
        "PDB: Unit violation if any member violates",
        _n(1),
        [
            gpod("g1-1", uid="g1", node="node1", prio=LOW, group="pg1", labels={"app": "foo"}),
            gpod("g1-2", uid="g2", node="node1", prio=LOW, group="pg1"),
            gpod("p1", uid="p1", node="node1", prio=LOW),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [3],
        {"p1"},
        groups=[pgroup("pg1", LOW, "all")],
        pdbs=FOO_PDB,
    ),
    Case(
        "Failure: Cannot preempt the victim with higher priority",
        _n(1),
        [gpod("p1", uid="v1", node="node1", prio=HIGH)],
        pgroup("preemptor-pg", MID),
        _members("p", prio=MID),
        [100],
        set(),
        UU,
    ),
    Case(
        "Failure: Cannot preempt the victim with equal priority",
        _n(1),
        [gpod("p1", uid="v1", node="node1", prio=MID)],
        pgroup("preemptor-pg", MID),
        _members("p", prio=MID),
        [100],
        set(),
        UU,
    ),
    Case(
        "Failure: Cannot preempt if node is empty",
        _n(1),
        [],
        pgroup("preemptor-pg", MID),
        _members("p", prio=MID),
        [100],
        set(),
        UU,
    ),
    Case(
        "Priority divergence: candidate victim PodGroup has lower priority than the Pods from "
        "that group",
        _n(2),
        [
            gpod("p1", uid="v1", node="node1", prio=HIGH, group="pg1"),
            gpod("p2", uid="v2", node="node2", prio=HIGH, group="pg1"),
        ],
        pgroup("preemptor-pg", HIGH),
        _members("p"),
        [1, 1],
        {"p1", "p2"},
        groups=[pgroup("pg1", MID, "all")],
        disruptions=1,
    ),
    Case(
        "Priority divergence: candidate victim PodGroup has higher priority than the Pods from "
        "that group",
        _n(2),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW, group="pg1"),
            gpod("p2", uid="v2", node="node2", prio=LOW, group="pg1"),
        ],
        pgroup("preemptor-pg", MID),
        _members("p", prio=MID),
        [1, 1],
        set(),
        UU,
        groups=[pgroup("pg1", MID, "all")],
    ),
    Case(
        "Gang scheduling: schedule as many pods as possible without preempting higher "
        "priority pods, but still more than minCount",
        _n(4),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW),
            gpod("p2", uid="v2", node="node2", prio=LOW),
            gpod("p3", uid="v3", node="node3", prio=HIGH),
            gpod("p4", uid="v4", node="node4", prio=HIGH),
        ],
        pgroup("preemptor-pg", HIGH, min_count=1),
        _members("p-a", "p-b", "p-c"),
        [1, 1, 1, 1],
        {"p1", "p2"},
    ),
    Case(
        "Gang scheduling: do not reprieve victim pod group of lower priority",
        _n(3),
        [
            gpod("v1", uid="v1", node="node1", prio=MID, group="victim-pg"),
            gpod("v2", uid="v2", node="node2", prio=MID, group="victim-pg"),
            gpod("v3", uid="v3", node="node3", prio=LOW),
        ],
        pgroup("preemptor-pg", HIGH, min_count=1),
        _members("p-a", "p-b", "p-c"),
        [1, 1, 1],
        {"v1", "v2", "v3"},
        groups=[pgroup("victim-pg", MID, "all", min_count=1)],
        disruptions=1,
    ),
    Case(
        "Gang scheduling: preempt a pod group victim but do not schedule full pod group",
        _n(4),
        [
            gpod("v1", uid="v1", node="node1", prio=MID, group="victim-pg"),
            gpod("v2", uid="v2", node="node2", prio=MID, group="victim-pg"),
            gpod("v3", uid="v3", node="node3", prio=HIGH, group="victim-pg2"),
            gpod("v4", uid="v4", node="node4", prio=HIGH, group="victim-pg2"),
        ],
        pgroup("preemptor-pg", HIGH, "all", min_count=1),
        _members("p-a", "p-b", "p-c"),
        [1, 1, 1, 1],
        {"v1", "v2"},
        groups=[
            pgroup("victim-pg", MID, "all", min_count=2),
            pgroup("victim-pg2", HIGH, "all", min_count=2),
        ],
        disruptions=1,
    ),
    Case(
        "Basic scheduling: schedule as many pods as possible without preempting higher "
        "priority pods",
        _n(4),
        [
            gpod("p1", uid="v1", node="node1", prio=LOW),
            gpod("p2", uid="v2", node="node2", prio=LOW),
            gpod("p3", uid="v3", node="node3", prio=HIGH),
            gpod("p4", uid="v4", node="node4", prio=HIGH),
        ],
        pgroup("preemptor-pg", HIGH, basic=True),
        _members("p-a", "p-b", "p-c"),
        [1, 1, 1, 1],
        {"p1", "p2"},
    ),
    Case(
        "Basic scheduling: do not reprieve victim pod group of lower priority",
        _n(3),
        [
            gpod("v1", uid="v1", node="node1", prio=MID, group="victim-pg"),
            gpod("v2", uid="v2", node="node2", prio=MID, group="victim-pg"),
            gpod("v3", uid="v3", node="node3", prio=LOW),
        ],
        pgroup("preemptor-pg", HIGH, basic=True),
        _members("p-a", "p-b", "p-c"),
        [1, 1, 1],
        {"v1", "v2", "v3"},
        groups=[pgroup("victim-pg", MID, "all", min_count=1)],
        disruptions=1,
    ),
    Case(
        "Basic scheduling: preempt a pod group victim but do not schedule full pod group",
        _n(4),
        [
            gpod("v1", uid="v1", node="node1", prio=MID, group="victim-pg"),
            gpod("v2", uid="v2", node="node2", prio=MID, group="victim-pg"),
            gpod("v3", uid="v3", node="node3", prio=HIGH, group="victim-pg2"),
            gpod("v4", uid="v4", node="node4", prio=HIGH, group="victim-pg2"),
        ],
        pgroup("preemptor-pg", HIGH, "all", basic=True),
        _members("p-a", "p-b", "p-c"),
        [1, 1, 1, 1],
        {"v1", "v2"},
        groups=[
            pgroup("victim-pg", MID, "all", min_count=2),
            pgroup("victim-pg2", HIGH, "all", min_count=2),
        ],
        disruptions=1,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_select_victims_on_domain(case: Case) -> None:
    names = case.capacity_names or case.nodes
    w = World(
        case.nodes,
        case.pods,
        case.groups,
        case.pdbs,
        list(zip(names, case.capacities, strict=True)),
    )
    before = w.layout()
    rows = list(w.snapshot.node_infos)
    result, st = w.run(case.preemptor, case.members)
    assert st is not None and st.code == case.code, st
    # the snapshot is back as it was, the very NodeInfos
    assert w.layout() == before
    assert all(a is b for a, b in zip(w.snapshot.node_infos, rows, strict=True))
    if case.code != Code.SUCCESS:
        assert result is None
        return
    assert result is not None
    assert {p.name for p in result.victims} == case.victims
    assert result.num_pod_group_disruptions == case.disruptions
    assert result.num_pdb_violations == case.pdb_violations


def test_member_preemption_policy_never_makes_the_group_ineligible() -> None:
    """Without PodGroupPreemptionPolicy (alpha, refused) a member with preemptionPolicy
    Never makes the whole group's policy Never (``resolvePreemptionPolicy``)."""
    w = World(_n(1), [gpod("p1", uid="v1", node="node1", prio=LOW)], capacities=[("node1", 1)])
    called: list[bool] = []

    def schedule() -> tuple[PodGroupAssignments, Status | None]:
        called.append(True)
        return PodGroupAssignments(Placement("", []), []), None

    members = [gpod("p-1", prio=HIGH, policy="Never"), gpod("p-2", prio=HIGH)]
    result, st = w.run(pgroup("preemptor-pg", HIGH), members, schedule)
    assert result is None and not called
    assert st is not None
    assert (st.code, st.message()) == (
        U,
        "pod group preemption: not eligible due to preemptionPolicy=Never.",
    )


# ---- the dry run as the cycle's scheduling function sees it ------------------------------


def test_schedule_sees_the_victims_gone_and_the_group_is_nominated_where_it_fits() -> None:
    """The scheduling function runs once, with every lower-priority pod off the snapshot
    (equal and higher priorities stay); the reprieve gives back what the group can spare;
    each placed member is nominated to its node, keyed namespace/name."""
    w = World(
        _n(2),
        [
            gpod("low-a", node="node1", prio=LOW, start="1970-01-01T00:00:01Z"),
            gpod("low-b", node="node2", prio=LOW, start="1970-01-01T00:00:02Z"),
            gpod("peer", node="node2", prio=HIGH),
        ],
        capacities=[("node1", 1), ("node2", 2)],
    )
    seen: list[dict[str, list[str]]] = []
    members = _members("m-1", "m-2")

    def schedule() -> tuple[PodGroupAssignments, Status | None]:
        seen.append(w.layout())
        # the group fits only on node1 and node2 once both low pods are gone
        if any(p.name.startswith("low") for ni in w.snapshot.node_infos for p in ni.pods):
            return PodGroupAssignments(Placement("", []), []), Status(U, "no room")
        out = [
            ProposedAssignment(members[0], "node1", CycleState()),
            ProposedAssignment(members[1], "node2", CycleState()),
        ]
        return PodGroupAssignments(Placement("", []), out), None

    result, st = w.run(pgroup("pg", HIGH), members, schedule)
    assert seen == [{"node1": [], "node2": ["peer"]}]
    assert st is not None
    assert (st.code, st.message()) == (
        Code.SUCCESS,
        "pod group preemption: found a placement for podgroup, preempting 2 victims",
    )
    assert result is not None
    assert [p.name for p in result.victims] == ["low-a", "low-b"]  # most important first
    assert result.nominating_infos == {
        "default/m-1": NominatingInfo("node1"),
        "default/m-2": NominatingInfo("node2"),
    }
    assert w.layout() == {"node1": ["low-a"], "node2": ["low-b", "peer"]}


def test_members_without_a_node_are_not_nominated_and_do_not_protect_victims() -> None:
    """A member the algorithm left without a node (basic policy) is not nominated, and
    the reprieve judges only the placed ones."""
    w = World(
        _n(2),
        [gpod("low-a", node="node1", prio=LOW), gpod("low-b", node="node2", prio=LOW)],
        capacities=[("node1", 1), ("node2", 1)],
    )
    members = _members("m-1", "m-2")

    def schedule() -> tuple[PodGroupAssignments, Status | None]:
        out = [
            ProposedAssignment(members[0], "node1", CycleState()),
            ProposedAssignment(members[1], "", CycleState()),
        ]
        return PodGroupAssignments(Placement("", []), out), None

    result, st = w.run(pgroup("pg", HIGH, basic=True), members, schedule)
    assert st is not None and st.is_success()
    assert result is not None
    assert [p.name for p in result.victims] == ["low-a"]
    assert result.nominating_infos == {"default/m-1": NominatingInfo("node1")}


def test_group_that_does_not_fit_even_without_every_lower_priority_pod() -> None:
    """The scheduling function's failure is the answer, worded by the plugin."""
    w = World(_n(1), [gpod("low", node="node1", prio=LOW, size=1)], capacities=[("node1", 2)])
    members = _members("m-1", "m-2", "m-3", size=1)
    result, st = w.run(pgroup("pg", HIGH, min_count=3), members)
    assert result is None
    assert st is not None and st.code == U
    assert st.message() == ""  # no reasons to prefix, as upstream
    assert w.layout() == {"node1": ["low"]}

    def failing() -> tuple[PodGroupAssignments, Status | None]:
        return PodGroupAssignments(Placement("", []), []), Status(U, "0/1 nodes are available")

    result, st = w.run(pgroup("pg", HIGH), members, failing)
    assert result is None and st is not None
    assert (st.code, st.message()) == (U, "pod group preemption: 0/1 nodes are available")


def test_equal_and_higher_priority_pods_are_never_victims() -> None:
    w = World(
        _n(2),
        [gpod("same", node="node1", prio=MID), gpod("above", node="node2", prio=HIGH)],
        capacities=[("node1", 1), ("node2", 1)],
    )
    called: list[bool] = []

    def schedule() -> tuple[PodGroupAssignments, Status | None]:
        called.append(True)
        return PodGroupAssignments(Placement("", []), []), None

    result, st = w.run(pgroup("pg", MID), _members("m", prio=MID), schedule)
    assert result is None and not called
    assert st is not None
    assert (st.code, st.message()) == (
        UU,
        "pod group preemption: No preemption victims found for incoming preemptor",
    )


def test_group_priority_decides_not_the_members_own() -> None:
    """The preemptor's priority is its PodGroup's (0 when unset), whatever its pods say;
    a victim in a known PodGroup counts at that group's priority."""
    w = World(
        _n(1),
        [gpod("grouped", node="node1", prio=LOW, group="victims")],
        groups=[pgroup("victims", MID)],
        capacities=[("node1", 1)],
    )
    result, st = w.run(pgroup("pg", None), _members("m", prio=HIGH))
    assert result is None and st is not None and st.code == UU
    result, st = w.run(pgroup("pg", MID + 1), _members("m", prio=LOW))
    assert st is not None and st.is_success(), st
    assert result is not None and [p.name for p in result.victims] == ["grouped"]


def test_ongoing_preemption_keeps_the_members_nominations() -> None:
    """A lower-priority pod on a member's nominated node is being deleted by preemption:
    the group waits for it (Success, every member's current nomination, no victims)."""
    w = World(
        _n(2),
        [
            gpod("going", node="node1", prio=LOW, terminating=True, conditions=[PREEMPTED]),
            gpod("low", node="node2", prio=LOW),
        ],
        capacities=[("node1", 1), ("node2", 1)],
    )
    members = [gpod("m-1", prio=HIGH, nominated="node1"), gpod("m-2", prio=HIGH)]
    result, st = w.run(pgroup("pg", HIGH), members)
    assert st is not None
    assert (st.code, st.message()) == (
        Code.SUCCESS,
        "pod group preemption: ongoing preemption on nominated nodes",
    )
    assert result == PodGroupPostFilterResult(
        {"default/m-1": NominatingInfo("node1"), "default/m-2": NominatingInfo("")}
    )


def test_reprieve_runs_the_real_filters_on_the_mutated_snapshot() -> None:
    """With NodeResourcesFit (whose batch form reads the snapshot's columns) the dry run
    is judged on the snapshot as changed: the function below finds nodes through the
    framework's own PreFilter and Filter."""
    w = World(
        _n(2),
        [
            gpod("small", node="node1", prio=LOW, req={"cpu": "2"}),
            gpod("big", node="node2", prio=LOW, req={"cpu": "3"}),
        ],
        filters=("NodeResourcesFit",),
        node_capacity={"cpu": "4", "memory": "1Gi"},
    )
    member = gpod("m", prio=HIGH, req={"cpu": "3"})
    fw, snap = w.fw, w.snapshot

    def schedule() -> tuple[PodGroupAssignments, Status | None]:
        state = CycleState()
        _, st, _ = fw.run_pre_filter(state, member, snap, record=False)
        assert st.is_success()
        out = fw.find_feasible(state, member, snap, snap.all_rows, 0, snap.n, record=False)
        if not len(out.feasible):
            return PodGroupAssignments(Placement("", []), []), Status(U, "no fit")
        name = snap.node_infos[int(out.feasible[0])].name
        return PodGroupAssignments(
            Placement("", []), [ProposedAssignment(member, name, state)]
        ), None

    result, st = w.run(pgroup("pg", HIGH), [member], schedule)
    assert st is not None and st.is_success(), st
    assert result is not None
    # node1 comes first once both are free; "small" (2 of its 4 cpus) must go for 3 cpus,
    # "big" on node2 is given back
    assert result.nominating_infos == {"default/m": NominatingInfo("node1")}
    assert [p.name for p in result.victims] == ["small"]
    assert int(snap.req_cpu[snap.row("node1")]) == 2000  # the columns are back too


# ---- pieces --------------------------------------------------------------------------------


def test_snapshot_mutations_are_visible_and_undone() -> None:
    a, b = gpod("a", node="node1"), gpod("b", node="node1")
    snap = make_snapshot([node("node1"), node("node2")], [a, b])
    original = snap.node_infos[0]
    m = SnapshotMutations(snap)
    m.remove_pod(a, "node1")
    assert [p.name for p in snap.get("node1").pods] == ["b"]  # type: ignore[union-attr]
    assert snap.num_pods[0] == 1 and original.pods == [a, b]
    m.add_pod(a.assumed_on("node2"), "node2")
    assert snap.num_pods[1] == 1
    with pytest.raises(Exception, match="no corresponding pod a in pods of node node1"):
        m.remove_pod(a, "node1")
    m.end()
    assert snap.node_infos[0] is original
    assert list(snap.num_pods) == [2, 0]


def _victim(prio: int, kind: str, n: int, order: int, start: str | None = None) -> DomainVictim:
    pods = [(gpod(f"v{order}-{i}", start=start), "node1") for i in range(n)]
    return DomainVictim(pods, prio, kind, order)


def test_more_important_victim() -> None:
    """Priority, then a group before a lone pod, then size, then the earlier start (two
    unstarted ones: the one listed first)."""
    assert more_important_victim(_victim(2, "pod", 1, 0), _victim(1, "podgroup", 5, 1))
    assert more_important_victim(_victim(1, "podgroup", 1, 1), _victim(1, "pod", 1, 0))
    assert more_important_victim(_victim(1, "podgroup", 2, 1), _victim(1, "podgroup", 1, 0))
    early = _victim(1, "pod", 1, 1, "1970-01-01T00:00:01Z")
    late = _victim(1, "pod", 1, 0, "1970-01-01T00:00:02Z")
    assert more_important_victim(early, late) and not more_important_victim(late, early)
    assert more_important_victim(late, _victim(1, "pod", 1, 2))  # started beats unstarted
    first, second = _victim(1, "pod", 1, 0), _victim(1, "pod", 1, 1)
    assert more_important_victim(first, second) and not more_important_victim(second, first)


# ---- metrics ---------------------------------------------------------------------------------


def _sample(metrics: SchedulerMetrics, name: str, labels: dict[str, str] | None = None) -> float:
    value = metrics.registry.get_sample_value(name, labels or {})
    return 0.0 if value is None else value


def test_metrics_of_pod_group_preemption() -> None:
    w = World(
        _n(1),
        [
            gpod("low", node="node1", prio=LOW, labels={"app": "foo"}, group="victims"),
            gpod("low-2", node="node1", prio=LOW, group="victims"),
        ],
        groups=[pgroup("victims", LOW, "all")],
        pdbs=FOO_PDB,
        capacities=[("node1", 1)],
    )
    metrics = SchedulerMetrics(features=WORKLOAD, process_metrics=False)
    w.fw.record_to(metrics)
    _, st = w.run(pgroup("pg", HIGH), _members("m"))
    assert st is not None and st.is_success()
    _, st = w.run(pgroup("pg", LOW), _members("m", prio=LOW))
    assert st is not None and st.code == UU
    c = "scheduler_workload_preemption_attempts_total"
    assert _sample(metrics, c, {"result": "Success"}) == 1
    assert _sample(metrics, c, {"result": "UnschedulableAndUnresolvable"}) == 1
    assert _sample(metrics, "scheduler_workload_preemption_victims_sum") == 2
    assert _sample(metrics, "scheduler_workload_preemption_victims_count") == 1
    labels = {"preemptor": "podgroup"}
    assert _sample(metrics, "scheduler_preemption_workload_disruptions_sum", labels) == 1
    assert _sample(metrics, "scheduler_preemption_pdb_violations_total", labels) == 1
    ev = "scheduler_preemption_evaluation_duration_seconds_count"
    assert _sample(metrics, ev, {"preemptor": "podgroup", "result": "Success"}) == 1
    assert (
        _sample(metrics, ev, {"preemptor": "podgroup", "result": "UnschedulableAndUnresolvable"})
        == 1
    )
    assert _sample(metrics, "scheduler_preemption_attempts_total") == 0  # the per-pod one


@pytest.mark.parametrize(
    "features",
    [FeatureGates("1.37"), FeatureGates("1.36")],
    ids=["1.37 without GenericWorkload", "1.36"],
)
def test_workload_preemption_families_need_generic_workload(features: FeatureGates) -> None:
    names = (
        "scheduler_workload_preemption_attempts",
        "scheduler_workload_preemption_victims",
        "scheduler_preemption_workload_disruptions",
        "scheduler_preemption_evaluation_duration_seconds",
        "scheduler_preemption_execution_duration_seconds",
        "scheduler_preemption_pdb_violations",
    )

    def exposed(features: FeatureGates) -> list[str]:
        text = SchedulerMetrics(features=features, process_metrics=False).render().decode()
        return [n for n in names if f"# HELP {n} " in text or f"# HELP {n}_total " in text]

    assert exposed(features) == []
    assert exposed(WORKLOAD) == list(names)


# ---- PreEnqueue ------------------------------------------------------------------------------


def test_members_wait_for_their_groups_preemption() -> None:
    """With GenericWorkload, a member is held while its PodGroup's evictions run (keyed by
    the PodGroup's uid), never by its own uid; a member of an unknown PodGroup is not held."""
    w = World(_n(1), [], groups=[pgroup("pg", HIGH, uid="pg-uid")])
    running = w.preempting
    member = gpod("m", prio=HIGH, group="pg")
    lone = gpod("lone", prio=HIGH)
    running["pg-uid"] = PreemptionInFlight()
    st = w.pl.pre_enqueue(member)
    assert st is not None
    assert (st.code, st.message()) == (
        UU,
        "waiting for the preemption for this pod group to be finished",
    )
    assert w.pl.pre_enqueue(lone) is None
    assert w.pl.pre_enqueue(gpod("stranger", prio=HIGH, group="unknown")) is None
    running.clear()
    running[member.uid] = PreemptionInFlight()
    assert w.pl.pre_enqueue(member) is None  # its own preemption does not hold it


def test_without_generic_workload_members_wait_for_their_own_preemption() -> None:
    for features in (FeatureGates("1.37"), FeatureGates("1.36")):
        w = World(_n(1), [], groups=[pgroup("pg", HIGH, uid="pg-uid")], features=features)
        running = w.preempting
        member = gpod("m", prio=HIGH, group="pg")
        running["pg-uid"] = PreemptionInFlight()
        assert w.pl.pre_enqueue(member) is None
        running[member.uid] = PreemptionInFlight()
        st = w.pl.pre_enqueue(member)
        assert st is not None
        assert st.message() == "waiting for the preemption for this pod to be finished"


# ---- the evictions (the scheduler's executor path) -------------------------------------------

pytest_plugins = ("anyio",)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_scheduler_evicts_a_groups_victims_as_a_podgroup() -> None:
    """``actuatePodGroupPreemption``: each victim marked DisruptionTarget for a podgroup,
    deleted, and told so by an event naming the PodGroup's uid on node "cluster"; the
    members wait meanwhile (keyed by the PodGroup's uid) and a victim already terminating
    is left alone."""
    from tests.plugins.test_defaultpreemption_scheduler import Harness

    h = Harness(nodes=2)
    low_a = h.running("low-a", "n0", "4")
    low_b = h.running("low-b", "n1", "4")
    members = [h.pending("m-1", "4", prio=1000), h.pending("m-2", "4", prio=1000)]
    group = PodGroupPreemptor(pgroup("pg", 1000, uid="pg-uid"), members)
    marked: list[Any] = []
    set_condition = h.cluster.set_pod_condition

    async def spy(p: PodInfo, cond: Any) -> bool:
        marked.append(cond)
        return await set_condition(p, cond)

    h.cluster.set_pod_condition = spy  # type: ignore[method-assign]
    async with anyio.create_task_group() as tg:
        h.sched.loop.task_group = tg
        assert not h.sched.preempt_pod_group(h.fw, group, [])
        assert h.sched.preempt_pod_group(h.fw, group, [low_a, low_b])
        assert set(h.sched.preempting) == {"pg-uid"}
        await h.settle()
        tg.cancel_scope.cancel()
    assert h.cluster.deleted == ["low-a", "low-b"]
    assert {c.message for c in marked} == {
        "ksched: preempting to accommodate a higher priority podgroup"
    }
    events = [e for e in h.fw.handle.recorder.events if e.reason == "Preempted"]  # type: ignore[attr-defined]
    assert [(e.pod, e.note) for e in events] == [
        ("default/low-a", "Preempted by podgroup pg-uid on node cluster"),
        ("default/low-b", "Preempted by podgroup pg-uid on node cluster"),
    ]
    assert h.sched.preempting == {}
    assert h.sched.preemptions == {"pg-uid": ["default/low-a", "default/low-b"]}
    assert h.cluster.nominations == []  # the cycle nominates the members, not this


@pytest.mark.anyio
async def test_a_victim_waiting_at_permit_is_preempted_in_memory() -> None:
    """Its event says so (upstream's " (in kube-scheduler memory).")."""
    from tests.plugins.test_defaultpreemption_scheduler import Harness

    h = Harness(nodes=1)
    waiting = h.pending("waiting", "4", labels={"hold": "yes"})
    async with anyio.create_task_group() as tg:
        await h.attempt(tg)
        member = h.pending("m", "4", prio=1000)
        group = PodGroupPreemptor(pgroup("pg", 1000, uid="pg-uid"), [member])
        assert h.sched.preempt_pod_group(h.fw, group, [waiting])
        await h.settle()
        tg.cancel_scope.cancel()
    events = [e for e in h.fw.handle.recorder.events if e.reason == "Preempted"]  # type: ignore[attr-defined]
    assert [e.note for e in events] == [
        "Preempted by podgroup pg-uid on node cluster (in kube-scheduler memory)."
    ]
    assert h.cluster.deleted == []


def test_metrics_of_a_single_pods_preemption_with_generic_workload() -> None:
    """Upstream observes the evaluation time and the PDB violations of a pod's preemption
    in the families GenericWorkload registers (``preemptor`` "pod"), and its victims in
    ``preemption_victims``; not the workload ones."""
    from tests.plugins.test_defaultpreemption_helpers import ONE_POD, Env

    env = Env(
        [node("node1", ONE_POD)],
        [pod("low", node="node1", prio=LOW, labels={"app": "foo"})],
        pdbs=FOO_PDB,
    )
    metrics = SchedulerMetrics(features=WORKLOAD, process_metrics=False)
    env.fw.record_to(metrics)
    preemptor = pod("p", prio=HIGH)
    statuses = NodeToStatus(Status(UU))
    statuses.set("node1", Status(U))
    result, st = env.pl.post_filter(env.state_for(preemptor), preemptor, statuses)
    assert st is not None and st.is_success() and result is not None
    ev = "scheduler_preemption_evaluation_duration_seconds_count"
    assert _sample(metrics, ev, {"preemptor": "pod", "result": "Success"}) == 1
    assert _sample(metrics, "scheduler_preemption_pdb_violations_total", {"preemptor": "pod"}) == 1
    assert _sample(metrics, "scheduler_workload_preemption_victims_count") == 0
    assert _sample(metrics, "scheduler_preemption_attempts_total") == 1
    # the plugin observes its own victims as it chooses the candidate (observeVictims),
    # no scheduler involved
    assert _sample(metrics, "scheduler_preemption_victims_count") == 1
    assert _sample(metrics, "scheduler_preemption_victims_sum") == 1


def test_a_pod_overdrawing_one_pdb_spends_no_other() -> None:
    """``FilterVictimsWithPDBViolation``: a pod stops at the first budget it overdraws, so
    a later matching PDB keeps its disruption for the next victim."""
    w = World(
        _n(1),
        [
            gpod(
                "v1",
                node="node1",
                prio=LOW,
                labels={"app": "foo", "tier": "x"},
                start="1970-01-01T00:00:01Z",
            ),
            gpod("v2", node="node1", prio=LOW, labels={"tier": "x"}, start="1970-01-01T00:00:02Z"),
        ],
        pdbs=[*FOO_PDB, pdb(match_labels={"tier": "x"}, allowed=1)],
        capacities=[("node1", 2)],
    )
    result, st = w.run(pgroup("pg", HIGH), _members("m"))
    assert st is not None and st.is_success()
    assert result is not None
    assert [p.name for p in result.victims] == ["v2"]
    assert result.num_pdb_violations == 0


# ---- a single pod's preemption, workload-aware (v1.37 with GenericWorkload) ------------------

SMALL_RES = {"cpu": "100m", "memory": "100"}
LARGE_RES = {"cpu": "300m", "memory": "300"}
VERY_LARGE_RES = {"cpu": "500m", "memory": "500"}
EPOCH = "1970-01-01T00:00:00Z"


def _dry_run(w: World, p: PodInfo) -> dict[str, list[str]]:
    """upstream's TestCustomSelection: the candidates of a dry run over every node, each
    with its victims' names (sorted)."""
    state = CycleState()
    _, st, _ = w.fw.run_pre_filter(state, p, w.snapshot)
    assert st.is_success(), st
    infos = list(w.snapshot.node_infos)
    offset, num = w.pl.get_offset_and_num_candidates(len(infos))
    candidates, _, _ = w.pl.evaluator.dry_run_preemption(state, p, infos, [], offset, num)
    return {c.name: sorted(v.name for v in c.victims.pods) for c in candidates}


# with upstream's "test-plugin" PreFilter extensions run (the copying dry run; they fail on
# nodes labelled error=true), without it the dry run reads Fit's aggregates in place
FILTER_SETS = [("NodeResourcesFit",), ("NodeResourcesFit", "test-plugin")]


@pytest.mark.parametrize("filters", FILTER_SETS, ids=["in place", "with extensions"])
def test_a_pod_preempts_a_whole_group_across_nodes(filters: tuple[str, ...]) -> None:
    """upstream's "filter for matching pod group: all affected nodes eligible": the group
    (disruption mode all, no priority: 0) goes whole, from either node."""
    yes = {"preemptible": "yes"}
    w = World(
        _n(2),
        [
            gpod("v1", node="node1", prio=LOW, group="pg1", req=LARGE_RES, start=EPOCH, labels=yes),
            gpod("v2", node="node2", prio=LOW, group="pg1", req=LARGE_RES, start=EPOCH, labels=yes),
        ],
        groups=[pgroup("pg1", None, "all")],
        filters=filters,
        node_capacity=VERY_LARGE_RES,
    )
    w.pl.is_eligible_pod = lambda ni, v, p: v.labels.get("preemptible") == "yes"
    got = _dry_run(w, gpod("p1", prio=HIGH, req=LARGE_RES))
    assert got == {"node1": ["v1", "v2"], "node2": ["v1", "v2"]}


@pytest.mark.parametrize("filters", FILTER_SETS, ids=["in place", "with extensions"])
def test_one_ineligible_node_spares_the_whole_group(filters: tuple[str, ...]) -> None:
    """upstream's "filter for matching pod group: one node ineligible rejects entire pod
    group"."""
    w = World(
        _n(2),
        [
            gpod("v1", node="node1", prio=LOW, group="pg1", req=SMALL_RES, start=EPOCH),
            gpod("v2", node="node2", prio=LOW, group="pg1", req=SMALL_RES, start=EPOCH),
            gpod("v3", node="node1", prio=MID, req=LARGE_RES, start=EPOCH),
        ],
        groups=[pgroup("pg1", None, "all")],
        filters=filters,
        node_capacity=VERY_LARGE_RES,
    )
    w.pl.is_eligible_pod = lambda ni, v, p: ni.name == "node1"
    assert _dry_run(w, gpod("p1", prio=HIGH, req=LARGE_RES)) == {"node1": ["v3"]}


def test_a_pods_victims_count_at_their_groups_priority() -> None:
    """A pod of a PodGroup is a victim at the group's priority, not its own: here above the
    preemptor's, so it stays; a lone pod of the same priority goes. Without GenericWorkload
    its own priority decides."""
    pods = [
        gpod("grouped", node="node1", prio=LOW, group="pg1", req=LARGE_RES, start=EPOCH),
        gpod("lone", node="node2", prio=LOW, req=LARGE_RES, start=EPOCH),
    ]
    for features, want in (
        (WORKLOAD, {"node2": ["lone"]}),
        (FeatureGates("1.37"), {"node1": ["grouped"], "node2": ["lone"]}),
    ):
        w = World(
            _n(2),
            pods,
            groups=[pgroup("pg1", HIGH, "single")],
            filters=("NodeResourcesFit",),
            node_capacity=VERY_LARGE_RES,
            features=features,
        )
        assert _dry_run(w, gpod("p", prio=MID, req=LARGE_RES)) == want


def test_a_terminating_victim_of_a_higher_priority_group_does_not_hold_a_pod_back() -> None:
    """``PodEligibleToPreemptOthers`` reads a terminating pod at its group's priority."""
    going = gpod(
        "going", node="node1", prio=LOW, group="pg1", terminating=True, conditions=[PREEMPTED]
    )
    for features, eligible in ((WORKLOAD, True), (FeatureGates("1.37"), False)):
        w = World(_n(1), [going], groups=[pgroup("pg1", HIGH, "single")], features=features)
        got, _ = w.pl.pod_eligible_to_preempt_others(gpod("p", prio=MID, nominated="node1"), None)
        assert got is eligible
