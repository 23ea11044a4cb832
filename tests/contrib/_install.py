"""Installing ./contrib_plugins for the main suite, as a user would (``tests/_offline_install``:
an offline pip install of a copy of the source tree, or the same files by hand)."""

from __future__ import annotations

from pathlib import Path

from .._offline_install import ROOT, Installed
from .._offline_install import install as _install

__all__ = ["CONTRIB_DIR", "DIST", "ROOT", "Installed", "install"]

CONTRIB_DIR = ROOT / "contrib_plugins"
DIST = "ksched-contrib"


def install(base: Path) -> Installed:
    return _install(CONTRIB_DIR, DIST, base)
