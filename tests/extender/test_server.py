"""``ksched extender``: the verbs over HTTP (golden Go requests in both spellings), bad
requests, plugin failures, the informer-backed mode against the test API server, a fuzz of
every endpoint, and ksched's own client scheduling through it end to end."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import msgspec
import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.config import load_config_data
from ksched.extender.server import ExtenderServer, serve, start
from ksched.framework.interface import FilterPlugin, ScorePlugin
from ksched.framework.registry import Registry
from ksched.plugins import default_registry

from .conftest import (
    config,
    golden,
    golden_obj,
    node_manifest,
    pod_manifest,
    simulate,
    wait_ready,
)

pytestmark = pytest.mark.anyio

CFG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def server_config(**top: Any) -> Any:
    reg = _registry()
    return load_config_data({**CFG, **top}, "<test>", set(reg.names()))[0]


class Boom(FilterPlugin, ScorePlugin):
    """Raises for pods labelled boom=yes; hangs (for a while) for boom=hang."""

    name = "Boom"

    def _act(self, pod: Any) -> None:
        how = pod.labels.get("boom")
        if how == "yes":
            raise RuntimeError("kaboom")
        if how == "hang":
            time.sleep(5)

    def filter(self, state: Any, pod: Any, node: Any) -> None:
        self._act(pod)

    def score(self, state: Any, pod: Any, node: Any) -> int:
        self._act(pod)
        return 0


def _boom_config() -> Any:
    """One profile whose only Filter and Score plugin is Boom."""
    boom = {"enabled": [{"name": "Boom"}]}
    return server_config(
        profiles=[{"schedulerName": "ksched", "plugins": {"filter": boom, "score": boom}}]
    )


def _registry() -> Registry:
    reg = default_registry()
    reg.register("Boom", Boom)
    return reg


class Client:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self.session = session
        self.url = url

    async def post(self, verb: str, body: bytes | Any) -> tuple[int, bytes]:
        data = body if isinstance(body, bytes) else msgspec.json.encode(body)
        async with self.session.post(f"{self.url}/{verb}", data=data) as r:
            return r.status, await r.read()

    async def json(self, verb: str, body: bytes | Any) -> tuple[int, Any]:
        status, data = await self.post(verb, body)
        return status, msgspec.json.decode(data)


async def _serve(server: ExtenderServer) -> AsyncIterator[Client]:
    runner, port = await start(server)
    async with aiohttp.ClientSession() as s:
        yield Client(s, f"http://127.0.0.1:{port}")
    await runner.cleanup()


@contextlib.asynccontextmanager
async def stateful_extender(cfg: Any, kubeconfig: Path) -> AsyncIterator[Client]:
    """``ksched extender --kubeconfig`` (informer-backed) on a free port, once ready."""
    async with anyio.create_task_group() as tg:
        port = await tg.start(
            lambda task_status: serve(
                cfg,
                _registry(),
                host="127.0.0.1",
                port=0,
                kubeconfig=str(kubeconfig),
                task_status=task_status,
            )
        )
        async with aiohttp.ClientSession() as s:
            c = Client(s, f"http://127.0.0.1:{port}")
            await wait_ready(s, c.url)
            yield c
        tg.cancel_scope.cancel()


@pytest.fixture
async def ext() -> AsyncIterator[Client]:
    async for c in _serve(ExtenderServer(server_config(), _registry())):
        yield c


def lowercase(args: dict[str, Any]) -> dict[str, Any]:
    """ExtenderArgs with its keys (and the NodeList's) in lowercase; objects untouched."""
    out = {k.lower(): v for k, v in args.items()}
    if isinstance(out.get("nodes"), dict):
        out["nodes"] = {k.lower(): v for k, v in out["nodes"].items() if k != "metadata"}
    return out


async def test_filter_golden_nodelist_both_spellings(ext: Client) -> None:
    expected = (
        b'{"Nodes":{"metadata":{},"items":[' + golden("node-a.json") + b"]},"
        b'"NodeNames":null,"FailedNodes":{},"FailedAndUnresolvableNodes":'
        b'{"node-b":"Insufficient example.com/gpu"},"Error":""}'
    )
    assert await ext.post("filter", golden("filter_args_nodelist.json")) == (200, expected)
    lower = lowercase(golden_obj("filter_args_nodelist.json"))
    assert "nodes" in lower and "items" in lower["nodes"]
    assert await ext.post("filter", lower) == (200, expected)


async def test_prioritize_scales_the_weighted_total_to_0_10(ext: Client) -> None:
    status, out = await ext.json("prioritize", golden("filter_args_nodelist.json"))
    assert status == 200
    assert [h["Host"] for h in out] == ["node-a", "node-b"]
    assert all(0 <= h["Score"] <= 10 for h in out)
    big = {
        "Pod": golden_obj("pod.json"),
        "Nodes": {"items": [node_manifest("small", cpu="1"), node_manifest("big", cpu="64")]},
    }
    status, out = await ext.json("prioritize", big)
    scores = {h["Host"]: h["Score"] for h in out}
    assert scores["big"] > scores["small"]


async def test_node_names_need_the_informer_cache(ext: Client) -> None:
    status, out = await ext.json("filter", golden("filter_args_nodenames.json"))
    assert status == 200 and "--kubeconfig" in out["Error"]
    status, out = await ext.json("prioritize", golden("filter_args_nodenames.json"))
    assert status == 500 and "--kubeconfig" in out["Error"]


async def test_preempt_and_bind_without_a_cluster(ext: Client) -> None:
    for args in ("preempt_args_meta.json", "preempt_args_full.json"):
        assert await ext.post("preempt", golden(args)) == (200, golden("preempt_result.json"))
    status, out = await ext.json("bind", golden("bind_args.json"))
    assert status == 200 and "no API server" in out["Error"]


@pytest.mark.parametrize(
    ("verb", "body", "message"),
    [
        ("filter", b"", "invalid JSON"),
        ("filter", b"{", "invalid JSON"),
        ("filter", b"[]", "into Go value of type v1.ExtenderArgs"),
        ("filter", b'{"Pod": 1}', "ExtenderArgs.Pod of type v1.Pod"),
        ("filter", b'{"Nodes": {"items": []}}', "Pod: required"),
        ("filter", b'{"Pod": {"spec": {"containers": 5}}, "Nodes": {"items": []}}', "containers"),
        ("filter", b'{"Pod": {}, "Nodes": {"items": [{"metadata": {}}]}}', "metadata.name"),
        ("prioritize", b'{"Pod": {}, "NodeNames": "x"}', "of type []string"),
        ("bind", b'{"PodName": 1}', "ExtenderBindingArgs.PodName"),
        ("preempt", b'{"NodeNameToMetaVictims": []}', "map[string]*v1.MetaVictims"),
        # hostile: nesting a recursive decoder cannot take, a name that is not UTF-8
        ("filter", b'{"Pod": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nesting deeper than 100"),
        ("bind", b'{"PodName": ' + b"[" * 150 + b"]" * 150 + b"}", "nesting deeper than 100"),
        ("bind", b'{"PodName": "\xff\xfe", "Node": "n"}', "invalid JSON"),
        ("filter", b'{"Pod": {"metadata": {"name": "\xc3"}}}', "invalid JSON"),
    ],
)
async def test_bad_requests_get_400(ext: Client, verb: str, body: bytes, message: str) -> None:
    status, out = await ext.json(verb, body)
    assert status == 400
    assert message in out["Error"]


async def test_a_client_hanging_up_mid_body_is_a_debug_line() -> None:
    """Not an error with a traceback, and not counted as a 500 (issue 16 item 7)."""
    server = ExtenderServer(server_config(), _registry())
    runner, port = await start(server)
    try:
        with structlog.testing.capture_logs() as logs:
            for _ in range(3):
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(
                    b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n"
                    b'Content-Type: application/json\r\n\r\n{"Pod":'
                )
                await writer.drain()
                writer.close()
                await writer.wait_closed()
            with anyio.fail_after(5):
                while server.requests.labels("filter", "499")._value.get() < 3:
                    await anyio.sleep(0.02)
        assert server.requests.labels("filter", "500")._value.get() == 0
        # (debug lines may be filtered out by an earlier test's logging setup)
        assert [e for e in logs if e["log_level"] in ("error", "warning")] == []
    finally:
        await runner.cleanup()


async def test_oversize_bodies_get_413() -> None:
    async for c in _serve(ExtenderServer(server_config(), _registry(), max_body_bytes=100)):
        status, out = await c.json("filter", golden("filter_args_nodelist.json"))
        assert status == 413 and "over the limit of 100 bytes" in out["Error"]


async def test_plugin_failures() -> None:
    cfg = _boom_config()
    pod = golden_obj("pod.json")
    pod["metadata"]["labels"]["boom"] = "yes"
    args = {"Pod": pod, "Nodes": {"items": [golden_obj("node-a.json")]}}
    async for c in _serve(ExtenderServer(cfg, _registry())):
        status, out = await c.json("filter", args)
        assert status == 200 and "kaboom" in out["Error"] and out["Nodes"] is None
        status, out = await c.json("prioritize", args)
        assert status == 500 and "kaboom" in out["Error"]
        assert "Traceback" not in out["Error"]


async def test_hung_plugin_fails_the_request_only() -> None:
    cfg = _boom_config()
    pod = golden_obj("pod.json")
    args = {"Pod": pod, "Nodes": {"items": [golden_obj("node-a.json")]}}
    hung = {**args, "Pod": {**pod, "metadata": {**pod["metadata"], "labels": {"boom": "hang"}}}}
    want = 'plugin "Boom" ({}) did not return within 0.05s'
    async for c in _serve(ExtenderServer(cfg, _registry(), plugin_timeout=0.05)):
        status, out = await c.json("filter", hung)
        assert status == 200 and out["Error"] == want.format("filter") and out["Nodes"] is None
        status, out = await c.json("prioritize", hung)
        assert status == 500 and out["Error"] == want.format("score")
        status, out = await c.json("filter", args)  # the next request is served as usual
        assert status == 200 and out["Error"] == "" and len(out["Nodes"]["items"]) == 1


async def test_health_metrics_and_methods(ext: Client) -> None:
    await ext.post("filter", golden("filter_args_nodelist.json"))
    s = ext.session
    async with s.get(f"{ext.url}/healthz") as r:
        assert (r.status, await r.text()) == (200, "ok")
    async with s.get(f"{ext.url}/readyz") as r:
        assert r.status == 200
    async with s.get(f"{ext.url}/metrics") as r:
        text = await r.text()
    assert 'ksched_extender_server_requests_total{code="200",verb="filter"} 1.0' in text
    # aiohttp's own answers, as JSON like every other error
    async with s.get(f"{ext.url}/filter") as r:
        assert r.status == 405 and r.headers["Allow"] == "POST"
        assert await r.json() == {"Error": "method GET not allowed on /filter"}
    async with s.post(f"{ext.url}/nope", data=b"{}") as r:
        assert r.status == 404 and await r.json() == {"Error": "not found: /nope"}


def test_unknown_profile() -> None:
    with pytest.raises(ValueError, match="unknown profile 'nope'"):
        ExtenderServer(server_config(), _registry(), profile="nope")


# ---- fuzz ------------------------------------------------------------------------------------


class _ThreadServer:
    """The extender on its own event loop thread, for synchronous hypothesis tests."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        server = ExtenderServer(server_config(), _registry(), max_body_bytes=1 << 16)
        self.runner, port = asyncio.run_coroutine_threadsafe(start(server), self.loop).result()
        self.url = f"http://127.0.0.1:{port}"

    def post(self, verb: str, body: bytes) -> tuple[int, bytes]:
        async def go() -> tuple[int, bytes]:
            async with aiohttp.ClientSession() as s, s.post(f"{self.url}/{verb}", data=body) as r:
                return r.status, await r.read()

        return asyncio.run_coroutine_threadsafe(go(), self.loop).result(10)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture(scope="module")
def thread_server() -> Iterator[_ThreadServer]:
    s = _ThreadServer()
    yield s
    s.close()


_KEYS = [
    "Pod",
    "pod",
    "Nodes",
    "nodes",
    "NodeNames",
    "items",
    "metadata",
    "name",
    "spec",
    "containers",
    "resources",
    "requests",
    "cpu",
    "status",
    "allocatable",
    "PodName",
    "Node",
    "NodeNameToMetaVictims",
    "Pods",
    "UID",
    "x",
]
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**66), 2**66)
    | st.text(max_size=6)
    | st.sampled_from(["1", "100m", "4Gi", "node-a", "-1", "1e3"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4)
    ),
    max_leaves=25,
)


def _mutate(data: st.DataObject) -> Any:
    """A golden request with one value somewhere replaced."""
    obj = golden_obj(
        data.draw(
            st.sampled_from(
                [
                    "filter_args_nodelist.json",
                    "filter_args_nodenames.json",
                    "preempt_args_full.json",
                    "bind_args.json",
                ]
            )
        )
    )
    cur = obj
    for _ in range(data.draw(st.integers(0, 5))):
        if isinstance(cur, dict) and cur:
            key = data.draw(st.sampled_from(sorted(cur)))
            if data.draw(st.booleans()):
                cur[key] = data.draw(_json)
                break
            cur = cur[key]
        elif isinstance(cur, list) and cur:
            cur = cur[data.draw(st.integers(0, len(cur) - 1))]
    return obj


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_fuzz_endpoints(thread_server: _ThreadServer, data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(["bytes", "json", "mutated"]))
    if kind == "bytes":
        body = data.draw(st.binary(max_size=64))
    elif kind == "json":
        body = msgspec.json.encode(data.draw(_json))
    else:
        body = msgspec.json.encode(_mutate(data))
    for verb in ("filter", "prioritize", "preempt", "bind"):
        status, out = thread_server.post(verb, body)
        assert status in (200, 400, 500), (verb, status, out)
        decoded = msgspec.json.decode(out)
        if status != 200:
            assert isinstance(decoded, dict) and decoded["Error"]
            assert "internal error" not in decoded["Error"], decoded
        assert b"Traceback" not in out


# ---- with an informer cache (--kubeconfig) -----------------------------------------------------


def _api_node(name: str, cpu: str = "4") -> dict[str, Any]:
    m = node_manifest(name, cpu=cpu)
    return m


async def test_informer_backed_mode(apiserver: Any, apiserver_kubeconfig: Path) -> None:
    apiserver.create(_api_node("n1"))
    apiserver.create(_api_node("n2"))
    busy = pod_manifest("busy", cpu="3500m", scheduler="default-scheduler")
    busy["spec"]["nodeName"] = "n1"
    busy_uid = apiserver.create(busy)["metadata"]["uid"]
    apiserver.create(pod_manifest("web", cpu="1", scheduler="default-scheduler"))
    web = apiserver.get("Pod", "default", "web")
    cfg = server_config()
    async with stateful_extender(cfg, apiserver_kubeconfig) as c:
        args = {"Pod": web, "Nodes": None, "NodeNames": ["n1", "n2", "n3"]}
        status, out = await c.json("filter", args)
        assert status == 200, out
        assert out["NodeNames"] == ["n2"] and out["Nodes"] is None
        assert out["FailedAndUnresolvableNodes"] == {}
        assert out["FailedNodes"] == {
            "n1": "Insufficient cpu",
            "n3": "node not found in the extender's cache",
        }
        status, out = await c.json("prioritize", args)
        scores = {h["Host"]: h["Score"] for h in out}
        assert scores["n2"] > scores["n1"] and scores["n3"] == 0
        # The node bound follows the cache: its 2 nodes and at least 100 more.
        names = [f"n{i}" for i in range(1, 103)]
        status, out = await c.json("filter", {**args, "NodeNames": names})
        assert status == 200 and len(out["FailedNodes"]) == 101  # n1 and the unknown
        status, out = await c.json("prioritize", {**args, "NodeNames": [*names, "n103"]})
        assert (status, out) == (
            413,
            {"Error": "ExtenderArgs.NodeNames: 103 names is over the limit of 102"},
        )
        # Preemption: evicting busy makes room on n1; an unknown victim does not.
        status, out = await c.json(
            "preempt",
            {
                "Pod": web,
                "NodeNameToMetaVictims": {
                    "n1": {"Pods": [{"UID": busy_uid}], "NumPDBViolations": 0},
                    "n2": {"Pods": [{"UID": "nope"}], "NumPDBViolations": 0},
                },
            },
        )
        assert status == 200 and list(out["NodeNameToMetaVictims"]) == ["n1"]
        status, out = await c.json(
            "bind",
            {
                "PodName": "web",
                "PodNamespace": "default",
                "PodUID": web["metadata"]["uid"],
                "Node": "n2",
            },
        )
        assert (status, out) == (200, {"Error": ""})
        assert apiserver.get("Pod", "default", "web")["spec"]["nodeName"] == "n2"
        status, out = await c.json(
            "bind",
            {
                "PodName": "web",
                "PodNamespace": "default",
                "PodUID": web["metadata"]["uid"],
                "Node": "n1",
            },
        )
        assert status == 200 and out["Error"]  # already bound: the API's 409


# ---- ksched (client) against ksched (server) ---------------------------------------------------


async def test_ksched_scheduling_through_ksched_extender() -> None:
    """The client profile drops TaintToleration; the extender's default profile has it."""
    server = ExtenderServer(server_config(), _registry())
    runner, port = await start(server)
    try:
        url = f"http://127.0.0.1:{port}"
        cfg = config(
            [
                {
                    "urlPrefix": url,
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "weight": 2,
                    "httpTimeout": "2s",
                }
            ],
            profiles=[
                {
                    "schedulerName": "ksched",
                    "plugins": {"multiPoint": {"disabled": [{"name": "TaintToleration"}]}},
                }
            ],
        )
        tainted = node_manifest("tainted", cpu="64")
        tainted["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        nodes = [tainted, node_manifest("plain", cpu="2"), node_manifest("roomy", cpu="32")]
        res, _ = await simulate(cfg, nodes, [pod_manifest("p", cpu="1500m")], explain=True)
        assert (res["p"].status, res["p"].node) == ("Scheduled", "roomy")
        # The extender's 0..10 score, times weight 2 times 10, joins the total.
        ex = res["p"].explain
        assert ex is not None
        weighted = {n: v["weighted"] for n, v in ex["score"]["Extender"].items()}
        assert set(weighted) == {"plain", "roomy"}
        assert all(w % 20 == 0 and 0 <= w <= 200 for w in weighted.values())
        assert weighted["roomy"] > weighted["plain"]
        res, _ = await simulate(cfg, [tainted], [pod_manifest("q")])
        assert res["q"].status == "Unschedulable"
        assert res["q"].message.startswith(
            "0/1 nodes are available: 1 node(s) had untolerated taint(s)."
        )
        text = generate(server)
        assert 'verb="filter"' in text and 'verb="prioritize"' in text
        assert "_created" not in text
    finally:
        await runner.cleanup()


def generate(server: ExtenderServer) -> str:
    from prometheus_client import generate_latest

    return generate_latest(server.metrics).decode()
