"""The daemon end to end: scheduling decisions, failure reporting, API faults, endpoints."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import E2E, metric, wait_for

pytestmark = pytest.mark.e2e


def test_pods_bound_where_the_algorithm_says(e2e: E2E) -> None:
    small = e2e.create_node("small", cpu="1", memory="2Gi")
    big = e2e.create_node("big", cpu="8", memory="32Gi")
    e2e.create_pod("fits-only-big", cpu="4", memory="8Gi")
    e2e.create_pod("fits-anywhere", cpu="100m")
    with e2e.daemon():
        assert e2e.wait_bound("fits-only-big") == big
        assert e2e.wait_bound("fits-anywhere") in (small, big)
        # a pod created while running, after the sync
        e2e.create_pod("late", cpu="3", memory="1Gi")  # 3.9 CPU left on big
        assert e2e.wait_bound("late") == big
        wait_for(lambda: e2e.events("late", "Scheduled"), what="Scheduled event")
    ev = e2e.events("late", "Scheduled")[0]
    assert ev["note"] == f"Successfully assigned {e2e.namespace}/late to {big}"
    assert ev["reportingController"] == e2e.scheduler_name


def test_unschedulable_pod_reported_then_scheduled_when_a_node_fits(e2e: E2E) -> None:
    e2e.create_node("a", cpu="1")
    e2e.create_node("b", cpu="2")
    e2e.create_pod("huge", cpu="3")
    with e2e.daemon() as d:
        cond = e2e.wait_unschedulable("huge")
        # the FitError text (what follows "preemption:" is the PostFilter plugin's business)
        assert " nodes are available: 2 Insufficient cpu" in cond["message"]
        status, body = d.get(f"/debug/explain?pod={e2e.namespace}/huge")
        assert status == 200
        explain = json.loads(body)
        assert explain["lastAttempt"]["message"] == cond["message"]
        verdicts = explain["explain"]["filter"]
        assert set(e2e.nodes) <= set(verdicts)
        assert all("Insufficient cpu" in verdicts[n]["NodeResourcesFit"] for n in e2e.nodes)
        big = e2e.create_node("c", cpu="4")
        t0 = time.monotonic()
        assert e2e.wait_bound("huge", timeout=12) == big
        # NodeAdd moves it out of the pool; at most the (1 s) initial backoff remains
        assert time.monotonic() - t0 < 5
    assert len(e2e.events("huge", "FailedScheduling")) == 1


@pytest.mark.fake_apiserver
def test_dropped_watches_and_410_lose_no_pod(e2e: E2E) -> None:
    srv = e2e.need_server()
    nodes = [e2e.create_node(f"n{i}") for i in range(3)]
    names = [f"p{i}" for i in range(32)]
    with e2e.daemon() as d:
        pods = d.daemon.informers.pods
        for i, name in enumerate(names):
            e2e.create_pod(name)
            if i == 7:  # connection cut mid-stream: resume from the last resourceVersion
                srv.faults.drop_watches(resource="pods", abort=True)
            elif i == 15:  # a forced 410 on the re-watch: relist
                srv.faults.fail_next(
                    1,
                    verb="watch",
                    resource="pods",
                    code=410,
                    reason="Expired",
                    message="too old resource version",
                )
                srv.faults.drop_watches(resource="pods")
            elif i == 23:
                # a real 410: the re-watch is held back while pods are created and the
                # history is compacted, so its resourceVersion is gone by then
                wait_for(lambda: pods.lists >= 2, what="the relist after the forced 410")
                srv.wait_for_watchers(1, "pods")
                srv.faults.add_latency(0.5, verb="watch", resource="pods", count=1)
                srv.faults.drop_watches(resource="pods")
            elif i == 27:
                srv.compact("pods")
        for n in names:
            assert e2e.wait_bound(n) in nodes
        assert pods.lists >= 3
        assert d.call(lambda: d.daemon.scheduler.queue.dump()["counts"]["active"]) == 0
    for n in names:
        binds = srv.count_requests(
            verb="create", resource="pods", subresource="binding", namespace=e2e.namespace, name=n
        )
        assert binds == 1, (n, binds)


@pytest.mark.fake_apiserver
def test_bind_conflicts_are_requeued_while_the_pod_is_unbound(e2e: E2E) -> None:
    """Upstream's handleSchedulingFailure: a rejected binding (409) fails the attempt and
    the pod is retried after backoff unless the informer shows it bound or deleted; 100
    pods each refused once are all bound, each exactly once."""
    srv = e2e.need_server()
    e2e.create_node("only", cpu="64", pods="200")
    names = [f"p{i}" for i in range(100)]
    for name in names:
        e2e.faults.fail_next(
            1,
            verb="create",
            resource="pods",
            subresource="binding",
            namespace=e2e.namespace,
            name=name,
            code=409,
            reason="Conflict",
            message="Operation cannot be fulfilled on pods/binding: injected",
        )
        e2e.create_pod(name, cpu="100m")
    with e2e.daemon():
        for name in names:
            e2e.wait_bound(name, timeout=30)
    reqs = [
        r
        for r in srv.find_requests(verb="create", resource="pods", subresource="binding")
        if r.namespace == e2e.namespace
    ]
    assert sorted(r.name for r in reqs if r.status == 409) == sorted(names)
    assert sorted(r.name for r in reqs if r.status < 300) == sorted(names)


@pytest.mark.fake_apiserver
def test_bind_server_errors_are_retried(e2e: E2E) -> None:
    srv = e2e.need_server()
    node = e2e.create_node("n")
    e2e.faults.fail_next(
        2, verb="create", resource="pods", subresource="binding", name="flaky", code=500
    )
    e2e.create_pod("flaky")
    with e2e.daemon():
        assert e2e.wait_bound("flaky", timeout=15) == node
    assert (
        srv.count_requests(verb="create", resource="pods", subresource="binding", name="flaky") == 3
    )


@pytest.mark.fake_apiserver
def test_readyz_is_503_until_the_informers_synced(e2e: E2E) -> None:
    srv = e2e.need_server()
    e2e.create_node("n")
    srv.faults.add_latency(1.5, verb="list", resource="nodes", count=1)
    with e2e.daemon(wait_ready=False) as d:
        status, body = d.get("/readyz?verbose")
        assert status == 503
        assert "[-]informer-sync failed" in body
        assert d.get("/healthz") == (200, "ok")
        d.portal.call(d.daemon.wait_ready, 20.0)
        assert d.get("/readyz") == (200, "ok")


def test_metrics_reflect_reality(e2e: E2E) -> None:
    for i in range(2):
        e2e.create_node(f"n{i}", cpu="2")
    with e2e.daemon() as d:
        for i in range(3):
            e2e.create_pod(f"ok{i}")
        e2e.create_pod("too-big", cpu="5")
        for i in range(3):
            e2e.wait_bound(f"ok{i}")
        wait_for(lambda: e2e.condition("too-big"), what="unschedulable condition")
        _, text = d.get("/metrics")
        prof = e2e.scheduler_name
        assert (
            metric(text, "scheduler_schedule_attempts_total", result="scheduled", profile=prof) == 3
        )
        assert (
            metric(text, "scheduler_schedule_attempts_total", result="unschedulable", profile=prof)
            == 1
        )
        assert metric(text, "scheduler_pending_pods", queue="unschedulable") == 1
        assert metric(text, "scheduler_pending_pods", queue="active") == 0
        assert (
            metric(text, "scheduler_unschedulable_pods", plugin="NodeResourcesFit", profile=prof)
            == 1
        )
        nodes, pods = d.call(
            lambda: (
                d.daemon.scheduler.cache.node_count(),
                len(d.daemon.scheduler.cache.pod_states),
            )
        )
        assert metric(text, "scheduler_cache_size", type="nodes") == nodes
        assert metric(text, "scheduler_cache_size", type="pods") == pods
        if e2e.server is not None:  # a real cluster has more nodes and pods
            assert (nodes, pods) == (2, 3)
        assert (
            metric(
                text,
                "scheduler_queue_incoming_pods_total",
                # the event a new pending pod raises: renamed in 1.37
                event="UnscheduledPodAdd"
                if d.daemon.config.features.at_least("1.37")
                else "UnschedulablePodAdd",
                queue="active",
            )
            == 4
        )
        assert (
            metric(
                text,
                "scheduler_scheduling_attempt_duration_seconds_count",
                result="scheduled",
                profile=prof,
            )
            == 3
        )
        assert metric(text, "scheduler_pod_scheduling_attempts_count") == 3
        assert (
            metric(
                text,
                "scheduler_framework_extension_point_duration_seconds_count",
                extension_point="Bind",
                status="Success",
                profile=prof,
            )
            == 3
        )
