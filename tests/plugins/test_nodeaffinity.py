"""NodeAffinity: upstream's table tests (node_affinity_test.go), batch/per-node agreement,
args validation, malformed pods, and DefaultNormalizeScore (helper/normalize_score_test.go)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ksched.api.objects import InvalidObjectError, Node, Pod, decode
from ksched.api.selectors import SelectorError
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import QueueingHint
from ksched.framework.registry import PluginArgsError
from ksched.framework.snapshot import Snapshot
from ksched.framework.status import Code
from ksched.framework.types import PodInfo
from ksched.plugins.helper import default_normalize_score
from ksched.plugins.nodeaffinity import (
    ERR_REASON_CONFLICT,
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NodeAffinity,
    NodeAffinityArgs,
)
from tests.factories import make_node_info

# ---- builders -------------------------------------------------------------------------------


def mk_node(name: str = "", labels: dict[str, str] | None = None, **spec: Any) -> Node:
    return decode(
        {"kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": spec}, Node
    )


def mk_pod(spec: dict[str, Any] | None = None, name: str = "p", uid: str = "") -> PodInfo:
    m = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": spec or {},
    }
    return PodInfo(decode(m, Pod), m)


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


def term(
    exprs: list[dict[str, Any]] | None = None, fields: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if exprs is not None:
        t["matchExpressions"] = exprs
    if fields is not None:
        t["matchFields"] = fields
    return t


def name_in(*names: str) -> dict[str, Any]:
    return expr("metadata.name", "In", *names)


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def affinity(**node_affinity: Any) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": node_affinity}}


def req_pod(*terms: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {**affinity(**required(*terms)), **spec}


def plugin(added: dict[str, Any] | None = None) -> NodeAffinity:
    return NodeAffinity({"addedAffinity": added} if added is not None else None, None)


# ---- TestNodeAffinity (Filter / PreFilter) ---------------------------------------------------

ZONE_FOO_NODE2 = required(term(fields=[name_in("node2")]))

FILTER_CASES: list[dict[str, Any]] = [
    dict(name="missing labels", pod={"nodeSelector": {"foo": "bar"}}, want=ERR_REASON_POD),
    dict(name="same labels", pod={"nodeSelector": {"foo": "bar"}}, labels={"foo": "bar"}),
    dict(
        name="node labels are superset",
        pod={"nodeSelector": {"foo": "bar"}},
        labels={"foo": "bar", "baz": "blah"},
    ),
    dict(
        name="node labels are subset",
        pod={"nodeSelector": {"foo": "bar", "baz": "blah"}},
        labels={"foo": "bar"},
        want=ERR_REASON_POD,
    ),
    dict(
        name="In operator matches",
        pod=req_pod(term([expr("foo", "In", "bar", "value2")])),
        labels={"foo": "bar"},
    ),
    dict(
        name="Gt operator matches",
        pod=req_pod(term([expr("kernel-version", "Gt", "0204")])),
        labels={"kernel-version": "0206"},
    ),
    dict(
        name="NotIn operator matches",
        pod=req_pod(term([expr("mem-type", "NotIn", "DDR", "DDR2")])),
        labels={"mem-type": "DDR3"},
    ),
    dict(
        name="Exists operator matches",
        pod=req_pod(term([expr("GPU", "Exists")])),
        labels={"GPU": "NVIDIA-GRID-K1"},
    ),
    dict(
        name="affinity that doesn't match node's labels",
        pod=req_pod(term([expr("foo", "In", "value1", "value2")])),
        labels={"foo": "bar"},
        want=ERR_REASON_POD,
    ),
    dict(
        name="empty MatchExpressions matches no objects",
        pod=req_pod(term([])),
        labels={"foo": "bar"},
        want=ERR_REASON_POD,
    ),
    dict(name="no Affinity", pod={}, labels={"foo": "bar"}, pre_status=Code.SKIP),
    dict(
        name="Affinity but nil NodeSelector",
        pod=affinity(),
        labels={"foo": "bar"},
        pre_status=Code.SKIP,
    ),
    dict(
        name="multiple matchExpressions ANDed that matches",
        pod=req_pod(term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")])),
        labels={"GPU": "NVIDIA-GRID-K1"},
    ),
    dict(
        name="multiple matchExpressions ANDed that doesn't match",
        pod=req_pod(term([expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")])),
        labels={"GPU": "NVIDIA-GRID-K1"},
        want=ERR_REASON_POD,
    ),
    dict(
        name="multiple NodeSelectorTerms ORed",
        pod=req_pod(
            term([expr("foo", "In", "bar", "value2")]),
            term([expr("diffkey", "In", "wrong", "value2")]),
        ),
        labels={"foo": "bar"},
    ),
    dict(
        name="Affinity and nodeSelector both satisfied",
        pod=req_pod(term([expr("foo", "Exists")]), nodeSelector={"foo": "bar"}),
        labels={"foo": "bar"},
    ),
    dict(
        name="Affinity matches but nodeSelector not satisfied",
        pod=req_pod(term([expr("foo", "Exists")]), nodeSelector={"foo": "bar"}),
        labels={"foo": "barrrrrr"},
        want=ERR_REASON_POD,
    ),
    dict(
        name="invalid value in Affinity term won't be scheduled",
        pod=req_pod(term([expr("foo", "NotIn", "invalid value: ___@#$%^")])),
        labels={"foo": "bar"},
        want=ERR_REASON_POD,
    ),
    dict(
        name="matchFields In matches",
        pod=req_pod(term(fields=[name_in("node1")])),
        node="node1",
        pre_result={"node1"},
    ),
    dict(
        name="matchFields In does not match",
        pod=req_pod(term(fields=[name_in("node1")])),
        node="node2",
        want=ERR_REASON_POD,
        pre_result={"node1"},
    ),
    dict(
        name="two terms: matchFields does not match, matchExpressions matches",
        pod=req_pod(
            term(fields=[name_in("node1"), name_in("node2")]), term([expr("foo", "In", "bar")])
        ),
        node="node2",
        labels={"foo": "bar"},
    ),
    dict(
        name="one term: matchFields does not match, matchExpressions matches",
        pod=req_pod(term([expr("foo", "In", "bar")], fields=[name_in("node1")])),
        node="node2",
        labels={"foo": "bar"},
        pre_result={"node1"},
        want=ERR_REASON_POD,
    ),
    dict(
        name="one term: both matchFields and matchExpressions match",
        pod=req_pod(term([expr("foo", "In", "bar")], fields=[name_in("node1")])),
        node="node1",
        labels={"foo": "bar"},
        pre_result={"node1"},
    ),
    dict(
        name="two terms: both matchFields and matchExpressions do not match",
        pod=req_pod(term(fields=[name_in("node1")]), term([expr("foo", "In", "not-match-to-bar")])),
        node="node2",
        labels={"foo": "bar"},
        want=ERR_REASON_POD,
    ),
    dict(
        name="two terms of node.Name affinity",
        pod=req_pod(term(fields=[name_in("node1")]), term(fields=[name_in("node2")])),
        node="node2",
        pre_result={"node1", "node2"},
    ),
    dict(
        name="two conflicting match field requirements",
        pod=req_pod(term(fields=[name_in("node1"), name_in("node2")])),
        node="node2",
        labels={"foo": "bar"},
        pre_status=Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        pre_reason=ERR_REASON_CONFLICT,
        want=ERR_REASON_POD,
    ),
    dict(
        name="matches added affinity and Pod's node affinity",
        pod=req_pod(term([expr("zone", "In", "foo")])),
        node="node2",
        labels={"zone": "foo"},
        added=ZONE_FOO_NODE2,
    ),
    dict(
        name="matches added affinity but not Pod's node affinity",
        pod=req_pod(term([expr("zone", "In", "bar")])),
        node="node2",
        labels={"zone": "foo"},
        added=ZONE_FOO_NODE2,
        want=ERR_REASON_POD,
    ),
    dict(
        name="doesn't match added affinity",
        pod={},
        node="node2",
        labels={"zone": "foo"},
        added=required(term([expr("zone", "In", "bar")])),
        want=ERR_REASON_ENFORCED,
    ),
    dict(
        name="matches node selector even if PreFilter is not called",
        pod={"nodeSelector": {"foo": "bar"}},
        labels={"foo": "bar", "baz": "blah"},
        run_pre_filter=False,
    ),
    dict(
        name="matches node affinity even if PreFilter is not called",
        pod=req_pod(term([expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")])),
        labels={"GPU": "NVIDIA-GRID-K1"},
        run_pre_filter=False,
    ),
]


@pytest.mark.parametrize("case", FILTER_CASES, ids=[c["name"] for c in FILTER_CASES])
def test_node_affinity_filter(case: dict[str, Any]) -> None:
    p = plugin(case.get("added"))
    pod = mk_pod(case["pod"])
    node = mk_node(case.get("node", ""), case.get("labels"))
    ni = make_node_info(node)
    state = CycleState()
    if case.get("run_pre_filter", True):
        result, status = p.pre_filter(state, pod, Snapshot([ni]))
        if "pre_status" in case:
            assert status is not None and status.code == case["pre_status"]
            assert status.reasons == ((case["pre_reason"],) if "pre_reason" in case else ())
        else:
            assert status is None
        want_result = case.get("pre_result")
        assert (result.node_names if result is not None else None) == want_result
    got = p.filter(state, pod, ni)
    want = case.get("want")
    if want is None:
        assert got is None
    else:
        assert got is not None
        assert got.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert got.reasons == (want,)
    mask = p.filter_batch(state, pod, Snapshot([ni]))
    assert mask.tolist() == [want is None]


# ---- TestNodeAffinityPriority (PreScore / Score / NormalizeScore) ---------------------------

LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}


def pref(weight: int, *exprs: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "preference": {"matchExpressions": list(exprs)}}


AFFINITY1 = {"preferredDuringSchedulingIgnoredDuringExecution": [pref(2, expr("foo", "In", "bar"))]}
AFFINITY2 = {
    "preferredDuringSchedulingIgnoredDuringExecution": [
        pref(2, expr("foo", "In", "bar")),
        pref(4, expr("key", "In", "value")),
        pref(5, expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")),
    ]
}

SCORE_CASES: list[dict[str, Any]] = [
    dict(
        name="all nodes are same priority as NodeAffinity is nil",
        pod={},
        nodes=[("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        want={"node1": 0, "node2": 0, "node3": 0},
        pre_skip=True,
    ),
    dict(
        name="no node matches preferred scheduling requirements",
        pod={"affinity": {"nodeAffinity": AFFINITY1}},
        nodes=[("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)],
        want={"node1": 0, "node2": 0, "node3": 0},
    ),
    dict(
        name="only node1 matches the preferred scheduling requirements of pod",
        pod={"affinity": {"nodeAffinity": AFFINITY1}},
        nodes=[("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)],
        want={"node1": 100, "node2": 0, "node3": 0},
    ),
    dict(
        name="all nodes match the preferred scheduling requirements with different priorities",
        pod={"affinity": {"nodeAffinity": AFFINITY2}},
        nodes=[("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        want={"node1": 18, "node5": 100, "node2": 36},
    ),
    dict(
        name="added affinity",
        pod={},
        nodes=[("node1", LABEL1), ("node2", LABEL2)],
        want={"node1": 100, "node2": 0},
        added=AFFINITY1,
    ),
    dict(
        name="added affinity and pod has default affinity",
        pod={"affinity": {"nodeAffinity": AFFINITY1}},
        nodes=[("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
        want={"node1": 40, "node2": 60, "node3": 100},
        added={
            "preferredDuringSchedulingIgnoredDuringExecution": [pref(3, expr("key", "In", "value"))]
        },
    ),
    dict(
        name="calculate the priorities correctly even if PreScore is not called",
        pod={"affinity": {"nodeAffinity": AFFINITY2}},
        nodes=[("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)],
        want={"node1": 18, "node5": 100, "node2": 36},
        run_pre_score=False,
    ),
]


@pytest.mark.parametrize("case", SCORE_CASES, ids=[c["name"] for c in SCORE_CASES])
def test_node_affinity_score(case: dict[str, Any]) -> None:
    p = plugin(case.get("added"))
    pod = mk_pod(case["pod"])
    infos = [make_node_info(mk_node(n, labels)) for n, labels in case["nodes"]]
    snap = Snapshot(infos)
    state = CycleState()
    if case.get("run_pre_score", True):
        st_ = p.pre_score(state, pod, infos)
        if case.get("pre_skip"):
            assert st_ is not None and st_.code == Code.SKIP
            return  # the runtime then skips Score: every node gets 0, as the table says
        assert st_ is None
    per_node = np.array([p.score(state, pod, ni) for ni in infos], dtype=np.int64)
    batch = p.score_batch(state, pod, snap, snap.all_rows)
    assert per_node.tolist() == batch.tolist()
    for scores in (per_node, batch):
        assert p.normalize_score(state, pod, scores) is None
        assert dict(zip([ni.name for ni in infos], scores.tolist(), strict=True)) == case["want"]


# ---- Test_isSchedulableAfterNodeChange --------------------------------------------------------

POD_WITH_NODE_AFFINITY = req_pod(term([expr("foo", "In", "bar")]))
ADDED_FOO_BAR = required(term([expr("foo", "In", "bar")]))

HINT_CASES: list[dict[str, Any]] = [
    dict(name="skip-queue-on-add", new=mk_node(), want=QueueingHint.SKIP),
    dict(name="queue-on-add", new=mk_node(labels={"foo": "bar"}), want=QueueingHint.QUEUE),
    dict(
        name="skip-unrelated-changes",
        old=mk_node(),
        new=mk_node(allocatable=None),
        want=QueueingHint.SKIP,
    ),
    dict(
        name="skip-unrelated-changes-on-labels",
        old=mk_node(),
        new=mk_node(labels={"k": "v"}),
        want=QueueingHint.SKIP,
    ),
    dict(
        name="skip-labels-changes-on-suitable-node",
        old=mk_node(labels={"foo": "bar"}),
        new=mk_node(labels={"foo": "bar", "k": "v"}),
        want=QueueingHint.SKIP,
    ),
    dict(
        name="skip-labels-changes-on-node-from-suitable-to-unsuitable",
        old=mk_node(labels={"foo": "bar"}),
        new=mk_node(labels={"k": "v"}),
        want=QueueingHint.SKIP,
    ),
    dict(
        name="queue-on-labels-change-makes-pod-schedulable",
        old=mk_node(),
        new=mk_node(labels={"foo": "bar"}),
        want=QueueingHint.QUEUE,
    ),
    dict(
        name="skip-queue-on-add-scheduler-enforced-node-affinity",
        added=ADDED_FOO_BAR,
        new=mk_node(),
        want=QueueingHint.SKIP,
    ),
    dict(
        name="queue-on-add-scheduler-enforced-node-affinity",
        added=ADDED_FOO_BAR,
        new=mk_node(labels={"foo": "bar"}),
        want=QueueingHint.QUEUE,
    ),
]


@pytest.mark.parametrize("case", HINT_CASES, ids=[c["name"] for c in HINT_CASES])
def test_is_schedulable_after_node_change(case: dict[str, Any]) -> None:
    p = plugin(case.get("added"))
    got = p.is_schedulable_after_node_change(
        mk_pod(POD_WITH_NODE_AFFINITY), case.get("old"), case["new"]
    )
    assert got == case["want"]


@pytest.mark.parametrize(("old", "new"), [(None, "not-a-node"), ("not-a-node", mk_node())])
def test_hint_wrong_objects_error(old: Any, new: Any) -> None:
    # Upstream returns (Queue, err); the queue treats a raising hint as Queue.
    with pytest.raises(TypeError):
        plugin().is_schedulable_after_node_change(mk_pod(POD_WITH_NODE_AFFINITY), old, new)


def test_hint_queues_when_terms_do_not_parse() -> None:
    # LazyErrorNodeSelector.Match reports the parse error when no term matched.
    pod = mk_pod(req_pod(term([expr("foo", "In", "bad value!")])))
    assert plugin().is_schedulable_after_node_change(pod, None, mk_node()) == QueueingHint.QUEUE


def test_events_to_register() -> None:
    events = [(e.event.resource, e.event.action) for e in plugin().events_to_register()]
    assert events == [("Node", "Add"), ("Node", "UpdateNodeLabel")]


# ---- args (ValidateNodeAffinityArgs) -----------------------------------------------------------


def test_args_valid() -> None:
    args = NodeAffinityArgs.parse("NodeAffinity", {"addedAffinity": {**AFFINITY1, **ADDED_FOO_BAR}})
    assert args.added_affinity is not None
    assert NodeAffinityArgs.parse("NodeAffinity", {}).added_affinity is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"addedAffinity": required(term([expr("foo", "Foo")]))},
            "plugin NodeAffinity: args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            '.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Foo": supported '
            'values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
        ),
        (
            {
                "addedAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        pref(1, expr("foo", "In", "invalid value: ___@#$%^"))
                    ]
                }
            },
            "plugin NodeAffinity: args.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
            '.preference.matchExpressions[0].values[0]: Invalid value: "invalid value: ___@#$%^": '
            "a valid label must be an empty string",
        ),
        (
            {"addedAffinity": required(term(fields=[expr("metadata.name", "In", "a", "b")]))},
            "plugin NodeAffinity: args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchFields[0].values: Required value: must be only one value",
        ),
        (
            {
                "addedAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "x"}]
                }
            },
            "plugin NodeAffinity: args.addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
            ".weight: Expected `int`, got `str`",
        ),
        ({"addedAffinityy": {}}, "plugin NodeAffinity: args.addedAffinityy: unknown field"),
    ],
)
def test_args_invalid(data: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError) as exc:
        NodeAffinityArgs.parse("NodeAffinity", data)
    assert str(exc.value).startswith(message)


def test_added_affinity_without_terms_matches_nothing() -> None:
    # NewNodeSelector with no terms selects no node, as upstream.
    p = plugin({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}})
    ni = make_node_info(mk_node("n", {"a": "b"}))
    st_ = p.filter(CycleState(), mk_pod(), ni)
    assert st_ is not None and st_.reasons == (ERR_REASON_ENFORCED,)
    assert p.filter_batch(CycleState(), mk_pod(), Snapshot([ni])).tolist() == [False]


# ---- malformed pods --------------------------------------------------------------------------


def test_malformed_pod_unknown_operator_names_pod_and_field() -> None:
    pod = mk_pod(req_pod(term([expr("foo", "Foo", "x")])), name="x")
    with pytest.raises(SelectorError) as exc:
        plugin().pre_filter(CycleState(), pod, Snapshot())
    assert isinstance(exc.value, InvalidObjectError)
    assert str(exc.value) == (
        "Pod default/x: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        '.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Foo": '
        'supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"'
    )


def test_malformed_preferred_term() -> None:
    spec = affinity(
        preferredDuringSchedulingIgnoredDuringExecution=[pref(1, expr("foo", "Exists", "v"))]
    )
    with pytest.raises(
        SelectorError,
        match=r"^Pod default/x: spec\.affinity\.nodeAffinity\."
        r"preferredDuringSchedulingIgnoredDuringExecution\[0\]\.preference\."
        r"matchExpressions\[0\]\.values: Forbidden",
    ):
        plugin().pre_score(CycleState(), mk_pod(spec, name="x"), [])


def test_unparsable_preferred_term_is_an_error_and_zero_weight_is_ignored() -> None:
    bad = pref(1, expr("foo", "Gt", "abc"))
    st_ = plugin().pre_score(
        CycleState(), mk_pod(affinity(preferredDuringSchedulingIgnoredDuringExecution=[bad])), []
    )
    assert st_ is not None and st_.code == Code.ERROR
    assert "for 'Gt', 'Lt' operators, the value must be an integer" in st_.message()
    zero = {**bad, "weight": 0}
    st_ = plugin().pre_score(
        CycleState(), mk_pod(affinity(preferredDuringSchedulingIgnoredDuringExecution=[zero])), []
    )
    assert st_ is None


def test_gt_lt_parse_like_go() -> None:
    # strconv.ParseInt: no spaces, underscores or non-ASCII digits; int64 range.
    pod = mk_pod(req_pod(term([expr("v", "Gt", "5")])))
    p = plugin()
    values = {
        "6": True,
        "+6": True,
        "5": False,
        " 6": False,
        "6_0": False,
        "\u0667": False,
        "9223372036854775808": False,
        "-7": False,
        "0x10": False,
    }
    infos = [make_node_info(mk_node(f"n{i}", {"v": v})) for i, v in enumerate(values)]
    state = CycleState()
    p.pre_filter(state, pod, Snapshot(infos))
    per_node = [p.filter(state, pod, ni) is None for ni in infos]
    assert per_node == list(values.values())
    assert p.filter_batch(state, pod, Snapshot(infos)).tolist() == per_node


# ---- batch == per-node, on random clusters ------------------------------------------------------

KEYS = ["zone", "gpu", "v", "kubernetes.io/hostname"]
VALUES = ["a", "b", "1", "5", "-3", "007", "+4", " 2", ""]
NODE_NAMES = [f"n{i}" for i in range(8)]

label_maps = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=4)


@st.composite
def requirement(draw: st.DrawFn) -> dict[str, Any]:
    op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]))
    # Unparsable keys/values (a term matching nothing, as upstream) are drawn rarely.
    key = draw(st.sampled_from([*KEYS * 8, "bad key/x/y"]))
    if op in ("In", "NotIn"):
        choices = [*VALUES * 4, "bad value!"]
        values = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=3))
    elif op in ("Gt", "Lt"):
        values = [draw(st.sampled_from(["0", "3", "6", "x", "-1"]))]
    else:
        values = []
    return expr(key, op, *values)


@st.composite
def field_requirement(draw: st.DrawFn) -> dict[str, Any]:
    op = draw(st.sampled_from(["In", "NotIn"]))
    return expr("metadata.name", op, draw(st.sampled_from([*NODE_NAMES, "missing"])))


@st.composite
def selector_term(draw: st.DrawFn) -> dict[str, Any]:
    exprs = draw(st.lists(requirement(), max_size=2))
    fields = draw(st.lists(field_requirement(), max_size=1))
    return term(exprs, fields)


@st.composite
def node_affinity(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out.update(required(*draw(st.lists(selector_term(), max_size=3))))
    if draw(st.integers(0, 3)):
        prefs = draw(st.lists(st.tuples(st.integers(0, 100), selector_term()), max_size=3))
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": t} for w, t in prefs
        ]
    return out


@st.composite
def pod_spec(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["nodeSelector"] = draw(label_maps)
    if draw(st.integers(0, 3)):
        spec.update(affinity(**draw(node_affinity())))
    return spec


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(label_maps, min_size=3, max_size=len(NODE_NAMES)),
    specs=st.lists(pod_spec(), min_size=1, max_size=3),
    added=st.one_of(st.none(), st.none(), node_affinity()),
)
def test_batch_agrees_with_per_node(
    nodes: list[dict[str, str]], specs: list[dict[str, Any]], added: dict[str, Any] | None
) -> None:
    try:
        p = plugin(added)
    except PluginArgsError:
        return  # unparsable added affinity is refused at startup
    infos = [make_node_info(mk_node(NODE_NAMES[i], labels)) for i, labels in enumerate(nodes)]
    snap = Snapshot(infos)
    for spec in specs:
        pod = mk_pod(spec)
        state = CycleState()
        _, status = p.pre_filter(state, pod, snap)
        mask = p.filter_batch(state, pod, snap)
        per_node = [p.filter(state, pod, ni) is None for ni in infos]
        assert mask.tolist() == per_node
        if status is not None and status.code == Code.SKIP:
            assert all(per_node)
        st_ = p.pre_score(state, pod, infos)
        if st_ is not None:
            continue  # Skip (nothing to score) or Error (unparsable preferred term)
        rows = np.array([i for i, ok in enumerate(per_node) if ok] or [0], dtype=np.intp)
        batch = p.score_batch(state, pod, snap, rows)
        assert batch.tolist() == [p.score(state, pod, infos[int(r)]) for r in rows]


# ---- DefaultNormalizeScore (helper/normalize_score_test.go) -------------------------------------


@pytest.mark.parametrize(
    ("reverse", "scores", "expected"),
    [
        (False, [1, 2, 3, 4], [25, 50, 75, 100]),
        (True, [1, 2, 3, 4], [75, 50, 25, 0]),
        (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (False, [1, 1, 1, 1], [100, 100, 100, 100]),
        (False, [1000, 1, 1, 1], [100, 0, 0, 0]),
        (True, [0, 1, 1, 1], [100, 0, 0, 0]),
        (False, [0, 0], [0, 0]),
        (True, [0, 0], [100, 100]),
        (False, [], []),
    ],
)
def test_default_normalize_score(reverse: bool, scores: list[int], expected: list[int]) -> None:
    arr = np.array(scores, dtype=np.int64)
    assert default_normalize_score(100, reverse, arr) is None
    assert arr.tolist() == expected


def test_default_normalize_score_truncates_toward_zero() -> None:
    # Go's integer division truncates; only reachable with negative raw scores.
    arr = np.array([-1, 3], dtype=np.int64)
    default_normalize_score(100, False, arr)
    assert arr.tolist() == [-33, 100]
