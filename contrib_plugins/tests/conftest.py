"""Unit tests import ksched_contrib from this source tree unless it is installed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("ksched_contrib") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
