"""DRA in ``ksched simulate``: the simulator plays the resourceclaim controller (claims
from templates), DynamicResources allocates devices from the file's ResourceSlices and
records allocation and reservedFor; pods whose claims cannot be met stay pending with
upstream's message."""

from __future__ import annotations

from typing import Any

import anyio
import yaml

from ksched.config import load_config_data
from ksched.plugins import default_registry
from ksched.sim import parse_cluster
from ksched.sim.simulator import Simulation
from tests.sim.test_scenarios import node, pod, run

DRIVER = "gpu.example.com"


def device_class(name: str = "gpu", expr: str = f'device.driver == "{DRIVER}"') -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expr}}]},
    }


def gpu_slice(node_name: str, *gpus: tuple[str, str, str]) -> dict[str, Any]:
    """A node's GPUs: (name, memory, pcieRoot)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-gpus"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": n,
                    "attributes": {"pcieRoot": {"string": root}},
                    "capacity": {"memory": {"value": mem}},
                }
                for n, mem, root in gpus
            ],
        },
    }


def template(name: str, count: int = 1, selector: str = "", **extra: Any) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu", "count": count}
    if selector:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}], **extra}}},
    }


def claiming(name: str, tpl: str) -> dict[str, Any]:
    return pod(name, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": tpl}])


CLUSTER = [
    node("n1"),
    node("n2"),
    device_class(),
    gpu_slice("n1", ("gpu-0", "16Gi", "r0"), ("gpu-1", "16Gi", "r1")),
    gpu_slice("n2", ("gpu-0", "80Gi", "r0"), ("gpu-1", "80Gi", "r0"), ("gpu-2", "80Gi", "r0")),
    template("one"),
    template(
        "big",
        selector=f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0',
    ),
    template("pair", count=2, constraints=[{"matchAttribute": f"{DRIVER}/pcieRoot"}]),
    template("five", count=5),
]


def test_claims_from_templates_are_allocated_where_devices_fit() -> None:
    res = run([*CLUSTER, claiming("big", "big"), claiming("pair", "pair"), pod("plain")])
    assert res["big"].node == "n2"
    assert res["pair"].node == "n2"  # only n2's GPUs share a PCIe root
    assert res["plain"].node is not None


def test_unsatisfiable_claim_says_cannot_allocate_all_claims() -> None:
    res = run([*CLUSTER, claiming("five", "five")])
    r = res["five"]
    assert r.node is None and r.status == "Unschedulable"
    assert r.message.startswith("0/2 nodes are available: 2 cannot allocate all claims.")
    assert "no new claims to deallocate" not in r.message  # the pod has claims


def test_devices_are_never_handed_out_twice() -> None:
    pods = [claiming(f"p{i}", "one") for i in range(6)]
    res = run([*CLUSTER, *pods])
    placed = [r.node for r in res.values() if r.node]
    assert sorted(placed) == ["n1", "n1", "n2", "n2", "n2"]  # five GPUs in all
    (left,) = [r for r in res.values() if r.node is None]
    assert "cannot allocate all claims" in left.message


def test_claim_status_gets_allocation_and_reserved_for() -> None:
    cf = parse_cluster(yaml.safe_dump_all([*CLUSTER, claiming("big", "big")]), "f.yaml")
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg, _ = load_config_data(raw, "config", None)
    sim = Simulation(cf, cfg, default_registry(entry_points=False))
    (res,) = anyio.run(sim.run)
    claim = sim.cluster.claim_controller.get("default", "big-gpu")
    assert claim is not None and res.node == "n2"
    alloc = claim.status.allocation
    assert alloc is not None
    assert [(r.request, r.driver, r.pool) for r in alloc.devices.results] == [("gpu", DRIVER, "n2")]
    assert alloc.node_selector is not None
    assert alloc.node_selector.node_selector_terms[0].match_fields[0].values == ["n2"]
    assert [r.name for r in claim.status.reserved_for] == ["big"]
    assert claim.status.reserved_for[0].resource == "pods"
    assert "resource.kubernetes.io/delete-protection" in claim.metadata.finalizers
    owner = claim.metadata.owner_references[0]
    assert owner.kind == "Pod" and owner.controller and owner.uid == "sim-default-big"


def test_missing_template_leaves_pod_pending_with_upstream_message() -> None:
    res = run([*CLUSTER, claiming("lost", "no-such-template")])
    r = res["lost"]
    assert r.node is None
    assert 'pod "default/lost": resource claim not found' in r.message


def test_missing_device_class() -> None:
    objs = [
        node("n1"),
        gpu_slice("n1", ("gpu-0", "16Gi", "r0")),
        template("one"),
        claiming("p", "one"),
    ]
    r = run(objs)["p"]
    assert r.node is None
    assert "request gpu: device class gpu does not exist" in r.message


def test_an_all_request_split_by_a_constraint_errs_only_where_filters_reach_it() -> None:
    """Upstream's allocator errs when an "All" request's devices break a matchAttribute
    constraint; the cycle fails only if some node got that far (its earlier Filter
    plugins passed), as kube-scheduler runs a node's Filters in order."""
    split = template("split", constraints=[{"matchAttribute": f"{DRIVER}/pcieRoot"}])
    exactly = split["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    exactly["allocationMode"] = "All"
    exactly.pop("count")
    tainted = node("n1")
    tainted["spec"] = {"taints": [{"key": "k", "effect": "NoSchedule"}]}
    fine = [node("n2"), gpu_slice("n2", ("gpu-0", "80Gi", "r0"), ("gpu-1", "80Gi", "r0"))]
    mixed = [gpu_slice("n1", ("gpu-0", "16Gi", "r0"), ("gpu-1", "16Gi", "r1"))]
    res = run([tainted, *mixed, *fine, device_class(), split, claiming("p", "split")])
    assert res["p"].node == "n2"  # n1's error never runs: its taint rejected it first
    res = run([node("n1"), *mixed, *fine, device_class(), split, claiming("p", "split")])
    assert res["p"].status == "Error"
    assert res["p"].message == (
        'running "DynamicResources" filter plugin: claim default/p-gpu, request gpu: cannot '
        f"add device {DRIVER}/n1/gpu-1 because a claim constraint would not be satisfied"
    )


def test_binding_conditions_nobody_sets_time_out_on_the_virtual_clock() -> None:
    """No driver sets the device's binding condition: PreBind waits bindingTimeout (10m)
    on the simulation's clock, parked, so the run takes virtual time, not real time; the
    next attempt finds the claim timed out, and PostFilter deallocates it."""
    bc_slice = gpu_slice("n1", ("gpu-0", "16Gi", "r0"))
    bc_slice["spec"]["devices"][0]["bindingConditions"] = ["Attached"]
    cf = parse_cluster(
        yaml.safe_dump_all(
            [node("n1"), device_class(), bc_slice, template("one"), claiming("p", "one")]
        ),
        "f.yaml",
    )
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg, _ = load_config_data(raw, "config", None)
    sim = Simulation(cf, cfg, default_registry(entry_points=False), max_attempts_per_pod=3)
    (res,) = anyio.run(sim.run)
    assert res.node is None
    assert "resourceclaim not available on the node" in res.message
    assert "deallocation of ResourceClaim completed" in res.message
    assert sim.clock.now() >= 600


def test_shared_device_goes_to_claims_while_its_capacity_lasts() -> None:
    """Consumable capacity in simulate: a device allowing multiple allocations serves
    two 2Gi claims of its 4Gi; the third pod finds none left; --explain's device list
    names both claims holding it."""
    shared = gpu_slice("n1", ("gpu-0", "4Gi", "r0"))
    shared["spec"]["devices"][0]["allowMultipleAllocations"] = True
    tpl = template("share")
    tpl["spec"]["spec"]["devices"]["requests"][0]["exactly"]["capacity"] = {
        "requests": {"memory": "2Gi"}
    }
    objs = [node("n1"), device_class(), shared, tpl]
    objs += [claiming(n, "share") for n in ("a", "b", "c")]
    cf = parse_cluster(yaml.safe_dump_all(objs), "f.yaml")
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg, _ = load_config_data(raw, "config", None)
    sim = Simulation(cf, cfg, default_registry(entry_points=False))
    res = {r.name: r for r in anyio.run(sim.run)}
    assert [res[n].node for n in ("a", "b", "c")] == ["n1", "n1", None]
    assert "cannot allocate all claims" in res["c"].message
    holders = sim.cluster.claim_controller.devices_by_node()["n1"][f"{DRIVER}/n1/gpu-0"]
    assert holders == "default/a-gpu, default/b-gpu"
    claim = sim.cluster.claim_controller.get("default", "a-gpu")
    assert claim is not None and claim.status.allocation is not None
    (r,) = claim.status.allocation.devices.results
    assert r.consumed_capacity == {"memory": "2Gi"} and r.share_id


def _allocated_on(node_name: str) -> dict[str, Any]:
    """A claim allocated on ``node_name`` that nothing reserves (its pod gone)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "held", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": "gpu-0"}
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node_name]}
                            ]
                        }
                    ]
                },
            }
        },
    }


def _held_claim_after(first: dict[str, Any]) -> tuple[Any, Any]:
    """Simulate ``first`` beside an unschedulable n2 holding the claim; the pod's result
    and the claim at the end."""
    blocked = node("n2")
    blocked["spec"] = {"unschedulable": True}
    objs = [
        first,
        blocked,
        device_class(),
        gpu_slice("n2", ("gpu-0", "16Gi", "r0")),
        _allocated_on("n2"),
        pod("p", resourceClaims=[{"name": "gpu", "resourceClaimName": "held"}]),
    ]
    cf = parse_cluster(yaml.safe_dump_all(objs), "f.yaml")
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg, _ = load_config_data(raw, "config", None)
    sim = Simulation(cf, cfg, default_registry(entry_points=False), max_attempts_per_pod=1)
    (res,) = anyio.run(sim.run)
    return res, sim.cluster.claim_controller.get("default", "held")


def test_post_filter_deallocates_only_claims_filter_found_unavailable() -> None:
    """Upstream's Filter (which remembers unavailable claims for PostFilter) never runs on
    a node an earlier plugin rejected: with every node rejected before DynamicResources,
    the allocated claim stays; ksched's Filter over all nodes must not count the others."""
    tainted = node("n1")
    tainted["spec"] = {"taints": [{"key": "k", "effect": "NoSchedule"}]}
    res, claim = _held_claim_after(tainted)
    assert res.node is None
    assert "deallocation of ResourceClaim completed" not in res.message
    assert claim.status.allocation is not None
    res, claim = _held_claim_after(node("n1"))  # Filter reaches n1: not available there
    assert "1 resourceclaim not available on the node" in res.message
    assert "deallocation of ResourceClaim completed" in res.message
    assert claim.status.allocation is None


def _reserved_by_low(owned: bool) -> dict[str, Any]:
    """``_allocated_on("n1")`` as the scheduler left it for the bound pod ``low``."""
    claim = _allocated_on("n1")
    ref = {"resource": "pods", "name": "low", "uid": "sim-default-low"}
    claim["status"]["reservedFor"] = [ref]
    claim["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
    if owned:
        owner = {"apiVersion": "v1", "kind": "Pod", "name": "low", "uid": ref["uid"]}
        claim["metadata"]["ownerReferences"] = [{**owner, "controller": True}]
    return claim


def _preempt_claim_holder(owned: bool) -> tuple[Any, Any]:
    """A high-priority pod with a claim preempting (for memory) the bound ``low``, whose
    claim holds one of n1's two GPUs; the preemptor's result and that claim at the end."""
    held = [{"name": "gpu", "resourceClaimName": "held"}]
    high = claiming("high", "one")
    high["spec"] = {**high["spec"], "priority": 1000}
    high["spec"]["containers"][0]["resources"]["requests"]["memory"] = "600Mi"
    objs = [
        node("n1", memory="1Gi"),
        device_class(),
        gpu_slice("n1", ("gpu-0", "16Gi", "r0"), ("gpu-1", "16Gi", "r0")),
        template("one"),
        _reserved_by_low(owned),
        pod("low", memory="600Mi", node_name="n1", priority=0, resourceClaims=held),
        high,
    ]
    cf = parse_cluster(yaml.safe_dump_all(objs), "f.yaml")
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg, _ = load_config_data(raw, "config", None)
    sim = Simulation(cf, cfg, default_registry(entry_points=False))
    res = {r.name: r for r in anyio.run(sim.run)}
    return res["high"], sim.cluster.claim_controller.get("default", "held")


def test_a_gone_pods_claims_are_released_as_the_resourceclaim_controller_does() -> None:
    """Seed 74119: a preemption victim's devices must come free once it is gone (upstream's
    resourceclaim controller drops the reservation and deallocates; a claim generated for
    the pod is deleted), or the preemptor can never have them."""
    high, claim = _preempt_claim_holder(owned=True)
    assert high.node == "n1" and high.preempted == ["default/low"]
    assert claim is None  # generated for low: deleted
    high, claim = _preempt_claim_holder(owned=False)
    assert high.node == "n1"
    assert claim is not None and claim.status.allocation is None
    assert claim.status.reserved_for == [] and claim.status.devices == []
    assert "resource.kubernetes.io/delete-protection" not in claim.metadata.finalizers
