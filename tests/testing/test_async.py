"""The server on the test's own event loop (`async with`), driven by aiohttp and by
kubernetes_asyncio, the client the daemon uses."""

from __future__ import annotations

import json
from pathlib import Path

import aiohttp
import pytest

from ksched.testing import APIStatusError, TestAPIServer, make_node, make_pod, serving

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiohttp needs asyncio


async def test_async_context_manager_and_aiohttp_watch() -> None:
    async with TestAPIServer(bookmark_interval=0.1) as srv, aiohttp.ClientSession() as session:
        srv.create(make_pod("a"))
        url = f"{srv.url}/api/v1/namespaces/default/pods"
        async with session.get(url) as resp:
            listed = await resp.json()
        rv = listed["metadata"]["resourceVersion"]
        params = {
            "watch": "1",
            "resourceVersion": rv,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "2",
        }
        async with session.get(url, params=params) as resp:
            await srv.wait_for_watchers_async(1, "pods")
            srv.create(make_pod("b"))  # called on the loop thread: runs inline
            types = []
            async for line in resp.content:
                event = json.loads(line)
                types.append(event["type"])
                if event["type"] == "ADDED":
                    assert event["object"]["metadata"]["name"] == "b"
                    break
        assert "ADDED" in types
    assert srv.url  # stopped cleanly


async def test_serving_helper_and_errors(tmp_path: Path) -> None:
    async with serving(history=10) as srv:
        with pytest.raises(APIStatusError) as err:
            srv.get("pods", "default", "missing")
        assert err.value.code == 404
        assert err.value.status["message"] == 'pods "missing" not found'
        with pytest.raises(APIStatusError) as err:
            srv.create(make_pod("x", namespace="nope"))
        assert err.value.status["message"] == 'namespaces "nope" not found'
        path = srv.write_kubeconfig(tmp_path / "kc")
        assert srv.url in path.read_text()


async def test_kubernetes_asyncio_client(tmp_path: Path) -> None:
    kubernetes_asyncio = pytest.importorskip("kubernetes_asyncio")
    from kubernetes_asyncio import client, config, watch

    async with TestAPIServer() as srv:
        srv.create(make_node("n1"))
        srv.create(make_pod("p1"))
        kubeconfig = srv.write_kubeconfig(tmp_path / "kubeconfig")
        api = await config.new_client_from_config(config_file=str(kubeconfig))
        async with api:
            v1 = client.CoreV1Api(api)
            pods = await v1.list_namespaced_pod("default")
            assert [p.metadata.name for p in pods.items] == ["p1"]
            nodes = await v1.list_node()
            assert nodes.items[0].status.allocatable["pods"] == "110"
            body = client.V1Binding(
                metadata=client.V1ObjectMeta(name="p1"),
                target=client.V1ObjectReference(kind="Node", name="n1"),
            )
            resp = await v1.create_namespaced_pod_binding(
                "p1", "default", body, _preload_content=False
            )
            assert resp.status == 201
            seen = []
            w = watch.Watch()
            async with w.stream(
                v1.list_namespaced_pod, "default", resource_version="0", timeout_seconds=1
            ) as stream:
                async for event in stream:
                    seen.append((event["type"], event["object"].spec.node_name))
            assert seen == [("ADDED", "n1")]
            assert kubernetes_asyncio is not None
