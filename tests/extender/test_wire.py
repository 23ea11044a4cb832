"""extender/v1 on the wire: Go's json.Marshal bytes, and json.Unmarshal's leniency
(case-insensitive keys, last duplicate wins, null is the zero value) and strictness
(wrong JSON types are errors)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ksched.extender import wire

from .conftest import golden, golden_obj


def test_extender_args_nodelist_and_nodenames_encode_as_go() -> None:
    pod = golden_obj("pod.json")
    a, b = golden_obj("node-a.json"), golden_obj("node-b.json")
    assert wire.encode(wire.ExtenderArgs(pod, [a, b])) == golden("filter_args_nodelist.json")
    assert wire.encode(wire.ExtenderArgs(pod, None, ["node-a", "node-b"])) == golden(
        "filter_args_nodenames.json"
    )
    # The client's hot path builds the same bytes from per-object encodings.
    enc = msgspec.json.encode
    assert wire.encode_args_raw(enc(pod), [enc(a), enc(b)], None) == golden(
        "filter_args_nodelist.json"
    )
    assert wire.encode_args_raw(enc(pod), None, ["node-a", "node-b"]) == golden(
        "filter_args_nodenames.json"
    )


@pytest.mark.parametrize(
    ("name", "decode"),
    [
        ("filter_args_nodelist.json", wire.decode_extender_args),
        ("filter_args_nodenames.json", wire.decode_extender_args),
        ("filter_result_nodenames.json", wire.decode_filter_result),
        ("filter_result_nodelist.json", wire.decode_filter_result),
        ("prioritize_result.json", wire.decode_host_priority_list),
        ("bind_args.json", wire.decode_binding_args),
        ("bind_result.json", wire.decode_binding_result),
        ("preempt_args_meta.json", wire.decode_preemption_args),
        ("preempt_args_full.json", wire.decode_preemption_args),
        ("preempt_result.json", wire.decode_preemption_result),
    ],
)
def test_golden_round_trip_is_byte_identical(name: str, decode: Any) -> None:
    assert wire.encode(decode(golden_obj(name))) == golden(name)


def test_lowercase_answers_decode_like_go() -> None:
    r = wire.decode_filter_result(golden_obj("filter_result_nodenames_lowercase.json"))
    assert r == wire.decode_filter_result(golden_obj("filter_result_nodenames.json"))
    r = wire.decode_filter_result(golden_obj("filter_result_nodelist_lowercase.json"))
    assert [n["metadata"]["name"] for n in r.nodes or []] == ["node-a"]
    assert r.failed_nodes == {}
    assert r.failed_and_unresolvable_nodes == {"node-b": "no example.com/gpu left"}
    assert r.node_names is None and r.error == ""
    assert wire.decode_host_priority_list(golden_obj("prioritize_result_lowercase.json")) == [
        wire.HostPriority("node-a", 7),
        wire.HostPriority("node-b", 3),
    ]
    assert wire.decode_binding_result(golden_obj("bind_result_lowercase_error.json")).error == (
        "node-a is draining"
    )
    assert wire.decode_preemption_result(golden_obj("preempt_result_lowercase.json")) == (
        wire.decode_preemption_result(golden_obj("preempt_result.json"))
    )


def test_key_matching_folds_case_and_last_duplicate_wins() -> None:
    r = wire.decode_filter_result({"ERROR": "x", "NodeNAMES": ["a"], "Unknown": 1})
    assert (r.error, r.node_names) == ("x", ["a"])
    assert wire.decode_binding_result(msgspec.json.decode(b'{"Error":"a","error":""}')).error == ""
    # Go's simple folding: the Kelvin sign matches k, the long s matches s.
    assert wire.decode_host_priority_list([{"ho\u017ft": "n", "Score": 1}])[0].host == "n"


def test_null_is_the_zero_value() -> None:
    assert wire.decode_filter_result(None) == wire.ExtenderFilterResult()
    assert wire.decode_filter_result({"Error": None, "NodeNames": None}) == (
        wire.ExtenderFilterResult()
    )
    assert wire.decode_host_priority_list(None) == []
    assert wire.decode_host_priority_list([None, {"Host": "a", "Score": None}]) == [
        wire.HostPriority(),
        wire.HostPriority("a", 0),
    ]


@pytest.mark.parametrize(
    ("decode", "value", "message"),
    [
        (
            wire.decode_filter_result,
            [],
            "cannot unmarshal array into Go value of type v1.ExtenderFilterResult",
        ),
        (
            wire.decode_filter_result,
            {"Error": 5},
            "cannot unmarshal number 5 into Go struct field "
            "ExtenderFilterResult.Error of type string",
        ),
        (wire.decode_filter_result, {"NodeNames": "a"}, "of type []string"),
        (wire.decode_filter_result, {"NodeNames": [1]}, "cannot unmarshal number 1"),
        (wire.decode_filter_result, {"FailedNodes": {"a": 1}}, "FailedNodes"),
        (wire.decode_filter_result, {"Nodes": {"items": [1]}}, "of type v1.Node"),
        (wire.decode_host_priority_list, {"Host": "a"}, "of type v1.HostPriorityList"),
        (
            wire.decode_host_priority_list,
            [{"Score": 1.5}],
            "number 1.5 into Go struct field HostPriority.Score of type int64",
        ),
        (wire.decode_host_priority_list, [{"Score": 2**63}], "of type int64"),
        (wire.decode_host_priority_list, [{"Score": True}], "cannot unmarshal bool"),
        (wire.decode_extender_args, {"Pod": "x"}, "ExtenderArgs.Pod of type v1.Pod"),
        (wire.decode_binding_args, {"PodUID": 7}, "ExtenderBindingArgs.PodUID"),
        (
            wire.decode_preemption_args,
            {"NodeNameToMetaVictims": {"a": {"Pods": [{"UID": 1}]}}},
            "MetaPod.UID",
        ),
    ],
)
def test_wrong_types_are_errors(decode: Any, value: Any, message: str) -> None:
    with pytest.raises(wire.WireError, match=None) as e:
        decode(value)
    assert message in str(e.value)


def test_html_characters_are_escaped_as_go_does() -> None:
    out = wire.encode(wire.ExtenderFilterResult(error="<a> & \u2028\u2029"))
    assert out.endswith(b'"Error":"\\u003ca\\u003e \\u0026 \\u2028\\u2029"}')
    assert msgspec.json.decode(out)["Error"] == "<a> & \u2028\u2029"


def test_maps_encode_with_sorted_keys() -> None:
    out = wire.encode(wire.ExtenderFilterResult(failed_nodes={"b": "x", "a": "y", "B": "z"}))
    assert b'"FailedNodes":{"B":"z","a":"y","b":"x"}' in out


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "Pod",
                    "pod",
                    "Nodes",
                    "NodeNames",
                    "nodenames",
                    "items",
                    "Items",
                    "metadata",
                    "Host",
                    "Score",
                    "Error",
                    "FailedNodes",
                    "UID",
                    "Pods",
                    "NodeNameToVictims",
                    "NodeNameToMetaVictims",
                    "PodName",
                    "x",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(_json)
def test_decoders_raise_only_wire_errors(value: Any) -> None:
    for decode in (
        wire.decode_extender_args,
        wire.decode_filter_result,
        wire.decode_host_priority_list,
        wire.decode_binding_args,
        wire.decode_binding_result,
        wire.decode_preemption_args,
        wire.decode_preemption_result,
    ):
        try:
            out = decode(value)
        except wire.WireError:
            continue
        wire.encode(out)  # whatever decodes also encodes


@settings(max_examples=300, deadline=None)
@given(_json)
@example({"NodeNameToMetaVictims": {"Pod": {"Pod": None, "Pods": False}}})  # MetaPod's Go type
def test_the_bounded_body_decoders_agree_with_the_value_decoders(value: Any) -> None:
    """The server's decoders of raw bodies answer as the decoders of parsed values (the
    same objects, or the same error), keeping the Pods and Nodes as raw JSON."""
    data = msgspec.json.encode(value)
    for body_decode, decode in (
        (wire.decode_extender_args_body, wire.decode_extender_args),
        (wire.decode_preemption_args_body, wire.decode_preemption_args),
    ):
        try:
            want: Any = wire.encode(decode(value))
        except wire.WireError as e:
            want = str(e)
        try:
            got: Any = wire.encode(body_decode(data, wire.Bounds(max_nodes=100)))
        except wire.WireError as e:
            got = str(e)
        assert got == want


@pytest.mark.parametrize(
    ("decode", "body", "bounds", "message"),
    [
        (
            wire.decode_extender_args_body,
            b'{"Nodes":{"items":[{},{},{}]}}',
            wire.Bounds(max_nodes=2),
            "ExtenderArgs.Nodes.items: 3 nodes is over the limit of 2",
        ),
        (
            wire.decode_extender_args_body,
            b'{"NodeNames":["a","b","c"]}',
            wire.Bounds(max_nodes=2),
            "ExtenderArgs.NodeNames: 3 names is over the limit of 2",
        ),
        (
            wire.decode_extender_args_body,
            b'{"Pod":{"metadata":{"name":"' + b"p" * 100 + b'"}}}',
            wire.Bounds(max_nodes=2, max_object_bytes=100),
            "ExtenderArgs.Pod: an object of 124 bytes is over the limit of 100 bytes",
        ),
        (
            wire.decode_extender_args_body,
            b'{"Pod":{},"Nodes":{"items":[{},{},{},{}]}}',
            wire.Bounds(max_nodes=10, max_values=7),
            "ExtenderArgs: 13 JSON values (array elements and object members) is over the "
            "limit of 7",
        ),
        (
            wire.decode_extender_args_body,
            b"{" + b",".join(b'"k%d":0' % i for i in range(wire.MAX_STRUCT_MEMBERS + 1)) + b"}",
            wire.Bounds(max_nodes=10),
            f"ExtenderArgs: {wire.MAX_STRUCT_MEMBERS + 1} members is over the limit of "
            f"{wire.MAX_STRUCT_MEMBERS}",
        ),
        (
            wire.decode_preemption_args_body,
            b'{"NodeNameToMetaVictims":{"a":null,"b":null,"c":null}}',
            wire.Bounds(max_nodes=2),
            "ExtenderPreemptionArgs.NodeNameToMetaVictims: 3 nodes is over the limit of 2",
        ),
        (
            wire.decode_preemption_args_body,
            b'{"NodeNameToVictims":{"a":{"Pods":[{},{}]},"b":{"Pods":[{},{}]}}}',
            wire.Bounds(max_nodes=2, max_victims=3),
            "Victims.Pods: 2 victims (over all nodes) is over the limit of 1",
        ),
        (
            wire.decode_preemption_args_body,
            b'{"NodeNameToMetaVictims":{"a":{"Pods":[{"UID":"x"}]}},'
            b'"NodeNameToVictims":{"a":{"Pods":[{},{}]}}}',
            wire.Bounds(max_nodes=2, max_victims=2),
            "MetaVictims.Pods: 1 victims (over all nodes) is over the limit of 0",
        ),
    ],
)
def test_bounded_decoders_refuse_past_each_bound(
    decode: Any, body: bytes, bounds: wire.Bounds, message: str
) -> None:
    with pytest.raises(wire.TooLarge) as e:
        decode(body, bounds)
    assert str(e.value) == message
    at_the_bound = wire.Bounds(
        max_nodes=100, max_object_bytes=10_000, max_victims=100, max_values=100
    )
    if b'"k0"' not in body:
        decode(body, at_the_bound)  # within generous bounds it decodes
