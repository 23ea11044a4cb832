"""CycleState: write/read/delete and clone semantics."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from ksched.framework.cycle_state import CycleState, StateData


@dataclass
class Counter:
    n: int = 0
    items: list[int] = field(default_factory=list)
    clones: int = 0

    def clone(self) -> Counter:
        self.clones += 1
        return Counter(self.n, list(self.items))


def test_write_read_get_delete_contains() -> None:
    s = CycleState()
    s.write("k", 1)
    assert s.read("k") == 1 and "k" in s
    s.write("k", 2)
    assert s.read("k") == 2
    assert s.get("missing") is None and s.get("missing", 7) == 7
    with pytest.raises(KeyError):
        s.read("missing")
    s.delete("k")
    assert "k" not in s
    s.delete("k")  # deleting twice is fine


def test_clone_deep_copies_state_data_via_clone() -> None:
    s = CycleState()
    c = Counter(1, [1])
    s.write("counter", c)
    plain = [1, 2]
    s.write("plain", plain)
    s.skip_filter_plugins.add("A")
    s.skip_score_plugins.add("B")

    cl = s.clone()
    assert c.clones == 1
    copied = cl.read("counter")
    assert copied is not c and copied == Counter(1, [1])
    copied.n = 5
    copied.items.append(2)
    assert (c.n, c.items) == (1, [1])
    # Values without clone() are shared, as upstream shares non-StateData by reference.
    assert cl.read("plain") is plain
    # Skip sets are copied.
    cl.skip_filter_plugins.add("C")
    cl.skip_score_plugins.clear()
    assert s.skip_filter_plugins == {"A"} and s.skip_score_plugins == {"B"}
    # New writes to the clone do not show up in the original.
    cl.write("new", 1)
    assert "new" not in s
    cl.delete("counter")
    assert s.read("counter") is c


def test_state_data_protocol() -> None:
    assert isinstance(Counter(), StateData)
    assert not isinstance(object(), StateData)
