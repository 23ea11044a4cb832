"""The vector dry run (``select_victims_batch``) against the per-node paths.

Random clusters and preemptors, seeded: every node the vector pass decides must get the
answer ``select_victims_in_place`` (and the copy path, ``select_victims_on_node``) gives,
and a whole preemption must pick the same node, victims and wording with or without it.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from ksched.api.objects import Node
from ksched.framework.interface import NodeToStatus
from ksched.framework.status import Code, Status
from ksched.framework.types import PodInfo
from ksched.plugins.defaultpreemption.preemption import UNWORDED
from tests.plugins.test_defaultpreemption_helpers import FIT, Env, epoch, node, pdb, pod

TAINTS = ("TaintToleration", ("filter",))
HUGE = str(2**63 - 1)


def _case(rng: random.Random, version: str) -> tuple[Env, PodInfo, list[Any]]:
    """Nodes of mixed sizes, crowded with pods whose priorities and start times often tie
    (some never started, some nodes with more pods than Go's insertion sort handles),
    labels some PDBs select (one pod may match several), pods nominated to nodes, now
    and then a pod without a uid or an extended resource."""
    n_nodes = rng.randint(1, 10)
    nodes: list[Node] = []
    for i in range(n_nodes):
        cap = {
            "cpu": f"{rng.randint(2, 30) * 100}m",
            "memory": rng.choice(["1000", "3000", HUGE]),
            "pods": str(rng.randint(3, 30)),
        }
        if rng.random() < 0.3:
            cap["ephemeral-storage"] = rng.choice(["500", "2000"])
        if rng.random() < 0.3:
            cap["example.com/gpu"] = str(rng.randint(0, 4))
        nodes.append(node(f"n{i}", cap))
    pods: list[PodInfo] = []
    dense = rng.random() < 0.3  # many pods per node: past Go's insertion sort
    for i in range(rng.randint(n_nodes, (20 if dense else 6) * n_nodes)):
        req: dict[str, str] = {}
        if rng.random() < 0.9:
            req["cpu"] = f"{rng.choice([0, 50, 100, 200, 300])}m"
        if rng.random() < 0.5:
            req["memory"] = rng.choice(["0", "100", "300", HUGE])
        if rng.random() < 0.2:
            req["ephemeral-storage"] = rng.choice(["100", "400"])
        if rng.random() < 0.2:
            req["example.com/gpu"] = str(rng.randint(1, 2))
        labels = {"app": rng.choice("abc")}
        if rng.random() < 0.5:
            labels["tier"] = rng.choice("xy")
        if rng.random() < 0.05:
            labels = {}
        start = None if rng.random() < 0.3 else epoch(rng.randint(0, 59 if dense else 5))
        pods.append(
            pod(
                f"v{i}",
                uid="" if rng.random() < 0.01 else None,
                ns=rng.choice(["default", "default", "other"]),
                node=f"n{rng.randrange(n_nodes)}",
                prio=rng.choice([0, 10, 100, 500, 1000]),
                req=req,
                labels=labels,
                start=start,
            )
        )
    pdbs = []
    for b in range(rng.choice([0, 1, 2, 3])):
        sel = rng.choice([{"app": "a"}, {"app": "b"}, {"tier": "x"}, {"app": "a", "tier": "y"}])
        disrupted = [f"v{rng.randrange(len(pods))}"] if pods and rng.random() < 0.3 else []
        pdbs.append(
            pdb(
                f"pdb{b}",
                ns=rng.choice(["default", "other"]),
                match_labels=sel,
                allowed=rng.randint(0, 2),
                disrupted=disrupted,
            )
        )
    env = Env(nodes, pods, [FIT, TAINTS], pdbs=pdbs, version=version)
    for i in range(rng.choice([0, 0, 1, 3])):
        nreq = {"cpu": f"{rng.choice([100, 400])}m"}
        if rng.random() < 0.3:
            nreq["example.com/gpu"] = "1"
        if rng.random() < 0.2:
            nreq["memory"] = rng.choice(["200", HUGE])
        nom = pod(f"nom{i}", prio=rng.choice([0, 2000]), req=nreq)
        env.nominator.add(nom, f"n{rng.randrange(n_nodes)}")
    preq: dict[str, str] = {}
    if rng.random() < 0.95:
        preq["cpu"] = f"{rng.randint(1, 15) * 100}m"
    if rng.random() < 0.4:
        preq["memory"] = rng.choice(["100", "500", "1500"])
    if rng.random() < 0.2:
        preq["ephemeral-storage"] = rng.choice(["200", "600"])
    if rng.random() < 0.3:
        preq["example.com/gpu"] = str(rng.randint(1, 3))
    return env, pod("p", prio=rng.choice([100, 600, 1500, 1500]), req=preq), pdbs


def _status(st: Status) -> tuple[Any, ...]:
    return (st.code, st.message(), st.plugin)


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_vector_dry_run_equals_the_per_node_paths(version: str) -> None:
    rng = random.Random(20260 + int(version[-1]))
    seen: Counter[str] = Counter()
    for _ in range(300):
        env, p, pdbs = _case(rng, version)
        state = env.state_for(p)
        nodes = list(env.snapshot.node_infos)
        answers = env.pl.select_victims_batch(state, p, nodes, pdbs)
        if answers is None:
            seen["no batch"] += 1
            continue
        for k, ni in enumerate(nodes):
            got = answers(k)
            if got is None:
                seen["undecided"] += 1
                continue
            want = env.pl.select_victims_in_place(state, p, ni, pdbs, worded=False)
            assert want is not None
            assert [id(v) for v in got[0]] == [id(v) for v in want[0]], (version, ni.name)
            assert got[1] == want[1]
            if want[2] is UNWORDED:
                assert got[2] is UNWORDED
                worded = answers.worded(k)
                full = env.pl.select_victims_in_place(state, p, ni, pdbs)
                assert worded is not None and full is not None
                assert _status(worded) == _status(full[2])
                seen["unworded"] += 1
            else:
                assert _status(got[2]) == _status(want[2])
            copy = env.pl.select_victims_on_node(state.clone(), p, ni.clone(), pdbs)
            assert [v.name for v in got[0]] == [v.name for v in copy[0]]
            assert got[1] == copy[1]
            seen["with victims" if got[0] else "without"] += 1
            if got[1]:
                seen["pdb violations"] += 1
    # every kind of answer came up, and the per-node fallback was needed at times
    for kind in ("with victims", "without", "unworded", "pdb violations", "undecided"):
        assert seen[kind] > 0, seen
    assert seen["with victims"] + seen["without"] > 4 * seen["undecided"], seen


def _dry_run(env: Env, p: PodInfo, batch: bool, offset: int, num: int) -> tuple[Any, ...]:
    """``dry_run_preemption`` over every node: candidates, statuses and errors."""
    pl = env.pl
    if not batch:
        pl.select_victims_batch = None  # type: ignore[assignment,method-assign]
    try:
        nodes = list(env.snapshot.node_infos)
        cands, statuses, errors = pl.evaluator.dry_run_preemption(
            env.state_for(p), p, nodes, pl.evaluator._pdbs(), offset % len(nodes), num
        )
    finally:
        if not batch:
            del pl.select_victims_batch
    return (
        [(c.name, [v.name for v in c.victims.pods], c.victims.num_pdb_violations) for c in cands],
        {name: _status(st) for name, st in statuses.statuses.items()},
        errors,
    )


def _preempt(env: Env, p: PodInfo, batch: bool, offset: int) -> tuple[Any, ...]:
    pl = env.pl
    pl.offset_rand = lambda n: offset % n
    if not batch:
        pl.select_victims_batch = None  # type: ignore[assignment,method-assign]
    try:
        state = env.state_for(p)
        statuses = NodeToStatus()  # the Filter pass's verdicts, as the scheduler has them
        for ni in env.snapshot.node_infos:
            nominated = pl._nominated_pods(p, ni.name)
            fst = env.fw.run_filter_with_nominated_pods(state, p, ni, nominated)
            if not fst.is_success():
                statuses.set(ni.name, fst)
        result, st = pl.post_filter(state, p, statuses)
    finally:
        if not batch:
            del pl.select_victims_batch
    assert st is not None
    victims = None if result is None else [v.name for v in result.victims]
    return (result.nominated_node_name if result else None, victims, st.code, st.message())


@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_preemption_with_the_vector_dry_run_picks_what_the_per_node_one_picks(
    version: str,
) -> None:
    rng = random.Random(31 + int(version[-1]))
    outcomes: Counter[Code] = Counter()
    for _ in range(200):
        env, p, _pdbs = _case(rng, version)
        offset = rng.randrange(64)
        args = rng.choice(
            [None, {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 2}]
        )
        if args is not None:
            env.pl.args.min_candidate_nodes_percentage = 0
            env.pl.args.min_candidate_nodes_absolute = 2
        num = rng.randint(1, 4)
        assert _dry_run(env, p, True, offset, num) == _dry_run(env, p, False, offset, num)
        got = _preempt(env, p, True, offset)
        want = _preempt(env, p, False, offset)
        assert got == want
        outcomes[got[2]] += 1
    assert outcomes[Code.SUCCESS] > 20 and outcomes[Code.UNSCHEDULABLE] > 20, outcomes


def test_the_pod_table_follows_the_snapshot_between_dry_runs() -> None:
    """The plugin keeps its nodes x pods table across preemptors: rows the snapshot
    replaced since (a pod assumed, then forgotten) are read again, not reused."""
    rng = random.Random(5)
    checked = 0
    for _ in range(60):
        env, p, pdbs = _case(rng, "1.37")
        snap = env.snapshot
        assumed: list[PodInfo] = []
        for step in range(4):
            if step == 3:
                snap.forget_pod(assumed.pop())
            elif step:
                new = pod(f"new{step}", prio=rng.choice([0, 10]), req={"cpu": "300m"})
                snap.assume_pod(new, rng.choice(snap.node_infos).name)
                assumed.append(new)
            state = env.state_for(p)
            nodes = list(snap.node_infos)
            answers = env.pl.select_victims_batch(state, p, nodes, pdbs)
            if answers is None:
                continue
            for k, ni in enumerate(nodes):
                got = answers(k)
                if got is None:
                    continue
                want = env.pl.select_victims_in_place(state, p, ni, pdbs, worded=False)
                assert want is not None
                assert [id(v) for v in got[0]] == [id(v) for v in want[0]]
                assert got[1] == want[1]
                checked += 1
    assert checked > 500


def _upstream_scores(victims: dict[str, Any]) -> list[Any]:
    """Upstream's five default score functions of ``pickOneNodeForPreemption``."""
    from ksched.plugins.defaultpreemption.preemption import get_earliest_pod_start_time

    def earliest(node: str) -> float:
        t = get_earliest_pod_start_time(victims[node])
        return -float("inf") if t is None else t

    return [
        lambda node: -victims[node].num_pdb_violations,
        lambda node: -victims[node].pods[0].priority,
        lambda node: -sum(p.priority + 2**31 for p in victims[node].pods),
        lambda node: -len(victims[node].pods),
        earliest,
    ]


def test_default_node_pick_equals_upstreams_successive_tie_breaks() -> None:
    """``pick_one_node_for_preemption``'s default path (``_pick_by_default_scores``) picks the
    node upstream's five successive tie-breaking score functions pick."""
    from ksched.framework.interface import Victims
    from ksched.plugins.defaultpreemption.preemption import pick_one_node_for_preemption

    rng = random.Random(99)
    for case in range(400):
        victims: dict[str, Victims] = {}
        for n in range(rng.randint(1, 8)):
            pods = [
                pod(
                    f"c{case}n{n}v{j}",
                    prio=rng.choice([-5, 0, 10]),
                    start=None if rng.random() < 0.2 else epoch(rng.randint(0, 3)),
                )
                for j in range(rng.randint(1, 3))
            ]
            pods.sort(key=lambda q: -q.priority)
            victims[f"n{n}"] = Victims(pods, rng.randint(0, 1))

        upstream = _upstream_scores(victims)
        assert pick_one_node_for_preemption(victims) == pick_one_node_for_preemption(
            victims, upstream
        )
