"""Helpers shared by the in-tree plugins (``framework/plugins/helper`` and friends).

Besides upstream's ``DefaultNormalizeScore`` and taint filter, this holds the
vectorised evaluation of label requirements and node selector terms over the
snapshot's label columns, so any plugin that selects nodes by labels (NodeAffinity,
PodTopologySpread's node inclusion, ...) gets the same answer as the per-node
``matches`` methods of ``ksched.api.selectors`` at numpy speed.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from ..api.objects import ContainerPort, Pod, Taint
from ..api.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    GT,
    IN,
    NOT_IN,
    CompiledNodeSelector,
    CompiledTerm,
    LabelRequirement,
    Selector,
    parse_int64,
)
from ..features import FeatureGates, default_feature_gates
from ..framework.podgroup import PodGroupInfo, PodGroupState
from ..framework.snapshot import BoolArray, IntArray, Snapshot, all_true
from ..framework.status import Status
from ..framework.types import PodInfo

__all__ = [
    "RowArray",
    "all_true",
    "comparison_operators",
    "default_normalize_score",
    "do_not_schedule_taint",
    "gates_of",
    "get_host_ports",
    "node_selector_mask",
    "pod_group_state",
    "requests_fragment",
    "requirement_mask",
    "selector_mask",
    "spec_fragment",
    "term_mask",
]

RowArray = npt.NDArray[np.intp]

TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"


def spec_fragment(pod: PodInfo, key: str, *fields: Any) -> bytes:
    """``sign_pod`` fragment: the pod's ``fields`` as JSON bytes, computed once per pod.

    Equal bytes mean equal fields (a key order difference only costs a cache miss)."""
    got: bytes | None = pod.cache.get(key)
    if got is None:
        got = pod.cache[key] = msgspec.json.encode(fields)
    return got


def requests_fragment(pod: PodInfo) -> tuple[Any, ...]:
    """``sign_pod`` fragment of the resource plugins: every request figure they read."""
    r = pod.requests
    return (
        r.milli_cpu,
        r.memory,
        r.ephemeral_storage,
        r.allowed_pod_number,
        tuple(sorted(r.scalar.items())),
        pod.non_zero_cpu,
        pod.non_zero_mem,
        pod.score_cpu,
        pod.score_mem,
    )


_max_reduce = np.maximum.reduce  # ``ndarray.max`` without its Python-level wrapper


def default_normalize_score(max_priority: int, reverse: bool, scores: IntArray) -> Status | None:
    """``helper.DefaultNormalizeScore``: scale [0, max] to [0, max_priority] in place.

    Integer math as in Go (``max_priority * score / maxCount`` truncating toward
    zero); ``reverse`` subtracts from ``max_priority``; all-zero scores stay 0, or
    become ``max_priority`` when reversed.
    """
    if len(scores) == 0:
        return None
    max_count = max(int(_max_reduce(scores)), 0)
    if max_count == 0:
        if reverse:
            scores[:] = max_priority
        return None
    prod = scores * max_priority
    q = np.abs(prod) // max_count
    q = np.where(prod < 0, -q, q)
    if reverse:
        q = max_priority - q
    scores[:] = q
    return None


def gates_of(handle: Any) -> FeatureGates:
    """The feature gates a plugin runs under: its handle's, else (a plugin built without
    a framework, as in unit tests) the default version's defaults."""
    gates = getattr(handle, "features", None)
    return gates if isinstance(gates, FeatureGates) else default_feature_gates()


def pod_group_state(handle: Any, group: PodGroupInfo) -> PodGroupState:
    """The group's members as the cycle's snapshot knows them (upstream's
    ``SnapshotSharedLister().PodGroupStates().Get``: ``handle.snapshot.pod_group_state``);
    raise LookupError, with upstream's message, when the snapshot has no state for the
    group (or no pod-group states at all: the gate is off)."""
    lookup = getattr(getattr(handle, "snapshot", None), "pod_group_state", None)
    state: PodGroupState | None = lookup(group.namespace, group.name) if callable(lookup) else None
    if state is None:
        raise LookupError(f"pod group state not found for pod group {group.namespace}/{group.name}")
    return state


def comparison_operators(handle: Any) -> bool:
    """Whether tolerations' ``Lt``/``Gt`` compare (gate TaintTolerationComparisonOperators)."""
    return gates_of(handle).enabled("TaintTolerationComparisonOperators")


def do_not_schedule_taint(t: Taint) -> bool:
    """``helper.DoNotScheduleTaintsFilterFunc``: only NoSchedule and NoExecute taints filter."""
    return t.effect in (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE)


def get_host_ports(pod: Pod) -> list[ContainerPort]:
    """``util.GetHostPorts``: host ports of containers and of sidecars (restartPolicy Always)."""
    ports: list[ContainerPort] = []
    for c in pod.spec.init_containers:
        if c.restart_policy != "Always":
            continue
        ports.extend(p for p in c.ports if p.host_port > 0)
    for c in pod.spec.containers:
        for p in c.ports:
            if p.host_port > 0:
                ports.append(p)
    return ports


# ---- vectorised label selection ---------------------------------------------------------

# id(vocab) -> (vocab, parsed ints, parse ok); vocabularies only grow, so the parse of a
# label's values for Gt/Lt is extended, never redone.
_VOCAB_INTS: dict[int, tuple[dict[str, int], npt.NDArray[np.int64], BoolArray]] = {}


def _vocab_ints(vocab: dict[str, int]) -> tuple[npt.NDArray[np.int64], BoolArray]:
    entry = _VOCAB_INTS.get(id(vocab))
    if entry is None or entry[0] is not vocab:
        if len(_VOCAB_INTS) > 256:
            _VOCAB_INTS.clear()
        entry = (vocab, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.bool_))
    _, nums, ok = entry
    if len(nums) < len(vocab):
        # Ids are assigned in insertion order, so the new values are the dict's tail.
        new = list(vocab)[len(nums) :]
        parsed = [parse_int64(v) for v in new]
        nums = np.concatenate((nums, np.array([p or 0 for p in parsed], dtype=np.int64)))
        ok = np.concatenate((ok, np.array([p is not None for p in parsed], dtype=np.bool_)))
        entry = (vocab, nums, ok)
    _VOCAB_INTS[id(vocab)] = entry
    return nums, ok


def _label_ids(snap: Snapshot, key: str, rows: RowArray | None) -> tuple[Any, dict[str, int]]:
    ids, vocab = snap.label_column(key)
    return (ids if rows is None else ids[rows]), vocab


def requirement_mask(
    req: LabelRequirement, snap: Snapshot, rows: RowArray | None = None
) -> BoolArray:
    """``LabelRequirement.matches`` for every row (or ``rows``) of the snapshot."""
    ids, vocab = _label_ids(snap, req.key, rows)
    op = req.op
    if op == EXISTS:
        return np.asarray(ids >= 0)
    if op == DOES_NOT_EXIST:
        return np.asarray(ids < 0)
    # A lookup table over value ids; the extra last slot answers for "label absent" (-1).
    lut = np.zeros(len(vocab) + 1, dtype=np.bool_)
    if op in (IN, NOT_IN):
        for v in req.values:
            vid = vocab.get(v)
            if vid is not None:
                lut[vid] = True
        if op == NOT_IN:
            np.logical_not(lut, out=lut)
    else:
        nums, ok = _vocab_ints(vocab)
        hit = nums > req.number if op == GT else nums < req.number
        lut[: len(nums)] = hit & ok
    return np.asarray(lut[ids])


def _rows_len(snap: Snapshot, rows: RowArray | None) -> int:
    return snap.n if rows is None else len(rows)


def selector_mask(sel: Selector, snap: Snapshot, rows: RowArray | None = None) -> BoolArray:
    """``Selector.matches`` over node labels, vectorised (requirements ANDed)."""
    m = _rows_len(snap, rows)
    if sel.nothing:
        return np.zeros(m, dtype=np.bool_)
    out: BoolArray | None = None
    for r in sel.requirements:
        rm = requirement_mask(r, snap, rows)
        out = rm if out is None else (out & rm)
    return out if out is not None else np.ones(m, dtype=np.bool_)


def _field_mask(req: LabelRequirement, snap: Snapshot, rows: RowArray | None) -> BoolArray:
    """A metadata.name In/NotIn requirement; nodes without a name ignore field terms."""
    value = next(iter(req.values))
    if rows is None:
        out = np.zeros(snap.n, dtype=np.bool_) if req.op == IN else np.ones(snap.n, dtype=np.bool_)
        row = snap.index.get(value)
        if row is not None:
            out[row] = req.op == IN
        if "" in snap.index:
            out |= snap.names() == ""
        return out
    names = snap.names()[rows]
    hit = names == value if req.op == IN else names != value
    return np.asarray(hit | (names == ""))


def term_mask(term: CompiledTerm, snap: Snapshot, rows: RowArray | None = None) -> BoolArray:
    """``CompiledTerm.matches`` vectorised: an empty or unparsable term matches nothing."""
    m = _rows_len(snap, rows)
    if term.error or (not term.labels and not term.fields):
        return np.zeros(m, dtype=np.bool_)
    out: BoolArray | None = None
    for r in term.labels:
        rm = requirement_mask(r, snap, rows)
        out = rm if out is None else (out & rm)
    for r in term.fields:
        fm = _field_mask(r, snap, rows)
        out = fm if out is None else (out & fm)
    assert out is not None
    return out


def node_selector_mask(
    sel: CompiledNodeSelector, snap: Snapshot, rows: RowArray | None = None
) -> BoolArray:
    """``CompiledNodeSelector.matches`` vectorised (terms ORed; no terms matches nothing)."""
    out: BoolArray | None = None
    for t in sel.terms:
        tm = term_mask(t, snap, rows)
        out = tm if out is None else (out | tm)
    return out if out is not None else np.zeros(_rows_len(snap, rows), dtype=np.bool_)
