"""The framework of one profile: its plugins per extension point and how they run.

Construction follows kube-scheduler's ``NewFramework``: instantiate every plugin
named anywhere in the profile once, fill each extension point from its own list,
expand ``multiPoint``, and compute score weights. Running follows
``frameworkImpl``: plugins in configured order, the first rejection wins, any
exception becomes an Error status naming the plugin (a malformed pod becomes
UnschedulableAndUnresolvable instead), and nothing a plugin does stops the scheduler.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from time import perf_counter as _perf
from typing import Any, Protocol

import anyio
import numpy as np

from ..api.objects import InvalidObjectError
from ..util.coro import run_sync
from ..util.duration import format_duration
from ..util.errors import KschedError
from .cycle_state import CycleState
from .handle import Handle
from .interface import (
    EXTENSION_POINTS,
    MAX_NODE_SCORE,
    MAX_TOTAL_SCORE,
    MIN_NODE_SCORE,
    NOT_SIGNABLE,
    PER_CYCLE,
    POINTS,
    NodeOnlyFilter,
    NodeToStatus,
    PodGroupSchedulingFunc,
    PostFilterResult,
    PreEnqueuePlugin,
    PreFilterResult,
    extension_points_of,
)
from .podgroup import (
    Placement,
    PlacementProgress,
    PlacementScore,
    PodGroupAssignments,
    PodGroupInfo,
    PodGroupPostFilterResult,
)
from .recorder import NO_RECORDER, FrameworkRecorder
from .registry import PluginArgsError, PluginSpec, Registry, parse_plugin_args
from .selection import EquivalenceCache, KnownResults, passing_in_rotation
from .snapshot import BoolArray, IntArray, Snapshot, all_true
from .status import SUCCESS, Code, RowErrors, Status, StatusError
from .types import NodeInfo, PodInfo
from .waiting_pods import WaitingPod

__all__ = [
    "FilterOutcome",
    "Framework",
    "FrameworkError",
    "ScoreOutcome",
    "raw_scores",
]


# CycleState key: the PreFilter plugins whose results narrowed the node set (for the
# "node(s) didn't satisfy plugin(s) [...]" status of the nodes left out).
PREFILTER_NARROWED_KEY = "ksched/prefilter-narrowed"
# Up to this many candidates (a PreFilter narrowed them): the per-node forms first.
FEW_CANDIDATES = 4


class PluginRefConfig(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def weight(self) -> int | None: ...


class PluginSetConfig(Protocol):
    @property
    def enabled(self) -> Sequence[PluginRefConfig]: ...

    @property
    def disabled(self) -> Sequence[PluginRefConfig]: ...


class PluginsConfig(Protocol):
    @property
    def multi_point(self) -> PluginSetConfig: ...

    def point(self, attr: str) -> PluginSetConfig:
        """The plugin set of one extension point by attribute name (``pre_filter``)."""
        ...


class PluginConfigEntry(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def args(self) -> Mapping[str, Any] | None: ...


class ProfileConfig(Protocol):
    """What a framework reads of its profile (``config.Profile``): the framework declares
    it so that it never imports the configuration, which imports the plugins."""

    @property
    def scheduler_name(self) -> str: ...

    @property
    def percentage_of_nodes_to_score(self) -> int | None: ...

    @property
    def plugins(self) -> PluginsConfig: ...

    @property
    def plugin_config(self) -> Sequence[PluginConfigEntry]: ...


class FrameworkError(KschedError, ValueError):
    """A profile whose plugin configuration cannot be assembled."""


# extension point key -> its plugin-set attribute (``config.Plugins``), from the one table
_POINT_ATTR = {p.key: p.attr for p in EXTENSION_POINTS if p.configured}
# The metrics' ``extension_point`` labels (upstream's ``metrics.PreFilter``, ...): the
# table's, and those naming a part of a point.
_PRE_ENQUEUE, _PRE_FILTER, _FILTER, _POST_FILTER = (
    POINTS[k].label for k in ("preEnqueue", "preFilter", "filter", "postFilter")
)
_PRE_SCORE, _SCORE, _RESERVE, _PERMIT = (
    POINTS[k].label for k in ("preScore", "score", "reserve", "permit")
)
_PRE_BIND, _BIND, _POST_BIND = (POINTS[k].label for k in ("preBind", "bind", "postBind"))
_PLACEMENT_GENERATE, _PLACEMENT_SCORE, _POD_GROUP_POST_FILTER, _PLACEMENT_FEASIBLE = (
    POINTS[k].label
    for k in ("placementGenerate", "placementScore", "podGroupPostFilter", "placementFeasible")
)
_NORMALIZE, _UNRESERVE, _PRE_BIND_PRE_FLIGHT, _SIGN, _PLACEMENT_NORMALIZE = (
    "ScoreExtensionNormalize",
    "Unreserve",
    "PreBindPreFlight",
    "Sign",
    "PlacementScoreExtensionNormalize",
)
# The one plugin upstream's framework runs at PlacementFeasible (with GenericWorkload).
GANG_SCHEDULING = "GangScheduling"


def _status(result: Status | None, plugin: str) -> Status:
    if result is None:
        return SUCCESS
    if not result.plugin and result.code != Code.SUCCESS:
        result.plugin = plugin
    return result


def _from_exception(e: BaseException, plugin: str, point: str) -> Status:
    if isinstance(e, StatusError) and point == "Filter":
        msg = e.status.message()
        return Status(Code.ERROR, f'running "{plugin}" filter plugin: {msg}', plugin=plugin)
    if isinstance(e, InvalidObjectError):
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(e), plugin=plugin)
    st = Status(
        Code.ERROR, f'running {point} plugin "{plugin}": {type(e).__name__}: {e}', plugin=plugin
    )
    st.cause = e
    return st


def _label(st: Status | None) -> str:
    """A plugin's (or a point's) status as the metrics' ``status`` label."""
    return "Success" if st is None else st.code.label


def _label_of_first(out: tuple[Any, ...]) -> str:
    return _label(out[0])


def _label_of_second(out: tuple[Any, ...]) -> str:
    return _label(out[1])


def _success(_: object) -> str:
    return "Success"


_NO_LIVE: frozenset[str] = frozenset()


def _signed(fragment: object) -> str:
    """A plugin that cannot sign says Unschedulable upstream (InterPodAffinity, ...), as
    does one run every cycle (``PER_CYCLE``): upstream's cannot sign those pods either."""
    return "Unschedulable" if fragment is NOT_SIGNABLE or fragment is PER_CYCLE else "Success"


def _any_passed(mask: BoolArray) -> str:
    """A batch Filter call judges every node at once: Success when any node passed."""
    return "Success" if mask.any() else "Unschedulable"


def _int64(x: int) -> int:
    """``x`` as a Go int64 holds it (wrapped round)."""
    return (x + 2**63) % 2**64 - 2**63


def _score_weights(
    profile: str, instances: dict[str, Any], plugins: PluginsConfig, point: str = "score"
) -> dict[str, int]:
    """Upstream ``getValidScoreWeights``: each Score (or PlacementScore, ``point``) plugin's
    weight (an explicit entry before its multiPoint one; 0 means 1), refusing a total that
    could overflow int64.

    The check is upstream's to the bit: ``weight * 100 > MaxInt64 - total`` in int64, which
    a negative running total wraps round, so a negative sum of weights is refused as an
    overflow as soon as another Score plugin follows it.
    """
    weights: dict[str, int] = {}
    total = 0
    what = "Score" if point == "score" else "Placement score"
    for ref in [*plugins.point(POINTS[point].attr).enabled, *plugins.multi_point.enabled]:
        if point not in extension_points_of(instances[ref.name]) or ref.name in weights:
            continue
        w = weights[ref.name] = ref.weight or 1
        if w * MAX_NODE_SCORE > _int64(MAX_TOTAL_SCORE - total):
            hint = (
                f": the weights of the Score plugins before {ref.name} add up to "
                f"{total // MAX_NODE_SCORE}, and a negative sum cannot be followed by another one"
                if total < 0
                else ""
            )
            raise FrameworkError(
                f'profile "{profile}": {what.lower()} plugins: total score of Score plugins '
                f"could overflow{hint}"
                if point != "score"
                else f'profile "{profile}": total score of Score plugins could overflow{hint}'
            )
        total = _int64(total + w * MAX_NODE_SCORE)
    return weights


@dataclass(slots=True)
class FilterOutcome:
    """What Filter found: feasible rows (in evaluation order) and how many nodes it looked at."""

    feasible: np.ndarray[Any, np.dtype[np.intp]]
    processed: int
    statuses: NodeToStatus
    unschedulable_plugins: set[str] = field(default_factory=set)
    # Per-plugin verdicts per node, only with explain=True.
    explain: dict[str, dict[str, str]] | None = None


_min_reduce = np.minimum.reduce
_max_reduce = np.maximum.reduce


def _first_not_passing(
    plugins: list[Any], state: Any, pod: Any, ni: Any
) -> tuple[int, Status] | None:
    """The per-node Filter walk on one node: the index and status of the first of
    ``plugins`` that does not pass it (a raise is that plugin's error), None if all pass."""
    for j, p in enumerate(plugins):
        try:
            raw = p.filter(state, pod, ni)
        except Exception as e:
            return j, _from_exception(e, p.name, "Filter")
        if raw is not None and raw.code != Code.SUCCESS:
            return j, _status(raw, p.name)
    return None


def _judged(rows: list[int], plugins: list[Any]) -> dict[tuple[int, str], Status]:
    """``rows`` passed every one of ``plugins`` (``Framework._few_all_pass``)."""
    return {(r, p.name): SUCCESS for r in rows for p in plugins}


class _Rotation:
    """``candidates`` rotated to start at ``start``, built only if needed."""

    __slots__ = ("candidates", "start")

    def __init__(self, candidates: np.ndarray[Any, np.dtype[np.intp]], start: int) -> None:
        self.candidates = candidates
        self.start = start

    def array(self) -> np.ndarray[Any, np.dtype[np.intp]]:
        c, s = self.candidates, self.start
        return np.concatenate((c[s:], c[:s])) if s else c


@dataclass(slots=True)
class ScoreOutcome:
    totals: IntArray
    # plugin -> (raw, normalized, weighted), only with explain=True.
    per_plugin: dict[str, tuple[IntArray, IntArray, IntArray]] | None = None


class Framework:
    def __init__(
        self,
        profile: ProfileConfig,
        registry: Registry,
        handle: Handle | None = None,
        *,
        default_args: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
        validate_args: Collection[str] = (),
        recorder: FrameworkRecorder | None = None,
    ) -> None:
        """``validate_args``: plugins whose pluginConfig args are parsed (and so validated)
        even when the profile does not enable them, as kube-scheduler's config validation
        does for some in-tree plugins. ``recorder``: where its timings go (``record_to``)."""
        self.profile_name: str = profile.scheduler_name
        self.percentage_of_nodes_to_score: int | None = profile.percentage_of_nodes_to_score
        self.handle = handle if handle is not None else Handle()
        self.handle.framework = self
        plugins = profile.plugins
        args_by_name: dict[str, dict[str, Any]] = {}
        for pc in profile.plugin_config:
            args_by_name[pc.name] = dict(pc.args or {})

        # 1. one instance per plugin named anywhere.
        wanted: list[str] = []
        for point in [*_POINT_ATTR.values(), "multi_point"]:  # multiPoint: config only
            for ref in plugins.point(point).enabled:
                if ref.name not in wanted:
                    wanted.append(ref.name)
        self.plugins: dict[str, Any] = {}
        for pc in profile.plugin_config:
            spec = registry.get(pc.name)
            if pc.name in validate_args and pc.name not in wanted and spec is not None:
                self._with_args(spec, args_by_name, default_args, build=False)
        for name in wanted:
            spec = registry.get(name)
            if spec is None:
                raise FrameworkError(
                    f'profile "{self.profile_name}": unknown plugin "{name}"; available: '
                    + ", ".join(registry.names())
                )
            inst = self._with_args(spec, args_by_name, default_args, build=True)
            if not getattr(inst, "name", None):
                with contextlib.suppress(AttributeError):
                    inst.name = name
            self.plugins[name] = inst

        # 2. per-point lists from the explicit extension points.
        self._lists: dict[str, list[Any]] = {}
        for point, attr in _POINT_ATTR.items():
            lst = []
            for ref in plugins.point(attr).enabled:
                inst = self.plugins[ref.name]
                if point not in extension_points_of(inst):
                    if ref.name in POINTS[point].in_tree:
                        continue  # upstream's plugin extends it, ksched's not yet
                    raise FrameworkError(
                        f'profile "{self.profile_name}": plugin "{ref.name}" '
                        f"does not extend {point} plugin"
                    )
                if inst in lst:
                    raise FrameworkError(
                        f'profile "{self.profile_name}": plugin "{ref.name}" '
                        f'already registered as "{point}"'
                    )
                lst.append(inst)
            self._lists[point] = lst
        # 3. multiPoint expansion (frameworkImpl.expandMultiPointPlugins).
        if plugins.multi_point.enabled:
            self._expand_multi_point(plugins)
        if len(self._lists["queueSort"]) != 1:
            raise FrameworkError(
                f'profile "{self.profile_name}": exactly one queue sort plugin must be enabled, '
                f"found {len(self._lists['queueSort'])}"
            )
        if not self._lists["bind"]:
            raise FrameworkError(
                f'profile "{self.profile_name}": at least one bind plugin is needed'
            )

        if len(self._lists["placementGenerate"]) > 1:
            raise FrameworkError(
                "at most one placement generate plugin is allowed for profile with scheduler "
                f'name "{self.profile_name}"'
            )

        # 4. score weights (getScoreWeights): explicit Score weights first, then multiPoint's.
        self.weights = _score_weights(self.profile_name, self.plugins, plugins)
        self.placement_weights = _score_weights(
            self.profile_name, self.plugins, plugins, "placementScore"
        )

        self.pre_enqueue_plugins = self._lists["preEnqueue"]
        self.queue_sort_plugin = self._lists["queueSort"][0]
        self.pre_filter_plugins = self._lists["preFilter"]
        self.filter_plugins = self._lists["filter"]
        self.post_filter_plugins = self._lists["postFilter"]
        self.pre_score_plugins = self._lists["preScore"]
        self.score_plugins = self._lists["score"]
        self.reserve_plugins = self._lists["reserve"]
        self.permit_plugins = self._lists["permit"]
        self.pre_bind_plugins = self._lists["preBind"]
        self.bind_plugins = self._lists["bind"]
        self.post_bind_plugins = self._lists["postBind"]
        self.placement_generate_plugins = self._lists["placementGenerate"]
        self.placement_score_plugins = self._lists["placementScore"]
        self.pod_group_post_filter_plugins = self._lists["podGroupPostFilter"]
        # Not configured: upstream takes GangScheduling for it when GenericWorkload is on.
        self.placement_feasible_plugins: list[Any] = []
        features = self.handle.features
        gang = self.plugins.get(GANG_SCHEDULING)
        if gang is not None and features.enabled_if_known("GenericWorkload"):
            if "placementFeasible" not in extension_points_of(gang):
                raise FrameworkError(
                    "GenericWorkload is enabled, but GangScheduling plugin does not fulfill "
                    "PlacementFeasiblePlugin interface"
                )
            self.placement_feasible_plugins.append(gang)
        self._signers: list[tuple[Any, Any]] | None = None
        # Set by the Scheduler: its ``cycle_cache.CycleCache`` for this profile.
        self.cycle_cache: EquivalenceCache | None = None
        self.recorder: FrameworkRecorder = NO_RECORDER
        self._recording = False
        if recorder is not None:
            self.record_to(recorder)

    def record_to(self, recorder: FrameworkRecorder) -> None:
        """Report this framework's extension-point timings, its sampled cycles' plugin
        timings and its plugin evaluations to ``recorder`` from now on."""
        self.recorder = recorder
        self._recording = recorder is not NO_RECORDER
        for label, plugins in (
            (_PRE_FILTER, self.pre_filter_plugins),
            (_FILTER, self.filter_plugins),
            (_PRE_SCORE, self.pre_score_plugins),
            (_SCORE, self.score_plugins),
        ):
            recorder.plugins_listed(self.profile_name, label, [p.name for p in plugins])

    def _sampled(
        self,
        state: CycleState,
        point: str,
        p: Any,
        status_of: Callable[[Any], str],
        fn: Any,
        *args: Any,
    ) -> Any:
        """``fn(*args)``, timed (``_timed``) when ``state``'s cycle samples plugin metrics."""
        if state.record_plugin_metrics:
            return self._timed(point, p, status_of, fn, *args)
        return fn(*args)

    def _timed(
        self, point: str, p: Any, status_of: Callable[[Any], str], fn: Any, *args: Any
    ) -> Any:
        """``fn(*args)``, plugin ``p``'s call at ``point`` in a sampled cycle, timed."""
        t0 = _perf()
        try:
            out = fn(*args)
        except BaseException:
            self.recorder.plugin(point, p.name, "Error", _perf() - t0)
            raise
        self.recorder.plugin(point, p.name, status_of(out), _perf() - t0)
        return out

    async def _timed_async(
        self, point: str, p: Any, status_of: Callable[[Any], str], fn: Any, *args: Any
    ) -> Any:
        t0 = _perf()
        try:
            out = await fn(*args)
        except BaseException:
            self.recorder.plugin(point, p.name, "Error", _perf() - t0)
            raise
        self.recorder.plugin(point, p.name, status_of(out), _perf() - t0)
        return out

    def _observed(self, point: str, status: str, t0: float) -> None:
        self.recorder.extension_point(point, status, self.profile_name, _perf() - t0)

    def _with_args(
        self,
        spec: PluginSpec,
        args_by_name: dict[str, dict[str, Any]],
        default_args: Callable[[str, dict[str, Any]], dict[str, Any]] | None,
        *,
        build: bool,
    ) -> Any:
        """``spec``'s parsed args, or (``build``) the plugin made with them; a problem with
        them is a FrameworkError naming the profile and the plugin."""
        raw = args_by_name.get(spec.name, {})
        if default_args is not None:
            raw = default_args(spec.name, raw)
        try:
            args = parse_plugin_args(spec, raw)
            return spec.factory(args, self.handle) if build else args
        except (PluginArgsError, FrameworkError) as e:
            raise FrameworkError(f'profile "{self.profile_name}": {e}') from None
        except (TypeError, ValueError) as e:
            raise FrameworkError(
                f'profile "{self.profile_name}": plugin {spec.name}: args: {e}'
            ) from None

    def _expand_multi_point(self, plugins: PluginsConfig) -> None:
        for point, attr in _POINT_ATTR.items():
            pset = plugins.point(attr)
            enabled = [r.name for r in pset.enabled]
            disabled = {r.name for r in pset.disabled}
            if "*" in disabled:
                continue
            multi: list[str] = []
            overrides: list[str] = []
            for ref in plugins.multi_point.enabled:
                inst = self.plugins[ref.name]
                if point not in extension_points_of(inst) or ref.name in disabled:
                    continue
                if ref.name in enabled:
                    if ref.name not in overrides:
                        overrides.append(ref.name)
                    continue
                if ref.name in multi:
                    raise FrameworkError(
                        f'profile "{self.profile_name}": plugin "{ref.name}" '
                        f'already registered as "{point}"'
                    )
                multi.append(ref.name)
            ordered = (
                [n for n in enabled if n in overrides]
                + multi
                + [n for n in enabled if n not in overrides]
            )
            self._lists[point] = [self.plugins[n] for n in ordered]

    # -- introspection ------------------------------------------------------------------
    def list_plugins(self) -> dict[str, list[str]]:
        """Effective plugin names per extension point, for /configz and tests."""
        return {p: [i.name for i in lst] for p, lst in self._lists.items()}

    # -- PreEnqueue / QueueSort -------------------------------------------------------
    def run_pre_enqueue(self, pod: PodInfo, group: dict[str, Status] | None = None) -> Status:
        """``group``: the verdicts so far of the plugins that answer for a whole pod group
        (``pre_enqueue_per_pod_group``), shared while one group's members are gated."""
        if not self._recording:
            return self._pre_enqueue(pod, False, group)
        t0 = _perf()
        st = self._pre_enqueue(pod, self.recorder.sample_plugins(), group)
        # Upstream's deferred observation reads a status its loop shadows: always Success.
        self._observed(_PRE_ENQUEUE, "Success", t0)
        return st

    def run_pre_enqueue_gate(self, pod: PodInfo, plugin: str) -> Status | None:
        """Upstream's first step when it runs PreEnqueue again for a gated pod
        (``runPreEnqueuePlugins``): the plugin that gated it, alone; only if it lets the
        pod through are the others asked. Recorded as a whole run is. None when no
        PreEnqueue plugin has that name."""
        for p in self.pre_enqueue_plugins:
            if p.name == plugin:
                break
        else:
            return None
        if not self._recording:
            return self._pre_enqueue_one(p, pod, False)
        t0 = _perf()
        st = self._pre_enqueue_one(p, pod, self.recorder.sample_plugins())
        self._observed(_PRE_ENQUEUE, "Success", t0)
        return st

    def _pre_enqueue(self, pod: PodInfo, sampled: bool, group: dict[str, Status] | None) -> Status:
        for p in self.pre_enqueue_plugins:
            if group is not None and p.pre_enqueue_per_pod_group:
                st = group.get(p.name)
                if st is None:
                    st = group[p.name] = self._pre_enqueue_one(p, pod, sampled)
            else:
                st = self._pre_enqueue_one(p, pod, sampled)
            if st is not SUCCESS and not st.is_success():
                return st
        return SUCCESS

    def _pre_enqueue_one(self, p: PreEnqueuePlugin, pod: PodInfo, sampled: bool) -> Status:
        try:
            if sampled:
                raw = self._timed(_PRE_ENQUEUE, p, _label, p.pre_enqueue, pod)
            else:
                raw = p.pre_enqueue(pod)
        except Exception as e:
            return _from_exception(e, p.name, "PreEnqueue")
        return SUCCESS if raw is None else _status(raw, p.name)

    def queue_sort_key(self) -> Callable[[Any], Any]:
        """A heap key from the QueueSort plugin: its ``sort_key``, or ``less`` via cmp_to_key."""
        p = self.queue_sort_plugin
        key = getattr(p, "sort_key", None)
        if key is not None:
            return key  # type: ignore[no-any-return]
        less = p.less

        def cmp(a: Any, b: Any) -> int:
            if less(a, b):
                return -1
            if less(b, a):
                return 1
            return 0

        return functools.cmp_to_key(cmp)

    # -- PreFilter ---------------------------------------------------------------------
    def run_pre_filter(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        *,
        record: bool = True,
        known: KnownResults | None = None,
        plugins: Sequence[Any] | None = None,
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        """``RunPreFilterPlugins``. ``record=False``: not observed, for work that is no
        pod's scheduling cycle (the cycle cache filling an entry). With ``known`` (the
        equivalence cache's results) no plugin runs: the state PreFilter wrote for the
        pod's signature is taken, and observed as the PreFilter the cycle went through
        (no plugin is counted as evaluated). ``plugins`` (with ``record=False``): only
        these of the profile's PreFilter plugins, in its order (the cycle cache's split)."""
        if known is not None:
            t0 = _perf()
            state.merge(known.state)
            if self._recording and record:
                self._observed(_PRE_FILTER, "Success", t0)
            return None, SUCCESS, set()
        if not (self._recording and record):
            return self._pre_filter(state, pod, snap, plugins)
        t0 = _perf()
        out = self._pre_filter(state, pod, snap, plugins)
        st = out[1]
        self._observed(_PRE_FILTER, st.code.label, t0)
        stopped_at = "" if st.is_success() else st.plugin
        self.recorder.evaluated(
            self.profile_name, _PRE_FILTER, 1, state.skip_filter_plugins, stopped_at
        )
        return out

    def _pre_filter(
        self, state: CycleState, pod: PodInfo, snap: Snapshot, plugins: Sequence[Any] | None = None
    ) -> tuple[PreFilterResult | None, Status, set[str]]:
        result: PreFilterResult | None = None
        rejected_by: set[str] = set()
        narrowed_by: list[str] = []
        sampled = state.record_plugin_metrics
        for p in self.pre_filter_plugins if plugins is None else plugins:
            try:
                if sampled:
                    r, raw = self._timed(
                        _PRE_FILTER, p, _label_of_second, p.pre_filter, state, pod, snap
                    )
                else:
                    r, raw = p.pre_filter(state, pod, snap)
            except Exception as e:
                return None, _from_exception(e, p.name, "PreFilter"), {p.name}
            if raw is None and r is None:
                continue  # Success without a result: nothing to record
            st = _status(raw, p.name)
            if st.is_skip():
                state.skip_filter_plugins.add(p.name)
                continue
            if not st.is_success():
                if st.is_rejected():
                    rejected_by.add(p.name)
                    return None, st, rejected_by
                return (
                    None,
                    Status(
                        Code.ERROR,
                        f'running PreFilter plugin "{p.name}": {st.message()}',
                        plugin=p.name,
                    ),
                    rejected_by,
                )
            if r is not None and not r.all_nodes():
                narrowed_by.append(p.name)
                result = r if result is None else result.merge(r)
                assert result.node_names is not None
                if not result.node_names:
                    msg = f"node(s) didn't satisfy plugin(s) [{' '.join(narrowed_by)}]"
                    return (
                        result,
                        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg, plugin=p.name),
                        set(narrowed_by),
                    )
        if narrowed_by:
            state.write(PREFILTER_NARROWED_KEY, narrowed_by)
        return result, SUCCESS, rejected_by

    # -- Filter ------------------------------------------------------------------------
    def _filters_take_added(self, state: CycleState) -> bool:
        """Whether pods can be added to a node for Filter without copying it: every active
        Filter plugin has ``filter_with_added`` and no active PreFilter plugin has
        extensions (AddPod would change the cycle state)."""
        skip = state.skip_filter_plugins
        for p in self.pre_filter_plugins:
            if p.name not in skip and p.pre_filter_extensions() is not None:
                return False
        return all(
            p.name in skip or getattr(p, "filter_with_added", None) is not None
            for p in self.filter_plugins
        )

    def run_filter_plugins(
        self, state: CycleState, pod: PodInfo, node: NodeInfo, added: Sequence[PodInfo] = ()
    ) -> Status:
        """All Filter plugins on one node, stopping at the first rejection; with ``added``,
        through ``filter_with_added`` (the caller checked ``_filters_take_added``)."""
        if node.error is not None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, node.error)
        skip = state.skip_filter_plugins
        sampled = state.record_plugin_metrics
        for p in self.filter_plugins:
            if p.name in skip:
                continue
            try:
                if sampled:
                    fn, args = (
                        (p.filter_with_added, (state, pod, node, added))
                        if added
                        else (p.filter, (state, pod, node))
                    )
                    st = _status(self._timed(_FILTER, p, _label, fn, *args), p.name)
                elif added:
                    st = _status(p.filter_with_added(state, pod, node, added), p.name)
                else:
                    st = _status(p.filter(state, pod, node), p.name)
            except Exception as e:
                return _from_exception(e, p.name, "Filter")
            if not st.is_success():
                if not st.is_rejected():
                    return Status(
                        Code.ERROR,
                        f'running "{p.name}" filter plugin: {st.message()}',
                        plugin=p.name,
                    )
                return st
        return SUCCESS

    def run_filter_with_nominated_pods(
        self,
        state: CycleState,
        pod: PodInfo,
        node: NodeInfo,
        nominated: Sequence[PodInfo],
        take_added: bool | None = None,
    ) -> Status:
        """``RunFilterPluginsWithNominatedPods``: the nominated pods (priority >= pod's,
        already selected by the caller) must fit alongside the pod, and the pod must fit
        without them too, in case they never arrive. ``take_added``: the caller's
        ``_filters_take_added(state)``, asked once for many nodes."""
        st = SUCCESS
        pods_added = False
        for first in (True, False):
            state_used, node_used = state, node
            if first:
                if take_added is None and nominated:
                    take_added = self._filters_take_added(state)
                if nominated and take_added:
                    # No copies: each plugin judges the node with the pods added itself.
                    pods_added = True
                    st = self.run_filter_plugins(state, pod, node, nominated)
                    if not st.is_success() and not st.is_rejected():
                        return st
                    continue
                if nominated:
                    state_used, node_used = state.clone(), node.clone()
                    for npi in nominated:
                        node_used.add_pod(npi)
                        add = self.run_pre_filter_add_pod(state_used, pod, npi, node_used)
                        if not add.is_success():
                            return add
                    pods_added = True
            elif not pods_added or not st.is_success():
                break
            st = self.run_filter_plugins(state_used, pod, node_used)
            if not st.is_success() and not st.is_rejected():
                return st
        return st

    def run_pre_filter_add_pod(
        self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension(
            state, pod, to_add, node, "add_pod", "PreFilterExtensionAddPod"
        )

    def run_pre_filter_remove_pod(
        self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        return self._run_pre_filter_extension(
            state, pod, to_remove, node, "remove_pod", "PreFilterExtensionRemovePod"
        )

    def _run_pre_filter_extension(
        self,
        state: CycleState,
        pod: PodInfo,
        other: PodInfo,
        node: NodeInfo,
        method: str,
        point: str,
    ) -> Status:
        """AddPod/RemovePod of every PreFilter plugin with extensions, first failure wins."""
        for p in self.pre_filter_plugins:
            if p.name in state.skip_filter_plugins:
                continue
            ext = p.pre_filter_extensions()
            if ext is None:
                continue
            try:
                fn = getattr(ext, method)
                if state.record_plugin_metrics:
                    raw = self._timed(point, p, _label, fn, state, pod, other, node)
                else:
                    raw = fn(state, pod, other, node)
                st = _status(raw, p.name)
            except Exception as e:
                return _from_exception(e, p.name, point)
            if not st.is_success():
                return st
        return SUCCESS

    @staticmethod
    def _first_reached(
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        candidates: Any,
        start: int,
        e: RowErrors,
        before: list[Any],
        skip: Any,
        plugin: str,
    ) -> Status | None:
        """The error of the first erring row, in rotation order, that every Filter plugin
        before the erring one (``plugin``) passes; on that row an earlier plugin that errs
        (raises or answers Error) is the error instead, as the per-node walk meets it first
        (None: each row was rejected earlier, so its error never runs)."""
        plugins = [q for q in before if q.name not in skip]
        for row in _Rotation(candidates, start).array():
            r = int(row)
            if r not in e.errors:
                continue
            first = _first_not_passing(plugins, state, pod, snap.node_infos[r])
            if first is None:
                return _from_exception(StatusError(e.errors[r]), plugin, "Filter")
            if first[1].code == Code.ERROR:
                return first[1]
        return None

    def find_feasible(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        candidates: np.ndarray[Any, np.dtype[np.intp]],
        start: int,
        num_to_find: int,
        nominated: dict[int, list[PodInfo]] | None = None,
        *,
        explain: bool = False,
        record: bool = True,
        known: KnownResults | None = None,
    ) -> FilterOutcome:
        """``findNodesThatPassFilters``, observed as the Filter extension point (Success
        unless a plugin erred, as upstream; not without Filter plugins, nor with
        ``record=False``: see ``run_pre_filter``). With ``known`` (the equivalence cache's
        verdicts of every row; ``candidates`` are then all rows) the nodes are taken from
        them by the routine that takes them from the plugins' verdicts."""
        if known is not None:
            t0 = _perf()
            chosen, processed = passing_in_rotation(
                known.feasible, start % snap.n, snap.n, num_to_find
            )
            if self._recording and record and self.filter_plugins:
                self._observed(_FILTER, "Success", t0)
            return FilterOutcome(chosen, processed, NodeToStatus())
        if not (self._recording and record and self.filter_plugins):
            return self._find_feasible(
                state, pod, snap, candidates, start, num_to_find, nominated, explain
            )
        t0 = _perf()
        out = self._find_feasible(
            state, pod, snap, candidates, start, num_to_find, nominated, explain
        )
        absent = out.statuses.absent
        self._observed(
            _FILTER, "Error" if absent is not None and absent.code == Code.ERROR else "Success", t0
        )
        self.recorder.evaluated(
            self.profile_name, _FILTER, out.processed, state.skip_filter_plugins, ""
        )
        return out

    def _find_feasible(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        candidates: np.ndarray[Any, np.dtype[np.intp]],
        start: int,
        num_to_find: int,
        nominated: dict[int, list[PodInfo]] | None,
        explain: bool,
    ) -> FilterOutcome:
        """Filter ``candidates`` from ``start`` (round-robin) until ``num_to_find`` fit.

        Batch plugins produce masks over every node at once; per-node plugins then
        run only on nodes the masks let through, in rotation order, until enough
        are found. Statuses of rejected nodes are computed only when no node fits
        (the FitError needs them) or when explaining.
        """
        n = len(candidates)
        statuses = NodeToStatus()
        if n == 0:
            return FilterOutcome(np.empty(0, dtype=np.intp), 0, statuses)
        start %= n
        skip = state.skip_filter_plugins
        sampled = state.record_plugin_metrics
        batch: list[tuple[Any, BoolArray]] = []
        per_node: list[Any] = []
        unsched: set[str] = set()
        error: Status | None = None
        # The batch masks are combined over snapshot rows (one AND and one count per
        # mask that can reject anything; the shared all-True mask costs nothing) and put
        # in rotation order once. "Some node this plugin rejected had passed the plugins
        # before it" does not depend on the order, only on the candidate set: for all
        # rows it is a drop in the count of passing rows.
        everything = candidates is snap.all_rows
        # (row, plugin) -> Filter status the few-candidates path already has: not asked again
        judged: dict[tuple[int, str], Status] | None = None
        if not everything and n <= FEW_CANDIDATES and not sampled and not explain and not nominated:
            rotated = _Rotation(candidates, start).array()
            few = self._few_all_pass(state, pod, snap, rotated, num_to_find)
            if not isinstance(few, dict):
                return few
            judged = few
        ones = all_true(snap.n)
        valid = snap.valid
        combined: BoolArray | None = None  # None: just ``valid``
        passing = -1  # rows of ``combined`` still passing, when known
        order: Any = None
        mask: BoolArray | None = None  # in rotation order, once computed
        if not everything:
            order = _Rotation(candidates, start).array()
            mask = valid[order]
        for p in self.filter_plugins:
            if p.name in skip:
                continue
            fb = getattr(p, "filter_batch", None)
            if fb is None:
                per_node.append(p)
                continue
            try:
                m = (
                    self._timed(_FILTER, p, _any_passed, fb, state, pod, snap)
                    if sampled
                    else fb(state, pod, snap)
                )
            except RowErrors as e:
                before = list(self.filter_plugins)[: list(self.filter_plugins).index(p)]
                reached = self._first_reached(
                    state, pod, snap, candidates, start, e, before, skip, p.name
                )
                if reached is not None:
                    error = reached
                    break
                m = e.mask
            except Exception as e:
                error = _from_exception(e, p.name, "Filter")
                break
            batch.append((p, m))
            if m is ones:
                continue
            if mask is not None:
                mo = m[order]
                if not mo.all():
                    newly = mask & ~mo
                    if newly.any():
                        unsched.add(p.name)
                    mask &= mo
                continue
            if combined is None:
                if passing < 0:
                    passing = int(np.count_nonzero(valid))
                combined = np.logical_and(valid, m)
            else:
                np.logical_and(combined, m, out=combined)
            left = int(np.count_nonzero(combined))
            if left < passing:
                unsched.add(p.name)
            passing = left
        if error is not None:
            return self._error_outcome(error, candidates, snap, statuses)
        if order is None:
            order = _Rotation(candidates, start)
        nominated = nominated or {}
        slow_rows = nominated.keys() if nominated else ()
        verdicts = valid if combined is None else combined
        if mask is None and not per_node and not slow_rows and not explain:
            # Rows are their own positions: the one routine the equivalence cache's answers
            # take too (``selection.passing_in_rotation``).
            feasible, processed = passing_in_rotation(verdicts, start, n, num_to_find)
            if len(feasible):
                return FilterOutcome(feasible, processed, statuses, unsched)
        else:
            if isinstance(order, _Rotation):
                order = order.array()
            if mask is None:
                mask = verdicts[order]
            if not per_node and not slow_rows:
                pos = np.flatnonzero(mask)
                if len(pos) > num_to_find:
                    pos = pos[:num_to_find]
                    processed = int(pos[-1]) + 1
                else:
                    processed = n
                feasible = order[pos]
            else:
                found: list[int] = []
                processed = n
                infos = snap.node_infos
                walked: BoolArray = mask
                take_added = bool(nominated) and self._filters_take_added(state)
                first_pass = (
                    self._nominated_first_pass(
                        state,
                        pod,
                        snap,
                        batch,
                        nominated,
                        nominated.keys()
                        if everything
                        else [r for r in candidates.tolist() if r in nominated],
                    )
                    if take_added and not per_node
                    else None
                )

                def verdict(k: int) -> Status | None:
                    """Filter on the walk's ``k``-th node; None: a batch mask rejected it."""
                    row = int(order[k])
                    if row in nominated:
                        st = None if first_pass is None else first_pass.get(row)
                        if st is None:
                            return self.run_filter_with_nominated_pods(
                                state, pod, infos[row], nominated[row], take_added
                            )
                        if not st.is_success():
                            return st
                        # the second pass, without the nominated pods: the batch masks'
                        # verdict (worded by the plugins only if it is a rejection)
                        return (
                            SUCCESS
                            if walked[k]
                            else self.run_filter_plugins(state, pod, infos[row])
                        )
                    if not walked[k]:
                        return None
                    st = SUCCESS
                    for p in per_node:
                        if judged is not None and (got := judged.get((row, p.name))) is not None:
                            st = got
                            if not st.is_success():
                                break
                            continue
                        try:
                            raw = (
                                self._timed(_FILTER, p, _label, p.filter, state, pod, infos[row])
                                if sampled
                                else p.filter(state, pod, infos[row])
                            )
                            st = _status(raw, p.name)
                        except Exception as e:
                            st = _from_exception(e, p.name, "Filter")
                        if not st.is_success():
                            break
                    return st

                for k in range(n):
                    st = verdict(k)
                    if st is None:
                        continue
                    if st.code == Code.ERROR:
                        return self._error_outcome(st, order, snap, statuses)
                    if st.is_success():
                        found.append(int(order[k]))
                        if len(found) >= num_to_find:
                            # The walk ends here only if one more node would pass; with
                            # exactly ``num_to_find`` feasible nodes it went through all,
                            # as ``passing_in_rotation`` counts it (and the cache's answer).
                            rest = (verdict(j) for j in range(k + 1, n))
                            if any(v is not None and v.is_success() for v in rest):
                                processed = k + 1
                            break
                    else:
                        mask[k] = False
                        if st.plugin:
                            unsched.add(st.plugin)
                        statuses.set(infos[int(order[k])].name, st)
                feasible = np.array(found, dtype=np.intp)
        out = FilterOutcome(feasible, processed, statuses, unsched)
        if len(feasible) == 0 or explain:
            if isinstance(order, _Rotation):
                order = order.array()
            if mask is None:
                mask = verdicts[order]
            self._diagnose(
                state,
                pod,
                snap,
                order[:processed],
                mask[:processed],
                out,
                explain,
                batch,
                nominated,
                judged,
            )
        return out

    def _few_all_pass(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        order: np.ndarray[Any, np.dtype[np.intp]],
        num_to_find: int,
    ) -> FilterOutcome | dict[tuple[int, str], Status]:
        """The outcome when every one of a few candidates (``order``: rotated; a PreFilter
        narrowed them, e.g. to a daemonset pod's node) passes every Filter plugin, judged
        with the per-node forms instead of a mask over every row per batch plugin. All
        passing, no plugin rejected anything and the walk takes the first ``num_to_find``
        in rotation order, as here.

        When some node fails, errs or is invalid the batch walk decides, and words the
        rejections: then the per-node statuses judged so far, (row, plugin) -> status, for
        the walk and its diagnosis to take instead of calling those plugins again (an
        erring plugin errs once per node, with the status the walk would give it)."""
        skip = state.skip_filter_plugins
        plugins = [p for p in self.filter_plugins if p.name not in skip]
        infos, valid = snap.node_infos, snap.valid
        rows = order.tolist()
        for i, r in enumerate(rows):
            if not valid[r]:
                return _judged(rows[:i], plugins)
            first = _first_not_passing(plugins, state, pod, infos[r])
            if first is not None:
                j, st = first
                judged = _judged(rows[:i], plugins)
                for q in plugins[:j]:
                    judged[r, q.name] = SUCCESS
                judged[r, plugins[j].name] = st
                return judged
        k = min(len(order), num_to_find)
        return FilterOutcome(order[:k], k, NodeToStatus(), set())

    def _nominated_first_pass(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        batch: list[tuple[Any, BoolArray]],
        nominated: dict[int, list[PodInfo]],
        rows: Any,
    ) -> dict[int, Status] | None:
        """The first pass of ``run_filter_with_nominated_pods`` (the pod beside the pods
        nominated there) on every nominated row at once: the status of the first plugin
        that rejects, or SUCCESS. Possible when every active Filter plugin is a batch one
        that either reads the Node alone (its mask is its verdict with pods added too) or
        words many rows with pods added (``filter_statuses_take_added``); None otherwise.
        Only ``rows`` (the nominated ones among the candidates) are judged. A row left
        out (a broken node, a status neither success nor rejection) is for the per-node
        path, which words errors as a node-by-node run does."""
        infos, valid = snap.node_infos, snap.valid
        for p, _ in batch:
            if not isinstance(p, NodeOnlyFilter) and not getattr(
                p, "filter_statuses_take_added", False
            ):
                return None
        pending = np.array(
            sorted(r for r in rows if valid[r] and infos[r].error is None), dtype=np.intp
        )
        out: dict[int, Status] = {}
        for p, m in batch:
            if not len(pending):
                break
            if isinstance(p, NodeOnlyFilter):
                at = np.flatnonzero(~m[pending])
                if not len(at):
                    continue
                sts = self._filter_statuses(p, state, pod, snap, pending[at])
            else:
                at = np.arange(len(pending))
                try:
                    raw = p.filter_statuses(
                        state, pod, snap, pending, [nominated[r] for r in pending.tolist()]
                    )
                except Exception:
                    return None  # the per-node path words the failure
                sts = [SUCCESS if st is None else _status(st, p.name) for st in raw]
            # Python lists, not numpy scalars, in the per-row loop (hundreds of rows)
            keep = [True] * len(pending)
            pending_rows = pending.tolist()
            rejected: dict[int, bool] = {}  # by Status identity: rows share them
            for i, st in zip(at.tolist(), sts, strict=True):
                if st is SUCCESS:
                    continue
                key = id(st)
                rej = rejected.get(key)
                if rej is None:
                    if st.is_success():
                        continue
                    rej = rejected[key] = st.is_rejected()
                keep[i] = False
                if rej:
                    out[pending_rows[i]] = st
            if not all(keep):
                pending = pending[np.array(keep, dtype=np.bool_)]
        for r in pending.tolist():
            out[r] = SUCCESS
        return out

    def _error_outcome(
        self, st: Status, order: Any, snap: Snapshot, statuses: NodeToStatus
    ) -> FilterOutcome:
        out = FilterOutcome(np.empty(0, dtype=np.intp), len(order), statuses, set())
        out.statuses.absent = st
        return out

    def _diagnose(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        rows: Any,
        passed: BoolArray,
        out: FilterOutcome,
        explain: bool,
        batch: list[tuple[Any, BoolArray]],
        nominated: dict[int, list[PodInfo]],
        judged: dict[tuple[int, str], Status] | None = None,
    ) -> None:
        """Per-node status of the first rejecting plugin, exactly as a node-by-node run gives.

        Plugins are visited in order over the nodes still unexplained; a batch plugin is
        asked only about the nodes its mask rejected, all at once when it offers
        ``filter_statuses`` (a FitError over 5000 nodes then costs a few vector passes,
        not 5000 Python calls). ``judged``: statuses ``_few_all_pass`` already has.
        """
        infos = snap.node_infos
        batch_masks = {p.name: m for p, m in batch}
        skip = state.skip_filter_plugins
        known = out.statuses.statuses
        if explain:
            out.explain = {
                infos[int(r)].name: self._explain_node(state, pod, infos[int(r)]) for r in rows
            }
        todo: list[int] = []
        # only the rows the filters rejected (all of them when preemption follows)
        for r in np.asarray(rows)[~np.asarray(passed, dtype=np.bool_)].tolist():
            if r in nominated:
                continue
            ni = infos[r]
            if known and ni.name in known:
                continue
            if ni.error is not None:
                out.statuses.set(ni.name, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ni.error))
                continue
            todo.append(r)
        pending = np.array(todo, dtype=np.intp)
        for p in self.filter_plugins:
            if not len(pending):
                break
            if p.name in skip:
                continue
            m = batch_masks.get(p.name)
            asked = pending if m is None else pending[~m[pending]]
            if not len(asked):
                continue
            statuses = self._filter_statuses(p, state, pod, snap, asked, judged)
            rejected = np.zeros(len(asked), dtype=np.bool_)
            into = out.statuses.statuses
            ok = Code.SUCCESS
            for k, (r, st) in enumerate(zip(asked.tolist(), statuses, strict=True)):
                if st.code != ok:
                    into[infos[r].name] = st
                    rejected[k] = True
            if rejected.any():
                out.unschedulable_plugins.add(p.name)
                done = set(asked[rejected].tolist())
                pending = np.array([r for r in pending.tolist() if r not in done], dtype=np.intp)

    def _filter_statuses(
        self,
        p: Any,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        rows: Any,
        judged: dict[tuple[int, str], Status] | None = None,
    ) -> list[Status]:
        """One plugin's Filter status for each of ``rows`` (batch form when it has one;
        else the per-node form, or its status in ``judged`` when it was already asked)."""
        infos = snap.node_infos
        fs = getattr(p, "filter_statuses", None)
        if fs is not None:
            try:
                return [_status(st, p.name) for st in fs(state, pod, snap, rows)]
            except Exception as e:
                err = _from_exception(e, p.name, "Filter")
                return [err] * len(rows)
        out = []
        for r in rows.tolist():
            if judged is not None and (got := judged.get((r, p.name))) is not None:
                out.append(got)
                continue
            try:
                out.append(_status(p.filter(state, pod, infos[r]), p.name))
            except Exception as e:
                out.append(_from_exception(e, p.name, "Filter"))
        return out

    def _explain_node(self, state: CycleState, pod: PodInfo, ni: NodeInfo) -> dict[str, str]:
        v: dict[str, str] = {}
        if ni.error is not None:
            v["(node)"] = ni.error
        for p in self.filter_plugins:
            if p.name in state.skip_filter_plugins:
                v[p.name] = "Skip"
                continue
            try:
                st = _status(p.filter(state, pod, ni), p.name)
            except Exception as e:
                st = _from_exception(e, p.name, "Filter")
            v[p.name] = "Success" if st.is_success() else f"{st.code.label}: {st.message()}"
        return v

    # -- PostFilter ------------------------------------------------------------------------
    def run_post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """``RunPostFilterPlugins``: the first success (or UnschedulableAndUnresolvable)
        wins; otherwise every rejection's reasons, attributed to the first rejector, with
        the last result a plugin returned (e.g. one clearing the nomination)."""
        try:
            return run_sync(self._post_filter(state, pod, statuses))
        except RuntimeError as e:  # a ``resume`` awaited I/O in a synchronous cycle
            return None, Status(Code.ERROR, f"running PostFilter plugins: {e}")

    async def run_post_filter_async(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """``run_post_filter`` awaiting the deferred decisions (``PostFilterResult.resume``)
        of plugins that need I/O; the scheduling cycle uses it when extenders take part."""
        return await self._post_filter(state, pod, statuses)

    async def _post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        if not self._recording:
            return await self._post_filter_plugins(state, pod, statuses)
        t0 = _perf()
        out = await self._post_filter_plugins(state, pod, statuses)
        self._observed(_POST_FILTER, out[1].code.label, t0)
        return out

    async def _post_filter_plugins(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        reasons: list[str] = []
        result: PostFilterResult | None = None
        rejector = ""
        sampled = state.record_plugin_metrics
        for p in self.post_filter_plugins:
            try:
                if sampled:
                    r, raw = self._timed(
                        _POST_FILTER, p, _label_of_second, p.post_filter, state, pod, statuses
                    )
                else:
                    r, raw = p.post_filter(state, pod, statuses)
                if r is not None and r.resume is not None:
                    r, raw = await r.resume()
            except Exception as e:
                return None, _from_exception(e, p.name, "PostFilter")
            st = _status(raw, p.name)
            if st.is_success():
                return r, st
            if st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return r, st
            if not st.is_rejected():
                if st.code == Code.ERROR:
                    return None, st
                return None, Status(Code.ERROR, st.message(), plugin=p.name)
            if r is not None:
                result = r
            reasons.extend(st.all_reasons())
            rejector = rejector or p.name
        return result, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)

    # -- PreScore / Score ---------------------------------------------------------------
    def run_pre_score(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        *,
        record: bool = True,
        known: KnownResults | None = None,
        plugins: Sequence[Any] | None = None,
    ) -> Status:
        """``RunPreScorePlugins``; ``record`` and ``plugins``: see ``run_pre_filter``. With
        ``known`` (the equivalence cache's results, which hold what PreScore wrote) only the
        plugins it runs every cycle (``known.live``) run, on ``nodes`` as in a full cycle,
        and the pod's cycle went through PreScore and is observed so."""
        if known is not None:
            t0 = _perf()
            st = SUCCESS
            if known.live:
                live = [p for p in self.pre_score_plugins if p.name in known.live]
                st = self._pre_score(state, pod, nodes, live)
            if self._recording and record:
                self._observed(_PRE_SCORE, st.code.label, t0)
            return st
        if not (self._recording and record):
            return self._pre_score(state, pod, nodes, plugins)
        t0 = _perf()
        st = self._pre_score(state, pod, nodes, plugins)
        self._observed(_PRE_SCORE, st.code.label, t0)
        stopped_at = "" if st.is_success() else st.plugin
        self.recorder.evaluated(
            self.profile_name, _PRE_SCORE, 1, state.skip_score_plugins, stopped_at
        )
        return st

    def _pre_score(
        self,
        state: CycleState,
        pod: PodInfo,
        nodes: Sequence[NodeInfo],
        plugins: Sequence[Any] | None = None,
    ) -> Status:
        sampled = state.record_plugin_metrics
        for p in self.pre_score_plugins if plugins is None else plugins:
            try:
                if sampled:
                    raw = self._timed(_PRE_SCORE, p, _label, p.pre_score, state, pod, nodes)
                else:
                    raw = p.pre_score(state, pod, nodes)
            except Exception as e:
                return _from_exception(e, p.name, "PreScore")
            if raw is None:
                continue
            st = _status(raw, p.name)
            if st.is_skip():
                state.skip_score_plugins.add(p.name)
                continue
            if not st.is_success():
                return Status(
                    Code.ERROR, f'running PreScore plugin "{p.name}": {st.message()}', plugin=p.name
                )
        return SUCCESS

    def run_score(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        rows: np.ndarray[Any, np.dtype[np.intp]],
        *,
        explain: bool = False,
        known: KnownResults | None = None,
    ) -> tuple[ScoreOutcome | None, Status]:
        """Score, NormalizeScore and weights over ``rows``: the totals to pick a node from.

        For a cycle the equivalence cache answers, ``known`` supplies the raw scores (and
        the weighted sum of the plugins without NormalizeScore) instead of the plugins,
        except those it runs every cycle (``known.live``); the rest is the same code. Such
        a cycle is observed at Score like any other (it went through it), but no Score
        plugin is counted as evaluated."""
        if not self._recording:
            return self._score(state, pod, snap, rows, explain, known)
        t0 = _perf()
        out, st = self._score(state, pod, snap, rows, explain, known)
        self._observed(_SCORE, st.code.label, t0)
        if known is None:
            stopped_at = "" if out is not None else st.plugin
            self.recorder.evaluated(
                self.profile_name, _SCORE, len(rows), state.skip_score_plugins, stopped_at
            )
        return out, st

    def _score(
        self,
        state: CycleState,
        pod: PodInfo,
        snap: Snapshot,
        rows: np.ndarray[Any, np.dtype[np.intp]],
        explain: bool,
        known: KnownResults | None,
    ) -> tuple[ScoreOutcome | None, Status]:
        n = len(rows)
        sampled = state.record_plugin_metrics
        totals: IntArray | None = None if known is None else known.static[rows]
        per: dict[str, tuple[IntArray, IntArray, IntArray]] | None = {} if explain else None
        skip = state.skip_score_plugins
        weights = self.weights
        for p in self.score_plugins:
            if p.name in skip:
                continue
            try:
                if known is None:
                    raw = self.plugin_scores(p, state, pod, snap, rows)
                else:
                    column = known.columns.get(p.name)
                    if column is not None:
                        raw = column[rows]
                    elif p.name in known.live:
                        raw = self.plugin_scores(p, state, pod, snap, rows)
                    else:
                        continue  # in ``known.static``
                scores = raw.copy() if per is not None else raw
                norm = getattr(p, "normalize_score", None)
                if norm is not None:
                    nst = (
                        self._timed(_NORMALIZE, p, _label, norm, state, pod, scores)
                        if sampled
                        else norm(state, pod, scores)
                    )
                    st = SUCCESS if nst is None else _status(nst, p.name)
                    if not st.is_success():
                        return None, Status(
                            Code.ERROR,
                            f'running Normalize on Score plugins: plugin "{p.name}": '
                            f"{st.message()}",
                            plugin=p.name,
                        )
            except Exception as e:
                return None, _from_exception(e, p.name, "Score")
            if n:
                lo, hi = int(_min_reduce(scores)), int(_max_reduce(scores))
                if lo < MIN_NODE_SCORE or hi > MAX_NODE_SCORE:
                    bad = lo if lo < MIN_NODE_SCORE else hi
                    return None, Status(
                        Code.ERROR,
                        f'plugin "{p.name}" returns an invalid score {bad}, '
                        "it should in the range of "
                        f"[{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing",
                        plugin=p.name,
                    )
            w = weights.get(p.name, 1)
            if per is None and totals is not None and w == 1:
                totals += scores  # the same sum, without a weighted copy
                continue
            weighted = scores * w
            if totals is None:
                totals = weighted if per is None else weighted.copy()
            else:
                totals += weighted
            if per is not None:
                per[p.name] = (raw, scores, weighted)
        if totals is None:
            totals = np.zeros(n, dtype=np.int64)
        return ScoreOutcome(totals, per), SUCCESS

    def plugin_scores(
        self, p: Any, state: CycleState, pod: PodInfo, snap: Snapshot, rows: np.ndarray[Any, Any]
    ) -> IntArray:
        """``raw_scores`` of Score plugin ``p``, timed in a sampled cycle (the equivalence
        cache's scoring for one included)."""
        if state.record_plugin_metrics:
            out: IntArray = self._timed(_SCORE, p, _success, raw_scores, p, state, pod, snap, rows)
            return out
        return raw_scores(p, state, pod, snap, rows)

    def plugin_filter_batch(
        self, p: Any, state: CycleState, pod: PodInfo, snap: Snapshot
    ) -> BoolArray:
        """Filter plugin ``p``'s verdicts of every row (its batch form), timed in a sampled
        cycle (the cycle cache's run of a ``PER_CYCLE`` plugin)."""
        fb = p.filter_batch
        if state.record_plugin_metrics:
            out: BoolArray = self._timed(_FILTER, p, _any_passed, fb, state, pod, snap)
            return out
        mask: BoolArray = fb(state, pod, snap)
        return mask

    def plugin_score(self, p: Any, state: CycleState, pod: PodInfo, node: NodeInfo) -> int:
        """Score plugin ``p``'s per-node score, timed in a sampled cycle."""
        if state.record_plugin_metrics:
            return int(self._timed(_SCORE, p, _success, p.score, state, pod, node))
        return int(p.score(state, pod, node))

    # -- signatures (SignPlugin) -------------------------------------------------------------
    def sign_pod(self, pod: PodInfo, sampled: bool = False) -> tuple[Any, ...] | None:
        """The pod's signature for this profile (upstream's ``SignPod``): the ``sign_pod``
        fragments of every PreFilter/Filter/PreScore/Score plugin, or None when one of
        them cannot sign (no ``sign_pod``, NOT_SIGNABLE, or an exception).

        Observed at upstream's Sign point (Success: upstream's deferred observation reads a
        status its loop shadows); each plugin's call only when ``sampled`` (the cycle asking
        is): upstream times every call, into a recorder that drops what it cannot keep up
        with, and a dozen timings per pod would cost the hot path more than all the rest."""
        signed = self.sign_pod_per_cycle(pod, sampled)
        return None if signed is None or signed[1] else signed[0]

    def observe_sign(self) -> None:
        """A Sign call for a pod the equivalence cache knows it cannot help (its PreFilter
        narrows the nodes): observed as upstream, which signs every pod, observes it."""
        if self._recording:
            self._observed(_SIGN, "Success", _perf())

    def sign_pod_per_cycle(
        self, pod: PodInfo, sampled: bool = False
    ) -> tuple[tuple[Any, ...], frozenset[str]] | None:
        """``sign_pod`` where plugins may answer ``PER_CYCLE``: the signature (``PER_CYCLE``
        in their places) and the names of those plugins, to be run every cycle. The plugins
        signing after the first such answer are not timed: upstream's loop stops there."""
        if not self._recording:
            return self._sign_pod(pod, False)
        t0 = _perf()
        sig = self._sign_pod(pod, sampled)
        self._observed(_SIGN, "Success", t0)
        return sig

    def _sign_pod(self, pod: PodInfo, timed: bool) -> tuple[tuple[Any, ...], frozenset[str]] | None:
        signers = self._signers
        if signers is None:
            plugins: list[Any] = []
            for p in (
                *self.pre_filter_plugins,
                *self.filter_plugins,
                *self.pre_score_plugins,
                *self.score_plugins,
            ):
                if p not in plugins:
                    plugins.append(p)
            signers = self._signers = [(p, getattr(p, "sign_pod", None)) for p in plugins]
        out = []
        live: list[str] = []
        for p, fn in signers:
            if fn is None:
                return None
            try:
                fragment = self._timed(_SIGN, p, _signed, fn, pod) if timed else fn(pod)
            except Exception:
                return None
            if fragment is NOT_SIGNABLE:
                return None
            if fragment is PER_CYCLE:
                live.append(p.name)
                timed = False
            out.append(fragment)
        return tuple(out), frozenset(live) if live else _NO_LIVE

    # -- Reserve / Permit -------------------------------------------------------------------
    def run_reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if not self._recording:
            return self._reserve(state, pod, node_name)
        t0 = _perf()
        st = self._reserve(state, pod, node_name)
        self._observed(_RESERVE, st.code.label, t0)
        return st

    def _reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        sampled = state.record_plugin_metrics
        for p in self.reserve_plugins:
            try:
                raw = (
                    self._timed(_RESERVE, p, _label, p.reserve, state, pod, node_name)
                    if sampled
                    else p.reserve(state, pod, node_name)
                )
                st = _status(raw, p.name)
            except Exception as e:
                return _from_exception(e, p.name, "Reserve")
            if not st.is_success():
                if st.is_rejected():
                    return st
                return Status(
                    Code.ERROR, f'running Reserve plugin "{p.name}": {st.message()}', plugin=p.name
                )
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        # Reverse order, as upstream; a raising Unreserve must not skip the others.
        t0 = _perf() if self._recording else 0.0
        sampled = state.record_plugin_metrics
        for p in self.reserve_plugins[::-1]:  # mypyc cannot iterate reversed() of list[Any]
            try:
                if sampled:
                    self._timed(_UNRESERVE, p, _success, p.unreserve, state, pod, node_name)
                else:
                    p.unreserve(state, pod, node_name)
            except Exception:
                continue
        if self._recording:
            self._observed(_UNRESERVE, "Success", t0)

    def run_permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if not self._recording:
            return self._permit(state, pod, node_name)
        t0 = _perf()
        st = self._permit(state, pod, node_name)
        self._observed(_PERMIT, st.code.label, t0)
        return st

    def _permit(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        timeouts: dict[str, float] = {}
        sampled = state.record_plugin_metrics
        for p in self.permit_plugins:
            try:
                if sampled:
                    raw, timeout = self._timed(
                        _PERMIT, p, _label_of_first, p.permit, state, pod, node_name
                    )
                else:
                    raw, timeout = p.permit(state, pod, node_name)
            except Exception as e:
                return _from_exception(e, p.name, "Permit")
            st = _status(raw, p.name)
            if st.is_success():
                continue
            if st.is_rejected():
                return st
            if st.is_wait():
                timeouts[p.name] = float(timeout)
                continue
            return Status(
                Code.ERROR, f'running Permit plugin "{p.name}": {st.message()}', plugin=p.name
            )
        if timeouts:
            self.handle.waiting_pods.add(
                WaitingPod(pod, node_name, timeouts, self.handle.clock.now())
            )
            return Status(
                Code.WAIT,
                f'one or more plugins asked to wait and no plugin rejected pod "{pod.name}"',
            )
        return SUCCESS

    async def wait_on_permit(self, pod: PodInfo) -> Status:
        """``WaitOnPermit``; a pod that was told to wait has its wait observed
        (``permit_wait_duration_seconds``), one that was not is not."""
        wp = self.handle.waiting_pods.get(pod.uid or pod.key)
        if wp is None:
            return SUCCESS
        if not self._recording:
            return await self._wait_on_permit(pod, wp)
        t0 = _perf()
        st = await self._wait_on_permit(pod, wp)
        self.recorder.permit_waited(st.code.label, _perf() - t0)
        return st

    async def _wait_on_permit(self, pod: PodInfo, wp: WaitingPod) -> Status:
        clock = self.handle.clock
        start = wp.created if wp.created is not None else clock.now()
        try:
            async with anyio.create_task_group() as tg:

                async def timer(plugin: str, seconds: float) -> None:
                    await clock.sleep(start + seconds - clock.now())
                    wp.reject(
                        plugin,
                        f"rejected due to timeout after waiting {format_duration(seconds)} "
                        f"at plugin {plugin}",
                    )

                for plugin, seconds in sorted(wp.pending.items(), key=lambda kv: kv[1]):
                    tg.start_soon(timer, plugin, seconds)
                st = await wp.wait()
                tg.cancel_scope.cancel()
        finally:
            self.handle.waiting_pods.remove(pod.uid or pod.key)
        return st

    # -- PreBind / Bind / PostBind --------------------------------------------------------
    async def run_pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if not self._recording:
            return await self._pre_bind(state, pod, node_name)
        t0 = _perf()
        st = await self._pre_bind(state, pod, node_name)
        self._observed(_PRE_BIND, st.code.label, t0)
        return st

    async def _pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        sampled = state.record_plugin_metrics
        for p in self.pre_bind_plugins:
            try:
                if sampled:
                    raw = await self._timed_async(
                        _PRE_BIND, p, _label, p.pre_bind, state, pod, node_name
                    )
                else:
                    raw = await p.pre_bind(state, pod, node_name)
                st = _status(raw, p.name)
            except Exception as e:
                return _from_exception(e, p.name, "PreBind")
            if not st.is_success():
                if st.is_rejected():
                    return st
                return Status(
                    Code.ERROR, f'running PreBind plugin "{p.name}": {st.message()}', plugin=p.name
                )
        return SUCCESS

    def run_pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        """``RunPreBindPreFlights``: the first PreBind plugin's answer that is not Skip
        (Success: it will work on the pod), else Skip."""
        if not self._recording:
            return self._pre_bind_pre_flights(state, pod, node_name)
        t0 = _perf()
        st = self._pre_bind_pre_flights(state, pod, node_name)
        self._observed(_PRE_BIND_PRE_FLIGHT, st.code.label, t0)
        return st

    def _pre_bind_pre_flights(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        sampled = state.record_plugin_metrics
        for p in self.pre_bind_plugins:
            pre_flight = getattr(p, "pre_bind_pre_flight", None)
            if pre_flight is None:  # a duck-typed plugin without it: nothing announced
                continue
            try:
                raw = (
                    self._timed(_PRE_BIND_PRE_FLIGHT, p, _label, pre_flight, state, pod, node_name)
                    if sampled
                    else pre_flight(state, pod, node_name)
                )
                st = _status(raw, p.name)
            except Exception as e:
                return _from_exception(e, p.name, "PreBindPreFlight")
            if st.is_skip():
                continue
            if st.is_success() or st.is_rejected():
                return st
            return Status(
                Code.ERROR,
                f'running PreBindPreFlight plugin "{p.name}": {st.message()}',
                plugin=p.name,
            )
        return Status(Code.SKIP)

    async def run_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if not self._recording:
            return await self._bind(state, pod, node_name)
        t0 = _perf()
        st = await self._bind(state, pod, node_name)
        self._observed(_BIND, st.code.label, t0)
        return st

    async def _bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        sampled = state.record_plugin_metrics
        for p in self.bind_plugins:
            try:
                if sampled:
                    raw = await self._timed_async(_BIND, p, _label, p.bind, state, pod, node_name)
                else:
                    raw = await p.bind(state, pod, node_name)
                st = _status(raw, p.name)
            except Exception as e:
                return _from_exception(e, p.name, "Bind")
            if st.is_skip():
                continue
            if not st.is_success():
                if st.is_rejected():
                    return st
                err = Status(
                    Code.ERROR, f'running Bind plugin "{p.name}": {st.message()}', plugin=p.name
                )
                err.cause = st.cause
                return err
            return st
        return Status(Code.SKIP)

    async def run_post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """``RunPostBindPlugins``, observed (Success) even without PostBind plugins, as
        upstream's binding cycle calls it for every bound pod."""
        t0 = _perf() if self._recording else 0.0
        sampled = state.record_plugin_metrics
        for p in self.post_bind_plugins:
            try:
                if sampled:
                    await self._timed_async(
                        _POST_BIND, p, _success, p.post_bind, state, pod, node_name
                    )
                else:
                    await p.post_bind(state, pod, node_name)
            except Exception:
                continue
        if self._recording:
            self._observed(_POST_BIND, "Success", t0)

    # -- pod groups (GenericWorkload) ---------------------------------------------------
    def run_placement_generate(
        self, state: CycleState, group: PodGroupInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Placement], Status]:
        """``RunPlacementGeneratePlugins``: the placements of the profile's one
        PlacementGenerate plugin (a profile may have at most one) within ``nodes``, or
        without one ``nodes`` as the only placement. None generated: Unschedulable."""
        t0 = _perf() if self._recording else 0.0
        placements, st = self._placement_generate(state, group, nodes)
        if self._recording:
            self._observed(_PLACEMENT_GENERATE, st.code.label, t0)
        return placements, st

    def _placement_generate(
        self, state: CycleState, group: PodGroupInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[Placement], Status]:
        parent = Placement("", tuple(nodes))
        if not self.placement_generate_plugins:
            return [parent], SUCCESS
        p = self.placement_generate_plugins[0]
        try:
            res, raw = self._sampled(
                state, _PLACEMENT_GENERATE, p, _label_of_second, p.generate_placements,
                state, group, parent,
            )  # fmt: skip
        except Exception as e:
            return [], _from_exception(e, p.name, "PlacementGenerate")
        st = _status(raw, p.name)
        if not st.is_success():
            return [], st
        if res is None or not res.placements:
            return [], Status(Code.UNSCHEDULABLE, "no feasible placements found", plugin=p.name)
        return list(res.placements), SUCCESS

    def run_placement_feasible(
        self, state: CycleState, group: PodGroupInfo, progress: PlacementProgress
    ) -> Status:
        """``RunPlacementFeasiblePlugins``: Success when every plugin says so; the first
        Unschedulable stops (and is the answer); a Wait is remembered (the last one wins)
        while the others still run; any other status stops as an Error."""
        t0 = _perf() if self._recording else 0.0
        st = self._placement_feasible(state, group, progress)
        if self._recording:
            self._observed(_PLACEMENT_FEASIBLE, st.code.label, t0)
        return st

    def _placement_feasible(
        self, state: CycleState, group: PodGroupInfo, progress: PlacementProgress
    ) -> Status:
        out = SUCCESS
        for p in self.placement_feasible_plugins:
            try:
                raw = self._sampled(
                    state, _PLACEMENT_FEASIBLE, p, _label, p.placement_feasible,
                    state, group, progress,
                )  # fmt: skip
            except Exception as e:
                return _from_exception(e, p.name, "PlacementFeasible")
            st = _status(raw, p.name)
            if st.is_success():
                continue
            if st.code == Code.WAIT:
                out = st
            elif st.code == Code.UNSCHEDULABLE:
                return st
            elif st.code == Code.ERROR:
                return Status(
                    Code.ERROR,
                    f"running PlacementFeasible plugin: {as_error_text(st)}",
                    plugin=p.name,
                )
            else:
                return Status(
                    Code.ERROR,
                    f"unexpected status from PlacementFeasible plugin: {st.code.label}",
                    plugin=p.name,
                )
        return out

    def run_placement_score(
        self,
        state: CycleState,
        group: PodGroupInfo,
        assignments: Sequence[PodGroupAssignments],
        placement_states: Sequence[CycleState],
    ) -> tuple[list[PlacementScore], Status]:
        """``RunPlacementScorePlugins``: each feasible placement's total, the sum over the
        PlacementScore plugins of its score (0..100 after the plugin's normalization, run
        over every placement's) times the plugin's weight. ``placement_states[i]`` is the
        state ``assignments[i]`` was found with, which its ScorePlacement calls get."""
        t0 = _perf() if self._recording else 0.0
        out, st = self._placement_score(state, group, assignments, placement_states)
        if self._recording:
            self._observed(_PLACEMENT_SCORE, st.code.label, t0)
        return out, st

    def _placement_score(
        self,
        state: CycleState,
        group: PodGroupInfo,
        assignments: Sequence[PodGroupAssignments],
        placement_states: Sequence[CycleState],
    ) -> tuple[list[PlacementScore], Status]:
        if len(assignments) != len(placement_states):
            return [], Status.as_error(
                "expected one PlacementCycleState per PodGroupAssignments, got "
                f"{len(placement_states)} placement states for {len(assignments)} assignments"
            )
        plugins = self.placement_score_plugins
        per: dict[str, list[PlacementScore]] = {
            p.name: [PlacementScore(a.placement, 0) for a in assignments] for p in plugins
        }
        for i, a in enumerate(assignments):
            pstate = placement_states[i]
            for p in plugins:
                try:
                    score = self._sampled(
                        pstate, _PLACEMENT_SCORE, p, _success, p.score_placement, pstate, group, a
                    )
                except Exception as e:
                    msg = _from_exception(e, p.name, "PlacementScore").message()
                    return [], Status.as_error(
                        f'running PlacementScore plugins: plugin "{p.name}" failed with: {msg}'
                    )
                per[p.name][i].score = int(score)
        for p in plugins:
            norm = getattr(p, "normalize_placement_score", None)
            if norm is None:
                continue
            try:
                raw = self._sampled(
                    state, _PLACEMENT_NORMALIZE, p, _label, norm, state, group, per[p.name]
                )
                st = _status(raw, p.name)
            except Exception as e:
                st = _from_exception(e, p.name, "PlacementScore")
            if not st.is_success():
                return [], Status.as_error(
                    "running NormalizePlacementScore on PlacementScore plugins: plugin "
                    f'"{p.name}" failed with: {as_error_text(st)}'
                )
        totals: list[PlacementScore] = []
        for i, a in enumerate(assignments):
            total = 0
            for p in plugins:
                score = per[p.name][i].score
                if score > MAX_NODE_SCORE or score < MIN_NODE_SCORE:
                    return [], Status.as_error(
                        "applying score defaultWeights on PlacementScore plugins: plugin "
                        f'"{p.name}" returns an invalid score {score}, it should in the range '
                        f"of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] after normalizing"
                    )
                total += score * self.placement_weights.get(p.name, 1)
            totals.append(PlacementScore(a.placement, total))
        return totals, SUCCESS

    def run_pod_group_post_filter(
        self, state: CycleState, group: PodGroupInfo, schedule: PodGroupSchedulingFunc
    ) -> tuple[PodGroupPostFilterResult | None, Status]:
        """``RunPodGroupPostFilterPlugins``: the first success (or UnschedulableAndUnresolvable)
        wins; otherwise every rejection's reasons, attributed to the first rejector; any
        other status is an Error. ``schedule`` retries the group's cycle for a plugin."""
        if not self.handle.features.enabled_if_known("GenericWorkload"):
            return None, Status(
                Code.UNSCHEDULABLE,
                "generic workload feature is disabled, cannot perform PodGroupPostFilter",
            )
        t0 = _perf() if self._recording else 0.0
        out = self._pod_group_post_filter(state, group, schedule)
        if self._recording:
            self._observed(_POD_GROUP_POST_FILTER, out[1].code.label, t0)
        return out

    def _pod_group_post_filter(
        self, state: CycleState, group: PodGroupInfo, schedule: PodGroupSchedulingFunc
    ) -> tuple[PodGroupPostFilterResult | None, Status]:
        reasons: list[str] = []
        rejector = ""
        for p in self.pod_group_post_filter_plugins:
            try:
                res, raw = self._sampled(
                    state, _POD_GROUP_POST_FILTER, p, _label_of_second, p.pod_group_post_filter,
                    state, group, schedule,
                )  # fmt: skip
            except Exception as e:
                return None, _from_exception(e, p.name, "PodGroupPostFilter")
            st = _status(raw, p.name)
            if st.is_success() or st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return res, st
            if st.code == Code.UNSCHEDULABLE:
                reasons.extend(st.all_reasons())
                rejector = rejector or p.name
                continue
            return None, Status(
                Code.ERROR,
                f'error in "{p.name}" PodGroupPostFilter plugins: {st.message()}',
                plugin=p.name,
            )
        return None, Status(Code.UNSCHEDULABLE, *reasons, plugin=rejector)


def as_error_text(st: Status) -> str:
    """The text of Go's ``Status.AsError()``: the error a status wraps, else its message."""
    if st.error is not None:
        text = str(st.error)
        return text if text else type(st.error).__name__
    return st.message()


def raw_scores(
    p: Any, state: CycleState, pod: PodInfo, snap: Snapshot, rows: np.ndarray[Any, Any]
) -> IntArray:
    """A Score plugin's scores of ``rows`` before normalizing: its batch form when it has
    one, else its per-node form row by row. Raises what the plugin raises."""
    sb = getattr(p, "score_batch", None)
    if sb is not None:
        return np.asarray(sb(state, pod, snap, rows), dtype=np.int64)
    sc = p.score
    infos = snap.node_infos
    return np.fromiter(
        (sc(state, pod, infos[int(r)]) for r in rows), dtype=np.int64, count=len(rows)
    )
