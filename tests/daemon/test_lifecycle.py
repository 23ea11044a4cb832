"""SchedulerDaemon lifecycle without a reachable cluster, and embedding in a host program."""

from __future__ import annotations

import time

import aiohttp
import anyio
import pytest

from ksched.cluster import APIClient
from ksched.config import default_config
from ksched.daemon import SchedulerDaemon
from ksched.testing import TestAPIServer, make_node, make_pod


def test_unreachable_cluster_not_ready_and_stops_promptly() -> None:
    async def main() -> None:
        client = await APIClient.for_master("http://127.0.0.1:1", qps=0)
        try:
            t0 = time.monotonic()
            async with SchedulerDaemon(default_config(), client=client, port=0) as d:
                async with aiohttp.ClientSession() as s:
                    async with s.get(d.url + "/readyz") as r:
                        assert r.status == 503
                    async with s.get(d.url + "/livez") as r:
                        assert r.status == 200
                with pytest.raises(TimeoutError):
                    await d.wait_ready(0.3)
            assert time.monotonic() - t0 < 5
        finally:
            await client.close()

    anyio.run(main)


def test_embedded_in_a_host_program_with_its_own_tasks() -> None:
    """The daemon shares the loop with the host's tasks and leaves them alone on exit."""
    host_ticks = 0

    async def host_task() -> None:
        nonlocal host_ticks
        while True:
            await anyio.sleep(0.01)
            host_ticks += 1

    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(make_node("n1"))
            srv.create(make_pod("p1", scheduler_name="ksched"))
            client = await APIClient.for_master(srv.url, qps=0)
            async with anyio.create_task_group() as tg:
                tg.start_soon(host_task)
                async with SchedulerDaemon(default_config(), client=client, port=0) as d:
                    await d.wait_ready(10)
                    with anyio.fail_after(10):
                        while not srv.get("pods", "default", "p1")["spec"].get("nodeName"):
                            await anyio.sleep(0.02)
                    assert d.scheduler.cache.node_count() == 1
                ticks = host_ticks
                await anyio.sleep(0.05)
                assert host_ticks > ticks  # still running after the daemon left
                tg.cancel_scope.cancel()
            await client.close()

    anyio.run(main)


def test_body_exception_propagates_unwrapped() -> None:
    async def main() -> None:
        client = await APIClient.for_master("http://127.0.0.1:1", qps=0)
        try:
            with pytest.raises(ValueError, match="from the body"):
                async with SchedulerDaemon(default_config(), client=client, port=0):
                    raise ValueError("from the body")
        finally:
            await client.close()

    anyio.run(main)


def test_gc_young_threshold_raised_while_scheduling_and_restored() -> None:
    import gc

    original = gc.get_threshold()
    before = (700, *original[1:])

    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(make_node("n1"))
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                async with SchedulerDaemon(default_config(), client=client, port=0) as d:
                    await d.wait_ready(10)
                    assert gc.get_threshold() == (
                        max(before[0], SchedulerDaemon.gc_threshold_after_sync or 0),
                        *before[1:],
                    )
            finally:
                await client.close()

    try:
        gc.set_threshold(*before)
        anyio.run(main)
        assert gc.get_threshold() == before
    finally:
        gc.set_threshold(*original)


def test_events_wait_for_the_bindings_in_flight() -> None:
    """Bindings first: the daemon writes the Scheduled event of a pod bound at once only
    after a slow binding of another pod has finished, and then without being asked."""

    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(make_node("n1"))
            srv.faults.add_latency(1.0, verb="create", resource="pods/binding", name="slow")
            srv.create(make_pod("slow", scheduler_name="ksched"))
            srv.create(make_pod("fast", scheduler_name="ksched"))
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                async with SchedulerDaemon(default_config(), client=client, port=0) as d:
                    await d.wait_ready(10)
                    with anyio.fail_after(10):
                        while len(srv.list("events.events.k8s.io", "default")) < 2:
                            await anyio.sleep(0.02)
            finally:
                await client.close()
            binds = {r.name: r for r in srv.find_requests(verb="create", resource="pods/binding")}
            creates = srv.find_requests(verb="create", resource="events", namespace="default")
            assert set(binds) == {"slow", "fast"} and len(creates) == 2
            # fast was bound well before slow; its event still waited for slow's binding
            assert binds["fast"].time < binds["slow"].time - 0.5
            assert min(e.time for e in creates) >= binds["slow"].time

    anyio.run(main)
