"""Pod groups for the placement plugins' tests: a PodGroupInfo from a manifest, a stand-in
for the cache's per-group state and a handle whose snapshot serves it (as upstream's tests
build a snapshot holding the group's scheduled pods)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ksched.api.objects import Pod, decode
from ksched.api.workload import PodGroup
from ksched.framework.handle import Handle
from ksched.framework.podgroup import PodGroupInfo, PodGroupState
from ksched.framework.snapshot import Snapshot
from ksched.testing.objects import make_pod_group
from tests.factories import pod_manifest


def group_info(
    name: str = "root", namespace: str = "default", topology: list[str] | None = None
) -> PodGroupInfo:
    """A PodGroup (basic policy), constrained to the ``topology`` keys if given."""
    m = make_pod_group(name, namespace=namespace)
    if topology is not None:
        m["spec"]["schedulingConstraints"] = {"topology": [{"key": k} for k in topology]}
    return PodGroupInfo(namespace, name, decode(m, PodGroup))


def scheduled_pod(name: str, node: str, group: str = "root") -> Pod:
    m = pod_manifest(name, node_name=node, schedulingGroup={"podGroupName": group})
    return decode(m, Pod)


@dataclass
class FakeState:
    """A group's members: ``assigned`` (bound) and ``assumed``, both scheduled."""

    assigned: list[Pod] = field(default_factory=list)
    assumed: list[Pod] = field(default_factory=list)

    def all_pods_count(self) -> int:
        return len(self.assigned) + len(self.assumed)

    def unscheduled_pods(self) -> Mapping[str, Pod]:
        return {}

    def assumed_pods(self) -> frozenset[str]:
        return frozenset(p.metadata.uid for p in self.assumed)

    def assigned_pods(self) -> frozenset[str]:
        return frozenset(p.metadata.uid for p in self.assigned)

    def scheduled_pods(self) -> list[Pod]:
        return [*self.assigned, *self.assumed]

    def scheduled_pods_count(self) -> int:
        return len(self.assigned) + len(self.assumed)


def handle_with(
    state: Any = None, key: str = "default/root", snapshot: Snapshot | None = None
) -> Handle:
    """A handle whose snapshot knows ``state`` as the pod group ``key``'s (and no other),
    as the cache's snapshot serves a cycle's plugins through ``pod_group_state``."""
    snap = snapshot if snapshot is not None else Snapshot()
    states: dict[str, PodGroupState] = {} if state is None else {key: state}

    def lookup(namespace: str, name: str) -> PodGroupState | None:
        return states.get(f"{namespace}/{name}")

    snap.pod_group_state = lookup  # type: ignore[method-assign,attr-defined]
    snap.test_states = states  # type: ignore[attr-defined]
    return Handle(snapshot=snap)
