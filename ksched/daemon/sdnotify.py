"""sd_notify(3) for running under systemd with ``Type=notify`` (and ``WatchdogSec=``).

systemd passes the address of its notification socket in ``$NOTIFY_SOCKET``: a filesystem
path (``/run/systemd/notify``) or, with a leading ``@``, a name in the Linux abstract
namespace. A notification is one datagram of newline-separated ``VAR=value`` assignments
sent to it over an ``AF_UNIX``/``SOCK_DGRAM`` socket; nothing is ever read back.

``SchedulerDaemon`` sends

* ``READY=1`` once the informers have synced (what kube-scheduler waits for before its
  first cycle), so ``systemctl start`` returns — and units ordered ``After=ksched`` start —
  only when ksched can actually schedule;
* ``STOPPING=1`` when the graceful shutdown starts;
* ``WATCHDOG=1`` every half ``$WATCHDOG_USEC`` (set by ``WatchdogSec=``), but only while
  its health check passes: the scheduling loop is waiting (for the sync, for pods) or its
  current cycle is younger than the watchdog interval. A cycle stuck in an await, or an
  event loop blocked by a plugin, stops the pings and systemd restarts the service.

``$WATCHDOG_PID``, when set, names the process the watchdog is meant for; any other
process (a child that inherited the environment) treats the watchdog as disabled, as
``sd_watchdog_enabled(3)`` does. Without ``$NOTIFY_SOCKET`` every call is a no-op, so the
same code runs unchanged outside systemd.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable, Mapping

import anyio

from .. import logging as klog

__all__ = ["SdNotifier", "parse_notify_socket", "parse_watchdog_usec"]

log = klog.get_logger("ksched.daemon.sdnotify")


def parse_notify_socket(value: str | None) -> bytes | None:
    """``$NOTIFY_SOCKET`` as a ``sendto`` address, or None when unset or unusable.

    ``/path`` is a filesystem socket, ``@name`` an abstract one (a leading NUL byte on the
    wire). Relative paths and ``vsock:`` addresses (a VM's host manager) are not supported.
    """
    if not value:
        return None
    if value.startswith("/"):
        return os.fsencode(value)
    if value.startswith("@") and len(value) > 1:
        return b"\0" + os.fsencode(value[1:])
    return None


def parse_watchdog_usec(
    usec: str | None, watchdog_pid: str | None, pid: int | None = None
) -> float | None:
    """The watchdog interval in seconds from ``$WATCHDOG_USEC``/``$WATCHDOG_PID``, or None
    when the watchdog is off, malformed, or meant for another process."""
    if not usec:
        return None
    try:
        micros = int(usec)
    except ValueError:
        return None
    if micros <= 0:
        return None
    if watchdog_pid:
        try:
            target = int(watchdog_pid)
        except ValueError:
            return None
        if target != (os.getpid() if pid is None else pid):
            return None
    return micros / 1_000_000


class SdNotifier:
    """Sends sd_notify messages to ``address`` (see ``parse_notify_socket``); a notifier
    without an address does nothing. ``watchdog`` is the interval in seconds systemd
    expects a ``WATCHDOG=1`` within (None: no watchdog)."""

    def __init__(
        self, address: bytes | str | None = None, *, watchdog: float | None = None
    ) -> None:
        if isinstance(address, str):
            address = parse_notify_socket(address)
        self.address: bytes | None = address or None
        self.watchdog_interval: float | None = watchdog if watchdog and watchdog > 0 else None
        self._sock: socket.socket | None = None
        self._warned = False
        self.sent = 0

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, pid: int | None = None
    ) -> SdNotifier:
        """From ``$NOTIFY_SOCKET``, ``$WATCHDOG_USEC`` and ``$WATCHDOG_PID``."""
        env = os.environ if environ is None else environ
        raw = env.get("NOTIFY_SOCKET")
        address = parse_notify_socket(raw)
        if raw and address is None:
            log.warning(
                "NOTIFY_SOCKET is not a path or an abstract socket name; not notifying",
                notify_socket=raw,
            )
        watchdog = parse_watchdog_usec(env.get("WATCHDOG_USEC"), env.get("WATCHDOG_PID"), pid)
        return cls(address, watchdog=watchdog if address is not None else None)

    @classmethod
    def disabled(cls) -> SdNotifier:
        return cls(None)

    @property
    def enabled(self) -> bool:
        return self.address is not None

    # -- messages ---------------------------------------------------------------------------
    def notify(self, *assignments: str) -> bool:
        """Send one datagram of ``VAR=value`` lines; True if it was sent. Never raises:
        a service manager that went away must not take the scheduler down with it."""
        if self.address is None or not assignments:
            return False
        data = "\n".join(assignments).encode()
        for attempt in (1, 2):
            try:
                if self._sock is None:
                    self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                    self._sock.setblocking(False)  # never stall the event loop on it
                self._sock.sendto(data, self.address)
            except OSError as e:
                self.close()
                # ECONNREFUSED/ENOENT: the socket was re-created (daemon-reexec); retry once.
                if attempt == 1 and e.errno in (errno.ECONNREFUSED, errno.ENOENT):
                    continue
                if not self._warned:
                    self._warned = True
                    log.warning("sd_notify failed", error=str(e), message=data.decode())
                return False
            self.sent += 1
            return True
        return False  # pragma: no cover - the loop always returns

    def ready(self, status: str | None = None) -> bool:
        return self.notify("READY=1", *_status(status))

    def stopping(self, status: str | None = None) -> bool:
        return self.notify("STOPPING=1", *_status(status))

    def status(self, text: str) -> bool:
        return self.notify(*_status(text))

    def ping(self) -> bool:
        return self.notify("WATCHDOG=1")

    async def run_watchdog(self, healthy: Callable[[], bool]) -> None:
        """Ping every half watchdog interval while ``healthy()``; returns at once when
        there is no watchdog. Run it in a task group and cancel it on shutdown."""
        interval = self.watchdog_interval
        if interval is None or self.address is None:
            return
        skipped = False
        while True:
            ok = healthy()
            if ok:
                self.ping()
                if skipped:
                    log.info("scheduling loop healthy again: watchdog pings resumed")
            elif not skipped:
                log.warning(
                    "scheduling loop unhealthy: withholding watchdog pings",
                    watchdog_seconds=interval,
                )
            skipped = not ok
            await anyio.sleep(interval / 2)

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _status(text: str | None) -> tuple[str, ...]:
    # STATUS= is one line: newlines would start new assignments.
    return (f"STATUS={' '.join(text.split())}",) if text else ()
