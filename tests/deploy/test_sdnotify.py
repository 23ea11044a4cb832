"""sd_notify: the protocol on real unix datagram sockets, and the daemon's READY=1,
WATCHDOG=1 and STOPPING=1 as systemd (``Type=notify``, ``WatchdogSec=``) would see them."""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

import ksched.scheduler.loop as loop_module
from ksched.cluster import APIClient
from ksched.config import load_config_data
from ksched.daemon import SchedulerDaemon
from ksched.daemon.sdnotify import SdNotifier, parse_notify_socket, parse_watchdog_usec
from ksched.testing import TestAPIServer, make_node, make_pod

from ._mdwe import mdwe_argv, mdwe_supported

# ---- a fake service manager ----------------------------------------------------------------


class NotifySocket:
    """What systemd's notification socket receives: one message per datagram, timestamped."""

    def __init__(self, address: str | bytes) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(address)
        self.sock.settimeout(0.1)
        self.messages: queue.Queue[tuple[float, str]] = queue.Queue()
        self.seen: list[tuple[float, str]] = []
        self._stop = False
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        while not self._stop:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            self.messages.put((time.monotonic(), data.decode()))

    def wait(self, prefix: str, timeout: float = 20.0) -> tuple[float, str]:
        """The next message starting with ``prefix`` (earlier ones are kept in ``seen``)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {prefix!r} notification; got {self.seen}")
            try:
                t, msg = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            self.seen.append((t, msg))
            if msg.startswith(prefix):
                return t, msg

    def drain(self) -> list[tuple[float, str]]:
        out = []
        while True:
            try:
                out.append(self.messages.get_nowait())
            except queue.Empty:
                self.seen.extend(out)
                return out

    def close(self) -> None:
        self._stop = True
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def abstract_socket() -> Iterator[tuple[str, NotifySocket]]:
    name = f"ksched-test-{uuid.uuid4().hex}"
    s = NotifySocket("\0" + name)
    yield "@" + name, s
    s.close()


@pytest.fixture
def path_socket(tmp_path: Path) -> Iterator[tuple[str, NotifySocket]]:
    path = str(tmp_path / "notify")
    s = NotifySocket(path)
    yield path, s
    s.close()


# ---- parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "address"),
    [
        ("/run/systemd/notify", b"/run/systemd/notify"),
        ("@ksched/notify", b"\0ksched/notify"),
        (None, None),
        ("", None),
        ("@", None),
        ("relative/path", None),
        ("vsock:2:1234", None),
    ],
)
def test_notify_socket_addresses(value: str | None, address: bytes | None) -> None:
    assert parse_notify_socket(value) == address


@pytest.mark.parametrize(
    ("usec", "pid", "interval"),
    [
        ("30000000", None, 30.0),
        ("500000", "4242", 0.5),  # meant for this process
        ("500000", "4243", None),  # a child that inherited the environment
        ("500000", "x", None),
        ("0", None, None),
        ("-5", None, None),
        ("soon", None, None),
        (None, None, None),
    ],
)
def test_watchdog_usec_and_pid(usec: str | None, pid: str | None, interval: float | None) -> None:
    assert parse_watchdog_usec(usec, pid, pid=4242) == interval


def test_from_env_without_socket_is_a_no_op() -> None:
    n = SdNotifier.from_env({"WATCHDOG_USEC": "1000000"})
    assert not n.enabled and n.watchdog_interval is None
    assert n.ready() is False and n.ping() is False and n.sent == 0
    assert not SdNotifier.from_env({"NOTIFY_SOCKET": "not-absolute"}).enabled


# ---- the protocol on real sockets ---------------------------------------------------------


def test_path_socket_receives_assignments(path_socket: tuple[str, NotifySocket]) -> None:
    address, sm = path_socket
    n = SdNotifier.from_env({"NOTIFY_SOCKET": address})
    assert n.enabled and n.watchdog_interval is None
    assert n.ready("synced\nwith a newline")
    assert sm.wait("READY=1")[1] == "READY=1\nSTATUS=synced with a newline"
    assert n.stopping()
    assert sm.wait("STOPPING=1")[1] == "STOPPING=1"
    n.close()


def test_abstract_socket_and_watchdog_env(abstract_socket: tuple[str, NotifySocket]) -> None:
    address, sm = abstract_socket
    n = SdNotifier.from_env(
        {"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}
    )
    assert n.watchdog_interval == 2.0
    assert n.ping() and n.status("busy")
    assert sm.wait("WATCHDOG=1")[1] == "WATCHDOG=1"
    assert sm.wait("STATUS=")[1] == "STATUS=busy"


def test_a_vanished_manager_is_not_an_error(tmp_path: Path) -> None:
    path = str(tmp_path / "notify")
    first = NotifySocket(path)
    n = SdNotifier(path)
    assert n.ping()
    first.wait("WATCHDOG=1")
    first.close()
    os.unlink(path)
    assert n.ping() is False  # ENOENT: logged once, never raised
    second = NotifySocket(path)  # the manager came back (daemon-reexec)
    try:
        assert n.ping()
        second.wait("WATCHDOG=1")
    finally:
        second.close()


def test_watchdog_pings_only_while_healthy(abstract_socket: tuple[str, NotifySocket]) -> None:
    address, sm = abstract_socket
    n = SdNotifier(address, watchdog=0.1)  # a ping every 50 ms
    healthy = True

    async def main() -> None:
        nonlocal healthy
        async with anyio.create_task_group() as tg:
            tg.start_soon(n.run_watchdog, lambda: healthy)
            await anyio.sleep(0.3)
            healthy = False
            await anyio.sleep(0.05)  # the ping decided before the switch may still arrive
            sm.drain()
            await anyio.sleep(0.3)
            assert sm.drain() == []
            healthy = True
            await anyio.sleep(0.2)
            tg.cancel_scope.cancel()

    anyio.run(main)
    pings = [m for _, m in sm.seen if m == "WATCHDOG=1"]
    assert len(pings) >= 6, sm.seen


def test_no_watchdog_interval_means_no_pings(abstract_socket: tuple[str, NotifySocket]) -> None:
    address, sm = abstract_socket

    async def main() -> None:
        with anyio.fail_after(1):
            await SdNotifier(address).run_watchdog(lambda: True)  # returns at once

    anyio.run(main)
    time.sleep(0.1)
    assert sm.drain() == []


# ---- the daemon, in process -----------------------------------------------------------------


def _config(**top: Any) -> Any:
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
    }
    cfg.update(top)
    return load_config_data(cfg)[0]


def test_daemon_notifies_ready_after_sync_and_stopping(
    abstract_socket: tuple[str, NotifySocket],
) -> None:
    address, sm = abstract_socket

    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(make_node("n1"))
            client = await APIClient.for_master(srv.url, qps=0)
            notifier = SdNotifier(address, watchdog=0.2)
            srv.faults.add_latency(0.5, verb="list", resource="pods")  # a slow initial list
            try:
                async with SchedulerDaemon(
                    _config(), client=client, port=0, notifier=notifier
                ) as d:
                    await anyio.sleep(0.3)
                    assert not d.synced
                    assert [m for _, m in sm.drain() if m.startswith("READY")] == []
                    await d.wait_ready(10)
                    await anyio.to_thread.run_sync(sm.wait, "READY=1")
                    assert d.synced
                    assert d.loop_healthy()
                    srv.create(make_pod("p1", scheduler_name="ksched"))
                    with anyio.fail_after(10):
                        while not srv.get("pods", "default", "p1")["spec"].get("nodeName"):
                            await anyio.sleep(0.02)
                    d.stop()
                    await anyio.to_thread.run_sync(sm.wait, "STOPPING=1")
            finally:
                await client.close()

    anyio.run(main)
    ready = next(m for _, m in sm.seen if m.startswith("READY=1"))
    assert ready == "READY=1\nSTATUS=Informers synced; scheduling for ksched"
    kinds = [m.split("\n")[0] for _, m in sm.seen]
    assert kinds.index("READY=1") < kinds.index("STOPPING=1")
    assert kinds.count("WATCHDOG=1") >= 2


def test_a_candidate_is_ready_when_synced_and_says_when_it_leads(
    abstract_socket: tuple[str, NotifySocket],
) -> None:
    """With leader election a standby is up (READY=1) once synced; STATUS= tells which."""
    address, sm = abstract_socket

    async def main() -> None:
        async with TestAPIServer() as srv:
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                cfg = _config(leaderElection={"leaderElect": True, "resourceName": "ksched"})
                async with SchedulerDaemon(
                    cfg, client=client, port=0, notifier=SdNotifier(address)
                ) as d:
                    await d.wait_leading(15)
                    await anyio.to_thread.run_sync(sm.wait, "STATUS=Leading")
            finally:
                await client.close()

    anyio.run(main)
    msgs = [m for _, m in sm.seen]
    assert msgs[0] == "READY=1\nSTATUS=Waiting for the lease kube-system/ksched"
    assert msgs[1] == "STATUS=Leading; scheduling for ksched"


@pytest.mark.parametrize("delay_cache", [False, True])
def test_a_standby_is_ready_while_another_instance_leads(
    abstract_socket: tuple[str, NotifySocket], delay_cache: bool
) -> None:
    """Another holder's lease is valid: this instance never leads here, yet systemd's start
    completes — after the sync, or at once with delayCacheUntilActive (which syncs only
    after winning)."""
    address, sm = abstract_socket
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {"name": "ksched", "namespace": "kube-system"},
                    "spec": {
                        "holderIdentity": "other-host",
                        "leaseDurationSeconds": 60,
                        "acquireTime": now,
                        "renewTime": now,
                    },
                }
            )
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                cfg = _config(
                    leaderElection={"leaderElect": True, "resourceName": "ksched"},
                    delayCacheUntilActive=delay_cache,
                )
                async with SchedulerDaemon(
                    cfg, client=client, port=0, notifier=SdNotifier(address)
                ) as d:
                    await anyio.to_thread.run_sync(sm.wait, "READY=1", 10.0)
                    assert not d.leading
                    assert d.synced is not delay_cache
            finally:
                await client.close()

    anyio.run(main)
    assert [m for _, m in sm.seen if m.startswith("READY")] == [
        "READY=1\nSTATUS=Waiting for the lease kube-system/ksched"
    ]
    assert not any(m.startswith("STATUS=Leading") for _, m in sm.seen)


def test_a_stuck_cycle_withholds_watchdog_pings(
    abstract_socket: tuple[str, NotifySocket], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cycle that never returns (say, an await without a timeout) stops the pings once it
    has run a watchdog interval, so systemd restarts the service."""
    address, sm = abstract_socket
    entered = anyio.Event()

    async def stuck(sched: Any, qpi: Any, tg: Any) -> None:
        entered.set()
        await anyio.sleep_forever()

    async def main() -> None:
        async with TestAPIServer() as srv:
            srv.create(make_node("n1"))
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                async with SchedulerDaemon(
                    _config(),
                    client=client,
                    port=0,
                    shutdown_timeout=0.2,
                    notifier=SdNotifier(address, watchdog=0.4),
                ) as d:
                    await d.wait_ready(10)
                    monkeypatch.setattr(loop_module, "schedule_entity", stuck)
                    srv.create(make_pod("p1", scheduler_name="ksched"))
                    with anyio.fail_after(10):
                        await entered.wait()
                    assert d.loop_healthy()  # a fresh cycle is progress
                    await anyio.sleep(0.5)
                    assert not d.loop_healthy()
                    sm.drain()
                    await anyio.sleep(0.6)  # three ping periods
                    assert [m for _, m in sm.drain() if m == "WATCHDOG=1"] == []
            finally:
                await client.close()

    anyio.run(main)


def test_a_loop_that_exited_on_its_own_is_unhealthy(
    abstract_socket: tuple[str, NotifySocket],
) -> None:
    address, sm = abstract_socket

    async def main() -> None:
        async with TestAPIServer() as srv:
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                async with SchedulerDaemon(
                    _config(), client=client, port=0, notifier=SdNotifier(address, watchdog=0.2)
                ) as d:
                    await d.wait_ready(10)
                    assert d.loop_healthy()
                    d.scheduler.queue.close()  # pop() returns None: the loop ends, unasked
                    with anyio.fail_after(5):
                        while d.loop_healthy():
                            await anyio.sleep(0.02)
                    assert dict(d.liveness_checks())["scheduler"] == "scheduling loop exited"
                    await anyio.sleep(0.15)
                    sm.drain()
                    await anyio.sleep(0.4)
                    assert [m for _, m in sm.drain() if m == "WATCHDOG=1"] == []
            finally:
                await client.close()

    anyio.run(main)


def test_watchdog_pid_of_another_process_disables_pings(
    abstract_socket: tuple[str, NotifySocket],
) -> None:
    address, sm = abstract_socket
    env = {"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"}

    async def main() -> None:
        async with TestAPIServer() as srv:
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                async with SchedulerDaemon(
                    _config(), client=client, port=0, notifier=SdNotifier.from_env(env)
                ) as d:
                    await d.wait_ready(10)
                    await anyio.to_thread.run_sync(sm.wait, "READY=1")
                    await anyio.sleep(0.3)
            finally:
                await client.close()

    anyio.run(main)
    sm.drain()
    assert [m for _, m in sm.seen if m == "WATCHDOG=1"] == []


# ---- `ksched run` as systemd starts it ------------------------------------------------------


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


@pytest.mark.e2e
def test_ksched_run_under_a_notify_socket(
    apiserver: TestAPIServer,
    apiserver_kubeconfig: Path,
    tmp_path: Path,
    abstract_socket: tuple[str, NotifySocket],
) -> None:
    """The process systemd would start: READY=1 once nodes and pods are listed (never
    before /readyz says 200), WATCHDOG=1 every half WATCHDOG_USEC while it schedules,
    STOPPING=1 on SIGTERM, then exit 0 — with MemoryDenyWriteExecute's restriction in force
    where the kernel offers it."""
    address, sm = abstract_socket
    apiserver.create(make_node("n1"))
    apiserver.faults.add_latency(0.5, verb="list", resource="nodes")
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
            }
        )
    )
    env = {
        **os.environ,
        "NOTIFY_SOCKET": address,
        "WATCHDOG_USEC": "400000",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("WATCHDOG_PID", None)
    argv = [
        sys.executable,
        "-m",
        "ksched",
        "run",
        "--config",
        str(cfg),
        "--kubeconfig",
        str(apiserver_kubeconfig),
        "--port",
        "0",
        "--secure-port",
        "0",
        "--log-format",
        "json",
    ]
    if mdwe_supported():  # as under the unit's MemoryDenyWriteExecute=yes
        argv = mdwe_argv(argv)
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        url = _wait_url(proc)
        t_ready, ready = sm.wait("READY=1", 30)
        assert _status(url + "/readyz") == 200
        assert ready.startswith("READY=1\nSTATUS=Informers synced")
        listed = {r.resource for r in apiserver.requests if r.verb == "list" and r.status == 200}
        assert {"nodes", "pods"} <= listed
        apiserver.create(make_pod("p1", scheduler_name="ksched"))
        deadline = time.monotonic() + 15
        while not apiserver.get("pods", "default", "p1")["spec"].get("nodeName"):
            assert time.monotonic() < deadline, "p1 was not bound"
            time.sleep(0.05)
        time.sleep(1.0)
        pings = [t for t, m in sm.drain() if m == "WATCHDOG=1"]
        assert len(pings) >= 3, sm.seen
        assert max(b - a for a, b in zip([t_ready, *pings], pings, strict=False)) < 0.4
        proc.send_signal(signal.SIGTERM)
        sm.wait("STOPPING=1", 10)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    kinds = [m.split("\n")[0] for _, m in sm.seen]
    assert kinds.count("READY=1") == 1
    assert kinds.index("READY=1") < kinds.index("STOPPING=1")


def _wait_url(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + 30
    for line in proc.stdout:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("event", entry.get("msg")) == "serving health, metrics and debug endpoints":
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep draining
            return str(entry["url"])
        assert time.monotonic() < deadline
    err = proc.stderr.read() if proc.stderr else ""
    raise AssertionError(f"ksched run exited with {proc.wait()}: {err}")
