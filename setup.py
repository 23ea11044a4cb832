"""Build hook for the opt-in compiled build; pyproject.toml holds the metadata.

``KSCHED_COMPILE=1 pip wheel --no-deps -w dist/ .`` compiles the modules listed in
ksched/_compiled.py with mypyc (which ships with mypy) into a wheel for this platform.
Without the variable, every install (editable, sdist, wheel) is pure Python.
"""

import os
import runpy
from pathlib import Path

from setuptools import setup

ext_modules = []
if os.environ.get("KSCHED_COMPILE") == "1":
    from mypyc.build import mypycify

    listed = runpy.run_path(str(Path(__file__).parent / "ksched" / "_compiled.py"))["MODULES"]
    paths = [m.replace(".", "/") + ".py" for m in listed]
    ext_modules = mypycify(["--config-file=pyproject.toml", *paths], opt_level="3")

setup(ext_modules=ext_modules)
