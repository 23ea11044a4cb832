"""Installing ./contrib_plugins for the main suite, as a user would.

``pip install --no-deps --no-index --no-build-isolation --target DIR`` of a copy of the
source tree (so no build/ or egg-info lands in the repository). pip needs setuptools and
wheel to build it; where wheel is missing (an offline image), the fallback installs the
same files by hand: the package plus a ``.dist-info`` whose METADATA and entry_points.txt
are generated from the distribution's own pyproject.toml, which is exactly what
``importlib.metadata`` reads at discovery time. If ksched-contrib is already installed in
the environment, that installation is used as is.
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

__all__ = ["CONTRIB_DIR", "DIST", "Installed", "install"]

ROOT = Path(__file__).resolve().parents[2]
CONTRIB_DIR = ROOT / "contrib_plugins"
DIST = "ksched-contrib"


@dataclass(frozen=True)
class Installed:
    # Directory to put on sys.path; None when the environment already has the distribution.
    path: Path | None
    how: str  # "environment", "pip" or "dist-info"
    pip_error: str = ""


def installed_in_environment() -> bool:
    try:
        metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return False
    return True


def _pyproject() -> dict[str, object]:
    with (CONTRIB_DIR / "pyproject.toml").open("rb") as f:
        return tomllib.load(f)["project"]  # type: ignore[no-any-return]


def _pip(src: Path, target: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PIP_ROOT_USER_ACTION": "ignore",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            "--target",
            str(target),
            str(src),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _by_hand(target: Path) -> None:
    project = _pyproject()
    name, version = str(project["name"]), str(project["version"])
    shutil.copytree(
        CONTRIB_DIR / "ksched_contrib",
        target / "ksched_contrib",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    info = target / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    groups = project.get("entry-points", {})
    assert isinstance(groups, dict)
    text = "".join(
        f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
        for g, eps in groups.items()
    )
    (info / "entry_points.txt").write_text(text)
    (info / "INSTALLER").write_text("ksched-tests\n")


def install(base: Path) -> Installed:
    if installed_in_environment():
        return Installed(None, "environment")
    src, target = base / "src", base / "target"
    shutil.copytree(
        CONTRIB_DIR,
        src,
        ignore=shutil.ignore_patterns(
            "__pycache__", "build", "*.egg-info", "tests", ".pytest_cache", ".mypy_cache"
        ),
    )
    proc = _pip(src, target)
    if proc.returncode == 0:
        return Installed(target, "pip")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    _by_hand(target)
    return Installed(target, "dist-info", proc.stderr.strip()[-400:])
