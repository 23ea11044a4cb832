"""Fixtures: the example plugin distribution installed once per session, discoverable
(through its entry point) only inside the tests that ask for it."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator

import pytest

from ._install import Installed, install


@pytest.fixture(scope="session")
def nodecost_install(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install(tmp_path_factory.mktemp("ksched-nodecost"))


def _modules() -> list[str]:
    return [m for m in sys.modules if m.split(".")[0] == "ksched_nodecost"]


@pytest.fixture
def nodecost(nodecost_install: Installed, monkeypatch: pytest.MonkeyPatch) -> Iterator[Installed]:
    saved = {m: sys.modules.pop(m) for m in _modules()}
    if nodecost_install.path is not None:
        monkeypatch.syspath_prepend(str(nodecost_install.path))
    importlib.invalidate_caches()
    yield nodecost_install
    for m in _modules():
        del sys.modules[m]
    sys.modules.update(saved)
    importlib.invalidate_caches()
