"""Simulate scenarios combining the node-local default plugins (issue: default plugins part 1)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from ksched.config import load_config_data
from ksched.plugins import default_registry
from ksched.sim import ClusterFileError, parse_cluster, simulate

REG = default_registry(entry_points=False)


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    alloc: dict[str, Any] = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def pod(
    name: str, cpu: str = "100m", memory: str = "128Mi", node_name: str = "", **spec: Any
) -> dict[str, Any]:
    c: dict[str, Any] = {
        "name": "c",
        "image": "app:1",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    if "ports" in spec:
        c["ports"] = spec.pop("ports")
    if "gpu" in spec:
        c["resources"]["requests"]["nvidia.com/gpu"] = spec.pop("gpu")
    s: dict[str, Any] = {"schedulerName": "ksched", "containers": [c], **spec}
    if node_name:
        s["nodeName"] = node_name
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": s,
    }


def run(
    objs: list[dict[str, Any]], config: dict[str, Any] | None = None, seed: int = 0
) -> dict[str, Any]:
    cf = parse_cluster(yaml.safe_dump_all(objs), "scenario.yaml")
    raw = config or {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
    }
    cfg, _ = load_config_data(raw, "config", None)
    return {r.name: r for r in simulate(cf, cfg, REG, seed=seed)}


GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def test_tainted_gpu_node_only_takes_the_tolerating_gpu_pod() -> None:
    res = run(
        [
            node("cpu-1"),
            node("cpu-2"),
            node("gpu-1", taints=[GPU_TAINT], extra={"nvidia.com/gpu": "2"}),
            pod(
                "trainer",
                gpu="1",
                tolerations=[
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                ],
            ),
            pod("web"),
            pod("gpu-no-toleration", gpu="1"),
        ]
    )
    assert res["trainer"].node == "gpu-1"
    assert res["web"].node in ("cpu-1", "cpu-2")
    assert res["gpu-no-toleration"].status == "Unschedulable"
    assert res["gpu-no-toleration"].message == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), "
        "2 Insufficient nvidia.com/gpu. no new claims to deallocate, preemption: 0/3 nodes are available: "
        "3 Preemption is not helpful for scheduling."
    )


def test_zone_affinity_required_and_preferred() -> None:
    zone = "topology.kubernetes.io/zone"
    res = run(
        [
            node("a1", labels={zone: "a"}),
            node("b1", labels={zone: "b"}),
            node("c1", labels={zone: "c"}),
            pod(
                "must-b",
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": zone, "operator": "In", "values": ["b"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
            ),
            pod(
                "prefer-c",
                affinity={
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 100,
                                "preference": {
                                    "matchExpressions": [
                                        {"key": zone, "operator": "In", "values": ["c"]}
                                    ]
                                },
                            }
                        ]
                    }
                },
            ),
            pod("must-z", nodeSelector={zone: "z"}),
        ]
    )
    assert res["must-b"].node == "b1"
    assert res["prefer-c"].node == "c1"
    assert res["must-z"].message == (
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_host_port_clash() -> None:
    res = run(
        [
            node("n1"),
            node("n2"),
            pod("running", node_name="n1", ports=[{"containerPort": 80, "hostPort": 8080}]),
            pod("wants-8080", ports=[{"containerPort": 80, "hostPort": 8080}]),
            pod("wants-8080-too", ports=[{"containerPort": 80, "hostPort": 8080}]),
        ]
    )
    assert res["wants-8080"].node == "n2"
    assert res["wants-8080-too"].status == "Unschedulable"
    assert res["wants-8080-too"].message == (
        "0/2 nodes are available: 2 node(s) didn't have free ports for the requested pod ports. "
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    )


def test_most_allocated_bin_packing_profile_fills_one_node_first() -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "ksched",
                "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
                "pluginConfig": [
                    {
                        "name": "NodeResourcesFit",
                        "args": {"scoringStrategy": {"type": "MostAllocated"}},
                    }
                ],
            }
        ],
    }
    objs = [node("n1"), node("n2"), node("n3"), pod("seed", cpu="1", memory="1Gi", node_name="n2")]
    objs += [pod(f"p{i}", cpu="500m", memory="512Mi") for i in range(4)]
    packed = run(objs, config)
    assert {packed[f"p{i}"].node for i in range(4)} == {"n2"}
    spread = run(objs)  # the default LeastAllocated spreads instead
    assert len({spread[f"p{i}"].node for i in range(4)}) > 1


def test_fit_error_lists_every_reason_sorted() -> None:
    res = run(
        [
            node("small-1", cpu="1", memory="1Gi"),
            node("small-2", cpu="1", memory="1Gi"),
            {**node("cordoned", cpu="64", memory="64Gi"), "spec": {"unschedulable": True}},
            pod("big", cpu="8", memory="4Gi"),
        ]
    )
    assert res["big"].message == (
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu, 2 Insufficient memory. "
        "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_a_malformed_node_is_refused_as_the_api_server_refuses_it() -> None:
    """A cluster file is input the API server would have validated: a quantity it cannot
    parse is an error naming the object and the field, not a node that rejects pods (the
    daemon's informers still tolerate one: tests/api/test_resources.py)."""
    bad = node("bad", cpu="lots")
    with pytest.raises(ClusterFileError) as e:
        run([bad, node("good", cpu="1"), pod("p1", cpu="500m")])
    assert str(e.value).startswith(
        'scenario.yaml: Node bad: status.capacity[cpu]: Invalid value: "lots": quantities '
        "must match the regular expression"
    )
    assert str(e.value).endswith("(and 1 more)")  # allocatable too


def test_malformed_selector_operator_only_fails_that_pod() -> None:
    res = run(
        [
            node("n1"),
            pod(
                "bad-op",
                affinity={
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": "x", "operator": "Sometimes", "values": ["y"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
            ),
            pod("ok"),
        ]
    )
    assert res["ok"].node == "n1"
    assert res["bad-op"].status == "Unschedulable"
    assert "Pod default/bad-op" in res["bad-op"].message
    assert "operator" in res["bad-op"].message and "Sometimes" in res["bad-op"].message


def test_pod_level_requests_decide_fit_not_the_container_sum() -> None:
    """A pod-level request above its containers' sum does not fit a node the sum fits, and
    a placed pod takes its pod-level request (not its containers') from the node."""
    res = run(
        [
            node("n1", cpu="1"),
            pod("big", cpu="500m", resources={"requests": {"cpu": "2"}}),
            pod("small", cpu="500m"),
        ]
    )
    assert res["big"].status == "Unschedulable"
    assert res["big"].message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert res["small"].node == "n1"
    res = run(
        [
            node("n1", cpu="1"),
            pod("placed", cpu="100m", node_name="n1", resources={"requests": {"cpu": "900m"}}),
            pod("next", cpu="500m"),
        ]
    )
    assert res["next"].status == "Unschedulable"
    assert res["next"].message.startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_explaining_does_not_change_where_a_nominated_pod_goes() -> None:
    """A pod nominated by an earlier preemption tries its node alone, explain or not (the
    differential harness runs ksched with explanations on)."""
    nominee = pod("nominee", cpu="500m")
    nominee["status"] = {"nominatedNodeName": "small"}
    objs = [node("small", cpu="1"), node("big", cpu="16"), nominee]
    cf = parse_cluster(yaml.safe_dump_all(objs), "scenario.yaml")
    cfg, _ = load_config_data(
        {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"},
        "config",
        None,
    )
    for explain in (False, True):
        (res,) = simulate(cf, cfg, REG, explain=explain)
        assert res.node == "small", explain
    assert res.explain is not None and set(res.explain["filter"]) == {"small"}
