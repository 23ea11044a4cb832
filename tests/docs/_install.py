"""Installing examples/plugin-package offline, as a user's ``pip install`` would
(``tests/_offline_install``, as ksched-contrib is)."""

from __future__ import annotations

from pathlib import Path

from .._offline_install import ROOT, Installed
from .._offline_install import install as _install

__all__ = ["DIST", "PACKAGE_DIR", "ROOT", "Installed", "install"]

PACKAGE_DIR = ROOT / "examples" / "plugin-package"
DIST = "ksched-nodecost"


def install(base: Path) -> Installed:
    return _install(PACKAGE_DIR, DIST, base)
