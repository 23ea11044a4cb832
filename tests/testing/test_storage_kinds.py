"""PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers and
VolumeAttachments on the test API server: what the volume plugins read, and the PV/PVC
writes VolumeBinding makes (optimistic-concurrency updates, annotation patches)."""

from __future__ import annotations

from typing import Any

import pytest

from ksched.testing import (
    TestAPIServer,
    make_csidriver,
    make_csinode,
    make_namespace,
    make_pv,
    make_pvc,
    make_storage_class,
    make_volume_attachment,
)

from ._http import Client

PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
PVS = "/api/v1/persistentvolumes"
STORAGE = "/apis/storage.k8s.io/v1"

# (collection path, builder of an object named by its argument, a label-free spec change)
KINDS: list[tuple[str, Any, dict[str, Any]]] = [
    (PVCS, make_pvc, {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}),
    (PVS, make_pv, {"spec": {"capacity": {"storage": "2Gi"}}}),
    (f"{STORAGE}/storageclasses", make_storage_class, {"parameters": {"type": "ssd"}}),
    (f"{STORAGE}/csinodes", lambda n: make_csinode(n, {"d": 1}), {"spec": {"drivers": []}}),
    (f"{STORAGE}/csidrivers", make_csidriver, {"spec": {"podInfoOnMount": True}}),
    (
        f"{STORAGE}/volumeattachments",
        lambda n: make_volume_attachment(n, "d", "n1", "pv"),
        {"spec": {"nodeName": "n2"}},
    ),
]
IDS = [path.rsplit("/", 1)[1] for path, _, _ in KINDS]


def test_discovery_of_the_storage_kinds(http: Client) -> None:
    _, core = http.get("/api/v1")
    by_name = {r["name"]: r for r in core["resources"]}
    pvc, pv = by_name["persistentvolumeclaims"], by_name["persistentvolumes"]
    assert (pvc["kind"], pvc["namespaced"], pvc["shortNames"]) == (
        "PersistentVolumeClaim",
        True,
        ["pvc"],
    )
    assert (pv["kind"], pv["namespaced"], pv["shortNames"]) == ("PersistentVolume", False, ["pv"])
    assert by_name["persistentvolumeclaims/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["persistentvolumes/status"]["verbs"] == ["get", "patch", "update"]
    _, storage = http.get(STORAGE)
    assert storage["groupVersion"] == "storage.k8s.io/v1"
    assert {r["name"]: (r["kind"], r["namespaced"]) for r in storage["resources"]} == {
        "storageclasses": ("StorageClass", False),
        "csinodes": ("CSINode", False),
        "csidrivers": ("CSIDriver", False),
        "csistoragecapacities": ("CSIStorageCapacity", True),
        "volumeattachments": ("VolumeAttachment", False),
        "volumeattachments/status": ("VolumeAttachment", False),
    }
    assert next(r for r in storage["resources"] if r["name"] == "storageclasses")["shortNames"] == [
        "sc"
    ]
    assert http.get("/apis/storage.k8s.io")[1]["preferredVersion"]["version"] == "v1"


@pytest.mark.parametrize(("path", "build", "change"), KINDS, ids=IDS)
def test_crud_with_optimistic_concurrency(
    http: Client, path: str, build: Any, change: dict[str, Any]
) -> None:
    status, created = http.post(path, build("a"))
    assert status == 201 and created["metadata"]["uid"]
    assert http.post(path, build("a"))[0] == 409
    assert http.post(path, make_namespace("x"))[0] == 400  # another kind's collection
    http.post(path, build("b"))
    _, listed = http.get(path)
    assert [o["metadata"]["name"] for o in listed["items"]] == ["a", "b"]
    assert listed["kind"] == f"{created['kind']}List"

    _, got = http.get(f"{path}/a")
    got["metadata"]["annotations"] = {"k": "v"}
    status, updated = http.put(f"{path}/a", got)
    assert status == 200 and updated["metadata"]["annotations"] == {"k": "v"}
    assert updated["metadata"]["resourceVersion"] != got["metadata"]["resourceVersion"]
    status, stale = http.put(f"{path}/a", got)  # the resourceVersion read before the update
    assert status == 409 and stale["reason"] == "Conflict"
    _, merged = http.patch(f"{path}/a", {"metadata": {"annotations": {"k": None, "j": "w"}}})
    assert merged["metadata"]["annotations"] == {"j": "w"}
    status, changed = http.patch(f"{path}/a", change, "strategic")
    assert status == 200, changed
    assert http.delete(f"{path}/a")[0] == 200
    assert http.get(f"{path}/a")[0] == 404
    assert [o["metadata"]["name"] for o in http.get(path)[1]["items"]] == ["b"]


def test_claims_are_namespaced_and_listed_across_namespaces(http: Client) -> None:
    http.post("/api/v1/namespaces", make_namespace("team"))
    http.post(PVCS, make_pvc("a"))
    http.post("/api/v1/namespaces/team/persistentvolumeclaims", make_pvc("b", "team"))
    _, everywhere = http.get("/api/v1/persistentvolumeclaims")
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in everywhere["items"]] == [
        ("default", "a"),
        ("team", "b"),
    ]
    _, team = http.get("/api/v1/persistentvolumeclaims", fieldSelector="metadata.namespace=team")
    assert [o["metadata"]["name"] for o in team["items"]] == ["b"]
    assert "namespace" not in http.post(PVS, make_pv("v"))[1]["metadata"]


def test_volume_and_claim_status_belongs_to_the_status_subresource(http: Client) -> None:
    _, pv = http.post(PVS, make_pv("v", phase="Available"))
    assert pv["status"] == {"phase": "Available"}  # kept on create, like a pod's
    assert http.post(PVCS, make_pvc("c"))[1]["status"] == {"phase": "Pending"}
    _, ignored = http.patch(f"{PVS}/v", {"status": {"phase": "Bound"}})
    assert ignored["status"] == {"phase": "Available"}
    _, bound = http.patch(f"{PVS}/v/status", {"status": {"phase": "Bound"}})
    assert bound["status"] == {"phase": "Bound"}
    _, claim = http.get(f"{PVCS}/c")
    claim["status"] = {"phase": "Bound", "capacity": {"storage": "1Gi"}}
    status, put = http.put(f"{PVCS}/c/status", claim)
    assert status == 200 and put["status"]["phase"] == "Bound"
    assert http.put(f"{PVCS}/c/status", claim)[0] == 409  # stale resourceVersion


def test_claim_spec_is_immutable_but_for_volume_name_once_and_requests(http: Client) -> None:
    http.post(PVCS, make_pvc("c", storage_class="fast"))
    _, bound = http.patch(f"{PVCS}/c", {"spec": {"volumeName": "pv-1"}})
    assert bound["spec"]["volumeName"] == "pv-1"
    _, grown = http.patch(f"{PVCS}/c", {"spec": {"resources": {"requests": {"storage": "5Gi"}}}})
    assert grown["spec"]["resources"]["requests"]["storage"] == "5Gi"
    for change in ({"volumeName": "pv-2"}, {"storageClassName": "slow"}):
        status, err = http.patch(f"{PVCS}/c", {"spec": change})
        assert status == 422, change
        assert err["message"].startswith(
            'PersistentVolumeClaim "c" is invalid: spec: Forbidden: spec is immutable after creation'
        )


def test_defaults_the_volume_plugins_rely_on(http: Client) -> None:
    _, sc = http.post(f"{STORAGE}/storageclasses", make_storage_class("s"))
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    _, driver = http.post(f"{STORAGE}/csidrivers", make_csidriver("d", attachRequired=False))
    assert driver["spec"]["attachRequired"] is False  # given values stay
    assert driver["spec"]["storageCapacity"] is False and driver["spec"]["podInfoOnMount"] is False
    _, pv = http.post(PVS, make_pv("v"))
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["volumeMode"] == "Filesystem" and pv["status"] == {"phase": "Pending"}
    assert http.post(PVCS, make_pvc("c"))[1]["spec"]["volumeMode"] == "Filesystem"


def test_strategic_merge_patch_merges_csinode_drivers_by_name(http: Client) -> None:
    path = f"{STORAGE}/csinodes"
    http.post(path, make_csinode("n1", {"a": 1, "b": 2}))
    patch = {"spec": {"drivers": [{"name": "b", "allocatable": {"count": 5}}, {"name": "c"}]}}
    _, patched = http.patch(f"{path}/n1", patch, "strategic")
    drivers = {d["name"]: d.get("allocatable", {}).get("count") for d in patched["spec"]["drivers"]}
    assert drivers == {"a": 1, "b": 5, "c": None}


def test_watch_volumes_from_a_resource_version(apiserver: TestAPIServer, http: Client) -> None:
    _, first = http.post(PVS, make_pv("a"))
    http.post(PVS, make_pv("b"))
    http.patch(f"{PVS}/a", {"spec": {"claimRef": {"namespace": "default", "name": "c"}}})
    http.delete(f"{PVS}/b")
    w = http.watch(PVS, resourceVersion=first["metadata"]["resourceVersion"])
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in w.take(3)] == [
        ("ADDED", "b"),
        ("MODIFIED", "a"),
        ("DELETED", "b"),
    ]
    apiserver.wait_for_watchers(1)
    apiserver.create(make_pvc("c"))  # another collection: not on this watch
    apiserver.create(make_pv("c"))
    (live,) = w.take(1)
    assert (live["type"], live["object"]["kind"]) == ("ADDED", "PersistentVolume")
    w.close()


def test_namespace_deletion_removes_its_claims_only(apiserver: TestAPIServer, http: Client) -> None:
    http.post("/api/v1/namespaces", make_namespace("team"))
    apiserver.create(make_pvc("c", "team"))
    apiserver.create(make_pv("v", claim=("team", "c")))
    http.delete("/api/v1/namespaces/team")
    assert apiserver.list("pvc", "team") == []
    assert [o["metadata"]["name"] for o in apiserver.list("pv")] == ["v"]
