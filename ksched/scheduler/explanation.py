"""One readable model of a scheduling decision, for ``simulate --explain``, the HTML report
and the daemon's ``/debug/explain``.

A cycle run with ``explain=True`` leaves raw material in ``CycleResult.explain``: every
Filter plugin's verdict per evaluated node (``filter``), every Score plugin's raw,
normalized and weighted score per feasible node (``score``) and the totals (``total``).
That answers "what did each plugin say" but not the questions people ask, so
``describe`` adds, from the same cycle:

* ``result``/``node``/``message``: the outcome (``node`` only when it was placed);
* ``ranking``: the feasible nodes, best total first, each with every Score plugin's
  weighted contribution and whether it was the one selected;
* ``rejected``: the nodes Filter turned away, grouped by the reason that counted for the
  FitError (each node's first rejecting plugin), with counts, in the FitError's order;
* ``preemption``: what PostFilter (DefaultPreemption) decided, when it ran.

``render_text`` turns the model into the human text ``simulate --explain`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cycle_result import CycleResult

__all__ = ["describe", "group_rejections", "preemption_of", "render_text", "result_label"]

#: The node-list length shown per reason in text; the JSON has every node.
TEXT_NODES_PER_REASON = 5


def result_label(res: CycleResult) -> str:
    """``Scheduled``, ``Unschedulable`` or ``Error``: what the cycle concluded."""
    from ..framework.status import Code

    if res.status.is_success():
        return "Scheduled"
    return "Error" if res.status.code == Code.ERROR else "Unschedulable"


def group_rejections(
    statuses: dict[str, Any], absent: Any, absent_nodes: Sequence[str]
) -> list[dict[str, Any]]:
    """Rejected nodes by reason, as the FitError counts them, in its order.

    ``statuses`` maps a node to the Status that rejected it (its first rejecting plugin);
    ``absent`` is the status of the ``absent_nodes`` (those a PreFilter result or
    rejection ruled out before Filter). A status with several reasons counts its node
    under each, exactly as ``FitError.Error()`` does; groups are ordered as its
    ``"count reason"`` strings sort.
    """
    groups: dict[str, dict[str, Any]] = {}

    def add(reason: str, node: str, plugin: str) -> None:
        g = groups.get(reason)
        if g is None:
            g = groups[reason] = {"reason": reason, "count": 0, "plugins": [], "nodes": []}
        g["count"] += 1
        g["nodes"].append(node)
        if plugin and plugin not in g["plugins"]:
            g["plugins"].append(plugin)

    for node, st in statuses.items():
        for r in st.all_reasons():
            add(r, node, st.plugin)
    if absent is not None:
        for node in absent_nodes:
            for r in absent.all_reasons():
                add(r, node, absent.plugin)
    out = sorted(groups.values(), key=lambda g: f"{g['count']} {g['reason']}")
    for g in out:
        g["plugins"].sort()
    return out


def describe(
    res: CycleResult,
    node_names: Sequence[str],
    *,
    preemption: dict[str, Any] | None = None,
    weights: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The model of one cycle's decision (see the module docstring).

    ``node_names``: every node of the cycle's snapshot (the FitError's "0/N"). The raw
    ``filter``/``score``/``total`` stay in the result (empty when not computed), for
    machines; every key is always there. ``preemption``
    overrides what the cycle's PostFilter said (the daemon's recomputation does not run
    PostFilter and passes the last real attempt's).
    """
    raw = dict(res.explain or {})
    result = result_label(res)
    out: dict[str, Any] = {
        "result": result,
        "node": res.node or None if result == "Scheduled" else None,
        "message": "" if result == "Scheduled" else res.message,
        "nodes": len(node_names),
    }
    filt: dict[str, dict[str, str]] = raw.get("filter") or {}
    totals: dict[str, int] = raw.get("total") or {}
    scores: dict[str, dict[str, dict[str, int]]] = raw.get("score") or {}
    selected = res.node or ""
    ranking: list[dict[str, Any]] = [
        {
            "node": n,
            "total": t,
            "scores": {p: per[n]["weighted"] for p, per in scores.items() if n in per},
            "selected": n == selected,
        }
        for n, t in totals.items()
    ]
    # Best first; among equal totals the selected node (the tie-break's pick), then by name.
    ranking.sort(key=lambda r: (-r["total"], not r["selected"], r["node"]))
    out["ranking"] = ranking
    used = {p for r in ranking for p in r["scores"]}
    out["weights"] = {p: (weights or {}).get(p, 1) for p in sorted(used)}
    nts = res.diagnosis.node_to_status
    if res.fit_error is not None:
        nts = res.fit_error.diagnosis.node_to_status
    narrowed = raw.get("narrowedTo")
    if nts.absent is None:
        absent_nodes: list[str] = []
    elif narrowed is not None:
        inside = set(narrowed)
        absent_nodes = [n for n in node_names if n not in inside and n not in nts.statuses]
    else:
        absent_nodes = [n for n in node_names if n not in nts.statuses and n not in filt]
    out["rejected"] = group_rejections(nts.statuses, nts.absent, absent_nodes)
    # Nodes the search never reached (percentageOfNodesToScore found enough first); 0
    # when Filter did not run at all (the pod itself was invalid, a plugin errored).
    reached = len(filt) + len(absent_nodes)
    out["unevaluated"] = max(0, len(node_names) - reached) if "filter" in raw else 0
    out["preemption"] = preemption_of(res) if preemption is None else preemption
    out["filter"], out["score"], out["total"] = filt, scores, totals
    return out


def preemption_of(res: CycleResult) -> dict[str, Any] | None:
    """What the cycle's PostFilter decided, or None when it did not run."""
    fe = res.fit_error
    if fe is None:
        return None
    pf = res.post_filter
    msg = fe.diagnosis.post_filter_msg
    if pf is None and not msg:
        return None
    return {
        "nominatedNode": (pf.nominated_node_name if pf is not None else "") or None,
        "victims": sorted(v.key for v in pf.victims) if pf is not None else [],
        "message": msg,
    }


# ---- text ------------------------------------------------------------------------------


def _table(rows: Sequence[Sequence[str]], right: Iterable[int] = ()) -> list[str]:
    """Columns padded to their widest cell; ``right`` columns right-aligned."""
    r = set(right)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [c.rjust(widths[i]) if i in r else c.ljust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return lines


def _nodes(names: Sequence[str]) -> str:
    shown = ", ".join(names[:TEXT_NODES_PER_REASON])
    more = len(names) - TEXT_NODES_PER_REASON
    return shown + (f", +{more} more" if more > 0 else "")


def render_text(
    key: str,
    model: dict[str, Any] | None,
    *,
    top: int = 10,
    final: tuple[str, str | None] | None = None,
    message: str = "",
) -> list[str]:
    """Human lines for one pod: outcome, ranked feasible nodes, rejections, preemption.

    ``final`` is the pod's eventual (status, node) when it differs from what the explained
    cycle decided (a later binding failure, say). Without a model (no scheduling cycle ran:
    a gated pod) only that and ``message`` are shown.
    """
    if model is None:
        status, node = final or ("Unschedulable", None)
        lines = [f"{key}: {status}" + (f" on {node}" if node else "") + " (no scheduling cycle)"]
        return lines + ([f"  message: {message}"] if message else [])
    result, node = model["result"], model.get("node")
    head = f"{key}: {result}" + (f" on {node}" if node else "")
    lines = [head]
    if final is not None and final != (result, node):
        lines.append(f"  finally: {final[0]}" + (f" on {final[1]}" if final[1] else ""))
    if model.get("message"):
        lines.append(f"  message: {model['message']}")
    ranking: list[dict[str, Any]] = model.get("ranking") or []
    n = model.get("nodes", 0)
    if ranking:
        shown = ranking[: max(top, 0)]
        what = f"top {len(shown)} of {len(ranking)}" if len(shown) < len(ranking) else "all"
        lines.append(
            f"  feasible: {len(ranking)} of {n} nodes, ranked by total score ({what}; "
            "each Score plugin's weighted contribution):"
            if shown
            else f"  feasible: {len(ranking)} of {n} nodes"
        )
        plugins: list[str] = []
        for r in ranking:
            for p in r["scores"]:
                if p not in plugins:
                    plugins.append(p)
        w = model.get("weights") or {}
        head_row = ["", "#", "NODE", "TOTAL"] + [
            f"{p}(x{w[p]})" if w.get(p, 1) != 1 else p for p in plugins
        ]
        rows = [head_row]
        for i, r in enumerate(shown, 1):
            rows.append(
                ["*" if r["selected"] else "", str(i), r["node"], str(r["total"])]
                + [str(r["scores"].get(p, "-")) for p in plugins]
            )
        if shown:
            lines += ["    " + line for line in _table(rows, right=range(3, len(head_row)))]
        if any(r["selected"] for r in shown):
            lines.append("    (* selected)")
    rejected: list[dict[str, Any]] = model.get("rejected") or []
    if rejected:
        lines.append("  rejected nodes, by reason (as the FitError counts them, in its order):")
        rows = [
            [str(g["count"]), g["reason"], ",".join(g["plugins"]), _nodes(g["nodes"])]
            for g in rejected
        ]
        lines += ["    " + line for line in _table(rows, right=[0])]
    if model.get("unevaluated"):
        lines.append(
            f"  not evaluated: {model['unevaluated']} nodes (enough feasible nodes were "
            "found first: percentageOfNodesToScore)"
        )
    pre = model.get("preemption")
    if pre is not None:
        if pre.get("nominatedNode"):
            victims = ", ".join(pre["victims"]) or "none"
            when = " (by an earlier attempt)" if pre.get("earlierAttempt") else ""
            lines.append(
                f"  preemption{when}: nominated {pre['nominatedNode']}; victims: {victims}"
            )
        else:
            # PostFilter's message holds every PostFilter plugin's sentence (DynamicResources'
            # "no new claims to deallocate, " first): show DefaultPreemption's.
            msg = pre.get("message") or "no node nominated"
            lines.append(f"  preemption: {msg.rpartition('preemption: ')[2]}")
    return lines
