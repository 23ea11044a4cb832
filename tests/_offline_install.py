"""Installing a plugin distribution offline for the tests, as a user's ``pip install`` would.

``pip install --no-deps --no-index --no-build-isolation --target DIR`` of a copy of the
source tree (nothing is written into the repository). Where pip cannot build it offline
(no ``wheel`` for this setuptools), the same files are installed by hand: the packages plus
a ``.dist-info`` generated from the distribution's pyproject.toml — METADATA and
entry_points.txt are all ``importlib.metadata`` reads to discover plugins. A distribution
already installed in the environment (``pip install -e ...``) is used as is.

The one home of this for ksched-contrib (tests/contrib), the example package (tests/docs)
and the registry's own pip test (tests/framework).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["ROOT", "Installed", "install", "pip_install"]

ROOT = Path(__file__).resolve().parents[1]
_IGNORE = shutil.ignore_patterns(
    "__pycache__", "build", "*.egg-info", ".pytest_cache", ".mypy_cache", ".ruff_cache"
)


@dataclass(frozen=True)
class Installed:
    path: Path | None  # put on sys.path; None: the environment already has it
    how: str  # "environment", "pip" or "dist-info"
    pip_error: str = ""


def pip_install(src: Path, target: Path) -> subprocess.CompletedProcess[str]:
    """pip, offline and quiet, of the source tree ``src`` into ``target``."""
    env = {
        **os.environ,
        "PIP_ROOT_USER_ACTION": "ignore",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
    }
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index"]
    cmd += ["--no-build-isolation", "--target", str(target), str(src)]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)


def _packages(data: dict[str, Any], src: Path) -> list[str]:
    """``tool.setuptools.packages`` when listed, else the top-level packages in ``src``
    (``packages.find`` include patterns) that have an ``__init__.py``."""
    setuptools = data.get("tool", {}).get("setuptools", {})
    listed = setuptools.get("packages")
    if isinstance(listed, list):
        return [str(p) for p in listed]
    include = listed.get("find", {}).get("include", ["*"]) if isinstance(listed, dict) else ["*"]
    return sorted(
        p.name
        for p in src.iterdir()
        if (p / "__init__.py").exists() and any(p.match(pat.rstrip("*") + "*") for pat in include)
    )


def _by_hand(src: Path, target: Path) -> None:
    with (src / "pyproject.toml").open("rb") as f:
        data = tomllib.load(f)
    project = data["project"]
    name, version = project["name"], project["version"]
    packages = _packages(data, src)
    for pkg in packages:
        shutil.copytree(src / pkg, target / pkg, ignore=_IGNORE)
    info = target / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    requires = "".join(f"Requires-Dist: {r}\n" for r in project.get("dependencies", []))
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires}"
    )
    groups = project.get("entry-points", {})
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
            for g, eps in groups.items()
        )
    )
    (info / "top_level.txt").write_text("".join(f"{p}\n" for p in packages))
    (info / "INSTALLER").write_text("ksched-tests\n")


def install(package_dir: Path, dist: str, base: Path) -> Installed:
    """The distribution ``dist`` whose source tree is ``package_dir``, installed under
    ``base`` (or the environment's installation)."""
    try:
        metadata.distribution(dist)
        return Installed(None, "environment")
    except metadata.PackageNotFoundError:
        pass
    src, target = base / "src", base / "target"
    shutil.copytree(package_dir, src, ignore=_IGNORE)
    proc = pip_install(src, target)
    if proc.returncode == 0:
        return Installed(target, "pip")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    _by_hand(src, target)
    return Installed(target, "dist-info", proc.stderr.strip()[-400:])
