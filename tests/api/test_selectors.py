"""Label selectors, node selector terms, and taint/toleration matching.

Node selector cases are ported from component-helpers' nodeaffinity_test.go
(TestNodeSelectorMatch, TestPodMatchesNodeSelectorAndAffinityTerms); toleration cases
from k8s.io/api core/v1 toleration_test.go.
"""

from __future__ import annotations

from typing import Any

import pytest

from ksched.api.objects import (
    LabelSelector,
    NodeSelector,
    NodeSelectorTerm,
    Taint,
    Toleration,
    decode,
)
from ksched.api.selectors import (
    EVERYTHING,
    NOTHING,
    SelectorError,
    compile_label_selector,
    compile_node_selector,
    compile_node_selector_term,
    find_untolerated_taint,
    selector_from_set,
    tolerates_taint,
    tolerations_tolerate_taint,
)


def ls(raw: dict[str, Any]) -> LabelSelector:
    return decode(raw, LabelSelector)


def ns(*terms: dict[str, Any]) -> NodeSelector:
    return decode({"nodeSelectorTerms": list(terms)}, NodeSelector)


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def name_in(*names: str, op: str = "In") -> dict[str, Any]:
    return req("metadata.name", op, *names)


# ---- label selectors (metav1.LabelSelectorAsSelector) ------------------------------------


def test_nil_selects_nothing_and_empty_selects_everything() -> None:
    nothing = compile_label_selector(None)
    assert nothing == NOTHING
    assert not nothing.matches({}) and not nothing.matches({"a": "b"})
    everything = compile_label_selector(ls({}))
    assert everything.empty
    assert everything.matches({}) and everything.matches({"a": "b"})
    assert compile_label_selector(ls({"matchLabels": {}, "matchExpressions": []})) == EVERYTHING


@pytest.mark.parametrize(
    ("selector", "labels", "want"),
    [
        ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True),
        ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
        ({"matchLabels": {"app": "web"}}, {}, False),
        ({"matchLabels": {"app": "web", "tier": "fe"}}, {"app": "web"}, False),
        ({"matchLabels": {"app": ""}}, {"app": ""}, True),
        ({"matchLabels": {"app": ""}}, {}, False),
        ({"matchExpressions": [req("app", "In", "web", "api")]}, {"app": "api"}, True),
        ({"matchExpressions": [req("app", "In", "web", "api")]}, {"app": "db"}, False),
        ({"matchExpressions": [req("app", "In", "web")]}, {}, False),
        ({"matchExpressions": [req("app", "NotIn", "web")]}, {"app": "db"}, True),
        ({"matchExpressions": [req("app", "NotIn", "web")]}, {"app": "web"}, False),
        ({"matchExpressions": [req("app", "NotIn", "web")]}, {}, True),  # missing key matches
        ({"matchExpressions": [req("app", "Exists")]}, {"app": ""}, True),
        ({"matchExpressions": [req("app", "Exists")]}, {"other": "x"}, False),
        ({"matchExpressions": [req("app", "DoesNotExist")]}, {"other": "x"}, True),
        ({"matchExpressions": [req("app", "DoesNotExist")]}, {"app": "x"}, False),
        # matchLabels and matchExpressions are ANDed
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [req("tier", "Exists")]},
            {"app": "web"},
            False,
        ),
        (
            {"matchLabels": {"app": "web"}, "matchExpressions": [req("tier", "Exists")]},
            {"app": "web", "tier": "x"},
            True,
        ),
        ({"matchExpressions": [req("a", "Exists"), req("a", "NotIn", "1", "2")]}, {"a": "3"}, True),
        (
            {"matchExpressions": [req("a", "Exists"), req("a", "NotIn", "1", "2")]},
            {"a": "2"},
            False,
        ),
    ],
)
def test_label_selector_matching(
    selector: dict[str, Any], labels: dict[str, str], want: bool
) -> None:
    assert compile_label_selector(ls(selector)).matches(labels) is want


@pytest.mark.parametrize(
    ("expr", "field", "text"),
    [
        (req("a", "Gt", "1"), "matchExpressions[0].operator", "Unsupported value"),
        (req("a", "in", "x"), "matchExpressions[0].operator", "Unsupported value"),
        (req("a", "", "x"), "matchExpressions[0].operator", "Unsupported value"),
        (req("a", "In"), "matchExpressions[0].values", "Required value"),
        (req("a", "NotIn"), "matchExpressions[0].values", "Required value"),
        (req("a", "Exists", "x"), "matchExpressions[0].values", "Forbidden"),
        (req("a", "DoesNotExist", "x"), "matchExpressions[0].values", "Forbidden"),
    ],
)
def test_invalid_label_selector_raises_with_path(
    expr: dict[str, Any], field: str, text: str
) -> None:
    sel = ls({"matchExpressions": [req("ok", "Exists"), expr]})
    where = (
        "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector"
    )
    with pytest.raises(SelectorError) as ei:
        compile_label_selector(sel, where)
    msg = str(ei.value)
    assert msg.startswith(f"{where}.{field.replace('[0]', '[1]')}: "), msg
    assert text in msg


def test_selector_from_set() -> None:
    s = selector_from_set({"a": "1", "b": "2"})
    assert s.matches({"a": "1", "b": "2", "c": "3"})
    assert not s.matches({"a": "1"})
    assert not s.matches({"a": "1", "b": "3"})
    assert selector_from_set({}).matches({"anything": "x"})


# ---- node selectors (nodeaffinity.NodeSelector) ------------------------------------------


def match(sel: NodeSelector, labels: dict[str, str] | None = None, name: str = "") -> bool:
    return compile_node_selector(sel, "spec.affinity.nodeAffinity.required").matches(
        labels or {}, name
    )


NODE_SELECTOR_CASES = [
    # (name, terms, node labels, node name, want)
    (
        "node matches field selector, but not labels",
        [
            {
                "matchExpressions": [req("label_1", "In", "label_1_val")],
                "matchFields": [name_in("host_1")],
            }
        ],
        {},
        "host_1",
        False,
    ),
    (
        "node matches field selector and label selector",
        [
            {
                "matchExpressions": [req("label_1", "In", "label_1_val")],
                "matchFields": [name_in("host_1")],
            }
        ],
        {"label_1": "label_1_val"},
        "host_1",
        True,
    ),
    (
        "second term matches",
        [
            {"matchExpressions": [req("label_1", "In", "label_1_val")]},
            {"matchFields": [name_in("host_1")]},
        ],
        {},
        "host_1",
        True,
    ),
    (
        "In operator that matches",
        [{"matchExpressions": [req("foo", "In", "bar", "value2")]}],
        {"foo": "bar"},
        "n",
        True,
    ),
    (
        "Gt operator that matches (leading zeros)",
        [{"matchExpressions": [req("kernel-version", "Gt", "0204")]}],
        {"kernel-version": "0206"},
        "n",
        True,
    ),
    (
        "NotIn operator that matches",
        [{"matchExpressions": [req("mem-type", "NotIn", "DDR", "DDR2")]}],
        {"mem-type": "DDR3"},
        "n",
        True,
    ),
    (
        "Exists operator that matches",
        [{"matchExpressions": [req("GPU", "Exists")]}],
        {"GPU": "NVIDIA-GRID-K1"},
        "n",
        True,
    ),
    (
        "affinity that doesn't match the node's labels",
        [{"matchExpressions": [req("foo", "In", "value1", "value2")]}],
        {"foo": "bar"},
        "n",
        False,
    ),
    ("nil/empty []NodeSelectorTerm matches nothing", [], {"foo": "bar"}, "n", False),
    (
        "empty MatchExpressions matches nothing",
        [{"matchExpressions": []}],
        {"foo": "bar"},
        "n",
        False,
    ),
    ("empty term matches nothing", [{}], {"foo": "bar"}, "n", False),
    (
        "multiple matchExpressions ANDed that match",
        [{"matchExpressions": [req("GPU", "Exists"), req("GPU", "NotIn", "AMD", "INTER")]}],
        {"GPU": "NVIDIA-GRID-K1"},
        "n",
        True,
    ),
    (
        "multiple matchExpressions ANDed that don't match",
        [{"matchExpressions": [req("GPU", "Exists"), req("GPU", "In", "AMD", "INTER")]}],
        {"GPU": "NVIDIA-GRID-K1"},
        "n",
        False,
    ),
    (
        "multiple NodeSelectorTerms ORed",
        [
            {"matchExpressions": [req("foo", "In", "bar", "value2")]},
            {"matchExpressions": [req("diffkey", "In", "wrong", "value2")]},
        ],
        {"foo": "bar"},
        "n",
        True,
    ),
    (
        "invalid value in term won't match",
        [{"matchExpressions": [req("foo", "NotIn", "invalid value: ___@#$%^")]}],
        {"foo": "bar"},
        "n",
        False,
    ),
    ("matchFields In that matches", [{"matchFields": [name_in("node_1")]}], {}, "node_1", True),
    (
        "matchFields In that doesn't match",
        [{"matchFields": [name_in("node_1")]}],
        {},
        "node_2",
        False,
    ),
    (
        "two terms: matchFields doesn't match, matchExpressions matches",
        [{"matchFields": [name_in("node_1")]}, {"matchExpressions": [req("foo", "In", "bar")]}],
        {"foo": "bar"},
        "node_2",
        True,
    ),
    (
        "one term: matchFields doesn't match, matchExpressions matches",
        [{"matchFields": [name_in("node_1")], "matchExpressions": [req("foo", "In", "bar")]}],
        {"foo": "bar"},
        "node_2",
        False,
    ),
    (
        "one term: both match",
        [{"matchFields": [name_in("node_1")], "matchExpressions": [req("foo", "In", "bar")]}],
        {"foo": "bar"},
        "node_1",
        True,
    ),
    (
        "two terms: neither matches",
        [
            {"matchFields": [name_in("node_1")]},
            {"matchExpressions": [req("foo", "In", "not-match-to-bar")]},
        ],
        {"foo": "bar"},
        "node_2",
        False,
    ),
    ("matchFields NotIn", [{"matchFields": [name_in("node_1", op="NotIn")]}], {}, "node_2", True),
    (
        "matchFields NotIn excludes the node",
        [{"matchFields": [name_in("node_1", op="NotIn")]}],
        {},
        "node_1",
        False,
    ),
    (
        "invalid term is skipped, a later valid term matches",
        [
            {"matchExpressions": [req("invalid key", "In", "label_value")]},
            {"matchExpressions": [req("a", "In", "b")]},
        ],
        {"a": "b", "invalid key": "label_value"},
        "n",
        True,
    ),
]


@pytest.mark.parametrize(
    ("terms", "labels", "node_name", "want"),
    [pytest.param(*c[1:], id=c[0]) for c in NODE_SELECTOR_CASES],
)
def test_node_selector_matching(
    terms: list[dict[str, Any]], labels: dict[str, str], node_name: str, want: bool
) -> None:
    assert match(ns(*terms), labels, node_name) is want


@pytest.mark.parametrize(
    ("op", "bound", "label", "want"),
    [
        ("Gt", "5", "6", True),
        ("Gt", "5", "5", False),
        ("Gt", "5", "4", False),
        ("Lt", "5", "4", True),
        ("Lt", "5", "5", False),
        ("Lt", "10", "-11", True),
        ("Gt", "-12", "-11", False),  # "-12" is not a valid label value: the term is invalid
        ("Gt", "-10", "5", False),
        ("Gt", "5", "+6", True),  # strconv.ParseInt accepts a sign
        ("Gt", "5", "abc", False),  # a non-integer label value never matches
        ("Lt", "5", "abc", False),
        ("Gt", "5", "6.0", False),
        ("Gt", "5", "1_0", False),  # Python's int() would read 10; Go's ParseInt fails
        ("Gt", "5", " 6", False),
        ("Gt", "5", "\u0667", False),  # Arabic-Indic seven
        ("Gt", "5", "", False),
        ("Gt", "5", "9223372036854775807", True),
        ("Gt", "5", "9223372036854775808", False),  # out of int64 range
        ("Lt", "5", "-9223372036854775809", False),
    ],
)
def test_gt_lt(op: str, bound: str, label: str, want: bool) -> None:
    sel = ns({"matchExpressions": [req("n", op, bound)]})
    assert match(sel, {"n": label}) is want


def test_gt_lt_missing_label_never_matches() -> None:
    assert not match(ns({"matchExpressions": [req("n", "Gt", "1")]}), {})
    assert not match(ns({"matchExpressions": [req("n", "Lt", "1")]}), {})


@pytest.mark.parametrize("bound", ["abc", "1.5", "1_0", "99999999999999999999"])
def test_gt_lt_with_a_non_integer_bound_matches_no_node(bound: str) -> None:
    # labels.NewRequirement rejects it; the term then matches nothing (LazyErrorNodeSelector).
    try:
        sel = compile_node_selector(ns({"matchExpressions": [req("n", "Gt", bound)]}), "x")
    except SelectorError as e:
        assert "values" in str(e)
        return
    assert not sel.matches({"n": "100000000000000000000000"}, "node")
    assert not sel.matches({"n": "5"}, "node")


def test_gt_lt_need_exactly_one_value() -> None:
    for values in ((), ("1", "2")):
        with pytest.raises(SelectorError, match=r"matchExpressions\[0\]\.values"):
            compile_node_selector(ns({"matchExpressions": [req("n", "Gt", *values)]}), "x")


def test_field_selector_ignored_for_a_node_without_a_name() -> None:
    # extractNodeFields sets metadata.name only for a named node.
    sel = compile_node_selector(ns({"matchFields": [name_in("node_1")]}), "x")
    assert sel.matches({}, "")


@pytest.mark.parametrize(
    ("field", "field_path", "text"),
    [
        (req("metadata.labels", "In", "x"), "matchFields[0].key", "not a valid field selector key"),
        (req("spec.nodeName", "In", "x"), "matchFields[0].key", "not a valid field selector key"),
        (
            req("metadata.name", "Exists"),
            "matchFields[0].operator",
            "not a valid selector operator",
        ),
        (
            req("metadata.name", "Gt", "1"),
            "matchFields[0].operator",
            "not a valid selector operator",
        ),
        (req("metadata.name", "In", "a", "b"), "matchFields[0].values", "only one value"),
        (req("metadata.name", "NotIn"), "matchFields[0].values", "only one value"),
    ],
)
def test_invalid_match_fields_raise_with_path(
    field: dict[str, Any], field_path: str, text: str
) -> None:
    where = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    with pytest.raises(SelectorError) as ei:
        compile_node_selector(
            ns({"matchExpressions": [req("a", "Exists")]}, {"matchFields": [field]}), where
        )
    msg = str(ei.value)
    assert msg.startswith(f"{where}.nodeSelectorTerms[1].{field_path}: "), msg
    assert text in msg


@pytest.mark.parametrize(
    ("expr", "field_path"),
    [
        (req("a", "Near", "x"), "operator"),
        (req("a", "In"), "values"),
        (req("a", "Exists", "x"), "values"),
    ],
)
def test_invalid_node_selector_requirements_raise_with_path(
    expr: dict[str, Any], field_path: str
) -> None:
    with pytest.raises(SelectorError) as ei:
        compile_node_selector_term(
            decode({"matchExpressions": [expr]}, NodeSelectorTerm),
            "spec.affinity.nodeAffinity.preferred[2].preference",
        )
    assert str(ei.value).startswith(
        f"spec.affinity.nodeAffinity.preferred[2].preference.matchExpressions[0].{field_path}: "
    )


def test_node_selector_supports_all_six_operators() -> None:
    sel = compile_node_selector(
        ns(
            {
                "matchExpressions": [
                    req("a", "In", "1"),
                    req("b", "NotIn", "1"),
                    req("c", "Exists"),
                    req("d", "DoesNotExist"),
                    req("e", "Gt", "1"),
                    req("f", "Lt", "1"),
                ]
            }
        ),
        "x",
    )
    assert sel.matches({"a": "1", "b": "2", "c": "", "e": "2", "f": "0"}, "n")
    assert not sel.matches({"a": "1", "b": "2", "c": "", "d": "", "e": "2", "f": "0"}, "n")


# ---- tolerations (v1.Toleration.ToleratesTaint) -----------------------------------------


def tol(**kw: Any) -> Toleration:
    return decode(kw, Toleration)


def taint(key: str, effect: str = "NoSchedule", value: str = "") -> Taint:
    return decode({"key": key, "value": value, "effect": effect}, Taint)


@pytest.mark.parametrize(
    ("toleration", "t", "want"),
    [
        pytest.param(
            tol(key="foo", operator="Exists", effect="NoSchedule"),
            taint("foo"),
            True,
            id="same key and effect, Exists, taint has no value",
        ),
        pytest.param(
            tol(key="foo", operator="Exists", effect="NoSchedule"),
            taint("foo", value="bar"),
            True,
            id="same key and effect, Exists, taint has some value",
        ),
        pytest.param(
            tol(key="", operator="Exists", effect="NoSchedule"),
            taint("foo", value="bar"),
            True,
            id="empty key with Exists matches all taints of that effect",
        ),
        pytest.param(
            tol(key="foo", operator="Equal", value="bar", effect="NoSchedule"),
            taint("foo", value="bar"),
            True,
            id="same key, effect and value, Equal",
        ),
        pytest.param(
            tol(key="foo", operator="Equal", value="value1", effect="NoSchedule"),
            taint("foo", value="value2"),
            False,
            id="different values, Equal",
        ),
        pytest.param(
            tol(key="foo", operator="Equal", value="bar", effect="NoSchedule"),
            taint("foo", "NoExecute", "bar"),
            False,
            id="different effects, Equal",
        ),
        pytest.param(
            tol(operator="Exists"),
            taint("anything", "NoExecute", "v"),
            True,
            id="empty key, Exists, no effect tolerates everything",
        ),
        pytest.param(
            tol(key="foo", operator="Exists"),
            taint("foo", "PreferNoSchedule"),
            True,
            id="empty effect matches every effect",
        ),
        pytest.param(
            tol(key="foo", value="bar"),
            taint("foo", value="bar"),
            True,
            id="operator empty means Equal",
        ),
        pytest.param(
            tol(key="foo", value="bar"),
            taint("foo", value="baz"),
            False,
            id="operator empty means Equal (mismatch)",
        ),
        pytest.param(tol(key="foo"), taint("foo"), True, id="Equal with both values empty"),
        pytest.param(
            tol(key="foo", operator="Equal"),
            taint("foo", value="x"),
            False,
            id="Equal with empty toleration value vs non-empty taint value",
        ),
        pytest.param(
            tol(key="", value="bar"),
            taint("foo", value="bar"),
            True,
            id="empty key with Equal matches any key with that value",
        ),
        pytest.param(
            tol(key="", value="bar"),
            taint("foo", value="baz"),
            False,
            id="empty key with Equal still compares values",
        ),
        pytest.param(tol(key="other", operator="Exists"), taint("foo"), False, id="different key"),
        pytest.param(
            tol(key="foo", operator="Bogus"),
            taint("foo"),
            False,
            id="unknown operator tolerates nothing",
        ),
    ],
)
def test_tolerates_taint(toleration: Toleration, t: Taint, want: bool) -> None:
    assert tolerates_taint(toleration, t) is want


def test_find_untolerated_taint_returns_the_first_untolerated() -> None:
    taints = [taint("a"), taint("b", "NoExecute"), taint("c", "PreferNoSchedule")]
    assert find_untolerated_taint(taints, []) is taints[0]
    assert find_untolerated_taint(taints, [tol(key="a", operator="Exists")]) is taints[1]
    everything = [tol(operator="Exists")]
    assert find_untolerated_taint(taints, everything) is None
    assert tolerations_tolerate_taint(everything, taints[2])
    assert find_untolerated_taint([], []) is None


def test_find_untolerated_taint_with_inclusion_filter() -> None:
    taints = [taint("soft", "PreferNoSchedule"), taint("hard", "NoSchedule")]

    def hard(t: Taint) -> bool:
        return t.effect in ("NoSchedule", "NoExecute")

    assert find_untolerated_taint(taints, [], hard) is taints[1]
    assert find_untolerated_taint(taints, [tol(key="hard", operator="Exists")], hard) is None
    assert find_untolerated_taint(taints, [tol(key="hard", operator="Exists")]) is taints[0]
