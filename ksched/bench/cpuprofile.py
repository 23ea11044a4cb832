"""``python -m ksched.bench.cpuprofile OUT ARGS...``: ``ksched ARGS`` under cProfile, timed
by the process's CPU clock, written to ``OUT`` when it exits.

``KSCHED_BENCH_PROFILE`` runs the bench's daemon this way. On a machine shared with other
work a wall-clock profile charges every preemption to whatever function was running, and
the idle waits in ``epoll`` to the loop; CPU time counts only the work done.
"""

from __future__ import annotations

import cProfile
import sys
import time


def main(argv: list[str]) -> int:
    out, args = argv[0], argv[1:]
    from ..cli import main as ksched_main

    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    try:
        return ksched_main(args)
    finally:
        profiler.disable()
        profiler.dump_stats(out)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
