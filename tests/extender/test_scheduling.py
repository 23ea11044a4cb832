"""Extenders inside scheduling cycles (``ksched simulate``, real HTTP to fake extenders):
filter failures in the FitError, ignorable vs not, weights, bind delegation, interest,
ignoredByScheduler, requeueing, and TLS with client certificates."""

from __future__ import annotations

import base64
import ssl
import time
from pathlib import Path
from typing import Any

import pytest

from ksched.extender.client import EXTENDER_NAME
from ksched.extender.server import server_ssl_context
from ksched.queue import events as ev

from .conftest import (
    FakeExtender,
    config,
    make_pki,
    node_manifest,
    pod_manifest,
    simulate,
)

pytestmark = pytest.mark.anyio

NODES = [node_manifest("node-a"), node_manifest("node-b"), node_manifest("node-c", cpu="1")]


def extender(fake: FakeExtender, **kw: Any) -> dict[str, Any]:
    return {"urlPrefix": fake.url, "httpTimeout": "2s", **kw}


def names(body: Any) -> list[str]:
    if body.get("NodeNames") is not None:
        return list(body["NodeNames"])
    return [n["metadata"]["name"] for n in body["Nodes"]["items"]]


async def test_filter_failures_join_the_fit_error(fake: FakeExtender) -> None:
    fake.on(
        "filter",
        {
            "Nodes": None,
            "NodeNames": None,
            "FailedNodes": {"node-a": "extender says no", "node-b": "extender says no"},
            "FailedAndUnresolvableNodes": {"node-b": "gone for good"},
            "Error": "",
        },
    )
    cfg = config([extender(fake, filterVerb="filter")])
    res, sim = await simulate(cfg, NODES, [pod_manifest("p", cpu="2")])
    assert res["p"].status == "Unschedulable"
    assert res["p"].message.startswith(
        "0/3 nodes are available: 1 Insufficient cpu, 1 extender says no, 1 gone for good."
    )
    # The in-tree Filter ran first: the extender only saw the two nodes that fit.
    assert names(fake.decoded("filter")[0]) == ["node-a", "node-b"]
    [q] = [q for q in sim.sched.queue.unschedulable_pods() if q.pod_info.name == "p"]
    assert EXTENDER_NAME in q.unschedulable_plugins


async def test_extender_rejection_is_requeued_by_any_event(fake: FakeExtender) -> None:
    fake.on("filter", {"FailedNodes": {"node-a": "no"}})
    cfg = config([extender(fake, filterVerb="filter")])
    _, sim = await simulate(cfg, [node_manifest("node-a")], [pod_manifest("p")])
    regs = sim.sched.queue._regs["ksched"]
    assert (ev.WILDCARD, EXTENDER_NAME, None) in regs
    assert (
        sim.sched.queue._worth_requeuing(
            next(iter(sim.sched.queue.unschedulable_pods())),
            ev.ClusterEvent("Namespace", "Update"),
            None,
            None,
        )
        != 0
    )


async def test_ignorable_extender_timing_out_is_skipped(fake: FakeExtender) -> None:
    fake.on("filter", {"NodeNames": []}, delay=2.0)
    cfg = config(
        [
            extender(
                fake, filterVerb="filter", httpTimeout="50ms", ignorable=True, nodeCacheCapable=True
            )
        ]
    )
    t0 = time.monotonic()
    res, sim = await simulate(cfg, NODES, [pod_manifest("p")])
    assert time.monotonic() - t0 < 1.5
    assert res["p"].status == "Scheduled"
    metrics = sim.sched.extenders.metrics  # type: ignore[union-attr]
    assert metrics.requests.labels(fake.url, "filter", "ignored")._value.get() == 1


async def test_non_ignorable_extender_failure_fails_the_attempt(fake: FakeExtender) -> None:
    fake.on("filter", b"oops", status=500)
    cfg = config([extender(fake, filterVerb="filter")])
    res, _sim = await simulate(cfg, NODES, [pod_manifest("p")], max_attempts=2)
    assert res["p"].status == "Error"
    assert res["p"].message == (f"failed filter with extender at URL {fake.url}/filter, code 500")
    # Requeued with backoff and tried again.
    assert len(fake.bodies("filter")) == 2


async def test_prioritize_scores_are_weighted_and_added(fake: FakeExtender) -> None:
    fake.on(
        "prioritize",
        [
            {"Host": "node-a", "Score": 0},
            {"Host": "node-b", "Score": 10},
            {"Host": "node-c", "Score": 5},
        ],
    )
    cfg = config([extender(fake, prioritizeVerb="prioritize", weight=3)])
    res, _ = await simulate(cfg, NODES, [pod_manifest("p")], explain=True)
    assert res["p"].node == "node-b"
    ex = res["p"].explain
    assert ex is not None
    ext_scores = {n: v["weighted"] for n, v in ex["score"][EXTENDER_NAME].items()}
    assert ext_scores == {"node-a": 0, "node-b": 300, "node-c": 150}
    plugins = {
        n: sum(v[n]["weighted"] for k, v in ex["score"].items() if k != EXTENDER_NAME)
        for n in ext_scores
    }
    assert ex["total"] == {n: plugins[n] + ext_scores[n] for n in ext_scores}


async def test_failing_prioritizer_is_ignored(fake: FakeExtender) -> None:
    fake.on("prioritize", b"", status=500)
    cfg = config([extender(fake, prioritizeVerb="prioritize", weight=1)])
    res, _ = await simulate(cfg, NODES, [pod_manifest("p")])
    assert res["p"].status == "Scheduled"


async def test_bind_delegation(fake: FakeExtender) -> None:
    fake.on("bind", {"Error": ""})
    cfg = config([extender(fake, bindVerb="bind")])
    res, sim = await simulate(cfg, NODES, [pod_manifest("p")])
    assert res["p"].status == "Scheduled"
    [body] = fake.decoded("bind")
    assert body == {
        "PodName": "p",
        "PodNamespace": "default",
        "PodUID": "uid-p",
        "Node": res["p"].node,
    }
    assert sim.cluster.pods["uid-p"].node_name == res["p"].node


async def test_bind_error_fails_binding_unless_ignorable(fake: FakeExtender) -> None:
    fake.on("bind", {"error": "no"})
    res, _ = await simulate(
        config([extender(fake, bindVerb="bind")]), NODES, [pod_manifest("p")], max_attempts=1
    )
    assert (res["p"].status, res["p"].message) == ("Error", "no")
    res, _ = await simulate(
        config([extender(fake, bindVerb="bind", ignorable=True)]), NODES, [pod_manifest("q")]
    )
    assert res["q"].status == "Scheduled"  # DefaultBinder took over


async def test_only_interested_extenders_are_called(fake: FakeExtender) -> None:
    fake.on("filter", {"NodeNames": ["node-a"]})
    cfg = config(
        [
            extender(
                fake,
                filterVerb="filter",
                nodeCacheCapable=True,
                managedResources=[{"name": "example.com/gpu", "ignoredByScheduler": True}],
            )
        ]
    )
    pods = [pod_manifest("plain"), pod_manifest("gpu", **{"example.com/gpu": "1"})]
    res, _ = await simulate(cfg, NODES, pods)
    # No node has example.com/gpu: NodeResourcesFit ignores it, the extender decides.
    assert (res["gpu"].status, res["gpu"].node) == ("Scheduled", "node-a")
    assert res["plain"].status == "Scheduled"
    [body] = fake.decoded("filter")
    assert body["Pod"]["metadata"]["name"] == "gpu"
    assert body["Nodes"] is None and sorted(body["NodeNames"]) == ["node-a", "node-b", "node-c"]


async def test_filter_sees_full_node_manifests(fake: FakeExtender) -> None:
    fake.on("filter", {"Nodes": {"items": [{"metadata": {"name": "node-b"}}]}})
    nodes = [
        dict(n, status={**n["status"], "nodeInfo": {"kubeletVersion": "v1.30.0"}}) for n in NODES
    ]
    res, _ = await simulate(
        config([extender(fake, filterVerb="filter")]), nodes, [pod_manifest("p")]
    )
    assert res["p"].node == "node-b"
    body = fake.decoded("filter")[0]
    assert body["Nodes"]["items"][0]["status"]["nodeInfo"] == {"kubeletVersion": "v1.30.0"}


async def test_tls_with_client_certificates(tmp_path: Path) -> None:
    pki = make_pki(tmp_path)
    fake = FakeExtender()
    ctx = server_ssl_context(pki.path("server.pem"), pki.path("server-key.pem"), pki.path("ca.pem"))
    ctx.verify_mode = ssl.CERT_REQUIRED  # the fake refuses anonymous clients at the handshake
    await fake.start(ctx)
    fake.on("filter", {"NodeNames": ["node-a"]})
    b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
    tls = {
        "serverName": "extender.test",
        "caData": b64(pki.ca),
        "certData": b64(pki.client_cert),
        "keyData": b64(pki.client_key),
    }
    try:
        ok = config(
            [
                extender(
                    fake,
                    filterVerb="filter",
                    nodeCacheCapable=True,
                    enableHTTPS=True,
                    tlsConfig=tls,
                )
            ]
        )
        res, _ = await simulate(ok, NODES, [pod_manifest("p")])
        assert (res["p"].status, res["p"].node) == ("Scheduled", "node-a")
        files = {
            "caFile": pki.path("ca.pem"),
            "certFile": pki.path("client.pem"),
            "keyFile": pki.path("client-key.pem"),
        }
        res, _ = await simulate(
            config([extender(fake, filterVerb="filter", nodeCacheCapable=True, tlsConfig=files)]),
            NODES,
            [pod_manifest("p")],
        )
        assert res["p"].node == "node-a"  # 127.0.0.1 is in the certificate
        # No client certificate: the handshake fails, the attempt errors.
        anon = config([extender(fake, filterVerb="filter", tlsConfig={"caData": b64(pki.ca)})])
        res, _ = await simulate(anon, NODES, [pod_manifest("p")], max_attempts=1)
        assert res["p"].status == "Error"
        assert res["p"].message.startswith(f'Post "{fake.url}/filter": ')
        # enableHTTPS without a CA does not verify the server (upstream makeTransport).
        insecure = config(
            [
                extender(
                    fake,
                    filterVerb="filter",
                    nodeCacheCapable=True,
                    enableHTTPS=True,
                    tlsConfig={"certData": b64(pki.client_cert), "keyData": b64(pki.client_key)},
                )
            ]
        )
        res, _ = await simulate(insecure, NODES, [pod_manifest("p")])
        assert res["p"].node == "node-a"
    finally:
        await fake.stop()
    assert ssl.OPENSSL_VERSION
