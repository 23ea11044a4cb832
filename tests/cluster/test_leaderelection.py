"""The Lease lock and leader elector (client-go semantics), on a fake clock.

Most tests drive ``LeaseLock`` over an in-memory Lease endpoint (``FakeAPI``: resourceVersion
preconditions, injectable failures) so time is virtual; the last ones run the lock against
the test API server.
"""

from __future__ import annotations

import copy
import datetime as dt
import random
import re
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
import pytest

from ksched.cluster import APIClient, APIError
from ksched.cluster.leaderelection import (
    HEALTHZ_TIMEOUT,
    LeaderElectionRecord,
    LeaderElector,
    LeaseLock,
    check_timings,
    lease_lock_client,
    new_identity,
    resolve_lease_namespace,
)
from ksched.metrics import SchedulerMetrics
from ksched.testing import TestAPIServer
from ksched.util.clock import FakeClock

pytestmark = pytest.mark.anyio

MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
LD, RD, RP = 15.0, 10.0, 2.0
LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ksched"


class FakeAPI:
    """One Lease behind ``request``: optimistic concurrency like kube-apiserver."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.rv = 0
        self.calls: list[str] = []
        self.failures: list[tuple[str | None, int]] = []  # (method or None, status)
        self.events: list[dict[str, Any]] = []

    def fail(self, status: int = 500, method: str | None = None, count: int = 1) -> None:
        self.failures += [(method, status)] * count

    def spec(self) -> dict[str, Any]:
        assert self.lease is not None
        spec: dict[str, Any] = self.lease["spec"]
        return spec

    def record(self) -> LeaderElectionRecord:
        return LeaderElectionRecord.from_spec(self.spec())

    def put_spec(self, **spec: Any) -> None:
        """Another writer changes the Lease (bumps the resourceVersion)."""
        if self.lease is None:
            self.lease = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": "ksched", "namespace": "kube-system"},
                "spec": {},
            }
        self.rv += 1
        self.lease["spec"] = {**self.lease["spec"], **spec}
        self.lease["metadata"]["resourceVersion"] = str(self.rv)

    async def request(
        self, method: str, path: str, *, body: Any = None, timeout: float | None = None, **_: Any
    ) -> tuple[int, bytes]:
        await anyio.lowlevel.checkpoint()
        if path.endswith("/events"):
            self.events.append(body)
            return 201, b"{}"
        self.calls.append(method)
        for i, (m, status) in enumerate(self.failures):
            if m is None or m == method:
                del self.failures[i]
                raise APIError(status, "InternalError", "injected")
        if method == "GET":
            if self.lease is None:
                raise APIError(404, "NotFound", 'leases "ksched" not found')
            return 200, msgspec.json.encode(self.lease)
        if method == "POST":
            if self.lease is not None:
                raise APIError(409, "AlreadyExists", "already exists")
            self.lease = copy.deepcopy(body)
            self.rv += 1
            self.lease["metadata"]["resourceVersion"] = str(self.rv)
            return 201, msgspec.json.encode(self.lease)
        assert method == "PUT"
        assert path == LEASE_PATH
        if self.lease is None:
            raise APIError(404, "NotFound", "not found")
        if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise APIError(409, "Conflict", "the object has been modified")
        self.lease = copy.deepcopy(body)
        self.rv += 1
        self.lease["metadata"]["resourceVersion"] = str(self.rv)
        return 200, msgspec.json.encode(self.lease)


class NoJitter(random.Random):
    def random(self) -> float:
        return 0.0


class Recorder:
    """LeaderMetrics that remembers the calls."""

    def __init__(self) -> None:
        self.status: dict[str, int] = {}
        self.slowpath = 0

    def leader_on(self, name: str) -> None:
        self.status[name] = 1

    def leader_off(self, name: str) -> None:
        self.status[name] = 0

    def slowpath_exercised(self, name: str) -> None:
        self.slowpath += 1


def elector(api: FakeAPI, clock: FakeClock, identity: str, **kw: Any) -> LeaderElector:
    lock = LeaseLock(api, "kube-system", "ksched", identity)  # type: ignore[arg-type]
    opts: dict[str, Any] = {
        "lease_duration": LD,
        "renew_deadline": RD,
        "retry_period": RP,
        "clock": clock,
        "rng": NoJitter(),
    }
    opts.update(kw)
    return LeaderElector(lock, **opts)


async def settle() -> None:
    """Let the other tasks run until they wait again (the fake API only checkpoints)."""
    for _ in range(50):
        await anyio.lowlevel.checkpoint()


async def advance(clock: FakeClock, seconds: float) -> None:
    """Move virtual time forward, letting every sleeper that falls due run in order."""
    end = clock.now() + seconds
    await settle()
    while (t := clock.next_deadline()) is not None and t <= end:
        clock.set(t)
        await settle()
    clock.set(end)
    await settle()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- one attempt -------------------------------------------------------------------------------
async def test_acquire_creates_the_lease() -> None:
    api, clock = FakeAPI(), FakeClock()
    e = elector(api, clock, "a")
    assert await e.try_acquire_or_renew()
    assert api.calls == ["GET", "POST"]
    spec = api.spec()
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["acquireTime"]) and spec["acquireTime"] == spec["renewTime"]
    assert e.is_leader() and e.get_leader() == "a"


async def test_renew_keeps_acquire_time_and_transitions_via_the_fast_path() -> None:
    api, clock = FakeAPI(), FakeClock()
    t0 = dt.datetime(2026, 11, 21, 10, 0, 0, 123456, tzinfo=dt.UTC)
    now = [t0]
    e = elector(api, clock, "a", wall=lambda: now[0])
    assert await e.try_acquire_or_renew()
    assert api.spec()["acquireTime"] == "2026-11-21T10:00:00.123456Z"
    api.calls.clear()
    clock.advance(RP)
    now[0] = t0 + dt.timedelta(seconds=2)
    assert await e.try_acquire_or_renew()
    assert api.calls == ["PUT"]  # optimistic: no GET while our lease is valid
    spec = api.spec()
    assert spec["acquireTime"] == "2026-11-21T10:00:00.123456Z"
    assert spec["renewTime"] == "2026-11-21T10:00:02.123456Z"
    assert spec["leaseTransitions"] == 0


async def test_failed_fast_path_falls_back_to_get_and_update() -> None:
    api, clock, m = FakeAPI(), FakeClock(), Recorder()
    e = elector(api, clock, "a", metrics=m)
    assert await e.try_acquire_or_renew()
    api.fail(500, "PUT")
    api.calls.clear()
    assert await e.try_acquire_or_renew()
    assert api.calls == ["PUT", "GET", "PUT"]
    assert m.slowpath == 1
    assert api.record().holder_identity == "a"
    assert api.record().leader_transitions == 0


async def test_follower_waits_for_local_expiry_not_the_remote_renew_time() -> None:
    api, clock = FakeAPI(), FakeClock(1000.0)
    # The holder's renewTime is a year old: a skewed clock, not an expired lease.
    api.put_spec(
        holderIdentity="other",
        leaseDurationSeconds=15,
        leaseTransitions=3,
        acquireTime="2025-01-01T00:00:00.000000Z",
        renewTime="2025-01-01T00:00:00.000000Z",
    )
    e = elector(api, clock, "b")
    assert not await e.try_acquire_or_renew()
    assert e.get_leader() == "other"
    assert e.observed_time == 1000.0
    clock.advance(14.5)
    assert not await e.try_acquire_or_renew()  # unchanged record, not yet 15 s seen
    # The holder renews: the change restarts the local clock.
    api.put_spec(renewTime="2025-01-01T00:00:14.000000Z")
    clock.advance(0.75)  # 15.25 s after the first observation
    assert not await e.try_acquire_or_renew()
    assert e.observed_time == 1015.25
    clock.advance(14.75)
    assert not await e.try_acquire_or_renew()
    clock.advance(0.25)  # leaseDuration since the change was seen: expired
    assert await e.try_acquire_or_renew()
    rec = api.record()
    assert (rec.holder_identity, rec.leader_transitions) == ("b", 4)
    assert rec.acquire_time != "2025-01-01T00:00:00.000000Z"


async def test_empty_holder_or_own_identity_is_taken_at_once() -> None:
    api, clock = FakeAPI(), FakeClock()
    api.put_spec(holderIdentity="", leaseDurationSeconds=15, leaseTransitions=7)
    e = elector(api, clock, "b")
    assert await e.try_acquire_or_renew()
    assert api.record().leader_transitions == 8
    # A record naming us (say we lost track of it) is ours to renew: no transition.
    api2 = FakeAPI()
    api2.put_spec(
        holderIdentity="c",
        leaseDurationSeconds=15,
        leaseTransitions=2,
        acquireTime="2026-01-01T00:00:00.000000Z",
    )
    e2 = elector(api2, clock, "c")
    assert await e2.try_acquire_or_renew()
    assert api2.record().leader_transitions == 2
    assert api2.record().acquire_time == "2026-01-01T00:00:00.000000Z"


async def test_lease_duration_comes_from_the_observed_record() -> None:
    api, clock = FakeAPI(), FakeClock()
    api.put_spec(holderIdentity="other", leaseDurationSeconds=1, leaseTransitions=0)
    e = elector(api, clock, "b")
    assert not await e.try_acquire_or_renew()
    clock.advance(1.01)
    assert await e.try_acquire_or_renew()


async def test_racing_candidates_exactly_one_wins_by_conflict() -> None:
    api, clock = FakeAPI(), FakeClock()
    api.put_spec(holderIdentity="dead", leaseDurationSeconds=15, leaseTransitions=0)
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert not await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    clock.advance(LD + 1)
    # Both read the expired record, then both write: the second write carries a stale
    # resourceVersion and gets 409.
    rec_a, rec_b = await a.lock.get(), await b.lock.get()
    assert rec_a == rec_b
    results = []
    for cand in (a, b):
        try:
            await cand.lock.update(LeaderElectionRecord(cand.identity, 15, "t", "t", 1))
            results.append(True)
        except APIError as e:
            assert e.status == 409
            results.append(False)
    assert results == [True, False]
    # Through the elector: the loser sees the winner's fresh record and backs off.
    assert not await b.try_acquire_or_renew()
    assert b.get_leader() == "a"


async def test_create_conflict_and_get_errors_are_failed_attempts() -> None:
    api, clock = FakeAPI(), FakeClock()
    e = elector(api, clock, "a")
    api.fail(500, "GET")
    assert not await e.try_acquire_or_renew()
    api.fail(409, "POST")
    assert not await e.try_acquire_or_renew()
    assert api.lease is None
    assert await e.try_acquire_or_renew()


# -- release -----------------------------------------------------------------------------------
async def test_release_clears_the_holder_and_a_standby_takes_over_at_once() -> None:
    api, clock = FakeAPI(), FakeClock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    api.put_spec(holderIdentity="x", leaseDurationSeconds=15, leaseTransitions=4)
    assert not await a.try_acquire_or_renew()  # a new candidate waits a full lease
    clock.advance(LD)
    assert await a.try_acquire_or_renew()
    assert api.record().leader_transitions == 5
    assert not await b.try_acquire_or_renew()
    assert await a.release()
    spec = api.spec()
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 5
    assert MICRO_TIME.match(spec["renewTime"]) and MICRO_TIME.match(spec["acquireTime"])
    assert not a.is_leader() and not a.leading
    assert await b.try_acquire_or_renew()  # no lease duration to wait out
    assert api.record().holder_identity == "b"
    assert api.record().leader_transitions == 6


async def test_release_is_a_no_op_unless_we_hold_it_and_fails_on_conflict() -> None:
    api, clock = FakeAPI(), FakeClock()
    a = elector(api, clock, "a")
    assert await a.release()
    assert api.calls == []
    assert await a.try_acquire_or_renew()
    api.put_spec(holderIdentity="thief")  # taken behind our back
    assert not await a.release()
    assert api.record().holder_identity == "thief"


# -- the loops ---------------------------------------------------------------------------------
async def test_run_acquires_renews_and_loses_within_the_renew_deadline() -> None:
    api, clock, m = FakeAPI(), FakeClock(), Recorder()
    e = elector(api, clock, "a", metrics=m, event_component="ksched")
    assert m.status == {"ksched": 0}
    started, stopped = [], []
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            e.run, lambda: started.append(clock.now()), lambda: stopped.append(clock.now())
        )
        await advance(clock, 0)
        assert started == [0.0] and e.leading and m.status == {"ksched": 1}
        await advance(clock, 10 * RP)
        assert api.record().leader_transitions == 0
        renewed = e.renewed_at
        assert renewed == 10 * RP
        # The API starts failing every lease request.
        api.fail(500, count=1000)
        await advance(clock, RP + RD - 0.01)
        assert stopped == [] and e.leading
        await advance(clock, 0.02)
    assert stopped == [pytest.approx(renewed + RP + RD)]
    # Fenced before the others could take over (renewed + leaseDuration).
    assert stopped[0] < renewed + LD
    assert not e.leading and m.status == {"ksched": 0}
    assert e.lease_remaining() == pytest.approx(renewed + LD - clock.now())
    assert [ev["message"] for ev in api.events] == ["a became leader", "a stopped leading"]
    ev = api.events[0]
    assert ev["reason"] == "LeaderElection" and ev["involvedObject"]["kind"] == "Lease"
    assert ev["source"]["component"] == "ksched"


async def test_renewal_survives_errors_shorter_than_the_deadline() -> None:
    api, clock = FakeAPI(), FakeClock()
    e = elector(api, clock, "a")
    stopped: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(e.run, lambda: None, lambda: stopped.append(clock.now()))
        await advance(clock, RP)
        api.fail(500, count=6)  # fast path + slow path GET fail thrice: 3 attempts
        await advance(clock, 5 * RP)
        assert e.leading and api.record().holder_identity == "a"
        await advance(clock, 3 * LD)
        assert stopped == [] and e.leading
        e.stop()
    assert stopped == []
    assert e.leading and e.is_leader()  # stop() does not release...
    assert await e.release()  # ...release() does
    assert not e.leading


async def test_follower_acquires_after_local_expiry_and_counts_transitions() -> None:
    api, clock = FakeAPI(), FakeClock()
    leader, follower = elector(api, clock, "a"), elector(api, clock, "b")
    seen: list[str] = []
    follower.on_new_leader = seen.append
    b_started: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(leader.run, lambda: None, lambda: None)
        await advance(clock, 0)
        tg.start_soon(follower.run, lambda: b_started.append(clock.now()), lambda: None)
        await advance(clock, 5 * RP)
        assert seen == ["a"] and not follower.leading
        leader.stop()  # the leader "dies" holding the lease (no release)
        await advance(clock, RP)
        died = clock.now()
        await advance(clock, LD + 3 * RP)
        assert b_started, "the follower never took over"
        assert died + LD - RP <= b_started[0] <= died + LD + 2.2 * RP
        assert seen == ["a", "b"]
        assert api.record().leader_transitions == 1
        follower.stop()


async def test_stop_while_acquiring_returns_without_leading() -> None:
    api, clock = FakeAPI(), FakeClock()
    api.put_spec(holderIdentity="other", leaseDurationSeconds=15)
    e = elector(api, clock, "b")
    calls: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(e.run, lambda: calls.append("start"), lambda: calls.append("stop"))
        await advance(clock, 3 * RP)
        e.stop()
    assert calls == [] and not e.leading


async def test_acquire_retries_with_jitter() -> None:
    api, clock = FakeAPI(), FakeClock()
    api.put_spec(holderIdentity="other", leaseDurationSeconds=15)

    class MaxJitter(random.Random):
        def random(self) -> float:
            return 1.0

    e = elector(api, clock, "b", rng=MaxJitter())
    async with anyio.create_task_group() as tg:
        tg.start_soon(e.run, lambda: None, lambda: None)
        await advance(clock, 0)
        assert api.calls == ["GET"]
        await advance(clock, RP * 2.2 - 0.01)
        assert api.calls == ["GET"]
        await advance(clock, 0.02)
        assert api.calls == ["GET", "GET"]
        e.stop()


# -- health, config ----------------------------------------------------------------------------
async def test_healthz_check_fails_only_for_a_stuck_leader() -> None:
    api, clock = FakeAPI(), FakeClock()
    e = elector(api, clock, "a")
    assert e.check() is None  # not leading: healthy
    assert await e.try_acquire_or_renew()
    clock.advance(LD + HEALTHZ_TIMEOUT)
    assert e.check() is None
    clock.advance(0.1)
    assert e.check() == "failed election to renew leadership on lease ksched"
    f = elector(api, clock, "b")
    assert not await f.try_acquire_or_renew()
    clock.advance(1000)
    assert f.check() is None


def test_timing_checks_match_new_leader_elector() -> None:
    assert check_timings(15, 10, 2) is None
    assert check_timings(10, 10, 2) == "leaseDuration must be greater than renewDeadline"
    assert check_timings(15, 2.4, 2) == (
        "renewDeadline must be greater than retryPeriod*JitterFactor"
    )
    assert check_timings(2, 1.5, 0.25) is None
    with pytest.raises(ValueError, match="leaseDuration must be greater"):
        elector(FakeAPI(), FakeClock(), "a", lease_duration=5.0)


def test_lease_namespace(tmp_path: Path) -> None:
    sa = tmp_path / "namespace"
    assert resolve_lease_namespace("kube-system", sa) == "kube-system"
    assert resolve_lease_namespace("custom", sa) == "custom"
    sa.write_text("sched-ns\n")
    assert resolve_lease_namespace("kube-system", sa) == "sched-ns"  # the default: in-pod ns
    assert resolve_lease_namespace("custom", sa) == "custom"


def test_identity_is_hostname_plus_uuid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTNAME", "node-7")
    a, b = new_identity(), new_identity()
    assert a.startswith("node-7_") and b.startswith("node-7_") and a != b
    assert re.fullmatch(r"node-7_[0-9a-f-]{36}", a)


async def test_scheduler_metrics_export_master_status() -> None:
    m = SchedulerMetrics(process_metrics=False)
    api, clock = FakeAPI(), FakeClock()
    e = elector(api, clock, "a", metrics=m, name="ksched")
    text = m.render().decode()
    assert 'leader_election_master_status{name="ksched"} 0.0' in text
    assert await e.try_acquire_or_renew()
    m.leader_on("ksched")
    assert 'leader_election_master_status{name="ksched"} 1.0' in m.render().decode()


# -- against the test API server ---------------------------------------------------------------
async def test_lease_lock_on_the_test_api_server(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    lc = await lease_lock_client(client, RD)
    try:
        assert lc.request_timeout == RD / 2
        a = LeaseLock(lc, "kube-system", "ksched", "a")
        b = LeaseLock(lc, "kube-system", "ksched", "b")
        with pytest.raises(APIError) as err:
            await a.get()
        assert err.value.status == 404
        await a.create(
            LeaderElectionRecord(
                "a", 15, "2026-11-21T10:00:00.123456Z", "2026-11-21T10:00:00.123456Z", 0
            )
        )
        stored = apiserver.get("leases", "kube-system", "ksched")
        assert stored["spec"] == {
            "holderIdentity": "a",
            "leaseDurationSeconds": 15,
            "leaseTransitions": 0,
            "acquireTime": "2026-11-21T10:00:00.123456Z",
            "renewTime": "2026-11-21T10:00:00.123456Z",
        }
        rec = await b.get()
        assert rec.holder_identity == "a"
        await a.update(
            LeaderElectionRecord("a", 15, rec.acquire_time, "2026-11-21T10:00:02.000000Z", 0)
        )
        with pytest.raises(APIError) as err:  # b's resourceVersion is stale now
            await b.update(LeaderElectionRecord("b", 15, "x", "x", 1))
        assert err.value.status == 409
        assert apiserver.get("leases", "kube-system", "ksched")["spec"]["holderIdentity"] == "a"
    finally:
        await lc.close()


async def test_two_electors_on_the_test_api_server(
    apiserver: TestAPIServer, client: APIClient
) -> None:
    lc = await lease_lock_client(client, 1.5)
    try:

        def make(identity: str) -> LeaderElector:
            return LeaderElector(
                LeaseLock(lc, "kube-system", "ha", identity),
                lease_duration=2.0,
                renew_deadline=1.5,
                retry_period=0.1,
                name="ha",
            )

        a, b = make("a"), make("b")
        a_done = anyio.Event()

        async def run_a() -> None:
            await a.run(lambda: None, lambda: None)
            a_done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_a)
            with anyio.fail_after(5):
                while not a.leading:
                    await anyio.sleep(0.01)
            tg.start_soon(b.run, lambda: None, lambda: None)
            await anyio.sleep(0.5)
            assert not b.leading and b.get_leader() == "a"
            a.stop()
            # run() returns once no renewal is in flight (a release racing a renewal that
            # the server applies first would fail with a 409), as the daemon waits for it
            with anyio.fail_after(5):
                await a_done.wait()
            assert await a.release()
            with anyio.fail_after(1.0):  # released: about one retry period
                while not b.leading:
                    await anyio.sleep(0.01)
            b.stop()
        spec = apiserver.get("leases", "kube-system", "ha")["spec"]
        assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    finally:
        await lc.close()


# -- fencing -----------------------------------------------------------------------------------
async def test_a_pause_fences_writes_until_a_renewal_confirms_the_lease() -> None:
    """A monotonic clock jump longer than renewDeadline (SIGSTOP, a paused VM): no write
    until the Lease is confirmed ours again; then the leader leads on (no transition)."""
    api, clock = FakeAPI(), FakeClock()
    e = elector(api, clock, "a")
    stopped: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(e.run, lambda: None, lambda: stopped.append(clock.now()))
        await advance(clock, 3 * RP)
        assert e.may_write() and e.fence_check() is None
        clock.set(clock.now() + LD + 5)  # the process did not run meanwhile
        assert e.leading and not e.may_write()
        assert "not confirmed" in (e.fence_check() or "")
        writable = []
        tg.start_soon(lambda: _record(e.wait_writable(LD), writable))
        await advance(clock, RP)
        assert writable == [True]  # the renewal re-read the Lease: still ours
        assert e.may_write() and e.leading and stopped == []
        assert api.record().holder_identity == "a"
        assert api.record().leader_transitions == 0
        e.stop()


async def _record(coro: Any, out: list[Any]) -> None:
    out.append(await coro)


@pytest.mark.parametrize("other", ["holds", "released"])
async def test_a_pause_past_the_lease_loses_it_without_a_write(other: str) -> None:
    """Someone wrote the Lease while we were paused: we never write again — not even to
    take back a lease that was released meanwhile (client-go would, as a transition)."""
    api, clock = FakeAPI(), FakeClock()
    e = elector(api, clock, "a")
    stopped: list[float] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(e.run, lambda: None, lambda: stopped.append(clock.now()))
        await advance(clock, 3 * RP)
        clock.set(clock.now() + LD + 5)
        api.put_spec(holderIdentity="b", leaseTransitions=1)
        if other == "released":
            api.put_spec(holderIdentity="", leaseDurationSeconds=1)
        writable: list[bool] = []
        tg.start_soon(lambda: _record(e.wait_writable(LD), writable))
        api.calls.clear()
        await advance(clock, RD + 2 * RP)
        assert writable == [False]
        assert stopped and not e.leading and not e.may_write()
    assert "PUT" not in api.calls and "POST" not in api.calls
    assert api.record().holder_identity == ("b" if other == "holds" else "")


async def test_a_pause_during_a_renewal_round_rereads_the_lease_once() -> None:
    """The round ran out of its deadline while the process was paused mid-request: one
    more attempt re-reads the Lease instead of ending the leadership outright."""
    api, clock = FakeAPI(), FakeClock()
    e = elector(api, clock, "a")
    stopped: list[float] = []
    failing = 0
    real_request = api.request

    async def paused(method: str, path: str, **kw: Any) -> tuple[int, bytes]:
        nonlocal failing
        if failing and not path.endswith("/events"):
            failing -= 1
            if failing == 1:
                clock.set(clock.now() + RD + RP + 1)  # stopped mid-request
            api.calls.append(method)
            raise APIError(0, "ConnectionError", "reset")
        return await real_request(method, path, **kw)

    api.request = paused  # type: ignore[method-assign]
    async with anyio.create_task_group() as tg:
        tg.start_soon(e.run, lambda: None, lambda: stopped.append(clock.now()))
        await advance(clock, 3 * RP)
        api.calls.clear()
        failing = 2  # the fast path's PUT (during which we pause), then the GET
        await advance(clock, RP)
        assert api.calls == ["PUT", "GET", "GET", "PUT"]  # the last two: the re-read
        assert stopped == [] and e.leading
        await advance(clock, RP)
        assert e.may_write()
        assert api.record().leader_transitions == 0
        e.stop()
