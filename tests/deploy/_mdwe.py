"""Running a command the way systemd's ``MemoryDenyWriteExecute=yes`` would.

On Linux 6.3+ ``prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN)`` makes the kernel refuse
writable+executable mappings and making writable memory executable — the property systemd
enforces with a seccomp filter for the unit. The setting survives ``execve``, so a small
wrapper sets it and then execs the real command.
"""

from __future__ import annotations

import subprocess
import sys

__all__ = ["mdwe_argv", "mdwe_supported"]

PR_SET_MDWE, PR_GET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 66, 1
_WRAPPER = f"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if (libc.prctl({PR_SET_MDWE}, {PR_MDWE_REFUSE_EXEC_GAIN}, 0, 0, 0) != 0
        or libc.prctl({PR_GET_MDWE}, 0, 0, 0, 0) != {PR_MDWE_REFUSE_EXEC_GAIN}):
    sys.exit(77)
os.execv(sys.argv[1], sys.argv[1:])
"""
_supported: bool | None = None


def mdwe_supported() -> bool:
    """Probed once, in a child, so the test process itself stays unaffected."""
    global _supported
    if _supported is None:
        _supported = (
            sys.platform.startswith("linux")
            and subprocess.run(
                [sys.executable, "-c", _WRAPPER, sys.executable, "-c", "pass"],
                capture_output=True,
                timeout=60,
                check=False,
            ).returncode
            == 0
        )
    return _supported


def mdwe_argv(argv: list[str]) -> list[str]:
    """``argv`` run with MDWE in force (only call when ``mdwe_supported()``)."""
    return [sys.executable, "-c", _WRAPPER, *argv]
