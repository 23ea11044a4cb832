"""``ksched run``: a thin process wrapper over ``SchedulerDaemon``.

Configuration is loaded and every profile's framework is built before anything touches
the cluster, so a bad config exits 2 without a single API request. SIGTERM/SIGINT start a
graceful shutdown (stop taking pods, let in-flight bindings finish within 30 s) and the
process exits 0; a second signal during shutdown uses the default action (immediate exit).
"""

from __future__ import annotations

import signal
import sys
from typing import Any

import anyio

from .. import logging as klog

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILURE", "LEADER_ELECTION_UNSUPPORTED", "run"]

EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1
LEADER_ELECTION_UNSUPPORTED = "leader election is not supported yet; use --no-leader-elect"


def leader_election_mode(flag: bool | None, config_value: bool) -> tuple[bool, str | None]:
    """(ok, warning): ``--leader-elect`` cannot be honoured yet; the config default (true, as
    upstream) is ignored with a warning; ``--no-leader-elect`` runs silently without it."""
    if flag is True:
        return False, None
    if flag is None and config_value:
        return True, ("leader election is not supported yet: running without it, so only one "
                      "ksched instance may serve these profiles (pass --no-leader-elect to "
                      "silence this warning)")
    return True, None


def run(args: Any, config: Any, registry: Any) -> int:
    """Run the daemon until SIGTERM/SIGINT; returns the exit status."""
    ok, warning = leader_election_mode(args.leader_elect, config.leader_election.leader_elect)
    if not ok:
        print(f"ksched run: {LEADER_ELECTION_UNSUPPORTED}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.port < 0 or args.port > 65535:
        print(f"ksched run: --port {args.port} is out of range", file=sys.stderr)
        return EXIT_BAD_INPUT
    klog.configure(args.log_format, args.v)
    log = klog.get_logger("ksched.run")
    if warning:
        log.warning(warning)
    try:
        return anyio.run(_serve, args, config, registry, log)
    except KeyboardInterrupt:
        return 130


async def _serve(args: Any, config: Any, registry: Any, log: Any) -> int:
    from kubernetes_asyncio.config import ConfigException

    from ..cluster import APIClient
    from .daemon import SchedulerDaemon

    cc = config.client_connection
    try:
        client = await APIClient.auto(
            args.kubeconfig or cc.kubeconfig or None, args.master, qps=cc.qps, burst=cc.burst
        )
    except (ConfigException, OSError, ValueError) as e:
        print(f"ksched run: cannot load cluster configuration: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    daemon = SchedulerDaemon(
        config, registry=registry, client=client, bind_address=args.bind_address, port=args.port
    )
    try:
        # The receiver is closed once the first signal arrived, so a second one during the
        # graceful shutdown gets the default action.
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            try:
                await daemon.start()
            except OSError as e:  # e.g. the port is taken
                log.error("ksched failed to start", error=str(e))
                return EXIT_FAILURE
            log.info("ksched started", url=daemon.url,
                     profiles=[p.scheduler_name for p in config.profiles])
            try:
                async for signum in signals:
                    log.info("shutting down", signal=signal.Signals(signum).name)
                    break
            except BaseException as e:
                await daemon.aclose(type(e), e, e.__traceback__)
                raise
        await daemon.aclose()
    finally:
        await client.close()
    return 0
