"""The extender client against a fake Go extender: the exact bytes kube-scheduler sends,
answers in Go's and in lowercase spelling, and upstream's error texts."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest

from ksched.api.objects import Pod, decode
from ksched.config.types import Extender, ExtenderManagedResource
from ksched.extender.client import (
    ExtenderError,
    ExtenderSet,
    HTTPExtender,
    NodeEncoder,
    PreemptionVictims,
)
from ksched.framework.diagnosis import Diagnosis
from ksched.framework.types import PodInfo
from tests.factories import make_node, make_pod, make_snapshot

from .conftest import FakeExtender, golden, golden_node, golden_obj, golden_pod, node_info

pytestmark = pytest.mark.anyio


def ext(fake: FakeExtender, **kw: object) -> HTTPExtender:
    cfg = Extender(
        url_prefix=fake.url,
        filter_verb="filter",
        prioritize_verb="prioritize",
        bind_verb="bind",
        preempt_verb="preempt",
        weight=1,
        http_timeout=2.0,
    )
    for k, v in kw.items():
        setattr(cfg, k, v)
    return HTTPExtender(cfg)


def golden_nodes(e: HTTPExtender) -> list:  # type: ignore[type-arg]
    out = []
    for name in ("node-a", "node-b"):
        node, raw = golden_node(name)
        e.nodes.set_raw(node, raw)
        out.append(node_info(node))
    return out


async def test_filter_nodelist_sends_go_bytes_and_reads_both_spellings(
    fake: FakeExtender,
) -> None:
    e = ext(fake)
    nodes = golden_nodes(e)
    fake.on("filter", golden("filter_result_nodelist.json"))
    res = await e.filter(golden_pod(), nodes)
    assert fake.bodies("filter") == [golden("filter_args_nodelist.json")]
    assert [n.name for n in res.nodes] == ["node-a"]
    assert res.failed == {"node-b": "no example.com/gpu left"}
    fake.on("filter", golden("filter_result_nodelist_lowercase.json"))
    res = await e.filter(golden_pod(), nodes)
    assert [n.name for n in res.nodes] == ["node-a"]
    assert res.failed_and_unresolvable == {"node-b": "no example.com/gpu left"}
    await e.aclose()


async def test_filter_nodenames_when_node_cache_capable(fake: FakeExtender) -> None:
    e = ext(fake, node_cache_capable=True)
    nodes = golden_nodes(e)
    for answer in ("filter_result_nodenames.json", "filter_result_nodenames_lowercase.json"):
        fake.on("filter", golden(answer))
        res = await e.filter(golden_pod(), nodes)
        assert [n.name for n in res.nodes] == ["node-a"]
        assert res.failed == {"node-b": "no example.com/gpu left"}
    assert fake.bodies("filter") == [golden("filter_args_nodenames.json")] * 2
    # Upstream reads NodeNames only from nodeCacheCapable extenders, Nodes otherwise.
    e2 = ext(fake)
    res = await e2.filter(golden_pod(), golden_nodes(e2))
    assert res.nodes == []
    await e.aclose()
    await e2.aclose()


async def test_filter_errors(fake: FakeExtender) -> None:
    e = ext(fake, node_cache_capable=True)
    nodes = golden_nodes(e)
    fake.on("filter", {"NodeNames": ["node-z"]})
    with pytest.raises(ExtenderError, match="claims a filtered node 'node-z' which is not found"):
        await e.filter(golden_pod(), nodes)
    fake.on("filter", {"error": "quota exhausted"})
    with pytest.raises(ExtenderError, match=r"^quota exhausted$"):
        await e.filter(golden_pod(), nodes)
    fake.on("filter", b"{}", status=503)
    with pytest.raises(
        ExtenderError,
        match=r"failed filter with extender at URL .*/ext/filter, "
        "code 503",
    ):
        await e.filter(golden_pod(), nodes)
    fake.on("filter", b"not json")
    with pytest.raises(ExtenderError, match="decoding the filter answer"):
        await e.filter(golden_pod(), nodes)
    fake.on("filter", {"NodeNames": 5})
    with pytest.raises(ExtenderError, match="cannot unmarshal number 5"):
        await e.filter(golden_pod(), nodes)
    fake.on("filter", {}, delay=1.0)
    e.timeout = 0.05
    await e.aclose()  # the timeout belongs to the session
    with pytest.raises(ExtenderError, match=r"Client\.Timeout exceeded"):
        await e.filter(golden_pod(), nodes)
    await e.aclose()


async def test_connection_refused_is_an_extender_error() -> None:
    e = HTTPExtender(Extender(url_prefix="http://127.0.0.1:1/x", filter_verb="f"))
    with pytest.raises(ExtenderError, match=r'^Post "http://127.0.0.1:1/x/f": '):
        await e.filter(golden_pod(), [node_info(golden_node("node-a")[0])])
    await e.aclose()


async def test_prioritize_and_bind(fake: FakeExtender) -> None:
    e = ext(fake)
    nodes = golden_nodes(e)
    fake.on("prioritize", golden("prioritize_result_lowercase.json"))
    scores = await e.prioritize(golden_pod(), nodes)
    assert [(h.host, h.score) for h in scores] == [("node-a", 7), ("node-b", 3)]
    assert fake.bodies("prioritize") == [golden("filter_args_nodelist.json")]
    fake.on("bind", golden("bind_result.json"))
    await e.bind(golden_pod(), "node-a")
    assert fake.bodies("bind") == [golden("bind_args.json")]
    fake.on("bind", golden("bind_result_lowercase_error.json"))
    with pytest.raises(ExtenderError, match=r"^node-a is draining$"):
        await e.bind(golden_pod(), "node-a")
    await e.aclose()


async def test_process_preemption_both_modes(fake: FakeExtender) -> None:
    victim_raw = golden_obj("victim.json")
    victim = PodInfo(decode(victim_raw, Pod), victim_raw)
    node_a, _ = golden_node("node-a")
    snap = make_snapshot([node_a], [victim])
    victims = {"node-a": PreemptionVictims([victim], 0)}
    fake.on("preempt", golden("preempt_result_lowercase.json"))
    full = ext(fake)
    out = await full.process_preemption(golden_pod(), victims, snap)
    assert fake.bodies("preempt") == [golden("preempt_args_full.json")]
    assert list(out) == ["node-a"] and out["node-a"].pods[0].uid == "v1"
    meta = ext(fake, node_cache_capable=True)
    fake.on("preempt", golden("preempt_result.json"))
    out = await meta.process_preemption(golden_pod(), victims, snap)
    assert fake.bodies("preempt")[1] == golden("preempt_args_meta.json")
    assert out["node-a"].pods == [snap.get("node-a").pods[0]]  # type: ignore[union-attr]
    fake.on("preempt", {"NodeNameToMetaVictims": {"node-a": {"Pods": [{"UID": "nope"}]}}})
    with pytest.raises(ExtenderError, match=r"claims to preempt pod \(UID: nope\)"):
        await meta.process_preemption(golden_pod(), victims, snap)
    # The set: a non-ignorable failure is an Error status, empty victims are invalid.
    s = ExtenderSet([meta])
    fake.on("preempt", {"NodeNameToMetaVictims": {"node-a": {"Pods": []}}})
    _got, st = await s.process_preemption(golden_pod(), victims, snap)
    assert st.message() == 'expected at least one victim pod on node "node-a"'
    await full.aclose()
    await s.aclose()


def test_interest_in_managed_resources() -> None:
    e = HTTPExtender(
        Extender(
            url_prefix="http://x", managed_resources=[ExtenderManagedResource("example.com/gpu")]
        )
    )
    assert e.is_interested(golden_pod())  # requests example.com/gpu
    assert not e.is_interested(make_pod(cpu="1"))
    limits = make_pod(containers=[{"name": "c", "resources": {"limits": {"example.com/gpu": 1}}}])
    assert e.is_interested(limits)
    init = make_pod(
        initContainers=[{"name": "i", "resources": {"requests": {"example.com/gpu": 1}}}]
    )
    assert e.is_interested(init)
    assert HTTPExtender(Extender(url_prefix="http://x")).is_interested(make_pod())


def test_ignorable_extenders_go_last_and_nodes_encode_once() -> None:
    a = HTTPExtender(Extender(url_prefix="http://a", ignorable=True))
    b = HTTPExtender(Extender(url_prefix="http://b"))
    assert [e.name for e in ExtenderSet([a, b]).extenders] == ["http://b", "http://a"]
    enc = NodeEncoder()
    n = make_node("n1")
    first = enc.encode(n)
    assert enc.encode(n) is first
    assert msgspec.json.decode(first)["metadata"]["name"] == "n1"


async def test_node_json_of_deleted_nodes_is_forgotten(fake: FakeExtender) -> None:
    """The NodeList payload cache keeps each node's JSON while the node exists; on a
    cluster whose node names churn, deleted nodes' JSON goes instead of piling up."""

    async def accept_all(body: bytes) -> tuple[int, bytes]:
        args = msgspec.json.decode(body)
        return 200, msgspec.json.encode({"Nodes": args["Nodes"], "FailedNodes": {}})

    fake.handlers["filter"] = accept_all
    exts = ExtenderSet([ext(fake)])
    pod = make_pod("p")

    async def cycle(names: list[str]) -> list[str]:
        snap = make_snapshot([make_node(n) for n in names])
        rows = np.arange(len(names), dtype=np.intp)
        kept, st = await exts.filter(pod, snap, rows, Diagnosis())
        assert st.is_success() and len(kept) == len(names)
        return sorted(exts.nodes._cache)

    assert await cycle(["n1", "n2", "n3"]) == ["n1", "n2", "n3"]
    # n2 deleted, n4 added: n2's JSON would otherwise stay forever
    assert await cycle(["n1", "n3", "n4"]) == ["n1", "n3", "n4"]
    for gen in range(5):  # names churning: the cache stays the size of the cluster
        names = [f"churn-{gen}-{i}" for i in range(3)]
        assert await cycle(names) == names
    enc = NodeEncoder()
    for n in ("a", "b", "c"):
        enc.encode(make_node(n))
    enc.forget_missing({"b"})
    assert len(enc) == 1
    await exts.aclose()
