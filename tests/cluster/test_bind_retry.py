"""v1.37's ``util.BindPod``: a binding answered 500/503 (or refused) is retried with
client-go's DefaultBackoff before the attempt fails; v1.36 posted it once."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest

from ksched.api.objects import Pod
from ksched.cluster import APIClient, APIClusterClient
from ksched.cluster.binder import _refused
from ksched.cluster.client import APIConnectionError
from ksched.framework.handle import BindError
from ksched.framework.types import PodInfo
from ksched.testing import TestAPIServer, make_pod

pytestmark = pytest.mark.anyio

BINDS = {"verb": "create", "resource": "pods/binding"}


def info(obj: dict[str, Any]) -> PodInfo:
    return PodInfo(msgspec.convert(obj, Pod), obj)


def binder(client: APIClient, retry: bool) -> APIClusterClient:
    cc = APIClusterClient(client)
    cc.retry_bind = retry
    return cc


async def test_server_errors_are_retried_from_1_37(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    apiserver.faults.fail_next(2, resource="pods/binding", code=503)
    await binder(client, True).bind(pod, "node-1")
    assert apiserver.count_requests(**BINDS) == 3


async def test_retries_end_after_four_tries(apiserver: TestAPIServer, client: APIClient) -> None:
    pod = info(apiserver.create(make_pod("web")))
    apiserver.faults.fail_next(4, resource="pods/binding", code=500)
    with pytest.raises(BindError) as err:
        await binder(client, True).bind(pod, "node-1")
    assert err.value.retry is True
    assert apiserver.count_requests(**BINDS) == 4


async def test_v1_36_and_final_answers_post_once(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    pod = info(apiserver.create(make_pod("web")))
    apiserver.faults.fail_next(1, resource="pods/binding", code=500)
    with pytest.raises(BindError):
        await binder(client, False).bind(pod, "node-1")
    assert apiserver.count_requests(**BINDS) == 1
    apiserver.faults.fail_next(1, resource="pods/binding", code=409)
    with pytest.raises(BindError) as err:
        await binder(client, True).bind(pod, "node-1")
    assert err.value.retry is False
    assert apiserver.count_requests(**BINDS) == 2


def test_only_a_refused_connection_counts_as_refused() -> None:
    refused = APIConnectionError("POST x: refused")
    refused.__cause__ = OSError("connect")
    refused.__cause__.__cause__ = ConnectionRefusedError(111, "refused")
    assert _refused(refused)
    reset = APIConnectionError("POST x: reset")
    reset.__cause__ = ConnectionResetError(104, "reset")
    assert not _refused(reset)


@pytest.mark.parametrize(("version", "retries"), [("1.36", False), ("1.37", True)])
def test_the_daemon_retries_bindings_as_its_version(version: str, retries: bool) -> None:
    from ksched.config import default_config
    from ksched.daemon import SchedulerDaemon
    from ksched.features import FeatureGates

    async def main() -> bool:
        async with TestAPIServer() as srv:
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                cfg = default_config()
                cfg.features = FeatureGates(version)
                async with SchedulerDaemon(cfg, client=client, port=0) as d:
                    assert d._binder is not None
                    return d._binder.retry_bind
            finally:
                await client.close()

    assert anyio.run(main) is retries
