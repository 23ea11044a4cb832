"""DefaultPreemption: upstream's default_preemption_test.go tables, ported.

The extender cases are in tests/extender/test_preemption.py (they need HTTP fakes);
PodGroup cases are left out (no workload-aware preemption). Upstream seeds its offset RNG
with 4, which gives offsets 4, 1, 3 for five nodes; the sampling tests pin those offsets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import numpy as np
import pytest

from ksched.framework.interface import NodeToStatus, PostFilterResult
from ksched.framework.listers import Listers
from ksched.framework.preemption import PreemptionInFlight
from ksched.framework.registry import PluginArgsError
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.plugins.defaultpreemption import DefaultPreemption, DefaultPreemptionArgs
from ksched.plugins.defaultpreemption.default_preemption import (
    NOT_ELIGIBLE_NEVER,
    NOT_ELIGIBLE_TERMINATING,
    pod_terminating_by_preemption,
)
from ksched.plugins.defaultpreemption.preemption import preemption_condition
from tests.plugins.test_defaultpreemption_helpers import (
    FIT,
    HIGH,
    IPA,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    ONE_POD,
    PTS,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    Env,
    epoch,
    node,
    pdb,
    pod,
)

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
NODE_RES = {"cpu": "200m", "memory": "400"}


def statuses(codes: dict[str, Code], absent: Code | None = UU) -> NodeToStatus:
    m = NodeToStatus(Status(absent) if absent is not None else None)
    for n, c in codes.items():
        m.set(n, Status(c))
    return m


def fixed_offsets(*offsets: int) -> Any:
    it: Iterator[int] = iter(offsets)
    return lambda n: next(it)


# ---- TestPostFilter ---------------------------------------------------------------------------


@dataclass
class PostFilterCase:
    name: str
    pod: PodInfo
    pods: list[PodInfo]
    nodes: list[Any]
    statuses: NodeToStatus
    want_node: str | None  # None: no result
    want_code: Code
    want_msg: str = ""
    pdbs: list[Any] = field(default_factory=list)
    extra_prefilter: bool = False


def found(node: str, victims: int) -> str:
    """v1.37's PostFilter message of a successful preemption."""
    return f"preemption: found a potential placement for pod on node {node}, preempting {victims} victims"


POST_FILTER_CASES = [
    PostFilterCase(
        "pod with higher priority can be made schedulable",
        pod("p", prio=HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        statuses({"node1": U}),
        "node1",
        Code.SUCCESS,
        found("node1", 1),
    ),
    PostFilterCase(
        "pod with tied priority is still unschedulable",
        pod("p"),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        statuses({"node1": U}),
        "",
        U,
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    ),
    PostFilterCase(
        "preemption should respect filteredNodesStatuses",
        pod("p", prio=HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        statuses({"node1": UU}),
        "",
        U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    PostFilterCase(
        "preemption should respect absent NodeToStatusReader entry meaning "
        "UnschedulableAndUnresolvable",
        pod("p", prio=HIGH),
        [pod("p1", node="node1")],
        [node("node1", ONE_POD)],
        statuses({}),
        "",
        U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    PostFilterCase(
        "pod can be made schedulable on one node",
        pod("p", prio=MID),
        [pod("p1", prio=HIGH, node="node1"), pod("p2", prio=LOW, node="node2")],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        statuses({"node1": U, "node2": U}),
        "node2",
        Code.SUCCESS,
        found("node2", 1),
    ),
    PostFilterCase(
        "pod can be made schedulable on minHighestPriority node",
        pod("p", prio=VERY_HIGH),
        [
            pod("p1", labels={"pdb": "non-violating"}, prio=HIGH, node="node1"),
            pod("p2", labels={"pdb": "violating"}, prio=LOW, node="node1"),
            pod("p3", labels={"pdb": "violating"}, prio=MID, node="node2"),
        ],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        statuses({"node1": U, "node2": U}),
        "node2",
        Code.SUCCESS,
        found("node2", 1),
        pdbs=[
            pdb("violating-pdb", match_labels={"pdb": "violating"}),
            pdb("non-violating-pdb", match_labels={"pdb": "non-violating"}, allowed=2**31 - 1),
        ],
    ),
    PostFilterCase(
        "no candidate nodes found, no enough resource after removing low priority pods",
        pod("p", prio=HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node("node1", NODE_RES), node("node2", NODE_RES)],
        statuses({"node1": U, "node2": U}),
        "",
        U,
        "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
    ),
    PostFilterCase(
        "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU "
        "resource",
        pod("p", prio=HIGH, req=LARGE),
        [
            pod("p1", node="node1", prio=HIGH),
            pod("p2", node="node2"),
            pod("p3", node="node3", prio=HIGH),
        ],
        [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
        statuses({"node1": U, "node2": U, "node3": U}),
        "",
        U,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod.",
    ),
    PostFilterCase(
        "no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 "
        "nodes don't have enough CPU resource",
        pod("p", prio=HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2")],
        [node(f"node{i}", NODE_RES) for i in range(1, 5)],
        statuses({"node1": U, "node2": U, "node4": UU}),
        "",
        U,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling.",
    ),
    PostFilterCase(
        "only one node but failed with TestPlugin",
        pod("p", prio=HIGH, req=LARGE),
        [pod("p1", node="node1")],
        [node("node1", LARGE, labels={"error": "true"})],
        statuses({"node1": U}),
        None,
        Code.ERROR,
        'preemption: running RemovePod on PreFilter plugin "test-plugin": failed to remove pod: p',
        extra_prefilter=True,
    ),
    PostFilterCase(
        "one failed with TestPlugin and the other pass",
        pod("p", prio=HIGH, req=LARGE),
        [pod("p1", node="node1"), pod("p2", node="node2", req=MEDIUM)],
        [node("node1", LARGE, labels={"error": "true"}), node("node2", LARGE)],
        statuses({"node1": U, "node2": U}),
        "node2",
        Code.SUCCESS,
        found("node2", 1),
        extra_prefilter=True,
    ),
]


@pytest.mark.parametrize(("version", "want"), [("1.36", ""), ("1.37", found("node1", 1))])
def test_successful_preemption_message_by_version(version: str, want: str) -> None:
    """v1.37 words a successful preemption (the FitError's PostFilter part); v1.36 did not."""
    tc = POST_FILTER_CASES[0]
    env = Env(tc.nodes, tc.pods, [FIT], version=version)
    result, st = env.pl.post_filter(env.state_for(tc.pod), tc.pod, tc.statuses)
    assert st is not None and st.is_success() and st.message() == want
    assert result is not None and result.nominated_node_name == "node1"


@pytest.mark.parametrize("tc", POST_FILTER_CASES, ids=lambda tc: tc.name)
def test_post_filter(tc: PostFilterCase) -> None:
    plugins = [FIT, ("test-plugin", ("preFilter",))] if tc.extra_prefilter else [FIT]
    env = Env(tc.nodes, tc.pods, plugins, pdbs=tc.pdbs)
    state = env.state_for(tc.pod)
    result, st = env.pl.post_filter(state, tc.pod, tc.statuses)
    assert st is not None
    assert st.code == tc.want_code
    assert st.message() == tc.want_msg
    if tc.want_node is None:
        assert result is None
    else:
        assert result is not None and result.nominated_node_name == tc.want_node


def test_post_filter_through_the_runtime_keeps_the_clearing_result() -> None:
    """RunPostFilterPlugins: a rejection's result (clear the nomination) is kept and the
    status names DefaultPreemption."""
    env = Env([node("node1", ONE_POD)], [pod("p1", node="node1")])
    p = pod("p", nominated="node1")
    result, st = env.fw.run_post_filter(env.state_for(p), p, statuses({"node1": U}))
    assert result == PostFilterResult("")
    assert (st.code, st.plugin) == (U, "DefaultPreemption")


def test_post_filter_victims_travel_in_the_result() -> None:
    env = Env([node("node1", ONE_POD)], [pod("p1", node="node1")])
    p = pod("p", prio=HIGH)
    result, _ = env.pl.post_filter(env.state_for(p), p, statuses({"node1": U}))
    assert result is not None and [v.name for v in result.victims] == ["p1"]


# ---- TestDryRunPreemption ----------------------------------------------------------------------


@dataclass
class DryRunCase:
    name: str
    nodes: list[str]
    test_pods: list[PodInfo]
    init_pods: list[PodInfo]
    plugins: list[tuple[str, tuple[str, ...]]]
    expected: list[dict[str, tuple[list[str], int]]]  # per cycle: node -> (victims, #violations)
    filter_calls: list[int]
    fake_rc: Code = Code.SUCCESS
    pdbs: list[Any] = field(default_factory=list)
    args: dict[str, int] | None = None
    offsets: tuple[int, ...] = ()


def _five(prios: list[int], labels: list[dict[str, str]] | None = None) -> list[PodInfo]:
    return [
        pod(
            f"p{i}",
            node=f"node{i}",
            prio=prios[i - 1],
            req=LARGE,
            labels=(labels[i - 1] if labels else None),
        )
        for i in range(1, 6)
    ]


def _two(prio: int, req: dict[str, str] | None = None) -> list[PodInfo]:
    return [pod(f"p{i}", node=f"node{i}", prio=prio, req=req) for i in (1, 2)]


NODES5 = [f"node{i}" for i in range(1, 6)]
FOO = {"app": "foo"}

DRY_RUN_CASES = [
    DryRunCase(
        "a pod that does not fit on any node",
        ["node1", "node2"],
        [pod("p", prio=HIGH)],
        _two(MID),
        [("FalseFilter", ("filter",))],
        [{}],
        [2],
    ),
    DryRunCase(
        "a pod that fits with no preemption",
        ["node1", "node2"],
        [pod("p", prio=HIGH)],
        _two(MID),
        [("TrueFilter", ("filter",))],
        [{}],
        [2],
        fake_rc=U,
    ),
    DryRunCase(
        "a pod that fits on one node with no preemption",
        ["node1", "node2"],
        [pod("node1", prio=HIGH)],
        _two(MID),
        [("MatchFilter", ("filter",))],
        [{}],
        [2],
        fake_rc=U,
    ),
    DryRunCase(
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        [pod("p", prio=HIGH, req=LARGE)],
        _two(MID, LARGE),
        [FIT],
        [{"node1": (["p1"], 0), "node2": (["p2"], 0)}],
        [4],
    ),
    DryRunCase(
        "a pod that would fit on the nodes, but other pods running are higher priority, no "
        "preemption would happen",
        ["node1", "node2"],
        [pod("p", prio=LOW, req=LARGE)],
        _two(MID, LARGE),
        [FIT],
        [{}],
        [0],
    ),
    DryRunCase(
        "medium priority pod is preempted, but lower priority one stays as it is small",
        ["node1", "node2"],
        [pod("p", prio=HIGH, req=LARGE)],
        [
            pod("p1.1", node="node1", prio=LOW, req=SMALL),
            pod("p1.2", node="node1", prio=MID, req=LARGE),
            pod("p2", node="node2", prio=MID, req=LARGE),
        ],
        [FIT],
        [{"node1": (["p1.2"], 0), "node2": (["p2"], 0)}],
        [5],
    ),
    DryRunCase(
        "mixed priority pods are preempted",
        ["node1", "node2"],
        [pod("p", prio=HIGH, req=LARGE)],
        [
            pod("p1.1", node="node1", prio=MID, req=SMALL),
            pod("p1.2", node="node1", prio=LOW, req=SMALL),
            pod("p1.3", node="node1", prio=MID, req=MEDIUM),
            pod("p1.4", node="node1", prio=HIGH, req=SMALL),
            pod("p2", node="node2", prio=HIGH, req=LARGE),
        ],
        [FIT],
        [{"node1": (["p1.2", "p1.3"], 0)}],
        [4],
    ),
    DryRunCase(
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        ["node1", "node2"],
        [pod("p", prio=HIGH, req=LARGE)],
        [
            pod("p1.1", node="node1", prio=LOW, req=SMALL, start=epoch(5)),
            pod("p1.2", node="node1", prio=LOW, req=SMALL, start=epoch(4)),
            pod("p1.3", node="node1", prio=MID, req=MEDIUM, start=epoch(3)),
            pod("p1.4", node="node1", prio=HIGH, req=SMALL, start=epoch(2)),
            pod("p2", node="node2", prio=HIGH, req=LARGE, start=epoch(1)),
        ],
        [FIT],
        [{"node1": (["p1.1", "p1.3"], 0)}],
        [4],
    ),
    DryRunCase(
        "pod with anti-affinity is preempted",
        ["node1", "node2"],
        [pod("p", labels={"foo": ""}, prio=HIGH, req=SMALL)],
        [
            pod(
                "p1.1",
                node="node1",
                labels={"foo": ""},
                prio=LOW,
                req=SMALL,
                anti_affinity_exists=("foo", "hostname"),
            ),
            pod("p1.2", node="node1", prio=MID, req=SMALL),
            pod("p1.3", node="node1", prio=HIGH, req=SMALL),
            pod("p2", node="node2", prio=HIGH, req=SMALL),
        ],
        [FIT, IPA],
        [{"node1": (["p1.1"], 0)}],
        [3],
    ),
    DryRunCase(
        "preemption to resolve pod topology spread filter failure",
        ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
        [
            pod(
                "p",
                labels={"foo": ""},
                prio=HIGH,
                spread=[(1, "zone", "DoNotSchedule"), (1, "hostname", "DoNotSchedule")],
            )
        ],
        [
            pod("pod-a1", node="node-a", labels={"foo": ""}, prio=MID),
            pod("pod-a2", node="node-a", labels={"foo": ""}, prio=LOW),
            pod("pod-b1", node="node-b", labels={"foo": ""}, prio=LOW),
            pod("pod-x1", node="node-x", labels={"foo": ""}, prio=HIGH),
            pod("pod-x2", node="node-x", labels={"foo": ""}, prio=HIGH),
        ],
        [PTS],
        [{"node-a": (["pod-a2"], 0), "node-b": (["pod-b1"], 0)}],
        [5],
    ),
    DryRunCase(
        "get Unschedulable in the preemption phase when the filter plugins filtering the nodes",
        ["node1", "node2"],
        [pod("p", prio=HIGH, req=LARGE)],
        _two(MID, LARGE),
        [FIT],
        [{}],
        [2],
        fake_rc=U,
    ),
    DryRunCase(
        "preemption with violation of same pdb",
        ["node1"],
        [pod("p", prio=HIGH, req=VERY_LARGE)],
        [
            pod("p1.1", node="node1", labels=FOO, prio=MID, req=MEDIUM),
            pod("p1.2", node="node1", labels=FOO, prio=MID, req=MEDIUM),
        ],
        [FIT],
        [{"node1": (["p1.1", "p1.2"], 1)}],
        [3],
        pdbs=[pdb(match_labels=FOO, allowed=1)],
    ),
    DryRunCase(
        "preemption with violation of the pdb with pod whose eviction was processed, the victim "
        "doesn't belong to DisruptedPods",
        ["node1"],
        [pod("p", prio=HIGH, req=VERY_LARGE)],
        [
            pod("p1.1", node="node1", labels=FOO, prio=MID, req=MEDIUM),
            pod("p1.2", node="node1", labels=FOO, prio=MID, req=MEDIUM),
        ],
        [FIT],
        [{"node1": (["p1.1", "p1.2"], 1)}],
        [3],
        pdbs=[pdb(match_labels=FOO, allowed=1, disrupted=["p2"])],
    ),
    DryRunCase(
        "preemption with violation of the pdb with pod whose eviction was processed, the victim "
        "belongs to DisruptedPods",
        ["node1"],
        [pod("p", prio=HIGH, req=VERY_LARGE)],
        [
            pod("p1.1", node="node1", labels=FOO, prio=MID, req=MEDIUM),
            pod("p1.2", node="node1", labels=FOO, prio=MID, req=MEDIUM),
        ],
        [FIT],
        [{"node1": (["p1.1", "p1.2"], 0)}],
        [3],
        pdbs=[pdb(match_labels=FOO, allowed=1, disrupted=["p1.2"])],
    ),
    DryRunCase(
        "preemption with violation of the pdb with pod whose eviction was processed, the victim "
        "which belongs to DisruptedPods is treated as 'nonViolating'",
        ["node1"],
        [pod("p", prio=HIGH, req=VERY_LARGE)],
        [
            pod("p1.1", node="node1", labels=FOO, prio=MID, req=MEDIUM),
            pod("p1.2", node="node1", labels=FOO, prio=MID, req=MEDIUM),
            pod("p1.3", node="node1", labels=FOO, prio=MID, req=MEDIUM),
        ],
        [FIT],
        [{"node1": (["p1.1", "p1.2", "p1.3"], 1)}],
        [4],
        pdbs=[pdb(match_labels=FOO, allowed=1, disrupted=["p1.3"])],
    ),
    DryRunCase(
        "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
        NODES5,
        [pod("p", prio=HIGH, req=LARGE)],
        _five([MID] * 5),
        [FIT],
        # offset=4 => node5 (yes), node1 (yes)
        [{"node1": (["p1"], 0), "node5": (["p5"], 0)}],
        [4],
        args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        offsets=(4,),
    ),
    DryRunCase(
        "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
        NODES5,
        [pod("p", prio=HIGH, req=LARGE)],
        _five([MID, VERY_HIGH, MID, MID, VERY_HIGH]),
        [FIT],
        # offset=4 => node5 (no), node1 (yes), node2 (no), node3 (yes)
        [{"node1": (["p1"], 0), "node3": (["p3"], 0)}],
        [4],
        args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        offsets=(4,),
    ),
    DryRunCase(
        "preemption offset across multiple scheduling cycles and wrap around",
        NODES5,
        [pod(f"tp{i}", prio=HIGH, req=LARGE) for i in (1, 2, 3)],
        _five([MID] * 5),
        [FIT],
        [
            {"node1": (["p1"], 0), "node5": (["p5"], 0)},  # offset=4 => node5, node1
            {"node2": (["p2"], 0), "node3": (["p3"], 0)},  # offset=1 => node2, node3
            {"node4": (["p4"], 0), "node5": (["p5"], 0)},
        ],  # offset=3 => node4, node5
        [4, 4, 4],
        args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 1},
        offsets=(4, 1, 3),
    ),
    DryRunCase(
        "preemption looks past numCandidates until a non-PDB violating node is found",
        NODES5,
        [pod("p", prio=HIGH, req=LARGE)],
        _five([MID] * 5, [FOO, FOO, {}, {}, FOO]),
        [FIT],
        # offset=4 => node5 (yes, pdb), node1 (yes, pdb), node2 (no room left, pdb), node3 (yes)
        [{"node1": (["p1"], 1), "node3": (["p3"], 0), "node5": (["p5"], 1)}],
        [8],
        pdbs=[pdb(match_labels=FOO, allowed=0)],
        args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
        offsets=(4,),
    ),
]


@pytest.mark.parametrize("tc", DRY_RUN_CASES, ids=lambda tc: tc.name)
def test_dry_run_preemption(tc: DryRunCase) -> None:
    nodes = [node(n, VERY_LARGE) for n in tc.nodes]
    env = Env(nodes, tc.init_pods, tc.plugins, args=tc.args, fake_filter=True)
    assert env.fake is not None
    env.fake.codes = {ni.name: tc.fake_rc for ni in env.snapshot.node_infos}
    if tc.offsets:
        env.pl.offset_rand = fixed_offsets(*tc.offsets)
    infos = env.node_infos()
    prev = 0
    for cycle, p in enumerate(tc.test_pods):
        state = env.state_for(p)
        offset, num = env.pl.get_offset_and_num_candidates(len(infos))
        got, _, _ = env.pl.evaluator.dry_run_preemption(state, p, infos, tc.pdbs, offset, num)
        assert env.fake.calls - prev == tc.filter_calls[cycle], f"cycle {cycle}"
        prev = env.fake.calls
        assert {
            c.name: (sorted(v.name for v in c.victims.pods), c.victims.num_pdb_violations)
            for c in got
        } == tc.expected[cycle], f"cycle {cycle}"


def test_dry_run_candidates_put_non_violating_first() -> None:
    env = Env(
        [node(n, VERY_LARGE) for n in NODES5],
        _five([MID] * 5, [FOO, FOO, {}, {}, FOO]),
        args={"minCandidateNodesPercentage": 40, "minCandidateNodesAbsolute": 2},
    )
    p = pod("p", prio=HIGH, req=LARGE)
    got, _, _ = env.pl.evaluator.dry_run_preemption(
        env.state_for(p), p, env.node_infos(), [pdb(match_labels=FOO)], 4, 2
    )
    assert [c.name for c in got] == ["node3", "node5", "node1"]


# ---- TestSelectBestCandidate -------------------------------------------------------------------


def _t(n: int) -> str:
    return epoch(n)


SELECT_CASES: list[tuple[str, list[str], PodInfo, list[PodInfo], set[str]]] = [
    (
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        pod("p", prio=HIGH, req=LARGE),
        [
            pod("p1", node="node1", prio=MID, req=LARGE, start=_t(0)),
            pod("p2", node="node2", prio=MID, req=LARGE, start=_t(0)),
        ],
        {"node1", "node2"},
    ),
    (
        "node with min highest priority pod is picked",
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", node="node1", prio=MID, req=MEDIUM, start=_t(0)),
            pod("p1.2", node="node1", prio=MID, req=LARGE, start=_t(0)),
            pod("p2.1", node="node2", prio=MID, req=MEDIUM, start=_t(0)),
            pod("p2.2", node="node2", prio=LOW, req=MEDIUM, start=_t(0)),
            pod("p3.1", node="node3", prio=LOW, req=MEDIUM, start=_t(0)),
            pod("p3.2", node="node3", prio=LOW, req=MEDIUM, start=_t(0)),
        ],
        {"node3"},
    ),
    (
        "when highest priorities are the same, minimum sum of priorities is picked",
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", node="node1", prio=MID, req=MEDIUM, start=_t(0)),
            pod("p1.2", node="node1", prio=MID, req=LARGE, start=_t(0)),
            pod("p2.1", node="node2", prio=MID, req=LARGE, start=_t(0)),
            pod("p2.2", node="node2", prio=LOW, req=MEDIUM, start=_t(0)),
            pod("p3.1", node="node3", prio=MID, req=MEDIUM, start=_t(0)),
            pod("p3.2", node="node3", prio=MID, req=MEDIUM, start=_t(0)),
        ],
        {"node2"},
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is picked",
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", node="node1", prio=MID, req=SMALL, start=_t(0)),
            pod("p1.2", node="node1", prio=NEG, req=SMALL, start=_t(0)),
            pod("p1.3", node="node1", prio=MID, req=SMALL, start=_t(0)),
            pod("p1.4", node="node1", prio=NEG, req=SMALL, start=_t(0)),
            pod("p2.1", node="node2", prio=MID, req=LARGE, start=_t(0)),
            pod("p2.2", node="node2", prio=NEG, req=MEDIUM, start=_t(0)),
            pod("p3.1", node="node3", prio=MID, req=MEDIUM, start=_t(0)),
            pod("p3.2", node="node3", prio=NEG, req=SMALL, start=_t(0)),
            pod("p3.3", node="node3", prio=LOW, req=SMALL, start=_t(0)),
        ],
        {"node2"},
    ),
    (
        "sum of adjusted priorities is considered",
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", node="node1", prio=MID, req=SMALL, start=_t(0)),
            pod("p1.2", node="node1", prio=NEG, req=SMALL, start=_t(0)),
            pod("p1.3", node="node1", prio=NEG, req=SMALL, start=_t(0)),
            pod("p2.1", node="node2", prio=MID, req=LARGE, start=_t(0)),
            pod("p2.2", node="node2", prio=NEG, req=MEDIUM, start=_t(0)),
            pod("p3.1", node="node3", prio=MID, req=MEDIUM, start=_t(0)),
            pod("p3.2", node="node3", prio=NEG, req=SMALL, start=_t(0)),
            pod("p3.3", node="node3", prio=LOW, req=SMALL, start=_t(0)),
        ],
        {"node2"},
    ),
    (
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ["node1", "node2", "node3", "node4"],
        pod("p", prio=VERY_HIGH, req=VERY_LARGE),
        [
            pod("p1.1", node="node1", prio=MID, req=SMALL, start=_t(0)),
            pod("p1.2", node="node1", prio=LOW, req=SMALL, start=_t(0)),
            pod("p1.3", node="node1", prio=LOW, req=SMALL, start=_t(0)),
            pod("p2.1", node="node2", prio=HIGH, req=LARGE, start=_t(0)),
            pod("p3.1", node="node3", prio=MID, req=MEDIUM, start=_t(0)),
            pod("p3.2", node="node3", prio=LOW, req=SMALL, start=_t(0)),
            pod("p3.3", node="node3", prio=LOW, req=SMALL, start=_t(0)),
            pod("p3.4", node="node3", prio=LOW, req=MEDIUM, start=_t(0)),
            pod("p4.1", node="node4", prio=MID, req=MEDIUM, start=_t(0)),
            pod("p4.2", node="node4", prio=MID, req=SMALL, start=_t(0)),
            pod("p4.3", node="node4", prio=MID, req=SMALL, start=_t(0)),
            pod("p4.4", node="node4", prio=NEG, req=SMALL, start=_t(0)),
        ],
        {"node1"},
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", node="node1", prio=MID, req=MEDIUM, start=_t(2)),
            pod("p1.2", node="node1", prio=MID, req=MEDIUM, start=_t(2)),
            pod("p2.1", node="node2", prio=MID, req=MEDIUM, start=_t(3)),
            pod("p2.2", node="node2", prio=MID, req=MEDIUM, start=_t(3)),
            pod("p3.1", node="node3", prio=MID, req=MEDIUM, start=_t(1)),
            pod("p3.2", node="node3", prio=MID, req=MEDIUM, start=_t(1)),
        ],
        {"node2"},
    ),
    (
        "same priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", node="node1", prio=MID, req=MEDIUM, start=_t(4)),
            pod("p1.2", node="node1", prio=MID, req=MEDIUM, start=_t(2)),
            pod("p2.1", node="node2", prio=MID, req=MEDIUM, start=_t(5)),
            pod("p2.2", node="node2", prio=MID, req=MEDIUM, start=_t(1)),
            pod("p3.1", node="node3", prio=MID, req=MEDIUM, start=_t(3)),
            pod("p3.2", node="node3", prio=MID, req=MEDIUM, start=_t(6)),
        ],
        {"node3"},
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        ["node1", "node2", "node3"],
        pod("p", prio=HIGH, req=VERY_LARGE),
        [
            pod("p1.1", node="node1", prio=LOW, req=MEDIUM, start=_t(4)),
            pod("p1.2", node="node1", prio=MID, req=MEDIUM, start=_t(2)),
            pod("p2.1", node="node2", prio=MID, req=MEDIUM, start=_t(6)),
            pod("p2.2", node="node2", prio=LOW, req=MEDIUM, start=_t(1)),
            pod("p3.1", node="node3", prio=LOW, req=MEDIUM, start=_t(3)),
            pod("p3.2", node="node3", prio=MID, req=MEDIUM, start=_t(5)),
        ],
        {"node2"},
    ),
]


@pytest.mark.parametrize(
    ("name", "nodes", "p", "pods", "expected"), SELECT_CASES, ids=[c[0] for c in SELECT_CASES]
)
def test_select_best_candidate(
    name: str, nodes: list[str], p: PodInfo, pods: list[PodInfo], expected: set[str]
) -> None:
    env = Env([node(n, VERY_LARGE) for n in nodes], pods)
    env.pl.offset_rand = lambda n: 0
    infos = list(env.snapshot.node_infos)
    offset, num = env.pl.get_offset_and_num_candidates(len(infos))
    candidates, _, _ = env.pl.evaluator.dry_run_preemption(
        env.state_for(p), p, infos, [], offset, num
    )
    best = env.pl.evaluator.select_candidate(candidates)
    assert best is not None and best.name in expected


# ---- TestCustomSelection / TestCustomOrdering ---------------------------------------------------


def label_is(key: str, val: str) -> Any:
    return lambda ni, victim, preemptor: victim.labels.get(key) == val


def node_is(name: str) -> Any:
    return lambda ni, victim, preemptor: ni.name == name


def preemptor_at_least(prio: int) -> Any:
    return lambda ni, victim, preemptor: preemptor.priority >= prio


def victim_at_most(prio: int) -> Any:
    return lambda ni, victim, preemptor: victim.priority <= prio


def _by_label() -> list[PodInfo]:
    return [
        pod("v1", labels={"preemptible": "no"}, node="node1", prio=MID, req=LARGE),
        pod("v2", labels={"preemptible": "yes"}, node="node2", prio=MID, req=LARGE),
        pod("v3", labels={"preemptible": "yes"}, node="node3", prio=LOW, req=LARGE),
        pod("v4", node="node4", prio=LOW, req=LARGE),
    ]


def _on_node1(v1_req: dict[str, str]) -> list[PodInfo]:
    return [
        pod("v1", node="node1", prio=HIGH, req=v1_req),
        pod("v2", node="node1", prio=MID, req=SMALL),
        pod("v3", node="node1", prio=LOW, req=SMALL),
        pod("v4", node="node2", prio=MID, req=LARGE),
        pod("v5", node="node3", prio=LOW, req=LARGE),
    ]


def _three() -> list[PodInfo]:
    return [
        pod("v1", node="node1", prio=HIGH, req=LARGE),
        pod("v2", node="node2", prio=MID, req=LARGE),
        pod("v3", node="node3", prio=LOW, req=LARGE),
    ]


N4 = ["node1", "node2", "node3", "node4"]
N3 = ["node1", "node2", "node3"]
CUSTOM_SELECTION: list[tuple[str, Any, list[str], PodInfo, list[PodInfo], dict[str, list[str]]]] = [
    (
        "filter for matching pod label: high priority",
        label_is("preemptible", "yes"),
        N4,
        pod("p1", prio=HIGH, req=LARGE),
        _by_label(),
        {"node2": ["v2"], "node3": ["v3"]},
    ),
    (
        "filter for matching pod label: mid priority",
        label_is("preemptible", "yes"),
        N4,
        pod("p2", prio=MID, req=LARGE),
        _by_label(),
        {"node3": ["v3"]},
    ),
    (
        "filter for matching pod label: low priority",
        label_is("preemptible", "yes"),
        N4,
        pod("p3", prio=LOW, req=LARGE),
        _by_label(),
        {},
    ),
    (
        "filter for matching victim node: high priority",
        node_is("node1"),
        N3,
        pod("p3", prio=HIGH, req=LARGE),
        _on_node1(MEDIUM),
        {"node1": ["v2", "v3"]},
    ),
    (
        "filter for matching victim node: mid priority",
        node_is("node1"),
        N3,
        pod("p3", prio=MID, req=LARGE),
        _on_node1(SMALL),
        {"node1": ["v3"]},
    ),
    (
        "filter for matching victim node: low priority",
        node_is("node1"),
        N3,
        pod("p3", prio=LOW, req=LARGE),
        _on_node1(SMALL),
        {},
    ),
    (
        "only pods at or above specified priority can preempted: high priority",
        preemptor_at_least(HIGH),
        N3,
        pod("p1", prio=HIGH, req=LARGE),
        _three(),
        {"node2": ["v2"], "node3": ["v3"]},
    ),
    (
        "only pods at or above specified priority can preempted: mid priority",
        preemptor_at_least(HIGH),
        N3,
        pod("p2", prio=MID, req=LARGE),
        _three(),
        {},
    ),
    (
        "only pods at or below specified priority can be preempted: high priority",
        victim_at_most(MID),
        N3,
        pod("p1", prio=HIGH, req=LARGE),
        _three(),
        {"node2": ["v2"], "node3": ["v3"]},
    ),
]


@pytest.mark.parametrize(
    ("name", "eligible", "nodes", "p", "pods", "expected"),
    CUSTOM_SELECTION,
    ids=[c[0] for c in CUSTOM_SELECTION],
)
def test_custom_selection(
    name: str,
    eligible: Any,
    nodes: list[str],
    p: PodInfo,
    pods: list[PodInfo],
    expected: dict[str, list[str]],
) -> None:
    env = Env([node(n, VERY_LARGE) for n in nodes], pods)
    env.pl.is_eligible_pod = eligible
    infos = list(env.snapshot.node_infos)
    offset, num = env.pl.get_offset_and_num_candidates(len(infos))
    candidates, _, _ = env.pl.evaluator.dry_run_preemption(
        env.state_for(p), p, infos, [], offset, num
    )
    assert len(candidates) == len(expected)
    while candidates:
        selected = env.pl.evaluator.select_candidate(candidates)
        assert selected is not None and selected.name in expected
        assert [v.name for v in selected.victims.pods] == expected[selected.name]
        candidates = [c for c in candidates if c.name != selected.name]


def _oldest_first(a: PodInfo, b: PodInfo) -> bool:
    return (a.pod.status.start_time or "") < (b.pod.status.start_time or "")


def _by_name(a: PodInfo, b: PodInfo) -> bool:
    return a.name < b.name


@pytest.mark.parametrize(
    ("order", "pods", "expected"),
    [
        # the newest two pods are selected, despite one with higher priority
        (
            _oldest_first,
            [
                pod("v1", node="node1", prio=LOW, req=MEDIUM, start=_t(2)),
                pod("v2", node="node1", prio=LOW, req=MEDIUM, start=_t(0)),
                pod("v3", node="node1", prio=MID, req=MEDIUM, start=_t(1)),
            ],
            ["v3", "v1"],
        ),
        # the last pods in alphabetic order are selected, despite one with higher priority
        (
            _by_name,
            [
                pod("foo", uid="v1", node="node1", prio=LOW, req=MEDIUM, start=_t(0)),
                pod("bar", uid="v2", node="node1", prio=LOW, req=MEDIUM, start=_t(0)),
                pod("baz", uid="v3", node="node1", prio=MID, req=MEDIUM, start=_t(0)),
            ],
            ["baz", "foo"],
        ),
    ],
    ids=["select newest pods", "select alphabetically-last pods"],
)
def test_custom_ordering(order: Any, pods: list[PodInfo], expected: list[str]) -> None:
    env = Env([node("node1", VERY_LARGE)], pods)
    env.pl.more_important_pod = order
    p = pod("p2", prio=HIGH, req=LARGE)
    infos = list(env.snapshot.node_infos)
    candidates, _, _ = env.pl.evaluator.dry_run_preemption(env.state_for(p), p, infos, [], 0, 1)
    assert len(candidates) == 1
    assert [v.name for v in candidates[0].victims.pods] == expected


# ---- TestPodEligibleToPreemptOthers ------------------------------------------------------------


PREEMPTED = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}


@pytest.mark.parametrize(
    ("p", "pods", "nodes", "nominated_status", "expected"),
    [
        (
            pod("p_with_nominated_node", uid="p", prio=HIGH, nominated="node1"),
            [pod("p1", prio=LOW, node="node1", terminating=True)],
            ["node1"],
            Status(UU, "node(s) had untolerated taint"),
            True,
        ),
        (pod("p_without_nominated_node", uid="p", prio=HIGH), [], [], None, True),
        (
            pod("p_with_preempt_never_policy", uid="p", prio=HIGH, policy="Never"),
            [],
            [],
            None,
            False,
        ),
        (
            pod("p_with_nominated_node", uid="p", prio=HIGH, nominated="node1"),
            [pod("p1", prio=LOW, node="node1", terminating=True, conditions=[PREEMPTED])],
            ["node1"],
            None,
            False,
        ),
        (
            pod("p_with_nominated_node", uid="p", prio=HIGH, nominated="node1"),
            [pod("p1", prio=LOW, node="node1", terminating=True)],
            ["node1"],
            None,
            True,
        ),
    ],
    ids=[
        "Pod with nominated node",
        "Pod without nominated node",
        "Pod with 'PreemptNever' preemption policy",
        "preemption victim pod terminating, as indicated by the dedicated DisruptionTarget "
        "condition",
        "non-victim Pods terminating",
    ],
)
def test_pod_eligible_to_preempt_others(
    p: PodInfo,
    pods: list[PodInfo],
    nodes: list[str],
    nominated_status: Status | None,
    expected: bool,
) -> None:
    env = Env([node(n) for n in nodes], pods, [])
    got, _ = env.pl.pod_eligible_to_preempt_others(p, nominated_status)
    assert got is expected


def test_the_condition_preemption_writes_is_the_one_it_reads_back() -> None:
    """A victim marked by ``preemption_condition`` and then being deleted blocks a second
    preemption by its preemptor (``pod_terminating_by_preemption``)."""
    victim = pod("p1", prio=LOW, node="node1", terminating=True)
    cond = preemption_condition(victim, "default-scheduler")
    assert cond is not None
    marked = pod(
        "p1", prio=LOW, node="node1", terminating=True, conditions=[msgspec.to_builtins(cond)]
    )
    assert pod_terminating_by_preemption(marked)
    env = Env([node("node1")], [marked], [])
    got, msg = env.pl.pod_eligible_to_preempt_others(pod("p", prio=HIGH, nominated="node1"), None)
    assert (got, msg) == (False, NOT_ELIGIBLE_TERMINATING)


def test_preemption_condition() -> None:
    """``PreemptPod``'s condition, skipped when already there as ``UpdatePodCondition``
    decides; the transition time survives when the status stays True."""
    victim = pod("v", prio=LOW, node="node1")
    victim = victim.with_pod(
        msgspec.structs.replace(
            victim.pod, metadata=msgspec.structs.replace(victim.pod.metadata, generation=4)
        )
    )
    cond = preemption_condition(victim, "my-scheduler")
    assert cond is not None
    assert (cond.type, cond.status, cond.reason, cond.message, cond.observed_generation) == (
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
        "my-scheduler: preempting to accommodate a higher priority pod",
        4,
    )
    assert cond.last_transition_time is not None
    same = {**msgspec.to_builtins(cond), "lastTransitionTime": epoch(1)}
    assert preemption_condition(pod("v", conditions=[same]), "my-scheduler") is None
    # Another scheduler's (or reason's) condition is replaced, keeping its transition time.
    other = preemption_condition(pod("v", conditions=[same]), "other-scheduler")
    assert other is not None and other.last_transition_time == epoch(1)
    probed = {**same, "lastProbeTime": epoch(2)}
    assert preemption_condition(pod("v", conditions=[probed]), "my-scheduler") is not None
    was_false = {**same, "status": "False"}
    flipped = preemption_condition(pod("v", conditions=[was_false]), "my-scheduler")
    assert flipped is not None and flipped.last_transition_time != epoch(1)


def test_terminating_higher_priority_pod_does_not_block() -> None:
    """Only pods the preemptor may preempt count as its terminating victims."""
    env = Env(
        [node("node1")],
        [pod("p1", prio=HIGH, node="node1", terminating=True, conditions=[PREEMPTED])],
        [],
    )
    got, _ = env.pl.pod_eligible_to_preempt_others(pod("p", prio=HIGH, nominated="node1"), None)
    assert got is True


# ---- TestPreempt -------------------------------------------------------------------------------


PREEMPT_PODS = [
    pod("p1.1", node="node1", prio=LOW, req=SMALL),
    pod("p1.2", node="node1", prio=LOW, req=SMALL),
    pod("p2.1", node="node2", prio=HIGH, req=LARGE),
    pod("p3.1", node="node3", prio=MID, req=MEDIUM),
]


@pytest.mark.parametrize(
    ("p", "pods", "nodes", "plugins", "want", "victims"),
    [
        (
            pod("p", prio=HIGH, req=VERY_LARGE, policy="PreemptLowerPriority"),
            PREEMPT_PODS,
            N3,
            [FIT],
            "node1",
            ["p1.1", "p1.2"],
        ),
        (
            pod(
                "p",
                labels={"foo": ""},
                prio=HIGH,
                spread=[(1, "zone", "DoNotSchedule"), (1, "hostname", "DoNotSchedule")],
            ),
            [
                pod("p-a1", node="node-a", labels={"foo": ""}, prio=HIGH),
                pod("p-a2", node="node-a", labels={"foo": ""}, prio=HIGH),
                pod("p-b1", node="node-b", labels={"foo": ""}, prio=LOW),
                pod("p-x1", node="node-x", labels={"foo": ""}, prio=HIGH),
                pod("p-x2", node="node-x", labels={"foo": ""}, prio=HIGH),
            ],
            ["node-a/zone1", "node-b/zone1", "node-x/zone2"],
            [PTS],
            "node-b",
            ["p-b1"],
        ),
        (pod("p", prio=HIGH, req=VERY_LARGE, policy="Never"), PREEMPT_PODS, N3, [FIT], None, []),
        (pod("p", prio=HIGH, req=VERY_LARGE), PREEMPT_PODS, N3, [FIT], "node1", ["p1.1", "p1.2"]),
    ],
    ids=[
        "basic preemption logic",
        "preemption for topology spread constraints",
        "no preempting in pod",
        "PreemptionPolicy is nil",
    ],
)
def test_preempt(
    p: PodInfo,
    pods: list[PodInfo],
    nodes: list[str],
    plugins: Any,
    want: str | None,
    victims: list[str],
) -> None:
    env = Env([node(n, VERY_LARGE) for n in nodes], pods, plugins)
    m = NodeToStatus(Status(UU))
    for ni in env.snapshot.node_infos:
        m.set(ni.name, Status(U))
    res, st = env.pl.evaluator.preempt(env.state_for(p), p, m)
    assert st.is_success() or st.is_rejected()
    if want is None:
        assert res is None and st.message() == NOT_ELIGIBLE_NEVER
        return
    assert res is not None and res.nominated_node_name == want
    assert sorted(v.name for v in res.victims) == victims
    # Called again with nothing unschedulable-but-resolvable: no more preemption.
    res2, st2 = env.pl.evaluator.preempt(env.state_for(p), p, NodeToStatus(Status(UU)))
    assert res2 == PostFilterResult("")
    assert st2.message() == (
        f"0/{len(nodes)} nodes are available: {len(nodes)} "
        "Preemption is not helpful for scheduling."
    )


def test_preempt_again_while_victims_terminate_is_not_eligible() -> None:
    """After preempting, the victims terminate (DisruptionTarget set): a retry of the
    nominated preemptor must not pick more victims."""
    pods = [
        pod("p1.1", node="node1", prio=LOW, req=SMALL, terminating=True, conditions=[PREEMPTED]),
        pod("p1.2", node="node1", prio=LOW, req=SMALL, terminating=True, conditions=[PREEMPTED]),
        *PREEMPT_PODS[2:],
    ]
    env = Env([node(n, VERY_LARGE) for n in N3], pods)
    p = pod("p", prio=HIGH, req=VERY_LARGE, nominated="node1")
    m = NodeToStatus(Status(UU))
    for n in N3:
        m.set(n, Status(U))
    res, st = env.pl.post_filter(env.state_for(p), p, m)
    assert res is None
    assert st is not None and st.message() == (
        "preemption: not eligible due to a terminating pod on the nominated node."
    )


def test_no_nodes_is_an_error() -> None:
    env = Env([], [])
    p = pod("p", prio=HIGH)
    res, st = env.pl.post_filter(env.state_for(p), p, NodeToStatus())
    assert res is None and st is not None
    assert (st.code, st.message()) == (Code.ERROR, "preemption: no nodes available")


# ---- TestPreEnqueue -----------------------------------------------------------------------------


WAITING_MSG = "waiting for the preemption for this pod to be finished"


@pytest.mark.parametrize(
    ("in_flight", "last_victim", "victim_state", "want"),
    [
        (False, None, None, None),
        (False, "victim", "present", None),
        (True, None, None, WAITING_MSG),
        (True, "victim", "gone", None),
        (True, "victim", "present", WAITING_MSG),
        (True, "victim", "terminating", None),
    ],
    ids=[
        "preemptor not in preempting",
        "not in preempting, a last victim left over",
        "in preempting, no last victim yet",
        "last victim not in the pod lister",
        "last victim in the pod lister",
        "last victim in the pod lister with a deletion timestamp",
    ],
)
def test_pre_enqueue(
    in_flight: bool, last_victim: str | None, victim_state: str | None, want: str | None
) -> None:
    """Upstream's ``TestIsPodRunningPreemption`` through PreEnqueue: a preemptor is held
    back until its last victim is gone or terminating, not until the evictions return."""
    env = Env([node("node1", ONE_POD)], [pod("p1", node="node1")])
    preemptor = pod("p", prio=HIGH)
    victim = pod("victim", node="node1")
    entry = PreemptionInFlight(last_victim=victim if last_victim else None)
    running = {preemptor.uid or preemptor.key: entry} if in_flight else {}
    env.fw.handle.preempting = running
    lister: dict[str, PodInfo] = {}
    if victim_state == "present":
        lister[victim.key] = victim
    elif victim_state == "terminating":
        lister[victim.key] = pod("victim", node="node1", terminating=True)
    env.fw.handle.listers[Listers.PODS] = lister
    st = env.pl.pre_enqueue(preemptor)
    if want is None:
        assert st is None
    else:
        assert st is not None and (st.code, st.message()) == (UU, want)
    # another pod is never held back by this preemption
    assert env.pl.pre_enqueue(pod("p_other", prio=HIGH)) is None


def test_events_to_register_always_skip() -> None:
    (reg,) = DefaultPreemption().events_to_register()
    assert (reg.event.resource, reg.event.action) == ("AssignedPod", "Delete")
    assert reg.hint is not None and reg.hint(pod("p"), None, None) == "QueueSkip"


# ---- args (ValidateDefaultPreemptionArgs) ------------------------------------------------------


def test_args_defaults() -> None:
    assert DefaultPreemptionArgs.parse("DefaultPreemption", {}) == DefaultPreemptionArgs(10, 100)
    assert DefaultPreemption().args == DefaultPreemptionArgs(10, 100)


@pytest.mark.parametrize(
    ("args", "want"),
    [
        ({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100}, None),
        (
            {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": 100},
            "plugin DefaultPreemption: args.minCandidateNodesPercentage: Invalid value: -1: "
            "not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesPercentage": 900, "minCandidateNodesAbsolute": 100},
            "plugin DefaultPreemption: args.minCandidateNodesPercentage: Invalid value: 900: "
            "not in valid range [0, 100]",
        ),
        (
            {"minCandidateNodesPercentage": 20, "minCandidateNodesAbsolute": -1},
            "plugin DefaultPreemption: args.minCandidateNodesAbsolute: Invalid value: -1: "
            "not in valid range [0, inf)",
        ),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "plugin DefaultPreemption: args: [minCandidateNodesPercentage: Invalid value: 0: cannot be "
            "zero at the same time as minCandidateNodesAbsolute, minCandidateNodesAbsolute: Invalid "
            "value: 0: cannot be zero at the same time as minCandidateNodesPercentage]",
        ),
        (
            {"minCandidateNodesPercentage": -1, "minCandidateNodesAbsolute": -1},
            "plugin DefaultPreemption: args: [minCandidateNodesPercentage: Invalid value: -1: not in "
            "valid range [0, 100], minCandidateNodesAbsolute: Invalid value: -1: not in valid range "
            "[0, inf)]",
        ),
        (
            {"minCandidateNodesPercentage": "10"},
            "plugin DefaultPreemption: args.minCandidateNodesPercentage: must be an integer, got '10'",
        ),
        ({"minCandidates": 1}, "plugin DefaultPreemption: args.minCandidates: unknown field"),
    ],
    ids=[
        "valid args (default)",
        "negative minCandidateNodesPercentage",
        "minCandidateNodesPercentage over 100",
        "negative minCandidateNodesAbsolute",
        "all zero",
        "both negative",
        "wrong type",
        "unknown field",
    ],
)
def test_args_validation(args: dict[str, Any], want: str | None) -> None:
    if want is None:
        DefaultPreemptionArgs.parse("DefaultPreemption", args)
        return
    with pytest.raises(PluginArgsError) as e:
        DefaultPreemptionArgs.parse("DefaultPreemption", args)
    assert str(e.value) == want


@pytest.mark.parametrize(
    ("pct", "absolute", "nodes", "want"),
    [
        (10, 100, 10, 10),
        (10, 100, 1000, 100),
        (10, 100, 5000, 500),
        (40, 1, 5, 2),
        (40, 2, 5, 2),
        (0, 3, 5, 3),
        (1, 0, 50, 0),
    ],
)
def test_calculate_num_candidates(pct: int, absolute: int, nodes: int, want: int) -> None:
    pl = DefaultPreemption(
        {"minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": absolute}
    )
    assert pl.calculate_num_candidates(nodes) == want


def test_offset_is_seeded_and_in_range() -> None:
    a, b = DefaultPreemption(), DefaultPreemption()
    xs = [a.get_offset_and_num_candidates(7)[0] for _ in range(20)]
    assert xs == [b.get_offset_and_num_candidates(7)[0] for _ in range(20)]
    assert all(0 <= x < 7 for x in xs)


# ---- the dry run's filter with nominated pods equals the runtime's -----------------------------


@pytest.mark.parametrize("plugins", [[FIT], [FIT, PTS]], ids=["no extensions", "extensions"])
@pytest.mark.parametrize("nominated_cpu", ["100m", "300m"], ids=["fits", "crowds out"])
def test_trial_filter_matches_run_filter_with_nominated_pods(
    plugins: Any, nominated_cpu: str
) -> None:
    from ksched.plugins.defaultpreemption.default_preemption import _Trial

    env = Env(
        [node("node-a/zone1", VERY_LARGE)],
        [pod("low", node="node-a", prio=LOW, req=SMALL, labels={"foo": ""})],
        plugins,
    )
    p = pod("p", prio=HIGH, req=LARGE, labels={"foo": ""}, spread=[(1, "zone", "DoNotSchedule")])
    nominated = [
        pod("nom", prio=VERY_HIGH, req={"cpu": nominated_cpu, "memory": "1"}, labels={"foo": ""})
    ]
    state = env.state_for(p)
    (ni,) = env.snapshot.node_infos
    want = env.fw.run_filter_with_nominated_pods(state.clone(), p, ni.clone(), nominated)
    trial = _Trial(env.fw, state.clone(), p, ni.clone(), nominated)
    assert trial.ext is (len(plugins) > 1)
    got = trial.filter()
    assert (got.code, got.message()) == (want.code, want.message())


# ---- the dry run without copies equals the one on copies ----------------------------------------

TAINTS = ("TaintToleration", ("filter",))


def _random_case(rng: Any, with_pdbs: bool) -> tuple[Env, PodInfo, list[Any], list[PodInfo]]:
    """A few nodes crowded with pods of mixed priorities, requests and labels; a high
    priority preemptor; maybe PDBs over some labels and pods nominated to the nodes."""
    n_nodes = rng.randint(1, 4)
    nodes = [
        node(f"n{i}", {"cpu": f"{rng.randint(3, 8) * 100}m", "memory": "800", "pods": "6"})
        for i in range(n_nodes)
    ]
    pods = []
    for i in range(rng.randint(0, 5 * n_nodes)):
        req = {"cpu": f"{rng.choice([0, 50, 100, 200])}m", "memory": str(rng.randint(0, 300))}
        pods.append(
            pod(
                f"v{i}",
                node=f"n{rng.randrange(n_nodes)}",
                prio=rng.choice([LOW, MID, HIGH]),
                req=req,
                labels={"app": rng.choice("ab")},
                start=epoch(rng.randint(0, 10)),
            )
        )
    pdbs = [pdb("pa", match_labels={"app": "a"}, allowed=rng.randint(0, 2))] if with_pdbs else []
    env = Env(nodes, pods, [FIT, TAINTS], pdbs=pdbs)
    for i in range(rng.randint(0, 2)):
        nom = pod(f"nom{i}", prio=rng.choice([LOW, VERY_HIGH]), req={"cpu": "100m"})
        env.nominator.add(nom, f"n{rng.randrange(n_nodes)}")
    preemptor = pod("p", prio=VERY_HIGH - 1, req={"cpu": f"{rng.randint(1, 6) * 100}m"})
    return env, preemptor, pdbs, pods


@pytest.mark.parametrize("with_pdbs", [False, True], ids=["no PDBs", "PDBs"])
def test_select_victims_in_place_equals_select_victims_on_a_copy(with_pdbs: bool) -> None:
    import random

    rng = random.Random(7)
    compared = 0
    for _ in range(300):
        env, p, pdbs, _pods = _random_case(rng, with_pdbs)
        state = env.state_for(p)
        for ni in env.node_infos():
            before = (len(ni.pods), ni.requested.milli_cpu, ni.generation)
            got = env.pl.select_victims_in_place(state, p, ni, pdbs)
            assert got is not None, "Fit and TaintToleration alone: the shortcut applies"
            assert (len(ni.pods), ni.requested.milli_cpu, ni.generation) == before
            want = env.pl.select_victims_on_node(state.clone(), p, ni.clone(), pdbs)
            assert [v.name for v in got[0]] == [v.name for v in want[0]]
            assert got[1] == want[1]
            assert (got[2].code, got[2].message(), got[2].plugin) == (
                want[2].code,
                want[2].message(),
                want[2].plugin,
            )
            compared += 1
    assert compared > 300


def _rich_random_case(rng: Any) -> tuple[Env, PodInfo, list[Any]]:
    """``_random_case`` over every resource Fit checks: cpu, memory, ephemeral storage,
    an extended resource (absent on some nodes), quantities at the int64 edge (sums that
    wrap round), pods that request nothing, nominated pods of every kind."""
    huge = str(2**63 - 1)

    def amount(choices: list[str]) -> str:
        return rng.choice(choices)

    n_nodes = rng.randint(1, 4)
    nodes = []
    for i in range(n_nodes):
        cap = {
            "cpu": f"{rng.randint(3, 8) * 100}m",
            "memory": amount(["800", "2000", huge]),
            "ephemeral-storage": amount(["500", "1000"]),
            "pods": str(rng.randint(3, 7)),
        }
        if rng.random() < 0.7:
            cap["example.com/gpu"] = str(rng.randint(0, 4))
        nodes.append(node(f"n{i}", cap))
    pods = []
    for i in range(rng.randint(0, 5 * n_nodes)):
        req: dict[str, str] = {}
        if rng.random() < 0.8:
            req["cpu"] = f"{rng.choice([0, 50, 100, 200])}m"
        if rng.random() < 0.6:
            req["memory"] = amount(["0", "100", "300", huge])
        if rng.random() < 0.4:
            req["ephemeral-storage"] = amount(["100", "400"])
        if rng.random() < 0.4:
            req["example.com/gpu"] = str(rng.randint(1, 2))
        pods.append(
            pod(
                f"v{i}",
                node=f"n{rng.randrange(n_nodes)}",
                prio=rng.choice([LOW, MID, HIGH]),
                req=req,
                labels={"app": rng.choice("ab")},
                start=epoch(rng.randint(0, 10)),
            )
        )
    pdbs = [pdb("pa", match_labels={"app": "a"}, allowed=rng.randint(0, 2))]
    env = Env(nodes, pods, [FIT, TAINTS], pdbs=pdbs)
    for i in range(rng.randint(0, 3)):
        nreq = {"cpu": "100m"}
        if rng.random() < 0.5:
            nreq["example.com/gpu"] = "1"
        if rng.random() < 0.3:
            nreq["memory"] = amount(["200", huge])
        nom = pod(f"nom{i}", prio=rng.choice([LOW, VERY_HIGH]), req=nreq)
        env.nominator.add(nom, f"n{rng.randrange(n_nodes)}")
    preq: dict[str, str] = {}
    if rng.random() < 0.9:
        preq["cpu"] = f"{rng.randint(1, 6) * 100}m"
    if rng.random() < 0.5:
        preq["memory"] = amount(["100", "500", "1500"])
    if rng.random() < 0.3:
        preq["ephemeral-storage"] = amount(["200", "600"])
    if rng.random() < 0.5:
        preq["example.com/gpu"] = str(rng.randint(1, 3))
    return env, pod("p", prio=VERY_HIGH - 1, req=preq), pdbs


def test_select_victims_in_place_equals_the_copy_over_every_resource() -> None:
    """The dry run's plain-int reprieve checks (``fits_aggregates``) agree with Fit's
    verdict on copies for memory, ephemeral storage, extended resources and int64 wrap."""
    import random

    rng = random.Random(23)
    outcomes: set[str] = set()
    for _ in range(400):
        env, p, pdbs = _rich_random_case(rng)
        state = env.state_for(p)
        for ni in env.node_infos():
            got = env.pl.select_victims_in_place(state, p, ni, pdbs)
            assert got is not None
            want = env.pl.select_victims_on_node(state.clone(), p, ni.clone(), pdbs)
            assert [v.name for v in got[0]] == [v.name for v in want[0]]
            assert got[1] == want[1]
            assert (got[2].code, got[2].message()) == (want[2].code, want[2].message())
            outcomes.add(f"{got[2].code.name}:{bool(got[0])}")
    # both kinds of node were met: ones with victims and ones preemption cannot help
    assert {"SUCCESS:True", "UNSCHEDULABLE:False"} <= outcomes, outcomes


def test_select_victims_in_place_declines_where_pods_matter() -> None:
    """A plugin that reads the pods on the node (PodTopologySpread with a constraint) or
    a subclass with its own selection: the Evaluator must use select_victims_on_node."""
    env = Env(
        [node("n1/zone1", VERY_LARGE)],
        [pod("low", node="n1", prio=LOW, req=LARGE, labels={"foo": ""})],
        [FIT, PTS],
    )
    spread = pod(
        "p", prio=HIGH, req=LARGE, labels={"foo": ""}, spread=[(1, "zone", "DoNotSchedule")]
    )
    (ni,) = env.node_infos()
    assert env.pl.select_victims_in_place(env.state_for(spread), spread, ni, []) is None
    plain = pod("q", prio=HIGH, req=LARGE)
    assert env.pl.select_victims_in_place(env.state_for(plain), plain, ni, []) is not None

    class Custom(DefaultPreemption):
        def select_victims_on_node(self, *a: Any) -> Any:
            return [], 0, Status(Code.UNSCHEDULABLE)

    custom = Custom(None, env.pl.handle)
    assert custom.select_victims_in_place(env.state_for(plain), plain, ni, []) is None


def test_filter_with_nominated_pods_without_copies_equals_the_copying_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The runtime's nominated-pods pass through ``filter_with_added`` (no node or state
    copy) gives the status adding the pods to a copy gives, for every node."""
    import random

    rng = random.Random(11)
    checked = 0
    for _ in range(200):
        env, p, _pdbs, _pods = _random_case(rng, False)
        state = env.state_for(p)
        assert env.fw._filters_take_added(state)
        for ni in env.node_infos():
            nominated = [
                pod(f"n{i}", prio=VERY_HIGH, req={"cpu": f"{rng.randint(0, 4) * 100}m"})
                for i in range(rng.randint(1, 3))
            ]
            got = env.fw.run_filter_with_nominated_pods(state, p, ni, nominated)
            with monkeypatch.context() as m:
                m.setattr(env.fw, "_filters_take_added", lambda _state: False)
                want = env.fw.run_filter_with_nominated_pods(state, p, ni, nominated)
            assert (got.code, got.message(), got.plugin) == (
                want.code,
                want.message(),
                want.plugin,
            )
            checked += 1
    assert checked > 200


def test_filters_take_added_only_when_every_active_plugin_can() -> None:
    env = Env([node("n1/zone1", VERY_LARGE)], [], [FIT, PTS])
    spread = pod(
        "p", prio=HIGH, req=LARGE, labels={"foo": ""}, spread=[(1, "zone", "DoNotSchedule")]
    )
    assert not env.fw._filters_take_added(env.state_for(spread))  # PTS extensions active
    assert env.fw._filters_take_added(env.state_for(pod("q", prio=HIGH, req=LARGE)))


@pytest.mark.parametrize(("version", "want"), [("1.36", ["b", "a"]), ("1.37", ["c"])])
def test_unstarted_victims_of_one_priority_are_reprieved_in_upstreams_order(
    version: str, want: list[str]
) -> None:
    """Found by the long differential run (seed 390): in 1.36 pods without ``startTime``
    (no kubelet has started them yet) compare as "more important" both ways round, since
    upstream reads ``time.Now()`` for each at comparison time, and Go's sort then reverses
    the tie group. Reprieve tries the 1000m pod first, it fits back, and the two 500m
    pods are the victims. 1.37 reads that time once per victim, in node order (seed
    44156): the node's order stands, both 500m pods fit back, the 1000m pod goes."""
    pods = [
        pod("a", node="n0", prio=0, req={"cpu": "500m"}),
        pod("b", node="n0", prio=0, req={"cpu": "500m"}),
        pod("c", node="n0", prio=0, req={"cpu": "1000m"}),
    ]
    env = Env([node("n0", {"cpu": "4", "pods": "10"})], pods, [FIT, TAINTS], version=version)
    p = pod("p", prio=1000, req={"cpu": "3"})
    state = env.state_for(p)
    (ni,) = env.snapshot.node_infos
    on_copy = env.pl.select_victims_on_node(state.clone(), p, ni.clone(), [])
    in_place = env.pl.select_victims_in_place(state, p, ni, [])
    assert in_place is not None
    for victims, _, status in (on_copy, in_place):
        assert status.is_success()
        assert [v.name for v in victims] == want
    # Started pods order by start time as before: the oldest is reprieved first.
    started = [
        pod("a", node="n0", prio=0, req={"cpu": "500m"}, start=epoch(1)),
        pod("b", node="n0", prio=0, req={"cpu": "500m"}, start=epoch(2)),
        pod("c", node="n0", prio=0, req={"cpu": "1000m"}, start=epoch(3)),
    ]
    env = Env([node("n0", {"cpu": "4", "pods": "10"})], started, [FIT, TAINTS], version=version)
    (ni,) = env.snapshot.node_infos
    victims, _, _ = env.pl.select_victims_on_node(env.state_for(p), p, ni.clone(), [])
    assert [v.name for v in victims] == ["c"]


def test_sort_by_importance_agrees_with_gos_sort_with_and_without_ties() -> None:
    """The shortcut for tie-free lists gives what Go's ``sort.Slice`` replay gives; lists
    with ties (unstarted pods of one priority, equal start times) keep the replay."""
    import random

    from ksched.plugins.defaultpreemption.preemption import (
        more_important_pod,
        sort_by_importance,
    )
    from ksched.util.gosort import sort_slice

    rng = random.Random(5)
    kinds = {"distinct": 0, "ties": 0}
    for _ in range(400):
        pods = []
        for i in range(rng.randint(2, 14)):
            start = None if rng.random() < 0.2 else epoch(rng.randint(0, 30))
            pods.append(pod(f"v{i}", prio=rng.choice([LOW, MID, HIGH]), start=start))
        keys = {(p.priority, p.pod.status.start_time) for p in pods}
        kinds["distinct" if len(keys) == len(pods) else "ties"] += 1
        got = list(pods)
        sort_by_importance(got, None)
        want = list(pods)
        sort_slice(want, more_important_pod)
        assert [p.name for p in got] == [p.name for p in want]
    assert kinds["distinct"] > 50 and kinds["ties"] > 50, kinds


def test_dry_run_words_statuses_only_when_no_candidate_is_found() -> None:
    """Lazily worded statuses: the same candidates as the eager dry run; with no
    candidate the same statuses node for node; with candidates no placeholder left."""
    import random

    from ksched.plugins.defaultpreemption.preemption import UNWORDED

    rng = random.Random(11)
    seen = {"candidates": 0, "none": 0, "worded later": 0}
    for i in range(400):
        env, p, pdbs = _rich_random_case(rng) if i % 2 else _random_case(rng, True)[:3]
        infos = env.node_infos()
        lazy = env.pl.evaluator.dry_run_preemption(env.state_for(p), p, infos, pdbs, 0, 2)
        env.pl.dry_run_words_lazily = False
        eager = env.pl.evaluator.dry_run_preemption(env.state_for(p), p, infos, pdbs, 0, 2)
        assert [(c.name, [v.name for v in c.victims.pods]) for c in lazy[0]] == [
            (c.name, [v.name for v in c.victims.pods]) for c in eager[0]
        ]
        assert all(s is not UNWORDED for s in lazy[1].statuses.values())
        if lazy[0]:
            seen["candidates"] += 1
            continue
        seen["none"] += 1
        words = [(n, s.code, s.message()) for n, s in lazy[1].statuses.items()]
        assert words == [(n, s.code, s.message()) for n, s in eager[1].statuses.items()]
        if any("Insufficient" in m for _, _, m in words):
            seen["worded later"] += 1
    assert seen["candidates"] > 50 and seen["worded later"] > 20, seen


def _tainted(n: Any, rng: Any) -> Any:
    """``n``, maybe with a NoSchedule taint nobody tolerates (a node-only rejection)."""
    from ksched.api.objects import Node, decode

    if rng.random() < 0.7:
        return n
    obj = msgspec.to_builtins(n)
    obj.setdefault("spec", {})["taints"] = [{"key": "dedicated", "effect": "NoSchedule"}]
    return decode(obj, Node)


@pytest.mark.parametrize("fit_first", [False, True], ids=["taints first", "fit first"])
def test_nominated_first_pass_over_all_rows_equals_the_per_node_pass(fit_first: bool) -> None:
    """Filter with pods nominated on the nodes: the vectorized first pass (Fit's statuses
    with the nominated pods added, node-only plugins' masks) finds the same nodes, walks
    as far and words each rejection as ``run_filter_with_nominated_pods`` node by node,
    over every resource, int64 wrap, taints and both plugin orders."""
    import random

    rng = random.Random(31)
    met = {"fast": 0, "nominated rejections": 0, "found": 0}
    for _ in range(300):
        env, p, _pdbs = _rich_random_case(rng)
        nodes = [_tainted(ni.node, rng) for ni in env.node_infos()]
        pods = [pi for ni in env.node_infos() for pi in ni.pods]
        env2 = Env(nodes, pods, [FIT, TAINTS] if fit_first else [TAINTS, FIT])
        fw, snap = env2.fw, env2.snapshot
        nominated: dict[int, list[PodInfo]] = {}
        for name, noms in env.nominator.nodes().items():
            row = snap.row(name)
            sel = [q for q in noms if q.priority >= p.priority]
            if row is not None and sel:
                nominated[row] = sel
        if not nominated:
            continue
        start, num = rng.randrange(snap.n), rng.randint(1, snap.n)
        # every node, or some (as a nominated node alone is evaluated first)
        cands = snap.all_rows
        if rng.random() < 0.4:
            some = sorted(rng.sample(range(snap.n), rng.randint(1, snap.n)))
            cands = np.array(some, dtype=np.intp)
        first_pass = fw._nominated_first_pass
        used: list[bool] = []

        def spy(*a: Any, first_pass: Any = first_pass, used: list[bool] = used) -> Any:
            out = first_pass(*a)
            used.append(out is not None)
            return out

        fw._nominated_first_pass = spy  # type: ignore[method-assign]
        fast = fw.find_feasible(env2.state_for(p), p, snap, cands, start, num, nominated)
        fw._nominated_first_pass = lambda *a: None  # type: ignore[method-assign]
        slow = fw.find_feasible(env2.state_for(p), p, snap, cands, start, num, nominated)
        assert fast.feasible.tolist() == slow.feasible.tolist()
        assert fast.processed == slow.processed
        assert fast.unschedulable_plugins == slow.unschedulable_plugins

        def words(out: Any) -> dict[str, tuple[Any, str, str]]:
            return {n: (s.code, s.message(), s.plugin) for n, s in out.statuses.statuses.items()}

        assert words(fast) == words(slow)
        met["fast"] += any(used)
        met["found"] += bool(len(fast.feasible))
        met["nominated rejections"] += sum(
            snap.node_infos[r].name in fast.statuses.statuses for r in nominated
        )
    assert met["fast"] > 100 and met["nominated rejections"] > 50 and met["found"] > 20, met


@pytest.mark.parametrize(("version", "want"), [("1.36", ["v2", "v1"]), ("1.37", ["v1", "v2"])])
def test_unstarted_victims_of_one_priority_order_by_version(version: str, want: list[str]) -> None:
    """1.37's MoreImportantVictim reads an unstarted pod's time once, in node order, so
    the first such pod stays the more important; 1.36's MoreImportantPod reads it at
    each comparison and Go's sort swaps the pair. The victims are evicted in this order
    (the preemptor may be retried between two going: seed 44156 d44156-b/p5)."""
    pods = [
        pod("v1", node="node1", prio=LOW, req=MEDIUM),
        pod("v2", node="node1", prio=LOW, req=MEDIUM),
    ]
    env = Env([node("node1", VERY_LARGE)], pods, version=version)
    p = pod("p", prio=HIGH, req=VERY_LARGE)
    infos = list(env.snapshot.node_infos)
    candidates, _, _ = env.pl.evaluator.dry_run_preemption(env.state_for(p), p, infos, [], 0, 1)
    assert len(candidates) == 1
    assert [v.name for v in candidates[0].victims.pods] == want
