"""StatusReporter: the PodScheduled condition, events.k8s.io/v1 Events, dedup, bounds."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import msgspec
import pytest
import structlog.testing

from ksched.api.objects import Pod
from ksched.cluster import APIClient, StatusReporter
from ksched.cluster.status import NOTE_LENGTH_LIMIT
from ksched.framework.interface import PostFilterResult
from ksched.framework.types import PodInfo
from ksched.testing import TestAPIServer, make_pod
from ksched.util.clock import FakeClock

from .conftest import eventually

pytestmark = pytest.mark.anyio

FIT_ERROR = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available."
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def info(obj: dict[str, Any]) -> PodInfo:
    return PodInfo(msgspec.convert(obj, Pod), obj)


@asynccontextmanager
async def running(reporter: StatusReporter) -> AsyncIterator[StatusReporter]:
    async with anyio.create_task_group() as tg:
        await tg.start(reporter.run)
        yield reporter
        await reporter.drain()
        tg.cancel_scope.cancel()


def events(apiserver: TestAPIServer) -> list[dict[str, Any]]:
    return apiserver.list("events.events.k8s.io", "default")


async def test_failure_patches_condition_and_records_event(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    async with running(StatusReporter(client, instance="ksched-host1")) as r:
        r.failed(pod, "default-scheduler", "Unschedulable", FIT_ERROR, None)
    stored = apiserver.get("pods", "default", "web")
    (cond,) = [c for c in stored["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert cond["status"] == "False"
    assert cond["reason"] == "Unschedulable"
    assert cond["message"] == FIT_ERROR
    assert cond["lastTransitionTime"]
    # v1.36 (PodObservedGenerationTracking): the generation the scheduler looked at
    assert stored["metadata"]["generation"] == 1
    assert cond["observedGeneration"] == 1
    (patch,) = apiserver.find_requests(verb="patch", resource="pods/status")
    assert patch.content_type == "application/strategic-merge-patch+json"
    assert patch.body["status"]["conditions"][0]["type"] == "PodScheduled"

    (ev,) = events(apiserver)
    assert ev["reason"] == "FailedScheduling"
    assert ev["type"] == "Warning"
    assert ev["action"] == "Scheduling"
    assert ev["note"] == FIT_ERROR
    assert ev["reportingController"] == "ksched"
    assert ev["reportingInstance"] == "ksched-host1"
    assert MICRO_TIME.match(ev["eventTime"])
    assert ev["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "namespace": "default",
        "name": "web",
        "uid": pod.uid,
        "resourceVersion": pod.pod.metadata.resource_version,
    }
    assert ev["metadata"]["name"].startswith("web.")


async def test_scheduler_error_reason_and_default_instance(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    async with running(StatusReporter(client)) as r:
        r.failed(pod, "default-scheduler", "SchedulerError", "boom", None)
    cond = apiserver.get("pods", "default", "web")["status"]["conditions"][-1]
    assert (cond["reason"], cond["message"]) == ("SchedulerError", "boom")
    assert events(apiserver)[0]["reportingInstance"].startswith("ksched-")


async def test_scheduled_event(apiserver: TestAPIServer, client: APIClient) -> None:
    pod = info(apiserver.create(make_pod("web")))
    async with running(StatusReporter(client)) as r:
        r.scheduled(pod, "node-1", "default-scheduler", 1)
    (ev,) = events(apiserver)
    assert ev["reason"] == "Scheduled"
    assert ev["type"] == "Normal"
    assert ev["action"] == "Binding"
    assert ev["note"] == "Successfully assigned default/web to node-1"
    assert apiserver.count_requests(verb="patch") == 0  # binding sets PodScheduled=True


async def test_identical_condition_is_not_patched(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    obj = make_pod("web")
    obj["status"] = {
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "m"}
        ]
    }
    pod = info(apiserver.create(obj))
    async with running(StatusReporter(client)) as r:
        r.failed(pod, "default-scheduler", "Unschedulable", "m", None)
        r.failed(pod, "default-scheduler", "Unschedulable", "other", None)
    assert apiserver.count_requests(verb="patch", resource="pods/status") == 1


async def test_repeated_failures_make_one_event_then_a_series(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    clock = FakeClock()
    pod = info(apiserver.create(make_pod("stuck")))
    async with running(StatusReporter(client, clock=clock)) as r:
        for _ in range(5):
            r.failed(pod, "default-scheduler", "Unschedulable", FIT_ERROR, None)
            clock.advance(5)
        await r.drain()
        assert apiserver.count_requests(verb="create", resource="events") == 1
        assert apiserver.count_requests(verb="patch", resource="events") == 0
        # the condition is written once: repeats before the watch catches up are skipped
        assert apiserver.count_requests(verb="patch", resource="pods/status") == 1
        assert r.suppressed == 4

        clock.advance(60)  # the series interval passes: one patch carries the count
        await eventually(lambda: apiserver.count_requests(verb="patch", resource="events") == 1)
        (ev,) = events(apiserver)
        assert ev["series"]["count"] == 5
        assert MICRO_TIME.match(ev["series"]["lastObservedTime"])

        r.failed(pod, "default-scheduler", "Unschedulable", "a different message", None)
        await r.drain()
        assert apiserver.count_requests(verb="create", resource="events") == 2

        clock.advance(400)  # quiet past finishTime: the next repeat starts a new Event
        await anyio.sleep(0.05)
        r.failed(pod, "default-scheduler", "Unschedulable", FIT_ERROR, None)
    assert apiserver.count_requests(verb="create", resource="events") == 3


async def test_series_patch_recreates_a_vanished_event(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    clock = FakeClock()
    pod = info(apiserver.create(make_pod("stuck")))
    async with running(StatusReporter(client, clock=clock, series_interval=10)) as r:
        r.event(pod, "Warning", "FailedScheduling", "Scheduling", "x")
        await r.drain()
        (ev,) = events(apiserver)
        apiserver.delete("events.events.k8s.io", "default", ev["metadata"]["name"])
        clock.advance(11)
        r.event(pod, "Warning", "FailedScheduling", "Scheduling", "x")  # due: patched at once
        await eventually(lambda: len(events(apiserver)) == 1)
    (again,) = events(apiserver)
    assert again["series"]["count"] == 2


async def test_long_messages_are_truncated_in_events_only(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    long = "x" * 3000
    async with running(StatusReporter(client)) as r:
        r.failed(pod, "default-scheduler", "Unschedulable", long, None)
    (ev,) = events(apiserver)
    assert len(ev["note"]) == NOTE_LENGTH_LIMIT and ev["note"].endswith(" ...")
    cond = apiserver.get("pods", "default", "web")["status"]["conditions"][-1]
    assert cond["message"] == long


async def test_failed_preemption_clears_nominated_node(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    obj = make_pod("pre")
    obj["status"] = {"nominatedNodeName": "node-1"}
    pod = info(apiserver.create(obj))

    class Result:
        post_filter = PostFilterResult(nominated_node_name="")

    async with running(StatusReporter(client)) as r:
        r.failed(pod, "default-scheduler", "Unschedulable", "no", Result())
    assert "nominatedNodeName" not in apiserver.get("pods", "default", "pre")["status"]


async def test_preemption_nomination_rides_on_the_condition_patch(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """Upstream's updatePod: one status patch carries PodScheduled=False and the
    nominated node; a second failure with the same message still moves the nomination."""
    pod = info(apiserver.create(make_pod("pre")))

    def result(node: str) -> object:
        class Result:
            post_filter = PostFilterResult(nominated_node_name=node)

        return Result()

    async with running(StatusReporter(client)) as r:
        r.failed(pod, "default-scheduler", "Unschedulable", "no", result("node-1"))
        await r.drain()
        patches = apiserver.count_requests(verb="patch", resource="pods")
        assert patches == 1
        status = apiserver.get("pods", "default", "pre")["status"]
        assert status["nominatedNodeName"] == "node-1"
        assert status["conditions"][-1]["reason"] == "Unschedulable"
        moved = info(apiserver.get("pods", "default", "pre"))
        r.failed(moved, "default-scheduler", "Unschedulable", "no", result("node-2"))
        await r.drain()
        # the same nomination again (condition unchanged): nothing to write
        again = info(apiserver.get("pods", "default", "pre"))
        r.failed(again, "default-scheduler", "Unschedulable", "no", result("node-2"))
    assert apiserver.get("pods", "default", "pre")["status"]["nominatedNodeName"] == "node-2"
    assert apiserver.count_requests(verb="patch", resource="pods") == patches + 1


async def test_condition_queue_is_bounded_dropping_oldest(client: APIClient) -> None:
    r = StatusReporter(client, max_queue=2)  # not running: nothing is written
    pods = [
        info({**make_pod(f"p{i}"), "metadata": {"name": f"p{i}", "namespace": "default"}})
        for i in range(5)
    ]
    for p in pods:
        r.failed(p, "default-scheduler", "Unschedulable", "m", None)
    assert r.dropped == 3
    assert [w.path.split("/")[-2] for w in r._queue] == ["p3", "p4"]
    assert r.events_dropped == 0


async def test_full_event_queue_drops_new_events_counted_and_logged_once(
    client: APIClient,
) -> None:
    """client-go's broadcaster (DropIfChannelFull): what does not fit is dropped, not what
    waits; one warning per 10 s, and the count is a metric."""
    from ksched.metrics import SchedulerMetrics

    r = StatusReporter(client, max_events=2)  # not running: nothing is written
    metrics = SchedulerMetrics(process_metrics=False)
    metrics.attach_recorder(r)
    pod = info({**make_pod("web"), "metadata": {"name": "web", "namespace": "default"}})
    with structlog.testing.capture_logs() as logs:
        for i in range(5):
            r.event(pod, "Warning", "FailedScheduling", "Scheduling", f"message {i}")
    assert r.events_dropped == 3
    assert [w.body["note"] for w in r._events] == ["message 0", "message 1"]
    assert [entry["event"] for entry in logs] == ["event queue full, dropping event"]
    assert metrics.registry.get_sample_value("ksched_events_dropped_total") == 3


async def test_events_wait_while_bindings_are_in_flight(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """Bindings first: no Event is written while ``defer_to()`` is true (within
    ``event_delay``); once it turns false they all are, without a drain."""
    pods = [info(apiserver.create(make_pod(f"p{i}"))) for i in range(3)]
    binding = [True]
    r = StatusReporter(client, defer_to=lambda: binding[0], event_delay=60.0)
    async with anyio.create_task_group() as tg:
        await tg.start(r.run)
        for p in pods:
            r.scheduled(p, "n1", "ksched", 1)
        r.failed(pods[0], "default-scheduler", "Unschedulable", "m", None)
        await anyio.sleep(0.3)
        assert apiserver.count_requests(verb="create", resource="events") == 0
        # the condition patch is not an Event: it does not wait
        assert apiserver.count_requests(verb="patch", resource="pods/status") == 1
        binding[0] = False
        await eventually(lambda: len(events(apiserver)) == 4, timeout=2.0)
        tg.cancel_scope.cancel()


async def test_deferred_events_come_out_after_event_delay_or_on_drain(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """Bindings that never stop hold an Event back no longer than ``event_delay``; a drain
    (shutdown) writes the deferred ones at once."""
    web, db = (info(apiserver.create(make_pod(n))) for n in ("web", "db"))
    r = StatusReporter(client, defer_to=lambda: True, event_delay=0.4)
    async with anyio.create_task_group() as tg:
        await tg.start(r.run)
        r.scheduled(web, "n1", "ksched", 1)
        await anyio.sleep(0.2)
        assert not events(apiserver)
        await eventually(lambda: len(events(apiserver)) == 1, timeout=2.0)
        r.event_delay = 60.0
        r.scheduled(db, "n1", "ksched", 1)
        await r.drain(timeout=2.0)
        assert len(events(apiserver)) == 2
        tg.cancel_scope.cancel()


async def test_api_errors_do_not_stop_the_worker(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    apiserver.faults.fail_next(1, verb="create", resource="events", code=403)
    async with running(StatusReporter(client, workers=1)) as r:
        r.event(pod, "Normal", "A", "Act", "first")
        await r.drain()
        r.event(pod, "Normal", "B", "Act", "second")
    assert [e["note"] for e in events(apiserver)] == ["second"]
    assert r.api_errors == 1


async def test_condition_patch_retries_internal_errors(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    apiserver.faults.fail_next(2, verb="patch", resource="pods/status", code=500)
    async with running(StatusReporter(client)) as r:
        r.failed(pod, "default-scheduler", "Unschedulable", "m", None)
    assert apiserver.count_requests(verb="patch", resource="pods/status") == 3
    assert apiserver.get("pods", "default", "web")["status"]["conditions"][-1]["message"] == "m"


def test_ticker_writes_due_repeats_once_and_ends_only_quiet_series() -> None:
    """Without workers: what the ticker queues, and which series it keeps."""
    clock = FakeClock()
    r = StatusReporter(None, clock=clock, series_interval=60, finish_after=360)  # type: ignore[arg-type]
    a, b, c = (info(make_pod(n)) for n in ("a", "b", "c"))

    def kinds() -> list[tuple[str, str]]:
        out = [(w.kind, w.path.rsplit("/", 1)[-1]) for w in [*r._events, *r._queue]]
        r._queue.clear()
        r._events.clear()
        return out

    for p in (a, b, c):
        r.event(p, "Warning", "FailedScheduling", "Scheduling", "x")
        clock.advance(10)
    assert [k for k, _ in kinds()] == ["event"] * 3
    r.event(a, "Warning", "FailedScheduling", "Scheduling", "x")  # a repeat: unwritten
    assert kinds() == [] and r.suppressed == 1
    r._tick()
    assert kinds() == []  # its interval has not passed
    clock.advance(60)
    r._tick()
    (kind, _), *more = kinds()
    assert kind == "series" and not more
    r._tick()
    assert kinds() == []  # written once
    # b and c went quiet over 360 s ago; a repeated since
    clock.advance(300)
    r._tick()
    assert [k[1] for k in r._series] == ["a"]
    clock.advance(400)
    r._tick()
    assert not r._series and kinds() == []


def test_a_series_ended_before_its_repeats_were_written_leaves_no_patch() -> None:
    clock = FakeClock()
    r = StatusReporter(None, clock=clock, series_interval=60, finish_after=360)  # type: ignore[arg-type]
    p = info(make_pod("p"))
    r.event(p, "Normal", "Scheduled", "Binding", "x")
    clock.advance(1)
    r.event(p, "Normal", "Scheduled", "Binding", "x")  # dirty, never ticked
    clock.advance(400)
    r.event(p, "Normal", "Scheduled", "Binding", "x")  # a new Event
    clock.advance(100)
    r._tick()
    assert [w.kind for w in r._events] == ["event", "event"]
    assert not r._queue


@pytest.mark.parametrize("pipelining", [True, False])
async def test_an_event_the_server_failed_is_tried_again(
    apiserver: TestAPIServer, client: APIClient, pipelining: bool
) -> None:
    """client-go's broadcaster keeps an event the server did not take (5xx, no answer)
    and tries again; a try that finds it created after all (409) is quiet."""
    pod = info(apiserver.create(make_pod("web")))
    apiserver.faults.fail_next(2, verb="create", resource="events", code=503)
    r = StatusReporter(client, pipelining=pipelining)
    r.event_retry_sleep = 0.05
    async with anyio.create_task_group() as tg:
        await tg.start(r.run)
        r.scheduled(pod, "n1", "default-scheduler", 1)
        await eventually(lambda: len(events(apiserver)) == 1, timeout=5)
        tg.cancel_scope.cancel()
    (ev,) = events(apiserver)
    assert ev["reason"] == "Scheduled"
    creates = apiserver.find_requests(verb="create", resource="events")
    assert [c.status for c in creates] == [503, 503, 201]


async def test_an_event_is_tried_at_most_twelve_times(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    apiserver.faults.fail_next(100, verb="create", resource="events", code=500)
    r = StatusReporter(client, pipelining=False)
    r.event_retry_sleep = 0.01
    with structlog.testing.capture_logs() as logs:
        async with running(r):
            r.scheduled(pod, "n1", "default-scheduler", 1)
            await eventually(
                lambda: apiserver.count_requests(verb="create", resource="events") >= 12,
                timeout=5,
            )
            await anyio.sleep(0.2)
    assert apiserver.count_requests(verb="create", resource="events") == 12
    assert events(apiserver) == []
    # one line for the failing tries (throttled), one for giving up
    said = [e["event"] for e in logs if e["log_level"] in ("warning", "error")]
    assert said == [
        "status/event write failed; trying again later",
        "Unable to write event (retry limit exceeded!)",
    ]


async def test_drain_writes_the_events_waiting_to_be_tried_again_at_once(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    apiserver.faults.fail_next(1, verb="create", resource="events", code=503)
    r = StatusReporter(client)
    r.event_retry_sleep = 600.0
    async with anyio.create_task_group() as tg:
        await tg.start(r.run)
        r.scheduled(pod, "n1", "default-scheduler", 1)
        await eventually(lambda: apiserver.count_requests(verb="create", resource="events") == 1)
        await anyio.sleep(0.1)
        assert r.pending == 1  # waiting for its next try
        with anyio.fail_after(5):
            await r.drain()
        tg.cancel_scope.cancel()
    assert [e["reason"] for e in events(apiserver)] == ["Scheduled"]


async def test_pod_group_condition_is_patched_on_the_status_subresource(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """The pod-group cycle's PodGroupInitiallyScheduled, merged by type as upstream's
    PatchPodGroupStatus merges it; a later write replaces reason and message, even empty."""
    from ksched.api.workload import Condition, pod_group_from_json

    raw = apiserver.create(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "g", "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
        }
    )
    pg = pod_group_from_json(msgspec.json.encode(raw))
    failed = Condition(
        type="PodGroupInitiallyScheduled",
        status="False",
        observed_generation=1,
        last_transition_time="2026-01-01T00:00:00Z",
        reason="Unschedulable",
        message="minCount (2) cannot be satisfied: 1 scheduled, 0 remaining",
    )
    done = Condition(
        type="PodGroupInitiallyScheduled",
        status="True",
        observed_generation=1,
        last_transition_time="2026-01-01T00:01:00Z",
        reason="Scheduled",
        message="",
    )
    async with running(StatusReporter(client)) as r:
        r.pod_group_condition(pg, failed)
    stored = apiserver.get("podgroups.scheduling.k8s.io", "default", "g")
    assert stored["status"]["conditions"] == [
        {
            "type": "PodGroupInitiallyScheduled",
            "status": "False",
            "observedGeneration": 1,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "reason": "Unschedulable",
            "message": "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining",
        }
    ]
    async with running(StatusReporter(client)) as r:
        r.pod_group_condition(pg, done)
    (cond,) = apiserver.get("podgroups.scheduling.k8s.io", "default", "g")["status"]["conditions"]
    assert (cond["status"], cond["reason"], cond.get("message", "")) == ("True", "Scheduled", "")
    (patch, _) = apiserver.find_requests(verb="patch", resource="podgroups/status")
    assert patch.content_type == "application/strategic-merge-patch+json"
    assert patch.path == "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups/g/status"
