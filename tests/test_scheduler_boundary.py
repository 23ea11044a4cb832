"""No module outside ``ksched/scheduler/`` assigns an attribute of a Scheduler.

Front ends hand the scheduler what they need as constructor arguments or a loop policy
(``ksched.scheduler.loop``); one that reaches in (``sched.task_group = tg``,
``sim.sched.tie_breaks = ...``, ``sched.queue.hint_observer = ...``) breaks quietly when
the scheduler changes. A Scheduler is recognised by its name (``sched``, ``scheduler``,
``_sched``, also as an attribute: ``self._sched``, ``sim.sched``), by an annotation
naming ``Scheduler``, or by being bound to a ``Scheduler(...)`` call; an assignment,
augmented assignment, ``del`` or ``setattr`` anywhere along an attribute or item chain
rooted at one counts.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = [ROOT / "ksched", ROOT / "contrib_plugins" / "ksched_contrib"]
ALLOWED = ROOT / "ksched" / "scheduler"
NAMES = {"sched", "scheduler", "_sched"}


def _annotated_scheduler(ann: ast.expr | None) -> bool:
    if ann is None:
        return False
    return re.search(r"\bScheduler\b", ast.unparse(ann)) is not None


def _typed_names(tree: ast.AST) -> set[str]:
    """Names annotated as a Scheduler or bound to ``Scheduler(...)`` anywhere in a module."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and _annotated_scheduler(node.annotation):
            out.add(node.arg)
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and _annotated_scheduler(node.annotation)
        ):
            out.add(node.target.id)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called == "Scheduler":
                out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def _is_scheduler(node: ast.expr, typed: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in NAMES or node.id in typed
    return isinstance(node, ast.Attribute) and node.attr in NAMES


def _reaches_scheduler(target: ast.expr, typed: set[str]) -> bool:
    """``target`` writes into a Scheduler: some object along its chain is one."""
    node = target
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
        if _is_scheduler(node, typed):
            return True
    return False


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        out: list[ast.expr] = []
        for t in node.targets:
            out.extend(t.elts if isinstance(t, ast.Tuple | ast.List) else [t])
        return out
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    if isinstance(node, ast.Delete):
        return list(node.targets)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("setattr", "delattr")
        and node.args
    ):
        # setattr(sched, "x", v) writes sched.x: check the object as a chain's root
        return [ast.Attribute(value=node.args[0], attr="?", ctx=ast.Store())]
    return []


def violations(source: str, filename: str = "<source>") -> list[str]:
    """Each write into a Scheduler in ``source``, as ``file:line: code``."""
    tree = ast.parse(source, filename)
    typed = _typed_names(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        for target in _targets(node):
            if _reaches_scheduler(target, typed):
                found.append((node.lineno, ast.unparse(node).splitlines()[0]))
    return [f"{filename}:{line}: {code}" for line, code in sorted(found)]


def test_the_checker_finds_writes_into_a_scheduler() -> None:
    """Every way the front ends used to reach in is caught; their own attributes are not."""
    source = """
from ksched.scheduler.scheduler import Scheduler

def wire(sim, d, metrics, s: Scheduler, tg) -> None:
    sim.sched.tie_breaks = {}
    sched.queue.hint_observer = metrics.hint_executed
    s.metrics = metrics
    self._sched.stopping = True
    d.scheduler.adopted["x"] = "ksched"
    setattr(sched, "task_group", tg)
    other = Scheduler(config, registry, cluster=None)
    other.in_flight_bindings += 1
    self.sched = s          # the front end's own attribute
    self._sched = other     # likewise
    sched.queue.add(pod)    # a call, not an assignment
"""
    got = violations(source)
    assert [line.split(": ", 1)[1] for line in got] == [
        "sim.sched.tie_breaks = {}",
        "sched.queue.hint_observer = metrics.hint_executed",
        "s.metrics = metrics",
        "self._sched.stopping = True",
        "d.scheduler.adopted['x'] = 'ksched'",
        "setattr(sched, 'task_group', tg)",
        "other.in_flight_bindings += 1",
    ]


def test_no_module_outside_scheduler_assigns_a_scheduler_attribute() -> None:
    files = [
        p for pkg in PACKAGES for p in sorted(pkg.rglob("*.py")) if not p.is_relative_to(ALLOWED)
    ]
    assert len(files) > 100  # the packages were found
    found = [v for p in files for v in violations(p.read_text(), str(p.relative_to(ROOT)))]
    assert found == []
