"""v1.37's alpha gates of the scheduling cycle and queue: ksched runs them off and refuses
them on (their SUPPORT rows), rather than silently ignoring them."""

from __future__ import annotations

import pytest

from ksched.features import FeatureGates
from ksched.features.gates import gate_table
from ksched.features.support import refusals, status


@pytest.mark.parametrize(
    "gate", ["SchedulerPreQueueingHints", "InPlacePodVerticalScalingSchedulerPreemption"]
)
def test_new_queue_gates_are_refused_on_and_implemented_off(gate: str) -> None:
    t = gate_table("1.37")
    assert status(t, gate, False) == "implemented"
    assert status(t, gate, True) == "refused"
    deps = {d: True for d in t.dependencies.get(gate, ())}
    lines = refusals(FeatureGates("1.37", {**deps, gate: True}))
    assert any(gate in line for line in lines)
    assert not any(gate in line for line in refusals(FeatureGates("1.37")))
