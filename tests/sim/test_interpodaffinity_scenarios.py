"""Simulate scenarios for InterPodAffinity: spreading replicas, co-location, namespaces."""

from __future__ import annotations

from typing import Any

import yaml

from ksched.config import load_config_data
from ksched.plugins import default_registry
from ksched.sim import parse_cluster, simulate

REG = default_registry(entry_points=False)
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def node(name: str, zone: str = "") -> dict[str, Any]:
    alloc = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    labels = {HOST: name, **({ZONE: zone} if zone else {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def pod(
    name: str,
    labels: dict[str, str],
    affinity: dict[str, Any] | None = None,
    node_name: str = "",
    ns: str = "default",
    priority: int | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": "ksched",
        "containers": [
            {
                "name": "c",
                "image": "app:1",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            }
        ],
    }
    if affinity:
        spec["affinity"] = affinity
    if node_name:
        spec["nodeName"] = node_name
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": spec,
    }


def term(labels: dict[str, str], key: str, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def run(objs: list[dict[str, Any]], profile: dict[str, Any] | None = None) -> dict[str, Any]:
    cf = parse_cluster(yaml.safe_dump_all(objs), "scenario.yaml")
    raw: dict[str, Any] = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    if profile is not None:
        raw["profiles"] = [{"schedulerName": "ksched", **profile}]
    cfg, _ = load_config_data(raw, "config", None)
    return {r.name: r for r in simulate(cf, cfg, REG, seed=0)}


WEB = {"app": "web"}
ANTI_HOST = required("podAntiAffinity", term(WEB, HOST))
NO_POST_FILTER = {"plugins": {"postFilter": {"disabled": [{"name": "*"}]}}}


def test_anti_affinity_on_hostname_leaves_the_third_replica_pending() -> None:
    objs = [node("n1"), node("n2"), *(pod(f"web-{i}", WEB, ANTI_HOST) for i in range(3))]
    res = run(objs)
    assert {res["web-0"].node, res["web-1"].node} == {"n1", "n2"}
    assert res["web-2"].status == "Unschedulable"
    assert res["web-2"].message.startswith(
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    )
    # Without PostFilter the FitError is exactly upstream's, with no preemption part.
    res = run(objs, NO_POST_FILTER)
    assert res["web-2"].message == (
        "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
    )


def test_existing_pods_anti_affinity_is_symmetric() -> None:
    """A pod without terms may not join a node whose pod refuses it."""
    res = run(
        [
            node("n1"),
            node("n2"),
            pod(
                "loner-1",
                {"role": "loner"},
                required("podAntiAffinity", term({"app": "noisy"}, HOST)),
                node_name="n1",
            ),
            pod(
                "loner-2",
                {"role": "loner"},
                required("podAntiAffinity", term({"app": "noisy"}, HOST)),
                node_name="n2",
            ),
            pod("noisy", {"app": "noisy"}),
        ],
        NO_POST_FILTER,
    )
    assert res["noisy"].message == (
        "0/2 nodes are available: 2 node(s) didn't satisfy existing pods anti-affinity rules."
    )


def test_required_affinity_follows_an_existing_pod_to_its_zone() -> None:
    res = run(
        [
            node("a1", "a"),
            node("a2", "a"),
            node("b1", "b"),
            node("b2", "b"),
            pod("cache", {"app": "cache"}, node_name="b2"),
            *(
                pod(f"web-{i}", WEB, required("podAffinity", term({"app": "cache"}, ZONE)))
                for i in range(4)
            ),
            pod("orphan", WEB, required("podAffinity", term({"app": "db"}, ZONE))),
        ],
        NO_POST_FILTER,
    )
    assert {res[f"web-{i}"].node for i in range(4)} <= {"b1", "b2"}
    # No pod matches and the pod does not match its own term: affinity can never be met.
    assert res["orphan"].message == (
        "0/4 nodes are available: 4 node(s) didn't match pod affinity rules."
    )


def test_first_pod_of_a_self_affine_group_schedules_and_the_rest_follow() -> None:
    group = required("podAffinity", term(WEB, ZONE))
    res = run(
        [
            node("a1", "a"),
            node("b1", "b"),
            node("b2", "b"),
            *(pod(f"web-{i}", WEB, group) for i in range(4)),
        ]
    )
    zones = {str(res[f"web-{i}"].node)[0] for i in range(4)}
    assert all(res[f"web-{i}"].status == "Scheduled" for i in range(4))
    assert len(zones) == 1


def test_preferred_anti_affinity_spreads_replicas() -> None:
    spread = {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": term(WEB, HOST)}
            ]
        }
    }
    res = run(
        [node("n1"), node("n2"), node("n3"), *(pod(f"web-{i}", WEB, spread) for i in range(3))]
    )
    assert sorted(res[f"web-{i}"].node for i in range(3)) == ["n1", "n2", "n3"]


def test_namespace_selector_picks_pods_of_labelled_namespaces() -> None:
    ns = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "labels": {"team": team}},
        }
        for name, team in (("blue-a", "blue"), ("red-a", "red"))
    ]
    by_team = required(
        "podAffinity",
        term({"app": "db"}, ZONE, namespaceSelector={"matchLabels": {"team": "blue"}}),
    )
    by_name = required(
        "podAffinity",
        term(
            {"app": "db"},
            ZONE,
            namespaceSelector={"matchLabels": {"kubernetes.io/metadata.name": "unlisted"}},
        ),
    )
    res = run(
        [
            *ns,
            node("a1", "a"),
            node("b1", "b"),
            node("c1", "c"),
            pod("db-red", {"app": "db"}, node_name="a1", ns="red-a"),
            pod("db-blue", {"app": "db"}, node_name="b1", ns="blue-a"),
            pod("db-unlisted", {"app": "db"}, node_name="c1", ns="unlisted"),
            pod("app-blue", {"app": "x"}, by_team, ns="red-a"),
            pod("app-unlisted", {"app": "x"}, by_name),
        ],
        NO_POST_FILTER,
    )
    assert res["app-blue"].node == "b1"
    # A namespace without a manifest still carries kubernetes.io/metadata.name.
    assert res["app-unlisted"].node == "c1"


def test_preemption_evicts_the_pod_a_high_priority_anti_affinity_refuses() -> None:
    """The dry run's RemovePod must clear the anti-affinity count of the victim's node."""
    res = run(
        [
            node("n1"),
            node("n2"),
            pod("low-1", WEB, node_name="n1", priority=0),
            pod("low-2", WEB, node_name="n2", priority=10),
            pod("vip", {"app": "vip"}, required("podAntiAffinity", term(WEB, HOST)), priority=100),
        ]
    )
    vip = res["vip"]
    assert vip.status == "Scheduled", vip.message
    assert vip.node == "n1"
    assert vip.preempted == ["default/low-1"]


def test_pending_pod_is_requeued_when_a_matching_pod_is_bound() -> None:
    """The AssignedPod/Add hint: "web" fails first (no db anywhere), then db binds."""
    res = run(
        [
            node("a1", "a"),
            node("b1", "b"),
            pod("web", WEB, required("podAffinity", term({"app": "db"}, ZONE)), priority=10),
            pod("db", {"app": "db"}, priority=0),
        ],
        NO_POST_FILTER,
    )
    assert res["db"].status == "Scheduled"
    assert res["web"].status == "Scheduled"
    assert res["web"].node == res["db"].node  # one node per zone here
