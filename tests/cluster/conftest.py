"""Shared helpers for the cluster tests: an APIClient on the test API server, polling."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import anyio
import pytest

from ksched.cluster import APIClient


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # aiohttp needs asyncio


@pytest.fixture
async def client(apiserver_kubeconfig: Path) -> AsyncIterator[APIClient]:
    async with await APIClient.from_kubeconfig(apiserver_kubeconfig, qps=0) as c:
        yield c


async def eventually(pred: Callable[[], object], timeout: float = 5.0, what: str = "") -> None:
    """Poll ``pred`` until it is truthy (the server runs on another thread)."""
    try:
        with anyio.fail_after(timeout):
            while not pred():
                await anyio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what or pred}") from None
