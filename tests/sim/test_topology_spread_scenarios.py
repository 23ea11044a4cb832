"""Simulate scenarios for PodTopologySpread with the default profile: hard spreading over
zones and hostnames, the FitError when no domain may take the pod, minDomains, and the
soft preference for the emptier zone outweighing resource scores."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.sim.test_scenarios import node, pod, run

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
WEB = {"matchLabels": {"app": "web"}}


def web(name: str, constraints: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    p = pod(name, topologySpreadConstraints=constraints, **kw)
    p["metadata"]["labels"] = {"app": "web"}
    return p


def spread(key: str, when: str = "DoNotSchedule", **kw: Any) -> list[dict[str, Any]]:
    return [
        {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": when, "labelSelector": WEB, **kw}
    ]


def test_four_replicas_spread_two_and_two_over_two_zones() -> None:
    nodes = [
        node("a1", labels={ZONE: "a"}),
        node("a2", labels={ZONE: "a"}),
        node("a3", labels={ZONE: "a"}),
        node("b1", labels={ZONE: "b"}),
    ]
    res = run([*nodes, *(web(f"web-{i}", spread(ZONE)) for i in range(4))])
    zones = Counter(res[f"web-{i}"].node[0] for i in range(4))
    assert all(res[f"web-{i}"].status == "Scheduled" for i in range(4))
    assert zones == {"a": 2, "b": 2}


def test_hostname_spreading_puts_two_replicas_on_each_node() -> None:
    nodes = [node(n) for n in ("n1", "n2", "n3")]
    res = run([*nodes, *(web(f"web-{i}", spread(HOSTNAME)) for i in range(6))])
    assert Counter(r.node for r in res.values()) == {"n1": 2, "n2": 2, "n3": 2}


def test_fit_error_when_no_domain_may_take_the_pod() -> None:
    res = run(
        [
            node("a1", labels={ZONE: "a"}),
            node("b1", cpu="1", labels={ZONE: "b"}),
            node("nolabel"),
            web("old-1", spread(ZONE), node_name="a1"),
            web("old-2", spread(ZONE), node_name="a1"),
            pod("hog", cpu="950m", node_name="b1"),
            web("new", spread(ZONE)),
        ]
    )
    assert res["new"].status == "Unschedulable"
    assert res["new"].message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, "
        "1 node(s) didn't match pod topology spread constraints, "
        "1 node(s) didn't match pod topology spread constraints (missing required label). "
    )


def test_min_domains_caps_each_domain_while_too_few_exist() -> None:
    """With 2 zones and minDomains 3 the global minimum counts as 0: one pod per zone."""
    res = run(
        [
            node("a1", labels={ZONE: "a"}),
            node("b1", labels={ZONE: "b"}),
            *(web(f"w{i}", spread(ZONE, minDomains=3)) for i in range(3)),
        ]
    )
    placed = sorted(r.node for r in res.values() if r.status == "Scheduled")
    assert placed == ["a1", "b1"]
    (left,) = [r for r in res.values() if r.status == "Unschedulable"]
    assert left.message.startswith(
        "0/2 nodes are available: 2 node(s) didn't match pod topology spread constraints."
    )


def test_schedule_anyway_prefers_the_emptier_zone_over_resource_scores() -> None:
    objs = [
        node("a1", labels={ZONE: "a"}),
        node("a2", labels={ZONE: "a"}),
        node("b1", labels={ZONE: "b"}),
        web("old-1", spread(ZONE), node_name="a1", cpu="10m", memory="16Mi"),
        web("old-2", spread(ZONE), node_name="a2", cpu="10m", memory="16Mi"),
        pod("busy", cpu="1500m", memory="2Gi", node_name="b1"),
    ]
    res = run([*objs, web("new", spread(ZONE, "ScheduleAnyway"))])
    assert res["new"].node == "b1"
    # Without the constraint the resource scores pick the idle zone a.
    assert run([*objs, pod("plain")])["plain"].node in ("a1", "a2")


def test_pods_of_other_namespaces_do_not_count() -> None:
    other = web("elsewhere", spread(ZONE), node_name="a1")
    other["metadata"]["namespace"] = "other"
    res = run(
        [
            node("a1", labels={ZONE: "a"}),
            node("b1", labels={ZONE: "b"}),
            other,
            web("w0", spread(ZONE)),
            web("w1", spread(ZONE)),
        ]
    )
    assert sorted(res[n].node for n in ("w0", "w1")) == ["a1", "b1"]
