"""The preemption dry run over every candidate node at once, for DefaultPreemption.

``select_victims_in_place`` judges one node at a time from its aggregates; with hundreds
of candidate nodes that is hundreds of Python passes per preemptor. Here the same
decision is one pass of array arithmetic: each node's pods are a row of a nodes x pods
table (priorities, start times, requests), the potential victims are sorted per row in
the order upstream sorts them, PDB budgets are spent by cumulative sums along each row,
and the reprieve loop advances one column at a time for all nodes together.

A node is decided here only where the result is provably the per-node path's: the same
conditions as ``select_victims_in_place`` (NodeResourcesFit the only Filter that reads
the pods on a node, no PreFilter extension), unique pod uids, a sort with no ties the
Go algorithm could order differently, PDBs whose spending does not depend on v1.37's
"first violation stops" rule. Every other node is left to the per-node path (None).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ...api.objects import PodDisruptionBudget
from ...api.quantity import wrap_int64
from ...api.selectors import SelectorError, compile_label_selector
from ...framework.interface import NodeToStatus, Victims
from ...framework.snapshot import BoolArray, IntArray, Snapshot
from ...framework.status import SUCCESS, Code, Status
from ...framework.types import NodeInfo, PodInfo
from ...util.gosort import MAX_INSERTION
from .preemption import UNWORDED, Candidate, get_pod_start_time

__all__ = ["Found", "VictimTable", "batch_dry_run"]

#: ``select_victims_on_node``'s answer: (victims, PDB violations, status)
Found = tuple[list[PodInfo], int, Status]

_INT64_MAX = np.iinfo(np.int64).max
_FloatArray = npt.NDArray[np.float64]
_IdxArray = npt.NDArray[np.intp]


class VictimTable:
    """Each snapshot row's pods as columns (priority, start time, cpu/memory/ephemeral
    requests), padded to the most pods on a row. A row is read again only once the
    snapshot's change log says it was replaced (the snapshot's NodeInfos are clones no
    one edits in place; a generation that differs anyway is caught by the dry run)."""

    def __init__(self) -> None:
        self._snap: Snapshot | None = None
        self._epoch = -1
        self._position = -1
        self.pods: list[tuple[PodInfo, ...]] = []
        self.width = 0
        self.prio: IntArray = np.zeros((0, 0), dtype=np.int64)
        self.start: _FloatArray = np.zeros((0, 0), dtype=np.float64)
        self.req: IntArray = np.zeros((3, 0, 0), dtype=np.int64)
        self.count: IntArray = np.zeros(0, dtype=np.int64)
        self.uids_ok: BoolArray = np.zeros(0, dtype=np.bool_)
        self.stale: BoolArray = np.zeros(0, dtype=np.bool_)
        # rows_of's map from NodeInfo identity to row, for one snapshot state
        self._rows_key: tuple[Snapshot | None, int, int] = (None, -1, -1)
        self._row_of: dict[int, int] = {}

    def _reset(self, snap: Snapshot) -> None:
        n = snap.n
        self._snap, self._epoch = snap, snap.epoch
        self.pods = [()] * n
        self.width = 0
        self._alloc(n, 8)
        self.count = np.zeros(n, dtype=np.int64)
        self.uids_ok = np.zeros(n, dtype=np.bool_)
        self.stale = np.ones(n, dtype=np.bool_)

    def _alloc(self, n: int, width: int) -> None:
        old = self.width
        prev = (self.prio, self.start, self.req)
        self.width = width
        self.prio = np.full((n, width), _INT64_MAX, dtype=np.int64)
        self.start = np.full((n, width), math.inf, dtype=np.float64)
        self.req = np.zeros((3, n, width), dtype=np.int64)
        if old:
            self.prio[:, :old] = prev[0]
            self.start[:, :old] = prev[1]
            self.req[:, :, :old] = prev[2]

    def rows_of(self, snap: Snapshot, nodes: Sequence[NodeInfo]) -> tuple[_IdxArray, BoolArray]:
        """The snapshot row of each of ``nodes`` (by identity), and which have one."""
        key = (snap, snap.epoch, snap.log_position)
        if self._rows_key[0] is not snap or self._rows_key[1:] != key[1:]:
            self._rows_key = key
            self._row_of = {id(ni): r for r, ni in enumerate(snap.node_infos)}
        row_of = self._row_of
        try:
            rows = np.fromiter(map(row_of.__getitem__, map(id, nodes)), np.intp, len(nodes))
        except KeyError:
            got = [row_of.get(id(ni), -1) for ni in nodes]
            rows = np.array(got, dtype=np.intp)
            ok = rows >= 0
            return np.where(ok, rows, 0), ok
        return rows, np.ones(len(nodes), dtype=np.bool_)

    def refresh(self, snap: Snapshot, rows: _IdxArray) -> None:
        """Bring ``rows`` up to date with the snapshot."""
        changed = None
        if self._snap is snap and self._epoch == snap.epoch and len(self.pods) == snap.n:
            changed = snap.changed_rows(snap.epoch, self._position)
        if changed is None:
            self._reset(snap)
        elif changed:
            self.stale[changed] = True
        self._position = snap.log_position
        todo = rows[self.stale[rows]]
        if len(todo):
            node_infos = snap.node_infos
            for r in todo.tolist():
                self._fill(r, node_infos[r])
            self.stale[todo] = False

    def _fill(self, r: int, ni: NodeInfo) -> None:
        pods = tuple(ni.pods)
        k = len(pods)
        if k > self.width:
            self._alloc(len(self.pods), max(k, 2 * self.width))
        self.pods[r] = pods
        self.prio[r, :] = _INT64_MAX
        self.start[r, :] = math.inf
        self.req[:, r, :] = 0
        uids = set()
        for j, p in enumerate(pods):
            self.prio[r, j] = p.priority
            self.start[r, j] = get_pod_start_time(p)
            req = p.requests
            self.req[:, r, j] = (
                wrap_int64(req.milli_cpu),
                wrap_int64(req.memory),
                wrap_int64(req.ephemeral_storage),
            )
            uids.add(p.uid)
        self.count[r] = k
        self.uids_ok[r] = len(uids) == k and "" not in uids


def _int64s(values: list[int]) -> IntArray:
    """``values`` as int64, wrapped (a sum of them wraps as Go's int64 ``+=`` does)."""
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return np.array([wrap_int64(v) for v in values], dtype=np.int64)


def _pdb_spends(
    pdbs: Sequence[PodDisruptionBudget],
    pods: Sequence[tuple[PodInfo, ...]],
    order: _IdxArray,
    npot: IntArray,
    rows: Sequence[int],
) -> tuple[npt.NDArray[np.int64], IntArray] | None:
    """Which budget each potential victim spends (rows x sorted position x PDB, 0/1) and
    each budget's ``disruptionsAllowed``, as ``filter_pods_with_pdb_violation`` matches
    them; None when no pod spends any."""
    by_ns: dict[str, list[tuple[int, Any, PodDisruptionBudget]]] = {}
    for b, pdb in enumerate(pdbs):
        try:
            sel = compile_label_selector(pdb.spec.selector)
        except SelectorError:
            continue
        if sel is None or sel.empty or sel.nothing:
            continue
        by_ns.setdefault(pdb.metadata.namespace, []).append((b, sel, pdb))
    if not by_ns:
        return None
    spends = np.zeros((len(rows), order.shape[1], len(pdbs)), dtype=np.int64)
    anything = False
    for i, r in enumerate(rows):
        row_pods = pods[r]
        for pos in range(int(npot[i])):
            pi = row_pods[int(order[i, pos])]
            labels = pi.labels
            if not labels:
                continue
            cands = by_ns.get(pi.namespace)
            if not cands:
                continue
            for b, sel, pdb in cands:
                if sel.matches(labels) and pi.name not in pdb.status.disrupted_pods:
                    spends[i, pos, b] = 1
                    anything = True
    if not anything:
        return None
    allowed = np.array([pdb.status.disruptions_allowed for pdb in pdbs], dtype=np.int64)
    return spends, allowed


def batch_dry_run(
    table: VictimTable,
    snap: Snapshot,
    nodes: Sequence[NodeInfo],
    pod: PodInfo,
    key: Any,
    node_only: Sequence[Callable[[NodeInfo], bool] | BoolArray],
    nominated: Mapping[str, list[PodInfo]] | None,
    pdbs: Sequence[PodDisruptionBudget],
    *,
    v137: bool,
    no_victims: str,
    word: Callable[[NodeInfo, list[Pass]], Status] | None = None,
) -> BatchAnswers | None:
    """``select_victims_in_place(worded=False)`` for each of ``nodes``: a function of the
    node's index giving its answer, or None where this pass cannot decide it.

    ``node_only``: the other Filter plugins' verdicts, as masks over snapshot rows or
    per-node predicates; ``nominated``: the pods nominated to a node the preemptor must
    leave room for (None: no pod is nominated anywhere).
    """
    n = len(nodes)
    rows, ok = table.rows_of(snap, nodes)
    ok &= snap.valid[rows]
    gens = np.fromiter((ni.generation for ni in nodes), dtype=np.int64, count=n)
    ok &= snap.generations[rows] == gens
    for check in node_only:
        if isinstance(check, np.ndarray):
            ok &= check[rows]
        else:
            ok &= np.fromiter((check(ni) for ni in nodes), dtype=np.bool_, count=n)
    if not ok.any():
        return None
    use = np.flatnonzero(ok)
    urows = rows[use]
    table.refresh(snap, urows)
    ok[use] &= table.uids_ok[urows]
    use = np.flatnonzero(ok)
    urows = rows[use]
    if not len(use):
        return None
    m = len(use)
    prio_p = pod.priority
    width = int(table.count[urows].max()) if m else 0
    width = max(width, 1)
    prio = table.prio[urows, :width]
    start = table.start[urows, :width]
    potential = prio < prio_p
    npot = potential.sum(axis=1)

    # -- upstream's victim order per row (most important first), potential victims first
    j = np.broadcast_to(np.arange(width, dtype=np.int64), (m, width))
    finite = np.isfinite(start)
    tie = j if v137 else np.where(finite, j, -j)
    order = np.lexsort((tie, start, -prio, ~potential), axis=-1)
    sprio = np.take_along_axis(prio, order, axis=1)
    sstart = np.take_along_axis(start, order, axis=1)
    valid = np.arange(width)[None, :] < npot[:, None]
    if width > 1:
        same = (sprio[:, 1:] == sprio[:, :-1]) & (sstart[:, 1:] == sstart[:, :-1])
        same &= valid[:, 1:]
        if v137:
            same &= np.isfinite(sstart[:, 1:])
        ambiguous = same.any(axis=1) & (npot > MAX_INSERTION)
    else:
        ambiguous = np.zeros(m, dtype=np.bool_)

    # -- PDB violations along each row's order
    viol = np.zeros((m, width), dtype=np.bool_)
    if pdbs:
        got = _pdb_spends(pdbs, table.pods, order, npot, urows.tolist())
        if got is not None:
            spends, allowed = got
            cum = np.cumsum(spends, axis=1)
            viol = np.asarray(((spends > 0) & (cum > allowed[None, None, :])).any(axis=2))
            if v137:
                # a pod spending several budgets stops at the first it overdraws:
                # the later budgets then depend on that order, left to the per-node path
                ambiguous |= ((spends.sum(axis=2) > 1) & viol).any(axis=1)
    viol &= valid

    # -- resources (cpu, memory, ephemeral storage, the checked scalars) x rows:
    # everything potential removed, then reprieved column by column
    scalar_names = [name for name, _ in key[4]]
    sreq = np.take_along_axis(table.req[:, urows, :width], order[None, :, :], axis=2)
    alloc = [snap.alloc_cpu[urows], snap.alloc_mem[urows], snap.alloc_eph[urows]]
    base = [snap.req_cpu[urows], snap.req_mem[urows], snap.req_eph[urows]]
    if scalar_names:
        extra_req = np.zeros((len(scalar_names), m, width), dtype=np.int64)
        for s, name in enumerate(scalar_names):
            alloc_s, req_s = snap.scalar_columns(name)
            alloc.append(alloc_s[urows])
            base.append(req_s[urows])
            for i, r in enumerate(urows.tolist()):
                for jj, p in enumerate(table.pods[r]):
                    extra_req[s, i, jj] = wrap_int64(p.requests.scalar.get(name, 0))
        sreq = np.concatenate([sreq, np.take_along_axis(extra_req, order[None], axis=2)])
    amat = np.stack(alloc)
    alloc_pods = snap.alloc_pods[urows]
    nothing, q_cpu, q_mem, q_eph = key[0], key[1], key[2], key[3]
    q_all = [q_cpu, q_mem, q_eph, *(q for _, q in key[4])]
    # Fit's checks: cpu, memory, ephemeral storage where requested, every checked scalar
    checked = [] if nothing else [r for r, q in enumerate(q_all) if r >= 3 or q > 0]
    qc = np.array([q_all[r] for r in checked], dtype=np.int64)[:, None]
    with np.errstate(over="ignore"):
        used = np.stack(base) - np.where(valid[None], sreq, 0).sum(axis=2)
        count = snap.num_pods[urows] - npot
        # what the nominated pods add (RunFilterPluginsWithNominatedPods' first pass)
        extra: IntArray | None = None
        extra_n = np.zeros(m, dtype=np.int64)
        if nominated:
            pos = dict(zip(urows.tolist(), range(m), strict=True))
            index = snap.index
            slots: list[int] = []
            amounts: list[list[int]] = [[] for _ in range(3 + len(scalar_names))]
            for name, noms in nominated.items():
                i_nom = pos.get(index.get(name, -1))
                if i_nom is None:
                    continue
                for nom in noms:
                    nreq = nom.requests
                    slots.append(i_nom)
                    amounts[0].append(nreq.milli_cpu)
                    amounts[1].append(nreq.memory)
                    amounts[2].append(nreq.ephemeral_storage)
                    for s, sname in enumerate(scalar_names):
                        amounts[3 + s].append(nreq.scalar.get(sname, 0))
            if slots:
                extra = np.zeros((3 + len(scalar_names), m), dtype=np.int64)
                for col, vals in zip(extra, amounts, strict=True):
                    np.add.at(col, slots, _int64s(vals))  # wraps as add_requests does
                extra_n = np.bincount(slots, minlength=m).astype(np.int64)
        has_nom = extra_n > 0
        ac = amat[checked]
        ec = extra[checked] if extra is not None else None

        def fits(uc: IntArray, cnt: IntArray, rows: _IdxArray | slice) -> BoolArray:
            """``_ResourceTrial.fits`` per row: the checked resources ``uc`` in use."""
            out: BoolArray = cnt + 1 <= alloc_pods[rows]
            if checked:
                out &= (qc <= ac[:, rows] - uc).all(axis=0)
            if ec is not None:
                nom = cnt + extra_n[rows] + 1 <= alloc_pods[rows]
                if checked:
                    nom &= (qc <= ac[:, rows] - uc - ec[:, rows]).all(axis=0)
                out &= ~has_nom[rows] | nom
            return out

        everything = slice(None)
        first = fits(used[checked], count, everything)
        # reprieve order: PDB-violating victims first, each group in victim order
        group = np.where(valid, np.where(viol, 0, 1), 2)
        reprieve = np.argsort(group, axis=1, kind="stable")
        victim = np.zeros((m, width), dtype=np.bool_)
        live_rows = np.flatnonzero(first & (npot > 0))
        if len(live_rows):
            lr = live_rows
            uc = used[checked][:, lr]
            cnt = count[lr]
            rreq = sreq[checked][:, lr, :]
            rep = reprieve[lr]
            lpot = npot[lr]
            ar = np.arange(len(lr))
            for t in range(int(lpot.max())):
                at_t = rep[:, t]
                live = t < lpot
                trial = uc + rreq[:, ar, at_t]
                fit = fits(trial, cnt + 1, lr)
                keep = live & fit
                uc = np.where(keep[None, :], trial, uc)
                cnt = cnt + keep
                victim[lr, at_t] = live & ~fit
    num_viol = (victim & viol).sum(axis=1)
    # The victims' order: the reprieve order, sorted again by importance where both PDB
    # groups were met (``_select``). That sort's input is the reprieve order, so its ties
    # keep (finite start times), or for v1.36's unstarted pods reverse, that order;
    # v1.37 orders unstarted pods by their place on the node.
    both = (viol & valid).any(axis=1) & (~viol & valid).any(axis=1)
    vorder = np.argsort(~victim, axis=1, kind="stable")
    if both.any():
        rpos = np.empty_like(reprieve)
        np.put_along_axis(rpos, reprieve, np.arange(width)[None, :] + 0 * reprieve, axis=1)
        inf_tie = np.take_along_axis(j, order, axis=1) if v137 else -rpos
        tie2 = np.where(np.isfinite(sstart), rpos, inf_tie)
        resorted = np.lexsort((tie2, sstart, -sprio, ~victim), axis=-1)
        vorder = np.where(both[:, None], resorted, vorder)
    nvict = victim.sum(axis=1)

    slot = np.full(n, -1, dtype=np.intp)
    slot[use] = np.arange(m)
    slot[use[ambiguous]] = -1
    return BatchAnswers(
        slot,
        npot,
        first,
        order,
        vorder,
        nvict,
        num_viol,
        table.pods,
        urows.tolist(),
        no_victims,
        nodes,
        (used, count, extra, extra_n),  # used: unchanged where the preemptor never fit
        scalar_names,
        word,
        np.vstack([amat, alloc_pods[None, :]]),
    )


#: One pass of Fit's wording: requested cpu, memory, ephemeral storage, the checked
#: scalars and the pod count, with the preemptor's victims off the node.
Pass = tuple[int, int, int, dict[str, int], int]


class BatchAnswers:
    """``batch_dry_run``'s answers, each built when the dry run reaches its node."""

    __slots__ = (
        "_base",
        "_first",
        "_groups",
        "_key",
        "_names",
        "_no_victims",
        "_nodes",
        "_npot",
        "_nvict",
        "_order",
        "_pods",
        "_rows",
        "_slot",
        "_viol",
        "_vorder",
        "_word",
        "_worded",
    )

    def __init__(
        self,
        slot: _IdxArray,
        npot: IntArray,
        first: BoolArray,
        order: _IdxArray,
        vorder: _IdxArray,
        nvict: IntArray,
        num_viol: IntArray,
        pods: list[tuple[PodInfo, ...]],
        rows: list[int],
        no_victims: str,
        nodes: Sequence[NodeInfo],
        base: tuple[IntArray, IntArray, IntArray | None, IntArray],
        names: list[str],
        word: Callable[[NodeInfo, list[Pass]], Status] | None,
        alloc: IntArray,
    ) -> None:
        self._slot, self._npot, self._first, self._order = slot, npot, first, order
        self._vorder, self._nvict = vorder, nvict
        self._viol, self._pods, self._rows = num_viol, pods, rows
        self._no_victims, self._nodes, self._base, self._names = no_victims, nodes, base, names
        self._word = word
        # what Fit's wording of a row reads: rows alike share one Status (``worded``)
        used, count, extra, extra_n = base
        parts = [alloc, used, count[None, :], extra_n[None, :]]
        if extra is not None:
            parts.append(extra)
        self._key: IntArray = np.vstack(parts).T
        self._groups: _IdxArray | None = None
        self._worded: dict[int, Status] = {}

    def __call__(self, k: int) -> Found | None:
        """The answer for the ``k``-th node, None where the per-node path must decide."""
        i = int(self._slot[k])
        if i < 0:
            return None
        if self._npot[i] == 0:
            return [], 0, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, self._no_victims)
        if not self._first[i]:
            return [], 0, UNWORDED
        return self._victims(i), int(self._viol[i]), SUCCESS

    def _victims(self, i: int) -> list[PodInfo]:
        row_pods = self._pods[self._rows[i]]
        chosen = self._order[i][self._vorder[i, : self._nvict[i]]]
        return [row_pods[c] for c in chosen.tolist()]

    def walk(
        self, offset: int, num_candidates: int
    ) -> tuple[list[Candidate], NodeToStatus, list[str]] | None:
        """``Evaluator.dry_run_preemption``'s walk from ``offset`` on these answers at once:
        where it stops, the candidates it keeps, the statuses and errors of the nodes it
        passed. None when it would pass a node the per-node path must decide."""
        n = len(self._slot)
        if not n:
            return None
        slot = self._slot
        i_of = np.maximum(slot, 0)
        # per node: -1 undecided, 0/1 a candidate without/with PDB violations, 2 a status
        kind = np.where(self._viol[i_of] > 0, 1, 0)
        kind = np.where(
            (self._npot[i_of] == 0) | ~self._first[i_of] | (self._nvict[i_of] == 0), 2, kind
        )
        kind = np.where(slot < 0, -1, kind)
        rot = (offset + np.arange(n)) % n
        kr = kind[rot]
        c0 = np.cumsum(kr == 0)
        c1 = np.cumsum(kr == 1)
        done = (c0 >= 1) & (
            np.minimum(c0, num_candidates) + np.minimum(c1, num_candidates) >= num_candidates
        )
        stop = int(np.argmax(done)) + 1 if done.any() else n
        walked, kinds = rot[:stop], kr[:stop]
        if (kinds < 0).any():
            return None
        nodes = self._nodes
        candidates: list[Candidate] = []
        for want in (0, 1):
            for k in walked[kinds == want][:num_candidates].tolist():
                i = int(slot[k])
                victims = Victims(self._victims(i), int(self._viol[i]))
                candidates.append(Candidate(nodes[k].name, victims))
        statuses = NodeToStatus()
        errors: list[str] = []
        at = walked[kinds == 2]
        if not len(at):
            return candidates, statuses, errors
        i_at = slot[at]
        hopeless = ~self._first[i_at] & (self._npot[i_at] > 0)
        if candidates:  # unworded statuses are not read then: none is left behind
            at, i_at, hopeless = at[~hopeless], i_at[~hopeless], hopeless[~hopeless]
        elif hopeless.any():
            if self._word is None:
                return None
            self._group_rows()
        out: dict[str, Status] = {}
        for k, i, worded in zip(at.tolist(), i_at.tolist(), hopeless.tolist(), strict=True):
            name = nodes[k].name
            if worded:
                st = self._group_status(k, i)
            elif self._npot[i] == 0:
                st = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, self._no_victims)
            else:
                st = Status(Code.ERROR, f'expected at least one victim pod on node "{name}"')
                errors.append(st.message())
            out[name] = st
        statuses.statuses = out
        return candidates, statuses, errors

    def worded(self, k: int) -> Status | None:
        """Fit's reasons for an ``UNWORDED`` answer (None: ask the per-node path)."""
        i = int(self._slot[k])
        if i < 0 or self._word is None or self._first[i] or self._npot[i] == 0:
            return None
        self._group_rows()
        return self._group_status(k, i)

    def _group_rows(self) -> None:
        """Group the rows Fit would word alike (equal allocatable and aggregates)."""
        if self._groups is None:
            key = np.ascontiguousarray(self._key)
            rows = key.view(np.dtype((np.void, key.dtype.itemsize * key.shape[1]))).ravel()
            self._groups = np.unique(rows, return_inverse=True)[1].reshape(-1)

    def _group_status(self, k: int, i: int) -> Status:
        """The worded status of row ``i`` (node ``k``), one per group of rows alike."""
        assert self._groups is not None and self._word is not None
        group = int(self._groups[i])
        st = self._worded.get(group)
        if st is None:
            st = self._worded[group] = self._word(self._nodes[k], self._passes(i))
        return st

    def _passes(self, i: int) -> list[Pass]:
        """Fit's passes over row ``i``: with the nominated pods first, if any."""
        used, count, extra, extra_n = self._base
        names = self._names

        def one(add: IntArray | None, n: int) -> Pass:
            u = [int(x) for x in used[:, i]]
            if add is not None:
                u = [a + int(b) for a, b in zip(u, add[:, i], strict=True)]
            scalars = {name: u[3 + s] for s, name in enumerate(names)}
            return (u[0], u[1], u[2], scalars, int(count[i]) + n)

        if extra is None or extra_n[i] == 0:
            return [one(None, 0)]
        return [one(extra, int(extra_n[i])), one(None, 0)]
