"""The ``drabinding`` group and the DRA driver both replays play (no control plane)."""

from __future__ import annotations

import json
from typing import Any, cast

import anyio
import pytest

from ksched.sim import Simulation, parse_cluster
from ksched.testing.differential import generate
from ksched.testing.differential.driver import (
    DRIVER_DELAY,
    FAILED_REASON,
    READY_REASON,
    device_conditions,
    driver_status,
)
from ksched.testing.differential.generator import (
    ATTACH_FAILED,
    ATTACHED,
    BIND_DRIVER,
    FABRIC_READY,
)
from ksched.testing.differential.local import KschedReplay, binding_driver, scenario_file

NOW = "2026-01-01T00:00:00Z"


def _result(device: str, **extra: Any) -> dict[str, Any]:
    return {
        "request": "a0",
        "driver": BIND_DRIVER,
        "pool": "p",
        "device": device,
        "bindingConditions": [ATTACHED, FABRIC_READY],
        "bindingFailureConditions": [ATTACH_FAILED],
        **extra,
    }


def _claim(results: list[dict[str, Any]], devices: list[Any] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {"allocation": {"devices": {"results": results}}}
    if devices is not None:
        status["devices"] = devices
    return {"metadata": {"name": "c", "namespace": "ns"}, "status": status}


def test_driver_sets_every_binding_condition_of_a_good_device() -> None:
    conds = device_conditions(_result("dev-0"), NOW)
    assert [(c["type"], c["status"], c["reason"]) for c in conds] == [
        (ATTACHED, "True", READY_REASON),
        (FABRIC_READY, "True", READY_REASON),
    ]
    assert all(c["lastTransitionTime"] == NOW for c in conds)


def test_driver_fails_a_bad_device_by_its_first_failure_condition() -> None:
    conds = device_conditions(_result("bad-1"), NOW)
    assert [(c["type"], c["status"], c["reason"]) for c in conds] == [
        (ATTACH_FAILED, "True", FAILED_REASON)
    ]
    # without failure conditions a bad device can only report its binding conditions
    plain = device_conditions(_result("bad-1", bindingFailureConditions=[]), NOW)
    assert [c["type"] for c in plain] == [ATTACHED, FABRIC_READY]


def test_driver_status_adds_only_missing_entries() -> None:
    plain = {"request": "a1", "driver": BIND_DRIVER, "pool": "p", "device": "dev-9"}
    claim = _claim([_result("dev-0"), plain, _result("bad-1", shareID="s1")])
    devices = driver_status(claim, NOW)
    assert devices is not None
    assert [(d["device"], d.get("shareID")) for d in devices] == [("dev-0", None), ("bad-1", "s1")]
    # reported already: nothing more to write
    assert (
        driver_status(_claim(claim["status"]["allocation"]["devices"]["results"], devices), NOW)
        is None
    )
    other = {"driver": "x", "pool": "p", "device": "d", "conditions": []}
    kept = driver_status(_claim([_result("dev-0")], [other]), NOW)
    assert kept is not None and kept[0] == other and kept[1]["device"] == "dev-0"
    assert driver_status({"metadata": {}, "status": {}}, NOW) is None


def _bind_objects(seeds: range = range(20)) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    objects: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for seed in seeds:
        sc = generate(seed, ["drabinding"])
        objects += sc.objects
        pods += [p.pod for p in sc.pending if "drabinding" in p.groups]
    return objects, pods


def test_drabinding_group_covers_conditions_failures_and_binds_to_node() -> None:
    objects, pods = _bind_objects()
    slices = [o["spec"] for o in objects if o["kind"] == "ResourceSlice"]
    devices = [d for s in slices for d in s["devices"]]
    assert any(d.get("bindingConditions") == [ATTACHED] for d in devices)
    assert any(d.get("bindingConditions") == [ATTACHED, FABRIC_READY] for d in devices)
    assert any("bindingConditions" not in d for d in devices)
    bad = [d for d in devices if d["name"].startswith("bad-")]
    assert bad and all(d["bindingFailureConditions"] == [ATTACH_FAILED] for d in bad)
    assert all(not d["attributes"]["healthy"]["bool"] for d in bad)
    # bindsToNode only where a device is not a node's own
    binds = [(s, d) for s in slices for d in s["devices"] if d.get("bindsToNode")]
    assert binds and all(s.get("allNodes") for s, _ in binds)
    assert any(s.get("nodeName") for s in slices)
    # claims from templates only select devices that bind (their names are random)
    for o in objects:
        if o["kind"] == "ResourceClaimTemplate":
            for r in o["spec"]["spec"]["devices"]["requests"]:
                assert "healthy" in r["exactly"]["selectors"][0]["cel"]["expression"]
    refs = {r["name"] for p in pods for r in p["spec"]["resourceClaims"]}
    assert refs == {"attach", "attach-shared"}


def test_drabinding_leaves_the_other_groups_scenarios_alone() -> None:
    """Its own random source: adding it changes nothing the other groups drew."""
    for seed in range(5):
        alone = generate(seed, ["dra", "taints"])
        both = generate(seed, ["dra", "taints", "drabinding"])
        kept = [o for o in both.objects if "attach" not in json.dumps(o)]
        assert kept == alone.objects
        assert [p.name for p in both.pending] == [p.name for p in alone.pending]
        for a, b in zip(alone.pending, both.pending, strict=True):
            claims = [
                r for r in b.pod["spec"].get("resourceClaims", []) if "attach" not in r["name"]
            ]
            assert claims == a.pod["spec"].get("resourceClaims", [])


def _state(device: str) -> list[dict[str, Any]]:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    cls = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "attach"},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{BIND_DRIVER}"'}}]},
    }
    dev = {
        "name": device,
        "bindingConditions": [ATTACHED],
        "bindingFailureConditions": [ATTACH_FAILED],
    }
    slc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "n1-attach"},
        "spec": {
            "driver": BIND_DRIVER,
            "nodeName": "n1",
            "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
            "devices": [dev],
        },
    }
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "shared", "namespace": "ns", "uid": "c1"},
        "spec": {
            "devices": {"requests": [{"name": "a0", "exactly": {"deviceClassName": "attach"}}]}
        },
    }
    return [node, cls, slc, claim]


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "p1"},
        "spec": {
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "a"}]}}],
            "resourceClaims": [{"name": "a", "resourceClaimName": "shared"}],
        },
    }


def test_ksched_replay_binds_once_the_driver_reports_the_device() -> None:
    out = KschedReplay()(_state("dev-0"), _pod())
    assert (out.status, out.node) == ("Scheduled", "n1")


def test_ksched_replay_fails_the_binding_of_a_failing_device() -> None:
    """The outcome is the first failure, as the kube replay reports it (ksched's
    simulator goes on retrying: deallocation, another binding failure)."""
    out = KschedReplay()(_state("bad-0"), _pod())
    assert (out.status, out.node, out.nominated) == ("Error", None, "")
    assert out.message == (
        'running PreBind plugin "DynamicResources": device binding failed: claim=shared, '
        f'reason={FAILED_REASON}, message="fabric attach failed"'
    )
    assert out.condition is not None and out.condition["reason"] == "SchedulerError"


def _simulate(device: str, driver: bool) -> tuple[Simulation, float]:
    cluster = parse_cluster(scenario_file(_state(device), _pod()), "ns/p")
    replay = KschedReplay()
    sim = Simulation(cluster, replay.config, replay.registry, seed=0)
    if driver:
        sim.cluster.device_driver = binding_driver
    start = sim.clock.now()
    anyio.run(sim.run)
    return sim, sim.clock.now() - start


def test_simulator_driver_writes_after_its_delay_and_prebind_sees_it_at_its_next_poll() -> None:
    sim, took = _simulate("dev-0", driver=True)
    claim = sim.cluster.claim_controller.get("ns", "shared")
    assert claim is not None
    assert [c["type"] for d in claim.status.devices for c in d["conditions"]] == [ATTACHED]
    assert took == 5.0  # PreBind's second poll (BINDING_POLL), after the driver's write


def test_simulator_without_a_driver_waits_out_the_binding_timeout() -> None:
    sim, took = _simulate("dev-0", driver=False)
    claim = sim.cluster.claim_controller.get("ns", "shared")
    assert claim is not None and claim.status.devices == []
    assert took >= 600.0
    failures = [m for f in sim.recorder.failures.values() for _, m in f]
    assert failures and "device binding timeout" in failures[0]


def test_kube_replay_driver_schedules_one_write_per_claim_needing_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``_BindingDriver`` (the kube replay's): a write ``DRIVER_DELAY`` after a watch
    event of a claim in the scenario's namespaces that needs one, one at a time."""
    from ksched.testing.differential import kube

    timers: list[tuple[float, tuple[str, str]]] = []

    class _Timer:
        def __init__(self, delay: float, fn: Any, args: tuple[str, str]) -> None:
            timers.append((delay, args))
            self.daemon = False

        def start(self) -> None:
            pass

    monkeypatch.setattr(kube.threading, "Timer", _Timer)
    drv = kube._BindingDriver(cast(Any, object()), ["ns"])
    claim = _claim([_result("dev-0")])
    claim["metadata"]["resourceVersion"] = "7"
    drv._seen({"type": "MODIFIED", "object": claim})
    drv._seen({"type": "MODIFIED", "object": claim})  # a write is scheduled already
    assert timers == [(DRIVER_DELAY, ("ns", "c"))] and drv.rv == "7"
    elsewhere = {**claim, "metadata": {"name": "c", "namespace": "other"}}
    drv._seen({"type": "ADDED", "object": elsewhere})
    devices = driver_status(claim, NOW)
    done = {**claim, "status": {**claim["status"], "devices": devices}}
    drv.pending.clear()
    drv._seen({"type": "MODIFIED", "object": done})  # reported already
    drv._seen({"type": "DELETED", "object": claim})
    assert len(timers) == 1


def _preempting_state(device: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """n1 full with a low-priority pod; the pod (higher priority, the shared claim)
    nominates n1 by preemption, then binds there or fails to."""
    state = _state(device)
    state[0]["status"]["allocatable"]["cpu"] = "1"
    victim = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "low", "namespace": "ns", "uid": "v1"},
        "spec": {
            "nodeName": "n1",
            "priority": 0,
            "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }
    pod = _pod()
    pod["spec"]["priority"] = 100
    pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1"}
    return [*state, victim], pod


def test_ksched_replay_reports_a_nomination_a_failed_binding_took_back() -> None:
    """The kube replay's watch ends when the preemptor's nomination is cleared unbound
    (handleBindingCycleError's clearNominatedNode): no nominated node, the first
    failure. ksched's simulator goes on retrying, and where its run stops (perhaps in a
    later binding that announced the node again) must not decide the outcome."""
    state, pod = _preempting_state("bad-0")
    out = KschedReplay()(state, pod)
    assert (out.status, out.node, out.nominated) == ("Unschedulable", None, "")
    assert "preemption" in out.message and "Insufficient cpu" in out.message


def test_ksched_replay_keeps_the_nomination_of_a_preemptor_that_binds() -> None:
    state, pod = _preempting_state("dev-0")
    out = KschedReplay()(state, pod)
    assert (out.status, out.node, out.nominated) == ("Scheduled", "n1", "n1")
