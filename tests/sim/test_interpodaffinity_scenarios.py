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
