"""NodePorts: a pod's host ports must be free on the node.

Mirrors kube-scheduler's ``nodeports`` plugin: PreFilter collects the pod's host
ports (containers and restartable init containers) and skips the Filter for pods
without any; a conflict is Unschedulable (preemption can free a port). Only nodes
already using host ports can conflict: the batch form looks the wanted ports up in the
snapshot's index of used ports instead of checking nodes one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..api.objects import ContainerPort
from ..framework.args import NoArgs
from ..framework.cycle_state import CycleState
from ..framework.events import ActionType, EventResource
from ..framework.interface import (
    ClusterEvent,
    ClusterEventWithHint,
    FilterPlugin,
    PreFilterPlugin,
    PreFilterResult,
    QueueingHint,
)
from ..framework.snapshot import BoolArray, Snapshot
from ..framework.status import Code, Status
from ..framework.types import DEFAULT_BIND_ALL_HOST_IP, HostPortInfo, NodeInfo, PodInfo
from ..util.native import mypyc_attr
from . import names
from .helper import all_true, get_host_ports, spec_fragment

__all__ = ["ERR_REASON", "NodePorts", "fits", "fits_ports"]

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PRE_FILTER_KEY = "PreFilter" + names.NODE_PORTS
_NOT_FOUND = f'reading "{PRE_FILTER_KEY}" from cycleState: not found'
_CACHE = names.NODE_PORTS + "/hostPorts"


def pod_host_ports(pod: PodInfo) -> list[ContainerPort]:
    """``util.GetHostPorts`` of the pod, computed once per pod."""
    ports: list[ContainerPort] | None = pod.cache.get(_CACHE)
    if ports is None:
        ports = pod.cache[_CACHE] = get_host_ports(pod.pod)
    return ports


def fits_ports(want: Sequence[ContainerPort], used: HostPortInfo) -> bool:
    """``fitsPorts``: no wanted port conflicts with one in use."""
    return not any(used.check_conflict(p.host_ip, p.protocol, p.host_port) for p in want)


def fits(pod: PodInfo, node: NodeInfo) -> bool:
    """``nodeports.Fits``."""
    return fits_ports(pod_host_ports(pod), node.used_ports)


# A plugin class stays a Python class (class attributes, subclasses); its methods compile.
@mypyc_attr(native_class=False)
class NodePorts(PreFilterPlugin[NoArgs], FilterPlugin[NoArgs]):
    name = names.NODE_PORTS

    def sign_pod(self, pod: PodInfo) -> Any:
        return spec_fragment(pod, "sign/hostports", pod_host_ports(pod))

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Snapshot
    ) -> tuple[PreFilterResult | None, Status | None]:
        ports = pod_host_ports(pod)
        if not ports:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_KEY, ports)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        want: list[ContainerPort] | None = state.get(PRE_FILTER_KEY)
        if want is None:
            return Status(Code.ERROR, _NOT_FOUND)
        if fits_ports(want, node.used_ports):
            return None
        return Status(Code.UNSCHEDULABLE, ERR_REASON)

    def filter_batch(self, state: CycleState, pod: PodInfo, snap: Snapshot) -> BoolArray:
        """Per wanted port, the rows holding a conflicting one from the snapshot's port
        index (``check_conflict``'s rules): a lookup per port, not a check per node."""
        want: list[ContainerPort] | None = state.get(PRE_FILTER_KEY)
        if want is None:
            raise RuntimeError(_NOT_FOUND)
        index = snap.port_rows()
        if not index:
            return all_true(snap.n)
        hits: list[set[int]] = []
        for p in want:
            if p.host_port <= 0:
                continue
            by_ip = index.get((p.protocol or "TCP", p.host_port))
            if not by_ip:
                continue
            ip = p.host_ip or DEFAULT_BIND_ALL_HOST_IP
            if ip == DEFAULT_BIND_ALL_HOST_IP:
                hits.extend(by_ip.values())
                continue
            for key in (DEFAULT_BIND_ALL_HOST_IP, ip):
                rows = by_ip.get(key)
                if rows:
                    hits.append(rows)
        if not hits:
            return all_true(snap.n)
        out = np.ones(snap.n, dtype=np.bool_)
        for rows in hits:
            out[np.fromiter(rows, dtype=np.intp, count=len(rows))] = False
        return out

    def filter_statuses(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, rows: npt.NDArray[np.intp]
    ) -> list[Status | None]:
        """``filter`` for many rows at once (a FitError's per-node reasons: every node
        for each pod HostPortConflict leaves pending), from the batch mask."""
        if state.get(PRE_FILTER_KEY) is None:
            return [Status(Code.ERROR, _NOT_FOUND) for _ in range(len(rows))]
        fits = self.filter_batch(state, pod, snap)[rows].tolist()
        rejected = Status(Code.UNSCHEDULABLE, ERR_REASON)
        return [None if ok else rejected for ok in fits]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Assigned pod deletions (hinted) and Node Add; QueueingHints on, as upstream."""
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE),
                self.is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]

    def is_schedulable_after_pod_deleted(self, pod: PodInfo, old: Any, new: Any) -> str:
        """Queue only when the deleted pod held a port the rejected pod wants."""
        if not isinstance(old, PodInfo):
            raise TypeError(f"expected PodInfo, got {type(old).__name__}")
        deleted = old.pod
        if not deleted.spec.node_name and not deleted.status.nominated_node_name:
            return QueueingHint.SKIP
        ports = get_host_ports(deleted)
        if not ports:
            return QueueingHint.SKIP
        freed = HostPortInfo()
        for p in ports:
            freed.add(p.host_ip, p.protocol, p.host_port)
        if fits_ports(pod_host_ports(pod), freed):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
