"""``ksched run``: a thin process wrapper over ``SchedulerDaemon``.

Configuration is loaded and every profile's framework is built before anything touches
the cluster, so a bad config exits 2 without a single API request. SIGTERM/SIGINT start a
graceful shutdown (stop taking pods, let in-flight bindings finish within 30 s, release
the leader lease) and the process exits 0; a second signal during shutdown uses the default
action (immediate exit).

``--leader-elect``/``--no-leader-elect`` override ``leaderElection.leaderElect`` in the
config, as upstream's ``ApplyLeaderElectionTo`` (``/configz`` shows the effective value).
A leader that loses its lease exits 1 after a brief fenced wind-down, as kube-scheduler
does ("leaderelection lost"): its supervisor restarts it as a fresh candidate, which is
simpler and safer than turning a cache built as leader (assumed pods) back into a follower.
"""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING, Any

import anyio

from .. import logging as klog

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration
    from ..framework.registry import Registry

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILURE", "apply_leader_election_flag", "run"]

EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1


def apply_leader_election_flag(flag: bool | None, config: KubeSchedulerConfiguration) -> list[str]:
    """Let the flag (when given) override ``leaderElection.leaderElect``; return the problems
    of the resulting election settings — the file was validated with its own leaderElect,
    which skips these rules when false — and what the elector itself would reject."""
    from ..cluster.leaderelection import check_timings
    from ..config import validate

    le = config.leader_election
    if flag is not None:
        le.leader_elect = flag
    if not le.leader_elect:
        return []
    problems = [p for p in validate(config) if p.startswith("leaderElection")]
    if not problems:
        timing = check_timings(le.lease_duration, le.renew_deadline, le.retry_period)
        if timing is not None:
            problems.append(f"couldn't create leader elector: {timing}")
    return problems


def run(args: Any, config: KubeSchedulerConfiguration, registry: Registry) -> int:
    """Run the daemon until SIGTERM/SIGINT (exit 0) or a lost lease (exit 1)."""
    shadow_of = getattr(args, "shadow_of", None)
    if shadow_of is not None:
        if args.leader_elect:
            print("ksched run: --shadow-of takes no lease: drop --leader-elect", file=sys.stderr)
            return EXIT_BAD_INPUT
        args.leader_elect = False  # a shadow never elects (/configz shows it so)
    problems = apply_leader_election_flag(args.leader_elect, config)
    if problems:
        for p in problems:
            print(f"ksched run: {p}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.port is not None and not 0 <= args.port <= 65535:
        print(f"ksched run: --port {args.port} is out of range", file=sys.stderr)
        return EXIT_BAD_INPUT
    secure = secure_serving(args)
    problems = secure.problems() if secure is not None else []
    for p in problems:
        print(f"ksched run: {p}", file=sys.stderr)
    if problems:
        return EXIT_BAD_INPUT
    klog.configure(args.log_format, args.v)
    log = klog.get_logger("ksched.run")
    try:
        return anyio.run(_serve, args, config, registry, log)
    except KeyboardInterrupt:
        return 130


def secure_serving(args: Any) -> Any:
    """The ``SecureServing`` of the flags; None for ``--secure-port 0``."""
    from .auth import SecureServing, parse_paths

    if args.secure_port == 0:
        return None
    return SecureServing(
        bind_address=args.bind_address,
        port=args.secure_port,
        tls_cert_file=args.tls_cert_file,
        tls_private_key_file=args.tls_private_key_file,
        client_ca_file=args.client_ca_file,
        always_allow_paths=parse_paths(args.authorization_always_allow_paths),
        token_cache_ttl=args.authentication_token_webhook_cache_ttl,
        authorized_ttl=args.authorization_webhook_cache_authorized_ttl,
        unauthorized_ttl=args.authorization_webhook_cache_unauthorized_ttl,
    )


def _flags(args: Any) -> dict[str, str]:
    """The parsed command line by flag name, for ``/flagz`` (lists as given, joined; the
    feature gate flags as kube-scheduler shows them)."""
    from ..features import flagz_values

    out = {}
    for dest, value in vars(args).items():
        if dest in ("fn", "command") or callable(value):
            continue
        shown = ",".join(map(str, value)) if isinstance(value, list) else value
        out[dest.replace("_", "-")] = "" if shown is None else str(shown)
    return out | flagz_values(args.feature_gates, args.emulated_version)


async def _serve(
    args: Any, config: KubeSchedulerConfiguration, registry: Registry, log: Any
) -> int:
    from kubernetes_asyncio.config import ConfigException

    from ..cluster import APIClient
    from .daemon import SchedulerDaemon
    from .http import ServingError

    cc = config.client_connection
    try:
        client = await APIClient.auto(
            args.kubeconfig or cc.kubeconfig or None, args.master, qps=cc.qps, burst=cc.burst
        )
    except (ConfigException, OSError, ValueError) as e:
        print(f"ksched run: cannot load cluster configuration: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    daemon = SchedulerDaemon(
        config,
        registry=registry,
        client=client,
        bind_address=args.address,
        port=args.port,
        secure_serving=secure_serving(args),
        plugin_timeout=args.plugin_timeout,
        binding_timeout=args.binding_timeout,
        shadow_of=args.shadow_of,
        flags=_flags(args),
    )
    try:
        # The receiver is closed once the first signal arrived, so a second one during the
        # graceful shutdown gets the default action.
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            try:
                await daemon.start()
            except ServingError as e:  # a port taken, an address not ours, a bad certificate
                print(f"ksched run: {e}", file=sys.stderr)
                return EXIT_BAD_INPUT
            log.info(
                "ksched started",
                url=daemon.url if daemon.http is not None else None,
                profiles=[p.scheduler_name for p in config.profiles],
                leader_elect=daemon.leader_elect,
            )
            lost = False
            try:
                async with anyio.create_task_group() as tg:

                    async def on_lost() -> None:
                        nonlocal lost
                        await daemon.wait_leadership_lost()
                        lost = True
                        tg.cancel_scope.cancel()

                    tg.start_soon(on_lost)
                    async for signum in signals:
                        log.info("shutting down", signal=signal.Signals(signum).name)
                        break
                    tg.cancel_scope.cancel()
            except BaseException as e:
                await daemon.aclose(type(e), e, e.__traceback__)
                raise
        await daemon.aclose()
    finally:
        await client.close()
    if lost:
        log.error("exiting: leader election lost")
        return EXIT_FAILURE
    return 0
