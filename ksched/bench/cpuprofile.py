"""``python -m ksched.bench.cpuprofile OUT ARGS...``: ``ksched ARGS`` under cProfile, timed
by the process's CPU clock, written to ``OUT`` when it exits.

``KSCHED_BENCH_PROFILE`` runs the bench's daemon this way. On a machine shared with other
work a wall-clock profile charges every preemption to whatever function was running, and
the idle waits in ``epoll`` to the loop; CPU time counts only the work done.
"""

from __future__ import annotations

import cProfile
import runpy
import sys
import time


def main(argv: list[str]) -> int:
    """Run ``ksched`` as ``python -m ksched`` would (the CLI is the bench's caller, so it
    is not imported from here); its exit code."""
    out, args = argv[0], argv[1:]
    saved = sys.argv
    sys.argv = ["ksched", *args]
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    try:
        runpy.run_module("ksched", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code
    else:
        code = 0
    finally:
        profiler.disable()
        profiler.dump_stats(out)
        sys.argv = saved
    return code if isinstance(code, int) else (0 if code is None else 1)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
