"""FakeClock: sleepers wake only when virtual time passes their deadline; a cancelled
sleeper leaves no phantom deadline behind (drivers jump time to next_deadline())."""

from __future__ import annotations

import anyio
import pytest

from ksched.util.clock import FakeClock

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_sleepers_wake_in_deadline_order_and_cancelled_ones_vanish() -> None:
    clock = FakeClock()
    woke: list[float] = []

    async def sleeper(d: float) -> None:
        await clock.sleep(d)
        woke.append(clock.now())

    async with anyio.create_task_group() as tg:
        tg.start_soon(sleeper, 5.0)
        tg.start_soon(sleeper, 2.0)
        async with anyio.create_task_group() as inner:
            inner.start_soon(sleeper, 1.5)  # a Permit timer whose pod got allowed
            await anyio.wait_all_tasks_blocked()
            assert clock.next_deadline() == 1.5 and clock.sleeping == 3
            inner.cancel_scope.cancel()
        assert clock.next_deadline() == 2.0 and clock.sleeping == 2
        clock.advance(1.0)
        await anyio.wait_all_tasks_blocked()
        assert woke == []
        while clock.advance_to_next():
            await anyio.wait_all_tasks_blocked()
    assert woke == [2.0, 5.0]
    assert clock.next_deadline() is None and clock.sleeping == 0
