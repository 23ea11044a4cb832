"""DRA end to end, against the test API server and the real control plane (whose
kube-controller-manager runs the resourceclaim controller; on the test API server the
test plays it): a pod with a claim template is bound and its claim carries the
allocation and the pod in reservedFor; a pod whose claim cannot be met gets
PodScheduled=False with kube-scheduler's message and one FailedScheduling event, and is
scheduled once a node publishes a fitting ResourceSlice."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.testing.objects import (
    device_requests,
    make_device_class,
    make_resource_claim,
    make_resource_claim_template,
    make_resource_slice,
)

from .conftest import E2E, JSON, wait_for

DRIVER = "gpu.e2e.example.com"


def _setup(e2e: E2E, template_count: int = 1) -> tuple[str, str]:
    """A node, a class for the driver's devices and a claim template; (node, class)."""
    node = e2e.create_node("gpu")
    cls = e2e.node_name("gpu")
    e2e.create_object(make_device_class(cls, f'device.driver == "{DRIVER}"'))
    e2e.create_object(make_resource_claim_template("gpus", device_requests(cls, template_count)))
    return node, cls


def _gpus(e2e: E2E, node: str, n: int) -> JSON:
    devices = [{"name": f"gpu-{i}"} for i in range(n)]
    return e2e.create_object(make_resource_slice(node, DRIVER, devices, name=e2e.node_name("s")))


def _claim_pod(e2e: E2E, name: str) -> JSON:
    claims = [{"name": "gpus", "resourceClaimTemplateName": "gpus"}]
    pod = e2e.create_pod(name, resource_claims=claims)
    if e2e.target == "apiserver":
        _play_resourceclaim_controller(e2e, pod)
    return pod


def _play_resourceclaim_controller(e2e: E2E, pod: JSON) -> None:
    """What kube-controller-manager does for a pod with a template: the pod's own claim,
    owned by it, named in the pod's status."""
    tpl = e2e.kube.ok("GET", e2e.object_path("ResourceClaimTemplate", "gpus"))
    meta = pod["metadata"]
    name = f"{meta['name']}-gpus-x7k2p"
    claim = make_resource_claim(name, tpl["spec"]["spec"]["devices"], e2e.namespace)
    claim["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
        }
    ]
    e2e.create_object(claim)
    status = {"status": {"resourceClaimStatuses": [{"name": "gpus", "resourceClaimName": name}]}}
    e2e.kube.ok(
        "PATCH",
        f"/api/v1/namespaces/{e2e.namespace}/pods/{meta['name']}/status",
        status,
        content_type="application/merge-patch+json",
    )


def _claim_of(e2e: E2E, pod: str) -> JSON:
    def named() -> str | None:
        for s in e2e.pod(pod).get("status", {}).get("resourceClaimStatuses") or []:
            if s.get("name") == "gpus":
                return str(s.get("resourceClaimName") or "") or None
        return None

    name = wait_for(named, 20, what="the pod's generated claim")
    data: JSON = e2e.kube.ok("GET", e2e.object_path("ResourceClaim", name))
    return data


@pytest.mark.e2e
def test_pod_with_claim_template_is_bound_and_its_claim_allocated(e2e: E2E) -> None:
    node, _ = _setup(e2e, template_count=2)
    _gpus(e2e, node, 3)
    with e2e.daemon():
        pod = _claim_pod(e2e, "trainer")
        assert e2e.wait_bound("trainer", timeout=30) == node
    claim = _claim_of(e2e, "trainer")
    status: dict[str, Any] = claim["status"]
    results = status["allocation"]["devices"]["results"]
    assert [(r["request"], r["driver"], r["pool"]) for r in results] == [
        ("req-0", DRIVER, node),
        ("req-0", DRIVER, node),
    ]
    assert len({r["device"] for r in results}) == 2
    terms = status["allocation"]["nodeSelector"]["nodeSelectorTerms"]
    assert terms[0]["matchFields"][0]["values"] == [node]
    assert [(r["resource"], r["name"], r["uid"]) for r in status["reservedFor"]] == [
        ("pods", "trainer", pod["metadata"]["uid"])
    ]
    assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]


@pytest.mark.e2e
def test_unsatisfiable_claim_reports_once_then_schedules_when_a_slice_appears(e2e: E2E) -> None:
    node, _ = _setup(e2e)
    with e2e.daemon():
        _claim_pod(e2e, "waiting")
        cond = e2e.wait_unschedulable("waiting")
        # 1.36's DynamicResources PostFilter added its sentence before preemption's
        features = e2e.features
        dra = "" if features is None or features.at_least("1.37") else "still not schedulable, "
        assert cond["message"] == (
            f"0/1 nodes are available: 1 cannot allocate all claims. {dra}"
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
        )
        _gpus(e2e, node, 1)  # a ResourceSlice event: the pod is tried again
        assert e2e.wait_bound("waiting", timeout=30) == node
    assert _claim_of(e2e, "waiting")["status"]["allocation"]["devices"]["results"]


@pytest.mark.kube
@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_unsatisfiable_claim_message_agrees_with_kube_scheduler(e2e: E2E, kube_name: str) -> None:
    """The same unsatisfiable claim for kube-scheduler and for ksched: the same
    PodScheduled message, word for word."""
    node, _ = _setup(e2e, template_count=3)
    _gpus(e2e, node, 2)
    claims = [{"name": "gpus", "resourceClaimTemplateName": "gpus"}]
    with e2e.daemon():
        e2e.create_pod("ours", resource_claims=claims)
        e2e.create_pod("theirs", resource_claims=claims, scheduler_name=kube_name)
        ours = e2e.wait_unschedulable("ours")
        theirs = wait_for(lambda: e2e.condition("theirs"), 30, what="kube-scheduler's verdict")
    assert ours["message"] == theirs["message"]
    assert ours["message"].startswith("0/1 nodes are available: 1 cannot allocate all claims.")


def _attach(e2e: E2E, claim: JSON, condition: str) -> None:
    """What a DRA driver does once a device is ready: a condition True in the claim's
    ``status.devices`` entry of each allocated device."""
    results = claim["status"]["allocation"]["devices"]["results"]
    claim["status"]["devices"] = [
        {
            "driver": r["driver"],
            "pool": r["pool"],
            "device": r["device"],
            "conditions": [
                {
                    "type": condition,
                    "status": "True",
                    "reason": "DriverSaysSo",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        }
        for r in results
    ]
    name = claim["metadata"]["name"]
    e2e.kube.ok("PUT", e2e.object_path("ResourceClaim", name) + "/status", claim)


@pytest.mark.kube
@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_binding_conditions_wait_for_the_driver_like_kube_scheduler(
    e2e: E2E, kube_name: str
) -> None:
    """Devices with binding conditions, for kube-scheduler and for ksched: both
    allocate one, write the conditions and allocationTimestamp into the claim, nominate
    the node and wait in PreBind; once the driver sets the condition, both bind."""
    node = e2e.create_node("nic")
    cls = e2e.node_name("nic")
    e2e.create_object(make_device_class(cls, f'device.driver == "{DRIVER}"'))
    attach = {"bindingConditions": ["Attached"], "bindingFailureConditions": ["Failed"]}
    devices = [{"name": f"nic-{i}", **attach} for i in range(2)]
    e2e.create_object(make_resource_slice(node, DRIVER, devices, name=e2e.node_name("s")))
    for who in ("ours", "theirs"):
        e2e.create_object(make_resource_claim(who, device_requests(cls, 1), e2e.namespace))

    def waiting(who: str) -> JSON | None:
        claim: JSON = e2e.get_object("ResourceClaim", who)
        if not claim.get("status", {}).get("reservedFor"):
            return None
        return claim

    with e2e.daemon():
        e2e.create_pod("ours", resource_claims=[{"name": "n", "resourceClaimName": "ours"}])
        e2e.create_pod(
            "theirs",
            resource_claims=[{"name": "n", "resourceClaimName": "theirs"}],
            scheduler_name=kube_name,
        )
        claims = {
            who: wait_for(lambda w=who: waiting(w), 30, what=f"{who} reserved")
            for who in ("ours", "theirs")
        }
        for who, claim in claims.items():
            alloc = claim["status"]["allocation"]
            (r,) = alloc["devices"]["results"]
            assert (r["bindingConditions"], r["bindingFailureConditions"]) == (
                ["Attached"],
                ["Failed"],
            ), who
            assert alloc["allocationTimestamp"], who
            assert e2e.node_of(who) is None  # waiting in PreBind
            nominated = wait_for(
                lambda w=who: e2e.pod(w)["status"].get("nominatedNodeName"),
                10,
                what=f"{who} nominated",
            )
            assert nominated == node
        for claim in claims.values():
            _attach(e2e, claim, "Attached")
        assert e2e.wait_bound("ours", timeout=30) == node
        assert e2e.wait_bound("theirs", timeout=30) == node
    assert e2e.events("ours", "BindingConditionsPending")
    assert e2e.events("theirs", "BindingConditionsPending")


@pytest.mark.kube
@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_binding_failure_condition_fails_the_attempt_like_kube_scheduler(
    e2e: E2E, kube_name: str
) -> None:
    """The driver sets a binding failure condition: both schedulers fail the attempt with
    the same words (the claim's name aside)."""
    node = e2e.create_node("nic")
    cls = e2e.node_name("nic")
    e2e.create_object(make_device_class(cls, f'device.driver == "{DRIVER}"'))
    attach = {"bindingConditions": ["Attached"], "bindingFailureConditions": ["Failed"]}
    devices = [{"name": f"nic-{i}", **attach} for i in range(2)]
    e2e.create_object(make_resource_slice(node, DRIVER, devices, name=e2e.node_name("s")))
    for who in ("ours", "theirs"):
        e2e.create_object(make_resource_claim(who, device_requests(cls, 1), e2e.namespace))

    def reserved(who: str) -> JSON | None:
        claim: JSON = e2e.get_object("ResourceClaim", who)
        return claim if claim.get("status", {}).get("reservedFor") else None

    def failed(who: str) -> str | None:
        for e in e2e.events(who, "FailedScheduling"):
            if "device binding failed" in (e.get("note") or ""):
                return str(e["note"])
        return None

    with e2e.daemon():
        e2e.create_pod("ours", resource_claims=[{"name": "n", "resourceClaimName": "ours"}])
        e2e.create_pod(
            "theirs",
            resource_claims=[{"name": "n", "resourceClaimName": "theirs"}],
            scheduler_name=kube_name,
        )
        for who in ("ours", "theirs"):
            _attach(e2e, wait_for(lambda w=who: reserved(w), 30, what=f"{who} reserved"), "Failed")
        ours = wait_for(lambda: failed("ours"), 30, what="ksched's failure")
        theirs = wait_for(lambda: failed("theirs"), 30, what="kube-scheduler's failure")
    assert ours.replace("claim=ours", "claim=X") == theirs.replace("claim=theirs", "claim=X")
    assert 'device binding failed: claim=ours, reason=DriverSaysSo, message=""' in ours
