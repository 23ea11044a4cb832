"""High availability: several ``ksched run --leader-elect`` processes on one Lease.

Short timings keep the file fast (leaseDuration 2 s, renewDeadline 1.5 s, retryPeriod
0.25 s). Each daemon gets its own ``$HOSTNAME``, which becomes the prefix of its Lease
identity and the suffix of its events' reportingInstance, so leases, events and bindings
can be attributed to processes. Measured failover times are printed (``pytest -s``).
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ksched.testing.controlplane import ControlPlane

from .conftest import E2E, KschedProcess, metric, wait_for

pytestmark = pytest.mark.e2e

LD, RD, RP = 2.0, 1.5, 0.25
FAST = {"leaseDuration": "2s", "renewDeadline": "1500ms", "retryPeriod": "250ms"}
# Upstream's defaults but a shorter retry period: a released lease must not need 15 s.
DEFAULTISH = {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "500ms"}


class Daemon(KschedProcess):
    """One ``ksched run --leader-elect`` process with its own ``$HOSTNAME``."""

    def __init__(self, e2e: E2E, name: str, timings: dict[str, str], **top: Any) -> None:
        cfg = e2e.config(
            **top,
            leaderElection={
                "leaderElect": False,  # the flag below turns it on, as upstream's override
                "resourceName": lease_ref(e2e)[1],
                "resourceNamespace": lease_ref(e2e)[0],
                **timings,
            },
        )
        path = e2e.write_config(cfg, f"{name}.yaml")
        args = ["--config", str(path), "--kubeconfig", str(e2e.kubeconfig), "--leader-elect"]
        args += e2e.emulation_args()
        super().__init__([*args, "-v", "2"], name=name, HOSTNAME=name)
        self.identity = ""

    def started(self) -> None:
        self.serving()
        self.identity = str(self.wait_log("attempting to acquire leader lease")["identity"])
        assert self.identity.startswith(f"{self.name}_")

    def master_status(self) -> float | None:
        status, text = self.get("/metrics")
        return metric(text, "leader_election_master_status") if status == 200 else None


@pytest.fixture
def daemons(e2e: E2E) -> Iterator[list[Daemon]]:
    if e2e.target == "kube":  # the shared control plane keeps the last test's Lease
        e2e.kube.request("DELETE", lease_path(e2e))
    started: list[Daemon] = []
    yield started
    for d in started:
        d.kill()


def start(
    e2e: E2E,
    daemons: list[Daemon],
    n: int,
    timings: dict[str, str],
    *,
    ready: bool = True,
    **top: Any,
) -> list[Daemon]:
    new = [Daemon(e2e, f"ha-{len(daemons) + i}", timings, **top) for i in range(n)]
    daemons.extend(new)
    for d in new:
        d.started()
    for d in new if ready else ():
        wait_for(lambda d=d: d.get("/readyz")[0] == 200, 20, what=f"{d.name} ready")
    return new


def lease_ref(e2e: E2E) -> tuple[str, str]:
    """The Lease the daemons elect on: on the real control plane the one the stock
    system:kube-scheduler role may update (kube-system/kube-scheduler), else a fresh one."""
    if e2e.target == "kube":
        return "kube-system", "kube-scheduler"
    return e2e.namespace, f"ksched-{e2e.run_id}"


def lease_path(e2e: E2E) -> str:
    ns, name = lease_ref(e2e)
    return f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}"


def lease(e2e: E2E) -> dict[str, Any]:
    spec: dict[str, Any] = e2e.kube.ok("GET", lease_path(e2e))["spec"]
    return spec


def holder(e2e: E2E) -> str:
    status, data = e2e.kube.request("GET", lease_path(e2e))
    return (
        str(((data or {}).get("spec") or {}).get("holderIdentity") or "") if status == 200 else ""
    )


def leader(e2e: E2E, ds: list[Daemon], timeout: float = 10.0) -> Daemon:
    """The daemon the Lease names, once exactly one daemon reports itself as master."""

    def one() -> Daemon | None:
        h = holder(e2e)
        live = [d for d in ds if d.alive]
        statuses = {d.name: d.master_status() for d in live}
        leaders = [d for d in live if statuses[d.name] == 1.0]
        if (
            len(leaders) == 1
            and leaders[0].identity == h
            and all(statuses[d.name] == 0.0 for d in live if d is not leaders[0])
        ):
            return leaders[0]
        return None

    return wait_for(one, timeout, what="exactly one leader")


def bound_by(e2e: E2E, pod: str) -> str:
    """The hostname of the daemon that reported the pod's Scheduled event."""
    (ev,) = wait_for(lambda: e2e.events(pod, "Scheduled"), 10, what=f"{pod} Scheduled event")
    return str(ev["reportingInstance"]).removeprefix(f"{e2e.scheduler_name}-")


def assert_each_bound_once(e2e: E2E, pods: list[str]) -> None:
    """Exactly one binding per pod, none rejected (no double binding): from the test
    server's request log, and on any server from the events (one Scheduled each, no
    FailedScheduling: a rejected second binding would report one)."""
    if e2e.server is not None:
        reqs = [
            r
            for r in e2e.server.find_requests(resource="pods/binding")
            if r.namespace == e2e.namespace
        ]
        assert [r for r in reqs if r.status >= 300] == []
        counts = Counter(r.name for r in reqs)
        assert counts == Counter(pods), counts
    for p in pods:
        assert len(e2e.events(p, "Scheduled")) == 1
        assert e2e.events(p, "FailedScheduling") == []


def test_one_leader_of_three_and_sigkill_failover(e2e: E2E, daemons: list[Daemon]) -> None:
    e2e.create_node("n1")
    ds = start(e2e, daemons, 3, FAST)
    first = leader(e2e, ds)
    spec = lease(e2e)
    assert spec["leaseDurationSeconds"] == 2
    transitions = spec["leaseTransitions"]
    pods = [f"before-{i}" for i in range(5)]
    for p in pods:
        e2e.create_pod(p)
    for p in pods:
        e2e.wait_bound(p)
        assert bound_by(e2e, p) == first.name
    # Only the leader schedules, but every follower's cache is warm.
    for d in ds:
        _, text = d.get("/metrics")
        assert metric(text, "scheduler_cache_size", type="nodes") == 1.0

    first.p.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    first.p.wait(5)
    after = [f"after-{i}" for i in range(5)]
    for p in after:
        e2e.create_pod(p)
    second = leader(e2e, ds, timeout=LD + 3 * RP + 5)
    took_over = time.monotonic() - killed
    for p in after:
        e2e.wait_bound(p, timeout=10)
    bound = time.monotonic() - killed
    print(
        f"\nSIGKILL failover: new leader after {took_over:.2f}s, "
        f"pods bound after {bound:.2f}s (leaseDuration {LD}s, retryPeriod {RP}s)"
    )
    assert second is not first
    # A standby must wait out the lease it last saw renewed, then win its next retry.
    assert LD - RP <= took_over <= LD + 2.2 * RP + 1.5
    assert bound <= LD + 2.2 * RP + 2.5
    assert {bound_by(e2e, p) for p in after} == {second.name}
    assert lease(e2e)["leaseTransitions"] == transitions + 1
    assert_each_bound_once(e2e, pods + after)


@pytest.mark.fake_apiserver
def test_sigterm_releases_the_lease_for_a_fast_handover(e2e: E2E, daemons: list[Daemon]) -> None:
    srv = e2e.need_server()
    e2e.create_node("n1")
    ds = start(e2e, daemons, 2, DEFAULTISH)
    first = leader(e2e, ds)
    (standby,) = [d for d in ds if d is not first]
    transitions = lease(e2e)["leaseTransitions"]
    e2e.create_pod("before")
    e2e.wait_bound("before")

    first.p.send_signal(signal.SIGTERM)
    stopped = time.monotonic()
    assert first.p.wait(10) == 0
    e2e.create_pod("after")
    wait_for(
        lambda: holder(e2e) == standby.identity, 5, interval=0.02, what="the standby to take over"
    )
    took_over = time.monotonic() - stopped
    e2e.wait_bound("after", timeout=5)
    bound = time.monotonic() - stopped
    print(
        f"\nSIGTERM handover: new leader after {took_over:.2f}s, pod bound after "
        f"{bound:.2f}s (leaseDuration 15s, retryPeriod 0.5s)"
    )
    # Released: no need to wait out the 15 s lease, about one (jittered) retry period.
    assert took_over < 2.0
    assert first.logged("released lease") is not None
    # The release itself: holder cleared, transitions kept, leaseDurationSeconds 1.
    released = [
        r.body["spec"]
        for r in srv.find_requests(resource="leases", verb="update")
        if r.status == 200 and r.body["spec"]["holderIdentity"] == ""
    ]
    assert len(released) == 1
    assert released[0]["leaseDurationSeconds"] == 1
    assert released[0]["leaseTransitions"] == transitions
    spec = lease(e2e)
    assert spec["leaseTransitions"] == transitions + 1
    assert spec["leaseDurationSeconds"] == 15
    assert leader(e2e, ds) is standby
    assert bound_by(e2e, "after") == standby.name
    assert_each_bound_once(e2e, ["before", "after"])


@pytest.mark.fake_apiserver
def test_a_leader_that_cannot_renew_steps_down(e2e: E2E, daemons: list[Daemon]) -> None:
    srv = e2e.need_server()
    e2e.create_node("n1")
    ds = start(e2e, daemons, 2, FAST)
    first = leader(e2e, ds)
    (standby,) = [d for d in ds if d is not first]
    e2e.create_pod("before")
    e2e.wait_bound("before")

    # Every lease write (and read) fails from now on: nobody can renew or acquire.
    srv.faults.fail_next(100_000, verb="update", resource="leases", code=500)
    srv.faults.fail_next(100_000, verb="get", resource="leases", code=500)
    faulted = time.monotonic()
    lost = first.wait_log("leaderelection lost", timeout=RP + RD + 3)
    stepped_down = time.monotonic() - faulted
    assert first.p.wait(10) == 1  # kube-scheduler exits on a lost lease too
    assert stepped_down <= RP + RD + 1.0
    assert lost["identity"] == first.identity
    print(
        f"\nrenew failures: leader stepped down {stepped_down:.2f}s after the API started "
        f"failing (renewDeadline {RD}s), exit status 1"
    )
    # No one leads while the faults last: the pod stays pending.
    e2e.create_pod("during")
    time.sleep(LD + 2 * RP)
    assert e2e.node_of("during") is None
    assert standby.master_status() == 0.0
    assert [r for r in srv.find_requests(resource="pods/binding", name="during")] == []

    srv.faults.clear()
    healed = time.monotonic()
    assert leader(e2e, [standby], timeout=5) is standby
    e2e.wait_bound("during", timeout=5)
    print(
        f"after the API recovered the standby led and bound within {time.monotonic() - healed:.2f}s"
    )
    assert bound_by(e2e, "during") == standby.name
    assert_each_bound_once(e2e, ["before", "during"])


def test_health_and_configz_of_candidates(e2e: E2E, daemons: list[Daemon]) -> None:
    ds = start(e2e, daemons, 2, FAST)
    first = leader(e2e, ds)
    for d in ds:
        status, text = d.get("/readyz?verbose")
        assert status == 200 and "[+]leaderElection ok" in text, text
        status, body = d.get("/configz")
        assert json.loads(body)["componentconfig"]["leaderElection"]["leaderElect"] is True
    assert first.logged("successfully acquired lease") is not None
    (other,) = [d for d in ds if d is not first]
    seen = other.wait_log("new leader observed")
    assert seen["identity"] == first.identity
    # client-go's LeaseLock.RecordEvent: a core/v1 Event on the Lease.
    events = wait_for(
        lambda: [
            e
            for e in e2e.kube.ok("GET", f"/api/v1/namespaces/{lease_ref(e2e)[0]}/events")["items"]
            if e.get("reason") == "LeaderElection"
            and e["involvedObject"]["name"] == lease_ref(e2e)[1]
            and e["source"]["component"] == e2e.scheduler_name
        ],
        5,
        what="a LeaderElection event",
    )
    assert [e["message"] for e in events] == [f"{first.identity} became leader"]
    assert events[0]["involvedObject"]["kind"] == "Lease"
    assert events[0]["source"]["component"] == e2e.scheduler_name


@pytest.mark.fake_apiserver
def test_delay_cache_until_active(e2e: E2E, daemons: list[Daemon]) -> None:
    """Only the leader runs informers; a standby lists the cluster once it takes over."""
    e2e.need_server()
    e2e.create_node("n1")
    ds = start(e2e, daemons, 2, FAST, ready=False, delayCacheUntilActive=True)
    first = leader(e2e, ds)
    (standby,) = [d for d in ds if d is not first]
    wait_for(lambda: first.get("/readyz")[0] == 200, 10, what="the leader to be ready")
    status, text = standby.get("/readyz?verbose")
    assert status == 503 and "[-]informer-sync failed" in text
    _, text = standby.get("/metrics")
    assert metric(text, "scheduler_cache_size", type="nodes") == 0.0
    first.kill()
    e2e.create_pod("p")
    assert leader(e2e, [standby], timeout=LD + 3 * RP + 5) is standby
    e2e.wait_bound("p", timeout=10)
    wait_for(lambda: standby.get("/readyz")[0] == 200, 5, what="the new leader to be ready")
    assert_each_bound_once(e2e, ["p"])


@pytest.mark.fake_apiserver
def test_embedded_daemon_is_fenced_after_losing_the_lease(e2e: E2E) -> None:
    """In-process: a lost lease stops scheduling for good and the binder refuses writes."""
    import msgspec

    from ksched.api.objects import Pod
    from ksched.framework.handle import BindError
    from ksched.framework.types import PodInfo

    srv = e2e.need_server()
    node = e2e.create_node("n1")
    cfg = e2e.config(
        leaderElection={
            "leaderElect": True,
            "resourceName": "embedded",
            "resourceNamespace": e2e.namespace,
            **FAST,
        }
    )
    with e2e.daemon(cfg, wait_ready=False, identity="embedded-a") as h:
        d = h.daemon
        h.portal.call(d.wait_leading, 20.0)
        assert d.leading and not d.leadership_lost
        e2e.create_pod("before")
        e2e.wait_bound("before")
        srv.faults.fail_next(100_000, verb="update", resource="leases", code=500)
        srv.faults.fail_next(100_000, verb="get", resource="leases", code=500)
        wait_for(lambda: d.leadership_lost, RP + RD + 2, what="the lease to be lost")
        assert not d.leading
        assert d.elector.observed_record.holder_identity == "embedded-a"
        _, text = h.get("/metrics")
        assert metric(text, "leader_election_master_status") == 0.0
        e2e.create_pod("after")
        time.sleep(0.5)
        assert e2e.node_of("after") is None
        pod = e2e.pod("after")
        info = PodInfo(msgspec.convert(pod, Pod), pod)
        with pytest.raises(BindError, match="not the leader"):
            h.portal.call(d.scheduler.cluster.bind, info, node)
        srv.faults.clear()
    assert e2e.node_of("after") is None
    assert_each_bound_once(e2e, ["before"])
    # Shutdown released the lease it still held on paper.
    assert srv.get("leases", e2e.namespace, "embedded")["spec"]["holderIdentity"] == ""


@pytest.mark.kube
def test_a_lease_the_stock_role_cannot_reach_fails_readiness(
    e2e_controlplane: ControlPlane, tmp_path: Path
) -> None:
    """system:kube-scheduler may update only kube-system/kube-scheduler: elsewhere the
    daemon must say so and stay unready, not report ready while never leading."""
    cp = e2e_controlplane
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {
            "leaderElect": True,
            "resourceNamespace": "default",
            "resourceName": "ksched-forbidden",
            **FAST,
        },
        "profiles": [{"schedulerName": "ksched-forbidden-lease"}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(cfg))
    kubeconfig = str(cp.scheduler_kubeconfig)
    p = KschedProcess(
        [
            "--config",
            str(path),
            "--kubeconfig",
            kubeconfig,
            "--emulated-version",
            cp.emulated_version,
        ]
    )
    try:
        p.serving()
        forbidden = p.wait_log("error retrieving resource lock")
        assert "forbidden" in forbidden["error"]
        time.sleep(2 * LD)  # about 16 retries
        # one line per cause, not one per retry
        assert p.count("error retrieving resource lock") == 1
        status, body = p.get("/readyz?verbose")
        assert status == 503
        assert "leaderElection" in body and "forbidden" in body.lower(), body
        assert "default/ksched-forbidden" in body, body
    finally:
        p.kill()
