"""Installing examples/plugin-package offline, as a user's ``pip install`` would.

``pip install --no-deps --no-index --no-build-isolation --target DIR`` of a copy of the
source tree (nothing is written into the repository), with tests/contrib's pip call.
Where pip cannot build it offline (no ``wheel`` for this setuptools), the same files are
installed by hand: the package plus a ``.dist-info`` generated from the distribution's
pyproject.toml — METADATA and entry_points.txt are all ``importlib.metadata`` reads to
discover plugins. An installation already in the environment
(``pip install -e examples/plugin-package``) is used as is.
"""

from __future__ import annotations

import shutil
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ..contrib._install import _pip

__all__ = ["DIST", "PACKAGE_DIR", "Installed", "install"]

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIR = ROOT / "examples" / "plugin-package"
DIST = "ksched-nodecost"
_IGNORE = shutil.ignore_patterns(
    "__pycache__", "build", "*.egg-info", ".pytest_cache", ".mypy_cache", ".ruff_cache"
)


@dataclass(frozen=True)
class Installed:
    path: Path | None  # put on sys.path; None: the environment already has it
    how: str  # "environment", "pip" or "dist-info"
    pip_error: str = ""


def _project() -> dict[str, Any]:
    with (PACKAGE_DIR / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)


def _by_hand(src: Path, target: Path) -> None:
    data = _project()
    project = data["project"]
    name, version = project["name"], project["version"]
    packages = data["tool"]["setuptools"]["packages"]
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


def install(base: Path) -> Installed:
    try:
        metadata.distribution(DIST)
        return Installed(None, "environment")
    except metadata.PackageNotFoundError:
        pass
    src, target = base / "src", base / "target"
    shutil.copytree(PACKAGE_DIR, src, ignore=_IGNORE)
    proc = _pip(src, target)  # the same offline pip install as ksched-contrib's
    if proc.returncode == 0:
        return Installed(target, "pip")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    _by_hand(src, target)
    return Installed(target, "dist-info", proc.stderr.strip()[-400:])
