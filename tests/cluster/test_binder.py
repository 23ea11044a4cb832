"""APIClusterClient: binding outcomes and the other ClusterClient writes."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ksched.api.objects import (
    ObjectMeta,
    ObjectReference,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
)
from ksched.api.objects import PersistentVolumeSpec as Spec
from ksched.cluster import APIClient, APIClusterClient
from ksched.cluster.client import APIError
from ksched.framework.handle import BindError
from ksched.framework.types import PodInfo
from ksched.plugins.defaultpreemption.preemption import preemption_condition
from ksched.testing import TestAPIServer, make_pod

pytestmark = pytest.mark.anyio


def info(obj: dict[str, Any]) -> PodInfo:
    return PodInfo(msgspec.convert(obj, Pod), obj)


async def test_bind_sets_node_name_with_uid_precondition(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    await APIClusterClient(client).bind(pod, "node-1")
    assert apiserver.get("pods", "default", "web")["spec"]["nodeName"] == "node-1"
    (req,) = apiserver.find_requests(resource="pods/binding")
    assert req.method == "POST"
    assert req.path == "/api/v1/namespaces/default/pods/web/binding"
    assert req.body == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "web", "namespace": "default", "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"},
    }


async def test_bind_conflict_is_final(apiserver: TestAPIServer, client: APIClient) -> None:
    pod = info(apiserver.create(make_pod("web", node_name="elsewhere")))
    with pytest.raises(BindError) as err:
        await APIClusterClient(client).bind(pod, "node-1")
    assert err.value.retry is False
    assert "already assigned" in str(err.value)


async def test_bind_uid_mismatch_is_final(apiserver: TestAPIServer, client: APIClient) -> None:
    old = info(apiserver.create(make_pod("web")))
    apiserver.delete("pods", "default", "web")
    apiserver.create(make_pod("web"))  # same name, new UID
    with pytest.raises(BindError) as err:
        await APIClusterClient(client).bind(old, "node-1")
    assert err.value.retry is False
    assert "nodeName" not in apiserver.get("pods", "default", "web")["spec"]


async def test_bind_missing_pod_is_final(apiserver: TestAPIServer, client: APIClient) -> None:
    pod = info(make_pod("ghost"))
    with pytest.raises(BindError) as err:
        await APIClusterClient(client).bind(pod, "node-1")
    assert err.value.retry is False


async def test_bind_server_error_is_retriable(apiserver: TestAPIServer, client: APIClient) -> None:
    pod = info(apiserver.create(make_pod("web")))
    apiserver.faults.fail_next(1, resource="pods/binding", code=500)
    with pytest.raises(BindError) as err:
        await APIClusterClient(client).bind(pod, "node-1")
    assert err.value.retry is True
    await APIClusterClient(client).bind(pod, "node-1")  # the retry succeeds


async def test_bind_timeout_and_connection_errors_are_retriable(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    apiserver.faults.add_latency(1.0, resource="pods/binding", count=1)
    with pytest.raises(BindError) as err:
        await APIClusterClient(client, bind_timeout=0.1).bind(pod, "node-1")
    assert err.value.retry is True
    async with await APIClient.for_master("http://127.0.0.1:1", qps=0) as dead:
        with pytest.raises(BindError) as err:
            await APIClusterClient(dead).bind(pod, "node-1")
    assert err.value.retry is True


async def test_delete_pod_with_uid_precondition(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    cc = APIClusterClient(client)
    victim = info(apiserver.create(make_pod("victim")))
    await cc.delete_pod(victim)
    assert apiserver.try_get("pods", "default", "victim") is None
    (req,) = apiserver.find_requests(verb="delete", resource="pods")
    assert req.body["preconditions"] == {"uid": victim.uid}
    await cc.delete_pod(victim)  # already gone: fine
    apiserver.create(make_pod("victim"))  # recreated: the old decision must not delete it
    await cc.delete_pod(victim)
    assert apiserver.try_get("pods", "default", "victim") is not None


async def test_set_nominated_node_and_get_object(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    cc = APIClusterClient(client)
    pod = info(apiserver.create(make_pod("pre")))
    await cc.set_nominated_node(pod, "node-2")
    assert apiserver.get("pods", "default", "pre")["status"]["nominatedNodeName"] == "node-2"
    (req,) = apiserver.find_requests(verb="patch", resource="pods/status")
    assert req.content_type == "application/merge-patch+json"
    await cc.set_nominated_node(pod, "")
    assert "nominatedNodeName" not in apiserver.get("pods", "default", "pre").get("status", {})
    got = await cc.get_object("/api/v1/namespaces/default/pods/pre")
    assert got is not None and got["metadata"]["uid"] == pod.uid
    assert await cc.get_object("/api/v1/namespaces/default/pods/none") is None


_marked = preemption_condition(info(make_pod("any")), "ksched")
assert _marked is not None
DISRUPTION = msgspec.structs.replace(
    _marked, last_transition_time="2025-01-01T00:00:00Z", observed_generation=3
)


async def test_set_pod_condition_merges_by_type(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """A strategic merge patch: the pod's other conditions stay, in their order."""
    raw = apiserver.create(make_pod("victim", node_name="node-1"))
    raw["status"] = {
        "phase": "Running",
        "conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "True"},
        ],
    }
    victim = info(apiserver.update_status(raw))
    assert await APIClusterClient(client).set_pod_condition(victim, DISRUPTION) is True
    stored = apiserver.get("pods", "default", "victim")["status"]
    assert [c["type"] for c in stored["conditions"]] == [
        "PodScheduled",
        "Ready",
        "DisruptionTarget",
    ]
    assert stored["conditions"][2] == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "ksched: preempting to accommodate a higher priority pod",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
        "observedGeneration": 3,
    }
    (req,) = apiserver.find_requests(verb="patch", resource="pods/status")
    assert req.content_type == "application/strategic-merge-patch+json"
    assert req.body["status"]["$setElementOrder/conditions"] == [
        {"type": "PodScheduled"},
        {"type": "Ready"},
        {"type": "DisruptionTarget"},
    ]


async def test_set_pod_condition_replaces_the_condition_of_its_type(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    raw = apiserver.create(make_pod("victim", node_name="node-1"))
    raw["status"] = {
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"},
            {"type": "Ready", "status": "True"},
        ]
    }
    victim = info(apiserver.update_status(raw))
    assert await APIClusterClient(client).set_pod_condition(victim, DISRUPTION) is True
    conds = apiserver.get("pods", "default", "victim")["status"]["conditions"]
    assert [(c["type"], c.get("reason")) for c in conds] == [
        ("DisruptionTarget", "PreemptionByScheduler"),
        ("Ready", None),
    ]


async def test_set_pod_condition_on_a_missing_pod_is_false(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    assert (
        await APIClusterClient(client).set_pod_condition(info(make_pod("gone")), DISRUPTION)
        is False
    )


async def test_set_pod_condition_retries_internal_errors_only(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    cc = APIClusterClient(client)
    victim = info(apiserver.create(make_pod("victim")))
    apiserver.faults.fail_next(2, verb="patch", resource="pods/status", code=503)
    assert await cc.set_pod_condition(victim, DISRUPTION) is True
    assert apiserver.count_requests(verb="patch", resource="pods/status") == 3
    apiserver.faults.fail_next(1, verb="patch", resource="pods/status", code=422)
    with pytest.raises(APIError):
        await cc.set_pod_condition(victim, DISRUPTION)
    assert apiserver.count_requests(verb="patch", resource="pods/status") == 4


@pytest.mark.parametrize(
    "name", ["pod-1", "a.b_c~d", "", "a b", "x/y", "ü", "a%2F", "q?x#y", "-", "UPPER"]
)
def test_pod_path_quotes_like_urllib(name: str) -> None:
    from urllib.parse import quote

    from ksched.cluster.binder import pod_path

    q = quote(name, safe="")
    assert pod_path(name, name) == f"/api/v1/namespaces/{q}/pods/{q}"
    assert pod_path("ns", name, "binding") == f"/api/v1/namespaces/ns/pods/{q}/binding"


class _RecordingClient:
    """An APIClient stand-in answering PATCHes with ``answer`` (or raising ``error``)."""

    def __init__(self, answer: dict[str, Any] | None = None, error: APIError | None = None):
        self.answer, self.error = answer, error
        self.calls: list[tuple[str, str, Any, str]] = []

    async def request(
        self, method: str, path: str, *, body: Any = None, content_type: str = "", **_: Any
    ) -> tuple[int, bytes]:
        self.calls.append((method, path, body, content_type))
        if self.error is not None:
            raise self.error
        return 200, msgspec.json.encode(self.answer)


async def test_update_persistent_volume_is_a_conditional_merge_patch() -> None:
    ref = ObjectReference(kind="PersistentVolumeClaim", namespace="db", name="data", uid="u1")
    pv = PersistentVolume(
        metadata=ObjectMeta(
            name="pv-1",
            resource_version="41",
            annotations={"pv.kubernetes.io/bound-by-controller": "yes"},
        ),
        spec=Spec(claim_ref=ref, storage_class_name="local"),
    )
    stored = msgspec.to_builtins(pv)
    stored["metadata"]["resourceVersion"] = "42"
    fake = _RecordingClient(stored)
    got = await APIClusterClient(fake).update_persistent_volume(pv)  # type: ignore[arg-type]
    assert got.metadata.resource_version == "42" and got.spec.claim_ref == ref
    ((method, path, body, ctype),) = fake.calls
    assert (method, path, ctype) == (
        "PATCH",
        "/api/v1/persistentvolumes/pv-1",
        "application/merge-patch+json",
    )
    assert body == {
        "metadata": {
            "resourceVersion": "41",
            "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"},
        },
        "spec": {
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": "db",
                "name": "data",
                "uid": "u1",
            }
        },
    }


async def test_update_persistent_volume_claim_conflict_is_retriable() -> None:
    pvc = PersistentVolumeClaim(
        metadata=ObjectMeta(
            name="data",
            namespace="db",
            resource_version="7",
            annotations={"volume.kubernetes.io/selected-node": "n1"},
        )
    )
    fake = _RecordingClient(error=APIError(409, "Conflict", "the object has been modified"))
    with pytest.raises(BindError) as err:
        await APIClusterClient(fake).update_persistent_volume_claim(pvc)  # type: ignore[arg-type]
    assert err.value.retry is True
    assert str(err.value) == (
        "updating PersistentVolumeClaim db/data: the object has been modified"
    )
    ((_, path, body, _),) = fake.calls
    assert path == "/api/v1/namespaces/db/persistentvolumeclaims/data"
    assert body == {
        "metadata": {
            "resourceVersion": "7",
            "annotations": {"volume.kubernetes.io/selected-node": "n1"},
        }
    }
    fake.error = APIError(404, "NotFound", "gone")
    with pytest.raises(BindError) as err:
        await APIClusterClient(fake).update_persistent_volume_claim(pvc)  # type: ignore[arg-type]
    assert err.value.retry is False


class _Fenced(Exception):
    pass


async def test_write_guard_runs_last_and_stops_the_request(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """The fence is checked right before the bytes go out: a guard that raises sends
    nothing (a binding or an eviction), one that passes lets the request through."""
    pod = info(apiserver.create(make_pod("web")))
    calls: list[str] = []

    def fenced() -> None:
        calls.append("guard")
        raise _Fenced

    c = APIClusterClient(client)
    c.write_guard = fenced
    with pytest.raises(_Fenced):
        await c.bind(pod, "node-1")
    with pytest.raises(_Fenced):
        await c.delete_pod(pod)
    assert calls == ["guard", "guard"]
    assert apiserver.find_requests(resource="pods/binding") == []
    assert apiserver.find_requests(verb="delete", resource="pods") == []
    c.write_guard = lambda: calls.append("open")  # type: ignore[func-returns-value]
    await c.bind(pod, "node-1")
    assert calls[-1] == "open"
    assert apiserver.get("pods", "default", "web")["spec"]["nodeName"] == "node-1"
