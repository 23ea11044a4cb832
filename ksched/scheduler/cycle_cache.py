"""Filter/Score work reused across pods with equal signatures: an exact equivalence cache.

Replicas of one workload ask the same question of every node. When every PreFilter,
Filter, PreScore and Score plugin of the profile signs a pod (``sign_pod``; see
``framework.interface``), its verdict and raw scores on a node depend only on the
signature and that node's NodeInfo. So this keeps, per signature, every node's Filter
verdict and raw scores, brings rows the snapshot replaced since up to date (the
snapshot's change log names them), and hands them to the cycle (``KnownResults``). The
cycle then selects from them with the very code it runs on the plugins' results: the
first ``numFeasibleNodesToFind`` feasible nodes from the round-robin start
(``selection.passing_in_rotation``), NormalizeScore and weights over exactly those
(``Framework.run_score``), the same tie-break draw. The chosen node and the next start
index are therefore the ones the full cycle picks; only the work differs.

Upstream's OpportunisticBatching (KEP-5598) reuses the previous pod's sorted scores
when its node filled up; here any row change is re-evaluated instead, so nothing is
approximated. Pods with nominations around, extenders and explanations take the full
cycle, as does anything this path cannot decide alone (no feasible node: the FitError
needs the full diagnosis).

Plugins whose results reach beyond one node (topology spread, inter-pod affinity terms
anywhere in the cluster) sign such pods ``PER_CYCLE``: the entry then holds the other
plugins' results (its signature has ``PER_CYCLE`` in those plugins' places), and every
lookup runs those plugins' PreFilter and batch Filter afresh over all rows, ANDs their
verdicts into the entry's, and leaves their PreScore and Score to the cycle
(``KnownResults.live``), which runs them on the nodes it takes, as the full cycle does.
Filter verdicts are an AND and the cycle takes nodes by the same routine from the same
verdicts, so the nodes, their scores and the draw are the full cycle's; what is saved is
every node-local plugin's work on rows that did not change.

Filling or refreshing an entry is no pod's scheduling cycle, so the framework is asked not
to record it (``record=False``). A cycle the cache answers still goes through PreFilter,
Filter, PreScore and Score, with the framework taking the known results instead of running
the plugins, and is observed at each in scheduler_framework_extension_point_duration_seconds
as upstream observes every pod's cycle (no plugin is counted as evaluated: none ran).
The cache also reports to upstream's batching metrics (``SchedulerMetrics.batch_lookup``,
``batch_stored``, ``batch_flushed``): bringing an entry up to date is "storing the results",
and an entry thrown away is a flush (``expired``: too much changed to refresh;
``pod_incompatible``: evicted for another signature; ``empty_list``: no feasible node).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from time import perf_counter
from typing import Any

import numpy as np

from ..framework.cycle_state import CycleState
from ..framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE, NarrowsNodes
from ..framework.runtime import Framework
from ..framework.selection import BatchMetrics, KnownResults
from ..framework.snapshot import BoolArray, NodeInfoView, Snapshot
from ..framework.status import Code
from ..framework.types import PodInfo

__all__ = ["CycleCache"]

_min_reduce = np.minimum.reduce
_max_reduce = np.maximum.reduce


class _Entry:
    """One signature's per-row results, valid for ``snap`` up to its change-log ``position``."""

    __slots__ = ("epoch", "images_version", "known", "position", "snap")

    def __init__(
        self, snap: Snapshot, state: CycleState, feasible: BoolArray, normalized: list[str]
    ) -> None:
        self.snap = snap
        self.epoch = snap.epoch
        self.position = snap.log_position
        self.images_version = snap.images_version
        # The PreFilter/PreScore state every pod of the signature gets (plugins' contract),
        # the verdicts, the weighted sum of the raw scores of plugins without NormalizeScore
        # and, per plugin with one, its raw scores (normalized per cycle over the chosen nodes).
        self.known = KnownResults(
            state,
            feasible,
            np.zeros(snap.n, dtype=np.int64),
            {name: np.zeros(snap.n, dtype=np.int64) for name in normalized},
        )


class CycleCache:
    """One profile's cache; ``lookup`` answers a pod's Filter and Score or says None."""

    MAX_ENTRIES = 8
    # More replaced rows than this since an entry was used: rebuild it from the batch forms.
    MAX_CHANGED_ROWS = 64
    # Up to this many rows to score: per-node forms instead of the batch forms.
    FEW_ROWS = 4

    def __init__(self, fw: Framework) -> None:
        self.fw = fw
        # signature -> entry, or None for a signature whose PreFilter narrows the node set.
        self._entries: dict[Hashable, _Entry | None] = {}
        # per set of PER_CYCLE plugins: their PreFilter and Filter plugins
        self._live: dict[frozenset[str], tuple[list[Any], list[Any]]] = {}
        self.hits = 0
        self.builds = 0
        self._narrows: list[Callable[[PodInfo], bool]] | None = None
        # The scheduler's metrics, while ``lookup`` runs (None when it has none), and
        # whether the cycle it runs for is sampled.
        self._metrics: BatchMetrics | None = None
        self._sampled = False

    def lookup(
        self, pod: PodInfo, snap: Snapshot, metrics: BatchMetrics | None, sampled: bool = False
    ) -> KnownResults | None:
        """``pod``'s results on ``snap`` when its signature's entry is (or can be brought) up
        to date and some node is feasible; None: the cycle runs the plugins (it alone can
        explain a FitError). The caller ensures no pod is nominated anywhere: a nominated
        pod makes Filter depend on more than the node. ``sampled``: the cycle's plugin
        calls are timed, so the ones made here for it are too."""
        if snap.n == 0:
            return None
        try:
            narrowed = any(narrows(pod) for narrows in self._narrowing())
        except Exception:  # a plugin's bad hint: sign it, ``_evaluate`` still finds out
            narrowed = False
        if narrowed:
            # Its entry would be None whatever it signs (see ``_evaluate``).
            self.fw.observe_sign()
            return None
        signed = self.fw.sign_pod_per_cycle(pod, sampled)
        if signed is None:
            return None
        sig, live = signed
        self._metrics = metrics
        self._sampled = sampled
        t0 = perf_counter() if metrics is not None else 0.0
        if sig in self._entries:
            entry = self._entries[sig]
            if entry is None:
                return None
            state = entry.known.state
            state.record_plugin_metrics = sampled
            try:
                ok = self._refresh(entry, pod, snap)
            finally:  # a plugin timeout may end the cycle here
                state.record_plugin_metrics = False
            if not ok:
                self._flushed("expired")
                entry = self._build(sig, pod, snap, live)
        else:
            entry = self._build(sig, pod, snap, live)
        if metrics is not None:
            metrics.batch_stored(self.fw.profile_name, perf_counter() - t0)
        if entry is None or not entry.known.feasible.any():
            return None
        known = self._per_cycle(entry.known, pod, snap, live) if live else entry.known
        if known is None:
            return None
        self.hits += 1
        return known

    def _per_cycle(
        self, known: KnownResults, pod: PodInfo, snap: Snapshot, live: frozenset[str]
    ) -> KnownResults | None:
        """The entry's results with the ``live`` plugins' PreFilter state and Filter
        verdicts of this cycle; None when one of them rejects the pod, errs or narrows
        the nodes, or no node is left: the full cycle words the outcome."""
        fw = self.fw
        state = CycleState()
        state.merge(known.state)
        state.skip_filter_plugins -= live
        state.skip_score_plugins -= live
        state.record_plugin_metrics = self._sampled
        pre_filter, filters = self._live_plugins(live)
        try:
            pre_res, st, _ = fw.run_pre_filter(state, pod, snap, record=False, plugins=pre_filter)
            if not st.is_success() or (pre_res is not None and pre_res.node_names is not None):
                return None
            feasible = known.feasible
            skip = state.skip_filter_plugins
            for p in filters:
                if p.name not in skip:
                    feasible = feasible & fw.plugin_filter_batch(p, state, pod, snap)
        except Exception:  # no batch form, an error on some row: the full cycle reports
            return None
        finally:
            state.record_plugin_metrics = False
        if not feasible.any():
            return None
        return KnownResults(state, feasible, known.static, known.columns, live)

    def _narrowing(self) -> list[Callable[[PodInfo], bool]]:
        """The ``narrows_nodes`` of the profile's PreFilter plugins that are ``NarrowsNodes``:
        pods it says True for have PreFilter narrow their nodes or reject them, so no entry."""
        got = self._narrows
        if got is None:
            got = self._narrows = [
                p.narrows_nodes for p in self.fw.pre_filter_plugins if isinstance(p, NarrowsNodes)
            ]
        return got

    # -- building and refreshing an entry --------------------------------------------------
    def _live_plugins(self, live: frozenset[str]) -> tuple[list[Any], list[Any]]:
        """The profile's PreFilter and Filter plugins among ``live``, in its order."""
        got = self._live.get(live)
        if got is None:
            fw = self.fw
            got = self._live[live] = (
                [p for p in fw.pre_filter_plugins if p.name in live],
                [p for p in fw.filter_plugins if p.name in live],
            )
        return got

    def _build(
        self, sig: Hashable, pod: PodInfo, snap: Snapshot, live: frozenset[str]
    ) -> _Entry | None:
        """Every row's verdict and raw scores, from the batch forms (as a full cycle does)."""
        self._entries.pop(sig, None)
        state = CycleState()
        state.record_plugin_metrics = self._sampled
        try:
            return self._evaluate(sig, pod, snap, state, live)
        finally:
            state.record_plugin_metrics = False

    def _evaluate(
        self, sig: Hashable, pod: PodInfo, snap: Snapshot, state: CycleState, live: frozenset[str]
    ) -> _Entry | None:
        """The entry of the plugins other than ``live``, which stay in its skip sets (so
        refreshing leaves them out too) and run every lookup instead."""
        fw = self.fw
        pre_filter = [p for p in fw.pre_filter_plugins if p.name not in live] if live else None
        pre_res, st, _ = fw.run_pre_filter(state, pod, snap, record=False, plugins=pre_filter)
        if not st.is_success():
            return None
        if pre_res is not None and pre_res.node_names is not None:
            self._store(sig, None)
            return None
        state.skip_filter_plugins |= live
        out = fw.find_feasible(state, pod, snap, snap.all_rows, 0, snap.n, record=False)
        if not len(out.feasible):
            self._flushed("empty_list")
            return None  # the full cycle produces the FitError
        rows = np.sort(out.feasible)
        view = NodeInfoView(snap.node_infos, rows)
        pre_score = [p for p in fw.pre_score_plugins if p.name not in live] if live else None
        if not fw.run_pre_score(state, pod, view, record=False, plugins=pre_score).is_success():
            return None
        state.skip_score_plugins |= live
        feasible = np.zeros(snap.n, dtype=np.bool_)
        feasible[rows] = True
        normalized = [
            p.name
            for p in fw.score_plugins
            if p.name not in state.skip_score_plugins
            and getattr(p, "normalize_score", None) is not None
        ]
        entry = _Entry(snap, state, feasible, normalized)
        if not self._score(entry, pod, rows):
            return None
        self.builds += 1
        self._store(sig, entry)
        return entry

    def _store(self, sig: Hashable, entry: _Entry | None) -> None:
        full = len(self._entries) >= self.MAX_ENTRIES
        if full and self._entries.pop(next(iter(self._entries))) is not None:
            self._flushed("pod_incompatible")
        self._entries[sig] = entry

    def _flushed(self, reason: str) -> None:
        m = self._metrics
        if m is not None:
            m.batch_flushed(self.fw.profile_name, reason)

    def _score(self, entry: _Entry, pod: PodInfo, rows: np.ndarray[Any, Any]) -> bool:
        """Raw scores of feasible ``rows`` into the entry; False when a plugin fails or
        (without NormalizeScore) scores out of range: the full cycle reports it."""
        if len(rows) <= self.FEW_ROWS:
            return self._score_few(entry, pod, rows.tolist())
        fw, known, snap = self.fw, entry.known, entry.snap
        state, static = known.state, known.static
        static[rows] = 0
        for p in fw.score_plugins:
            if p.name in state.skip_score_plugins:
                continue
            try:
                raw = fw.plugin_scores(p, state, pod, snap, rows)
            except Exception:
                return False
            col = known.columns.get(p.name)
            if col is not None:
                col[rows] = raw
                continue
            if len(raw) and (
                int(_min_reduce(raw)) < MIN_NODE_SCORE or int(_max_reduce(raw)) > MAX_NODE_SCORE
            ):
                return False
            static[rows] += raw * fw.weights.get(p.name, 1)
        return True

    def _score_few(self, entry: _Entry, pod: PodInfo, rows: list[int]) -> bool:
        """``_score`` for the row or two a binding changed, with the plugins' per-node forms
        (tested to agree with the batch forms) in plain ints: NumPy's per-call overhead on
        one-element arrays was most of a refreshed cycle's cost."""
        fw, known, infos = self.fw, entry.known, entry.snap.node_infos
        state, static, columns, weights = known.state, known.static, known.columns, fw.weights
        skip = state.skip_score_plugins
        totals = [0] * len(rows)
        for p in fw.score_plugins:
            name = p.name
            if name in skip:
                continue
            col = columns.get(name)
            try:
                # every Score plugin has the per-node form
                if state.record_plugin_metrics:
                    values = [fw.plugin_score(p, state, pod, infos[r]) for r in rows]
                else:
                    per_node = p.score
                    values = [int(per_node(state, pod, infos[r])) for r in rows]
                if col is not None:  # normalized per cycle: kept raw (an int64, as batch)
                    for r, v in zip(rows, values, strict=True):
                        col[r] = v
                    continue
            except Exception:
                return False
            w = weights.get(name, 1)
            for i, v in enumerate(values):
                if v < MIN_NODE_SCORE or v > MAX_NODE_SCORE:
                    return False
                totals[i] += v * w
        for r, t in zip(rows, totals, strict=True):
            static[r] = t
        return True

    def _refresh(self, entry: _Entry, pod: PodInfo, snap: Snapshot) -> bool:
        """Re-evaluate the rows replaced since the entry was last brought up to date."""
        if (
            entry.snap is not snap
            or entry.epoch != snap.epoch
            # ImageLocality's image columns were dropped (a row's image states changed).
            or entry.images_version != snap.images_version
        ):
            return False
        changed = snap.changed_rows(entry.epoch, entry.position)
        if changed is None:
            return False
        if not changed:
            return True
        rows = set(changed)
        if len(rows) > self.MAX_CHANGED_ROWS:
            return False
        fw, infos, valid = self.fw, snap.node_infos, snap.valid
        state, feasible = entry.known.state, entry.known.feasible
        ok: list[int] = []
        for r in rows:
            fits = False
            if valid[r]:
                st = fw.run_filter_plugins(state, pod, infos[r])
                if st.code == Code.ERROR:
                    return False
                fits = st.is_success()
            feasible[r] = fits
            if fits:
                ok.append(r)
        if ok:
            # scoring the rows a change left feasible: upstream's rescoreHintedNode
            t0 = perf_counter()
            scored = self._score(entry, pod, np.array(ok, dtype=np.intp))
            if self._metrics is not None:
                self._metrics.batch_rescored(self.fw.profile_name, perf_counter() - t0)
            if not scored:
                return False
        entry.position = snap.log_position
        return True
