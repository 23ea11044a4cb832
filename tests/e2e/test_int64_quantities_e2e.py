"""Issue 16, item 1 end to end: a pod bound by nodeName (for another scheduler) asking for
1e18 cpu and a node reporting 8Ei of cpu used to make every scheduling cycle raise
OverflowError, so ``/readyz`` went 503 and nothing was scheduled, on every restart.

kube-apiserver accepts both (it stores 8Ei as "9223372036854775807") and rejects negative
amounts; the test API server rejects them with the same texts.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import E2E

pytestmark = pytest.mark.e2e


def _pod(e2e: E2E, name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": e2e.namespace},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": cpu}},
                }
            ],
            **spec,
        },
    }


def test_extreme_quantities_leave_the_daemon_ready_and_scheduling(e2e: E2E) -> None:
    hogged = e2e.create_node("hogged")
    huge = e2e.create_node("huge", cpu="8Ei")
    pods = f"/api/v1/namespaces/{e2e.namespace}/pods"
    # bound by nodeName, for another scheduler: 1e18 cpu is 2**63 - 1 millicores
    hog = _pod(e2e, "hog", "1e18", nodeName=hogged, schedulerName="someone-else")
    assert e2e.kube.ok("POST", pods, hog)["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "1e18"}
    }
    with e2e.daemon() as d:  # waits for /readyz
        e2e.create_pod("web", cpu="100m")
        # "hogged" has no millicore left; "huge" has 2**63 - 1 of them
        assert e2e.wait_bound("web") == huge
        assert d.get("/readyz")[0] == 200
        # as much cpu as there is: more than "huge" has left after "web"
        e2e.create_pod("too-big", cpu="9223372036854775807m")
        cond = e2e.wait_unschedulable("too-big")
        assert "Insufficient cpu" in cond["message"]
        e2e.create_pod("late", cpu="1")
        assert e2e.wait_bound("late") == huge
        assert d.get("/readyz")[0] == 200


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        (
            "Pod",
            'Pod "{name}" is invalid: spec.containers[0].resources.requests[cpu]: '
            'Invalid value: "-1": must be greater than or equal to 0',
        ),
        (
            "Node",
            'Node "{name}" is invalid: ['
            'status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0, '
            'status.allocatable.cpu: Invalid value: "-1": must be greater than or equal to 0]',
        ),
    ],
)
def test_negative_amounts_are_refused_with_kube_apiservers_text(
    e2e: E2E, kind: str, message: str
) -> None:
    if kind == "Pod":
        name = "negative"
        status, body = e2e.kube.request(
            "POST", f"/api/v1/namespaces/{e2e.namespace}/pods", _pod(e2e, name, "-1")
        )
    else:
        name = e2e.node_name("negative")
        alloc = {"cpu": "-1", "memory": "1Gi", "pods": "10"}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"ksched-e2e": e2e.run_id}},
            "status": {"capacity": alloc, "allocatable": alloc},
        }
        status, body = e2e.kube.request("POST", "/api/v1/nodes", node)
    assert status == 422, body
    assert (body["reason"], body["message"]) == ("Invalid", message.format(name=name))
