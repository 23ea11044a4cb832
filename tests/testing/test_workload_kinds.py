"""Services, ReplicationControllers, ReplicaSets and StatefulSets on the test API server:
the collections PodTopologySpread's default selectors come from."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.testing import TestAPIServer, make_controller, make_namespace, make_service

from ._http import Client

# (collection path template, kind)
KINDS = [
    ("/api/v1{ns}/services", "Service"),
    ("/api/v1{ns}/replicationcontrollers", "ReplicationController"),
    ("/apis/apps/v1{ns}/replicasets", "ReplicaSet"),
    ("/apis/apps/v1{ns}/statefulsets", "StatefulSet"),
]


def _obj(kind: str, name: str, ns: str = "default", **labels: str) -> dict[str, Any]:
    labels = labels or {"app": name}
    if kind == "Service":
        svc = make_service(name, labels, ns)
        svc["metadata"]["labels"] = labels
        return svc
    return make_controller(kind, name, labels, ns)


def _path(template: str, ns: str | None = None) -> str:
    return template.format(ns=f"/namespaces/{ns}" if ns else "")


@pytest.mark.parametrize(("template", "kind"), KINDS, ids=[k for _, k in KINDS])
def test_crud_namespaced_and_across_namespaces(http: Client, template: str, kind: str) -> None:
    http.post("/api/v1/namespaces", make_namespace("team"))
    default, team = _path(template, "default"), _path(template, "team")
    status, created = http.post(default, _obj(kind, "a"))
    assert status == 201
    assert created["kind"] == kind and created["metadata"]["uid"]
    assert created["metadata"]["namespace"] == "default"
    assert http.post(team, _obj(kind, "b", "team"))[0] == 201
    assert http.post(default, _obj(kind, "a"))[0] == 409
    # a kind posted to another kind's collection is refused
    assert http.post(default, make_namespace("x"))[0] == 400

    _, only_default = http.get(default)
    assert only_default["kind"] == f"{kind}List"
    assert [o["metadata"]["name"] for o in only_default["items"]] == ["a"]
    _, everywhere = http.get(_path(template))
    assert [o["metadata"]["namespace"] for o in everywhere["items"]] == ["default", "team"]
    _, selected = http.get(_path(template), labelSelector="app=b")
    assert [o["metadata"]["name"] for o in selected["items"]] == ["b"]
    _, by_field = http.get(_path(template), fieldSelector="metadata.namespace=team")
    assert [o["metadata"]["name"] for o in by_field["items"]] == ["b"]

    _, got = http.get(f"{default}/a")
    got["metadata"]["labels"] = {"tier": "web"}
    status, updated = http.put(f"{default}/a", got)
    assert status == 200 and updated["metadata"]["labels"] == {"tier": "web"}
    assert http.put(f"{default}/a", got)[0] == 409  # stale resourceVersion
    _, patched = http.patch(f"{default}/a", {"metadata": {"labels": {"tier": None}}})
    assert patched["metadata"].get("labels", {}) == {}
    assert http.delete(f"{default}/a")[0] == 200
    assert http.get(f"{default}/a")[0] == 404
    assert http.get(_path(template, "nowhere"))[1]["items"] == []


@pytest.mark.parametrize(("template", "kind"), KINDS, ids=[k for _, k in KINDS])
def test_watch_all_namespaces_from_a_resource_version(
    apiserver: TestAPIServer, http: Client, template: str, kind: str
) -> None:
    http.post("/api/v1/namespaces", make_namespace("team"))
    _, first = http.post(_path(template, "default"), _obj(kind, "a"))
    rv = first["metadata"]["resourceVersion"]
    http.post(_path(template, "team"), _obj(kind, "b", "team"))
    http.patch(_path(template, "default") + "/a", {"metadata": {"labels": {"v": "2"}}})
    http.delete(_path(template, "team") + "/b")
    w = http.watch(_path(template), resourceVersion=rv, allowWatchBookmarks="true")
    events = w.take(3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "b"),
        ("MODIFIED", "a"),
        ("DELETED", "b"),
    ]
    assert {e["object"]["kind"] for e in events} == {kind}
    apiserver.wait_for_watchers(1)
    apiserver.create(_obj(kind, "c", "team"))
    (live,) = w.take(1)
    assert (live["type"], live["object"]["metadata"]["name"]) == ("ADDED", "c")
    w.close()


def test_controllers_bump_generation_on_spec_changes_only(http: Client) -> None:
    path = "/apis/apps/v1/namespaces/default/replicasets"
    _, rs = http.post(path, make_controller("ReplicaSet", "web", {"app": "web"}))
    assert rs["metadata"]["generation"] == 1
    _, relabeled = http.patch(f"{path}/web", {"metadata": {"labels": {"x": "y"}}})
    assert relabeled["metadata"]["generation"] == 1
    _, scaled = http.patch(f"{path}/web", {"spec": {"replicas": 3}})
    assert scaled["metadata"]["generation"] == 2
    # status goes through the status subresource only
    _, ignored = http.patch(f"{path}/web", {"status": {"replicas": 3}})
    assert "status" not in ignored
    _, reported = http.patch(f"{path}/web/status", {"status": {"replicas": 3}})
    assert reported["status"] == {"replicas": 3}
    assert reported["metadata"]["generation"] == 2
    svc = "/api/v1/namespaces/default/services"
    _, created = http.post(svc, make_service("web", {"app": "web"}))
    assert "generation" not in created["metadata"]


def test_strategic_merge_patch_merges_service_ports_by_port(http: Client) -> None:
    path = "/api/v1/namespaces/default/services"
    http.post(path, make_service("web", {"app": "web"}, port=80))
    patch = {"spec": {"ports": [{"port": 443, "targetPort": 8443}, {"port": 80, "name": "h"}]}}
    status, patched = http.patch(f"{path}/web", patch, "strategic")
    assert status == 200
    assert [(p["port"], p.get("name"), p["targetPort"]) for p in patched["spec"]["ports"]] == [
        (80, "h", 80),
        (443, None, 8443),
    ]
    # a ReplicaSet's pod template still merges container ports by containerPort
    rs_path = "/apis/apps/v1/namespaces/default/replicasets"
    rs = make_controller("ReplicaSet", "web", {"app": "web"})
    rs["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    http.post(rs_path, rs)
    more = {"name": "main", "ports": [{"containerPort": 81}]}
    template_patch = {"spec": {"template": {"spec": {"containers": [more]}}}}
    _, rs2 = http.patch(f"{rs_path}/web", template_patch, "strategic")
    ports = rs2["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert [p["containerPort"] for p in ports] == [80, 81]


def test_namespace_deletion_removes_workloads(apiserver: TestAPIServer, http: Client) -> None:
    http.post("/api/v1/namespaces", make_namespace("team"))
    apiserver.create(make_service("s", {"app": "x"}, "team"))
    apiserver.create(make_controller("StatefulSet", "db", {"app": "db"}, "team"))
    http.delete("/api/v1/namespaces/team")
    assert apiserver.list("services", "team") == []
    assert apiserver.list("sts", "team") == []
