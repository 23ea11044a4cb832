"""Fixtures: ksched-contrib installed once per session, importable per test."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator

import pytest

from ._install import Installed, install


@pytest.fixture(scope="session")
def contrib_install(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return install(tmp_path_factory.mktemp("ksched-contrib"))


def _contrib_modules() -> list[str]:
    return [m for m in sys.modules if m.split(".")[0] == "ksched_contrib"]


@pytest.fixture
def contrib(contrib_install: Installed, monkeypatch: pytest.MonkeyPatch) -> Iterator[Installed]:
    """ksched-contrib discoverable through entry points for one test, then forgotten again
    (so tests elsewhere that list plugins never see it). Copies imported earlier (say, from
    the source tree by the contrib unit tests) are set aside so the installed one loads."""
    saved = {m: sys.modules.pop(m) for m in _contrib_modules()}
    if contrib_install.path is not None:
        monkeypatch.syspath_prepend(str(contrib_install.path))
    importlib.invalidate_caches()
    yield contrib_install
    for m in _contrib_modules():
        del sys.modules[m]
    sys.modules.update(saved)
    importlib.invalidate_caches()
