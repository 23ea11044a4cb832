"""pytest fixtures for the test API server and the real control plane.

Enable with `pytest_plugins = ["ksched.testing.pytest_plugin"]` in a conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .apiserver import TestAPIServer
from .controlplane import ControlPlane


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


@pytest.fixture(scope="session")
def controlplane() -> Iterator[ControlPlane]:
    """The real etcd + kube-apiserver (built from Go modules on first use, then cached; see
    docs/testing.md), shared by the session: tests isolate themselves by namespace, by
    run-unique node names and labels, and by schedulerName."""
    with ControlPlane() as cp:
        yield cp


@pytest.fixture
def controlplane_kubeconfig(controlplane: ControlPlane) -> Path:
    """An admin (system:masters) kubeconfig for ``controlplane``."""
    return controlplane.admin_kubeconfig
