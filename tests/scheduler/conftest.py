"""Fixtures of the scheduler tests: asyncio only, logs captured."""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def logs() -> Iterator[list[MutableMapping[str, Any]]]:
    """Capture the scheduler's logs (and never write them to a stream another test closed)."""
    with structlog.testing.capture_logs() as entries:
        yield entries
