"""Child processes that never outlive their owner: a process group each, killed on every
exit path, and (on Linux) killed by the kernel when the owning process dies."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path


class ControlPlaneError(RuntimeError):
    """A component failed to start or died; the message names it and shows its last log
    lines."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    os.setpgrp()
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def child_setup(cpus: Collection[int] | None) -> Callable[[], None]:
    """The ``preexec_fn`` of a component: dies with its parent, and runs on ``cpus`` only
    when given (every thread it starts inherits them)."""
    if not cpus:
        return _die_with_parent
    pinned = set(cpus)

    def setup() -> None:  # pragma: no cover - runs in the child before exec
        _die_with_parent()
        os.sched_setaffinity(0, pinned)

    return setup


def pin_process(pid: int, cpus: Collection[int]) -> None:
    """Every thread of ``pid`` onto ``cpus`` (Linux sets affinity per thread)."""
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = [pid]
    for tid in tids:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, set(cpus))


class Component:
    """One control-plane binary with its log file; ``cpus``: the CPUs it may run on."""

    def __init__(
        self, name: str, argv: Sequence[str], log: Path, cpus: Collection[int] | None = None
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.cpus = cpus
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as fh:
            # PR_SET_PDEATHSIG fires when the *thread* that forked exits; callers start
            # components from a thread that lives as long as the control plane.
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                preexec_fn=child_setup(self.cpus),
            )

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 25) -> str:
        try:
            text = self.log.read_bytes()[-16384:].decode(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def failure(self, what: str) -> ControlPlaneError:
        rc = None if self.proc is None else self.proc.poll()
        state = f"exited with {rc}" if rc is not None else "still running"
        return ControlPlaneError(
            f"{self.name}: {what} ({state}; log {self.log}); last lines:\n{self.tail()}"
        )

    def check_alive(self, what: str) -> None:
        if not self.running():
            raise self.failure(what)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to the whole group, SIGKILL after ``timeout``; idempotent."""
        proc = self.proc
        if proc is None:
            return
        for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # anything the component left in its group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def kill(self) -> None:
        """kill -9, as a crash would."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)


def wait_until(check: object, timeout: float, component: Component, what: str) -> None:
    """Poll ``check()`` (truthy = done) while ``component`` lives."""
    deadline = time.monotonic() + timeout
    while True:
        component.check_alive(f"died before {what}")
        try:
            if check():  # type: ignore[operator]
                return
        except Exception:
            pass
        if time.monotonic() > deadline:
            raise component.failure(f"not {what} after {timeout:.0f}s")
        time.sleep(0.05)
