"""Readiness that tells the truth, the fenced binder, and bindings whose answer was lost
(the daemon against the test API server in the same event loop)."""

from __future__ import annotations

from typing import Any

import aiohttp
import anyio
import msgspec
import pytest

from ksched.api.objects import Pod
from ksched.cluster import APIClient, APIConnectionError
from ksched.config import default_config
from ksched.daemon import SchedulerDaemon
from ksched.daemon.daemon import _FencedClusterClient
from ksched.framework.handle import BindError
from ksched.framework.types import PodInfo
from ksched.testing import TestAPIServer, make_node, make_pod


async def _readyz(d: SchedulerDaemon) -> tuple[int, str]:
    async with aiohttp.ClientSession() as s, s.get(d.url + "/readyz?verbose") as r:
        return r.status, await r.text()


async def _until(pred: Any, timeout: float = 10.0) -> None:
    with anyio.fail_after(timeout):
        while not await pred():
            await anyio.sleep(0.02)


def test_an_informer_out_of_step_fails_readiness_until_it_watches_again() -> None:
    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(make_node("n1"))
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                cfg = default_config()
                async with SchedulerDaemon(
                    cfg, client=client, port=0, readiness_bound=0.3, leader_elect=False
                ) as d:
                    await d.wait_ready(10)
                    assert (await _readyz(d))[0] == 200
                    srv.faults.fail_next(100_000, verb="watch", resource="pods", code=429)
                    srv.faults.drop_watches(resource="pods")

                    async def failing() -> bool:
                        status, text = await _readyz(d)
                        return status == 503 and "[-]informer-sync failed" in text

                    await _until(failing)
                    _, text = await _readyz(d)
                    assert "pods out of step for" in text
                    srv.faults.clear()

                    async def ready() -> bool:
                        return (await _readyz(d))[0] == 200

                    await _until(ready)
            finally:
                await client.close()

    anyio.run(main)


def test_silent_watches_and_a_server_that_cannot_list_fail_readiness() -> None:
    """An etcd outage as the daemon sees it: the watches stay open with nothing to say
    and every list answers 500. The probe a silent watch calls for fails, so /readyz
    says which informer and why, until the server lists again."""

    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(make_node("n1"))
            client = await APIClient.for_master(
                srv.url, qps=0, read_idle_timeout=0.3, ping_timeout=1.0
            )
            try:
                cfg = default_config()
                async with SchedulerDaemon(
                    cfg, client=client, port=0, readiness_bound=0.3, leader_elect=False
                ) as d:
                    await d.wait_ready(10)
                    assert (await _readyz(d))[0] == 200
                    srv.faults.fail_next(100_000, verb="list", code=500)

                    async def failing() -> bool:
                        status, text = await _readyz(d)
                        return status == 503 and "[-]informer-sync failed" in text

                    await _until(failing)
                    _, text = await _readyz(d)
                    assert "out of step for" in text and "probe GET" in text and "500" in text
                    assert srv.watcher_count("pods") >= 1  # the watches themselves are fine
                    srv.faults.clear()

                    async def ready() -> bool:
                        return (await _readyz(d))[0] == 200

                    await _until(ready)
            finally:
                await client.close()

    anyio.run(main)


def test_a_scheduler_whose_bindings_fail_is_not_ready_until_one_succeeds() -> None:
    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(make_node("n1"))
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                cfg = default_config()
                async with SchedulerDaemon(
                    cfg, client=client, port=0, readiness_bound=0.3, leader_elect=False
                ) as d:
                    await d.wait_ready(10)
                    srv.faults.fail_next(100_000, verb="create", resource="pods/binding", code=503)
                    srv.create(make_pod("web", scheduler_name="ksched"))

                    async def failing() -> bool:
                        status, text = await _readyz(d)
                        return status == 503 and "[-]binding failed" in text

                    await _until(failing)
                    srv.faults.clear()

                    async def bound() -> bool:
                        return bool(srv.get("pods", "default", "web")["spec"].get("nodeName"))

                    await _until(bound, 15)

                    async def ready() -> bool:
                        return (await _readyz(d))[0] == 200

                    await _until(ready)
            finally:
                await client.close()

    anyio.run(main)


def test_a_binding_applied_but_never_answered_is_reported_scheduled() -> None:
    """The server bound the pod, then the connection broke before its answer: once the
    informer shows the pod on that node, its Scheduled event is written after all."""

    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(make_node("n1"))
            client = await APIClient.for_master(srv.url, qps=0)
            real = client.request
            lost: list[str] = []

            async def answer_lost(method: str, path: str, **kw: Any) -> tuple[int, bytes]:
                out = await real(method, path, **kw)
                if path.endswith("/binding") and not lost:
                    lost.append(path)
                    raise APIConnectionError(f"{method} {path}: the server closed the connection")
                return out

            client.request = answer_lost  # type: ignore[method-assign]
            try:
                async with SchedulerDaemon(default_config(), client=client, port=0) as d:
                    await d.wait_ready(10)
                    srv.create(make_pod("web", scheduler_name="ksched"))

                    async def reported() -> bool:
                        evs = srv.list("events.events.k8s.io", "default")
                        return any(e["reason"] == "Scheduled" for e in evs)

                    await _until(reported)
                    await anyio.sleep(0.3)
            finally:
                await client.close()
            assert lost
            scheduled = [
                e for e in srv.list("events.events.k8s.io", "default") if e["reason"] == "Scheduled"
            ]
            assert len(scheduled) == 1
            assert scheduled[0]["note"] == "Successfully assigned default/web to n1"
            assert srv.get("pods", "default", "web")["spec"]["nodeName"] == "n1"

    anyio.run(main)


def _info(obj: dict[str, Any]) -> PodInfo:
    return PodInfo(msgspec.convert(obj, Pod), obj)


@pytest.mark.parametrize("confirmed", [True, False])
def test_the_fenced_binder_waits_for_the_lease_to_be_confirmed(confirmed: bool) -> None:
    """Fenced (a pause): the binding waits for a renewal; if the lease is lost instead,
    it is refused (to be retried by whoever leads) without a request."""

    async def main() -> None:
        async with TestAPIServer() as srv:
            pod = _info(srv.create(make_pod("web")))
            client = await APIClient.for_master(srv.url, qps=0)
            writable = [False]

            async def wait_writable() -> bool:
                await anyio.sleep(0.1)
                writable[0] = confirmed
                return confirmed

            b = _FencedClusterClient(client, lambda: writable[0], wait_writable)
            try:
                if confirmed:
                    await b.bind(pod, "n1")
                    assert srv.get("pods", "default", "web")["spec"]["nodeName"] == "n1"
                else:
                    with pytest.raises(BindError) as err:
                        await b.bind(pod, "n1")
                    assert err.value.retry
                    assert "not the leader" in str(err.value)
                    assert srv.find_requests(resource="pods/binding") == []
            finally:
                await client.close()

    anyio.run(main)


class _Recording:
    """An APIClient that records requests and answers none (none may be sent)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, **kw: Any) -> tuple[int, bytes]:
        self.requests.append((method, path))
        raise AssertionError(f"{method} {path} went out")


def test_the_fenced_binder_refuses_every_write_once_leadership_is_lost() -> None:
    """The fence is the base client's, awaited before each write: every write the framework
    and the built-in plugins make (SchedulerCluster, reads excepted) is refused without a
    request, each naming what it refused."""
    from ksched.api.objects import PersistentVolume, PersistentVolumeClaim, PodCondition
    from ksched.api.resource import ResourceClaim
    from ksched.daemon.daemon import _NotLeader
    from ksched.profile import SchedulerCluster
    from ksched.testing import pod_info

    pod = pod_info(make_pod("web"))
    claim = ResourceClaim()
    writes: dict[str, tuple[Any, ...]] = {
        "delete_pod": (pod,),
        "set_nominated_node": (pod, "n1"),
        "set_pod_condition": (pod, PodCondition(type="DisruptionTarget", status="True")),
        "update_persistent_volume": (PersistentVolume(),),
        "update_persistent_volume_claim": (PersistentVolumeClaim(),),
        "update_resource_claim": (claim,),
        "update_resource_claim_status": (claim,),
        "patch_resource_claim_status": ("default", "c", {}),
        "create_resource_claim": (claim,),
        "delete_resource_claim": ("default", "c"),
        "set_extended_resource_claim_status": (pod, {}),
    }
    reads = {"get_object", "get_resource_claim"}
    members = {m for m in dir(SchedulerCluster) if not m.startswith("_")}
    assert members == {"bind", *writes, *reads}

    async def main() -> None:
        client = _Recording()
        b = _FencedClusterClient(client, lambda: False)  # type: ignore[arg-type]
        with pytest.raises(BindError, match=r"binding default/web to n1: .*not the leader"):
            await b.bind(pod, "n1")
        for name, args in writes.items():
            with pytest.raises(_NotLeader, match="not the leader any more"):
                await getattr(b, name)(*args)
        assert client.requests == []

    anyio.run(main)
