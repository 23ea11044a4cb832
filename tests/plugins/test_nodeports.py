"""NodePorts: upstream's table tests (node_ports_test.go) through per-node and batch Filter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.api.objects import Node, Pod, decode
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import QueueingHint
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code, Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.plugins.nodeports import ERR_REASON, NodePorts, fits


def mk_pod(spec: dict[str, Any], name: str = "p") -> PodInfo:
    m = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": name},
        "spec": {"containers": [], **spec},
    }
    return PodInfo(decode(m, Pod), m)


def new_pod(host: str, *host_port_infos: str) -> PodInfo:
    """``newPod``: "PROTOCOL/IP/PORT" strings become one container's ports."""
    ports = []
    for info in host_port_infos:
        proto, ip, port = info.split("/")
        ports.append({"hostIP": ip, "hostPort": int(port), "protocol": proto})
    return mk_pod({"nodeName": host, "containers": [{"name": "c", "ports": ports}]})


def init_pod(sidecar: bool) -> PodInfo:
    c: dict[str, Any] = {
        "name": "i",
        "ports": [{"containerPort": 8001, "hostPort": 8001, "protocol": "TCP"}],
    }
    if sidecar:
        c["restartPolicy"] = "Always"
    return mk_pod({"initContainers": [c]})


def node_info(*pods: PodInfo) -> NodeInfo:
    """``framework.NewNodeInfo(pods...)``: no node object, just the pods' used ports."""
    ni = NodeInfo()
    for p in pods:
        ni.add_pod(p)
    return ni


CASES: list[tuple[str, PodInfo, NodeInfo, bool, bool]] = [
    # name, pod, nodeInfo, prefilter skips, filter fits
    ("skip filter", mk_pod({}), node_info(), True, True),
    (
        "other port",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        node_info(new_pod("m1", "UDP/127.0.0.1/9090")),
        False,
        True,
    ),
    (
        "same udp port",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        node_info(new_pod("m1", "UDP/127.0.0.1/8080")),
        False,
        False,
    ),
    (
        "same tcp port",
        new_pod("m1", "TCP/127.0.0.1/8080"),
        node_info(new_pod("m1", "TCP/127.0.0.1/8080")),
        False,
        False,
    ),
    (
        "different host ip",
        new_pod("m1", "TCP/127.0.0.1/8080"),
        node_info(new_pod("m1", "TCP/127.0.0.2/8080")),
        False,
        True,
    ),
    (
        "different protocol",
        new_pod("m1", "UDP/127.0.0.1/8080"),
        node_info(new_pod("m1", "TCP/127.0.0.1/8080")),
        False,
        True,
    ),
    (
        "second udp port conflict",
        new_pod("m1", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
        node_info(new_pod("m1", "UDP/127.0.0.1/8080")),
        False,
        False,
    ),
    (
        "first tcp port conflict",
        new_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
        node_info(new_pod("m1", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081")),
        False,
        False,
    ),
    (
        "first tcp port conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/0.0.0.0/8001"),
        node_info(new_pod("m1", "TCP/127.0.0.1/8001")),
        False,
        False,
    ),
    (
        "TCP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
        node_info(new_pod("m1", "TCP/127.0.0.1/8001")),
        False,
        False,
    ),
    (
        "second tcp port conflict to 0.0.0.0 hostIP",
        new_pod("m1", "TCP/127.0.0.1/8001"),
        node_info(new_pod("m1", "TCP/0.0.0.0/8001")),
        False,
        False,
    ),
    (
        "second different protocol",
        new_pod("m1", "UDP/127.0.0.1/8001"),
        node_info(new_pod("m1", "TCP/0.0.0.0/8001")),
        False,
        True,
    ),
    (
        "UDP hostPort conflict due to 0.0.0.0 hostIP",
        new_pod("m1", "UDP/127.0.0.1/8001"),
        node_info(new_pod("m1", "TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001")),
        False,
        False,
    ),
    (
        "non-sidecar initContainer using hostPort",
        init_pod(False),
        node_info(new_pod("m1", "TCP/0.0.0.0/8001")),
        True,
        True,
    ),
    (
        "TCP hostPort conflict from sidecar initContainer",
        init_pod(True),
        node_info(new_pod("m1", "TCP/0.0.0.0/8001")),
        False,
        False,
    ),
]


@pytest.mark.parametrize(("name", "pod", "ni", "skip", "ok"), CASES, ids=[c[0] for c in CASES])
def test_node_ports(name: str, pod: PodInfo, ni: NodeInfo, skip: bool, ok: bool) -> None:
    p = NodePorts()
    state = CycleState()
    snap = Snapshot([NodeInfo(), ni])  # a row without used ports, then the one under test
    result, status = p.pre_filter(state, pod, snap)
    assert result is None
    if skip:
        assert status is not None and status.code == Code.SKIP
        return
    assert status is None
    got = p.filter(state, pod, ni)
    if ok:
        assert got is None
    else:
        assert got is not None and got.code == Code.UNSCHEDULABLE and got.reasons == (ERR_REASON,)
    assert p.filter_batch(state, pod, snap).tolist() == [True, ok]


def test_pre_filter_disabled() -> None:
    ni = node_info()
    got = NodePorts().filter(CycleState(), mk_pod({}), ni)
    assert got is not None and got.code == Code.ERROR
    assert got.message() == 'reading "PreFilterNodePorts" from cycleState: not found'
    with pytest.raises(RuntimeError, match="not found"):
        NodePorts().filter_batch(CycleState(), mk_pod({}), Snapshot([ni]))
    rows = np.arange(1, dtype=np.intp)
    assert [
        desc(st)
        for st in NodePorts().filter_statuses(CycleState(), mk_pod({}), Snapshot([ni]), rows)
    ] == [desc(got)]


def desc(st: Status | None) -> tuple[Code, tuple[str, ...]] | None:
    return None if st is None else (st.code, st.reasons)


def host_port_pod(port: int, node: str = "") -> PodInfo:
    spec: dict[str, Any] = {"containers": [{"name": "c", "ports": [{"hostPort": port}]}]}
    if node:
        spec["nodeName"] = node
    return mk_pod(spec)


@pytest.mark.parametrize(
    ("old", "want"),
    [
        (mk_pod({}), QueueingHint.SKIP),  # skip-queue-on-unscheduled
        (mk_pod({"nodeName": "fake-node"}), QueueingHint.SKIP),  # skip-queue-on-non-hostport
        (host_port_pod(8081, "fake-node"), QueueingHint.SKIP),  # skip-queue-on-unrelated-hostport
        (host_port_pod(8080, "fake-node"), QueueingHint.QUEUE),  # queue-on-released-hostport
    ],
    ids=["unscheduled", "non-hostport", "unrelated-hostport", "released-hostport"],
)
def test_is_schedulable_after_assigned_pod_deleted(old: PodInfo, want: str) -> None:
    got = NodePorts().is_schedulable_after_pod_deleted(host_port_pod(8080), old, None)
    assert got == want


def test_hint_wrong_old_object() -> None:
    with pytest.raises(TypeError):
        NodePorts().is_schedulable_after_pod_deleted(host_port_pod(8080), "not-a-pod", None)


def test_events_to_register() -> None:
    events = [
        (e.event.resource, e.event.action, e.hint is not None)
        for e in NodePorts().events_to_register()
    ]
    assert events == [("AssignedPod", "Delete", True), ("Node", "Add", False)]


@pytest.mark.parametrize(
    ("pod", "existing", "expect"),
    [
        (new_pod("p", "TCP/127.0.0.1/80"), ["TCP/127.0.0.1/9090"], True),
        (
            new_pod(
                "p", "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"
            ),
            ["TCP/127.0.0.1/9090", "TCP/127.0.0.1/9191", "TCP/127.0.1.1/8080"],
            True,
        ),
        (new_pod("m1", "TCP/127.0.0.1/80"), ["UDP/127.0.0.1/80"], True),
        (new_pod("m1", "TCP/127.0.0.1/80"), ["TCP/127.0.0.1/80"], False),
        (
            new_pod(
                "p", "TCP/127.0.0.1/80", "TCP/127.0.1.1/80", "TCP/127.0.1.1/90", "TCP/127.0.1.1/100"
            ),
            ["TCP/127.0.0.1/9090", "TCP/127.0.1.1/90", "TCP/127.0.1.1/8080"],
            False,
        ),
    ],
    ids=[
        "non-conflicting",
        "multiple non-conflicting",
        "same port different protocols",
        "conflicting",
        "multiple, some conflicting",
    ],
)
def test_fits(pod: PodInfo, existing: list[str], expect: bool) -> None:
    assert fits(pod, node_info(new_pod("p1", *existing))) is expect


def test_batch_only_rejects_conflicting_rows() -> None:
    p = NodePorts()
    pod = new_pod("", "TCP/0.0.0.0/80")
    infos = [
        node_info(new_pod("a", "TCP/10.0.0.1/80")),
        node_info(),
        node_info(new_pod("b", "UDP/10.0.0.1/80")),
        node_info(new_pod("c", "TCP/0.0.0.0/81")),
    ]
    snap = Snapshot(infos)
    state = CycleState()
    p.pre_filter(state, pod, snap)
    mask = p.filter_batch(state, pod, snap)
    assert mask.tolist() == [p.filter(state, pod, ni) is None for ni in infos]
    assert mask.tolist() == [False, True, True, True]
    assert np.asarray(mask).dtype == np.bool_


def test_batch_follows_snapshot_replacements() -> None:
    """The snapshot's port index, built on the first batch Filter, follows rows replaced
    afterwards (ports added, freed, moved between IPs) and agrees with the per-node Filter
    on random port mixes of wildcard and specific IPs, both protocols."""
    rng = np.random.default_rng(7)
    ips = ["", "0.0.0.0", "10.0.0.1", "10.0.0.2"]

    def rand_ports() -> list[str]:
        return [
            f"{rng.choice(['TCP', 'UDP'])}/{rng.choice(ips)}/{int(rng.integers(80, 84))}"
            for _ in range(int(rng.integers(0, 3)))
        ]

    infos = [node_info(new_pod(f"n{i}", *rand_ports())) for i in range(12)]
    snap = Snapshot(infos)
    p = NodePorts()
    for step in range(200):
        pod = new_pod("", *(rand_ports() or ["TCP//80"]))
        state = CycleState()
        p.pre_filter(state, pod, snap)
        want = [p.filter(state, pod, ni) is None for ni in snap.node_infos]
        assert p.filter_batch(state, pod, snap).tolist() == want, step
        rows = np.arange(snap.n, dtype=np.intp)[::-1]  # any order of rows
        per_node = [p.filter(state, pod, snap.node_infos[r]) for r in rows]
        assert [desc(st) for st in p.filter_statuses(state, pod, snap, rows)] == [
            desc(st) for st in per_node
        ], step
        i = int(rng.integers(0, snap.n))
        ni = snap.node_infos[i].clone()
        if ni.pods and rng.random() < 0.5:
            ni.remove_pod(ni.pods[int(rng.integers(0, len(ni.pods)))])
        else:
            ni.add_pod(new_pod(f"n{i}", *rand_ports()))
        snap.replace(i, ni)


def test_batch_after_assume_and_forget() -> None:
    """A pod-group cycle's assumed pod takes its port on that row only, and forgetting it
    frees the port again."""
    infos = [node_info(), node_info()]
    for i, ni in enumerate(infos):
        ni.set_node(decode({"kind": "Node", "metadata": {"name": f"n{i}"}}, Node))
    snap = Snapshot(infos)
    p = NodePorts()
    pod = new_pod("", "TCP/0.0.0.0/80")
    state = CycleState()
    p.pre_filter(state, pod, snap)
    assert p.filter_batch(state, pod, snap).tolist() == [True, True]
    other = new_pod("", "TCP/10.0.0.1/80")
    snap.assume_pod(other, "n1")
    assert p.filter_batch(state, pod, snap).tolist() == [True, False]
    snap.forget_pod(other)
    assert p.filter_batch(state, pod, snap).tolist() == [True, True]
