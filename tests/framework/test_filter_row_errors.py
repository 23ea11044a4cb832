"""A batch Filter plugin's per-row errors (``RowErrors``) fail the cycle only on a node
every earlier Filter plugin lets through, and an earlier per-node plugin that raises or
answers Error on that node is the error instead: the cycle ends with an Error status,
never an exception."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ksched.api.objects import Pod, decode
from ksched.config import KubeSchedulerConfiguration
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import FilterPlugin
from ksched.framework.status import Code, RowErrors, Status
from ksched.framework.types import PodInfo
from ksched.testing import make_node, make_pod
from ksched.testing.harness import _profile, _registry, _simulation

#: what the per-node plugin before the batch one does on n1 (the only erring row)
BEFORE: dict[str, str] = {}


class _Before(FilterPlugin):
    name = "Before"

    def filter(self, state: Any, pod: PodInfo, node: Any) -> Status | None:
        if node.node.metadata.name == "n1":
            if BEFORE["n1"] == "raise":
                raise RuntimeError("before broke on n1")
            if BEFORE["n1"] == "error":
                return Status(Code.ERROR, "before erred on n1")
            if BEFORE["n1"] == "reject":
                return Status(Code.UNSCHEDULABLE, "before says no")
        return None


class _Batchy(FilterPlugin):
    name = "Batchy"

    def filter(self, state: Any, pod: PodInfo, node: Any) -> Status | None:
        if node.node.metadata.name == "n1":
            return Status(Code.ERROR, "batchy erred on n1")
        return None

    def filter_batch(self, state: Any, pod: PodInfo, snap: Any) -> Any:
        rows = {ni.node.metadata.name: r for r, ni in enumerate(snap.node_infos)}
        mask = np.ones(len(snap.node_infos), dtype=bool)
        mask[rows["n1"]] = False
        raise RowErrors({rows["n1"]: Status(Code.ERROR, "batchy erred on n1")}, mask)


@pytest.mark.parametrize("every_row", [True, False])
@pytest.mark.parametrize(
    ("before", "error"),
    [
        ("raise", 'running Filter plugin "Before": RuntimeError: before broke on n1'),
        ("error", "before erred on n1"),
        ("pass", 'running "Batchy" filter plugin: batchy erred on n1'),
        ("reject", None),
    ],
)
def test_an_erring_row_is_the_first_error_the_per_node_walk_would_meet(
    before: str, error: str | None, every_row: bool
) -> None:
    """Every row (the batch walk), or the same rows as few candidates (judged node by
    node first): the same outcome."""
    BEFORE["n1"] = before
    reg = _registry([_Before, _Batchy])
    profile = _profile("ksched", [_Before, _Batchy], reg, ("filter",))
    nodes = [make_node(f"n{i}") for i in range(4)]
    sim = _simulation(KubeSchedulerConfiguration(profiles=[profile]), reg, nodes, (), ())
    fw = sim.sched.frameworks["ksched"]
    snap = sim.sched.snapshot
    pm = make_pod("p")
    rows = snap.all_rows if every_row else np.arange(len(snap.node_infos), dtype=np.intp)
    out = fw.find_feasible(CycleState(), PodInfo(decode(pm, Pod), pm), snap, rows, 0, 4)
    names = sorted(snap.node_infos[int(r)].node.metadata.name for r in out.feasible)
    absent = out.statuses.absent
    if error is None:
        assert names == ["n0", "n2", "n3"]
        assert absent is None or absent.is_success()
    else:
        assert absent is not None and absent.code == Code.ERROR
        assert absent.message() == error
