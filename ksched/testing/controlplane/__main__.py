"""``python -m ksched.testing.controlplane build|up``: build the upstream binaries, or run
a throw-away control plane until Ctrl-C/SIGTERM."""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from . import ControlPlane, ControlPlaneError
from ._build import ASSETS_ENV, BuildError, build, kube_version


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ksched.testing.controlplane")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser(
        "build",
        help="build (or reuse) etcd, kube-apiserver, kube-scheduler, "
        "kube-controller-manager and kubectl from Go modules",
    )
    b.add_argument(
        "--version",
        default=None,
        help="Kubernetes version (default: $KSCHED_KUBE_VERSION or the pinned one)",
    )
    b.add_argument("--force", action="store_true", help="rebuild even when cached")
    u = sub.add_parser("up", help="run a control plane until Ctrl-C or SIGTERM")
    u.add_argument("--with-scheduler", action="store_true", help="also run kube-scheduler")
    u.add_argument(
        "--scheduler-config",
        type=Path,
        default=None,
        help="its KubeSchedulerConfiguration (implies --with-scheduler)",
    )
    u.add_argument(
        "--with-controller-manager",
        action="store_true",
        help="also run kube-controller-manager (serviceaccount, namespace, garbage "
        "collector, PV binder, resourceclaim controllers)",
    )
    u.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="keep kubeconfigs, logs and etcd data here (default: a temp dir)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "build":
            assets = build(args.version or kube_version())
            print(assets.directory)
            print(f"export {ASSETS_ENV}={assets.directory}", file=sys.stderr)
            return 0
        return _up(args)
    except (BuildError, ControlPlaneError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


def _up(args: argparse.Namespace) -> int:
    sched: bool | dict[str, object] = bool(args.with_scheduler)
    if args.scheduler_config is not None:
        try:
            sched = yaml.safe_load(args.scheduler_config.read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            print(f"error: {args.scheduler_config}: {e}", file=sys.stderr)
            return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    t0 = time.monotonic()
    with ControlPlane(
        with_scheduler=sched,
        with_controller_manager=args.with_controller_manager,
        workdir=args.dir,
    ) as cp:
        print(f"control plane up in {time.monotonic() - t0:.1f}s at {cp.url}", flush=True)
        print(_summary(cp), flush=True)
        while not stop.wait(0.5):
            for c in cp.components:
                if not c.running():
                    print(f"error: {c.name} exited; last lines:\n{c.tail()}", file=sys.stderr)
                    return 1
    print("stopped", flush=True)
    return 0


def _summary(cp: ControlPlane) -> str:
    """Every address, kubeconfig and log, kubectl by its full path (the build's directory
    is not on ``PATH``), and the ``ksched run`` line that emulates this kube-scheduler."""
    kubectl = cp.assets.path("kubectl")
    rows = [(f"{name}:", url) for name, url in cp.addresses().items()]
    rows += [
        ("admin kubeconfig:", str(cp.admin_kubeconfig)),
        ("kube-scheduler kubeconfig:", str(cp.scheduler_kubeconfig)),
        ("logs:", str(cp.dir / "logs")),
        ("kubectl:", str(kubectl)),
    ]
    q = shlex.quote
    # ksched as this kube-scheduler's release, whichever version was built
    rows.append(
        (
            "ksched:",
            f"ksched run --kubeconfig {q(str(cp.scheduler_kubeconfig))} "
            f"--emulated-version {cp.emulated_version}",
        )
    )
    width = max(len(k) for k, _ in rows) + 1
    lines = [f"{k:<{width}}{v}" for k, v in rows]
    lines.append(f"export PATH={q(str(kubectl.parent))}:$PATH")
    lines.append(f"try: {q(str(kubectl))} --kubeconfig {q(str(cp.admin_kubeconfig))} get ns")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
