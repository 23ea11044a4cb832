"""Patch formats and selector grammar, checked directly against their RFCs / kube examples."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.testing._patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from ksched.testing._resources import PODS
from ksched.testing._selectors import FieldSelector, LabelSelector, SelectorError

# RFC 7386 appendix A
RFC7386_CASES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), RFC7386_CASES)
def test_merge_patch_rfc7386(target: Any, patch: Any, expected: Any) -> None:
    assert merge_patch(target, patch) == expected


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    st.dictionaries(st.text(max_size=2), json_values, max_size=4),
    st.dictionaries(st.text(max_size=2), json_values, max_size=4),
)
def test_merge_patch_is_idempotent_and_pure(target: dict[str, Any], patch: dict[str, Any]) -> None:
    import copy

    before = copy.deepcopy(target)
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once
    assert target == before


def test_json_patch_rfc6902_examples() -> None:
    assert json_patch({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}]) == {
        "foo": "bar",
        "baz": "qux",
    }
    assert json_patch(
        {"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}]
    ) == {"foo": ["bar", "qux", "baz"]}
    assert json_patch({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}]) == {
        "foo": ["bar", "baz"]
    }
    doc = {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}
    moved = json_patch(doc, [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}])
    assert moved == {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}
    assert json_patch(
        {"a/b": {"m~n": 1}}, [{"op": "replace", "path": "/a~1b/m~0n", "value": 2}]
    ) == {"a/b": {"m~n": 2}}
    assert json_patch({"a": [1]}, [{"op": "copy", "from": "/a/0", "path": "/a/-"}]) == {"a": [1, 1]}
    with pytest.raises(PatchError):
        json_patch({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}])
    with pytest.raises(PatchError):
        json_patch({"a": 1}, [{"op": "remove", "path": "/missing"}])
    with pytest.raises(PatchError):
        json_patch({"a": 1}, [{"op": "replace", "path": "/missing", "value": 1}])
    with pytest.raises(PatchError):
        json_patch({"a": 1}, {"op": "add"})


def test_strategic_merge_patch_lists_and_directives() -> None:
    pod: dict[str, Any] = {
        "metadata": {"finalizers": ["a"], "labels": {"x": "1"}},
        "spec": {
            "containers": [
                {"name": "a", "image": "a:1", "env": [{"name": "E", "value": "1"}]},
                {"name": "b", "image": "b:1"},
            ],
            "tolerations": [{"key": "t1"}],
        },
        "status": {
            "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
                {"type": "Ready", "status": "False"},
            ]
        },
    }
    patch = {
        "metadata": {"finalizers": ["b"], "labels": {"x": None}},
        "spec": {
            "containers": [
                {"name": "a", "env": [{"name": "F", "value": "2"}]},
                {"name": "b", "$patch": "delete"},
                {"name": "c", "image": "c:1"},
            ],
            "tolerations": [{"key": "t2"}],  # no merge key: replaced
        },
        "status": {"conditions": [{"type": "PodScheduled", "status": "True", "reason": None}]},
    }
    out = strategic_merge_patch(pod, patch)
    assert out["metadata"] == {"finalizers": ["a", "b"], "labels": {}}
    assert out["spec"]["containers"] == [
        {
            "name": "a",
            "image": "a:1",
            "env": [{"name": "E", "value": "1"}, {"name": "F", "value": "2"}],
        },
        {"name": "c", "image": "c:1"},
    ]
    assert out["spec"]["tolerations"] == [{"key": "t2"}]
    assert out["status"]["conditions"] == [
        {"type": "PodScheduled", "status": "True"},
        {"type": "Ready", "status": "False"},
    ]
    replaced = strategic_merge_patch(pod, {"spec": {"$patch": "replace", "containers": []}})
    assert replaced["spec"] == {"containers": []}
    ordered = strategic_merge_patch(
        pod,
        {
            "$setElementOrder/metadata": [],
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]},
            "spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]},
        },
    )
    assert ordered["metadata"]["finalizers"] == []
    assert [c["name"] for c in ordered["spec"]["containers"]] == ["b", "a"]
    list_replace = strategic_merge_patch(
        pod, {"status": {"conditions": [{"$patch": "replace"}, {"type": "X"}]}}
    )
    assert list_replace["status"]["conditions"] == [{"type": "X"}]
    assert pod["spec"]["containers"][1]["name"] == "b"  # the input is untouched


LABELS = {"app": "web", "tier": "front", "n": "5"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("missing!=x", True),
        ("app in (web, api)", True),
        ("app in (api)", False),
        ("app notin (api)", True),
        ("missing notin (api)", True),
        ("app", True),
        ("!app", False),
        ("!missing", True),
        ("app=web,tier=front", True),
        ("app=web,tier=back", False),
        ("app in (web,api),tier notin (db),!missing", True),
        ("n>4", True),
        ("n<5", False),
        ("example.com/key=v", False),
    ],
)
def test_label_selectors(selector: str, matches: bool) -> None:
    assert LabelSelector.parse(selector).matches({"metadata": {"labels": LABELS}}) is matches


def test_label_selector_errors() -> None:
    for bad in ("app in (web", "=x", "bad key=1", "n>abc"):
        with pytest.raises(SelectorError):
            LabelSelector.parse(bad)


def test_field_selectors() -> None:
    getters = PODS.field_getters()
    pod = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1", "hostNetwork": True},
        "status": {"phase": "Running"},
    }
    assert FieldSelector.parse("spec.nodeName=n1,status.phase!=Failed", getters).matches(pod)
    assert FieldSelector.parse("spec.nodeName==n1", getters).matches(pod)
    assert not FieldSelector.parse("spec.nodeName=", getters).matches(pod)
    assert FieldSelector.parse("spec.schedulerName=", getters).matches(pod)
    assert FieldSelector.parse("spec.hostNetwork=true", getters).matches(pod)
    assert FieldSelector.parse("metadata.namespace=ns,metadata.name=p", getters).matches(pod)
    with pytest.raises(SelectorError, match=r"field label not supported: spec\.image"):
        FieldSelector.parse("spec.image=x", getters)
    with pytest.raises(SelectorError):
        FieldSelector.parse("spec.nodeName", getters)
