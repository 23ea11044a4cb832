"""``.ci/run`` on a fresh machine installs Chromium (for the report's browser test) before
it runs the suite, and only when it is missing."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ._install import ROOT


def stub(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)


def run_ci(tmp_path: Path, *, have_chromium: bool, uid: int = 0) -> tuple[int, list[str]]:
    """.ci/run with every outside command a stub that logs its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    for name in ("apt-get", "pip", "python"):
        stub(bin_dir, name, f'echo "{name} $*" >> {log}')
    stub(bin_dir, "id", f"echo {uid}")
    if have_chromium:
        stub(bin_dir, "chromium", "exit 0")
    dirname = shutil.which("dirname")
    assert dirname is not None
    (bin_dir / "dirname").symlink_to(dirname)
    bash = shutil.which("bash")
    assert bash is not None
    proc = subprocess.run(
        [bash, str(ROOT / ".ci" / "run")],
        env={"PATH": str(bin_dir), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return proc.returncode, calls


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_fresh_machine_gets_chromium_before_the_tests(tmp_path: Path) -> None:
    rc, calls = run_ci(tmp_path, have_chromium=False)
    assert rc == 0
    apt = [c for c in calls if c.startswith("apt-get")]
    assert apt == ["apt-get update -qq", "apt-get install -y -qq chromium"]
    assert calls.index(apt[-1]) < calls.index("python -m pytest")


@pytest.mark.skipif(os.name != "posix", reason="a bash script")
def test_chromium_present_means_no_apt(tmp_path: Path) -> None:
    rc, calls = run_ci(tmp_path, have_chromium=True)
    assert rc == 0
    assert not [c for c in calls if c.startswith("apt-get")]
    assert "python -m pytest" in calls
