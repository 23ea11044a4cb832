"""Where ksched's CPU goes on the real API server, from a py-spy sample of the daemon.

    KSCHED_BENCH_PYSPY=/tmp/spy python -m ksched bench --apiserver real \
        --workload SchedulingBasic
    python bench/pyspy_split.py /tmp/spy/SchedulingBasic.txt --cpu-s 1.7 --pods 1000

The file holds py-spy's collapsed stacks (``--format raw``: ``frame;frame;... count``,
root first), sampled from the moment ksched was ready to the end of the run. Each
sample goes to the first category below whose frames it contains, except logging and
metrics, which get a sample only when their own code is the innermost ksched code
running (not the work a metrics timer wraps).
With ``--cpu-s`` (the bench's ``cpu_s``) and ``--pods`` the shares become milliseconds
of CPU per pod. py-spy leaves out idle threads, so the samples are CPU (and the GIL).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

# (category, substrings of a frame "function (path:line)"), in order of precedence
CATEGORIES: list[tuple[str, tuple[str, ...]]] = [
    ("logging", ("structlog/", "ksched/logging.py", "ksched/util/klog", "logging/__init__")),
    ("metrics", ("ksched/metrics.py", "prometheus_client/")),
    ("event writes", ("ksched/cluster/status.py",)),
    (
        "binding POST",
        (
            "ksched/cluster/binder.py",
            "ksched/cluster/pipeline.py",
            "binding_cycle (",
            "_BindingRunner",
        ),
    ),
    (
        "scheduling cycle",
        ("ksched/scheduler/schedule_one.py", "ksched/framework/", "ksched/plugins/"),
    ),
    ("cache/queue", ("ksched/cache/", "ksched/queue/", "ksched/scheduler/scheduler.py")),
    (
        "watch decode/informer",
        ("ksched/cluster/informer.py", "ksched/cluster/decoding.py", "ksched/api/"),
    ),
    ("HTTP client (other)", ("ksched/cluster/client.py", "aiohttp/")),
    ("event loop, sockets", ("asyncio/", "anyio/", "ssl.py", "selectors.py")),
]


# Wrappers: a sample is theirs only when their own code runs (its innermost ksched frame
# is theirs), not the work they time or log around.
WRAPPERS = ("logging", "metrics")


def categorize(stack: str) -> str:
    frames = stack.split(";")
    for frame in reversed(frames):
        if "ksched/" in frame or any(n in frame for _, ns in CATEGORIES[:2] for n in ns):
            for name, needles in CATEGORIES[: len(WRAPPERS)]:
                if any(n in frame for n in needles):
                    return name
            break
    for name, needles in CATEGORIES[len(WRAPPERS) :]:
        if any(n in stack for n in needles):
            return name
    return "other"


def split(lines: list[str]) -> Counter[str]:
    out: Counter[str] = Counter()
    for line in lines:
        stack, _, count = line.rstrip().rpartition(" ")
        if stack and count.isdigit():
            out[categorize(stack)] += int(count)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", type=Path)
    ap.add_argument("--cpu-s", type=float, help="ksched's cpu_s from the bench JSON")
    ap.add_argument("--pods", type=int, help="measured pods")
    args = ap.parse_args(argv)
    counts = split(args.file.read_text().splitlines())
    total = sum(counts.values()) or 1
    per_pod = args.cpu_s * 1e3 / args.pods if args.cpu_s and args.pods else None
    print(f"{'category':24} {'samples':>8} {'share':>7}" + ("  ms/pod" if per_pod else ""))
    for name, n in counts.most_common():
        row = f"{name:24} {n:8d} {n / total:7.1%}"
        if per_pod is not None:
            row += f"  {per_pod * n / total:6.3f}"
        print(row)
    if per_pod is not None:
        print(f"{'total':24} {total:8d} {1:7.1%}  {per_pod:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
