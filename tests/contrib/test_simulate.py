"""Each contrib plugin, discovered through its entry point, deciding placements in simulate."""

from __future__ import annotations

from typing import Any

import pytest
import structlog
import yaml

from ksched.plugins import default_registry
from ksched.sim import Simulation, parse_cluster

from ._sim import config, node, pod, podgroup, run

pytestmark = pytest.mark.usefixtures("contrib")

# Coscheduling as scheduler-plugins' sample config enables it: its own QueueSort
# instead of PrioritySort, plus PreFilter, PostFilter, Reserve and Permit.
GANG: dict[str, Any] = {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
}


def placed(res: dict[str, Any]) -> dict[str, str | None]:
    return {n: r.node for n, r in res.items()}


def assert_no_reservations(sim: Simulation) -> None:
    """Nothing assumed is left behind: every rejected member gave its resources back."""
    cache = sim.sched.cache
    assert cache.assumed == set()
    bound = {uid for uid, p in sim.cluster.pods.items() if p.node_name}
    assert set(cache.pod_states) <= bound
    assert len(sim.sched.waiting_pods) == 0


# ---- PodNameLength + ShortNodeName ------------------------------------------------------


def test_short_names_win_and_long_pod_names_stay_pending() -> None:
    _, res = run(
        [
            node("node-long-name"),
            node("n1"),
            node("node-b"),
            pod("pod1"),
            pod("test-pod"),
        ],
        config({"multiPoint": {"enabled": [{"name": "PodNameLength"}, {"name": "ShortNodeName"}]}}),
    )
    assert res["pod1"].status == "Scheduled" and res["pod1"].node == "n1"
    assert res["test-pod"].status == "Unschedulable"
    assert res["test-pod"].message == (
        "0/3 nodes are available: 3 pod name length 8 exceeds 4. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_pod_name_length_arg_and_short_node_name_weight() -> None:
    cfg = config(
        {
            "multiPoint": {
                "enabled": [{"name": "PodNameLength"}, {"name": "ShortNodeName", "weight": 5}]
            }
        },
        [{"name": "PodNameLength", "args": {"maxNameLength": 8}}],
    )
    _, res = run([node("aaaa"), node("bb"), pod("test-pod"), pod("too-long-1")], cfg)
    assert res["test-pod"].node == "bb"
    assert res["too-long-1"].message.startswith(
        "0/2 nodes are available: 2 pod name length 10 exceeds 8."
    )


# ---- Lucky ----------------------------------------------------------------------------------


LUCKY_CLUSTER = [node(f"n{i}") for i in range(6)] + [pod(f"p{i}") for i in range(12)]


def lucky(seed: int | None, **kw: Any) -> tuple[Simulation, dict[str, Any]]:
    args = {"seed": seed} if seed is not None else {}
    return run(
        LUCKY_CLUSTER,
        config({"multiPoint": {"enabled": [{"name": "Lucky"}]}}, [{"name": "Lucky", "args": args}]),
        **kw,
    )


def test_lucky_is_reproducible_with_a_seed_and_varies_across_seeds() -> None:
    first = placed(lucky(7)[1])
    assert placed(lucky(7)[1]) == first
    assert any(placed(lucky(s)[1]) != first for s in (8, 9, 10))
    # Scores are uniform and nodes pass half of the time, so the pods spread out.
    assert len({n for n in first.values() if n}) > 1


def test_lucky_explanation_agrees_with_the_coin_used_for_the_decision() -> None:
    _, res = lucky(3, explain=True)
    for r in res.values():
        if r.status != "Scheduled":
            continue
        assert r.explain is not None
        verdicts = {n: v["Lucky"] for n, v in r.explain["filter"].items()}
        assert verdicts[r.node] == "Success"
        unlucky = {n for n, v in verdicts.items() if v != "Success"}
        assert all(
            v == "Unschedulable: node(s) were unlucky" for n, v in verdicts.items() if n in unlucky
        )
        assert set(r.explain["score"]["Lucky"]) == set(verdicts) - unlucky


def test_lucky_rejection_message() -> None:
    _, res = run(
        [node("only"), *[pod(f"p{i}") for i in range(6)]],
        config(
            {"multiPoint": {"enabled": [{"name": "Lucky"}]}},
            [{"name": "Lucky", "args": {"seed": 1}}],
        ),
    )
    statuses = {r.status for r in res.values()}
    assert statuses == {"Scheduled", "Unschedulable"}
    for r in res.values():
        if r.status == "Unschedulable":
            assert r.message.startswith("0/1 nodes are available: 1 node(s) were unlucky.")


# ---- Sample ------------------------------------------------------------------------------


def test_sample_logs_what_it_sees_with_its_args() -> None:
    cfg = config(
        {"multiPoint": {"enabled": [{"name": "Sample"}]}},
        [
            {
                "name": "Sample",
                "args": {"favorite_color": "#326CE5", "favorite_number": 7, "thanks_to": "thockin"},
            }
        ],
    )
    with structlog.testing.capture_logs() as logs:
        _, res = run([node("n1"), node("n2"), pod("web")], cfg)
    assert res["web"].status == "Scheduled"
    mine = [e for e in logs if e.get("plugin") == "Sample"]
    points = [e["extension_point"] for e in mine]
    assert points[0] == "PreFilter" and points[-1] == "PreBind"
    assert points.count("Filter") == 2
    assert {e["node"] for e in mine if e["extension_point"] == "Filter"} == {"n1", "n2"}
    bind = mine[-1]
    assert bind["node"] == res["web"].node and bind["pod"] == "default/web"
    for e in mine:
        assert (e["favorite_color"], e["favorite_number"], e["thanks_to"], e["profile"]) == (
            "#326CE5",
            7,
            "thockin",
            "ksched",
        )


# ---- Coscheduling ------------------------------------------------------------------------


@pytest.mark.parametrize("pods_lister", [True, False])
def test_gang_that_fits_is_scheduled_whole(pods_lister: bool) -> None:
    sim, res = run(
        [
            node("n1", cpu="2"),
            node("n2", cpu="2"),
            podgroup("g", 3),
            pod("a", "1", group="g"),
            pod("b", "1", group="g"),
            pod("c", "1", group="g"),
        ],
        config(GANG),
        pods_lister=pods_lister,
    )
    assert {n: r.status for n, r in res.items()} == dict.fromkeys("abc", "Scheduled")
    assert_no_reservations(sim)


@pytest.mark.parametrize("pods_lister", [True, False])
def test_gang_with_room_for_two_of_three_schedules_none_and_frees_the_room(
    pods_lister: bool,
) -> None:
    sim, res = run(
        [
            node("n1", cpu="2"),
            podgroup("g", 3),
            pod("a", "1", group="g"),
            pod("b", "1", group="g"),
            pod("c", "1", group="g"),
            pod("other", "1"),
        ],
        config(GANG),
        pods_lister=pods_lister,
    )
    # All or nothing: two members fitted and were parked at Permit, the third fitted
    # nowhere, so PostFilter rejected the parked two and their cpu went to "other".
    assert {n: r.status for n in "abc" for r in [res[n]]} == dict.fromkeys("abc", "Unschedulable")
    assert res["other"].status == "Scheduled" and res["other"].node == "n1"
    assert "PodGroup default/g gets rejected due to Pod" in " ".join(res[n].message for n in "abc")
    assert "optimistic rejection in PostFilter" in {res[n].message for n in "abc"}
    assert_no_reservations(sim)
    assert sim.sched.cache.nodes["n1"].requested.milli_cpu == 1000


def test_gang_times_out_and_gives_its_reservations_back() -> None:
    # The third member belongs to another scheduler: it counts towards minMember at
    # PreFilter but never arrives at Permit, so the two parked members time out.
    sim, res = run(
        [
            node("n1", cpu="2"),
            podgroup("g", 3, timeout=10),
            pod("a", "1", group="g"),
            pod("b", "1", group="g"),
            pod("c", "1", group="g", scheduler="someone-else"),
            pod("big", "2"),
        ],
        config(GANG),
    )
    assert res["a"].status == res["b"].status == "Unschedulable"
    assert {res["a"].message, res["b"].message} <= {
        "rejected due to timeout after waiting 10s at plugin Coscheduling",
        "rejection in Unreserve",
    }
    # "big" needed the whole node: it fits once the timed-out members let go.
    assert res["big"].status == "Scheduled" and res["big"].node == "n1"
    assert sim.clock.now() >= 10
    assert_no_reservations(sim)


def test_queue_sort_keeps_each_gang_together() -> None:
    objs = [
        node("n1", cpu="3"),
        podgroup("first", 3, created="2024-01-01T00:00:00Z"),
        podgroup("second", 2, created="2024-01-02T00:00:00Z"),
        # Interleaved on purpose: by file order "second" would complete first.
        pod("a1", "1", group="first"),
        pod("b1", "1", group="second"),
        pod("a2", "1", group="first"),
        pod("b2", "1", group="second"),
        pod("a3", "1", group="first"),
    ]
    sim, res = run(objs, config(GANG))
    assert {n for n, r in res.items() if r.status == "Scheduled"} == {"a1", "a2", "a3"}
    assert_no_reservations(sim)
    # Priority comes before group age.
    for o in objs:
        if o["kind"] == "Pod" and o["metadata"]["name"].startswith("b"):
            o["spec"]["priority"] = 10
    sim, res = run(objs, config(GANG))
    assert {n for n, r in res.items() if r.status == "Scheduled"} == {"b1", "b2"}


@pytest.mark.parametrize("pods_lister", [True, False])
def test_prefilter_rejects_a_group_with_too_few_pods(pods_lister: bool) -> None:
    _, res = run(
        [node("n1"), podgroup("g", 3), pod("a", group="g"), pod("b", group="g")],
        config(GANG),
        pods_lister=pods_lister,
    )
    for n in "ab":
        assert res[n].status == "Unschedulable"
        assert res[n].message.startswith(
            f"0/1 nodes are available: pre-filter pod {n} cannot find enough sibling pods, "
            "current pods number: 2, minMember of group: 3."
        )


def test_pod_of_a_missing_group_is_rejected_at_permit_and_others_are_untouched() -> None:
    _, res = run([node("n1"), pod("lost", group="nowhere"), pod("plain")], config(GANG))
    assert res["lost"].status == "Unschedulable" and res["lost"].message == "PodGroup not found"
    assert res["plain"].status == "Scheduled"


def test_min_resources_checked_at_prefilter() -> None:
    _, res = run(
        [
            node("n1", cpu="2"),
            podgroup("g", 2, minResources={"cpu": "3"}),
            pod("a", group="g"),
            pod("b", group="g"),
        ],
        config(GANG),
    )
    assert res["a"].message.startswith("0/1 nodes are available: resource gap: cpu: 1000m.")


# ---- the listers simulate derives from watch_resources ----------------------------------


def test_simulate_fills_the_listers_coscheduling_watches_from_the_file() -> None:
    """Coscheduling's ``watch_resources`` (scheduler-plugins' PodGroups) is what gives it
    a lister in simulate: the file's objects of that group and resource, any version, raw;
    not scheduling.k8s.io's PodGroups (typed, their own lister), and nothing for a profile
    without a plugin watching them."""
    objs = [
        node("n1"),
        podgroup("g1", 2),
        {**podgroup("g2", 1), "apiVersion": "scheduling.x-k8s.io/v1beta1"},
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "native", "namespace": "default"},
            "spec": {"schedulingPolicy": {"basic": {}}},
        },
    ]
    cf = parse_cluster(yaml.safe_dump_all(objs), "c.yaml")
    sim = Simulation(cf, config(GANG), default_registry())
    groups = sim.sched.frameworks["ksched"].handle.listers["podgroups"]
    assert sorted(groups) == ["default/g1", "default/g2"]
    assert groups["default/g1"]["spec"] == {"minMember": 2}
    plain = Simulation(cf, config({}), default_registry())
    assert "podgroups" not in plain.sched.frameworks["ksched"].handle.listers
