"""The official `kubernetes` Python client (sync) against the test API server."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ksched.testing import (
    TestAPIServer,
    make_controller,
    make_namespace,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
)

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402


@pytest.fixture
def api_client(apiserver: TestAPIServer, tmp_path: Path) -> Iterator[client.ApiClient]:
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    c = config.new_client_from_config(config_file=str(kubeconfig))
    yield c
    c.close()


def test_list_pods_and_nodes(apiserver: TestAPIServer, api_client: client.ApiClient) -> None:
    apiserver.create(make_node("n1", cpu="8"))
    apiserver.create(make_pod("p1", cpu="500m", labels={"app": "x"}))
    v1 = client.CoreV1Api(api_client)
    pods = v1.list_namespaced_pod("default", label_selector="app=x")
    assert [p.metadata.name for p in pods.items] == ["p1"]
    assert pods.items[0].spec.containers[0].resources.requests == {"cpu": "500m"}
    assert int(pods.metadata.resource_version) == apiserver.resource_version
    nodes = v1.list_node()
    assert [n.metadata.name for n in nodes.items] == ["n1"]
    assert nodes.items[0].status.allocatable["cpu"] == "8"
    all_pods = v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=")
    assert [p.metadata.name for p in all_pods.items] == ["p1"]
    with pytest.raises(client.ApiException) as err:
        v1.read_namespaced_pod("nope", "default")
    assert err.value.status == 404
    assert json.loads(err.value.body)["reason"] == "NotFound"


def test_watch_stream(apiserver: TestAPIServer, api_client: client.ApiClient) -> None:
    v1 = client.CoreV1Api(api_client)
    apiserver.create(make_pod("before"))

    def later() -> None:
        apiserver.wait_for_watchers(1, "pods")
        apiserver.create(make_pod("after"))
        apiserver.bind("default", "after", "n1")

    t = threading.Thread(target=later)
    t.start()
    seen = []
    started = time.monotonic()
    for event in watch.Watch().stream(v1.list_namespaced_pod, "default", timeout_seconds=2):
        seen.append((event["type"], event["object"].metadata.name, event["object"].spec.node_name))
    t.join()
    assert seen == [
        ("ADDED", "before", None),
        ("ADDED", "after", None),
        ("MODIFIED", "after", "n1"),
    ]
    assert time.monotonic() - started < 10


def test_binding_with_raw_response(apiserver: TestAPIServer, api_client: client.ApiClient) -> None:
    """create_namespaced_pod_binding cannot deserialize the Status kube answers with (a known
    client issue), so read the raw response."""
    apiserver.create(make_pod("p"))
    v1 = client.CoreV1Api(api_client)
    body = client.V1Binding(
        metadata=client.V1ObjectMeta(name="p"),
        target=client.V1ObjectReference(kind="Node", name="n1"),
    )
    resp = v1.create_namespaced_pod_binding("p", "default", body, _preload_content=False)
    assert resp.status == 201
    assert json.loads(resp.data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    pod = v1.read_namespaced_pod("p", "default")
    assert pod.spec.node_name == "n1"
    scheduled = [c for c in pod.status.conditions if c.type == "PodScheduled"]
    assert scheduled[0].status == "True"
    with pytest.raises(client.ApiException) as err:
        v1.create_namespaced_pod_binding("p", "default", body, _preload_content=False)
    assert err.value.status == 409
    status = json.loads(err.value.body)
    assert status["message"] == (
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    )
    # the legacy collection endpoint does the same
    apiserver.create(make_pod("q"))
    legacy = client.V1Binding(
        metadata=client.V1ObjectMeta(name="q"),
        target=client.V1ObjectReference(kind="Node", name="n2"),
    )
    resp = v1.create_namespaced_binding("default", legacy, _preload_content=False)
    assert resp.status == 201
    assert apiserver.get("pods", "default", "q")["spec"]["nodeName"] == "n2"


def test_lease_optimistic_concurrency(api_client: client.ApiClient) -> None:
    co = client.CoordinationV1Api(api_client)
    lease = co.create_namespaced_lease(
        "kube-system",
        client.V1Lease(
            metadata=client.V1ObjectMeta(name="ksched"),
            spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15),
        ),
    )
    stale_rv = lease.metadata.resource_version
    lease.spec.holder_identity = "b"
    replaced = co.replace_namespaced_lease("ksched", "kube-system", lease)
    assert replaced.spec.holder_identity == "b"
    assert int(replaced.metadata.resource_version) > int(stale_rv)
    with pytest.raises(client.ApiException) as err:
        co.replace_namespaced_lease("ksched", "kube-system", lease)  # still carries stale_rv
    assert err.value.status == 409
    assert "the object has been modified" in json.loads(err.value.body)["message"]
    patched = co.patch_namespaced_lease("ksched", "kube-system", {"spec": {"holderIdentity": "c"}})
    assert patched.spec.holder_identity == "c"
    with pytest.raises(client.ApiException) as err:
        co.patch_namespaced_lease(
            "ksched",
            "kube-system",
            {"metadata": {"resourceVersion": stale_rv}, "spec": {"holderIdentity": "d"}},
        )
    assert err.value.status == 409
    co.delete_namespaced_lease("ksched", "kube-system")
    assert co.list_namespaced_lease("kube-system").items == []


def test_workload_kinds(apiserver: TestAPIServer, api_client: client.ApiClient) -> None:
    """What a client-go informer for PodTopologySpread's default selectors reads."""
    v1, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    apiserver.create(make_namespace("team"))
    svc = v1.create_namespaced_service(
        "team",
        client.V1Service(
            metadata=client.V1ObjectMeta(name="web"),
            spec=client.V1ServiceSpec(
                selector={"app": "web"}, ports=[client.V1ServicePort(port=80)]
            ),
        ),
    )
    assert svc.metadata.uid and svc.spec.selector == {"app": "web"}
    apiserver.create(make_controller("ReplicaSet", "web", {"app": "web"}, "team"))
    apiserver.create(make_controller("StatefulSet", "db", {"app": "db"}))
    apiserver.create(make_controller("ReplicationController", "old", {"app": "old"}))
    (rs,) = apps.list_replica_set_for_all_namespaces().items
    assert (rs.metadata.namespace, rs.spec.selector.match_labels) == ("team", {"app": "web"})
    assert apps.read_namespaced_stateful_set("db", "default").spec.service_name == "db"
    assert v1.list_namespaced_replication_controller("default").items[0].spec.selector == {
        "app": "old"
    }
    assert [s.metadata.name for s in v1.list_service_for_all_namespaces().items] == ["web"]

    def later() -> None:
        apiserver.wait_for_watchers(1, "statefulsets")
        apiserver.patch("statefulsets", "default", "db", {"spec": {"replicas": 2}})

    t = threading.Thread(target=later)
    t.start()
    stream = watch.Watch().stream(apps.list_stateful_set_for_all_namespaces, timeout_seconds=2)
    seen = [(e["type"], e["object"].spec.replicas) for e in stream]
    t.join()
    assert seen == [("ADDED", 1), ("MODIFIED", 2)]


def test_storage_kinds(apiserver: TestAPIServer, api_client: client.ApiClient) -> None:
    """What client-go informers for the volume plugins read, and VolumeBinding's PV update."""
    v1, storage = client.CoreV1Api(api_client), client.StorageV1Api(api_client)
    apiserver.create(make_pv("pv-1", storage="5Gi", storage_class="fast", csi_driver="d"))
    apiserver.create(make_pv("pv-2", claim=("default", "data"), phase="Bound"))
    apiserver.create(make_pvc("data", volume_name="pv-2"))
    pvs = v1.list_persistent_volume().items
    assert [(p.metadata.name, p.status.phase) for p in pvs] == [
        ("pv-1", "Pending"),
        ("pv-2", "Bound"),
    ]
    assert pvs[0].spec.capacity == {"storage": "5Gi"} and pvs[0].spec.csi.driver == "d"
    assert pvs[1].spec.claim_ref.name == "data"
    claim = v1.read_namespaced_persistent_volume_claim("data", "default")
    assert claim.spec.volume_name == "pv-2"
    # VolumeBinding's bind: update the PV with its resourceVersion as precondition
    pv = pvs[0]
    pv.spec.claim_ref = client.V1ObjectReference(namespace="default", name="other")
    updated = v1.replace_persistent_volume("pv-1", pv)
    assert updated.spec.claim_ref.name == "other"
    with pytest.raises(client.ApiException) as err:
        v1.replace_persistent_volume("pv-1", pv)  # stale now
    assert err.value.status == 409
    storage.create_storage_class(
        client.V1StorageClass(metadata=client.V1ObjectMeta(name="fast"), provisioner="d")
    )
    (sc,) = storage.list_storage_class().items
    assert (sc.metadata.name, sc.volume_binding_mode) == ("fast", "Immediate")
