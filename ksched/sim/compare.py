"""What-if: the same pending pods under two configurations (``simulate --compare``).

Each configuration gets its own simulation of the same cluster file with the same seed,
so the comparison is deterministic and any difference comes from the configurations.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..framework.registry import Registry
from .cluster_file import ClusterFile
from .groups import GroupSpec, placed, pod_groups, started
from .simulator import PodResult, Simulation
from .summary import NodeUsage, summarize

if TYPE_CHECKING:
    from ..config.types import KubeSchedulerConfiguration

__all__ = [
    "NOT_CONSIDERED",
    "Run",
    "compare",
    "compare_runs",
    "gangs",
    "render_compare",
    "render_explain_pair",
    "run_both",
]

#: The status of a pod one configuration has no profile for (its schedulerName).
NOT_CONSIDERED = "NotConsidered"


@dataclass
class Run:
    """One configuration's simulation: its results (with explanations when asked for)
    and every node's usage before and after (the report)."""

    results: list[PodResult]
    before: list[NodeUsage]
    after: list[NodeUsage]

    def by_key(self) -> dict[tuple[str, str], PodResult]:
        return {(r.namespace, r.name): r for r in self.results}


def _run(
    cluster: ClusterFile,
    config: KubeSchedulerConfiguration,
    registry: Registry,
    seed: int,
    adopt: Mapping[str, str] | None,
    explain: bool,
) -> Run:
    sim = Simulation(cluster, config, registry, seed=seed, explain=explain, adopt=adopt)
    return Run(*anyio.run(sim.run_measured))


def run_both(
    cluster: ClusterFile,
    config_a: Any,
    config_b: Any,
    registry: Registry,
    *,
    seed: int = 0,
    adopt: Mapping[str, str] | None = None,
    explain: bool = False,
) -> tuple[Run, Run]:
    """The same cluster under A and under B, with the same seed (``explain``: keep every
    pod's explanation, for ``--explain`` and ``--report``)."""
    a = _run(cluster, config_a, registry, seed, adopt, explain)
    return a, _run(cluster, config_b, registry, seed, adopt, explain)


def gangs(groups: Mapping[str, GroupSpec], a: Run, b: Run) -> list[dict[str, Any]]:
    """Per pod group, its bound members and whether it started under A and under B."""
    out = []
    for key, spec in groups.items():
        row: dict[str, Any] = {"group": key, "members": len(spec.members)}
        for side, run in (("a", a), ("b", b)):
            nodes = placed(spec, run.results)
            row[side] = {"bound": len(nodes), "started": started(spec, nodes)}
        out.append(row)
    return out


def compare_runs(a: Run, b: Run, groups: Mapping[str, GroupSpec] | None = None) -> dict[str, Any]:
    """``{"summary": {"A", "B"}, "differences": [...]}`` (see the README's what-if), and
    ``"gangs"`` (``gangs``) when the file has pod groups."""
    ra, rb = a.by_key(), b.by_key()
    order = list(ra) + [k for k in rb if k not in ra]
    differences = []
    for key in order:
        x, y = ra.get(key), rb.get(key)
        side_a = {"node": x.node, "status": x.status} if x else _absent()
        side_b = {"node": y.node, "status": y.status} if y else _absent()
        if side_a != side_b:
            differences.append({"namespace": key[0], "name": key[1], "a": side_a, "b": side_b})
    differences.sort(key=lambda d: (d["namespace"], d["name"]))
    data: dict[str, Any] = {
        "summary": {"A": summarize(a.after, a.results), "B": summarize(b.after, b.results)},
        "differences": differences,
    }
    if groups:
        data["gangs"] = gangs(groups, a, b)
    return data


def compare(
    cluster: ClusterFile,
    config_a: Any,
    config_b: Any,
    registry: Registry,
    *,
    seed: int = 0,
    adopt: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``compare_runs`` of ``run_both``; ``adopt`` as for ``Simulation``
    (``--scheduler-name``/``--all-pending``)."""
    a, b = run_both(cluster, config_a, config_b, registry, seed=seed, adopt=adopt)
    return compare_runs(a, b, pod_groups(cluster))


def _absent() -> dict[str, Any]:
    return {"node": None, "status": NOT_CONSIDERED}


def _fmt(v: float) -> str:
    return f"{v:g}"


def render_compare(data: dict[str, Any], label_a: str, label_b: str) -> list[str]:
    """The side-by-side summary and the differing pods, as text."""
    sa, sb = data["summary"]["A"], data["summary"]["B"]
    rows: list[tuple[str, str, str]] = [("", f"A: {label_a}", f"B: {label_b}")]
    rows.append(
        ("pods scheduled", f"{sa['scheduled']}/{sa['pods']}", f"{sb['scheduled']}/{sb['pods']}")
    )
    rows.append(
        ("nodes used", f"{sa['nodesUsed']}/{sa['nodes']}", f"{sb['nodesUsed']}/{sb['nodes']}")
    )
    resources = list(sa["allocation"]) + [r for r in sb["allocation"] if r not in sa["allocation"]]
    for res in resources:
        cells = []
        for s in (sa, sb):
            al = s["allocation"].get(res)
            cells.append(
                "-"
                if al is None
                else f"mean {_fmt(al['mean'])}% max {_fmt(al['max'])}% >80%: {al['nodesAbove80']}"
            )
        rows.append((f"{res} allocation", cells[0], cells[1]))
    ta, tb = sa["topologySpread"], sb["topologySpread"]
    if ta["zones"] or tb["zones"]:

        def zones(t: dict[str, Any]) -> str:
            z = " ".join(f"{k}={v}" for k, v in t["zones"].items())
            return f"skew {t['skew']} ({z})"

        rows.append(("placed per zone", zones(ta), zones(tb)))
        names = list(ta["workloads"]) + [w for w in tb["workloads"] if w not in ta["workloads"]]
        for w in names:
            cells = [
                str(t["workloads"][w]["skew"]) if w in t["workloads"] else "-" for t in (ta, tb)
            ]
            rows.append((f"zone skew {w}", cells[0], cells[1]))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines = [f"{r[0].ljust(w0)}  {r[1].ljust(w1)}  {r[2]}".rstrip() for r in rows]
    lines += _gang_lines(data.get("gangs") or [])
    diffs = data["differences"]
    lines.append("")
    if not diffs:
        lines.append("no pod differs")
        return lines
    lines.append(f"{len(diffs)} pod(s) differ:")
    table = [("POD", "A", "B")]
    for d in diffs:
        table.append(
            (
                f"{d['namespace']}/{d['name']}",
                d["a"]["node"] or d["a"]["status"],
                d["b"]["node"] or d["b"]["status"],
            )
        )
    c0 = max(len(r[0]) for r in table)
    c1 = max(len(r[1]) for r in table)
    lines += [f"{r[0].ljust(c0)}  {r[1].ljust(c1)}  {r[2]}".rstrip() for r in table]
    return lines


def _gang_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """Which pod groups start under each config: a count, then one row per group."""
    if not rows:
        return []

    def cell(side: dict[str, Any], members: int) -> str:
        return f"{'started' if side['started'] else 'pending'} ({side['bound']}/{members} bound)"

    n = len(rows)
    sa = sum(1 for r in rows if r["a"]["started"])
    sb = sum(1 for r in rows if r["b"]["started"])
    table = [("GANG", "A", "B")]
    table += [(r["group"], cell(r["a"], r["members"]), cell(r["b"], r["members"])) for r in rows]
    c0 = max(len(r[0]) for r in table)
    c1 = max(len(r[1]) for r in table)
    return ["", f"pod groups started: A {sa}/{n}, B {sb}/{n}"] + [
        f"{r[0].ljust(c0)}  {r[1].ljust(c1)}  {r[2]}".rstrip() for r in table
    ]


# ---- one pod under both configurations ----------------------------------------------------


def _outcome(model: dict[str, Any] | None, result: PodResult | None) -> str:
    if result is None:
        return "not scheduled by this config (no profile for its schedulerName)"
    if model is None:
        return f"{result.status} (no scheduling cycle)"
    return f"{model['result']}" + (f" on {model['node']}" if model.get("node") else "")


def _ranked(model: dict[str, Any] | None, top: int) -> list[str]:
    """The top feasible nodes as ``* NODE  TOTAL`` cells, nodes and totals aligned."""
    ranking = ((model or {}).get("ranking") or [])[:top]
    if not ranking:
        return []
    wn = max(len(r["node"]) for r in ranking)
    wt = max(len(str(r["total"])) for r in ranking)
    return [
        f"{'*' if r['selected'] else ' '} {r['node'].ljust(wn)}  {str(r['total']).rjust(wt)}"
        for r in ranking
    ]


def _rejections(model: dict[str, Any] | None) -> list[str]:
    return [f"{g['count']} {g['reason']}" for g in (model or {}).get("rejected") or []]


def render_explain_pair(
    key: str,
    results: tuple[PodResult | None, PodResult | None],
    labels: tuple[str, str],
    *,
    top: int = 10,
    bound: tuple[str, str, str] | None = None,
) -> list[str]:
    """One pod's explanation under A and under B side by side: outcome, the ranked
    feasible nodes (``*`` the selected one), rejections; then each Score plugin's weighted
    share on the node each config chose, which is why a pod moved. ``bound``: the lines
    saying where a bound pod's node ranks under each, and that node (its scores are shown
    beside the chosen nodes')."""
    models = [r.explain if r is not None else None for r in results]
    rows: list[tuple[str, str, str]] = [(key, f"A: {labels[0]}", f"B: {labels[1]}")]
    if bound is not None:
        rows.append((f"its node {bound[2]}", bound[0], bound[1]))
    rows.append(("result", _outcome(models[0], results[0]), _outcome(models[1], results[1])))
    ranked = [(m or {}).get("ranking") or [] for m in models]
    feasible = [
        f"{len(r)} of {m['nodes']} nodes" if m is not None else ""
        for r, m in zip(ranked, models, strict=True)
    ]
    rows.append(("feasible", feasible[0], feasible[1]))
    cells = [_ranked(m, top) for m in models]
    for i in range(max(len(c) for c in cells)):
        pair = [c[i] if i < len(c) else "" for c in cells]
        rows.append((f"#{i + 1}", pair[0], pair[1]))
    rej = [_rejections(m) for m in models]
    for j in range(max(len(r) for r in rej)):
        pair = [r[j] if j < len(r) else "" for r in rej]
        rows.append(("rejected" if j == 0 else "", pair[0], pair[1]))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    lines = [f"{r[0].ljust(w0)}  {r[1].ljust(w1)}  {r[2]}".rstrip() for r in rows]
    return lines + _choices(models, [bound[2]] if bound is not None else [])


def _choices(models: Sequence[dict[str, Any] | None], first: list[str]) -> list[str]:
    """Each config's weighted score per plugin on the nodes the two chose (``first``
    before them: a bound pod's node)."""
    picked = [m["node"] for m in models if m is not None and m.get("node")]
    chosen = list(dict.fromkeys([*first, *picked]))
    if not chosen:
        return []
    head = ["PLUGIN"]
    columns: list[dict[str, Any]] = []
    for side, m in zip("AB", models, strict=True):
        for node in chosen:
            row = next((r for r in (m or {}).get("ranking") or [] if r["node"] == node), None)
            if row is not None:
                head.append(f"{side} {node}")
                columns.append(row)
    if not columns:
        return []
    plugins = list(dict.fromkeys(p for c in columns for p in c["scores"]))
    table = [head]
    table += [[p] + [str(c["scores"].get(p, "-")) for c in columns] for p in plugins]
    table.append(["TOTAL"] + [str(c["total"]) for c in columns])
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    what = "its node and the chosen nodes" if first else "the chosen nodes"
    out = [f"  weighted scores on {what}, per config:"]
    for row in table:
        cells = [row[0].ljust(widths[0])] + [c.rjust(widths[i]) for i, c in enumerate(row) if i]
        out.append("    " + "  ".join(cells))
    return out
