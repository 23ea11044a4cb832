"""One log line per cause per interval: an unreachable or refusing API server must not
write a line per retry of every informer, forever."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["LogThrottle"]


class LogThrottle:
    """``allow(cause)`` is None while ``cause`` was logged less than ``interval`` seconds
    ago (the repeat is counted), else how many repeats were held back since."""

    def __init__(
        self, interval: float = 10.0, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval = interval
        self.clock = clock
        self._last: dict[str, tuple[float, int]] = {}

    def allow(self, cause: str) -> int | None:
        now = self.clock()
        last = self._last.get(cause)
        if last is not None and now - last[0] < self.interval:
            self._last[cause] = (last[0], last[1] + 1)
            return None
        if len(self._last) >= 256:  # many distinct causes: forget the old ones
            self._last.clear()
        self._last[cause] = (now, 0)
        return last[1] if last is not None else 0
