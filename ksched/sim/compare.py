"""What-if: the same pending pods under two configurations (``simulate --compare``).

Each configuration gets its own simulation of the same cluster file with the same seed,
so the comparison is deterministic and any difference comes from the configurations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

from ..framework.registry import Registry
from .cluster_file import ClusterFile
from .simulator import Simulation
from .summary import summarize

__all__ = ["NOT_CONSIDERED", "compare", "render_compare"]

#: The status of a pod one configuration has no profile for (its schedulerName).
NOT_CONSIDERED = "NotConsidered"


def _run(
    cluster: ClusterFile,
    config: Any,
    registry: Registry,
    seed: int,
    adopt: Mapping[str, str] | None,
) -> dict[str, Any]:
    sim = Simulation(cluster, config, registry, seed=seed, adopt=adopt)
    results, _, after = anyio.run(sim.run_measured)
    return {"results": results, "summary": summarize(after, results)}


def compare(
    cluster: ClusterFile,
    config_a: Any,
    config_b: Any,
    registry: Registry,
    *,
    seed: int = 0,
    adopt: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """``{"summary": {"A", "B"}, "differences": [...]}`` (see the README's what-if);
    ``adopt`` as for ``Simulation`` (``--scheduler-name``/``--all-pending``)."""
    a = _run(cluster, config_a, registry, seed, adopt)
    b = _run(cluster, config_b, registry, seed, adopt)
    ra = {(r.namespace, r.name): r for r in a["results"]}
    rb = {(r.namespace, r.name): r for r in b["results"]}
    order = list(ra) + [k for k in rb if k not in ra]
    differences = []
    for key in order:
        x, y = ra.get(key), rb.get(key)
        side_a = {"node": x.node, "status": x.status} if x else _absent()
        side_b = {"node": y.node, "status": y.status} if y else _absent()
        if side_a != side_b:
            differences.append({"namespace": key[0], "name": key[1], "a": side_a, "b": side_b})
    differences.sort(key=lambda d: (d["namespace"], d["name"]))
    return {"summary": {"A": a["summary"], "B": b["summary"]}, "differences": differences}


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
