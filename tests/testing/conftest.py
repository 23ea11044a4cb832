"""Fixtures for the ksched.testing tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ksched.testing import TestAPIServer

from ._http import Client


@pytest.fixture
def http(apiserver: TestAPIServer) -> Iterator[Client]:
    client = Client(apiserver.url)
    yield client
    client.close()
