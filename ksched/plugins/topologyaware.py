"""TopologyPlacementGenerator: one placement per topology domain of a pod group's constraint.

Upstream ``framework/plugins/topologyaware/topology_placement.go`` (v1.37, gate
TopologyAwareWorkloadScheduling). A PodGroup whose ``spec.schedulingConstraints.topology``
names a key (only the first entry counts; the API allows one) is confined to the nodes
sharing one value of that node label: the plugin splits the parent placement's nodes by
value, each placement named by the value itself, and leaves out nodes without the label
(a label with an empty value is a domain like any other). Without a constraint the parent
placement is the only one.

Members already assumed or bound pin the group to their nodes' domain: only that domain is
proposed, and nothing if the parent placement has none of its nodes. Their nodes are looked
up in the whole snapshot, not in the parent placement; a node missing there, one without
the label, or members in two domains fail the cycle (Error), as upstream.

Order: upstream ranges over a Go map, so its placements come in random order; here they come
in the order their domains first appear among the parent's nodes, which is reproducible.
"""

from __future__ import annotations

from ..api.objects import Pod
from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.interface import PlacementGeneratePlugin
from ..framework.podgroup import GeneratePlacementsResult, Placement, PodGroupInfo
from ..framework.status import Status
from ..framework.types import NodeInfo
from . import names
from .helper import pod_group_state

__all__ = ["TopologyPlacement", "topology_key"]


def topology_key(group: PodGroupInfo) -> str | None:
    """The node label the group must stay within, None without a topology constraint."""
    constraints = group.pod_group.spec.scheduling_constraints
    if constraints is None or not constraints.topology:
        return None
    return constraints.topology[0].key


class TopologyPlacement(PlacementGeneratePlugin[NoArgs]):
    name = names.TOPOLOGY_PLACEMENT_GENERATOR

    def generate_placements(
        self, state: CycleState, group: PodGroupInfo, parent: Placement
    ) -> tuple[GeneratePlacementsResult | None, Status | None]:
        key = topology_key(group)
        if key is None:
            return GeneratePlacementsResult([parent]), None
        try:
            scheduled = pod_group_state(self.handle, group).scheduled_pods()
        except LookupError as e:
            return None, Status.as_error(str(e))
        required: str | None = None
        if scheduled:
            try:
                required = self._scheduled_domain(key, scheduled)
            except LookupError as e:
                msg = f"cannot determine domain for already scheduled pods: {e}"
                return None, Status.as_error(msg)
        by_domain: dict[str, list[NodeInfo]] = {}
        for ni in parent.nodes:
            labels = ni.node.metadata.labels if ni.node is not None else {}
            domain = labels.get(key)
            if domain is not None and (required is None or domain == required):
                by_domain.setdefault(domain, []).append(ni)
        return GeneratePlacementsResult([Placement(d, n) for d, n in by_domain.items()]), None

    def _scheduled_domain(self, key: str, pods: list[Pod]) -> str:
        """The one domain of the scheduled members' nodes (upstream's
        ``getScheduledPodsTopologyDomain``, including its use of "" as "none yet")."""
        snapshot = self.handle.snapshot if self.handle is not None else None
        found = ""
        for pod in pods:
            ref = f"{pod.metadata.namespace}/{pod.metadata.name}"
            ni = snapshot.get(pod.spec.node_name) if snapshot is not None else None
            if ni is None or ni.node is None:
                raise LookupError(
                    f"getting node for pod {ref}: nodeinfo not found for node name "
                    f'"{pod.spec.node_name}"'
                )
            domain = ni.node.metadata.labels.get(key)
            if domain is None:
                raise LookupError(f"no topology domain found for pod {ref}")
            if found and found != domain:
                raise LookupError(f"more than 1 domain found for pod group: {found}, {domain}")
            found = domain
        return found
