"""pytest fixtures for the test API server.

Enable with `pytest_plugins = ["ksched.testing.pytest_plugin"]` in a conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .apiserver import TestAPIServer


@pytest.fixture
def apiserver() -> Iterator[TestAPIServer]:
    """A started server on a background thread, so sync, anyio and subprocess clients can all
    use it; function-scoped, so every test starts from the default namespaces only."""
    with TestAPIServer(bookmark_interval=1.0).run_in_thread() as srv:
        yield srv


@pytest.fixture
def apiserver_kubeconfig(apiserver: TestAPIServer, tmp_path: Path) -> Path:
    """Path of a kubeconfig pointing at `apiserver`."""
    return apiserver.write_kubeconfig(tmp_path / "kubeconfig")
