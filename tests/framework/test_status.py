"""framework.Status: codes, predicates, messages and PluginToStatus.Merge semantics."""

from __future__ import annotations

import pytest

from ksched.framework.status import SUCCESS, Code, Status, merge_statuses


def test_codes_match_upstream_numbering_and_names() -> None:
    # framework.Code: Success, Error, Unschedulable, UnschedulableAndUnresolvable, Wait, Skip,
    # Pending, in that order.
    assert [c.label for c in sorted(Code)] == [
        "Success",
        "Error",
        "Unschedulable",
        "UnschedulableAndUnresolvable",
        "Wait",
        "Skip",
        "Pending",
    ]
    assert [int(c) for c in sorted(Code)] == list(range(7))


@pytest.mark.parametrize(
    ("code", "success", "rejected", "wait", "skip"),
    [
        (Code.SUCCESS, True, False, False, False),
        (Code.ERROR, False, False, False, False),
        (Code.UNSCHEDULABLE, False, True, False, False),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, False, True, False, False),
        (Code.WAIT, False, False, True, False),
        (Code.SKIP, False, False, False, True),
        (Code.PENDING, False, True, False, False),
    ],
)
def test_predicates(code: Code, success: bool, rejected: bool, wait: bool, skip: bool) -> None:
    s = Status(code, "r")
    assert s.is_success() is success
    assert s.is_rejected() is rejected
    assert s.is_wait() is wait
    assert s.is_skip() is skip


def test_constructors() -> None:
    assert Status.unschedulable("a", "b").code == Code.UNSCHEDULABLE
    assert Status.unresolvable("a").code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    e = Status.as_error(ValueError("boom"), plugin="P")
    assert (e.code, e.plugin, e.message()) == (Code.ERROR, "P", "boom")
    assert isinstance(e.error, ValueError)
    s = Status.as_error("text")
    assert (s.code, s.message(), s.error) == (Code.ERROR, "text", None)


def test_message_joins_reasons_with_comma_space() -> None:
    assert Status(Code.UNSCHEDULABLE, "a", "b", "c").message() == "a, b, c"
    assert Status(Code.UNSCHEDULABLE).message() == ""
    assert SUCCESS.message() == ""


def test_error_text_comes_first_in_reasons() -> None:
    s = Status(Code.ERROR, "more", error=RuntimeError("root cause"))
    assert s.all_reasons() == ["root cause", "more"]
    assert s.message() == "root cause, more"
    # An exception with no text is named by its type.
    assert Status.as_error(KeyError()).message() == "KeyError"


def test_with_plugin_keeps_the_first_plugin() -> None:
    s = Status(Code.UNSCHEDULABLE, "x")
    assert s.with_plugin("A") is s and s.plugin == "A"
    s.with_plugin("B")
    assert s.plugin == "A"


def test_equality() -> None:
    assert Status(Code.UNSCHEDULABLE, "a") == Status(Code.UNSCHEDULABLE, "a")
    assert Status(Code.UNSCHEDULABLE, "a") != Status(Code.UNSCHEDULABLE, "b")
    assert Status(Code.UNSCHEDULABLE, "a") != Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "a")
    assert Status() == None  # noqa: E711  (a nil status is Success)
    assert Status(Code.UNSCHEDULABLE) != None  # noqa: E711
    assert "Unschedulable" in repr(Status(Code.UNSCHEDULABLE, "x"))


# ---- merge_statuses vs PluginToStatus.Merge ------------------------------------------------

U, UU, ERR = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.ERROR


def test_merge_of_nothing_is_success() -> None:
    assert merge_statuses([]).is_success()


@pytest.mark.parametrize(
    ("codes", "want"),
    [
        ([U, UU], UU),
        ([UU, U], UU),
        ([U, U], U),
        ([U, ERR, UU], ERR),
        ([ERR, U], ERR),
        ([Code.SUCCESS, U], U),
        ([Code.SUCCESS], Code.SUCCESS),
        ([Code.SUCCESS, Code.SKIP], Code.SKIP),  # Skip/Wait rank above Success ...
        ([Code.SKIP, Code.SUCCESS], Code.SKIP),
        ([Code.WAIT, U], U),  # ... and below Unschedulable
        ([U, Code.WAIT], U),
        ([Code.PENDING, U], U),
        ([Code.PENDING, UU], UU),
        ([Code.SKIP, Code.WAIT], Code.SKIP),  # equal precedence: the first wins
        ([Code.WAIT, Code.SKIP], Code.WAIT),
        ([Code.WAIT, ERR], ERR),
    ],
)
def test_merge_precedence(codes: list[Code], want: Code) -> None:
    assert merge_statuses(Status(c, f"r{i}") for i, c in enumerate(codes)).code == want


def test_merge_concatenates_reasons_in_order() -> None:
    m = merge_statuses(
        [
            Status(U, "a", "b", plugin="P1"),
            Status(UU, "c", plugin="P2"),
            Status(U, "d", plugin="P3"),
        ]
    )
    assert m.code == UU
    assert m.all_reasons() == ["a", "b", "c", "d"]
    assert m.plugin == "P2"  # the plugin of the winning status


def test_merge_error_wins_but_keeps_everyones_reasons() -> None:
    boom = RuntimeError("boom")
    m = merge_statuses(
        [
            Status(U, "a", plugin="P1"),
            Status.as_error(boom, plugin="P2"),
            Status(UU, "c", plugin="P3"),
        ]
    )
    assert m.code == ERR
    assert m.plugin == "P2"
    assert m.error is boom
    assert m.all_reasons() == ["boom", "a", "c"]
    assert m.message() == "boom, a, c"


def test_merge_error_status_made_of_reasons() -> None:
    m = merge_statuses([Status(U, "a"), Status(ERR, "bad thing")])
    assert m.code == ERR
    assert m.all_reasons() == ["a", "bad thing"]


def test_merge_does_not_mutate_inputs() -> None:
    a, b = Status(U, "a"), Status(UU, "b")
    merge_statuses([a, b])
    assert a.all_reasons() == ["a"] and b.all_reasons() == ["b"]
    assert (a.code, b.code) == (U, UU)
