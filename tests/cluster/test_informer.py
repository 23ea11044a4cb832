"""Informers against the test API server: list+watch, resume, 410 relist, bookmarks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from ksched.api.objects import Node
from ksched.cluster import APIClient, Backoff, Informer, InformerSet, pod_decoder, struct_decoder
from ksched.cluster.decoding import pod_meta
from ksched.cluster.wiring import PODS_FIELD_SELECTOR
from ksched.framework.types import PodInfo
from ksched.testing import TestAPIServer, make_namespace, make_node, make_pod

from .conftest import eventually

pytestmark = pytest.mark.anyio

Event = tuple[str, str, str]  # (kind, name, resourceVersion)


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.objects: list[Any] = []

    def add(self, obj: Any) -> None:
        self.events.append(("add", *self._id(obj)))
        self.objects.append(obj)

    def update(self, old: Any, new: Any) -> None:
        assert self._id(old)[0] == self._id(new)[0]
        self.events.append(("update", *self._id(new)))
        self.objects.append(new)

    def delete(self, obj: Any) -> None:
        self.events.append(("delete", *self._id(obj)))
        self.objects.append(obj)

    @staticmethod
    def _id(obj: Any) -> tuple[str, str]:
        meta = obj.pod.metadata if isinstance(obj, PodInfo) else obj.metadata
        return meta.name, meta.resource_version

    def kinds(self) -> list[tuple[str, str]]:
        return [(k, n) for k, n, _ in self.events]


def pod_informer(client: APIClient, rec: Recorder, **kw: Any) -> Informer[PodInfo]:
    inf: Informer[PodInfo] = Informer(
        client,
        "/api/v1/pods",
        pod_decoder(),
        name="pods",
        meta=pod_meta,
        backoff=Backoff(0.02, 0.1, jitter=0),
        **kw,
    )
    inf.add_handlers(rec.add, rec.update, rec.delete)
    return inf


@asynccontextmanager
async def running(*informers: Informer[Any]) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        for inf in informers:
            tg.start_soon(inf.run)
        with anyio.fail_after(5):
            for inf in informers:
                await inf.wait_synced()
        yield
        tg.cancel_scope.cancel()


def rv_of(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["resourceVersion"])


async def test_list_then_watch_in_order(apiserver: TestAPIServer, client: APIClient) -> None:
    a = apiserver.create(make_pod("a"))
    rec = Recorder()
    inf = pod_informer(client, rec)
    assert not inf.has_synced
    async with running(inf):
        assert inf.has_synced
        assert rec.events == [("add", "a", rv_of(a))]
        await eventually(lambda: apiserver.watcher_count("pods") == 1)
        b = apiserver.create(make_pod("b"))
        a2 = apiserver.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
        apiserver.delete("pods", "default", "b")
        await eventually(lambda: len(rec.events) == 4)
    assert rec.events[1:3] == [("add", "b", rv_of(b)), ("update", "a", rv_of(a2))]
    assert rec.events[3][:2] == ("delete", "b")
    assert set(inf.store) == {"default/a"}
    assert inf.store["default/a"].labels == {"x": "1"}
    watch = apiserver.find_requests(verb="watch", resource="pods")[0]
    assert watch.query["resourceVersion"] == rv_of(a)  # the list's resourceVersion
    assert watch.query["allowWatchBookmarks"] == "true"
    assert 300 <= int(watch.query["timeoutSeconds"]) <= 600


async def test_watch_timeout_is_randomized_and_configurable(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    rec = Recorder()
    inf = pod_informer(client, rec, min_watch_timeout=1)
    async with running(inf):
        await eventually(lambda: apiserver.count_requests(verb="watch", resource="pods") >= 2)
        apiserver.create(make_pod("after-timeout"))
        await eventually(lambda: ("add", "after-timeout") in rec.kinds())
    assert apiserver.count_requests(verb="list", resource="pods") == 1
    for w in apiserver.find_requests(verb="watch", resource="pods"):
        assert 1 <= int(w.query["timeoutSeconds"]) <= 2


@pytest.mark.parametrize("abort", [False, True])
async def test_dropped_watch_resumes_without_relist(
    apiserver: TestAPIServer, client: APIClient, abort: bool
) -> None:
    rec = Recorder()
    inf = pod_informer(client, rec)
    async with running(inf):
        await eventually(lambda: apiserver.watcher_count("pods") == 1)
        b = apiserver.create(make_pod("b"))
        await eventually(lambda: len(rec.events) == 1)
        assert apiserver.faults.drop_watches(resource="pods", abort=abort) == 1
        c = apiserver.create(make_pod("c"))  # may land before the watch is back: replayed
        await eventually(lambda: apiserver.count_requests(verb="watch", resource="pods") == 2)
        d = apiserver.create(make_pod("d"))
        await eventually(lambda: len(rec.events) == 3)
        await anyio.sleep(0.1)  # nothing more (no duplicates) arrives
    assert rec.events == [("add", "b", rv_of(b)), ("add", "c", rv_of(c)), ("add", "d", rv_of(d))]
    assert apiserver.count_requests(verb="list", resource="pods") == 1
    second = apiserver.find_requests(verb="watch", resource="pods")[1]
    assert second.query["resourceVersion"] == rv_of(b)


@pytest.mark.parametrize("how", ["compact", "http-410"])
async def test_expired_watch_relists_and_synthesizes_changes(
    apiserver: TestAPIServer, client: APIClient, how: str
) -> None:
    apiserver.create(make_pod("stays"))
    gone = apiserver.create(make_pod("gone"))
    apiserver.create(make_pod("changes"))
    rec = Recorder()
    inf = pod_informer(client, rec)
    async with running(inf):
        await eventually(lambda: apiserver.watcher_count("pods") == 1)
        trigger = apiserver.create(make_pod("trigger"))  # the watch has seen an event
        await eventually(lambda: len(rec.events) == 4)
        # hold the reconnect back while the cluster changes behind the informer's back
        apiserver.faults.add_latency(0.5, verb="watch", resource="pods", count=1)
        if how == "http-410":
            apiserver.faults.fail_next(
                1, verb="watch", resource="pods", code=410, reason="Expired", message="too old"
            )
        apiserver.faults.drop_watches(resource="pods")
        apiserver.delete("pods", "default", "gone")
        changed = apiserver.patch(
            "pods", "default", "changes", {"metadata": {"labels": {"v": "2"}}}
        )
        new = apiserver.create(make_pod("new"))
        if how == "compact":
            apiserver.compact("pods")
        await eventually(lambda: len(rec.events) == 7, timeout=10)
    assert apiserver.count_requests(verb="list", resource="pods") == 2
    watches = apiserver.find_requests(verb="watch", resource="pods")
    assert watches[1].query["resourceVersion"] == rv_of(trigger)
    if how == "http-410":
        assert watches[1].status == 410
    relist = rec.events[4:]
    # DeltaFIFO.Replace order: list items (add/update) first, then deletes of the vanished
    assert sorted(relist[:2]) == [("add", "new", rv_of(new)), ("update", "changes", rv_of(changed))]
    assert relist[2] == ("delete", "gone", rv_of(gone))  # last known state
    assert set(inf.store) == {"default/stays", "default/changes", "default/new", "default/trigger"}


async def test_bookmarks_advance_resource_version(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    rec = Recorder()
    inf = pod_informer(client, rec)
    async with running(inf):
        await eventually(lambda: apiserver.watcher_count("pods") == 1)
        ns = apiserver.create(make_namespace("elsewhere"))  # moves the global RV, not pods
        await eventually(lambda: inf.last_sync_resource_version == rv_of(ns), timeout=5)
        apiserver.faults.drop_watches(resource="pods")
        await eventually(lambda: apiserver.count_requests(verb="watch", resource="pods") == 2)
    assert rec.events == []
    second = apiserver.find_requests(verb="watch", resource="pods")[1]
    assert second.query["resourceVersion"] == rv_of(ns)


async def test_field_selector_excludes_terminal_pods(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    apiserver.create({**make_pod("done"), "status": {"phase": "Succeeded"}})
    apiserver.create({**make_pod("running", node_name="n1"), "status": {"phase": "Running"}})
    rec = Recorder()
    inf = pod_informer(client, rec, field_selector=PODS_FIELD_SELECTOR)
    async with running(inf):
        assert rec.kinds() == [("add", "running")]
        await eventually(lambda: apiserver.watcher_count("pods") == 1)
        apiserver.patch(
            "pods", "default", "running", {"status": {"phase": "Failed"}}, subresource="status"
        )
        await eventually(lambda: len(rec.events) == 2)
    assert rec.kinds()[1] == ("delete", "running")
    assert inf.store == {}
    assert apiserver.find_requests(verb="list", resource="pods")[0].query["fieldSelector"] == (
        PODS_FIELD_SELECTOR
    )


async def test_undecodable_pod_is_delivered_with_error(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    bad = make_pod("bad", scheduler_name="custom")
    bad["spec"]["containers"][0]["ports"] = [{"containerPort": "eighty"}]
    apiserver.create(bad)
    rec = Recorder()
    inf = pod_informer(client, rec)
    async with running(inf):
        await eventually(lambda: apiserver.watcher_count("pods") == 1)
        bad2 = make_pod("bad-later")
        bad2["spec"]["hostNetwork"] = "yes"
        apiserver.create(bad2)
        apiserver.create(make_pod("good"))
        await eventually(lambda: len(rec.events) == 3)
    first, later, good = rec.objects
    assert first.error is not None and "containerPort" in first.error
    assert first.key == "default/bad" and first.uid
    assert first.pod.spec.scheduler_name == "custom"
    assert later.error is not None and "hostNetwork" in later.error
    assert good.error is None and good.raw is not None


async def test_undecodable_node_is_skipped(apiserver: TestAPIServer, client: APIClient) -> None:
    broken = make_node("broken")
    broken["status"]["capacity"] = {"cpu": ["not", "a", "quantity"]}
    apiserver.create(broken)
    apiserver.create(make_node("ok"))
    rec = Recorder()
    nodes: Informer[Node] = Informer(
        client, "/api/v1/nodes", struct_decoder(Node), name="nodes", backoff=Backoff(0.02, 0.1)
    )
    nodes.add_handlers(rec.add, rec.update, rec.delete)
    async with running(nodes):
        await eventually(lambda: apiserver.watcher_count("nodes") == 1)
        apiserver.create(make_node("later"))
        await eventually(lambda: len(rec.events) == 2)
        # deleting the skipped one is not delivered; the informer carries on
        apiserver.delete("nodes", None, "broken")
        apiserver.delete("nodes", None, "ok")
        await eventually(lambda: len(rec.events) == 3)
    assert rec.kinds() == [("add", "ok"), ("add", "later"), ("delete", "ok")]
    assert nodes.decode_errors == 2  # its list item and its DELETED event


async def test_handler_exception_does_not_stop_informer(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    rec = Recorder()
    inf = pod_informer(client, rec)

    def boom(obj: Any) -> None:
        raise RuntimeError("handler bug")

    inf.handlers.insert(0, type(inf.handlers[0])(on_add=boom))
    async with running(inf):
        await eventually(lambda: apiserver.watcher_count("pods") == 1)
        apiserver.create(make_pod("x"))
        apiserver.create(make_pod("y"))
        await eventually(lambda: len(rec.events) == 2)


async def test_list_failure_backs_off_then_syncs(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    apiserver.faults.fail_next(2, verb="list", resource="pods", code=500)
    rec = Recorder()
    inf = pod_informer(client, rec)
    async with running(inf):
        pass
    assert apiserver.count_requests(verb="list", resource="pods") == 3


async def test_informer_set_reports_synced(apiserver: TestAPIServer, client: APIClient) -> None:
    apiserver.faults.add_latency(0.2, verb="list", resource="nodes", count=1)
    rec = Recorder()
    pods = pod_informer(client, rec)
    nodes: Informer[Node] = Informer(client, "/api/v1/nodes", struct_decoder(Node))
    s = InformerSet([pods, nodes])
    synced_at_start: list[bool] = []

    async with anyio.create_task_group() as tg:
        tg.start_soon(s.run)
        await eventually(lambda: pods.has_synced)
        synced_at_start.append(s.synced)
        with anyio.fail_after(5):
            await s.wait_synced()
        assert s.synced
        tg.cancel_scope.cancel()
    assert synced_at_start == [False]


def test_backoff_doubles_caps_and_resets() -> None:
    from ksched.util.clock import FakeClock

    clock = FakeClock()
    b = Backoff(0.8, 30.0, reset_after=120.0, jitter=0, clock=clock)
    got: list[float] = []
    for _ in range(8):
        got.append(b.next())
        clock.advance(1)
    assert got == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    clock.advance(121)
    assert b.next() == 0.8
    j = Backoff(1.0, 30.0, jitter=1.0, clock=clock)
    assert 1.0 <= j.next() <= 2.0  # jitter adds up to 100%


def _lists(apiserver: TestAPIServer) -> list[tuple[str | None, str | None]]:
    """Each pods list's (resourceVersion, limit)."""
    return [
        (r.query.get("resourceVersion"), r.query.get("limit"))
        for r in apiserver.find_requests(verb="list", resource="pods")
    ]


@pytest.mark.parametrize("first_paged", [False, True])
async def test_relist_at_a_version_is_unpaged_unless_the_first_list_was_paged(
    apiserver: TestAPIServer, client: APIClient, first_paged: bool
) -> None:
    """client-go's reflector: a relist at the last version seen goes without a limit, so
    the watch cache serves it (a paged one is an exact read of old state from etcd)."""
    for i in range(3):
        apiserver.create(make_pod(f"p{i}"))
    rec = Recorder()
    inf = pod_informer(client, rec, page_size=2 if first_paged else 500)
    async with running(inf):
        await eventually(lambda: apiserver.watcher_count("pods") == 1)
        seen = apiserver.create(make_pod("seen"))  # the watch moves past the list's version
        await eventually(lambda: inf.last_sync_resource_version == rv_of(seen))
        apiserver.faults.fail_next(
            1, verb="watch", resource="pods", code=410, reason="Expired", message="too old"
        )
        apiserver.faults.drop_watches(resource="pods")
        await eventually(lambda: inf.lists == 2)
    lists = _lists(apiserver)
    assert lists[0][0] == "0"
    assert lists[-1][0] == rv_of(seen)
    if first_paged:
        assert inf.paginated
        assert lists[-1][1] == "2"
    else:
        assert not inf.paginated
        assert lists[-1][1] is None
    assert inf.consistent_lists == 0
    assert set(inf.store) == {"default/p0", "default/p1", "default/p2", "default/seen"}


async def test_watch_expired_at_the_listed_version_relists_the_latest(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """The API server restart loop: a list returned a version the watch calls too old at
    once; the next list is a consistent read ("") instead of the same stale one again."""
    apiserver.create(make_pod("a"))
    apiserver.faults.fail_next(
        2, verb="watch", resource="pods", code=410, reason="Expired", message="too old"
    )
    rec = Recorder()
    inf = pod_informer(client, rec)
    async with running(inf):
        await eventually(lambda: apiserver.watcher_count("pods") == 1, timeout=5)
        apiserver.create(make_pod("b"))
        await eventually(lambda: len(rec.events) == 2)
    versions = [rv for rv, _ in _lists(apiserver)]
    # first list at "0"; each watch from a list's version expired: both relists consistent
    assert versions == ["0", "", ""]
    assert inf.consistent_lists == 2
    assert rec.kinds() == [("add", "a"), ("add", "b")]


@pytest.mark.parametrize(
    ("code", "reason", "message"),
    [
        (410, "Expired", "too old resource version: 5 (9)"),
        (504, "Timeout", "Too large resource version: 50, current: 9"),
    ],
)
async def test_list_at_an_unavailable_version_falls_back_at_once(
    apiserver: TestAPIServer, client: APIClient, code: int, reason: str, message: str
) -> None:
    apiserver.create(make_pod("a"))
    rec = Recorder()
    inf = pod_informer(client, rec)
    async with running(inf):
        await eventually(lambda: apiserver.watcher_count("pods") == 1)
        seen = apiserver.create(make_pod("b"))
        await eventually(lambda: inf.last_sync_resource_version == rv_of(seen))
        apiserver.faults.fail_next(
            1, verb="list", resource="pods", code=code, reason=reason, message=message
        )
        apiserver.faults.fail_next(
            1, verb="watch", resource="pods", code=410, reason="Expired", message="too old"
        )
        apiserver.faults.drop_watches(resource="pods")
        await eventually(lambda: inf.lists == 2)
    versions = [rv for rv, _ in _lists(apiserver)]
    assert versions == ["0", rv_of(seen), ""]  # the refused list retried at "" at once


def test_too_large_resource_version_is_recognized_by_its_cause() -> None:
    from ksched.cluster import APIError

    body = (
        b'{"kind":"Status","code":504,"reason":"Timeout","message":"Too large resource '
        b'version: 12, current: 9","details":{"causes":[{"reason":"ResourceVersionTooLarge",'
        b'"message":"Too large resource version"}],"retryAfterSeconds":1}}'
    )
    assert APIError.from_response(504, body).is_too_large_resource_version
    other = b'{"kind":"Status","code":504,"reason":"Timeout","message":"request timed out"}'
    assert not APIError.from_response(504, other).is_too_large_resource_version
    assert not APIError.from_response(410, b"").is_too_large_resource_version


async def test_stale_for_measures_the_time_without_a_watch(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """Readiness input: 0 while watching; growing while the watch cannot be reopened;
    0 again once it is."""
    rec = Recorder()
    inf = pod_informer(client, rec)
    s = InformerSet([inf])
    async with running(inf):
        await eventually(lambda: apiserver.watcher_count("pods") == 1)
        assert inf.stale_for() == 0.0
        assert s.stale(0.0) == ""
        apiserver.faults.fail_next(1000, verb="watch", resource="pods", code=429)
        apiserver.faults.drop_watches(resource="pods")
        await eventually(lambda: inf.stale_for() > 0.3)
        assert s.stale(0.2).startswith("pods out of step for")
        apiserver.faults.clear()
        await eventually(lambda: apiserver.watcher_count("pods") == 1, timeout=10)
        await eventually(lambda: inf.stale_for() == 0.0)
        assert s.stale(0.0) == ""


async def test_the_first_informer_through_wakes_the_others_waiting_to_reconnect() -> None:
    """A partition that heals: once one informer of a client reconnects, the server is
    back for all, and the others stop waiting out their reconnect backoff."""
    from ksched.testing.controlplane import TCPProxy

    async with TestAPIServer() as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        with TCPProxy(port) as proxy:
            client = await APIClient.for_master(f"http://127.0.0.1:{proxy.port}", qps=0)
            try:
                rec = Recorder()
                eager = pod_informer(client, rec, reconnect_backoff=Backoff(0.05, 0.05, jitter=0))
                slow: Informer[Node] = Informer(
                    client,
                    "/api/v1/nodes",
                    struct_decoder(Node),
                    name="nodes",
                    reconnect_backoff=Backoff(60.0, 60.0, jitter=0),
                )
                async with running(eager, slow):
                    await eventually(lambda: srv.watcher_count("nodes") == 1)
                    proxy.cut(hold=True)
                    await eventually(lambda: slow.stale_for() > 0 and eager.stale_for() > 0.2)
                    proxy.release()
                    await eventually(lambda: slow.stale_for() == 0.0, timeout=5)
                    srv.create(make_node("after"))
                    await eventually(lambda: "after" in slow.store, timeout=5)
            finally:
                await client.close()


# -- silent watches: the client's probe -----------------------------------------------------


async def test_a_stalled_path_puts_the_informer_out_of_step_and_reopens_its_watch() -> None:
    """Every byte held back, connections left open: the watch is silent, the probe gets no
    answer, so the informer is out of step (``stale``) and its watch is reopened; once the
    path flows again, it is back in step with what changed meanwhile."""
    from ksched.testing.controlplane import TCPProxy

    async with TestAPIServer() as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        with TCPProxy(port) as proxy:
            client = await APIClient.for_master(
                f"http://127.0.0.1:{proxy.port}", qps=0, read_idle_timeout=0.3, ping_timeout=0.3
            )
            try:
                rec = Recorder()
                inf = pod_informer(client, rec)
                s = InformerSet([inf])
                async with running(inf):
                    await eventually(lambda: srv.watcher_count("pods") == 1)
                    await anyio.sleep(0.5)  # silent but answering: in step
                    assert inf.stale_for() == 0.0 and client.probes >= 1
                    proxy.stall()
                    srv.create(make_pod("during"))
                    await eventually(lambda: s.stale(0.2) != "")
                    assert "no answer within 0.3s" in s.stale(0.2)
                    await eventually(lambda: inf.idle_reopens >= 1)
                    proxy.resume()
                    await eventually(lambda: inf.stale_for() == 0.0, timeout=10)
                    await eventually(lambda: "default/during" in inf.store)
                    assert s.stale(0.0) == ""
            finally:
                await client.close()


async def test_a_failing_probe_keeps_the_informer_out_of_step_until_one_succeeds(
    apiserver: TestAPIServer, apiserver_kubeconfig: Any
) -> None:
    """An etcd outage as ksched sees it: watches open and stay silent, lists fail with
    5xx. Reopened watches do not count as in step while probes fail; the first probe
    that succeeds does."""
    async with await APIClient.from_kubeconfig(
        apiserver_kubeconfig, qps=0, read_idle_timeout=0.3, ping_timeout=1.0
    ) as client:
        rec = Recorder()
        inf = pod_informer(client, rec)
        s = InformerSet([inf])
        async with running(inf):
            await eventually(lambda: apiserver.watcher_count("pods") == 1)
            apiserver.faults.fail_next(10_000, verb="list", code=500)
            await eventually(lambda: s.stale(0.5) != "")
            assert "500" in s.stale(0.5) and client.probe_failing
            await eventually(lambda: inf.idle_reopens >= 1)
            reopened = inf.watches
            await eventually(lambda: inf.watches > reopened)  # a new watch is accepted...
            await anyio.sleep(0.3)
            assert inf.stale_for() > 0.5  # ...yet the informer is not back in step
            apiserver.faults.clear()
            await eventually(lambda: inf.stale_for() == 0.0, timeout=5)
            assert not client.probe_failing and s.stale(0.0) == ""


async def test_no_probe_while_events_flow(
    apiserver: TestAPIServer, apiserver_kubeconfig: Any
) -> None:
    """A watch that delivers events is alive: no probe until it falls silent."""
    async with await APIClient.from_kubeconfig(
        apiserver_kubeconfig, qps=0, read_idle_timeout=1.0, ping_timeout=1.0
    ) as client:
        rec = Recorder()
        inf = pod_informer(client, rec)
        async with running(inf):
            for i in range(20):
                apiserver.create(make_pod(f"p{i}"))
                await anyio.sleep(0.1)
            assert client.probes == 0
            await eventually(lambda: client.probes == 1)  # silent now


async def test_concurrent_probes_share_one_request_and_its_result(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    """One probe per client at a time: informers going silent together ask once; the
    answer stands for ``read_idle_timeout``."""
    client.read_idle_timeout = 30.0
    apiserver.faults.add_latency(0.3, verb="list", resource="namespaces", count=1)
    results: list[str | None] = []

    async def ask() -> None:
        results.append(await client.probe())

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(ask)
    assert results == [None] * 5 and client.probes == 1
    assert await client.probe() is None and client.probes == 1
    client.ping_timeout = 0.2
    client.read_idle_timeout = 0.0  # nothing stands: ask again
    apiserver.faults.add_latency(1.0, verb="list", resource="namespaces", count=1)
    why = await client.probe()
    assert why == "probe GET /api/v1/namespaces: no answer within 0.2s" and client.probe_failing
    assert client.probes == 2
