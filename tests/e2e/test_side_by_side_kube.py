"""ksched beside the real kube-scheduler on one cluster, each with its own schedulerName.

Each must bind only its own pods, count the other's pods against node capacity (both read
every bound pod from the API), and write the same FailedScheduling text for the same
unschedulable pod. Racing, the window in which ksched has not yet seen a binding made by
kube-scheduler is measured (``pytest -s`` prints it).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import pytest

from ksched.api.quantity import milli_value

from .conftest import E2E, JSON, DaemonHandle, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.kube]


def _pods(e2e: E2E) -> list[JSON]:
    items: list[JSON] = e2e.kube.ok("GET", f"/api/v1/namespaces/{e2e.namespace}/pods")["items"]
    return items


def _cpu_milli(pod: JSON) -> int:
    return sum(milli_value(c["resources"]["requests"]["cpu"]) for c in pod["spec"]["containers"])


def _assert_no_overcommit(e2e: E2E, cpu_per_node: int) -> dict[str, int]:
    used: dict[str, int] = {}
    for p in _pods(e2e):
        node = p["spec"].get("nodeName")
        if node:
            used[node] = used.get(node, 0) + _cpu_milli(p)
    assert all(v <= cpu_per_node for v in used.values()), used
    return used


def _reporter(e2e: E2E, pod: str) -> str:
    (ev,) = wait_for(lambda: e2e.events(pod, "Scheduled"), what=f"{pod}'s Scheduled event")
    return str(ev["reportingController"])


@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_filling_nodes_in_turn_overcommits_none_and_messages_agree(
    e2e: E2E, kube_name: str
) -> None:
    nodes = [e2e.create_node(f"n{i}", cpu="2") for i in range(3)]
    with e2e.daemon():
        # 12 pods of 500m fill 3 x 2 CPU exactly, the schedulers taking turns
        owners: dict[str, str] = {}
        for i in range(12):
            sched = e2e.scheduler_name if i % 2 == 0 else kube_name
            name = f"{'ksched' if sched == e2e.scheduler_name else 'kube'}-{i}"
            e2e.create_pod(name, cpu="500m", scheduler_name=sched)
            owners[name] = sched
            assert e2e.wait_bound(name, timeout=20) in nodes
        used = _assert_no_overcommit(e2e, 2000)
        assert used == dict.fromkeys(nodes, 2000)
        for name, sched in owners.items():
            assert _reporter(e2e, name) == sched, name
        # nothing is left: both see the other's pods and report the same
        e2e.create_pod("ksched-extra", cpu="500m")
        e2e.create_pod("kube-extra", cpu="500m", scheduler_name=kube_name)
        ours = e2e.wait_unschedulable("ksched-extra")
        theirs = wait_for(lambda: e2e.condition("kube-extra"), 20, what="kube-extra condition")
        assert theirs["reason"] == "Unschedulable"
        # the Filter diagnosis, "0/3 nodes are available: 3 Insufficient cpu.", is the same
        # (what PostFilter plugins append: test_postfilter_messages_agree)
        assert _diagnosis(ours["message"]) == _diagnosis(theirs["message"])
        assert _diagnosis(ours["message"]) == "0/3 nodes are available: 3 Insufficient cpu."
        (k_ev,) = wait_for(lambda: e2e.events("kube-extra", "FailedScheduling"), 20)
        (o_ev,) = e2e.events("ksched-extra", "FailedScheduling")
        assert o_ev["note"] == ours["message"] and k_ev["note"] == theirs["message"]
        assert o_ev["type"] == k_ev["type"] == "Warning"
        assert o_ev["action"] == k_ev["action"] == "Scheduling"
        # what a person sees: kubectl describe and kubectl events, for ksched's pods as
        # for kube-scheduler's
        cp = e2e.controlplane
        assert cp is not None
        ns = e2e.namespace
        for pod, sched in (("ksched-extra", e2e.scheduler_name), ("kube-extra", kube_name)):
            described = cp.kubectl("describe", "pod", pod, "-n", ns).stdout
            assert "Warning  FailedScheduling" in described, described
            assert _diagnosis(ours["message"]) in described
            assert sched in described  # the From column
            events = cp.kubectl("events", "-n", ns, "--for", f"pod/{pod}").stdout
            assert "FailedScheduling" in events and _diagnosis(ours["message"]) in events
        bound = cp.kubectl("events", "-n", ns, "--for", "pod/ksched-0").stdout
        assert "Scheduled" in bound and f"Successfully assigned {ns}/ksched-0 to " in bound
    _assert_no_overcommit(e2e, 2000)


def _diagnosis(message: str) -> str:
    return message.split(". ", 1)[0] + "."


@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_postfilter_messages_agree(e2e: E2E, kube_name: str) -> None:
    e2e.create_node("only", cpu="1")
    with e2e.daemon():
        e2e.create_pod("ksched-fill", cpu="1")
        e2e.create_pod("kube-fill", cpu="1", scheduler_name=kube_name)
        e2e.wait_bound("ksched-fill")
        e2e.create_pod("ksched-extra", cpu="500m")
        e2e.create_pod("kube-extra", cpu="500m", scheduler_name=kube_name)
        ours = e2e.wait_unschedulable("ksched-extra")
        theirs = wait_for(lambda: e2e.condition("kube-extra"), 20, what="kube-extra condition")
    assert ours["message"] == theirs["message"]


@pytest.mark.parametrize("e2e", ["kube"], indirect=True)
def test_racing_schedulers_bind_only_their_own_pods(e2e: E2E, kube_name: str) -> None:
    """Both schedulers get a burst at once. Each binds exactly its own pods; the time from a
    kube-scheduler binding (as the test's own watch-free poll sees it) to ksched's cache
    holding that pod is measured."""
    nodes = [e2e.create_node(f"n{i}", cpu="8") for i in range(4)]
    n = 20
    with e2e.daemon() as h:
        for i in range(n):
            e2e.create_pod(f"ksched-{i}", cpu="100m")
            e2e.create_pod(f"kube-{i}", cpu="100m", scheduler_name=kube_name)
        seen_bound: dict[str, float] = {}
        seen_in_ksched: dict[str, float] = {}
        deadline = time.monotonic() + 30
        while len(seen_in_ksched) < n and time.monotonic() < deadline:
            now = time.monotonic()
            for p in _pods(e2e):
                name = p["metadata"]["name"]
                if name.startswith("kube-") and p["spec"].get("nodeName"):
                    seen_bound.setdefault(name, now)
            cached = _cached_bound(h)
            now = time.monotonic()
            for name in seen_bound:
                if name in cached:
                    seen_in_ksched.setdefault(name, now)
            time.sleep(0.02)
        assert len(seen_in_ksched) == n, sorted(set(seen_bound) - set(seen_in_ksched))
        for i in range(n):
            assert e2e.wait_bound(f"ksched-{i}", timeout=20) in nodes
    lags = [max(0.0, seen_in_ksched[k] - seen_bound[k]) for k in seen_in_ksched]
    print(
        f"\nksched saw kube-scheduler's bindings within: median {statistics.median(lags) * 1000:.0f}"
        f" ms, max {max(lags) * 1000:.0f} ms (the test polls every ~20 ms plus a list)"
    )
    # an informer delivers a binding in milliseconds; a second means a stalled watch
    assert max(lags) < 1.0
    for i in range(n):
        assert _reporter(e2e, f"ksched-{i}") == e2e.scheduler_name
        assert _reporter(e2e, f"kube-{i}") == kube_name


def _cached_bound(h: DaemonHandle) -> set[str]:
    def read() -> set[str]:
        sched: Any = h.daemon.scheduler
        return {p.name for p in sched.cache.list_pods() if p.node_name}

    return h.call(read)
