"""The per-cycle view of the cluster, kept both as objects and as columns.

Plugins with a per-node form read ``NodeInfo`` objects; batch plugins read numpy
columns (one row per node, in node-tree order) so a Filter or Score over 5000 nodes
is a handful of vector operations. The cache updates only the rows of nodes that
changed since the previous cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from ..api.objects import Taint
from ..api.quantity import saturate_int64
from .types import NodeInfo, PodInfo

if TYPE_CHECKING:
    from .podgroup import Placement

if TYPE_CHECKING:
    from ..api.workload import PodGroup
    from .podgroupstate import PodGroupStateData

__all__ = ["BoolArray", "IntArray", "NodeInfoView", "RowCache", "Snapshot", "all_true"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

TaintKey = tuple[tuple[str, str, str], ...]

_ALL_TRUE: dict[int, BoolArray] = {}


def all_true(n: int) -> BoolArray:
    """A shared read-only all-True mask: a batch Filter's cheap answer when nothing can
    fail. Filter recognises it by identity and skips it (no copy, no reduction)."""
    m = _ALL_TRUE.get(n)
    if m is None:
        if len(_ALL_TRUE) > 16:
            _ALL_TRUE.clear()
        m = np.ones(n, dtype=np.bool_)
        m.flags.writeable = False
        _ALL_TRUE[n] = m
    return m


class NodeInfoView(Sequence[NodeInfo]):
    """The NodeInfos of some snapshot rows, without building a list per cycle."""

    __slots__ = ("_infos", "rows")

    def __init__(self, infos: list[NodeInfo], rows: npt.NDArray[np.intp]) -> None:
        self._infos = infos
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> NodeInfo:  # type: ignore[override]
        return self._infos[int(self.rows[i])]

    def __iter__(self) -> Iterator[NodeInfo]:
        infos = self._infos
        return (infos[r] for r in self.rows.tolist())


K = TypeVar("K", bound=Hashable)


class RowCache(Generic[K]):
    """A per-row column that depends only on the row's NodeInfo and a key (a pod's
    requests, say), kept up to date through the snapshot's change log.

    ``full(snap, key)`` computes the column for every row (the batch form); ``row(snap,
    i, key)`` one row's value (the per-node form, which must agree with it). A column is
    computed once per key and snapshot epoch; afterwards only replaced rows are
    recomputed, so replicas of one pod pay a gather per cycle instead of the batch
    arithmetic. Columns are returned read-only.
    """

    __slots__ = ("_entries", "full", "incremental", "max_keys", "row")

    def __init__(
        self,
        full: Callable[[Snapshot, K], npt.NDArray[Any]],
        row: Callable[[Snapshot, int, K], Any],
        *,
        max_keys: int = 32,
        incremental: int = 64,
    ) -> None:
        self.full = full
        self.row = row
        self.max_keys = max_keys
        self.incremental = incremental
        # key -> [snapshot, epoch, log position, column]
        self._entries: dict[K, list[Any]] = {}

    def get(self, snap: Snapshot, key: K) -> npt.NDArray[Any]:
        e = self._entries.get(key)
        if e is not None and e[0] is snap:
            rows = snap.changed_rows(e[1], e[2])
            if rows is not None and len(rows) <= self.incremental:
                col: npt.NDArray[Any] = e[3]
                if not rows:
                    return col
                col.flags.writeable = True
                try:
                    for i in set(rows):
                        col[i] = self.row(snap, i, key)
                except Exception:  # the batch form decides (and raises)
                    del self._entries[key]
                else:
                    e[2] = snap.log_position
                    return col
                finally:
                    col.flags.writeable = False
        col = self.full(snap, key)
        col.flags.writeable = False
        if len(self._entries) >= self.max_keys:
            self._entries.clear()
        self._entries[key] = [snap, snap.epoch, snap.log_position, col]
        return col

    def clear(self) -> None:
        self._entries.clear()


#: Scalar resources whose per-node columns a snapshot keeps (the most recently asked).
#: Pods that each ask for a resource of their own (SchedulingWithExtendedResource: one
#: ``foo.com/bar-<i>`` per node and pod) would otherwise keep one pair of columns per name
#: for the snapshot's life: n x names memory, and every row replacement refreshing them all.
MAX_SCALAR_COLUMNS = 64


def _refresh_scalars(
    cols: dict[str, tuple[IntArray, IntArray]],
    which: int,
    i: int,
    old: dict[str, int],
    new: dict[str, int],
) -> None:
    """Row ``i`` of the kept columns (``which``: 0 allocatable, 1 requested) whose amount
    may have changed: only names the old or the new NodeInfo has (the others were 0 and
    stay 0), so a replacement costs the node's own scalars, not every kept column."""
    for name in old.keys() | new.keys() if old else new:
        col = cols.get(name)
        if col is not None:
            col[which][i] = new.get(name, 0)


def _index_ports(
    ports: dict[tuple[str, int], dict[str, set[int]]], i: int, ni: NodeInfo, sign: int
) -> None:
    """Add (sign 1) or remove (-1) row ``i`` under each host port its node uses."""
    for ip, used in ni.used_ports.ports.items():
        for pp in used:
            if sign > 0:
                ports.setdefault(pp, {}).setdefault(ip, set()).add(i)
                continue
            by_ip = ports.get(pp)
            rows = by_ip.get(ip) if by_ip is not None else None
            if rows is None or by_ip is None:
                continue
            rows.discard(i)
            if not rows:
                del by_ip[ip]
                if not by_ip:
                    del ports[pp]


class Snapshot:
    """Nodes of one scheduling cycle; rows are indices into ``node_infos``."""

    def __init__(self, node_infos: Sequence[NodeInfo] = ()) -> None:
        self.generation = 0
        # Change log for plugins that keep per-row caches: ``epoch`` changes when the rows
        # are rebuilt, and ``replace`` appends the row it changed to ``_log``. A consumer
        # remembers (epoch, log position) and asks ``changed_rows`` for what changed since.
        self.epoch = 0
        self._log: list[int] = []
        self._log_base = 0
        # Bumped whenever the image columns are dropped (a row's image states changed).
        self.images_version = 0
        # Bumped whenever a label column may have changed (rows rebuilt, a row relabelled),
        # so consumers can key what they derive from the columns on it.
        self.labels_version = 0
        # Pod groups' states as of this snapshot (GenericWorkload; the cache copies them
        # in), for plugins through ``pod_group_state`` (a ``PodGroupManager``).
        self.pod_group_states: dict[str, PodGroupStateData] = {}
        self.pod_groups_enabled = False
        # The pod-group cycle's simulation (``assume_pod``/``assume_placement``).
        self._assumed: list[tuple[str, int, NodeInfo]] = []
        self.placement: Placement | None = None
        # its rows, in the placement's order, and as a mask over all rows
        self.placement_rows: npt.NDArray[np.intp] | None = None
        self.placement_mask: BoolArray | None = None
        self.rebuild(node_infos)

    def pod_group_state(self, namespace: str, name: str) -> PodGroupStateData | None:
        """The group's state in this snapshot (upstream's ``PodGroupStates().Get``)."""
        if not self.pod_groups_enabled:
            return None
        return self.pod_group_states.get(f"{namespace}/{name}")

    def pod_group(self, namespace: str, name: str) -> PodGroup | None:
        """The group's observed PodGroup in this snapshot (``PodGroups().Get``)."""
        st = self.pod_group_state(namespace, name)
        return None if st is None else st.pod_group

    # -- construction (called by the cache) ----------------------------------------
    def rebuild(self, node_infos: Sequence[NodeInfo]) -> None:
        self._assumed = []
        self.forget_placement()
        self.epoch += 1
        self.labels_version += 1
        self._log_base += len(self._log)
        self._log = []
        self.node_infos: list[NodeInfo] = list(node_infos)
        self.index: dict[str, int] = {ni.name: i for i, ni in enumerate(self.node_infos)}
        n = self.n = len(self.node_infos)

        def z() -> IntArray:
            return np.zeros(n, dtype=np.int64)

        self.alloc_cpu, self.alloc_mem, self.alloc_eph, self.alloc_pods = z(), z(), z(), z()
        self.req_cpu, self.req_mem, self.req_eph, self.num_pods = z(), z(), z(), z()
        self.nz_cpu, self.nz_mem = z(), z()
        # NodeInfo.generation per row: plugins that keep per-node indexes find the rows
        # changed since their last look with one vector comparison.
        self.generations = z()
        self.unschedulable: BoolArray = np.zeros(n, dtype=np.bool_)
        self._any_unschedulable: bool | None = None
        # NodeInfo.declared_features per row (a feature bitmap; NodeDeclaredFeatures)
        self.declared_features: npt.NDArray[np.uint64] = np.zeros(n, dtype=np.uint64)
        self.valid: BoolArray = np.ones(n, dtype=np.bool_)
        self.taint_ids = np.zeros(n, dtype=np.int32)
        self.taint_sets: list[tuple[Taint, ...]] = [()]
        self._taint_index: dict[TaintKey, int] = {(): 0}
        self._labels: dict[str, tuple[npt.NDArray[np.int32], dict[str, int]]] = {}
        self._scalars: dict[str, tuple[IntArray, IntArray]] = {}
        # scalar name -> the rows whose node has (or had) it allocatable or requested,
        # built with the first column: a new name's columns cost its rows, not n
        self._scalar_rows: dict[str, set[int]] | None = None
        self._names: npt.NDArray[np.str_] | None = None
        self._images: dict[str, IntArray] = {}
        # Rows whose node holds pods with affinity terms (with required anti-affinity), kept
        # by ``replace``; the lists of those NodeInfos are built on first use after a change
        # (every binding of such a pod is one, and few cycles read them).
        self._with_affinity = 0
        self._with_required_anti = 0
        self._affinity_lists: tuple[list[NodeInfo], list[NodeInfo]] | None = None
        # (protocol, port) -> host IP -> rows using it; built on first ``port_rows`` call
        # (NodePorts), then kept by ``replace``.
        self._ports: dict[tuple[str, int], dict[str, set[int]]] | None = None
        for i, ni in enumerate(self.node_infos):
            self._fill(i, ni)
            self._with_affinity += bool(ni.pods_with_affinity)
            self._with_required_anti += bool(ni.pods_with_required_anti_affinity)
        self.all_rows = np.arange(n, dtype=np.intp)

    def replace(self, i: int, ni: NodeInfo) -> None:
        """Swap in a new NodeInfo for row ``i`` (same node) and refresh its columns."""
        old = self.node_infos[i]
        self.node_infos[i] = ni
        self._fill(i, ni)
        log = self._log
        log.append(i)
        if len(log) > 4096 and len(log) > 2 * self.n:
            # Consumers this far behind see None and recompute everything.
            half = len(log) // 2
            del log[:half]
            self._log_base += half
        if old.node is not ni.node or old.image_states is not ni.image_states:
            # A new node object, or the row's image counts (frozen when the cache cloned
            # it) changed. Other rows' counts did not: the columns are only cheaper to drop
            # than to patch.
            self._images.clear()
            self.images_version += 1
            self._any_unschedulable = None
        if old.node is not ni.node and old.node is not None and ni.node is not None:
            if old.node.metadata.labels != ni.node.metadata.labels:
                self.labels_version += 1
                for key in self._labels:
                    self._set_label(key, i, ni)
            _refresh_scalars(self._scalars, 0, i, old.allocatable.scalar, ni.allocatable.scalar)
        if self._scalars:
            _refresh_scalars(self._scalars, 1, i, old.requested.scalar, ni.requested.scalar)
        rows = self._scalar_rows
        if rows is not None:
            for name in ni.allocatable.scalar.keys() | ni.requested.scalar.keys():
                rows.setdefault(name, set()).add(i)
        ports = self._ports
        if ports is not None and (old.used_ports.ports or ni.used_ports.ports):
            _index_ports(ports, i, old, -1)
            _index_ports(ports, i, ni, 1)
        if old.pods_with_affinity or ni.pods_with_affinity:
            self._with_affinity += bool(ni.pods_with_affinity) - bool(old.pods_with_affinity)
            self._with_required_anti += bool(ni.pods_with_required_anti_affinity) - bool(
                old.pods_with_required_anti_affinity
            )
            self._affinity_lists = None

    @property
    def log_position(self) -> int:
        """Where the change log ends now (pass it to ``changed_rows`` later)."""
        return self._log_base + len(self._log)

    def changed_rows(self, epoch: int, position: int) -> list[int] | None:
        """Rows replaced since ``log_position`` was ``position`` in ``epoch`` (possibly
        with repeats), or None when that cannot be told (rebuilt since, or too long ago)."""
        if epoch != self.epoch or position < self._log_base:
            return None
        return self._log[position - self._log_base :]

    @property
    def any_pods_with_affinity(self) -> bool:
        """Whether some node holds a pod with affinity terms (without building the list)."""
        return self._with_affinity > 0

    @property
    def have_pods_with_affinity(self) -> list[NodeInfo]:
        """The NodeInfos holding pods with affinity terms, in row order (upstream's
        ``HavePodsWithAffinityList``)."""
        return self._affinity_node_lists()[0]

    @property
    def have_pods_with_required_anti_affinity(self) -> list[NodeInfo]:
        return self._affinity_node_lists()[1]

    def _affinity_node_lists(self) -> tuple[list[NodeInfo], list[NodeInfo]]:
        lists = self._affinity_lists
        if lists is None:
            infos = self.node_infos
            lists = self._affinity_lists = (
                [ni for ni in infos if ni.pods_with_affinity],
                [ni for ni in infos if ni.pods_with_required_anti_affinity],
            )
        return lists

    def port_rows(self) -> dict[tuple[str, int], dict[str, set[int]]]:
        """Rows whose node uses a host port, as (protocol, port) -> host IP -> rows (IPs
        and protocols sanitized as ``HostPortInfo`` keeps them). Read-only for callers."""
        ports = self._ports
        if ports is None:
            ports = self._ports = {}
            for i, ni in enumerate(self.node_infos):
                if ni.used_ports.ports:
                    _index_ports(ports, i, ni, 1)
        return ports

    def _fill(self, i: int, ni: NodeInfo) -> None:
        a, r = ni.allocatable, ni.requested
        self.alloc_cpu[i] = a.milli_cpu
        self.alloc_mem[i] = a.memory
        self.alloc_eph[i] = a.ephemeral_storage
        self.alloc_pods[i] = a.allowed_pod_number
        self.req_cpu[i] = r.milli_cpu
        self.req_mem[i] = r.memory
        self.req_eph[i] = r.ephemeral_storage
        self.num_pods[i] = len(ni.pods)
        self.nz_cpu[i] = ni.non_zero_requested.milli_cpu
        self.nz_mem[i] = ni.non_zero_requested.memory
        self.generations[i] = ni.generation
        self.declared_features[i] = ni.declared_features
        node = ni.node
        self.valid[i] = node is not None and ni.error is None
        if node is None:
            return
        self.unschedulable[i] = node.spec.unschedulable
        taints = node.spec.taints
        if taints:
            key = tuple((t.key, t.value, t.effect) for t in taints)
            tid = self._taint_index.get(key)
            if tid is None:
                tid = self._taint_index[key] = len(self.taint_sets)
                self.taint_sets.append(tuple(taints))
            self.taint_ids[i] = tid
        else:
            self.taint_ids[i] = 0

    # -- lookups -----------------------------------------------------------------------
    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[NodeInfo]:
        return iter(self.node_infos)

    def get(self, name: str) -> NodeInfo | None:
        i = self.index.get(name)
        return None if i is None else self.node_infos[i]

    def row(self, name: str) -> int | None:
        return self.index.get(name)

    def any_unschedulable(self) -> bool:
        """Whether some row is marked unschedulable (kept until a node object changes)."""
        got = self._any_unschedulable
        if got is None:
            got = self._any_unschedulable = bool(self.unschedulable.any())
        return got

    def names(self) -> npt.NDArray[np.str_]:
        if self._names is None:
            self._names = np.array([ni.name for ni in self.node_infos], dtype=np.str_)
        return self._names

    # -- the pod-group cycle: assumed pods and placements -------------------------------
    # Upstream's Snapshot.AssumePod/ForgetPod and AssumePlacement/ForgetPlacement: a
    # pod-group cycle tries its members on this snapshot only (the cache sees nothing until
    # the group is committed), and restricts them to a placement's nodes. Both are undone
    # in LIFO order before the next cycle updates the snapshot from the cache.

    def assume_pod(self, pod: PodInfo, node: str) -> None:
        """Account ``pod`` (assumed on ``node``) on a copy of that node's row; ``forget_pod``
        puts the row back as it was."""
        i = self.index.get(node)
        if i is None:
            raise KeyError(f"node {node!r} is not in the snapshot")
        old = self.node_infos[i]
        ni = old.clone()
        ni.add_pod(pod)
        self._assumed.append((pod.uid or pod.key, i, old))
        self.replace(i, ni)

    def forget_pod(self, pod: PodInfo) -> None:
        """Undo the last ``assume_pod``, which must be ``pod``'s (upstream's LIFO contract)."""
        key = pod.uid or pod.key
        if not self._assumed or self._assumed[-1][0] != key:
            raise KeyError(f"assumed pod {key!r} is not the last one assumed in the snapshot")
        _, i, old = self._assumed.pop()
        self.replace(i, old)

    @property
    def assumed_count(self) -> int:
        return len(self._assumed)

    def assume_placement(self, placement: Placement | None) -> None:
        """Restrict the cycle to ``placement``'s nodes (None, or all nodes: no restriction).
        Each node must be this snapshot's own NodeInfo, as upstream requires."""
        if placement is None or len(placement.nodes) == self.n:
            self.forget_placement()
            return
        rows = []
        for ni in placement.nodes:
            i = self.index.get(ni.name)
            if i is None:
                self.forget_placement()
                raise KeyError(f"node {ni.name} in placement is not present in snapshot")
            if self.node_infos[i] is not ni:
                self.forget_placement()
                raise KeyError(
                    f"node {ni.name} in placement is not the same instance as in the snapshot"
                )
            rows.append(i)
        self.placement = placement
        self.placement_rows = np.array(rows, dtype=np.intp)
        mask = np.zeros(self.n, dtype=np.bool_)
        mask[self.placement_rows] = True
        self.placement_mask = mask

    def forget_placement(self) -> None:
        self.placement = None
        self.placement_rows = None
        self.placement_mask = None

    def rows_in_placement(self) -> npt.NDArray[np.intp]:
        """The candidate rows of a cycle: the placement's (in its order), else all."""
        rows = self.placement_rows
        return self.all_rows if rows is None else rows

    def nodes_in_placement(self) -> Sequence[NodeInfo]:
        """``ListNodesInPlacement``."""
        return self.node_infos if self.placement is None else self.placement.nodes

    def in_placement(self, row: int) -> bool:
        mask = self.placement_mask
        return mask is None or bool(mask[row])

    # -- label columns -------------------------------------------------------------------
    def _set_label(self, key: str, i: int, ni: NodeInfo) -> None:
        ids, vocab = self._labels[key]
        labels = ni.node.metadata.labels if ni.node is not None else {}
        v = labels.get(key)
        if v is None:
            ids[i] = -1
        else:
            vid = vocab.get(v)
            if vid is None:
                vid = vocab[v] = len(vocab)
            ids[i] = vid

    def label_column(self, key: str) -> tuple[npt.NDArray[np.int32], dict[str, int]]:
        """Value ids of label ``key`` per node (-1 where absent) and the value→id vocabulary."""
        col = self._labels.get(key)
        if col is None:
            ids = np.full(self.n, -1, dtype=np.int32)
            vocab: dict[str, int] = {}
            for i, ni in enumerate(self.node_infos):
                v = ni.node.metadata.labels.get(key) if ni.node is not None else None
                if v is not None:
                    vid = vocab.get(v)
                    if vid is None:
                        vid = vocab[v] = len(vocab)
                    ids[i] = vid
            col = self._labels[key] = (ids, vocab)
        return col

    # -- image columns -------------------------------------------------------------------
    def image_scores(self, name: str) -> IntArray:
        """ImageLocality's scaled score of image ``name`` per node (0 where absent).

        ``size * numNodes / totalNodes`` truncated (saturated to int64), as upstream's
        ``scaledImageScore``, with each row's own ``numNodes`` (as of the cache's clone of
        it); cached until some row's image states change.
        """
        col = self._images.get(name)
        if col is None:
            col = np.zeros(self.n, dtype=np.int64)
            total = float(self.n)
            for i, ni in enumerate(self.node_infos):
                st = ni.image_states.get(name)
                if st is not None:
                    col[i] = saturate_int64(int(float(st.size) * (float(st.num_nodes) / total)))
            self._images[name] = col
        return col

    # -- scalar (extended) resource columns ---------------------------------------------
    def scalar_columns(self, name: str) -> tuple[IntArray, IntArray]:
        """Allocatable and requested amounts of a scalar resource per node."""
        cols = self._scalars
        col = cols.pop(name, None)
        if col is not None:
            cols[name] = col  # most recently used last
        else:
            if len(cols) >= MAX_SCALAR_COLUMNS:
                del cols[next(iter(cols))]
            rows = self._scalar_rows
            if rows is None:
                rows = self._scalar_rows = {}
                for i, ni in enumerate(self.node_infos):
                    for key in ni.allocatable.scalar.keys() | ni.requested.scalar.keys():
                        rows.setdefault(key, set()).add(i)
            alloc = np.zeros(self.n, dtype=np.int64)
            req = np.zeros(self.n, dtype=np.int64)
            infos = self.node_infos
            for i in rows.get(name, ()):
                ni = infos[i]
                alloc[i] = ni.allocatable.scalar.get(name, 0)
                req[i] = ni.requested.scalar.get(name, 0)
            col = cols[name] = (alloc, req)
        return col
