"""The differential generator's "tolerationops" group: Gt/Lt tolerations against numeric
(and unparsable) SLA taints, objects the API server admits with its gate on."""

from __future__ import annotations

from ksched.api.objects import Node, Pod, decode
from ksched.api.selectors import tolerates_taint
from ksched.testing.differential import APISERVER_ARGS, generate
from ksched.testing.differential.generator import SLA_TAINT


def test_tolerationops_gives_gt_lt_tolerations_some_of_which_tolerate() -> None:
    tolerated = {True: 0, False: 0}
    ops: set[str] = set()
    for seed in range(20):
        sc = generate(seed, ["tolerationops"])
        nodes = [decode(o, Node) for o in sc.objects if o["kind"] == "Node"]
        taints = [t for n in nodes for t in n.spec.taints if t.key == SLA_TAINT]
        for n in nodes:  # unique by key and effect, as the API server requires
            assert len({(t.key, t.effect) for t in n.spec.taints}) == len(n.spec.taints)
        for p in sc.pending:
            if "tolerationops" not in p.groups:
                continue
            pod = decode(p.pod, Pod)
            for tol in pod.spec.tolerations:
                assert tol.key == SLA_TAINT and tol.operator in ("Gt", "Lt")
                ops.add(tol.operator)
                for taint in taints:
                    tolerated[tolerates_taint(tol, taint, True)] += 1
                    assert not tolerates_taint(tol, taint, False)
    assert ops == {"Gt", "Lt"}
    assert tolerated[True] and tolerated[False]
    assert any("TaintTolerationComparisonOperators=true" in a for a in APISERVER_ARGS)
