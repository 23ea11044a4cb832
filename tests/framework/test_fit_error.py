"""FitError's text, exactly as kube-scheduler's FitError.Error() writes it.

Cases from pkg/scheduler/framework/types_test.go (TestFitError_Error) and the messages
schedule_one_test.go expects.
"""

from __future__ import annotations

from ksched.framework.diagnosis import NO_NODE_AVAILABLE_MSG, Diagnosis, FitError
from ksched.framework.interface import NodeToStatus
from ksched.framework.status import Code, Status

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def diag(
    statuses: dict[str, Status], absent: Status | None = None, pre: str = "", post: str = ""
) -> Diagnosis:
    nts = NodeToStatus(absent if absent is not None else Status(UU))
    for n, s in statuses.items():
        nts.set(n, s)
    return Diagnosis(node_to_status=nts, pre_filter_msg=pre, post_filter_msg=post)


def fit(n: int, d: Diagnosis) -> str:
    return str(FitError("default/p", n, d))


PRE = "Node(s) failed PreFilter plugin FalsePreFilter"
F1 = "Node(s) failed Filter plugin FalseFilter-1"
F2 = "Node(s) failed Filter plugin FalseFilter-2"
POST = "Error running PostFilter plugin FailedPostFilter"


# ---- TestFitError_Error ----------------------------------------------------------------


def test_nodes_failed_prefilter() -> None:
    d = diag({f"node{i}": Status(U, PRE) for i in (1, 2, 3)}, pre=PRE)
    assert fit(3, d) == "0/3 nodes are available: Node(s) failed PreFilter plugin FalsePreFilter."


def test_nodes_failed_prefilter_and_preemption_failed() -> None:
    d = diag({f"node{i}": Status(U, PRE) for i in (1, 2, 3)}, pre=PRE, post=POST)
    assert fit(3, d) == (
        "0/3 nodes are available: Node(s) failed PreFilter plugin "
        "FalsePreFilter. Error running PostFilter plugin FailedPostFilter"
    )


def test_one_filter_plugin_empty_postfilter() -> None:
    d = diag({f"node{i}": Status(U, F1) for i in (1, 2, 3)})
    assert fit(3, d) == "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1."


def test_one_filter_plugin_with_postfilter() -> None:
    d = diag({f"node{i}": Status(U, F1) for i in (1, 2, 3)}, post=POST)
    assert fit(3, d) == (
        "0/3 nodes are available: 3 Node(s) failed Filter plugin FalseFilter-1."
        " Error running PostFilter plugin FailedPostFilter"
    )


def test_two_filter_plugins() -> None:
    d = diag({"node1": Status(U, F1), "node2": Status(U, F1), "node3": Status(U, F2)})
    assert fit(3, d) == (
        "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2,"
        " 2 Node(s) failed Filter plugin FalseFilter-1."
    )
    d.post_filter_msg = POST
    assert fit(3, d) == (
        "0/3 nodes are available: 1 Node(s) failed Filter plugin FalseFilter-2,"
        " 2 Node(s) failed Filter plugin FalseFilter-1. Error running PostFilter"
        " plugin FailedPostFilter"
    )


def test_failed_to_permit_or_reserve_on_node() -> None:
    d = diag({"node1": Status(U, "Node failed Permit plugin Permit-1")})
    assert fit(1, d) == "0/1 nodes are available: 1 Node failed Permit plugin Permit-1."
    d = diag({"node1": Status(U, "Node failed Reserve plugin Reserve-1")})
    assert fit(1, d) == "0/1 nodes are available: 1 Node failed Reserve plugin Reserve-1."


# ---- histogram details ---------------------------------------------------------------


def test_kube_scheduler_style_message() -> None:
    taint = "node(s) had untolerated taint(s)"
    d = diag(
        {
            "a": Status(U, "Insufficient cpu"),
            "b": Status(U, "Insufficient cpu"),
            "c": Status(UU, taint),
            "d": Status(UU, taint),
            "e": Status(UU, taint),
        }
    )
    assert fit(5, d) == (
        "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s)."
    )


def test_sorted_as_go_strings_not_by_count() -> None:
    # sort.Strings on "count reason": "10 x" sorts before "2 y" and "9 a".
    statuses = {f"x{i}": Status(U, "x") for i in range(10)}
    statuses |= {f"y{i}": Status(U, "y") for i in range(2)}
    statuses |= {f"a{i}": Status(U, "a") for i in range(9)}
    assert fit(21, diag(statuses)) == "0/21 nodes are available: 10 x, 2 y, 9 a."


def test_byte_order_puts_upper_case_first() -> None:
    d = diag({"n1": Status(U, "b"), "n2": Status(U, "B"), "n3": Status(U, "a")})
    assert fit(3, d) == "0/3 nodes are available: 1 B, 1 a, 1 b."


def test_multi_reason_statuses_count_every_reason() -> None:
    d = diag(
        {
            "n1": Status(U, "Insufficient cpu", "Insufficient memory"),
            "n2": Status(U, "Insufficient memory"),
            "n3": Status(U, "Insufficient cpu", "Insufficient memory"),
        }
    )
    assert fit(3, d) == "0/3 nodes are available: 2 Insufficient cpu, 3 Insufficient memory."


def test_error_text_counts_as_a_reason() -> None:
    d = diag({"n1": Status(Code.ERROR, error=RuntimeError("boom")), "n2": Status(U, "x")})
    assert fit(2, d) == "0/2 nodes are available: 1 boom, 1 x."


def test_absent_nodes_take_the_absent_status() -> None:
    absent = Status(UU, "node(s) didn't satisfy plugin(s) [NodeAffinity]")
    d = diag({"n1": Status(U, "Insufficient cpu")}, absent=absent)
    assert fit(5, d) == (
        "0/5 nodes are available: 1 Insufficient cpu, "
        "4 node(s) didn't satisfy plugin(s) [NodeAffinity]."
    )


def test_absent_status_without_reasons_adds_nothing() -> None:
    d = diag({"n1": Status(U, "Insufficient cpu")})
    assert fit(4, d) == "0/4 nodes are available: 1 Insufficient cpu."


def test_absent_multi_reason_status() -> None:
    d = diag({"n1": Status(U, "r1")}, absent=Status(UU, "r1", "r2"))
    assert fit(3, d) == "0/3 nodes are available: 2 r2, 3 r1."


def test_no_reasons_at_all() -> None:
    assert fit(0, Diagnosis()) == "0/0 nodes are available:"
    assert fit(2, diag({})) == "0/2 nodes are available:"


def test_prefilter_message_replaces_the_histogram() -> None:
    # The framework copies the PreFilter status to every node; it is reported once.
    d = diag(
        {"n1": Status(UU, "pre"), "n2": Status(U, "other")},
        absent=Status(UU, "pre"),
        pre="pod has unbound immediate PersistentVolumeClaims",
    )
    assert fit(5, d) == (
        "0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims."
    )


def test_preemption_suffix() -> None:
    # Preemption's PostFilter status message is "preemption: " + its own FitError text,
    # appended as is (it already ends with a period).
    inner = diag(
        {f"n{i}": Status(UU, "No preemption victims found for incoming pod") for i in range(5)}
    )
    post = "preemption: " + fit(5, inner)
    outer = diag({f"n{i}": Status(U, "Insufficient cpu") for i in range(5)}, post=post)
    assert fit(5, outer) == (
        "0/5 nodes are available: 5 Insufficient cpu. preemption: 0/5 nodes are available: "
        "5 No preemption victims found for incoming pod."
    )


def test_preemption_suffix_as_kube_scheduler_prints_it() -> None:
    post = (
        "preemption: 0/5 nodes are available: 2 Insufficient cpu, 3 Preemption is not "
        "helpful for scheduling."
    )
    d = diag(
        {
            "a": Status(U, "Insufficient cpu"),
            "b": Status(U, "Insufficient cpu"),
            **{f"t{i}": Status(UU, "node(s) had untolerated taint(s)") for i in range(3)},
        },
        post=post,
    )
    msg = fit(5, d)
    assert msg == (
        "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated "
        "taint(s). preemption: 0/5 nodes are available: 2 Insufficient "
        "cpu, 3 Preemption is not helpful for scheduling."
    )
    assert not msg.endswith("..")


def test_reason_histogram_and_constants() -> None:
    d = diag({"a": Status(U, "x", "y"), "b": Status(U, "x")}, absent=Status(UU, "z"))
    fe = FitError("ns/p", 4, d)
    assert fe.reason_histogram() == {"x": 2, "y": 1, "z": 2}
    assert fe.pod_key == "ns/p" and fe.num_all_nodes == 4
    assert NO_NODE_AVAILABLE_MSG.format(7) == "0/7 nodes are available"
    assert isinstance(fe, Exception)
