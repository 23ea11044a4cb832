"""scheduling.k8s.io/v1beta1 Workloads and PodGroups on the test API server (as kube-apiserver
v1.37 serves them with the version enabled), beside scheduler-plugins' PodGroup CRD."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import decode
from ksched.api.workload import PodGroup, Workload
from ksched.testing import TestAPIServer, make_namespace, make_pod_group, make_workload

from ._http import Client

GV = "/apis/scheduling.k8s.io/v1beta1"
WORKLOADS = f"{GV}/namespaces/default/workloads"
PODGROUPS = f"{GV}/namespaces/default/podgroups"
CRD_PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"

# (collection, builder of an object named by its argument, a spec change)
KINDS: list[tuple[str, Any, dict[str, Any]]] = [
    (
        WORKLOADS,
        lambda n: make_workload(n, {"workers": 2}),
        {"metadata": {"annotations": {"a": "b"}}},
    ),
    (PODGROUPS, lambda n: make_pod_group(n, 2), {"spec": {"priorityClassName": "high"}}),
]


def test_discovery(http: Client) -> None:
    _, doc = http.get(GV)
    assert doc["groupVersion"] == "scheduling.k8s.io/v1beta1"
    assert {r["name"]: (r["kind"], r["namespaced"]) for r in doc["resources"]} == {
        "workloads": ("Workload", True),
        "podgroups": ("PodGroup", True),
        "podgroups/status": ("PodGroup", True),
    }
    # PriorityClasses' v1 stays the group's preferred version
    group = http.get("/apis/scheduling.k8s.io")[1]
    assert group["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]


@pytest.mark.parametrize(("path", "build", "change"), KINDS, ids=["workloads", "podgroups"])
def test_crud_list_and_watch(http: Client, path: str, build: Any, change: dict[str, Any]) -> None:
    status, created = http.post(path, build("a"))
    assert status == 201 and created["metadata"]["uid"], created
    assert created["metadata"]["namespace"] == "default"
    assert http.post(path, build("a"))[0] == 409
    assert http.post(path, make_namespace("x"))[0] == 400  # another kind's collection
    http.post("/api/v1/namespaces", make_namespace("team"))
    http.post(path.replace("/default/", "/team/"), {**build("b"), "metadata": {"name": "b"}})
    everywhere = path.replace("/namespaces/default", "")
    _, listed = http.get(everywhere)
    assert listed["kind"] == f"{created['kind']}List"
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in listed["items"]] == [
        ("default", "a"),
        ("team", "b"),
    ]
    w = http.watch(everywhere, resourceVersion=listed["metadata"]["resourceVersion"])
    _, got = http.get(f"{path}/a")
    got["metadata"]["labels"] = {"k": "v"}
    status, updated = http.put(f"{path}/a", got)
    assert status == 200 and updated["metadata"]["labels"] == {"k": "v"}
    assert http.put(f"{path}/a", got)[0] == 409  # stale resourceVersion
    status, patched = http.patch(f"{path}/a", change, "strategic")
    assert status == 200, patched
    assert http.delete(f"{path}/a")[0] == 200
    kinds = [e["type"] for e in w.take(3)]
    assert kinds == ["MODIFIED", "MODIFIED", "DELETED"]
    assert http.get(f"{path}/a")[0] == 404


def test_pod_group_status_belongs_to_the_status_subresource(http: Client) -> None:
    cond = {
        "type": "PodGroupInitiallyScheduled",
        "status": "True",
        "reason": "Scheduled",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    http.post(PODGROUPS, make_pod_group("g", 2))
    _, ignored = http.patch(f"{PODGROUPS}/g", {"status": {"conditions": [cond]}})
    assert not ignored.get("status", {}).get("conditions")
    # the scheduler's strategic merge patch of status: conditions merge by type
    status, patched = http.patch(
        f"{PODGROUPS}/g/status", {"status": {"conditions": [cond]}}, "strategic"
    )
    assert status == 200, patched
    other = {**cond, "type": "DisruptionTarget", "status": "False"}
    _, both = http.patch(f"{PODGROUPS}/g/status", {"status": {"conditions": [other]}}, "strategic")
    assert [c["type"] for c in both["status"]["conditions"]] == [
        "PodGroupInitiallyScheduled",
        "DisruptionTarget",
    ]
    claims = {"resourceClaimStatuses": [{"name": "a", "resourceClaimName": "g-a"}]}
    http.patch(f"{PODGROUPS}/g/status", {"status": claims}, "strategic")
    more = {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "g-b"}]}
    _, merged = http.patch(f"{PODGROUPS}/g/status", {"status": more}, "strategic")
    assert [c["name"] for c in merged["status"]["resourceClaimStatuses"]] == ["a", "b"]
    pg = decode(merged, PodGroup)
    assert pg.status.conditions[0].type == "PodGroupInitiallyScheduled"
    assert pg.spec.scheduling_policy.gang is not None
    # a spec change through the status subresource is ignored
    _, same = http.patch(f"{PODGROUPS}/g/status", {"spec": {"priorityClassName": "x"}})
    assert "priorityClassName" not in same["spec"]


def test_the_crd_of_the_same_kind_stays_apart(apiserver: TestAPIServer, http: Client) -> None:
    http.post(PODGROUPS, make_pod_group("same"))
    crd = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "same", "namespace": "default"},
        "spec": {"minMember": 2},
    }
    assert http.post(CRD_PODGROUPS, crd)[0] == 201
    assert http.get(f"{PODGROUPS}/same")[1]["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert http.get(f"{CRD_PODGROUPS}/same")[1]["spec"] == {"minMember": 2}
    # "podgroups" still names the CRD for the helpers; the qualified name names ours
    assert apiserver.get("podgroups", "default", "same")["spec"] == {"minMember": 2}
    ours = apiserver.get("podgroups.scheduling.k8s.io", "default", "same")
    assert decode(ours, PodGroup).spec.scheduling_policy.basic is not None
    w = apiserver.create(make_workload("w", {"a": None, "b": 3}))
    assert [t.name for t in decode(w, Workload).spec.pod_group_templates] == ["a", "b"]
