"""Injectable time: the real monotonic clock, or a virtual one for tests and simulate.

Everything in the scheduler that waits (backoff, Permit timeouts, assumed-pod
expiry) asks a ``Clock``, so a ``FakeClock`` makes those paths deterministic and
instant: time only moves when the owner calls ``advance``/``advance_to_next``.
"""

from __future__ import annotations

import datetime as dt
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol

import anyio

__all__ = ["Clock", "FakeClock", "RealClock", "rfc3339", "wall_clock"]


class Clock(Protocol):
    def now(self) -> float: ...
    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(max(0.0, seconds))


class FakeClock:
    """Virtual time; sleepers wake only when time is advanced past their deadline."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._seq = itertools.count()
        self._sleepers: list[tuple[float, int, anyio.Event]] = []

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        ev = anyio.Event()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), ev))
        try:
            await ev.wait()
        finally:
            # A cancelled sleeper (a Permit timer after an allow) must not leave a
            # phantom deadline behind for next_deadline()/advance_to_next().
            ev.set()

    def next_deadline(self) -> float | None:
        while self._sleepers and self._sleepers[0][2].is_set():
            heapq.heappop(self._sleepers)
        return self._sleepers[0][0] if self._sleepers else None

    def advance(self, seconds: float) -> None:
        self.set(self._now + seconds)

    def set(self, t: float) -> None:
        self._now = max(self._now, t)
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, ev = heapq.heappop(self._sleepers)
            ev.set()

    def advance_to_next(self) -> bool:
        """Jump to the earliest sleeper's deadline; False when nobody sleeps."""
        t = self.next_deadline()
        if t is None:
            return False
        self.set(t)
        return True

    @property
    def sleeping(self) -> int:
        return sum(1 for s in self._sleepers if not s[2].is_set())


def rfc3339(t: dt.datetime | None = None) -> str:
    """metav1.Time's JSON form (RFC 3339, whole seconds, UTC) of ``t``, or of the wall
    clock now: API timestamps are wall time, unlike the monotonic ``Clock``."""
    t = t or dt.datetime.now(dt.UTC)
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def wall_clock(clock: Clock) -> Callable[[float | None], str | None]:
    """A formatter of ``clock`` times as the wall-clock moments they are (or were), in
    RFC 3339 (UTC, microseconds), for people reading ``/debug``: a ``Clock`` time is
    monotonic (or virtual) seconds, meaningless outside the process. None stays None."""
    offset = time.time() - clock.now()

    def fmt(t: float | None) -> str | None:
        if t is None:
            return None
        return dt.datetime.fromtimestamp(t + offset, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    return fmt
