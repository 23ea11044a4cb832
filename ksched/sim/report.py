"""``ksched simulate --report FILE.html``: one self-contained page about a simulation.

No network and no external assets: the CSS, the SVG bars and the small script are inline,
and a Content-Security-Policy forbids fetching anything. The page has a summary (pods
scheduled, cluster utilization per resource before and after as bars) and, per pod, the
decision, a node x Score plugin table with the winner marked, and the Filter verdict
matrix. Everything is rendered on the server side; the script only builds the pod index
(with a status filter) from the JSON embedded in the page.

A file with pod groups (GenericWorkload) also gets a table of them, one row per group:
its members, how many are bound and pending, whether it started and why not.

With ``--compare`` the page is A's, plus the pods that differ under B: a table of them
(A's node, B's), and in each such pod's section B's outcome and score table beside A's;
the index marks them and can show only them.

Every string from the cluster file is escaped: names and messages are user input.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .simulator import PodResult
from .summary import NodeUsage, allocation, cluster_percent

__all__ = ["Comparison", "render_report", "write_report"]


@dataclass(frozen=True)
class Comparison:
    """What ``--compare`` adds to A's page: B's label, the differing pods (``compare``'s
    ``differences``) and B's results by (namespace, name)."""

    label_a: str
    label_b: str
    differences: Sequence[dict[str, Any]]
    results_b: Mapping[tuple[str, str], PodResult]


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222;max-width:80em}
h1{font-size:1.4em}h2{font-size:1.15em;margin:0 0 .4em}
table{border-collapse:collapse;margin:.5em 0 1em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.winner td{background:#e6f4e6;font-weight:600}
.mark{color:#1a7f37}
section.pod{border-top:2px solid #ddd;padding-top:.8em;margin-top:1.2em}
.Scheduled{color:#1a7f37}.Unschedulable{color:#b35900}.Error{color:#c00}
td.ok{color:#1a7f37}td.skip{color:#999}td.fail{background:#fdecea;color:#8a1c1c}
.bars text{font-size:12px}
#pod-index li{display:inline-block;margin:0 1em .3em 0}
.muted{color:#777}
.wide{overflow-x:auto}td:first-child{white-space:nowrap}
.under-b{border-left:3px solid #2f6fab;padding-left:.8em}
"""

_SCRIPT = """
(function(){
  var data = JSON.parse(document.getElementById('ksched-data').textContent);
  var nav = document.getElementById('pod-index');
  var filter = document.createElement('select');
  filter.id = 'status-filter';
  var choices = ['all','Scheduled','Unschedulable','Error'];
  if (data.compare) choices.push('moved');
  choices.forEach(function(s){
    var o = document.createElement('option'); o.value = s; o.textContent = s; filter.appendChild(o);
  });
  var list = document.createElement('ul');
  data.pods.forEach(function(p){
    var li = document.createElement('li');
    li.className = 'index-entry ' + p.status + (p.moved ? ' moved' : '');
    li.dataset.status = p.status;
    li.dataset.moved = String(!!p.moved);
    var a = document.createElement('a');
    a.href = '#' + p.id; a.textContent = p.key;
    li.appendChild(a);
    li.appendChild(document.createTextNode(' ' + (p.node || p.status)));
    list.appendChild(li);
  });
  filter.addEventListener('change', function(){
    list.querySelectorAll('li').forEach(function(li){
      li.hidden = filter.value === 'moved' ? li.dataset.moved !== 'true'
        : filter.value !== 'all' && li.dataset.status !== filter.value;
    });
  });
  var label = document.createElement('label');
  label.textContent = 'show: '; label.appendChild(filter);
  nav.appendChild(label); nav.appendChild(list);
  nav.dataset.ready = String(data.pods.length);
})();
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def _e(v: Any) -> str:
    return html.escape(str(v), quote=True)


def _json_for_script(data: Any) -> str:
    """JSON safe inside ``<script>``: no ``</script>`` or ``<!--`` can close it early."""
    return (
        json.dumps(data)
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _bars(before: dict[str, float], after: dict[str, float]) -> str:
    """One SVG: per resource, a bar before and a bar after (percent of allocatable)."""
    names = list(after) + [r for r in before if r not in after]
    row, width, left = 22, 300, 170
    height = row * 2 * len(names) + 8 * len(names) + 4
    parts = [
        f'<svg class="bars" role="img" aria-label="cluster utilization" '
        f'width="{left + width + 70}" height="{height}" xmlns="http://www.w3.org/2000/svg">'
    ]
    y = 2
    for res in names:
        for when, src, color in (("before", before, "#9bb7d4"), ("after", after, "#2f6fab")):
            pct = src.get(res, 0.0)
            w = round(width * min(max(pct, 0.0), 100.0) / 100.0, 1)
            parts.append(
                f'<text x="0" y="{y + 15}">{_e(res)} {when}</text>'
                f'<rect x="{left}" y="{y + 3}" width="{width}" height="{row - 6}" fill="#eee"/>'
                f'<rect class="bar" data-resource="{_e(res)}" data-when="{when}" '
                f'data-percent="{pct:g}" x="{left}" y="{y + 3}" width="{w}" '
                f'height="{row - 6}" fill="{color}"/>'
                f'<text x="{left + width + 6}" y="{y + 15}">{pct:g}%</text>'
            )
            y += row
        y += 8
    parts.append("</svg>")
    return "".join(parts)


def _score_table(model: dict[str, Any], top: int) -> str:
    ranking: list[dict[str, Any]] = model.get("ranking") or []
    if not ranking:
        return '<p class="muted">No feasible node was scored.</p>'
    plugins = list(dict.fromkeys(p for r in ranking for p in r["scores"]))
    weights = model.get("weights") or {}
    # The top rows, and the selected node's wherever it ranks (first but for --top 0).
    shown = [(i, r) for i, r in enumerate(ranking, 1) if i <= top or r["selected"]]
    head = "".join(
        f'<th class="num">{_e(p)}'
        + (f" &times;{weights[p]}" if weights.get(p, 1) != 1 else "")
        + "</th>"
        for p in plugins
    )
    rows = []
    for i, r in shown:
        cls = ' class="winner"' if r["selected"] else ""
        mark = '<span class="mark" title="selected">★</span> ' if r["selected"] else ""
        cells = "".join(f'<td class="num">{_e(r["scores"].get(p, "-"))}</td>' for p in plugins)
        rows.append(
            f'<tr{cls} data-node="{_e(r["node"])}"><td class="num">{i}</td>'
            f'<td>{mark}{_e(r["node"])}</td><td class="num">{_e(r["total"])}</td>{cells}</tr>'
        )
    more = len(ranking) - len(shown)
    note = f'<p class="muted">{more} more feasible node(s) not shown.</p>' if more > 0 else ""
    return (
        '<table class="scores"><thead><tr><th class="num">#</th><th>node</th>'
        f'<th class="num">total</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
        + note
    )


def _filter_matrix(model: dict[str, Any], top: int) -> str:
    verdicts: dict[str, dict[str, str]] = model.get("filter") or {}
    if not verdicts:
        return '<p class="muted">No node was filtered (see the message).</p>'
    feasible = [r["node"] for r in model.get("ranking") or []]
    passed = set(feasible)
    rejected = [n for n in verdicts if n not in passed]
    nodes = [n for n in feasible if n in verdicts][:top] + rejected[:top]
    plugins = list(dict.fromkeys(p for v in verdicts.values() for p in v))
    rows = []
    for n in nodes:
        cells = []
        for p in plugins:
            verdict = verdicts[n].get(p, "")
            if verdict == "Success":
                cells.append('<td class="ok" title="Success">✓</td>')
            elif verdict in ("Skip", ""):
                cells.append(f'<td class="skip" title="{_e(verdict or "not run")}">&ndash;</td>')
            else:
                cells.append(f'<td class="fail">{_e(verdict)}</td>')
        rows.append(f'<tr data-node="{_e(n)}"><td>{_e(n)}</td>{"".join(cells)}</tr>')
    head = "".join(f"<th>{_e(p)}</th>" for p in plugins)
    more = len(verdicts) - len(nodes)
    note = f'<p class="muted">{more} more evaluated node(s) not shown.</p>' if more > 0 else ""
    return (
        f'<div class="wide"><table class="filters"><thead><tr><th>node</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>{note}"
    )


def _rejections(model: dict[str, Any]) -> str:
    groups: list[dict[str, Any]] = model.get("rejected") or []
    if not groups:
        return ""
    items = "".join(
        f'<li><b>{g["count"]}</b> {_e(g["reason"])} <span class="muted">'
        f"({_e(', '.join(g['plugins']))})</span></li>"
        for g in groups
    )
    head = "<p>Rejected nodes, by reason (as the FitError counts them):</p>"
    return f'{head}<ul class="rejected">{items}</ul>'


def _decision(r: PodResult) -> str:
    decision = f'<span class="{_e(r.status)}">{_e(r.status)}</span>'
    if r.node:
        decision += f" on <b>{_e(r.node)}</b>"
    return decision


def _under_b(r: PodResult | None, cmp: Comparison, top: int) -> str:
    """A differing pod's outcome and score table under B."""
    head = f"<h3>Under B ({_e(cmp.label_b)})</h3>"
    if r is None:
        return (
            f'<div class="under-b">{head}<p class="decision">not scheduled by B '
            "(no profile for its schedulerName)</p></div>"
        )
    parts = [f'<div class="under-b">{head}<p class="decision">{_decision(r)}</p>']
    if r.message:
        parts.append(f'<p class="message">{_e(r.message)}</p>')
    if r.explain:
        parts.append(_score_table(r.explain, top))
    parts.append("</div>")
    return "".join(parts)


def _pod_section(i: int, r: PodResult, top: int, cmp: Comparison | None, moved: bool) -> str:
    key = f"{r.namespace}/{r.name}"
    model = r.explain or {}
    decision = _decision(r)
    parts = [
        f'<section class="pod" id="pod-{i}" data-pod="{_e(key)}" data-status="{_e(r.status)}">',
        f"<h2>{_e(key)}</h2>",
        f'<p class="decision">{decision}</p>',
    ]
    if r.message:
        parts.append(f'<p class="message">{_e(r.message)}</p>')
    if r.preempted:
        parts.append(f"<p>Preempted: {_e(', '.join(r.preempted))}</p>")
    pre = model.get("preemption")
    if pre is not None and pre.get("nominatedNode"):
        parts.append(f"<p>Preemption nominated {_e(pre['nominatedNode'])}.</p>")
    if model:
        parts.append("<h3>Scores (weighted)</h3>")
        parts.append(_score_table(model, top))
        parts.append("<h3>Filter verdicts</h3>")
        parts.append(_rejections(model))
        parts.append(_filter_matrix(model, top))
    else:
        parts.append('<p class="muted">No explanation kept.</p>')
    if cmp is not None and moved:
        parts.append(_under_b(cmp.results_b.get((r.namespace, r.name)), cmp, top))
    parts.append("</section>")
    return "\n".join(parts)


def _side(d: dict[str, Any]) -> str:
    return _e(d["node"] or d["status"])


def _compare_section(cmp: Comparison, ids: Mapping[tuple[str, str], str]) -> str:
    """The pods that differ under B, each linked to its section (when A has one)."""
    rows = []
    for d in cmp.differences:
        key = (d["namespace"], d["name"])
        name = _e(f"{key[0]}/{key[1]}")
        link = f'<a href="#{ids[key]}">{name}</a>' if key in ids else name
        rows.append(
            f'<tr class="moved" data-pod="{name}"><td>{link}</td>'
            f"<td>{_side(d['a'])}</td><td>{_side(d['b'])}</td></tr>"
        )
    n = len(cmp.differences)
    table = (
        '<table class="moved"><thead><tr><th>pod</th><th>A</th><th>B</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows
        else '<p class="muted">No pod differs.</p>'
    )
    return (
        '<section id="compare"><h2>Compared with B</h2>'
        f"<p>This page is A (<code>{_e(cmp.label_a)}</code>); B is "
        f"<code>{_e(cmp.label_b)}</code>, the same pods with the same seed. "
        f'<b id="moved-count">{n}</b> pod(s) differ:</p>{table}</section>'
    )


def _groups_section(rows: Sequence[Mapping[str, Any]], ids: Mapping[str, str]) -> str:
    """A row per pod group (``groups.group_rows``): the group as one unit, its members
    linked to their sections, bound/pending, and why it has not started."""
    out = []
    for g in rows:
        members = []
        for m in g["members"]:
            name = _e(m["pod"])
            link = f'<a href="#{ids[m["pod"]]}">{name}</a>' if m["pod"] in ids else name
            where = _e(m["node"]) if m["node"] else _e(m["status"])
            members.append(f'{link} <span class="muted">{where}</span>')
        state = "started" if g["started"] else "pending"
        policy = f"gang, minCount {g['minCount']}" if g["minCount"] is not None else "basic"
        out.append(
            f'<tr class="group {state}" data-group="{_e(g["group"])}" data-started="'
            f'{str(g["started"]).lower()}"><td>{_e(g["group"])}<br><span class="muted">'
            f"{_e(policy)}</span></td><td>{'<br>'.join(members)}</td>"
            f'<td class="num">{g["bound"]}</td><td class="num">{g["pending"]}</td>'
            f"<td>{state}</td><td>{_e(g['reason'])}</td></tr>"
        )
    started = sum(1 for g in rows if g["started"])
    return (
        '<section id="groups"><h2>Pod groups</h2>'
        f'<p><b id="groups-started">{started}</b>/{len(rows)} pod groups started '
        "(a gang once its minCount members are bound).</p>"
        '<table class="groups"><thead><tr><th>group</th><th>members</th>'
        '<th class="num">bound</th><th class="num">pending</th><th>state</th>'
        f"<th>reason</th></tr></thead><tbody>{''.join(out)}</tbody></table></section>"
    )


def render_report(
    results: Sequence[PodResult],
    before: list[NodeUsage],
    after: list[NodeUsage],
    *,
    source: str,
    top: int = 10,
    compare: Comparison | None = None,
    groups: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The page's HTML (``compare``: A's page with what differs under B; ``groups``: the
    pod groups' rows, ``groups.group_rows``)."""
    scheduled = sum(1 for r in results if r.status == "Scheduled")
    pct_before, pct_after = cluster_percent(before), cluster_percent(after)
    alloc_after = allocation(after)
    used_before = sum(1 for u in before if u.pods)
    used_after = sum(1 for u in after if u.pods)
    moved = {(d["namespace"], d["name"]) for d in compare.differences} if compare else set()
    data: dict[str, Any] = {
        "source": source,
        "compare": compare is not None,
        "pods": [
            {
                "id": f"pod-{i}",
                "key": f"{r.namespace}/{r.name}",
                "status": r.status,
                "node": r.node,
                "moved": (r.namespace, r.name) in moved,
            }
            for i, r in enumerate(results)
        ],
    }
    rows = "".join(
        f"<tr><td>{_e(res)}</td>"
        f'<td class="num">{pct_before.get(res, 0.0):g}%</td>'
        f'<td class="num">{pct_after[res]:g}%</td>'
        f'<td class="num">{alloc_after[res]["max"]:g}%</td>'
        f'<td class="num">{alloc_after[res]["nodesAbove80"]}</td></tr>'
        for res in alloc_after
    )
    summary = (
        '<section id="summary"><h2>Summary</h2>'
        f'<p><b id="scheduled-count">{scheduled}</b>/{len(results)} pending pods scheduled; '
        f"{len(after)} nodes, {used_before} with pods before and {used_after} after.</p>"
        '<table class="utilization"><thead><tr><th>resource</th><th class="num">before</th>'
        '<th class="num">after</th><th class="num">max node after</th>'
        '<th class="num">nodes &gt;80% after</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        f"{_bars(pct_before, pct_after)}</section>"
    )
    pods = "\n".join(
        _pod_section(i, r, top, compare, (r.namespace, r.name) in moved)
        for i, r in enumerate(results)
    )
    if groups:
        summary += _groups_section(
            groups, {f"{r.namespace}/{r.name}": f"pod-{i}" for i, r in enumerate(results)}
        )
    if compare is not None:
        ids = {(r.namespace, r.name): f"pod-{i}" for i, r in enumerate(results)}
        summary += _compare_section(compare, ids)
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>ksched simulate: {_e(source)}</title><style>{_CSS}</style></head><body>"
        f"<h1>ksched simulate: {_e(source)}</h1>{summary}"
        '<nav id="pod-index" aria-label="pods"></nav>'
        f"{pods}"
        f'<script type="application/json" id="ksched-data">{_json_for_script(data)}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


def write_report(
    path: str,
    results: Sequence[PodResult],
    before: list[NodeUsage],
    after: list[NodeUsage],
    *,
    source: str,
    top: int = 10,
    compare: Comparison | None = None,
    groups: Sequence[Mapping[str, Any]] = (),
) -> None:
    text = render_report(
        results, before, after, source=source, top=top, compare=compare, groups=groups
    )
    with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:
        f.write(text)
