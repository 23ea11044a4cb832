"""CPU per write of the scheduler's API writes, per encoding and transport, on the real
kube-apiserver (issue 33: protobuf bodies and HTTP/2 against JSON over HTTP/1.1).

Not a test. Starts etcd + kube-apiserver (``ksched.testing.controlplane``, the release of
``$KSCHED_KUBE_VERSION``, default v1.37.2), creates ``--nodes`` nodes, and per round fresh
pending pods for every variant; then writes one request per pod from ``--concurrency``
tasks and records:

* the client's CPU seconds per write (this process: nothing else runs in it meanwhile);
* kube-apiserver's + etcd's CPU seconds per write (``/proc/<pid>/stat``, as the real bench).

The first ``--warmup`` writes of each variant are not measured (connections opened, TLS
done). The measured writes go in blocks of ``--block``, the variants taking turns, so a
change of the machine's load hits them all alike.

Variants (``--variants``, comma-separated):

* ``bind-json-h1``: today's Binding, JSON, over ``APIClient``'s keep-alive pool;
* ``bind-json-acceptpb-h1``: the same, answers asked for in protobuf;
* ``bind-pb-h1``: the Binding in protobuf (``encode_binding``), answers too;
* ``bind-json-h2`` / ``bind-pb-h2``: as above over one HTTP/2 connection (the ``h2``
  package: ``pip install h2``), every write a stream of it;
* ``patch-json-h1`` / ``patch-acceptpb-h1``: the PodScheduled=False strategic merge patch
  of ``pods/{name}/status`` (what a failed attempt writes), answer (the whole Pod) in JSON
  or protobuf;
* ``patch-json-h2``: the patch over HTTP/2.

Run: ``python bench/write_path.py [--pods 1000] [--nodes 100] [--repeat 3]``. The table
gives min/median over the rounds of the CPU per write, and each variant's cost over the
first variant's as the median over all blocks of the ratio within a turn (the pairs are
adjacent in time, which steadies the figure on a loaded machine). Results and what was
kept: docs/performance.md, "The write path".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from ksched.bench.real import _API, _plane_cpu
from ksched.cluster.binder import pod_path
from ksched.cluster.client import STRATEGIC_MERGE_PATCH, APIClient
from ksched.testing.controlplane import ControlPlane

JSON_CT = "application/json"
PROTOBUF_CT = "application/vnd.kubernetes.protobuf"
ACCEPT_PB = f"{PROTOBUF_CT}, {JSON_CT}"  # client-go's Accept with protobuf configured

BINDS = ("bind-json-h1", "bind-json-acceptpb-h1", "bind-pb-h1", "bind-json-h2", "bind-pb-h2")
PATCHES = ("patch-json-h1", "patch-acceptpb-h1", "patch-json-h2")

Pod = tuple[str, str, str]  # (namespace, name, uid)
Write = Callable[[Pod, int], Awaitable[None]]


class _AcceptClient(APIClient):
    """``APIClient`` with its Accept header replaced (the same dicts every time, as the
    write pool caches its header block by identity)."""

    accept = JSON_CT

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        base = await super()._headers(content_type)
        cache: dict[int, dict[str, str]] = self.__dict__.setdefault("_accept_cache", {})
        got = cache.get(id(base))
        if got is None:
            got = cache[id(base)] = {**base, "Accept": self.accept}
        return got


# ---- the protobuf Binding ----------------------------------------------------------------------


def _field(key: int, data: bytes) -> bytes:
    """A length-delimited protobuf field (string or message) whose key byte is ``key``
    (field number << 3 | 2); lengths up to 16 KiB (two varint bytes)."""
    n = len(data)
    size = bytes((n,)) if n < 0x80 else bytes(((n & 0x7F) | 0x80, n >> 7))
    return bytes((key,)) + size + data


_TYPE_META = _field(0x0A, _field(0x0A, b"v1") + _field(0x12, b"Binding"))


def encode_binding(namespace: str, name: str, uid: str, node: str) -> bytes:
    """A v1 Binding as client-go v0.37.2's protobuf serializer writes it, byte for byte,
    empty fields included (checked against its output): the magic ``k8s\\x00``, then a
    runtime.Unknown{typeMeta, raw, contentEncoding "", contentType ""}. Field numbers from
    core/v1 and meta/v1 ``generated.proto``: ObjectMeta name 1, generateName 2, namespace 3,
    selfLink 4, uid 5, resourceVersion 6, generation 7 (varint), creationTimestamp 8;
    ObjectReference kind 1, namespace 2, name 3, uid 4, apiVersion 5, resourceVersion 6,
    fieldPath 7."""
    meta = (
        _field(0x0A, name.encode())
        + b"\x12\x00"
        + _field(0x1A, namespace.encode())
        + b"\x22\x00"
        + _field(0x2A, uid.encode())
        + b"\x32\x00\x38\x00\x42\x00"
    )
    target = (
        _field(0x0A, b"Node")
        + b"\x12\x00"
        + _field(0x1A, node.encode())
        + b"\x22\x00"
        + _field(0x2A, b"v1")
        + b"\x32\x00\x3a\x00"
    )
    binding = _field(0x0A, meta) + _field(0x12, target)
    return b"k8s\x00" + _TYPE_META + _field(0x12, binding) + b"\x1a\x00\x22\x00"


# ---- HTTP/2 -----------------------------------------------------------------------------------


class _H2Protocol(asyncio.Protocol):
    """One HTTP/2 connection: every request a stream, answers matched by stream id."""

    def __init__(self) -> None:
        import h2.config
        import h2.connection

        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding=None)
        )
        self.transport: asyncio.Transport | None = None
        self.streams: dict[int, tuple[asyncio.Future[tuple[int, bytes]], list[Any]]] = {}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.conn.initiate_connection()
        transport.write(self.conn.data_to_send())

    def data_received(self, data: bytes) -> None:
        import h2.events

        for ev in self.conn.receive_data(data):
            if isinstance(ev, h2.events.ResponseReceived):
                got = self.streams.get(ev.stream_id)
                if got is not None:
                    got[1][0] = int(dict(ev.headers)[b":status"])
            elif isinstance(ev, h2.events.DataReceived):
                got = self.streams.get(ev.stream_id)
                if got is not None:
                    got[1].append(ev.data)
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded):
                got = self.streams.pop(ev.stream_id, None)
                if got is not None and not got[0].done():
                    got[0].set_result((got[1][0], b"".join(got[1][1:])))
            elif isinstance(ev, h2.events.StreamReset):
                got = self.streams.pop(ev.stream_id, None)
                if got is not None and not got[0].done():
                    got[0].set_exception(ConnectionError(f"stream reset {ev.error_code}"))
        out = self.conn.data_to_send()
        if out and self.transport is not None:
            self.transport.write(out)

    def connection_lost(self, exc: Exception | None) -> None:
        for fut, _ in self.streams.values():
            if not fut.done():
                fut.set_exception(ConnectionError(f"connection lost: {exc}"))
        self.streams.clear()


class H2Client:
    """A minimal HTTP/2 client for the bench, with ``APIClient``'s credentials."""

    def __init__(self, url: str, ca_file: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 443
        self.authority = parts.netloc.encode()
        self.ctx = ssl.create_default_context(cafile=ca_file)
        self.ctx.set_alpn_protocols(["h2"])
        self.base = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        self.proto: _H2Protocol | None = None

    async def connect(self) -> None:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_connection(
            _H2Protocol, self.host, self.port, ssl=self.ctx, server_hostname=self.host
        )
        alpn = transport.get_extra_info("ssl_object").selected_alpn_protocol()
        if alpn != "h2":
            raise RuntimeError(f"server chose {alpn!r}, not h2")
        self.proto = proto

    async def request(
        self, method: str, path: str, body: bytes, content_type: str, accept: str
    ) -> tuple[int, bytes]:
        proto = self.proto
        assert proto is not None and proto.transport is not None
        conn = proto.conn
        sid = conn.get_next_available_stream_id()
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", self.authority),
            (b":path", path.encode()),
            *self.base,
            (b"accept", accept.encode()),
            (b"content-type", content_type.encode()),
            (b"content-length", str(len(body)).encode()),
        ]
        fut: asyncio.Future[tuple[int, bytes]] = asyncio.get_running_loop().create_future()
        proto.streams[sid] = (fut, [0])
        conn.send_headers(sid, headers)
        conn.send_data(sid, body, end_stream=True)
        proto.transport.write(conn.data_to_send())
        return await fut

    def close(self) -> None:
        if self.proto is not None and self.proto.transport is not None:
            self.proto.transport.close()


# ---- the writes ---------------------------------------------------------------------------------


def _binding_json(pod: Pod, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod[1], "namespace": pod[0], "uid": pod[2]},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def _patch(pod: Pod) -> dict[str, Any]:
    return {
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": "0/100 nodes are available: 100 Insufficient cpu.",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "lastProbeTime": None,
                }
            ]
        }
    }


def _check(status: int, body: bytes, what: str) -> None:
    if not 200 <= status < 300:
        raise RuntimeError(f"{what}: {status} {body[:300]!r}")


async def _writer(variant: str, cp: Any, nodes: Sequence[str]) -> tuple[Write, Any]:
    """The write function of ``variant`` and what to close afterwards."""
    kind, *enc, transport = variant.split("-")
    accept = ACCEPT_PB if ("pb" in enc or "acceptpb" in enc) else JSON_CT
    client = await _AcceptClient.from_kubeconfig(cp.scheduler_kubeconfig, qps=0, burst=1)
    assert isinstance(client, _AcceptClient)
    client.accept = accept
    if transport == "h2":
        headers = dict(await client._headers(None))
        headers.pop("Accept", None)
        h2c = H2Client(cp.url, str(cp.ca_file), headers)
        await h2c.connect()

        async def h2_write(pod: Pod, i: int) -> None:
            if kind == "bind":
                if "pb" in enc:
                    body, ctype = (
                        encode_binding(*pod, nodes[i % len(nodes)]),
                        PROTOBUF_CT,
                    )
                else:
                    body = json.dumps(_binding_json(pod, nodes[i % len(nodes)])).encode()
                    ctype = JSON_CT
                path = pod_path(pod[0], pod[1], "binding")
                status, raw = await h2c.request("POST", path, body, ctype, accept)
            else:
                body = json.dumps(_patch(pod)).encode()
                path = pod_path(pod[0], pod[1], "status")
                status, raw = await h2c.request("PATCH", path, body, STRATEGIC_MERGE_PATCH, accept)
            _check(status, raw, variant)

        return h2_write, (client, h2c)

    async def h1_write(pod: Pod, i: int) -> None:
        if kind == "bind":
            node = nodes[i % len(nodes)]
            path = pod_path(pod[0], pod[1], "binding")
            if "pb" in enc:
                await client.request(
                    "POST",
                    path,
                    body=encode_binding(*pod, node),
                    content_type=PROTOBUF_CT,
                )
            else:
                await client.request("POST", path, body=_binding_json(pod, node))
        else:
            await client.request(
                "PATCH",
                pod_path(pod[0], pod[1], "status"),
                body=_patch(pod),
                content_type=STRATEGIC_MERGE_PATCH,
            )

    return h1_write, (client, None)


class _Variant:
    """One variant's writer, its pods, and what its measured blocks cost."""

    def __init__(self, name: str, write: Write, closers: Any, pods: Sequence[Pod]) -> None:
        self.name = name
        self.write = write
        self.closers = closers
        self.pods = list(pods)
        self.next = 0
        self.client_s = self.server_s = self.wall_s = 0.0
        self.writes = 0
        self.blocks: list[tuple[float, float]] = []  # (client, server) seconds per write

    async def run(self, n: int, concurrency: int, cp: Any = None) -> None:
        """The next ``n`` pods' writes; measured when ``cp`` is given."""
        todo = iter(range(self.next, min(self.next + n, len(self.pods))))
        count = min(self.next + n, len(self.pods)) - self.next
        self.next += count

        async def worker() -> None:
            for i in todo:
                await self.write(self.pods[i], i)

        if cp is None:
            await asyncio.gather(*(worker() for _ in range(concurrency)))
            return
        plane0, cpu0, t0 = _plane_cpu(cp), time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        plane1, cpu1, t1 = _plane_cpu(cp), time.process_time(), time.perf_counter()
        self.client_s += cpu1 - cpu0
        self.server_s += plane1 - plane0
        self.wall_s += t1 - t0
        self.writes += count
        self.blocks.append(((cpu1 - cpu0) / count, (plane1 - plane0) / count))

    async def close(self) -> None:
        client, h2c = self.closers
        if h2c is not None:
            h2c.close()
        await client.close()

    def result(self) -> dict[str, Any]:
        n = max(1, self.writes)
        return {
            "client_ms": 1000 * self.client_s / n,
            "server_ms": 1000 * self.server_s / n,
            "writes_per_s": self.writes / self.wall_s if self.wall_s else 0.0,
            "writes": self.writes,
            "blocks": self.blocks,
        }


async def _round(
    api: _API, cp: Any, names: Sequence[str], nodes: Sequence[str], args: Any, r: int
) -> dict[str, dict[str, Any]]:
    """Every variant on its own fresh pods, in blocks of ``--block`` writes taken in turn
    (the order rotating), so that each variant sees the same drift of the machine's load."""
    per = args.pods + args.warmup
    pods = await _fresh_pods(api, r, per * len(names))
    variants = []
    try:
        for k, name in enumerate(names):
            write, closers = await _writer(name, cp, nodes)
            variants.append(_Variant(name, write, closers, pods[k * per : (k + 1) * per]))
        for v in variants:
            await v.run(args.warmup, args.concurrency)
        for b in range(-(-args.pods // args.block)):
            shift = (b + r) % len(variants)
            for v in variants[shift:] + variants[:shift]:
                await v.run(args.block, args.concurrency, cp)
    finally:
        for v in variants:
            await v.close()
    return {v.name: v.result() for v in variants}


def _node(i: int) -> dict[str, Any]:
    name = f"wp-node-{i:04d}"
    alloc = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": alloc, "allocatable": alloc},
    }


def _pod(ns: str, i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"wp-{i:05d}", "namespace": ns, "labels": {"app": "write-path"}},
        "spec": {
            "schedulerName": "nobody",
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.10",
                    "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                }
            ],
        },
    }


async def _fresh_pods(api: _API, r: int, n: int) -> list[Pod]:
    """``n`` pending pods in a namespace of round ``r``'s own (a deletion of the last
    round's pods would load the server for longer than the round takes)."""
    ns = f"write-path-{r}"
    await api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    await api.create_all([_pod(ns, i) for i in range(n)])
    got = await api.get(f"/api/v1/namespaces/{ns}/pods")
    pods = [(ns, p["metadata"]["name"], p["metadata"]["uid"]) for p in got["items"]]
    if len(pods) != n:
        raise RuntimeError(f"{len(pods)} pods, wanted {n}")
    return sorted(pods)


def _paired(base: list[dict[str, Any]], other: list[dict[str, Any]], k: int) -> float:
    """The median over all blocks of ``other``'s cost over ``base``'s in the same turn
    (adjacent in time: the machine's load the same for both), ``k`` 0 client, 1 server."""
    ratios = [
        o[k] / b[k]
        for rb, ro in zip(base, other, strict=True)
        for b, o in zip(rb["blocks"], ro["blocks"], strict=True)
        if b[k] > 0
    ]
    return statistics.median(ratios) if ratios else float("nan")


async def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--pods", type=int, default=1000, help="measured writes per variant and round")
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--warmup", type=int, default=128)
    ap.add_argument("--block", type=int, default=200)
    ap.add_argument("--variants", default=",".join(BINDS + PATCHES))
    ap.add_argument("--output", help="write the raw runs as JSON here")
    args = ap.parse_args(argv)
    names = [v for v in args.variants.split(",") if v]
    os.environ.setdefault("KSCHED_KUBE_VERSION", "v1.37.2")
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in names}
    with tempfile.TemporaryDirectory(prefix="ksched-write-path-") as tmp:
        async with ControlPlane(workdir=tmp) as cp, _API(cp.url, cp.admin.token, cp.ca_file) as api:
            await api.create_all([_node(i) for i in range(args.nodes)])
            nodes = [f"wp-node-{i:04d}" for i in range(args.nodes)]
            for r in range(args.repeat):
                got = await _round(api, cp, names, nodes, args, r)
                for v, res in got.items():
                    runs[v].append(res)
                    print(
                        f"round {r + 1} {v}: client {res['client_ms']:.3f} ms, "
                        f"server {res['server_ms']:.3f} ms, {res['writes_per_s']:.0f}/s",
                        file=sys.stderr,
                    )
                print(f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
    print(
        f"{args.pods} writes per variant and round in blocks of {args.block}, "
        f"concurrency {args.concurrency}, {args.repeat} rounds; CPU ms per write (min / median)"
    )
    base = names[0]
    print(
        f"| variant | client | server (apiserver+etcd) | writes/s (median) "
        f"| client / {base} | server / {base} |"
    )
    print("|---|---|---|---|---|---|")
    for v, rs in runs.items():
        c = sorted(x["client_ms"] for x in rs)
        s = sorted(x["server_ms"] for x in rs)
        w = statistics.median(x["writes_per_s"] for x in rs)
        print(
            f"| {v} | {c[0]:.3f} / {statistics.median(c):.3f} "
            f"| {s[0]:.3f} / {statistics.median(s):.3f} | {w:.0f} "
            f"| {_paired(runs[base], rs, 0):.2f} | {_paired(runs[base], rs, 1):.2f} |"
        )
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"args": vars(args), "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
