"""Preemption through extenders with a preemptVerb (upstream ``callExtenders``): the ported
TestCallExtenders and the extender cases of DefaultPreemption's TestPreempt, then whole
simulations. Real HTTP to fake extenders; a fake keeps the candidate nodes its predicate
accepts, victims unchanged, as upstream's ``FakeExtender.ProcessPreemption`` does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from ksched.config.types import Extender, ExtenderManagedResource
from ksched.extender.client import ExtenderSet, HTTPExtender
from ksched.framework.interface import NodeToStatus, Victims
from ksched.framework.status import Code, Status
from ksched.metrics import SchedulerMetrics
from ksched.plugins.defaultpreemption.preemption import Candidate
from tests.plugins.test_defaultpreemption_helpers import (
    FIT,
    HIGH,
    LARGE,
    LOW,
    MID,
    SMALL,
    VERY_LARGE,
    Env,
    node,
    pod,
)

from .conftest import FakeExtender, Reply, config, node_manifest, pod_manifest, simulate

pytestmark = pytest.mark.anyio


def preempt_keeping(fake: FakeExtender, verb: str, keep: Callable[[str], bool]) -> None:
    """Answer ``verb`` with the candidates whose node ``keep`` accepts, victims as sent
    (by UID, as every extender answers)."""

    async def reply(body: bytes) -> Reply:
        args = msgspec.json.decode(body)
        meta = args.get("NodeNameToMetaVictims")
        sent = meta if meta is not None else args.get("NodeNameToVictims") or {}
        out: dict[str, Any] = {}
        for name, v in sent.items():
            if keep(name):
                uids = [p["UID"] if meta is not None else p["metadata"]["uid"] for p in v["Pods"]]
                out[name] = {
                    "Pods": [{"UID": u} for u in uids],
                    "NumPDBViolations": v["NumPDBViolations"],
                }
        return 200, msgspec.json.encode({"NodeNameToMetaVictims": out})

    fake.handlers[verb] = reply


def everything(name: str) -> bool:
    return True


def node1_only(name: str) -> bool:
    return name == "node1"


def extender(fake: FakeExtender, verb: str = "preempt", **kw: Any) -> HTTPExtender:
    cfg = Extender(url_prefix=fake.url, preempt_verb=verb, http_timeout=2.0)
    for k, v in kw.items():
        setattr(cfg, k, v)
    return HTTPExtender(cfg)


def uninterested() -> list[ExtenderManagedResource]:
    return [ExtenderManagedResource(name="example.com/gpu")]


# ---- TestCallExtenders ------------------------------------------------------------------------


def call_env() -> tuple[Env, list[Candidate]]:
    victim = pod("victim", node="node1", prio=MID)
    env = Env([node("node1", VERY_LARGE)], [victim], [])
    [ni] = env.snapshot.node_infos
    return env, [Candidate("node1", Victims(list(ni.pods)))]


@pytest.mark.parametrize(
    ("setup", "want_nodes", "want_error"),
    [
        ("none", ["node1"], None),
        ("supports", ["node1"], None),
        ("no victims", None, 'expected at least one victim pod on node "node1"'),
        ("no preempt verb", ["node1"], None),
        ("no victims, ignorable", [], None),
        ("error, ignorable", ["node1"], None),
        ("error", None, "failed preempt with extender at URL {url}/preempt, code 500"),
    ],
    ids=[
        "no extenders",
        "one extender supports preemption",
        "one extender with return no victims",
        "one extender does not support preemption",
        "one extender with no return victims and is ignorable",
        "one extender returns error and is ignorable",
        "one extender returns error and is not ignorable",
    ],
)
async def test_call_extenders(
    fake: FakeExtender, setup: str, want_nodes: list[str] | None, want_error: str | None
) -> None:
    env, candidates = call_env()
    ignorable = setup.endswith("ignorable")
    if setup == "supports":
        preempt_keeping(fake, "preempt", everything)
    elif setup.startswith("no victims"):
        fake.on("preempt", {"NodeNameToMetaVictims": {"node1": {"Pods": []}}})
    elif setup.startswith("error"):
        fake.on("preempt", b"boom", status=500)
    if setup != "none":
        verb = "" if setup == "no preempt verb" else "preempt"
        env.fw.handle.extenders = ExtenderSet([extender(fake, verb, ignorable=ignorable)])
    got, st = await env.pl.evaluator.call_extenders(pod("preemptor", prio=HIGH), candidates)
    if want_error is not None:
        assert (st.code, st.message()) == (Code.ERROR, want_error.format(url=fake.url))
        return
    assert st.is_success()
    assert [c.name for c in got] == want_nodes
    for c in got:
        assert [v.name for v in c.victims.pods] == ["victim"]
    if setup in ("none", "no preempt verb"):
        assert fake.requests == []


async def test_call_extenders_with_empty_victims_input_calls_nobody(fake: FakeExtender) -> None:
    env, _ = call_env()
    preempt_keeping(fake, "preempt", everything)
    env.fw.handle.extenders = ExtenderSet([extender(fake)])
    got, st = await env.pl.evaluator.call_extenders(pod("preemptor", prio=HIGH), [])
    assert (got, st.is_success(), fake.requests) == ([], True, [])


async def test_each_extender_sees_what_the_previous_one_left(fake: FakeExtender) -> None:
    env = Env(
        [node(n, VERY_LARGE) for n in ("node1", "node2")],
        [pod("a", node="node1", prio=LOW), pod("b", node="node2", prio=LOW)],
        [],
    )
    infos = {ni.name: ni for ni in env.snapshot.node_infos}
    candidates = [Candidate(n, Victims(list(infos[n].pods))) for n in ("node2", "node1")]
    preempt_keeping(fake, "first", node1_only)
    preempt_keeping(fake, "second", everything)
    env.fw.handle.extenders = ExtenderSet([extender(fake, "first"), extender(fake, "second")])
    got, st = await env.pl.evaluator.call_extenders(pod("preemptor", prio=HIGH), candidates)
    assert st.is_success() and [c.name for c in got] == ["node1"]
    first, second = fake.decoded("first"), fake.decoded("second")
    assert sorted(first[0]["NodeNameToVictims"]) == ["node1", "node2"]
    assert list(second[0]["NodeNameToVictims"]) == ["node1"]


# ---- TestPreempt, the extender cases ----------------------------------------------------------


def preempt_pods(p2_node: str) -> list[Any]:
    return [
        pod("p1.1", node="node1", prio=MID, req=SMALL),
        pod("p1.2", node="node1", prio=LOW, req=SMALL),
        pod("p2.1", node=p2_node, prio=MID, req=LARGE),
    ]


@pytest.mark.parametrize(
    ("nodes", "p2_node", "fakes", "want", "victims"),
    [
        (
            ["node1", "node2", "node3"],
            "node3",
            [("a", everything, {}), ("b", node1_only, {})],
            "node1",
            ["p1.1", "p1.2"],
        ),
        (["node1", "node2", "node3"], "node2", [("a", lambda n: False, {})], None, []),
        (
            ["node1", "node2", "node3"],
            "node2",
            [("a", None, {"ignorable": True}), ("b", node1_only, {})],
            "node1",
            ["p1.1", "p1.2"],
        ),
        (
            ["node1", "node2"],
            "node2",
            [
                ("a", node1_only, {"managed_resources": uninterested()}),
                ("b", everything, {}),
            ],
            "node2",
            ["p2.1"],
        ),
    ],
    ids=[
        "Scheduler extenders allow only node1, otherwise node3 would have been chosen",
        "Scheduler extenders do not allow any preemption",
        "One scheduler extender allows only node1, the other returns error but ignorable. "
        "Only node1 would be chosen",
        "One scheduler extender allows only node1, but it is not interested in given pod, "
        "otherwise node1 would have been chosen",
    ],
)
async def test_preempt_with_extenders(
    fake: FakeExtender,
    nodes: list[str],
    p2_node: str,
    fakes: list[tuple[str, Callable[[str], bool] | None, dict[str, Any]]],
    want: str | None,
    victims: list[str],
) -> None:
    env = Env([node(n, VERY_LARGE) for n in nodes], preempt_pods(p2_node), [FIT])
    exts = []
    for verb, keep, kw in fakes:
        if keep is None:
            fake.on(verb, b"boom", status=500)
        else:
            preempt_keeping(fake, verb, keep)
        exts.append(extender(fake, verb, **kw))
    env.fw.handle.extenders = ExtenderSet(exts)
    p = pod("p", prio=HIGH, req=VERY_LARGE, policy="PreemptLowerPriority")
    m = NodeToStatus(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
    for n in nodes:
        m.set(n, Status(Code.UNSCHEDULABLE))
    res, st = await env.fw.run_post_filter_async(env.state_for(p), p, m)
    if want is None:
        assert res is None
        assert (st.code, st.message()) == (
            Code.UNSCHEDULABLE,
            "preemption: no candidate node for preemption",
        )
        return
    assert st.is_success() and res is not None
    assert res.nominated_node_name == want
    assert sorted(v.name for v in res.victims) == victims


async def test_extenders_without_a_preempt_verb_leave_post_filter_synchronous(
    fake: FakeExtender,
) -> None:
    """Only an interested extender with a preemptVerb defers the choice."""
    env = Env([node(n, VERY_LARGE) for n in ("node1", "node2")], preempt_pods("node2"), [FIT])
    env.fw.handle.extenders = ExtenderSet(
        [
            extender(fake, ""),
            extender(fake, "preempt", managed_resources=uninterested()),
        ]
    )
    p = pod("p", prio=HIGH, req=VERY_LARGE)
    m = NodeToStatus(Status(Code.UNSCHEDULABLE))
    res, st = env.fw.run_post_filter(env.state_for(p), p, m)
    assert st.is_success() and res is not None
    assert (res.nominated_node_name, res.resume) == ("node2", None)
    assert fake.requests == []


# ---- whole simulations -----------------------------------------------------------------------


def running(name: str, node_name: str, priority: int) -> dict[str, Any]:
    m = pod_manifest(name, cpu="1")
    m["spec"].update(nodeName=node_name, priority=priority)
    return m


def urgent() -> dict[str, Any]:
    m = pod_manifest("urgent", cpu="1")
    m["spec"]["priority"] = 1000
    return m


# node-a's victim has the lower priority: without extenders it is the one preempted.
SIM_NODES = [node_manifest("node-a", cpu="1"), node_manifest("node-b", cpu="1")]
SIM_PODS = [running("low-a", "node-a", 0), running("mid-b", "node-b", 10), urgent()]


async def test_simulated_preemption_follows_the_extender(fake: FakeExtender) -> None:
    preempt_keeping(fake, "preempt", lambda n: n == "node-b")
    cfg = config([{"urlPrefix": fake.url, "preemptVerb": "preempt", "nodeCacheCapable": True}])
    metrics = SchedulerMetrics(seed=0, process_metrics=False)
    res, _ = await simulate(cfg, SIM_NODES, SIM_PODS, metrics=metrics)
    assert (res["urgent"].status, res["urgent"].node) == ("Scheduled", "node-b")
    # PostFilter, extenders included, is timed in these asynchronous cycles too.
    labels = {"extension_point": "PostFilter", "status": "Success", "profile": "ksched"}
    count = "scheduler_framework_extension_point_duration_seconds_count"
    assert metrics.registry.get_sample_value(count, labels) == 1
    assert res["urgent"].preempted == ["default/mid-b"]
    (args,) = fake.decoded("preempt")
    assert args["Pod"]["metadata"]["name"] == "urgent"
    assert args["NodeNameToMetaVictims"] == {
        "node-a": {"Pods": [{"UID": "uid-low-a"}], "NumPDBViolations": 0},
        "node-b": {"Pods": [{"UID": "uid-mid-b"}], "NumPDBViolations": 0},
    }


async def test_simulated_preemption_failing_extender(fake: FakeExtender) -> None:
    """Not ignorable: the attempt stays Unschedulable with the error, nobody is evicted;
    ignorable: skipped, and the in-tree choice stands."""
    fake.on("preempt", b"boom", status=500)
    ext = {"urlPrefix": fake.url, "preemptVerb": "preempt", "httpTimeout": "2s"}
    res, _ = await simulate(config([ext]), SIM_NODES, SIM_PODS, max_attempts=1)
    assert res["urgent"].status == "Unschedulable"
    assert res["urgent"].message.endswith(
        f"preemption: failed preempt with extender at URL {fake.url}/preempt, code 500"
    )
    assert res["urgent"].preempted == []
    res, _ = await simulate(config([{**ext, "ignorable": True}]), SIM_NODES, SIM_PODS)
    assert (res["urgent"].node, res["urgent"].preempted) == ("node-a", ["default/low-a"])
