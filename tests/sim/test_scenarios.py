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
