"""Existing pods grouped per snapshot row, so a cycle's cost follows distinct pod shapes.

Upstream's PreFilter/PreScore visit every pod on every node each cycle. Here the
pods of a snapshot are kept grouped: by (namespace, labels) signature — all an
incoming pod's terms look at — and by interned term for existing pods' required
anti-affinity, required affinity and preferred terms. Each group records how many
pods (term occurrences) sit on each snapshot row. A cycle then matches each distinct
signature or term once and turns the matching groups' row counts into counts per
topology value with one ``bincount`` over the snapshot's label column; only rows whose
``NodeInfo`` changed since the previous cycle are re-read.

``TopologyCounts`` is upstream's ``topologyToMatchedTermCount`` in that columnar form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.types import NodeInfo
from ...util.native import mypyc_attr
from .terms import AffinityTerm, pod_terms

__all__ = [
    "ClusterIndex",
    "RowCounts",
    "SignatureGroup",
    "TopologyCounts",
    "by_topology",
    "group_weights",
]

RowKey = tuple[Any, ...]


class RowCounts:
    """Count per snapshot row; a dict while few rows have one, a dense array after."""

    __slots__ = ("_arrays", "dense", "n", "sparse", "total")

    def __init__(self, n: int) -> None:
        self.n = n
        self.sparse: dict[int, int] = {}
        self.dense: IntArray | None = None
        self.total = 0
        self._arrays: tuple[npt.NDArray[np.intp], IntArray] | None = None

    def add(self, row: int, count: int) -> None:
        self.total += count
        if self.dense is not None:
            self.dense[row] += count
            return
        v = self.sparse.get(row, 0) + count
        if v:
            self.sparse[row] = v
        else:
            del self.sparse[row]
        self._arrays = None
        if len(self.sparse) > max(32, self.n >> 6):
            self.dense = np.zeros(self.n, dtype=np.int64)
            for r, c in self.sparse.items():
                self.dense[r] = c
            self.sparse = {}

    def _rows(self) -> tuple[npt.NDArray[np.intp], IntArray]:
        arrs = self._arrays
        if arrs is None:
            rows = np.fromiter(self.sparse.keys(), dtype=np.intp, count=len(self.sparse))
            counts = np.fromiter(self.sparse.values(), dtype=np.int64, count=len(self.sparse))
            arrs = self._arrays = (rows, counts)
        return arrs

    def add_into(self, w: IntArray, scale: int = 1) -> None:
        """``w[row] += scale * count`` for every row."""
        if self.dense is not None:
            w += self.dense if scale == 1 else self.dense * scale
            return
        rows, counts = self._rows()
        w[rows] += counts if scale == 1 else counts * scale

    def mark(self, touched: BoolArray) -> None:
        """Set the rows that have a count."""
        if self.dense is not None:
            touched |= self.dense != 0
        else:
            touched[self._rows()[0]] = True


class SignatureGroup(RowCounts):
    """Pods sharing a namespace and label set."""

    __slots__ = ("labels", "namespace")

    def __init__(self, n: int, namespace: str, labels: Mapping[str, str]) -> None:
        super().__init__(n)
        self.namespace = namespace
        self.labels = labels


class _Part:
    """Which rows of the snapshot one kind of group was last brought up to date with."""

    __slots__ = ("epoch", "gens", "infos", "position", "row_keys", "snap", "token")

    def __init__(self) -> None:
        self.snap: Snapshot | None = None
        self.infos: list[NodeInfo] | None = None
        self.token: object = None
        self.gens: IntArray = np.zeros(0, dtype=np.int64)
        self.epoch = -1  # the snapshot's change log, read up to here
        self.position = 0
        self.row_keys: list[dict[RowKey, int]] = []


class ClusterIndex:
    """The groups of one snapshot, brought up to date by ``sync`` each cycle.

    Two parts are tracked apart: the affinity terms of pods with affinity (few, read by
    every cycle) and the signatures of all pods (read only for an incoming pod with
    terms, or when existing pods have preferred terms to score), which
    ``signature_groups`` brings up to date on demand, so a cycle that never reads them
    does not re-read a node holding thousands of pods.
    """

    #: Journal entries kept for readers that replay them (``changes_since``).
    JOURNAL_LIMIT = 4096

    def __init__(self) -> None:
        self.n = 0
        # Every group count change, in order: (group key, row, count). A reader that
        # derived something from the groups at ``position`` brings it up to date by
        # replaying ``changes_since(generation, position)``; ``generation`` changes when
        # the groups are rebuilt wholesale (the journal then says nothing).
        self.generation = 0
        self._journal: list[tuple[RowKey, int, int]] = []
        self._journal_base = 0
        self._groups: dict[RowKey, RowCounts] = {}
        self._affinity = _Part()
        self._signature = _Part()
        self._last: tuple[Snapshot, object] | None = None
        # Views of _groups by kind, for matching.
        self.signatures: dict[RowKey, SignatureGroup] = {}
        self.required_anti_affinity: dict[AffinityTerm, RowCounts] = {}
        self.required_affinity: dict[AffinityTerm, RowCounts] = {}
        # (term, weight): preferred affinity with +weight, preferred anti-affinity with -weight.
        self.preferred: dict[tuple[AffinityTerm, int], RowCounts] = {}

    def sync(self, snap: Snapshot, token: object = None) -> None:
        """Re-read the affinity terms of the rows whose NodeInfo changed since the last call.

        Every NodeInfo change draws a new generation from a global counter and a clone
        keeps it, so comparing generations finds exactly the changed rows; the snapshot's
        change log says which rows to compare (all of them only when it cannot). ``token``
        (the cycle's CycleState) skips the check when PreScore follows PreFilter in the
        same cycle, as the snapshot cannot change in between.
        """
        if len(snap.node_infos) != self.n:
            # another node count: every group's row counts are sized anew
            self._reset(len(snap.node_infos))
        self._sync(self._affinity, snap, token, self._affinity_contents)
        self._last = (snap, token)

    @property
    def position(self) -> int:
        """Where the journal ends now."""
        return self._journal_base + len(self._journal)

    def changes_since(self, generation: int, position: int) -> list[tuple[RowKey, int, int]] | None:
        """The group count changes after ``position`` of ``generation``, oldest first, or
        None when they are no longer known (rebuilt since, or dropped as too old)."""
        if generation != self.generation or position < self._journal_base:
            return None
        return self._journal[position - self._journal_base :]

    def signature_groups(self) -> Iterable[SignatureGroup]:
        """The signature groups of the snapshot last synced, brought up to date."""
        if self._last is not None:
            snap, token = self._last
            self._sync(self._signature, snap, token, self._signature_contents)
        return self.signatures.values()

    def _new_generation(self) -> None:
        self.generation += 1
        self._journal_base += len(self._journal)
        self._journal = []

    def _reset(self, n: int) -> None:
        self._new_generation()
        self.n = n
        self._groups.clear()
        self.signatures.clear()
        self.required_anti_affinity.clear()
        self.required_affinity.clear()
        self.preferred.clear()
        self._affinity = _Part()
        self._signature = _Part()

    def _sync(
        self,
        part: _Part,
        snap: Snapshot,
        token: object,
        contents: Callable[[NodeInfo], dict[RowKey, int]],
    ) -> None:
        infos = snap.node_infos
        if snap is not part.snap or infos is not part.infos:
            self._rebuild(part, snap, contents)
        elif token is None or token is not part.token:
            gens = snap.generations
            rows = snap.changed_rows(part.epoch, part.position)
            if rows is not None:
                # The snapshot's change log names the replaced rows: no full comparison.
                for i in set(rows):
                    g = gens[i]
                    if g != part.gens[i]:
                        self._reindex(part, i, contents(infos[i]))
                        part.gens[i] = g
            else:
                changed = np.flatnonzero(gens != part.gens)
                if len(changed):
                    for i in changed.tolist():
                        self._reindex(part, i, contents(infos[i]))
                    part.gens = gens.copy()
        part.epoch, part.position = snap.epoch, snap.log_position
        part.token = token

    def _rebuild(
        self, part: _Part, snap: Snapshot, contents: Callable[[NodeInfo], dict[RowKey, int]]
    ) -> None:
        infos = snap.node_infos
        self._new_generation()
        for row, keys in enumerate(part.row_keys):
            for k, c in keys.items():
                self._apply(k, row, -c)
        part.snap, part.infos = snap, infos
        part.row_keys = [{} for _ in infos]
        for i, ni in enumerate(infos):
            self._reindex(part, i, contents(ni))
        part.gens = snap.generations.copy()

    @staticmethod
    def _signature_contents(ni: NodeInfo) -> dict[RowKey, int]:
        out: dict[RowKey, int] = {}
        for p in ni.pods:
            k: RowKey = ("s", pod_terms(p).signature)
            out[k] = out.get(k, 0) + 1
        return out

    @staticmethod
    def _affinity_contents(ni: NodeInfo) -> dict[RowKey, int]:
        out: dict[RowKey, int] = {}
        for p in ni.pods_with_affinity:
            d = pod_terms(p)
            keys: list[RowKey] = [("a", t) for t in d.required_anti_affinity]
            keys += [("h", t) for t in d.required_affinity]
            keys += [("p", t, w) for t, w in d.preferred_affinity]
            keys += [("p", t, -w) for t, w in d.preferred_anti_affinity]
            for k in keys:
                out[k] = out.get(k, 0) + 1
        return out

    def _reindex(self, part: _Part, row: int, new: dict[RowKey, int]) -> None:
        """Move the row's counts from what it held to ``new``: only the keys whose count
        changed (a pod assumed then confirmed bound leaves its row's keys as they were)."""
        old = part.row_keys[row]
        for k, c in old.items():
            d = new.get(k, 0) - c
            if d:
                self._apply(k, row, d)
        for k, c in new.items():
            if k not in old:
                self._apply(k, row, c)
        part.row_keys[row] = new

    def _apply(self, key: RowKey, row: int, count: int) -> None:
        g = self._groups.get(key)
        if g is None:
            g = self._new_group(key)
        g.add(row, count)
        if g.total == 0:
            self._drop(key)
        journal = self._journal
        journal.append((key, row, count))
        if len(journal) > self.JOURNAL_LIMIT:
            half = len(journal) // 2
            del journal[:half]
            self._journal_base += half

    def _new_group(self, key: RowKey) -> RowCounts:
        kind = key[0]
        g: RowCounts
        if kind == "s":
            ns, labels = key[1]
            sg = SignatureGroup(self.n, ns, dict(labels))
            self.signatures[key] = sg
            g = sg
        else:
            g = RowCounts(self.n)
            if kind == "a":
                self.required_anti_affinity[key[1]] = g
            elif kind == "h":
                self.required_affinity[key[1]] = g
            else:
                self.preferred[(key[1], key[2])] = g
        self._groups[key] = g
        return g

    def _drop(self, key: RowKey) -> None:
        del self._groups[key]
        kind = key[0]
        if kind == "s":
            del self.signatures[key]
        elif kind == "a":
            del self.required_anti_affinity[key[1]]
        elif kind == "h":
            del self.required_affinity[key[1]]
        else:
            del self.preferred[(key[1], key[2])]


def by_topology(snap: Snapshot, key: str, w: IntArray) -> tuple[dict[str, int], IntArray]:
    """Sum row weights per value of node label ``key`` (rows without it left out)."""
    ids, vocab = snap.label_column(key)
    has = ids >= 0
    if not has.any():
        return vocab, np.zeros(len(vocab), dtype=np.int64)
    sums = np.bincount(ids[has], weights=w[has], minlength=len(vocab))
    return vocab, np.rint(sums).astype(np.int64)


# clone builds one with __new__, bypassing __init__, which a native class cannot.
@mypyc_attr(native_class=False)
class TopologyCounts:
    """``topologyToMatchedTermCount``: (topology key, value) -> count, without zeros.

    Built per key as an array over a label column's value ids, which the batch Filter
    gathers in one step; it becomes a dict on the first single-pair update (the
    AddPod/RemovePod of preemption dry runs and nominated pods). Arrays are never
    changed in place, so clones share them until they are updated.
    """

    __slots__ = ("_arrays", "_dict", "_empty")

    def __init__(self) -> None:
        self._arrays: dict[str, tuple[dict[str, int], IntArray]] = {}
        self._dict: dict[tuple[str, str], int] | None = None
        self._empty: bool | None = True

    @classmethod
    def of_arrays(cls, arrays: dict[str, tuple[dict[str, int], IntArray]]) -> TopologyCounts:
        """Counts built elsewhere, per key by value id of its vocabulary; the arrays are
        shared, so their owner must replace rather than change them afterwards."""
        out = cls()
        out._arrays = arrays
        out._empty = None
        return out

    def add_array(self, key: str, vocab: dict[str, int], counts: IntArray) -> None:
        """Add counts by value id of ``vocab`` (build phase only)."""
        assert self._dict is None
        self._empty = None
        cur = self._arrays.get(key)
        if cur is None:
            self._arrays = {**self._arrays, key: (vocab, counts)}
        elif cur[0] is vocab and len(cur[1]) == len(counts):
            self._arrays = {**self._arrays, key: (vocab, cur[1] + counts)}
        else:
            d = self._as_dict()
            _merge(d, key, vocab, counts)
            self._dict = d
            self._arrays = {}

    def _as_dict(self) -> dict[tuple[str, str], int]:
        if self._dict is not None:
            return dict(self._dict)
        d: dict[tuple[str, str], int] = {}
        for key, (vocab, counts) in self._arrays.items():
            _merge(d, key, vocab, counts)
        return d

    def to_dict(self) -> dict[tuple[str, str], int]:
        """A plain copy, for tests and explanations."""
        return self._as_dict()

    def get(self, key: str, value: str) -> int:
        if self._dict is not None:
            return self._dict.get((key, value), 0)
        entry = self._arrays.get(key)
        if entry is None:
            return 0
        vid = entry[0].get(value)
        if vid is None or vid >= len(entry[1]):
            return 0
        return int(entry[1][vid])

    def is_empty(self) -> bool:
        """``len(m) == 0``."""
        empty = self._empty
        if empty is None:
            if self._dict is not None:
                empty = not self._dict
            else:
                empty = not any(c.any() for _, c in self._arrays.values())
            self._empty = empty
        return empty

    def update(self, key: str, value: str, delta: int) -> None:
        """``m[pair] += delta``, deleting the entry when it reaches zero."""
        if self._dict is None:
            self._dict = self._as_dict()
            self._arrays = {}
        pair = (key, value)
        v = self._dict.get(pair, 0) + delta
        if v:
            self._dict[pair] = v
        else:
            self._dict.pop(pair, None)
        self._empty = None

    def positive_keys(self) -> list[str]:
        if self._dict is not None:
            return list(dict.fromkeys(k for (k, _), c in self._dict.items() if c > 0))
        return [k for k, (_, c) in self._arrays.items() if (c > 0).any()]

    def positive_lut(self, key: str, vocab: Mapping[str, int]) -> BoolArray:
        """``count > 0`` by value id of ``vocab``, plus a False slot for "label absent" (-1)."""
        lut = np.zeros(len(vocab) + 1, dtype=np.bool_)
        if self._dict is None:
            entry = self._arrays.get(key)
            if entry is None:
                return lut
            own, counts = entry
            if own is vocab:
                lut[: len(counts)] = counts > 0
            else:
                for value, vid in own.items():
                    j = vocab.get(value)
                    if j is not None and vid < len(counts) and counts[vid] > 0:
                        lut[j] = True
            return lut
        for (k, value), c in self._dict.items():
            if k == key and c > 0:
                j = vocab.get(value)
                if j is not None:
                    lut[j] = True
        return lut

    def clone(self) -> TopologyCounts:
        out = TopologyCounts.__new__(TopologyCounts)
        out._arrays = self._arrays  # replaced, never mutated, once built
        out._dict = dict(self._dict) if self._dict is not None else None
        out._empty = self._empty
        return out

    def __repr__(self) -> str:
        return f"TopologyCounts({self._as_dict()!r})"


def _merge(
    d: dict[tuple[str, str], int], key: str, vocab: Mapping[str, int], counts: IntArray
) -> None:
    nz = np.flatnonzero(counts)
    if not len(nz):
        return
    values = list(vocab)  # ids are assigned in insertion order
    for i in nz.tolist():
        pair = (key, values[i])
        v = d.get(pair, 0) + int(counts[i])
        if v:
            d[pair] = v
        else:
            d.pop(pair, None)


def group_weights(groups: Iterable[RowCounts], n: int, scale: int = 1) -> IntArray:
    w = np.zeros(n, dtype=np.int64)
    for g in groups:
        g.add_into(w, scale)
    return w
