"""Deadlines on plugin code: a plugin that hangs fails one pod's attempt, not the scheduler.

kube-scheduler runs plugins in goroutines it never abandons, so a stuck plugin there
stalls its cycle too; ksched goes further because third-party plugins are the point.

* Synchronous extension points (PreFilter through Permit, Unreserve, the extender
  server's verbs, /debug/explain) run under a ``SyncDeadline``: an interval timer
  (``ITIMER_REAL``, so a plugin blocked in a syscall is interrupted as well as one
  spinning) whose SIGALRM handler raises ``PluginTimeout`` into the running code once
  the region armed then is past due. It is
  a ``BaseException`` so that no ``except Exception`` on the way (the framework turns a
  raising plugin into an Error status and carries on) swallows it and lets the cycle
  call the stuck plugin again; the caller that armed the deadline catches it. Python
  delivers signals to the main thread only, so elsewhere (an embedding program running
  the scheduler in a thread) the deadline is off, as it is when something else already
  owns SIGALRM (pytest-timeout, say) or takes it over later (at most the one signal
  already under way then reaches that handler).
* Async extension points (PreBind, Bind, PostBind) are bounded with the event loop's
  own timeouts by the binding cycle; ``culprit`` names the plugin for both.
"""

from __future__ import annotations

import atexit
import signal
import threading
import time
from collections.abc import Callable, Iterable
from types import FrameType, TracebackType
from typing import Any, TypeVar

__all__ = [
    "DEFAULT_BINDING_TIMEOUT",
    "DEFAULT_PLUGIN_TIMEOUT",
    "PluginTimeout",
    "SyncDeadline",
    "culprit",
    "culprit_in_traceback",
    "format_seconds",
]

# Synchronous plugin code of one scheduling cycle (or one extender request), seconds:
# below the systemd unit's WatchdogSec (30 s), so a hung plugin fails its pod before
# systemd would restart the whole scheduler for a stalled loop.
DEFAULT_PLUGIN_TIMEOUT = 15.0
# PreBind+Bind, and PostBind, of one binding cycle: VolumeBinding's bindTimeoutSeconds.
DEFAULT_BINDING_TIMEOUT = 600.0

_T = TypeVar("_T")
_MAIN = threading.main_thread().ident
_get_ident = threading.get_ident
_monotonic = time.monotonic


class PluginTimeout(BaseException):
    """Raised into synchronous plugin code that ran past its deadline."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def format_seconds(seconds: float) -> str:
    return f"{seconds:g}s"


PluginIndex = Callable[[], dict[int, str]]


def _plugin_frame(frames: Iterable[FrameType], plugins: dict[int, str]) -> str | None:
    """``"Name" (method)`` of the outermost frame running a method of a known plugin:
    where the framework called in, so the method names the extension point."""
    for f in frames:  # outermost first
        me = f.f_locals.get("self")
        if me is not None and id(me) in plugins:
            return f'"{plugins[id(me)]}" ({f.f_code.co_name})'
    return None


def culprit(frame: FrameType | None, plugins: dict[int, str]) -> str | None:
    """The plugin whose code ``frame`` (or a caller of it) belongs to."""
    chain: list[FrameType] = []
    while frame is not None:
        chain.append(frame)
        frame = frame.f_back
    return _plugin_frame(reversed(chain), plugins)


def culprit_in_traceback(exc: BaseException | None, plugins: dict[int, str]) -> str | None:
    """The plugin frame in ``exc``'s traceback or those it was raised from (a timeout's
    own traceback ends where the cancellation was thrown in)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        frames: list[FrameType] = []
        tb: TracebackType | None = exc.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        got = _plugin_frame(frames, plugins)
        if got is not None:
            return got
        exc = exc.__cause__ or exc.__context__
    return None


class _Alarm:
    """The process's SIGALRM handler, shared by every deadline; at most one is armed.

    Arming costs no system call in the steady state: a region records when it falls due,
    and the interval timer, once set, is left running. When it fires it re-arms itself
    for the region armed now if that one is not due yet, and stops when none is, so an
    idle scheduler gets at most one stray SIGALRM (which Python's calls retry on).
    """

    usable: bool | None = None
    armed: SyncDeadline | None = None
    due = 0.0  # monotonic time the armed region falls due
    fires_at = 0.0  # monotonic time the timer fires; 0.0 when stopped

    @classmethod
    def install(cls) -> bool:
        """Whether a deadline can be armed from here: the signal goes to the main thread,
        so only code running there can be interrupted by it."""
        if threading.get_ident() != _MAIN:
            return False
        if cls.usable is None:
            current = signal.getsignal(signal.SIGALRM)
            # ours already (given back by whoever borrowed SIGALRM): usable as it is
            mine = current is cls.handler
            cls.usable = mine or current in (signal.SIG_DFL, signal.SIG_IGN, None)
            if cls.usable and not mine:
                signal.signal(signal.SIGALRM, cls.handler)
                # Interpreter shutdown puts SIGALRM back to its default action (terminate):
                # a timer still running then would kill an exiting process with -14.
                atexit.register(cls.stop)
        return cls.usable

    @staticmethod
    def stop() -> None:
        """Stop the interval timer (at exit: nothing is left to interrupt)."""
        _Alarm.armed = None
        _Alarm.fires_at = 0.0
        signal.setitimer(signal.ITIMER_REAL, 0)

    @staticmethod
    def start(seconds: float) -> bool:
        """Set the timer; False (and deadlines off from now on) when another handler has
        taken SIGALRM since, which must not receive signals it did not ask for."""
        if signal.getsignal(signal.SIGALRM) is not _Alarm.handler:
            _Alarm.usable = False
            return False
        _Alarm.fires_at = time.monotonic() + seconds
        signal.setitimer(signal.ITIMER_REAL, seconds)
        return True

    @staticmethod
    def handler(signum: int, frame: FrameType | None) -> None:
        _Alarm.fires_at = 0.0
        d = _Alarm.armed
        if d is None or frame is None or frame.f_code in _EXIT_CODES:
            return  # nothing to interrupt (or the region is ending): stay stopped
        left = _Alarm.due - time.monotonic()
        if left > 0:  # set for an earlier region: wait for this one's turn
            _Alarm.start(left)
            return
        _Alarm.armed = None
        raise PluginTimeout(d.message(frame))


class SyncDeadline:
    """``with deadline:`` bounds the synchronous code inside by ``seconds``.

    Regions do not nest (an inner ``with`` while one is armed runs unbounded by its own
    timer but stays under the outer one). ``seconds`` None or <= 0 disables it.
    """

    def __init__(self, seconds: float | None, plugins: PluginIndex | None = None) -> None:
        self.seconds = seconds if seconds is not None and seconds > 0 else None
        self._plugins = plugins
        # Per ``with`` (innermost last): whether that region armed the timer.
        self._regions: list[bool] = []

    @property
    def enabled(self) -> bool:
        return self.seconds is not None and _Alarm.install()

    def message(self, frame: FrameType | None) -> str:
        assert self.seconds is not None
        who = culprit(frame, self._plugins()) if self._plugins is not None else None
        what = f"plugin {who}" if who else "plugin code"
        return f"{what} did not return within {format_seconds(self.seconds)}"

    def __enter__(self) -> SyncDeadline:
        seconds = self.seconds
        if (
            seconds is None
            or _Alarm.armed is not None
            or _get_ident() != _MAIN
            or not (_Alarm.usable or _Alarm.install())
        ):
            self._regions.append(False)
            return self
        now = _monotonic()
        due = now + seconds
        _Alarm.due = due
        _Alarm.armed = self
        fires = _Alarm.fires_at
        # Not running (or overdue: its signal went elsewhere), or set for too late.
        if (fires < now or fires > due) and not _Alarm.start(seconds):
            _Alarm.armed = None
            self._regions.append(False)
            return self
        self._regions.append(True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._regions.pop():
            _Alarm.armed = None

    def call(self, fn: Callable[..., _T], *args: Any) -> _T:
        with self:
            return fn(*args)


_EXIT_CODES = frozenset({SyncDeadline.__exit__.__code__})
