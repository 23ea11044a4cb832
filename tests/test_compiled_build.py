"""The opt-in compiled build (setup.py, ``KSCHED_COMPILE=1``): its one module list names
real modules, and ``ksched`` tells which build runs. The compiled wheel runs the unit tests
in CI (.ci/run); these checks hold in both builds."""

from __future__ import annotations

import importlib
import runpy
from pathlib import Path

import ksched
from ksched._compiled import MODULES

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(ksched.__file__).parent  # the installed build's files when run against a wheel


def test_the_list_names_existing_modules_of_ksched_once() -> None:
    assert len(set(MODULES)) == len(MODULES)
    for name in MODULES:
        assert name.startswith("ksched."), name
        assert (PACKAGE.parent / (name.replace(".", "/") + ".py")).is_file(), name
    # plugins subclass these; the list and its runtime shim must stay importable as Python
    for plain in ("ksched.framework.interface", "ksched._compiled", "ksched.util.native"):
        assert plain not in MODULES


def test_setup_compiles_the_listed_modules() -> None:
    """setup.py reads the list from ksched/_compiled.py without importing ksched."""
    assert runpy.run_path(str(PACKAGE / "_compiled.py"))["MODULES"] == MODULES
    assert "_compiled.py" in (ROOT / "setup.py").read_text()


def test_compiled_is_true_exactly_when_every_listed_module_is_an_extension() -> None:
    """A partly compiled install (a stale .so beside a newer list) would show here."""
    kinds = {not (importlib.import_module(m).__file__ or "").endswith(".py") for m in MODULES}
    assert kinds == {ksched.COMPILED}
