"""Driving a coroutine synchronously when it has nothing to wait for."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

_T = TypeVar("_T")


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion without an event loop; RuntimeError if it suspends.

    One copy of code that may await I/O (extenders) serves both paths: when nothing in
    it awaits, the hot path stays synchronous (no event-loop round trip per call).
    """
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a coroutine run synchronously awaited I/O")
