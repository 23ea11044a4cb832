"""`python -m ksched.testing apiserver ...`: run the test API server as its own process, so
tests can start the daemon (or kubectl) against it out of process."""

from __future__ import annotations

import argparse
import asyncio
import gc
import signal
import sys
from collections.abc import Sequence

from ._auth import read_token_file
from .apiserver import TestAPIServer


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ksched.testing")
    sub = p.add_subparsers(dest="command", required=True)
    a = sub.add_parser("apiserver", help="serve the test API server until SIGTERM/SIGINT")
    a.add_argument("--host", default="127.0.0.1")
    a.add_argument("--port", type=int, default=0, help="0 picks a free port")
    a.add_argument("--kubeconfig-out", help="write a kubeconfig for the server here")
    a.add_argument("--history", type=int, default=1000, help="watch events kept per resource")
    a.add_argument("--bookmark-interval", type=float, default=1.0, help="seconds")
    a.add_argument(
        "--token-auth-file",
        help='kube-apiserver\'s token file (token,user,uid,"group1,group2" per line): '
        "authenticate requests; system:masters may do everything, others nothing; "
        "the --kubeconfig-out carries the first token",
    )
    a.add_argument(
        "--graceful-pod-deletion",
        action="store_true",
        help="bound pods get a deletionTimestamp instead of vanishing (no kubelet finishes it)",
    )
    return p


async def _serve(args: argparse.Namespace) -> int:
    server = TestAPIServer(
        args.host,
        args.port,
        history=args.history,
        bookmark_interval=args.bookmark_interval,
        graceful_pod_deletion=args.graceful_pod_deletion,
        token_auth_file=args.token_auth_file,
    )
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        if args.kubeconfig_out:
            server.write_kubeconfig(args.kubeconfig_out)
        print(server.url, flush=True)
        await stop.wait()
    finally:
        await server.stop()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "apiserver":
        if args.token_auth_file:
            try:
                read_token_file(args.token_auth_file)
            except (OSError, ValueError, UnicodeDecodeError) as e:
                print(f"ksched.testing apiserver: --token-auth-file: {e}", file=sys.stderr)
                return 2
        # A process of its own, holding many small acyclic JSON objects (every version in
        # the watch history) and allocating a few dozen per request: with the default
        # threshold (700) the cyclic GC ran hundreds of times per bench run, scanning them.
        gc.set_threshold(10_000, 10, 10)
        return asyncio.run(_serve(args))
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
