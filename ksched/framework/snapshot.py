"""The per-cycle view of the cluster, kept both as objects and as columns.

Plugins with a per-node form read ``NodeInfo`` objects; batch plugins read numpy
columns (one row per node, in node-tree order) so a Filter or Score over 5000 nodes
is a handful of vector operations. The cache updates only the rows of nodes that
changed since the previous cycle.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from ..api.objects import Taint
from .types import NodeInfo

__all__ = ["BoolArray", "IntArray", "NodeInfoView", "Snapshot"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

TaintKey = tuple[tuple[str, str, str], ...]


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


class Snapshot:
    """Nodes of one scheduling cycle; rows are indices into ``node_infos``."""

    def __init__(self, node_infos: Sequence[NodeInfo] = ()) -> None:
        self.generation = 0
        self.rebuild(node_infos)

    # -- construction (called by the cache) ----------------------------------------
    def rebuild(self, node_infos: Sequence[NodeInfo]) -> None:
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
        self.valid: BoolArray = np.ones(n, dtype=np.bool_)
        self.taint_ids = np.zeros(n, dtype=np.int32)
        self.taint_sets: list[tuple[Taint, ...]] = [()]
        self._taint_index: dict[TaintKey, int] = {(): 0}
        self._labels: dict[str, tuple[npt.NDArray[np.int32], dict[str, int]]] = {}
        self._scalars: dict[str, tuple[IntArray, IntArray]] = {}
        self._names: npt.NDArray[np.str_] | None = None
        self._images: dict[str, IntArray] = {}
        self.have_pods_with_affinity: list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity: list[NodeInfo] = []
        for i, ni in enumerate(self.node_infos):
            self._fill(i, ni)
        self._refresh_affinity_lists()
        self.all_rows = np.arange(n, dtype=np.intp)

    def replace(self, i: int, ni: NodeInfo) -> None:
        """Swap in a new NodeInfo for row ``i`` (same node) and refresh its columns."""
        old = self.node_infos[i]
        self.node_infos[i] = ni
        self._fill(i, ni)
        if old.node is not ni.node:
            self._images.clear()
        if old.node is not ni.node and old.node is not None and ni.node is not None:
            if old.node.metadata.labels != ni.node.metadata.labels:
                for key in self._labels:
                    self._set_label(key, i, ni)
            for name in self._scalars:
                self._scalars[name][0][i] = ni.allocatable.scalar.get(name, 0)
        for name, (_, req) in self._scalars.items():
            req[i] = ni.requested.scalar.get(name, 0)
        if (bool(old.pods_with_affinity) != bool(ni.pods_with_affinity)
                or bool(old.pods_with_required_anti_affinity) != bool(ni.pods_with_required_anti_affinity)
                or old.pods_with_affinity or ni.pods_with_affinity):
            self._refresh_affinity_lists()

    def _refresh_affinity_lists(self) -> None:
        self.have_pods_with_affinity = [ni for ni in self.node_infos if ni.pods_with_affinity]
        self.have_pods_with_required_anti_affinity = [
            ni for ni in self.node_infos if ni.pods_with_required_anti_affinity
        ]

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

    def names(self) -> npt.NDArray[np.str_]:
        if self._names is None:
            self._names = np.array([ni.name for ni in self.node_infos], dtype=np.str_)
        return self._names

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

        ``size * numNodes / totalNodes`` truncated, as upstream's ``scaledImageScore``;
        cached until a node object (its image list) changes.
        """
        col = self._images.get(name)
        if col is None:
            col = np.zeros(self.n, dtype=np.int64)
            total = float(self.n)
            for i, ni in enumerate(self.node_infos):
                st = ni.image_states.get(name)
                if st is not None:
                    col[i] = int(float(st.size) * (float(st.num_nodes) / total))
            self._images[name] = col
        return col

    # -- scalar (extended) resource columns ---------------------------------------------
    def scalar_columns(self, name: str) -> tuple[IntArray, IntArray]:
        """Allocatable and requested amounts of a scalar resource per node."""
        col = self._scalars.get(name)
        if col is None:
            alloc = np.fromiter((ni.allocatable.scalar.get(name, 0) for ni in self.node_infos),
                                dtype=np.int64, count=self.n)
            req = np.fromiter((ni.requested.scalar.get(name, 0) for ni in self.node_infos),
                              dtype=np.int64, count=self.n)
            col = self._scalars[name] = (alloc, req)
        return col
