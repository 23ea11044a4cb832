"""Preemption end to end: the daemon evicts a lower-priority pod through the API, records
the nomination, and binds the preemptor once the victim is gone."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import E2E, wait_for

pytestmark = pytest.mark.e2e


def _priority_class(e2e: E2E, suffix: str, **fields: Any) -> Iterator[str]:
    name = f"ksched-e2e-{e2e.run_id}-{suffix}"
    e2e.kube.ok(
        "POST",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": 1000,
            **fields,
        },
    )
    try:
        yield name
    finally:
        e2e.kube.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


@pytest.fixture
def high_class(e2e: E2E) -> Iterator[str]:
    yield from _priority_class(e2e, "high")


@pytest.fixture
def never_class(e2e: E2E) -> Iterator[str]:
    """High priority, preemptionPolicy Never: kube-apiserver's Priority admission takes a
    pod's policy from its class (and rejects a pod that names another one)."""
    yield from _priority_class(e2e, "never", preemptionPolicy="Never")


def create_pod(
    e2e: E2E, name: str, cpu: str, finalizers: list[str] | None = None, **spec: Any
) -> None:
    """Like ``E2E.create_pod``, plus spec fields; victims go at once (no kubelet here)
    unless a finalizer holds them."""
    meta: dict[str, Any] = {"name": name, "namespace": e2e.namespace}
    if finalizers:
        meta["finalizers"] = finalizers
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "schedulerName": e2e.scheduler_name,
            "nodeSelector": {"ksched-e2e": e2e.run_id},
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                }
            ],
            **spec,
        },
    }
    e2e.kube.ok("POST", f"/api/v1/namespaces/{e2e.namespace}/pods", body)


def gone(e2e: E2E, name: str) -> bool:
    status, _ = e2e.kube.request("GET", f"/api/v1/namespaces/{e2e.namespace}/pods/{name}")
    return status == 404


def test_high_priority_pod_preempts_and_is_bound(e2e: E2E, high_class: str) -> None:
    node = e2e.create_node("only", cpu="2")
    with e2e.daemon():
        create_pod(e2e, "low-1", "1")
        create_pod(e2e, "low-2", "1")
        assert e2e.wait_bound("low-1") == node and e2e.wait_bound("low-2") == node
        create_pod(e2e, "urgent", "1500m", priorityClassName=high_class)
        assert e2e.wait_bound("urgent", timeout=20) == node
        # Both 1-CPU pods had to go for 1.5 CPU.
        assert gone(e2e, "low-1") and gone(e2e, "low-2")
        # the binding clears the nomination (v1.35+: ClearingNominatedNodeNameAfterBinding)
        assert e2e.pod("urgent")["status"].get("nominatedNodeName") is None
        ev = wait_for(lambda: e2e.events("low-1", "Preempted"), what="Preempted event")[0]
    uid = e2e.pod("urgent")["metadata"]["uid"]
    assert ev["note"] == f"Preempted by pod {uid} on node {node}"


def test_preemption_policy_never_waits_without_evicting(e2e: E2E, never_class: str) -> None:
    e2e.create_node("only", cpu="1")
    with e2e.daemon():
        create_pod(e2e, "low", "1")
        e2e.wait_bound("low")
        create_pod(e2e, "polite", "1", priorityClassName=never_class)
        assert e2e.pod("polite")["spec"]["preemptionPolicy"] == "Never"
        cond = wait_for(lambda: e2e.condition("polite"), what="PodScheduled condition")
        # 1.36's DynamicResources PostFilter added its sentence before preemption's
        features = e2e.features
        dra = (
            "" if features is None or features.at_least("1.37") else "no new claims to deallocate, "
        )
        assert cond is not None and cond["message"] == (
            f"0/1 nodes are available: 1 Insufficient cpu. {dra}"
            "preemption: not eligible due to preemptionPolicy=Never."
        )
        assert not gone(e2e, "low")
        assert e2e.node_of("polite") is None


def test_victims_are_marked_disruption_target_before_deletion(e2e: E2E, high_class: str) -> None:
    """Each victim gets DisruptionTarget/PreemptionByScheduler before its deletion; while
    a victim so marked is still terminating, the preemptor waits instead of preempting more."""
    node = e2e.create_node("only", cpu="2")
    held_path = f"/api/v1/namespaces/{e2e.namespace}/pods/held"
    try:
        with e2e.daemon():
            create_pod(e2e, "held", "1", finalizers=["ksched.test/hold"])
            create_pod(e2e, "low", "1")
            assert e2e.wait_bound("held") == node and e2e.wait_bound("low") == node
            create_pod(e2e, "urgent", "1500m", priorityClassName=high_class)
            held = wait_for(
                lambda: (p := e2e.pod("held"))["metadata"].get("deletionTimestamp") and p,
                what="the held victim to be terminating",
            )
            (cond,) = [c for c in held["status"]["conditions"] if c["type"] == "DisruptionTarget"]
            assert {k: cond[k] for k in ("status", "reason", "message")} == {
                "status": "True",
                "reason": "PreemptionByScheduler",
                "message": f"{e2e.scheduler_name}: preempting to accommodate a higher priority pod",
            }
            assert cond["lastTransitionTime"]
            wait_for(lambda: gone(e2e, "low"), what="low to be deleted")
            assert e2e.node_of("urgent") is None  # waits for the terminating victim
            # ... nominated to the node it freed room on
            assert e2e.pod("urgent")["status"].get("nominatedNodeName") == node
            e2e.kube.ok(
                "PATCH",
                held_path,
                {"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json",
            )
            assert e2e.wait_bound("urgent", timeout=20) == node
    finally:
        e2e.kube.request(
            "PATCH",
            held_path,
            {"metadata": {"finalizers": None}},
            content_type="application/merge-patch+json",
        )
    if e2e.server is not None:
        writes = [
            (r.verb, r.subresource)
            for r in e2e.server.requests
            if r.name == "low" and r.verb in ("patch", "delete")
        ]
        assert writes[:2] == [("patch", "status"), ("delete", None)]
