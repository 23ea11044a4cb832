"""``simulate --report``: a self-contained page, checked as a real browser renders it.

Headless Chromium loads the file and dumps the DOM after its script ran; the assertions
are on that DOM (the script-built pod index, the winner marks, the bars), against what
``simulate --output json --explain`` says. Without Chromium the browser tests skip, but
fail under CI=true (``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml

from ksched.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "cluster.yaml"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


@dataclass
class El:
    tag: str
    attrs: dict[str, str]
    children: list[El] = field(default_factory=list)
    text: list[str] = field(default_factory=list)

    def all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[El]:
        out = []
        for c in self.children:
            if (
                (tag is None or c.tag == tag)
                and (cls is None or cls in c.attrs.get("class", "").split())
                and all(c.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
            ):
                out.append(c)
            out += c.all(tag, cls, **attrs)
        return out

    def one(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> El:
        found = self.all(tag, cls, **attrs)
        assert len(found) == 1, (tag, cls, attrs, len(found))
        return found[0]

    def content(self) -> str:
        return "".join(self.text) + "".join(c.content() for c in self.children)


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = El("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = El(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(el)
        if tag not in VOID:
            self.stack.append(el)

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].text.append(data)


def parse(html: str) -> El:
    b = _Builder()
    b.feed(html)
    return b.root


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI") == "true":
        pytest.fail("chromium is not installed (.ci/run installs it): the report test must run")
    pytest.skip("chromium is not installed")


def rendered(page: Path, tmp_path: Path) -> El:
    """The DOM of ``page`` after headless Chromium loaded it and ran its script."""
    browser = chromium()
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "<html" in proc.stdout, proc.stderr[-2000:]
    return parse(proc.stdout)


def report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cluster: Path
) -> tuple[Path, dict[str, Any]]:
    page = tmp_path / "report.html"
    rc = main(["simulate", "--cluster", str(cluster), "--report", str(page), "--output", "json"])
    assert rc == 0
    out = capsys.readouterr().out
    assert json.loads(out)["pods"]  # stdout is still the one JSON document
    rc = main(["simulate", "--cluster", str(cluster), "--output", "json", "--explain"])
    assert rc == 0
    return page, {p["name"]: p for p in json.loads(capsys.readouterr().out)["pods"]}


def test_page_is_self_contained(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page, _ = report(tmp_path, capsys, EXAMPLE)
    text = page.read_text()
    # Nothing to fetch: no src attribute, no link element, only in-page anchors, and a
    # policy that would block a fetch anyway.
    assert not re.search(r"\ssrc=", text)
    assert "<link" not in text
    assert set(re.findall(r'href="([^"]*)"', text)) <= {f"#pod-{i}" for i in range(7)}
    assert re.findall(r"https?://[^\"' ]+", text) == ["http://www.w3.org/2000/svg"]
    assert "default-src 'none'" in text


def test_browser_renders_decisions_winners_and_bars(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page, pods = report(tmp_path, capsys, EXAMPLE)
    dom = rendered(page, tmp_path)
    # The script built the index from the embedded data: one entry per pod, linking to
    # its section, with the outcome.
    nav = dom.one("nav", id="pod-index")
    assert nav.attrs.get("data-ready") == "7"
    entries = nav.all("li", cls="index-entry")
    assert len(entries) == 7
    sections = {s.attrs["id"]: s for s in dom.all("section", cls="pod")}
    for li in entries:
        (a,) = li.all("a")
        section = sections[a.attrs["href"][1:]]
        name = section.attrs["data-pod"].split("/")[1]
        assert a.content() == section.attrs["data-pod"]
        assert li.attrs["data-status"] == section.attrs["data-status"] == pods[name]["status"]
    assert len(dom.one("select", id="status-filter").all("option")) == 4
    # Each scheduled pod: one winner row, on the node it got, marked; the scores table
    # ranks the nodes as the explanation does.
    for section in sections.values():
        p = pods[section.attrs["data-pod"].split("/")[1]]
        scores = section.all("table", cls="scores")
        if p["status"] != "Scheduled":
            assert not scores and p["status"] in section.one("p", cls="decision").content()
            continue
        winner = scores[0].one("tr", cls="winner")
        assert winner.attrs["data-node"] == p["node"]
        assert winner.one("span", cls="mark").content() == "★"
        rows = [tr.attrs["data-node"] for tr in scores[0].all("tr") if "data-node" in tr.attrs]
        assert rows == [r["node"] for r in p["explain"]["ranking"]]
    # The filter verdict matrix: the GPU node's taint turns the web pod away.
    web = next(s for s in sections.values() if s.attrs["data-pod"] == "shop/web-0")
    gpu = web.one("table", cls="filters").one("tr", data_node="gpu-b2")
    fails = gpu.all("td", cls="fail")
    assert len(fails) == 1 and "untolerated taint" in fails[0].content()
    # Utilization before and after, per resource, as bars sized by their percentage.
    bars = dom.one("svg", cls="bars").all("rect", cls="bar")
    by = {(b.attrs["data-resource"], b.attrs["data-when"]): b for b in bars}
    assert {r for r, _ in by} >= {"cpu", "memory", "pods", "nvidia.com/gpu"}
    for b in bars:
        pct = float(b.attrs["data-percent"])
        assert float(b.attrs["width"]) == pytest.approx(300 * min(pct, 100) / 100, abs=0.1)
    assert float(by["cpu", "after"].attrs["width"]) > float(by["cpu", "before"].attrs["width"])
    assert by["nvidia.com/gpu", "before"].attrs["data-percent"] == "0"
    assert by["nvidia.com/gpu", "after"].attrs["data-percent"] == "100"
    scheduled = sum(1 for p in pods.values() if p["status"] == "Scheduled")
    assert dom.one("b", id="scheduled-count").content() == str(scheduled)


def test_markup_in_cluster_data_stays_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A claim name with markup appears as text, in the matrix and the messages (the
    FitError quotes it: persistentvolumeclaim "..." not found)."""
    evil = "<img src=x onerror=alert(1)></script><script>document.title='pwned'</script>"
    objs = list(yaml.safe_load(EXAMPLE.read_text())["items"])
    for o in objs:
        if o["kind"] == "Pod" and not o["spec"].get("nodeName"):
            vol = {"name": "data", "persistentVolumeClaim": {"claimName": evil}}
            o["spec"]["volumes"] = [vol]
            break
    f = tmp_path / "evil.yaml"
    f.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objs}))
    page, _ = report(tmp_path, capsys, f)
    dom = rendered(page, tmp_path)
    assert not dom.all("img")
    assert [s for s in dom.all("script") if "pwned" in s.content()] == []
    assert "pwned" not in dom.one("title").content()
    assert evil in dom.content()
    assert dom.one("nav", id="pod-index").attrs.get("data-ready") == "7"


def test_unwritable_report_path_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "no-such-dir" / "r.html"
    rc = main(["simulate", "--cluster", str(EXAMPLE), "--report", str(target)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and str(target) in err[0]


def test_top_limits_the_tables_and_says_how_many_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "r.html"
    args = ["simulate", "--cluster", str(EXAMPLE), "--report", str(page), "--top", "1"]
    assert main(args) == 0
    capsys.readouterr()
    dom = parse(page.read_text())
    web = dom.one("section", data_pod="shop/web-0")
    rows = [tr for tr in web.one("table", cls="scores").all("tr") if "data-node" in tr.attrs]
    assert len(rows) == 1 and rows[0].attrs["class"] == "winner"
    notes = [p.content() for p in web.all("p", cls="muted")]
    assert "3 more feasible node(s) not shown." in notes
    # One feasible and one rejected node in the matrix; the other three are counted.
    matrix = web.one("table", cls="filters")
    assert [tr.attrs["data-node"] for tr in matrix.all("tr") if "data-node" in tr.attrs] == [
        "large-a2",
        "gpu-b2",
    ]
    assert "3 more evaluated node(s) not shown." in notes


def test_browser_renders_the_pods_that_move_under_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--report`` with ``--compare``: A's page, a table of the pods that differ under B
    (each linked to its section), B's outcome and scores in those sections, and the index
    marking them, all as ``--compare --output json --explain`` says."""
    least, most = (
        str(ROOT / "examples" / "least-allocated.yaml"),
        str(ROOT / "examples" / "most-allocated.yaml"),
    )
    page = tmp_path / "compare.html"
    base = ["simulate", "--cluster", str(EXAMPLE), "--config", least, "--compare", most]
    assert main([*base, "--report", str(page)]) == 0
    capsys.readouterr()
    assert main([*base, "--output", "json", "--explain"]) == 0
    data = json.loads(capsys.readouterr().out)
    moved = {f"{d['namespace']}/{d['name']}": d for d in data["differences"]}
    assert moved  # the example tells the two configs apart
    dom = rendered(page, tmp_path)
    section = dom.one("section", id="compare")
    assert section.one("b", id="moved-count").content() == str(len(moved))
    assert least in section.content() and most in section.content()
    rows = section.one("table", cls="moved").all("tr", cls="moved")
    assert [tr.attrs["data-pod"] for tr in rows] == list(moved)
    pods = {s.attrs["id"]: s for s in dom.all("section", cls="pod")}
    for tr in rows:
        d = moved[tr.attrs["data-pod"]]
        cells = [td.content() for td in tr.all("td")]
        assert cells == [tr.attrs["data-pod"], d["a"]["node"], d["b"]["node"]]
        target = pods[tr.one("a").attrs["href"][1:]]
        assert target.attrs["data-pod"] == tr.attrs["data-pod"]
    # Each moved pod's section: A's decision and, under B, B's decision and ranking.
    explained = {f"{e['namespace']}/{e['name']}": e for e in data["explain"]}
    for s in pods.values():
        key = s.attrs["data-pod"]
        under = s.all("div", cls="under-b")
        if key not in moved:
            assert under == [], key
            continue
        (b_side,) = under
        b = explained[key]["b"]
        decision = b_side.one("p", cls="decision")
        assert decision.one("span").content() == b["status"] == "Scheduled"
        assert decision.one("b").content() == b["node"]
        winner = b_side.one("table", cls="scores").one("tr", cls="winner")
        assert winner.attrs["data-node"] == b["node"]
        ranked = [tr.attrs["data-node"] for tr in b_side.all("tr") if "data-node" in tr.attrs]
        assert ranked == [r["node"] for r in b["explain"]["ranking"]]
        a_winner = s.all("table", cls="scores")[0].one("tr", cls="winner")
        assert a_winner.attrs["data-node"] == explained[key]["a"]["node"]
    # The script's index marks the moved pods and offers them as a filter.
    nav = dom.one("nav", id="pod-index")
    marked = [li.one("a").content() for li in nav.all("li", cls="moved")]
    assert marked == [k for k in (li.one("a").content() for li in nav.all("li")) if k in moved]
    assert sorted(marked) == sorted(moved)
    options = [o.content() for o in dom.one("select", id="status-filter").all("option")]
    assert options == ["all", "Scheduled", "Unschedulable", "Error", "moved"]
