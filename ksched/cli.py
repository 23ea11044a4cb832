"""The ``ksched`` command line.

Exit codes: 0 success (including simulations where pods stay unschedulable),
2 bad input (config, cluster file, plugin that fails to load) with one line per
problem on stderr, before anything touches a cluster; 1 a failure at run time (the API
server refused). Every error ksched reports is a ``KschedError`` that ``main`` catches
once, printing its lines and exiting with its ``exit_code``; code that knows what an
error is about (the config file, the command) names it with ``_about``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from .util.errors import EXIT_BAD_INPUT, KschedError

if TYPE_CHECKING:
    from .config.types import KubeSchedulerConfiguration
    from .framework.registry import Registry

__all__ = ["main"]


def _die(lines: Sequence[str]) -> int:
    for line in lines:
        print(line, file=sys.stderr)
    return EXIT_BAD_INPUT


@contextmanager
def _about(context: str) -> Iterator[None]:
    """A ``KschedError`` raised inside is about ``context`` (printed before its lines),
    unless something closer already said what it is about."""
    try:
        yield
    except KschedError as e:
        if not e.context:
            e.context = context
        raise


def _registry() -> Any:
    from .plugins import default_registry

    with _about("ksched"):
        return default_registry()


def _feature_gates(args: argparse.Namespace) -> Any:
    """``--feature-gates`` and ``--emulated-version``, checked before any config is read
    (as kube-scheduler sets them before it loads its config): exit 2 with kube-scheduler's
    text, or ksched's for a value it does not implement."""
    from .features import resolve_feature_gates

    return resolve_feature_gates(args.feature_gates, args.emulated_version)


def _load_config(
    path: str | None, registry: Registry, args: argparse.Namespace
) -> KubeSchedulerConfiguration:
    from .config import load_config

    cfg, warnings = load_config(path, set(registry.names()), _feature_gates(args))
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    return cfg


def _build_check(cfg: KubeSchedulerConfiguration, registry: Registry, source: str) -> None:
    """Instantiate every profile's framework once so plugin args errors exit 2 up front."""
    from .profile import build_frameworks

    with _about(source):
        build_frameworks(cfg, registry)
        if cfg.extenders:
            from .extender.client import ExtenderSet

            ExtenderSet.from_config(cfg.extenders)  # TLS material loads


# ---- simulate ------------------------------------------------------------------------


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at write time (tests swap it)."""

    def write(self, s: str) -> int:
        return sys.stderr.write(s)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def _log_to_stderr() -> None:
    """Plugin logs must not corrupt simulate/bench output on stdout."""
    from .logging import configure

    configure(None, 0, stream=_CurrentStderr())  # type: ignore[arg-type]


def _adopted(args: argparse.Namespace, cfg: KubeSchedulerConfiguration) -> dict[str, str]:
    """--scheduler-name/--all-pending: other schedulers' pods for the first profile."""
    profile = cfg.profiles[0].scheduler_name
    names = ["*"] if args.all_pending else (args.scheduler_name or [])
    return dict.fromkeys(names, profile)


def _warn_skipped(skipped: Any) -> None:
    """One line: the pending pods no profile schedules, and the flags that would."""
    total = sum(skipped.values())
    which = ", ".join(f"{name} ({n})" for name, n in sorted(skipped.items()))
    print(
        f"ksched simulate: skipped {total} pending pod{'s' * (total != 1)} of other "
        f"schedulers: {which}; --scheduler-name NAME or --all-pending schedules them",
        file=sys.stderr,
    )


def cmd_simulate(args: argparse.Namespace) -> int:
    from .sim import load_cluster

    _log_to_stderr()
    registry = _registry()
    cfg = _load_config(args.config, registry, args)
    _build_check(cfg, registry, args.config or "<default config>")
    cluster = load_cluster(args.cluster)
    adopt = _adopted(args, cfg)
    want = args.explain or None  # NS/NAME, or None for every pod
    if want is not None and want.count("/") != 1:
        return _die([f"ksched simulate: --explain takes NAMESPACE/NAME, got {want!r}"])
    if want is not None and _names_pod_group(cluster, want):
        return _explain_group(args, cluster, cfg, registry, adopt, want)
    if args.compare is not None:
        return _compare(args, cluster, cfg, registry, adopt, want)
    if want is not None:
        from .sim.bound import bound_pod

        if bound_pod(cluster, want) is not None:
            return _explain_bound(args, cluster, cfg, registry, adopt, want)
    import anyio

    from .sim import Simulation

    explain = args.explain is not None or args.report is not None
    sim = Simulation(cluster, cfg, registry, seed=args.seed, explain=explain, adopt=adopt)
    results, before, after = anyio.run(sim.run_measured)
    keys = [f"{r.namespace}/{r.name}" for r in results]
    if want is not None and want not in keys:
        return _die([_not_explained(cluster, want, args.cluster)])
    if args.report is not None and not _report(args, results, before, after, cluster=cluster):
        return EXIT_BAD_INPUT
    if args.output == "json":
        pods = [
            r.to_dict(args.explain is not None and want in (None, k))
            for r, k in zip(results, keys, strict=True)
        ]
        print(json.dumps({"pods": pods}, indent=2))
        if sim.skipped:
            _warn_skipped(sim.skipped)
        return 0
    if want is None:
        rows = [("POD", "NODE", "STATUS", "MESSAGE")]
        for r in results:
            msg = r.message
            if r.preempted:
                msg = (msg + " " if msg else "") + f"(preempted: {', '.join(r.preempted)})"
            rows.append((f"{r.namespace}/{r.name}", r.node or "-", r.status, msg))
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        for row in rows:
            print("  ".join(c.ljust(widths[i]) for i, c in enumerate(row[:3])) + "  " + row[3])
    if args.explain is not None:
        _print_explanations(results, keys, want, args.top)
    if sim.skipped:
        _warn_skipped(sim.skipped)
    scheduled = sum(1 for r in results if r.status == "Scheduled")
    print(f"\n{scheduled}/{len(results)} pods scheduled", file=sys.stderr)
    return 0


def _other_scheduler(want: str, name: str, what: str) -> str:
    """--explain of another scheduler's pod: say so, and which flag adopts it."""
    return (
        f"ksched simulate: --explain {want}: {what} scheduler {name}, which no profile of "
        f"this config is named after; --scheduler-name {name} (or --all-pending) explains "
        "it with the config's first profile"
    )


def _not_explained(cluster: Any, want: str, source: str) -> str:
    """Why --explain's pod has no explanation: another scheduler's, or not in the file."""
    pod = next((p for p, _ in cluster.pods if p.key == want), None)
    if pod is not None and pod.status.phase not in ("Succeeded", "Failed"):
        return _other_scheduler(want, pod.spec.scheduler_name, "a pending pod of")
    return f"ksched simulate: --explain {want}: no pod of that name in {source} to schedule"


def _explain_bound(
    args: argparse.Namespace,
    cluster: Any,
    cfg: KubeSchedulerConfiguration,
    registry: Registry,
    adopt: Mapping[str, str],
    want: str,
) -> int:
    """``--explain NS/NAME`` of a bound pod: as if pending on the cluster without it."""
    from .scheduler.explanation import render_text
    from .sim.bound import explain_bound, render_where

    found = explain_bound(cluster, cfg, registry, want, seed=args.seed, adopt=adopt)
    assert found is not None  # the caller saw the pod bound
    r = found.result
    if r is None:
        return _die([_other_scheduler(want, found.scheduler_name, f"bound to {found.node} by")])
    if args.report is not None and not _report(args, [r], found.before, found.after):
        return EXIT_BAD_INPUT
    if args.output == "json":
        print(json.dumps({"pods": [{**r.to_dict(True), "bound": found.bound}]}, indent=2))
        return 0
    for line in render_where(want, found, args.cluster):
        print(line)
    for line in render_text(want, r.explain, top=args.top, final=(r.status, r.node)):
        print(line)
    return 0


def _names_pod_group(cluster: Any, want: str) -> bool:
    """Whether --explain's NS/NAME is a pod group (a pod of that name comes first)."""
    from .sim.groups import pod_groups

    if any(p.key == want for p, _ in cluster.pods):
        return False
    return want in pod_groups(cluster)


def _explain_group(
    args: argparse.Namespace,
    cluster: Any,
    cfg: KubeSchedulerConfiguration,
    registry: Registry,
    adopt: Mapping[str, str],
    want: str,
) -> int:
    """``--explain NS/PODGROUP``: where its members are or would be, what blocks the
    rest, and the smallest verified change of the cluster file that lets it in."""
    from .sim.group_explain import explain_group, render_group_text, simulator_run

    if args.compare is not None or args.report is not None:
        return _die(
            [f"ksched simulate: --explain {want}: a pod group is explained without --compare "
             "and --report"]
        )  # fmt: skip
    features = cfg.features
    if "GenericWorkload" not in features.table.gates or not features.enabled("GenericWorkload"):
        return _die(
            [
                f"ksched simulate: --explain {want}: a pod group, but GenericWorkload is off, "
                "so its pods are scheduled one by one: explain one of them, or schedule the "
                "group as one with --feature-gates=GenericWorkload=true"
            ]
        )
    run = simulator_run(cfg, registry, seed=args.seed, adopt=adopt)
    model = explain_group(cluster, want, run)
    if args.output == "json":
        print(json.dumps({"podGroup": model}, indent=2))
        return 0
    for line in render_group_text(model):
        print(line)
    return 0


def _print_explanations(results: Any, keys: list[str], want: str | None, top: int) -> None:
    """The readable explanation of every pod (``want`` None) or of pod ``want``."""
    from .scheduler.explanation import render_text

    for r, k in zip(results, keys, strict=True):
        if want in (None, k):
            if want is None:
                print()
            final = (r.status, r.node)
            for line in render_text(k, r.explain, top=top, final=final, message=r.message):
                print(line)


def _compare(
    args: argparse.Namespace,
    cluster: Any,
    cfg: KubeSchedulerConfiguration,
    registry: Registry,
    adopt: Mapping[str, str],
    want: str | None,
) -> int:
    """``simulate --compare B.yaml``: the same pods under --config (A) and B; with
    ``--explain`` the differing pods' (or NS/NAME's) explanations side by side, with
    ``--report`` A's page with the pods that differ under B."""
    from .sim.bound import bound_pod
    from .sim.compare import compare_runs, render_compare, render_explain_pair, run_both
    from .sim.groups import pod_groups

    cfg_b = _load_config(args.compare, registry, args)
    _build_check(cfg_b, registry, args.compare)
    labels = (args.config or "defaults", args.compare)
    if want is not None and bound_pod(cluster, want) is not None:
        return _compare_bound(args, cluster, (cfg, cfg_b), registry, adopt, want, labels)
    explain = args.explain is not None or args.report is not None
    a, b = run_both(cluster, cfg, cfg_b, registry, seed=args.seed, adopt=adopt, explain=explain)
    data = compare_runs(a, b, pod_groups(cluster))
    ra, rb = a.by_key(), b.by_key()
    if want is not None:
        ns, name = want.split("/")
        if (ns, name) not in ra and (ns, name) not in rb:
            return _die([_not_explained(cluster, want, args.cluster)])
        keys = [(ns, name)]
    else:
        keys = [(d["namespace"], d["name"]) for d in data["differences"]]
    if args.report is not None and not _report_compared(args, a, b, data, labels, cluster):
        return EXIT_BAD_INPUT
    if args.output == "json":
        if args.explain is not None:
            data["explain"] = [_pair_json(k, ra.get(k), rb.get(k)) for k in keys]
        print(json.dumps(data, indent=2))
        return 0
    for line in render_compare(data, *labels):
        print(line)
    if args.explain is not None:
        for k in keys:
            print()
            for line in render_explain_pair(
                f"{k[0]}/{k[1]}", (ra.get(k), rb.get(k)), labels, top=args.top
            ):
                print(line)
    return 0


def _pair_json(key: tuple[str, str], x: Any, y: Any) -> dict[str, Any]:
    return {
        "namespace": key[0],
        "name": key[1],
        "a": x.to_dict(True) if x is not None else None,
        "b": y.to_dict(True) if y is not None else None,
    }


def _report(
    args: argparse.Namespace,
    results: Any,
    before: Any,
    after: Any,
    compare: Any = None,
    cluster: Any = None,
) -> bool:
    """Write --report's page (False: it could not be, and the error is printed);
    ``cluster`` given, with its pod groups."""
    from .sim.groups import group_rows
    from .sim.report import write_report

    groups = group_rows(cluster, results) if cluster is not None else []
    try:
        write_report(
            args.report, results, before, after, source=args.cluster, top=args.top,
            compare=compare, groups=groups,
        )  # fmt: skip
    except OSError as e:
        _die([f"ksched simulate: --report {args.report}: {e.strerror or e}"])
        return False
    return True


def _report_compared(
    args: argparse.Namespace,
    a: Any,
    b: Any,
    data: dict[str, Any],
    labels: tuple[str, str],
    cluster: Any = None,
) -> bool:
    """--report with --compare: A's page with the pods that differ under B."""
    from .sim.report import Comparison

    cmp = Comparison(labels[0], labels[1], data["differences"], b.by_key())
    return _report(args, a.results, a.before, a.after, cmp, cluster)


def _compare_bound(
    args: argparse.Namespace,
    cluster: Any,
    configs: tuple[KubeSchedulerConfiguration, KubeSchedulerConfiguration],
    registry: Registry,
    adopt: Mapping[str, str],
    want: str,
    labels: tuple[str, str],
) -> int:
    """--compare with --explain of a bound pod: each config's explanation of it as if
    pending on the cluster without it, side by side."""
    from .sim.bound import bound_head, explain_bound, where_text
    from .sim.compare import Run, compare_runs, render_explain_pair

    found = [
        explain_bound(cluster, c, registry, want, seed=args.seed, adopt=adopt) for c in configs
    ]
    fa, fb = found
    assert fa is not None and fb is not None  # the caller saw the pod bound
    if fa.result is None and fb.result is None:
        return _die([_other_scheduler(want, fa.scheduler_name, f"bound to {fa.node} by")])
    a, b = (Run([f.result] if f.result else [], f.before, f.after) for f in (fa, fb))
    data = compare_runs(a, b)
    if args.report is not None and not _report_compared(args, a, b, data, labels):
        return EXIT_BAD_INPUT
    if args.output == "json":
        ns, name = want.split("/")
        pair = _pair_json((ns, name), fa.result, fb.result)
        for side, f in (("a", fa), ("b", fb)):
            if pair[side] is not None:
                pair[side]["bound"] = f.bound
        print(json.dumps({**data, "explain": [pair]}, indent=2))
        return 0
    print(bound_head(want, fa.node, args.cluster))
    bound = (where_text(fa, short=True), where_text(fb, short=True), fa.node)
    for line in render_explain_pair(
        want, (fa.result, fb.result), labels, top=args.top, bound=bound
    ):
        print(line)
    return 0


def _count(text: str) -> int:
    """A whole number of at least 0 (``--top``)."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"not a whole number >= 0: {text!r}")
    return int(text)


# ---- snapshot ------------------------------------------------------------------------


def cmd_snapshot(args: argparse.Namespace) -> int:
    """A live cluster's objects, as ``simulate --cluster`` reads them, into one file."""
    import anyio
    import msgspec
    import yaml
    from kubernetes_asyncio.config import ConfigException

    from .cluster import APIClient, APIError
    from .sim.snapshot import LACKS, Listed, take_snapshot

    def progress(kind: str, n: int) -> None:
        if args.verbose:
            print(f"ksched snapshot: {n} {kind}", file=sys.stderr)

    def forbidden(what: Listed, e: APIError) -> None:
        print(
            f"ksched snapshot: warning: skipped {what.kind} ({e.status} {e.reason}: "
            f"{e.message}); a simulation of the file lacks {LACKS[what.kind]}",
            file=sys.stderr,
        )

    async def main() -> dict[str, Any]:
        client = await APIClient.auto(args.kubeconfig, args.master)
        try:
            return await take_snapshot(client, progress, forbidden)
        finally:
            await client.close()

    try:
        with _about("ksched snapshot"):  # an APIError: exit 1 (its exit_code)
            doc = anyio.run(main)
    except (ConfigException, OSError, ValueError) as e:
        return _die([f"ksched snapshot: cannot load cluster configuration: {e}"])
    if args.format == "yaml":
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        data = yaml.dump(doc, Dumper=dumper, sort_keys=False).encode()
    else:
        data = msgspec.json.format(msgspec.json.encode(doc), indent=1) + b"\n"
    if args.output in (None, "-"):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    else:
        try:
            with open(args.output, "wb") as f:
                f.write(data)
        except OSError as e:
            return _die([f"ksched snapshot: {args.output}: {e.strerror or e}"])
    n = len(doc["items"])
    print(f"ksched snapshot: {n} objects written to {args.output or 'stdout'}", file=sys.stderr)
    return 0


# ---- bench ---------------------------------------------------------------------------


def cmd_bench(args: argparse.Namespace) -> int:
    from .bench import WORKLOADS, run_bench

    _log_to_stderr()
    if args.apiserver == "real":
        return _bench_real(args)
    if args.against or args.compare or args.scale or args.repeat != 1 or args.pin:
        return _die(
            [
                "ksched bench: --against, --scale, --repeat, --pin and --compare need "
                "--apiserver real"
            ]
        )
    args.workload = args.workload or "SchedulingBasic"
    if args.workload not in WORKLOADS:
        return _die(
            [
                f"ksched bench: unknown workload {args.workload!r}; "
                f"available: {', '.join(sorted(WORKLOADS))}"
            ]
        )
    if args.nodes <= 0 or args.pods <= 0 or args.init_pods < 0:
        return _die(["ksched bench: --nodes and --pods must be positive, --init-pods non-negative"])
    if args.baseline and args.mode != "e2e":
        return _die(["ksched bench: --baseline needs --mode e2e"])
    from .bench.workloads import IN_PROCESS_ONLY

    if args.mode == "e2e" and args.workload in IN_PROCESS_ONLY:
        return _die([f"ksched bench: {args.workload} runs in process only (--mode in-process)"])
    from .bench.workloads import feature_gates_of, gate_setting, scheduler_config_of

    gates = feature_gates_of(args.workload)
    if gates:  # the workload's scheduler_perf featureGates
        args.feature_gates = [*args.feature_gates, ",".join(gate_setting(g) for g in gates)]
    registry = _registry()
    own = scheduler_config_of(args.workload)
    if args.config is None and own is not None:
        from .config import load_config_data

        cfg, _ = load_config_data(own, args.workload, set(registry.names()), _feature_gates(args))
    else:
        cfg = _load_config(args.config, registry, args)
    _build_check(cfg, registry, args.config or "<default config>")
    if args.mode == "e2e":
        from .bench.e2e import run_e2e_bench

        result = run_e2e_bench(
            args.workload,
            nodes=args.nodes,
            pods=args.pods,
            init_pods=args.init_pods,
            config=cfg,
            registry=registry,
            seed=args.seed,
            baseline=args.baseline,
            progress=sys.stderr.isatty() and args.output != "json",
        )
    else:
        result = run_bench(
            args.workload,
            nodes=args.nodes,
            pods=args.pods,
            init_pods=args.init_pods,
            config=cfg,
            registry=registry,
            seed=args.seed,
            progress=sys.stderr.isatty() and args.output != "json",
        )
    if args.output == "json":
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:>16}: {v}")
    return 0


def _bench_real(args: argparse.Namespace) -> int:
    """``ksched bench --apiserver real``: see ``ksched.bench.real``."""
    import yaml

    from .bench.real import REAL_WORKLOADS, compare, cpu_split, render_table, run_real_bench

    # --apiserver real: one workload or a comma-separated list
    names = args.workload.split(",") if args.workload else list(REAL_WORKLOADS)
    for name in names:
        if name not in REAL_WORKLOADS:
            return _die(
                [f"ksched bench: unknown workload {name!r}; available: {', '.join(REAL_WORKLOADS)}"]
            )
    if args.repeat < 1:
        return _die([f"ksched bench: --repeat must be at least 1, got {args.repeat}"])
    saved = None
    if args.compare:
        try:
            with open(args.compare, encoding="utf-8") as f:
                saved = json.load(f)
            if not isinstance(saved, dict) or not isinstance(saved.get("workloads"), list):
                raise ValueError("no workloads list")
        except (OSError, ValueError) as e:
            return _die([f"ksched bench: --compare {args.compare}: {e}"])
    base = None
    _feature_gates(args)  # refused here (exit 2) rather than by a contestant mid-run
    gate_flags = [f"--feature-gates={v}" for v in args.feature_gates]
    gate_flags += [f"--emulated-version={v}" for v in args.emulated_version]
    if args.config:
        registry = _registry()
        _build_check(_load_config(args.config, registry, args), registry, args.config)
        with open(args.config, encoding="utf-8") as f:
            base = yaml.safe_load(f)
    if args.pin:
        try:
            cpu_split()
        except ValueError as e:
            return _die([f"ksched bench: {e}"])
    contestants = ["ksched", *([args.against] if args.against else []), "null"]
    doc = run_real_bench(
        names,
        scale=args.scale or "small",
        contestants=contestants,
        config=base,
        repeat=args.repeat,
        progress=sys.stderr.isatty() and args.output != "json",
        pin=args.pin,
        gate_flags=gate_flags,
    )
    slower = compare(doc, saved) if saved is not None else []
    if args.output == "json":
        if saved is not None:
            doc["slower"] = slower
        print(json.dumps(doc, indent=2))
    else:
        print(render_table(doc))
        for line in slower:
            print(f"SLOWER {line}")
    return 1 if slower else 0


# ---- run -----------------------------------------------------------------------------


def _seconds(text: str) -> float:
    """A timeout flag: seconds >= 0 (0 means no bound)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"must be >= 0 seconds (0: no bound), got {text!r}")
    return v


def _timeout_flags(p: argparse.ArgumentParser, *, binding: bool) -> None:
    from .framework.deadline import DEFAULT_BINDING_TIMEOUT, DEFAULT_PLUGIN_TIMEOUT

    p.add_argument(
        "--plugin-timeout",
        type=_seconds,
        default=DEFAULT_PLUGIN_TIMEOUT,
        metavar="SECONDS",
        help="a scheduling cycle's synchronous plugin code (PreFilter through Permit) "
        "running longer fails that pod's attempt; 0: no bound (default %(default)g)",
    )
    if binding:
        p.add_argument(
            "--binding-timeout",
            type=_seconds,
            default=DEFAULT_BINDING_TIMEOUT,
            metavar="SECONDS",
            help="bound on PreBind+Bind (and on PostBind) of one pod; past it the binding "
            "fails and the pod is retried; 0: no bound (default %(default)g)",
        )


def _gate_flags(p: argparse.ArgumentParser) -> None:
    """kube-scheduler's feature gate flags (same names, syntax and refusals)."""
    from .features import BINARY_VERSION, KUBE_VERSIONS

    kube = next(v.kube for v in KUBE_VERSIONS if v.minor == BINARY_VERSION)
    g = p.add_argument_group(
        "feature gate",
        f"ksched behaves as kube-scheduler {kube}; a gate value ksched does not implement is "
        "refused (exit 2), never ignored (docs/fidelity.md lists each gate)",
    )
    g.add_argument(
        "--feature-gates",
        action="append",
        default=[],
        metavar="NAME=BOOL,...",
        help="comma-separated feature gates, kube:NAME=BOOL or NAME=BOOL as kube-scheduler "
        "takes them; repeatable",
    )
    g.add_argument(
        "--emulated-version",
        action="append",
        default=[],
        metavar="VERSION",
        help=f"the Kubernetes version whose behaviour to emulate, MAJOR.MINOR (or kube=...); "
        f"default {BINARY_VERSION}; implemented: "
        + ", ".join(v.minor for v in KUBE_VERSIONS if v.implemented),
    )


def _duration(text: str) -> float:
    """A Go duration ("10s", "1m30s") of at least 0."""
    from .util.duration import parse_duration

    try:
        v = parse_duration(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration (like 10s): {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text!r}")
    return v


def _serving_flags(r: argparse.ArgumentParser) -> None:
    """kube-scheduler's secure-serving, delegated-authentication and -authorization flags
    (same names and defaults), and ksched's opt-in plain-HTTP port."""
    # (ksched.daemon's constants, spelled out: importing the daemon here would slow down
    # every command; tests/daemon/test_secure_serving.py keeps them equal)
    g = r.add_argument_group(
        "secure serving",
        "HTTPS for /healthz, /readyz, /livez, /metrics, /configz, /flagz, /statusz and "
        "/debug/*; requests "
        "are authenticated (client certificate, else bearer token through a TokenReview, "
        "else system:anonymous) and authorized (SubjectAccessReview of the path) by the "
        "API server, as kube-scheduler's",
    )
    g.add_argument(
        "--secure-port",
        type=int,
        default=10259,
        help="HTTPS port; 0: no HTTPS at all (default %(default)s)",
    )
    g.add_argument(
        "--bind-address",
        default="0.0.0.0",
        help="address of the secure port (default %(default)s: every IPv4 interface)",
    )
    g.add_argument(
        "--tls-cert-file",
        help="serving certificate (PEM, with its intermediates); default: a self-signed one "
        "made at start",
    )
    g.add_argument("--tls-private-key-file", help="the --tls-cert-file's key (PEM)")
    g.add_argument(
        "--client-ca-file",
        help="authenticate client certificates this CA signed (PEM) as their CommonName, in "
        "the groups of their Organizations",
    )
    g.add_argument(
        "--authorization-always-allow-paths",
        default="/healthz,/readyz,/livez",
        metavar="PATHS",
        help="comma-separated paths anyone may get without a SubjectAccessReview; a "
        "trailing * matches a prefix (default %(default)s)",
    )
    for flag, what in (
        ("--authentication-token-webhook-cache-ttl", "TokenReview answers"),
        ("--authorization-webhook-cache-authorized-ttl", "allowed SubjectAccessReviews"),
        ("--authorization-webhook-cache-unauthorized-ttl", "denied SubjectAccessReviews"),
    ):
        g.add_argument(
            flag,
            type=_duration,
            default=10.0,
            metavar="DURATION",
            help=f"how long {what} are cached (default 10s)",
        )
    p = r.add_argument_group(
        "plain HTTP",
        "the same endpoints without TLS or authentication, for local use (kube-scheduler "
        "removed its insecure port; ksched keeps one, off unless --port is given)",
    )
    p.add_argument(
        "--port",
        type=int,
        default=None,
        help="plain-HTTP port; 0 picks a free one (default: none)",
    )
    p.add_argument(
        "--address",
        default="127.0.0.1",
        help="address of the plain-HTTP port (kube-scheduler's old --address; default "
        "%(default)s: beyond loopback anyone who reaches it reads /configz and /debug/*)",
    )


def cmd_run(args: argparse.Namespace) -> int:
    from .daemon.main import run

    registry = _registry()
    cfg = _load_config(args.config, registry, args)
    _build_check(cfg, registry, args.config or "<default config>")
    return run(args, cfg, registry)


# ---- config / plugins ----------------------------------------------------------------


def cmd_config_validate(args: argparse.Namespace) -> int:
    from .config import load_config, validate_file

    registry = _registry()
    known = set(registry.names())
    gates = _feature_gates(args)
    text, problems, warnings = validate_file(args.file, known, gates)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if problems or text is None:
        return _die(problems)
    cfg, _ = load_config(args.file, known, gates)  # its warnings are printed above
    _build_check(cfg, registry, args.file)
    print(text, end="")
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    registry = _registry()
    rows = [(s.name, ", ".join(s.points) or "(factory)", s.distribution) for s in registry]
    rows.sort()
    if args.output == "json":
        print(
            json.dumps(
                [
                    {"name": n, "extensionPoints": p.split(", "), "distribution": d}
                    for n, p, d in rows
                ]
            )
        )
        return 0
    head = ("NAME", "EXTENSION POINTS", "DISTRIBUTION")
    w0 = max(len(r[0]) for r in [head, *rows])
    w1 = max(len(r[1]) for r in [head, *rows])
    for r in [head, *rows]:
        print(f"{r[0].ljust(w0)}  {r[1].ljust(w1)}  {r[2]}")
    return 0


# ---- extender ------------------------------------------------------------------------


def cmd_extender(args: argparse.Namespace) -> int:
    """Serve a profile's plugins as a kube-scheduler HTTP extender until SIGTERM/SIGINT."""
    import signal
    import ssl

    import anyio

    from .extender.server import serve, server_ssl_context
    from .logging import configure

    if bool(args.tls_cert) != bool(args.tls_key):
        return _die(["ksched extender: --tls-cert-file and --tls-private-key-file go together"])
    if args.client_ca and not args.tls_cert:
        return _die(
            ["ksched extender: --client-ca-file needs --tls-cert-file and --tls-private-key-file"]
        )
    if args.client_ca and args.insecure_allow_unauthenticated:
        return _die(
            [
                "ksched extender: --insecure-allow-unauthenticated contradicts "
                "--client-ca-file (which requires a client certificate for every request)"
            ]
        )
    if args.max_request_bytes <= 0:
        return _die(["ksched extender: --max-request-bytes must be positive"])
    if args.max_request_nodes <= 0:
        return _die(["ksched extender: --max-request-nodes must be positive"])
    registry = _registry()
    cfg = _load_config(args.config, registry, args)
    _build_check(cfg, registry, args.config)
    names = [p.scheduler_name for p in cfg.profiles]
    if args.profile and args.profile not in names:
        return _die(
            [
                f"ksched extender: unknown profile {args.profile!r}; the config has: "
                + ", ".join(names)
            ]
        )
    ctx = None
    if args.tls_cert:
        try:
            ctx = server_ssl_context(args.tls_cert, args.tls_key, args.client_ca)
        except (OSError, ssl.SSLError) as e:
            return _die([f"ksched extender: TLS: {e}"])
    configure(None, args.v)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: serve(
                    cfg,
                    registry,
                    profile=args.profile,
                    host=args.bind_address,
                    port=args.port,
                    ssl_context=ctx,
                    kubeconfig=args.kubeconfig,
                    max_body_bytes=args.max_request_bytes,
                    max_nodes=args.max_request_nodes,
                    health_port=args.health_port,
                    plugin_timeout=args.plugin_timeout,
                    insecure_allow_unauthenticated=args.insecure_allow_unauthenticated,
                )
            )
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

    try:
        anyio.run(main)
    except Exception as e:  # a missing kubeconfig, a port in use: one line, no traceback
        err: BaseException = e
        while isinstance(err, BaseExceptionGroup) and len(err.exceptions) == 1:
            err = err.exceptions[0]
        print(f"ksched extender: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    from ._compiled import is_compiled
    from .features.versions import KUBERNETES_VERSION
    from .util.version import __version__

    build = ", compiled" if is_compiled() else ""
    p = argparse.ArgumentParser(
        prog="ksched", description="A Kubernetes scheduler with Python plugins."
    )
    p.add_argument(
        "--version",
        action="version",
        version=f"ksched v{__version__} (follows kube-scheduler {KUBERNETES_VERSION}{build})",
        help="print the version, the kube-scheduler release ksched follows, whether this is the "
        "compiled build, and exit",
    )
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("simulate", help="schedule the pending pods of a manifest file in memory")
    s.add_argument("--cluster", required=True, help="nodes and pods as YAML/JSON manifests")
    s.add_argument("--config", help="KubeSchedulerConfiguration file (default: built-in defaults)")
    s.add_argument("--output", choices=("table", "json"), default="table")
    s.add_argument("--seed", type=int, default=0, help="seed for tie-breaking among equal scores")
    s.add_argument(
        "--explain",
        nargs="?",
        const="",
        metavar="NS/NAME",
        help="why each pod (or only NS/NAME) landed where it did or stays pending: ranked "
        "feasible nodes with each Score plugin's share, rejections by reason, preemption; "
        "a bound NS/NAME is explained as if pending on the cluster without it",
    )
    s.add_argument(
        "--top",
        type=_count,
        default=10,
        metavar="N",
        help="feasible nodes shown per pod (default 10)",
    )
    s.add_argument("--report", metavar="FILE.html", help="also write a self-contained HTML report")
    s.add_argument(
        "--compare",
        metavar="B.yaml",
        help="what-if: schedule the same pods under this config too (A is --config) and "
        "print the summaries side by side and the pods that differ; with --explain, those "
        "pods' (or NS/NAME's) explanations under both; with --report, A's page with them",
    )
    s.add_argument(
        "--scheduler-name",
        action="append",
        metavar="NAME",
        help="also schedule the pending pods of scheduler NAME (repeatable; e.g. "
        "default-scheduler for a dump of a real cluster) with the config's first profile",
    )
    s.add_argument(
        "--all-pending",
        action="store_true",
        help="schedule every pending pod, whatever its schedulerName, with the first profile",
    )
    _gate_flags(s)
    s.set_defaults(fn=cmd_simulate)

    sn = sub.add_parser(
        "snapshot", help="write a live cluster's objects to a file simulate --cluster replays"
    )
    sn.add_argument(
        "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)"
    )
    sn.add_argument("--master", help="API server URL; overrides the kubeconfig's server")
    sn.add_argument("-o", "--output", metavar="FILE", help="write here (default: stdout)")
    sn.add_argument("--format", choices=("json", "yaml"), default="json")
    sn.add_argument("--verbose", action="store_true", help="count each kind on stderr")
    sn.set_defaults(fn=cmd_snapshot)

    b = sub.add_parser("bench", help="scheduler_perf-style benchmark")
    b.add_argument(
        "--workload",
        help="one workload (default: SchedulingBasic); with --apiserver real a comma-separated "
        "list (default: all)",
    )
    b.add_argument("--nodes", type=int, default=500)
    b.add_argument("--pods", type=int, default=1000)
    b.add_argument("--init-pods", type=int, default=0)
    b.add_argument("--config")
    b.add_argument("--seed", type=int, default=0)
    b.add_argument("--output", choices=("table", "json"), default="table")
    b.add_argument(
        "--mode",
        choices=("in-process", "e2e"),
        default="in-process",
        help="e2e: the daemon against the test API server over HTTP",
    )
    b.add_argument(
        "--baseline",
        choices=("null", "noplugins"),
        help="e2e only: also run a baseline and report the ratio: null = a bare round-robin "
        "binder on the same client stack; noplugins = the ksched daemon with only "
        "PrioritySort and DefaultBinder",
    )
    b.add_argument(
        "--apiserver",
        choices=("real",),
        help="real: each contestant end to end on a fresh real kube-apiserver (ControlPlane): "
        "ksched, the null client (no decisions; Bindings plus the writes the workload makes "
        "any scheduler do: preemption's status patches and deletions for PreemptionBasic, "
        "the pod's nomination and each claim's finalizer and allocation for "
        "SchedulingWithResourceClaimTemplate; 'null_writes' in the JSON) "
        "and with --against kube-scheduler",
    )
    b.add_argument(
        "--against",
        choices=("kube-scheduler",),
        help="--apiserver real: also run the real kube-scheduler with the same configuration",
    )
    b.add_argument(
        "--scale", choices=("small", "full"), help="--apiserver real: workload sizes (small)"
    )
    b.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="--apiserver real: run each workload N times, contestants interleaved; report "
        "each contestant's median and the median of each round's ratios",
    )
    b.add_argument(
        "--pin",
        action="store_true",
        help="--apiserver real: etcd and kube-apiserver on the first half of the CPUs, the "
        "scheduler under test and the harness on the rest, so the API server's cores are "
        "the bound (as on a control plane where the scheduler has cores of its own)",
    )
    b.add_argument(
        "--compare",
        metavar="FILE",
        help="--apiserver real: a saved --output json; flag workloads now 20%% slower (exit 1)",
    )
    _gate_flags(b)
    b.set_defaults(fn=cmd_bench)

    r = sub.add_parser("run", help="schedule the pods of a cluster (the daemon)")
    r.add_argument("--config", help="KubeSchedulerConfiguration file (default: built-in defaults)")
    r.add_argument(
        "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, in-cluster, ~/.kube/config)"
    )
    r.add_argument("--master", help="API server URL; overrides the kubeconfig's server")
    le = r.add_mutually_exclusive_group()
    le.add_argument(
        "--leader-elect",
        dest="leader_elect",
        action="store_true",
        default=None,
        help="elect a leader through a Lease (overrides leaderElection.leaderElect)",
    )
    le.add_argument(
        "--no-leader-elect",
        dest="leader_elect",
        action="store_false",
        help="run without leader election",
    )
    _serving_flags(r)
    r.add_argument(
        "--log-format",
        choices=("json", "console"),
        help="default: console on a terminal, JSON otherwise",
    )
    _timeout_flags(r, binding=True)
    r.add_argument(
        "--shadow-of",
        metavar="SCHEDULER_NAME",
        help="shadow mode: decide where the first profile would place each pending pod of "
        "SCHEDULER_NAME and compare with where that scheduler binds it; writes nothing "
        "(no bindings, status patches, events or lease); see /debug/shadow",
    )
    r.add_argument("-v", "--v", dest="v", type=int, default=0, help="log verbosity (klog levels)")
    _gate_flags(r)
    r.set_defaults(fn=cmd_run)

    c = sub.add_parser("config", help="configuration tools")
    csub = c.add_subparsers(dest="config_command", required=True)
    v = csub.add_parser(
        "validate", help="print the effective config (defaults filled in), or the errors"
    )
    v.add_argument("file")
    _gate_flags(v)
    v.set_defaults(fn=cmd_config_validate)

    pl = sub.add_parser("plugins", help="list every discovered plugin")
    pl.add_argument("--output", choices=("table", "json"), default="table")
    pl.set_defaults(fn=cmd_plugins)

    from .extender import (
        DEFAULT_BIND_ADDRESS,
        DEFAULT_MAX_BODY_BYTES,
        DEFAULT_MAX_NODES,
        DEFAULT_PORT,
    )

    x = sub.add_parser("extender", help="serve a profile's plugins as a kube-scheduler extender")
    x.add_argument("--config", required=True, help="KubeSchedulerConfiguration file")
    x.add_argument("--profile", help="schedulerName of the profile to serve (default: the first)")
    x.add_argument(
        "--bind-address",
        default=DEFAULT_BIND_ADDRESS,
        help="listen address (default: loopback only); beyond loopback every verb needs "
        "--client-ca-file (or --insecure-allow-unauthenticated)",
    )
    x.add_argument("--port", type=int, default=DEFAULT_PORT)
    x.add_argument("--tls-cert-file", "--tls-cert", dest="tls_cert", help="serving cert (PEM)")
    x.add_argument("--tls-private-key-file", "--tls-key", dest="tls_key", help="serving key (PEM)")
    x.add_argument(
        "--client-ca-file",
        "--client-ca",
        dest="client_ca",
        help="require, on every request, a client certificate signed by this CA (401 without)",
    )
    x.add_argument(
        "--insecure-allow-unauthenticated",
        # its name before /filter and /prioritize were protected too
        "--insecure-allow-unauthenticated-bind",
        action="store_true",
        help="answer every verb without authentication on a non-loopback address (anyone "
        "who can reach the port can bind any pod to any node)",
    )
    x.add_argument(
        "--kubeconfig", help="keep an informer cache (stateful plugins, NodeNames requests, /bind)"
    )
    x.add_argument(
        "--max-request-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help="largest request body (413 beyond)",
    )
    x.add_argument(
        "--max-request-nodes",
        type=int,
        default=DEFAULT_MAX_NODES,
        help="most nodes a request may carry without --kubeconfig (413 beyond; with it, "
        "the nodes the informer cache holds and a tenth more)",
    )
    x.add_argument(
        "--health-port",
        type=int,
        help="also serve /healthz, /readyz and /metrics "
        "here over plain HTTP (probes carry no client certificate)",
    )
    _timeout_flags(x, binding=False)
    x.add_argument("-v", type=int, default=0, help="log verbosity")
    _gate_flags(x)
    x.set_defaults(fn=cmd_extender)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    # Text from a user's file can hold anything, lone surrogates included (YAML's "\ud800"):
    # an error message quoting it must print, not raise UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    try:
        rc: int = args.fn(args)
    except SystemExit as e:
        return int(e.code) if isinstance(e.code, int) else 1
    except KschedError as e:  # the one place a reported error becomes lines and an exit code
        for line in e.lines():
            print(line, file=sys.stderr)
        return e.exit_code
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
