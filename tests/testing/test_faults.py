"""Fault injection and request recording, in-process and over /_testing."""

from __future__ import annotations

import threading
import time

from ksched.testing import TestAPIServer

from ._http import Client, pod

PODS = "/api/v1/namespaces/default/pods"
BIND = {"metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}}


def test_fail_next_n_matching_requests(apiserver: TestAPIServer, http: Client) -> None:
    http.post(PODS, pod("p"))
    apiserver.faults.fail_next(
        2, verb="create", resource="pods/binding", code=503, message="etcd is sulking"
    )
    assert http.get(f"{PODS}/p")[0] == 200  # other requests are unaffected
    for _ in range(2):
        status, body = http.post(f"{PODS}/p/binding", BIND)
        assert status == 503
        assert body == {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "etcd is sulking",
            "reason": "ServiceUnavailable",
            "code": 503,
        }
    assert http.post(f"{PODS}/p/binding", BIND)[0] == 201
    assert apiserver.get("pods", "default", "p")["spec"]["nodeName"] == "n1"


def test_fail_with_retry_after_and_conflict(apiserver: TestAPIServer, http: Client) -> None:
    apiserver.faults.fail_next(verb="list", resource="nodes", code=429, retry_after=1)
    status, body = http.get("/api/v1/nodes")
    assert status == 429 and body["reason"] == "TooManyRequests"
    assert body["details"] == {"retryAfterSeconds": 1}
    assert http.get("/api/v1/nodes")[0] == 200
    apiserver.faults.fail_next(verb="update", resource="pods", code=409, reason="Conflict")
    http.post(PODS, pod("p"))
    _, current = http.get(f"{PODS}/p")
    assert http.put(f"{PODS}/p", current)[0] == 409
    assert http.put(f"{PODS}/p", current)[0] == 200


def test_latency(apiserver: TestAPIServer, http: Client) -> None:
    apiserver.faults.add_latency(0.3, verb="get", resource="namespaces", count=1)
    started = time.monotonic()
    assert http.get("/api/v1/namespaces/default")[0] == 200
    assert time.monotonic() - started >= 0.3
    started = time.monotonic()
    http.get("/api/v1/namespaces/default")
    assert time.monotonic() - started < 0.3


def test_drop_watches_ends_open_streams(apiserver: TestAPIServer, http: Client) -> None:
    rv = str(apiserver.resource_version)
    pods = http.watch(PODS, resourceVersion=rv)
    nodes = http.watch("/api/v1/nodes", resourceVersion=rv)
    apiserver.wait_for_watchers(2)
    assert apiserver.faults.drop_watches(resource="pods") == 1
    assert pods.rest() == []
    assert apiserver.watcher_count("nodes") == 1
    assert apiserver.faults.drop_watches(abort=True) == 1
    try:
        assert nodes.rest() == []
    except Exception as e:  # an aborted connection may surface as an error mid-chunk
        assert isinstance(e, OSError | ValueError) or "Incomplete" in type(e).__name__
    assert apiserver.watcher_count() == 0


def test_close_watches_after_k_events(apiserver: TestAPIServer, http: Client) -> None:
    for i in range(5):
        http.post(PODS, pod(f"p{i}"))
    apiserver.faults.close_watches_after(3, resource="pods")
    w = http.watch(PODS)
    assert [e["object"]["metadata"]["name"] for e in w.rest()] == ["p0", "p1", "p2"]
    apiserver.faults.clear()
    assert len(http.watch(PODS, timeoutSeconds="1").rest()) == 5


def test_request_recording(apiserver: TestAPIServer, http: Client) -> None:
    apiserver.clear_requests()
    http.post(PODS, pod("p"))
    http.post(f"{PODS}/p/binding", BIND)
    http.post(f"{PODS}/p/binding", BIND)
    http.get(PODS, labelSelector="a=b")
    binds = apiserver.find_requests(method="POST", resource="pods/binding")
    assert [r.status for r in binds] == [201, 409]
    assert binds[0].body["target"]["name"] == "n1"
    assert binds[0].verb == "create" and binds[0].namespace == "default" and binds[0].name == "p"
    (listing,) = apiserver.find_requests(verb="list")
    assert listing.query == {"labelSelector": "a=b"} and listing.path == PODS
    assert apiserver.count_requests(verb="create", resource="pods", subresource="binding") == 2
    # watches are recorded when they start, not when they end
    http.watch(PODS, resourceVersion="1")
    apiserver.wait_for_watchers(1)
    assert apiserver.count_requests(verb="watch") == 1


def test_http_control_endpoints(apiserver: TestAPIServer, http: Client) -> None:
    """What an out-of-process test (daemon in a subprocess) would use."""
    http.post(PODS, pod("p"))
    status, _ = http.post(
        "/_testing/faults",
        {
            "action": "fail",
            "verb": "create",
            "resource": "pods",
            "subresource": "binding",
            "count": 1,
            "code": 500,
        },
    )
    assert status == 200
    assert http.post(f"{PODS}/p/binding", BIND)[0] == 500
    assert http.post(f"{PODS}/p/binding", BIND)[0] == 201
    _, recorded = http.get("/_testing/requests")
    binds = [r for r in recorded["items"] if r["subresource"] == "binding"]
    assert [r["status"] for r in binds] == [500, 201]
    assert not any(r["path"].startswith("/_testing") for r in recorded["items"])
    http.post("/_testing/faults", {"action": "latency", "seconds": 0.2, "verb": "get"})
    started = time.monotonic()
    http.get(f"{PODS}/p")
    assert time.monotonic() - started >= 0.2
    assert http.request("DELETE", "/_testing/faults")[1]["latencies"] == []
    w = http.watch(PODS, resourceVersion=str(apiserver.resource_version))
    apiserver.wait_for_watchers(1)
    assert http.post("/_testing/faults", {"action": "drop_watches"})[1] == {"dropped": 1}
    assert w.rest() == []
    rv = apiserver.resource_version
    assert http.post("/_testing/compact", {})[0] == 200
    (err,) = http.watch(PODS, resourceVersion=str(rv - 1)).rest()
    assert err["object"]["code"] == 410
    assert http.request("DELETE", "/_testing/requests")[0] == 200
    assert http.get("/_testing/requests")[1] == {"items": []}
    assert http.post("/_testing/faults", {"action": "bogus"})[0] == 400


def test_faults_are_thread_safe_under_load(apiserver: TestAPIServer) -> None:
    apiserver.faults.fail_next(50, verb="get", resource="namespaces", code=500)
    client = Client(apiserver.url)
    codes: list[int] = []
    lock = threading.Lock()

    def hammer() -> None:
        for _ in range(20):
            code = client.get("/api/v1/namespaces/default")[0]
            with lock:
                codes.append(code)

    threads = [threading.Thread(target=hammer) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes.count(500) == 50 and codes.count(200) == 50
