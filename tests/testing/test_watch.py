"""Watch semantics: initial state, replay from a resourceVersion, bookmarks, timeouts, 410
Expired, and selector transitions."""

from __future__ import annotations

import time

from ksched.testing import TestAPIServer

from ._http import Client, pod

PODS = "/api/v1/namespaces/default/pods"


def _names(events: list[dict]) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(e["type"], e["object"]["metadata"]["name"]) for e in events]


def test_watch_without_rv_sends_current_state_then_live(
    apiserver: TestAPIServer, http: Client
) -> None:
    http.post(PODS, pod("a"))
    http.post(PODS, pod("b"))
    w = http.watch(PODS)
    assert w.status == 200
    assert w.resp.getheader("Content-Type") == "application/json"
    assert w.resp.getheader("Transfer-Encoding") == "chunked"
    assert _names(w.take(2)) == [("ADDED", "a"), ("ADDED", "b")]
    apiserver.wait_for_watchers(1, "pods")
    http.patch(f"{PODS}/a", {"metadata": {"labels": {"x": "y"}}})
    _, deleted = http.delete(f"{PODS}/b")
    events = w.take(2)
    assert _names(events) == [("MODIFIED", "a"), ("DELETED", "b")]
    assert events[0]["object"]["kind"] == "Pod"  # watch objects carry kind/apiVersion
    # a DELETED event carries the last state stamped with the deletion's resourceVersion
    assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(
        deleted["metadata"]["resourceVersion"]
    )
    assert events[1]["object"]["spec"] == deleted["spec"]


def test_watch_resource_version_zero_is_like_unset(http: Client) -> None:
    http.post(PODS, pod("a"))
    w = http.watch(PODS, resourceVersion="0", timeoutSeconds="1")
    assert _names(w.rest()) == [("ADDED", "a")]


def test_watch_replays_events_after_resource_version(http: Client) -> None:
    _, a = http.post(PODS, pod("a"))
    rv = a["metadata"]["resourceVersion"]
    http.post(PODS, pod("b"))
    http.patch(f"{PODS}/a", {"metadata": {"labels": {"v": "2"}}})
    http.delete(f"{PODS}/b")
    w = http.watch(PODS, resourceVersion=rv, timeoutSeconds="1")
    events = w.rest()
    assert _names(events) == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)


def test_bookmarks_carry_only_resource_version(apiserver: TestAPIServer, http: Client) -> None:
    apiserver.bookmark_interval = 0.2
    _, listed = http.get(PODS)
    w = http.watch(
        PODS,
        resourceVersion=listed["metadata"]["resourceVersion"],
        allowWatchBookmarks="true",
        timeoutSeconds="2",
    )
    first = w.next()
    assert first is not None and first["type"] == "BOOKMARK"
    assert first["object"]["kind"] == "Pod" and first["object"]["apiVersion"] == "v1"
    assert set(first["object"]["metadata"]) <= {"resourceVersion", "creationTimestamp"}
    http.post(PODS, pod("a"))
    later = [e for e in w.rest() if e["type"] != "BOOKMARK"]
    assert _names(later) == [("ADDED", "a")]
    # without allowWatchBookmarks there are none
    w2 = http.watch(PODS, resourceVersion=listed["metadata"]["resourceVersion"], timeoutSeconds="1")
    assert all(e["type"] != "BOOKMARK" for e in w2.rest())


def test_send_initial_events_ends_with_marked_bookmark(http: Client) -> None:
    http.post(PODS, pod("a"))
    w = http.watch(
        PODS,
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        allowWatchBookmarks="true",
        timeoutSeconds="1",
    )
    added, mark = w.take(2)
    assert added["type"] == "ADDED"
    assert mark["type"] == "BOOKMARK"
    assert mark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_timeout_seconds_closes_the_stream(http: Client) -> None:
    started = time.monotonic()
    w = http.watch(PODS, resourceVersion="1", timeoutSeconds="1")
    assert w.rest() == []
    assert 0.9 <= time.monotonic() - started < 5


def test_too_old_resource_version_gets_410_after_compaction(
    apiserver: TestAPIServer, http: Client
) -> None:
    _, a = http.post(PODS, pod("a"))
    old_rv = int(a["metadata"]["resourceVersion"])
    http.post(PODS, pod("b"))
    apiserver.compact()
    w = http.watch(PODS, resourceVersion=str(old_rv))
    events = w.rest()  # the server ends the stream itself
    assert len(events) == 1 and events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["kind"] == "Status" and status["code"] == 410 and status["reason"] == "Expired"
    assert status["status"] == "Failure"
    assert status["message"] == f"too old resource version: {old_rv} ({apiserver.resource_version})"
    # a fresh list + watch from its resourceVersion works again
    _, listed = http.get(PODS)
    w2 = http.watch(PODS, resourceVersion=listed["metadata"]["resourceVersion"], timeoutSeconds="1")
    assert w2.rest() == []


def test_bounded_history_expires_old_versions() -> None:
    with TestAPIServer(history=5).run_in_thread() as srv:
        client = Client(srv.url)
        _, first = client.post(PODS, pod("p0"))
        for i in range(1, 10):
            client.post(PODS, pod(f"p{i}"))
        w = client.watch(PODS, resourceVersion=first["metadata"]["resourceVersion"])
        (event,) = w.rest()
        assert event["type"] == "ERROR" and event["object"]["code"] == 410
        # the last few are still replayable
        recent = srv.get("pods", "default", "p7")["metadata"]["resourceVersion"]
        w2 = client.watch(PODS, resourceVersion=recent, timeoutSeconds="1")
        assert _names(w2.rest()) == [("ADDED", "p8"), ("ADDED", "p9")]
        client.close()


def test_field_selector_watch_turns_unmatch_into_deleted(
    apiserver: TestAPIServer, http: Client
) -> None:
    """The scheduler's view: unassigned pods only; binding makes a pod leave the selection."""
    http.post(PODS, pod("a"))
    w = http.watch("/api/v1/pods", fieldSelector="spec.nodeName=,status.phase!=Succeeded")
    assert _names(w.take(1)) == [("ADDED", "a")]
    apiserver.wait_for_watchers(1, "pods")
    assert (
        http.post(f"{PODS}/a/binding", {"metadata": {"name": "a"}, "target": {"name": "n1"}})[0]
        == 201
    )
    gone = w.next()
    assert gone is not None and gone["type"] == "DELETED"
    assert gone["object"]["metadata"]["name"] == "a"
    assert "nodeName" not in gone["object"]["spec"]  # the previous state, as kube sends it
    # a pod that starts matching shows up as ADDED
    http.post(PODS, pod("done"))
    assert _names(w.take(1)) == [("ADDED", "done")]
    # the field path and node view of the same change
    w_node = http.watch("/api/v1/pods", fieldSelector="spec.nodeName=n1", timeoutSeconds="1")
    assert _names(w_node.rest()) == [("ADDED", "a")]


def test_label_selector_watch_and_namespace_scope(apiserver: TestAPIServer, http: Client) -> None:
    http.post("/api/v1/namespaces", {"metadata": {"name": "other"}})
    w = http.watch(PODS, labelSelector="app in (web,api),tier!=db,!skip")
    apiserver.wait_for_watchers(1, "pods")
    http.post(PODS, pod("web", labels={"app": "web"}))
    http.post(PODS, pod("db", labels={"app": "api", "tier": "db"}))
    http.post(PODS, pod("skipped", labels={"app": "web", "skip": "1"}))
    http.post("/api/v1/namespaces/other/pods", pod("elsewhere", ns="other", labels={"app": "web"}))
    http.post(PODS, pod("api", labels={"app": "api"}))
    assert _names(w.take(2)) == [("ADDED", "web"), ("ADDED", "api")]
    http.patch(f"{PODS}/web", {"metadata": {"labels": {"skip": "now"}}})
    assert _names(w.take(1)) == [("DELETED", "web")]


def test_watch_of_a_single_object_and_cluster_scoped_kinds(
    apiserver: TestAPIServer, http: Client
) -> None:
    http.post("/api/v1/nodes", {"metadata": {"name": "n1"}})
    http.post("/api/v1/nodes", {"metadata": {"name": "n2"}})
    w = http.watch("/api/v1/nodes", fieldSelector="metadata.name=n2")
    assert _names(w.take(1)) == [("ADDED", "n2")]
    apiserver.wait_for_watchers(1, "nodes")
    http.patch("/api/v1/nodes/n1", {"metadata": {"labels": {"a": "b"}}})
    http.patch("/api/v1/nodes/n2", {"metadata": {"labels": {"a": "b"}}})
    assert _names(w.take(1)) == [("MODIFIED", "n2")]
    legacy = http.watch("/api/v1/watch/nodes/n1", timeoutSeconds="1")
    assert _names(legacy.rest()) == [("ADDED", "n1")]


def test_store_helpers_notify_watchers(apiserver: TestAPIServer, http: Client) -> None:
    w = http.watch("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases")
    apiserver.wait_for_watchers(1, "leases")
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": "kube-system"},
    }
    apiserver.create(lease)
    apiserver.patch("leases", "kube-system", "l", {"spec": {"holderIdentity": "me"}})
    apiserver.delete("leases", "kube-system", "l")
    assert _names(w.take(3)) == [("ADDED", "l"), ("MODIFIED", "l"), ("DELETED", "l")]


def test_many_pods_and_watchers(apiserver: TestAPIServer, http: Client) -> None:
    """Thousands of objects stay cheap: a few seconds at most for 2000 creates + 5 watchers."""
    streams = [http.watch(PODS, resourceVersion="1", timeoutSeconds="20") for _ in range(5)]
    apiserver.wait_for_watchers(5, "pods")
    started = time.monotonic()
    for i in range(2000):
        apiserver.create(pod(f"p{i:04d}"))
    _, listed = http.get(PODS)
    assert len(listed["items"]) == 2000
    for s in streams:
        events = s.take(2000)
        assert events[-1]["object"]["metadata"]["name"] == "p1999"
    assert time.monotonic() - started < 20
