"""CRUD semantics of the test API server over plain HTTP: metadata, errors, updates, deletes."""

from __future__ import annotations

import re

from ksched.testing import TestAPIServer, make_namespace, make_pod

from ._http import Client, pod

PODS = "/api/v1/namespaces/default/pods"


def test_discovery_documents(http: Client) -> None:
    status, api = http.get("/api")
    assert status == 200 and api["kind"] == "APIVersions" and api["versions"] == ["v1"]
    _, core = http.get("/api/v1")
    assert core["kind"] == "APIResourceList" and core["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["pods"]["namespaced"] is True and by_name["pods"]["kind"] == "Pod"
    assert "watch" in by_name["pods"]["verbs"] and "po" in by_name["pods"]["shortNames"]
    assert by_name["nodes"]["namespaced"] is False
    assert by_name["namespaces"]["namespaced"] is False
    assert by_name["pods/binding"] == {
        "name": "pods/binding",
        "singularName": "",
        "namespaced": True,
        "kind": "Binding",
        "verbs": ["create"],
    }
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["events"]["namespaced"] is True
    assert by_name["services"]["shortNames"] == ["svc"] and by_name["services"]["namespaced"]
    assert by_name["replicationcontrollers"]["kind"] == "ReplicationController"
    assert by_name["replicationcontrollers/status"]["verbs"] == ["get", "patch", "update"]
    _, groups = http.get("/apis")
    names = {g["name"]: g["preferredVersion"]["groupVersion"] for g in groups["groups"]}
    assert names == {
        "apps": "apps/v1",
        "authentication.k8s.io": "authentication.k8s.io/v1",
        "authorization.k8s.io": "authorization.k8s.io/v1",
        "coordination.k8s.io": "coordination.k8s.io/v1",
        "events.k8s.io": "events.k8s.io/v1",
        "policy": "policy/v1",
        "resource.k8s.io": "resource.k8s.io/v1",
        "scheduling.k8s.io": "scheduling.k8s.io/v1",
        "scheduling.x-k8s.io": "scheduling.x-k8s.io/v1alpha1",
        "storage.k8s.io": "storage.k8s.io/v1",
    }
    _, apps = http.get("/apis/apps/v1")
    assert apps["groupVersion"] == "apps/v1"
    assert {r["name"]: r["kind"] for r in apps["resources"]} == {
        "replicasets": "ReplicaSet",
        "replicasets/status": "ReplicaSet",
        "statefulsets": "StatefulSet",
        "statefulsets/status": "StatefulSet",
    }
    assert {r.get("shortNames", [""])[0] for r in apps["resources"] if "/" not in r["name"]} == {
        "rs",
        "sts",
    }
    assert http.get("/apis/apps")[1]["preferredVersion"]["groupVersion"] == "apps/v1"
    _, pg = http.get("/apis/scheduling.x-k8s.io/v1alpha1")
    assert [r["name"] for r in pg["resources"]] == ["podgroups", "podgroups/status"]
    _, group = http.get("/apis/policy")
    assert group["kind"] == "APIGroup" and group["name"] == "policy"
    _, leases = http.get("/apis/coordination.k8s.io/v1")
    assert leases["resources"][0]["kind"] == "Lease"
    status, version = http.get("/version")
    assert status == 200
    assert (version["major"], version["minor"]) == ("1", "31")
    assert version["gitVersion"] == "v1.31.0-ksched-testing"
    assert version["platform"].startswith("linux/")
    assert http.get("/apis/nope.example.com/v1")[0] == 404
    assert http.get("/healthz") == (200, "ok")


def test_create_sets_server_metadata_and_pod_defaults(http: Client) -> None:
    status, created = http.post(PODS, pod("p1"))
    assert status == 201
    meta = created["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert int(meta["resourceVersion"]) > 0
    assert created["kind"] == "Pod" and created["apiVersion"] == "v1"
    assert created["spec"]["schedulerName"] == "default-scheduler"
    assert created["spec"]["priority"] == 0
    assert created["status"]["phase"] == "Pending"
    _, fetched = http.get(f"{PODS}/p1")
    assert fetched == created


def test_resource_versions_increase_across_resources(http: Client) -> None:
    rvs = []
    for i in range(3):
        rvs.append(int(http.post(PODS, pod(f"p{i}"))[1]["metadata"]["resourceVersion"]))
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}}
        rvs.append(int(http.post("/api/v1/nodes", node)[1]["metadata"]["resourceVersion"]))
    _, updated = http.patch(f"{PODS}/p0", {"metadata": {"labels": {"a": "b"}}})
    rvs.append(int(updated["metadata"]["resourceVersion"]))
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)
    _, listed = http.get(PODS)
    assert int(listed["metadata"]["resourceVersion"]) == rvs[-1]


def test_already_exists_and_not_found_status_bodies(http: Client) -> None:
    http.post(PODS, pod("dup"))
    status, body = http.post(PODS, pod("dup"))
    assert status == 409
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "dup" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "dup", "kind": "pods"},
        "code": 409,
    }
    status, body = http.get(f"{PODS}/missing")
    assert status == 404
    assert body["message"] == 'pods "missing" not found' and body["reason"] == "NotFound"
    assert body["details"] == {"name": "missing", "kind": "pods"}
    status, body = http.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/x")
    assert body["message"] == 'leases.coordination.k8s.io "x" not found'
    assert body["details"] == {"name": "x", "group": "coordination.k8s.io", "kind": "leases"}


def test_namespace_rules(http: Client) -> None:
    _, nss = http.get("/api/v1/namespaces")
    names = [n["metadata"]["name"] for n in nss["items"]]
    assert names == ["default", "kube-node-lease", "kube-public", "kube-system"]
    status, body = http.post(PODS, pod("p", ns="other"))
    assert status == 400 and body["reason"] == "BadRequest"
    assert "does not match the namespace" in body["message"]
    status, body = http.post("/api/v1/namespaces/nope/pods", pod("p", ns="nope"))
    assert status == 404 and body["message"] == 'namespaces "nope" not found'
    status, ns = http.post("/api/v1/namespaces", {"metadata": {"name": "team"}})
    assert status == 201 and ns["status"]["phase"] == "Active"
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team"}
    assert http.post("/api/v1/namespaces/team/pods", pod("p", ns="team"))[0] == 201
    # deleting a namespace takes its contents with it
    assert http.delete("/api/v1/namespaces/team")[0] == 200
    assert http.get("/api/v1/namespaces/team/pods/p")[0] == 404


def test_generate_name_and_validation(http: Client) -> None:
    body = pod("")
    body["metadata"] = {"generateName": "web-"}
    status, created = http.post(PODS, body)
    assert status == 201 and re.fullmatch(r"web-[a-z0-9]{5}", created["metadata"]["name"])
    body["metadata"] = {}
    status, err = http.post(PODS, body)
    assert status == 422 and err["reason"] == "Invalid"
    assert "name or generateName is required" in err["message"]
    status, err = http.post(PODS, pod("UPPER"))
    assert status == 422 and 'Pod "UPPER" is invalid: metadata.name' in err["message"]
    no_containers = pod("empty")
    no_containers["spec"] = {}
    status, err = http.post(PODS, no_containers)
    assert (
        status == 422
        and err["message"] == 'Pod "empty" is invalid: spec.containers: Required value'
    )
    status, err = http.request("POST", PODS, raw=b"{not json")
    assert status == 400 and err["kind"] == "Status"


def test_priority_admission(http: Client) -> None:
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    }
    assert http.post("/apis/scheduling.k8s.io/v1/priorityclasses", pc)[0] == 201
    _, high = http.post(PODS, pod("hi", priorityClassName="high"))
    assert high["spec"]["priority"] == 1000
    _, crit = http.post(PODS, pod("crit", priorityClassName="system-node-critical"))
    assert crit["spec"]["priority"] == 2000001000
    status, err = http.post(PODS, pod("bad", priorityClassName="nope"))
    assert status == 403
    assert err["message"] == 'pods "bad" is forbidden: no PriorityClass with name nope was found'


def test_list_shape_and_all_namespaces(http: Client) -> None:
    http.post("/api/v1/namespaces", {"metadata": {"name": "b"}})
    http.post(PODS, pod("p1"))
    http.post("/api/v1/namespaces/b/pods", pod("p2", ns="b"))
    _, listed = http.get(PODS)
    assert listed["kind"] == "PodList" and listed["apiVersion"] == "v1"
    assert set(listed["metadata"]) == {"resourceVersion"}
    assert [i["metadata"]["name"] for i in listed["items"]] == ["p1"]
    assert "kind" not in listed["items"][0] and "apiVersion" not in listed["items"][0]
    _, everywhere = http.get("/api/v1/pods")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everywhere["items"]] == [
        ("b", "p2"),
        ("default", "p1"),
    ]
    # CRD lists are unstructured: their items keep kind and apiVersion
    pg = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "g"},
        "spec": {"minMember": 2},
    }
    path = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
    status, created = http.post(path, pg)
    assert status == 201 and created["metadata"]["generation"] == 1
    _, groups = http.get(path)
    assert groups["kind"] == "PodGroupList" and groups["items"][0]["kind"] == "PodGroup"


def test_pagination(http: Client) -> None:
    for i in range(5):
        http.post(PODS, pod(f"p{i}"))
    _, page = http.get(PODS, limit=2)
    assert [i["metadata"]["name"] for i in page["items"]] == ["p0", "p1"]
    assert page["metadata"]["remainingItemCount"] == 3
    names = [i["metadata"]["name"] for i in page["items"]]
    while page["metadata"].get("continue"):
        _, page = http.get(PODS, limit=2, **{"continue": page["metadata"]["continue"]})
        names += [i["metadata"]["name"] for i in page["items"]]
    assert names == [f"p{i}" for i in range(5)]


def test_pages_show_writes_made_between_them(apiserver: TestAPIServer, http: Client) -> None:
    for i in range(6):
        http.post(PODS, pod(f"p{i}", labels={"app": "x" if i % 2 else "y"}))
    apiserver.create(make_namespace("other"))
    apiserver.create(make_pod("p9", namespace="other", labels={"app": "x"}))
    _, page = http.get("/api/v1/pods", limit=2, labelSelector="app=x")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in page["items"]] == [
        ("default", "p1"),
        ("default", "p3"),
    ]
    assert page["metadata"]["remainingItemCount"] == 2
    http.delete(f"{PODS}/p5")  # after the page's last item: gone from the next page
    http.post(PODS, pod("p4a", labels={"app": "x"}))
    http.post(PODS, pod("p0a", labels={"app": "x"}))  # before it: not seen
    cont = page["metadata"]["continue"]
    _, page = http.get("/api/v1/pods", limit=2, labelSelector="app=x", **{"continue": cont})
    assert [i["metadata"]["name"] for i in page["items"]] == ["p4a", "p9"]
    assert "continue" not in page["metadata"]
    _, page = http.get(PODS, limit=3, fieldSelector="metadata.name!=p2")
    assert [i["metadata"]["name"] for i in page["items"]] == ["p0", "p0a", "p1"]
    assert page["metadata"]["remainingItemCount"] == 3
    apiserver.patch("pods", "default", "p3", {"metadata": {"labels": {"app": "z"}}})
    _, page = http.get(PODS, labelSelector="app=x")
    assert [i["metadata"]["name"] for i in page["items"]] == ["p0a", "p1", "p4a"]


def test_update_conflicts_and_unconditional_update(http: Client) -> None:
    _, created = http.post(PODS, pod("p"))
    stale = dict(created)
    fresh = dict(created, metadata={**created["metadata"], "labels": {"v": "1"}})
    status, updated = http.put(f"{PODS}/p", fresh)
    assert status == 200 and updated["metadata"]["labels"] == {"v": "1"}
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    status, err = http.put(f"{PODS}/p", stale)
    assert status == 409
    assert err["reason"] == "Conflict"
    assert err["message"] == (
        'Operation cannot be fulfilled on pods "p": the object has been modified; please apply '
        "your changes to the latest version and try again"
    )
    assert err["details"] == {"name": "p", "kind": "pods"}
    unconditional = dict(updated, metadata={**updated["metadata"], "labels": {"v": "2"}})
    del unconditional["metadata"]["resourceVersion"]
    status, forced = http.put(f"{PODS}/p", unconditional)
    assert status == 200 and forced["metadata"]["labels"] == {"v": "2"}
    # a write that changes nothing keeps the resourceVersion
    status, same = http.put(f"{PODS}/p", forced)
    assert same["metadata"]["resourceVersion"] == forced["metadata"]["resourceVersion"]
    # name in body must match the URL
    status, err = http.put(f"{PODS}/other", forced)
    assert status == 400
    assert err["message"] == "the name of the object (p) does not match the name on the URL (other)"


def test_main_resource_update_cannot_touch_status_or_bind(http: Client) -> None:
    _, created = http.post(PODS, pod("p"))
    body = dict(created, status={"phase": "Running"})
    _, updated = http.put(f"{PODS}/p", body)
    assert updated["status"]["phase"] == "Pending"
    status, err = http.patch(f"{PODS}/p", {"spec": {"nodeName": "n1"}})
    assert status == 422 and err["reason"] == "Invalid"
    assert "pod updates may not change fields other than" in err["message"]
    status, _ = http.patch(f"{PODS}/p", {"spec": {"activeDeadlineSeconds": 30}})
    assert status == 200


def test_status_subresource(http: Client) -> None:
    http.post(PODS, pod("p"))
    status, got = http.get(f"{PODS}/p/status")
    assert status == 200 and got["kind"] == "Pod"
    body = dict(got, status={"phase": "Running"}, spec={**got["spec"], "nodeName": "sneaky"})
    body["metadata"] = {**got["metadata"], "labels": {"ignored": "yes"}}
    status, updated = http.put(f"{PODS}/p/status", body)
    assert status == 200 and updated["status"] == {"phase": "Running"}
    assert "nodeName" not in updated["spec"] and "labels" not in updated["metadata"]
    status, _ = http.put(f"{PODS}/p/status", got)  # stale resourceVersion
    assert status == 409
    status, patched = http.patch(
        f"{PODS}/p/status",
        {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}},
        "strategic",
    )
    assert status == 200 and patched["status"]["phase"] == "Running"
    assert http.request("POST", f"{PODS}/p/status", {})[0] == 405


def test_merge_strategic_and_json_patches(http: Client) -> None:
    body = pod("p", labels={"a": "1", "b": "2"})
    body["spec"]["containers"].append({"name": "side", "image": "busybox"})
    http.post(PODS, body)
    _, merged = http.patch(f"{PODS}/p", {"metadata": {"labels": {"a": None, "c": "3"}}})
    assert merged["metadata"]["labels"] == {"b": "2", "c": "3"}
    # strategic: containers merge by name (a merge patch would replace the whole list)
    _, strategic = http.patch(
        f"{PODS}/p", {"spec": {"containers": [{"name": "side", "image": "busybox:2"}]}}, "strategic"
    )
    assert [(c["name"], c["image"]) for c in strategic["spec"]["containers"]] == [
        ("c", "pause"),
        ("side", "busybox:2"),
    ]
    # conditions merge by type through the status subresource
    conds = {
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
        }
    }
    http.patch(f"{PODS}/p/status", conds, "strategic")
    more = {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    _, both = http.patch(f"{PODS}/p/status", more, "strategic")
    assert [c["type"] for c in both["status"]["conditions"]] == ["PodScheduled", "Ready"]
    ops = [
        {"op": "test", "path": "/metadata/labels/b", "value": "2"},
        {"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}},
        {"op": "replace", "path": "/metadata/labels/b", "value": "20"},
        {"op": "remove", "path": "/metadata/labels/c"},
        {"op": "add", "path": "/spec/tolerations", "value": []},
        {"op": "add", "path": "/spec/tolerations/-", "value": {"key": "k", "operator": "Exists"}},
    ]
    status, jp = http.patch(f"{PODS}/p", ops, "json")
    assert status == 200
    assert jp["metadata"]["labels"] == {"b": "20"}
    assert jp["metadata"]["annotations"] == {"x": "y"}
    assert jp["spec"]["tolerations"] == [{"key": "k", "operator": "Exists"}]
    status, err = http.patch(
        f"{PODS}/p", [{"op": "test", "path": "/metadata/name", "value": "no"}], "json"
    )
    assert status == 422 and err["kind"] == "Status"
    # a resourceVersion in a patch is a precondition
    stale = {"metadata": {"resourceVersion": "1", "labels": {"z": "z"}}}
    assert http.patch(f"{PODS}/p", stale)[0] == 409
    # CRDs do not take strategic merge patches
    pg = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": "g"},
    }
    path = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
    http.post(path, pg)
    status, err = http.patch(f"{path}/g", {"spec": {"minMember": 3}}, "strategic")
    assert status == 415 and err["reason"] == "UnsupportedMediaType"
    status, ok = http.patch(f"{path}/g", {"spec": {"minMember": 3}})
    assert status == 200 and ok["metadata"]["generation"] == 2


def test_delete_semantics(http: Client) -> None:
    _, created = http.post(PODS, pod("p"))
    bad_uid = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "nope"}}
    status, err = http.delete(f"{PODS}/p", bad_uid)
    assert status == 409 and err["reason"] == "Conflict"
    assert err["message"] == (
        'Operation cannot be fulfilled on Pod "p": the UID in the precondition (nope) does not '
        f"match the UID in record ({created['metadata']['uid']}). The object might have been "
        "deleted and then recreated"
    )
    bad_rv = {"preconditions": {"resourceVersion": "1"}}
    status, err = http.delete(f"{PODS}/p", bad_rv)
    assert status == 409 and "the ResourceVersion in the precondition (1)" in err["message"]
    good = {"preconditions": {"uid": created["metadata"]["uid"]}}
    status, gone = http.delete(f"{PODS}/p", good)
    assert status == 200 and gone["metadata"]["name"] == "p" and gone["kind"] == "Pod"
    assert http.get(f"{PODS}/p")[0] == 404
    status, err = http.delete(f"{PODS}/p")
    assert status == 404 and err["message"] == 'pods "p" not found'


def test_finalizers_delay_deletion(http: Client) -> None:
    body = pod("p")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    http.post(PODS, body)
    status, pending = http.delete(f"{PODS}/p")
    assert status == 200 and pending["metadata"]["deletionTimestamp"]
    assert http.get(f"{PODS}/p")[0] == 200
    status, _ = http.patch(f"{PODS}/p", {"metadata": {"finalizers": None}})
    assert status == 200
    assert http.get(f"{PODS}/p")[0] == 404


def test_delete_collection(http: Client) -> None:
    for i in range(3):
        http.post(PODS, pod(f"p{i}", labels={"keep": "yes" if i == 0 else "no"}))
    status, deleted = http.delete(PODS, labelSelector="keep=no")
    assert status == 200 and len(deleted["items"]) == 2
    _, left = http.get(PODS)
    assert [i["metadata"]["name"] for i in left["items"]] == ["p0"]


def test_errors_are_status_objects(http: Client) -> None:
    status, body = http.get("/api/v1/widgets")
    assert status == 404 and body["kind"] == "Status" and body["reason"] == "NotFound"
    status, body = http.request("PUT", PODS, {})
    assert status == 405 and body["reason"] == "MethodNotAllowed"
    status, body = http.get(PODS, fieldSelector="spec.bogus=1")
    assert status == 400 and body["message"] == "field label not supported: spec.bogus"
    status, body = http.get(PODS, labelSelector="a in (b")
    assert status == 400 and body["kind"] == "Status"


def test_other_resource_kinds(http: Client) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l"},
        "spec": {"holderIdentity": "a"},
    }
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    assert http.post(path, lease)[0] == 201
    core_ev = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Scheduled",
        "message": "ok",
        "type": "Normal",
    }
    assert http.post("/api/v1/namespaces/default/events", core_ev)[0] == 201
    new_ev = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e2"},
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "FailedScheduling",
        "note": "0/1 nodes",
        "type": "Warning",
        "action": "Scheduling",
        "reportingController": "ksched",
        "reportingInstance": "ksched-1",
        "eventTime": "2024-01-01T00:00:00.000000Z",
    }
    assert http.post("/apis/events.k8s.io/v1/namespaces/default/events", new_ev)[0] == 201
    _, evs = http.get("/api/v1/events", fieldSelector="involvedObject.name=p,reason=Scheduled")
    assert [e["metadata"]["name"] for e in evs["items"]] == ["e1"]
    _, evs2 = http.get("/apis/events.k8s.io/v1/events", fieldSelector="regarding.name=p")
    assert [e["metadata"]["name"] for e in evs2["items"]] == ["e2"]
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "b"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}},
    }
    assert http.post("/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)[0] == 201
    _, pcs = http.get("/apis/scheduling.k8s.io/v1/priorityclasses")
    assert {p["metadata"]["name"] for p in pcs["items"]} == {
        "system-cluster-critical",
        "system-node-critical",
    }
    assert http.get("/api/v1/namespaces/default/nodes")[0] == 404  # nodes are cluster-scoped


def test_store_helpers_share_the_http_path(apiserver: TestAPIServer, http: Client) -> None:
    created = apiserver.create(pod("p"))
    assert http.get(f"{PODS}/p")[1] == created
    apiserver.bind("default", "p", "n1")
    assert apiserver.get("pods", "default", "p")["spec"]["nodeName"] == "n1"
    assert [
        p["metadata"]["name"] for p in apiserver.list("Pod", field_selector="spec.nodeName=n1")
    ] == ["p"]
    assert apiserver.objects["pods"][0]["metadata"]["name"] == "p"
    assert apiserver.try_get("po", "default", "nope") is None
    apiserver.delete("pods", "default", "p")
    assert http.get(f"{PODS}/p")[0] == 404


def test_binding_semantics_and_texts(http: Client) -> None:
    _, created = http.post(PODS, pod("p"))
    uid = created["metadata"]["uid"]
    status, err = http.post(
        f"{PODS}/p/binding",
        {"metadata": {"name": "p", "uid": "wrong"}, "target": {"kind": "Node", "name": "n1"}},
    )
    assert status == 409 and err["reason"] == "Conflict"
    assert err["message"].startswith('Operation cannot be fulfilled on pods "p": ')
    assert (
        "Precondition failed: UID in precondition: wrong, UID in object meta: " + uid
        in (err["message"])
    )
    status, err = http.post(
        f"{PODS}/p/binding", {"metadata": {"name": "q"}, "target": {"name": "n1"}}
    )
    assert status == 400
    assert err["message"] == "name in URL does not match name in Binding object"
    status, err = http.post(
        f"{PODS}/nope/binding", {"metadata": {"name": "nope"}, "target": {"name": "n1"}}
    )
    assert status == 404 and err["message"] == 'pods "nope" not found'
    status, body = http.post(
        f"{PODS}/p/binding",
        {
            "kind": "Binding",
            "apiVersion": "v1",
            "metadata": {"name": "p", "uid": uid, "annotations": {"why": "fits"}},
            "target": {"kind": "Node", "name": "n1"},
        },
    )
    assert status == 201
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    _, bound = http.get(f"{PODS}/p")
    assert bound["spec"]["nodeName"] == "n1"
    assert bound["metadata"]["annotations"] == {"why": "fits"}
    (cond,) = bound["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["lastProbeTime"]) == ("PodScheduled", "True", None)
    assert int(bound["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    status, err = http.post(
        f"{PODS}/p/binding", {"metadata": {"name": "p"}, "target": {"name": "n2"}}
    )
    assert status == 409
    assert err == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Operation cannot be fulfilled on pods/binding "p": pod p is already '
        'assigned to node "n1"',
        "reason": "Conflict",
        "details": {"name": "p", "kind": "pods/binding"},
        "code": 409,
    }
    assert http.request("GET", f"{PODS}/p/binding")[0] == 405


def test_binding_replaces_an_unschedulable_condition(http: Client) -> None:
    http.post(PODS, pod("p"))
    unschedulable = {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/3",
                }
            ]
        }
    }
    http.patch(f"{PODS}/p/status", unschedulable, "strategic")
    http.post(f"{PODS}/p/binding", {"metadata": {"name": "p"}, "target": {"name": "n1"}})
    _, bound = http.get(f"{PODS}/p")
    (cond,) = bound["status"]["conditions"]
    assert cond["status"] == "True" and "reason" not in cond and "message" not in cond


def test_binding_clears_the_nomination(http: Client) -> None:
    """v1.35+ kube-apiserver (ClearingNominatedNodeNameAfterBinding, on by default)."""
    http.post(PODS, pod("p"))
    http.patch(f"{PODS}/p/status", {"status": {"nominatedNodeName": "n1"}}, "merge")
    assert http.get(f"{PODS}/p")[1]["status"]["nominatedNodeName"] == "n1"
    http.post(f"{PODS}/p/binding", {"metadata": {"name": "p"}, "target": {"name": "n1"}})
    assert "nominatedNodeName" not in http.get(f"{PODS}/p")[1]["status"]


def test_graceful_pod_deletion_option() -> None:
    with TestAPIServer(graceful_pod_deletion=True).run_in_thread() as srv:
        client = Client(srv.url)
        client.post(PODS, pod("bound", nodeName="n1", terminationGracePeriodSeconds=10))
        client.post(PODS, pod("pending"))
        status, terminating = client.delete(f"{PODS}/bound")
        assert status == 200 and terminating["metadata"]["deletionGracePeriodSeconds"] == 10
        assert client.get(f"{PODS}/bound")[1]["metadata"]["deletionTimestamp"]
        assert client.delete(f"{PODS}/pending")[0] == 200
        assert client.get(f"{PODS}/pending")[0] == 404  # unbound pods go at once
        client.delete(f"{PODS}/bound", {"gracePeriodSeconds": 0})
        assert client.get(f"{PODS}/bound")[0] == 404


def test_dry_run_changes_nothing(apiserver: TestAPIServer, http: Client) -> None:
    rv = apiserver.resource_version
    status, would = http.post(PODS, pod("p"), dryRun="All")
    assert status == 201 and would["metadata"]["name"] == "p"
    assert http.get(f"{PODS}/p")[0] == 404 and apiserver.resource_version == rv


def test_table_output_for_kubectl(http: Client) -> None:
    http.post(PODS, pod("p", nodeName="n1"))
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
    _, t = http.request("GET", PODS, headers={"Accept": accept})
    assert t["kind"] == "Table" and t["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in t["columnDefinitions"]][:5] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
    ]
    (row,) = t["rows"]
    assert row["cells"][:3] == ["p", "0/1", "Pending"] and row["cells"][6] == "n1"
    assert row["object"]["kind"] == "PartialObjectMetadata"


def test_scheduling_gates(http: Client) -> None:
    _, gated = http.post(PODS, pod("g", schedulingGates=[{"name": "a"}, {"name": "b"}]))
    (cond,) = gated["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == (
        "PodScheduled",
        "False",
        "SchedulingGated",
    )
    status, err = http.patch(f"{PODS}/g", {"spec": {"schedulingGates": [{"name": "c"}]}})
    assert status == 422 and "only deletion is allowed" in err["message"]
    status, ungated = http.patch(
        f"{PODS}/g", [{"op": "remove", "path": "/spec/schedulingGates/0"}], "json"
    )
    assert status == 200 and ungated["spec"]["schedulingGates"] == [{"name": "b"}]
