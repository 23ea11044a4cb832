"""NodeCost's tests: args, the two score forms, normalization, scores and placements through
ksched.testing's harness, the plugin inside the real daemon against ksched's test API
server, and discovery. They import only ``ksched`` and ``ksched.testing``.

Run them after installing the package: ``pip install -e '.[test]' && pytest``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from ksched import (
    APIClient,
    CycleState,
    PluginArgsError,
    Registry,
    SchedulerDaemon,
    Snapshot,
    default_registry,
    load_config,
    load_config_data,
)
from ksched.testing import (
    TestAPIServer,
    make_node,
    make_pod,
    node_info,
    pod_info,
    run_score,
    schedule,
)

from ksched_nodecost import DEFAULT_LABEL, NodeCost
from ksched_nodecost.plugin import UNKNOWN

HERE = Path(__file__).resolve().parent.parent
LABEL = DEFAULT_LABEL


def node(name: str, cost: str | None = None, cpu: str = "4") -> dict[str, Any]:
    return make_node(name, cpu=cpu, labels={} if cost is None else {LABEL: cost})


def pod(name: str = "p", cpu: str = "100m") -> dict[str, Any]:
    return make_pod(name, cpu=cpu, scheduler_name="ksched")


def config(args: dict[str, Any] | None = None, weight: int = 5) -> Any:
    profile: dict[str, Any] = {
        "schedulerName": "ksched",
        "plugins": {"score": {"enabled": [{"name": "NodeCost", "weight": weight}]}},
    }
    if args is not None:
        profile["pluginConfig"] = [{"name": "NodeCost", "args": args}]
    cfg, _ = load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "leaderElection": {"leaderElect": False},
            "profiles": [profile],
        }
    )
    return cfg


def registry() -> Registry:
    """The built-ins plus NodeCost, registered by hand: no installation needed."""
    reg = default_registry(entry_points=False)
    reg.register("NodeCost", NodeCost, "ksched-nodecost")
    return reg


# ---- args ------------------------------------------------------------------------------------


def test_default_args() -> None:
    args = NodeCost.Args.parse("NodeCost", {})
    assert args == NodeCost.Args(label=LABEL, missing_cost=None)
    assert NodeCost().label == LABEL and NodeCost().missing == UNKNOWN
    assert NodeCost({"missingCost": 0.5}).missing == 500


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"lable": "x"}, "args.lable: unknown field (known fields: label, missingCost)"),
        ({"label": ""}, "args.label: must be a non-empty string, got ''"),
        ({"label": "bad key!"}, "args.label: 'bad key!' is not a valid label key"),
        ({"label": "Example.com/cost"}, "args.label: 'Example.com/cost' is not a valid label key"),
        ({"missingCost": -1}, "args.missingCost: must be a non-negative number, got -1"),
        ({"missingCost": "1"}, "args.missingCost: must be a number or null, got '1'"),
        ({"missingCost": True}, "args.missingCost: must be a number or null, got True"),
    ],
)
def test_bad_args_name_the_field(data: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginArgsError) as e:
        NodeCost.Args.parse("NodeCost", data)
    assert str(e.value) == f"plugin NodeCost: {message}"


# ---- scores ----------------------------------------------------------------------------------

NODES = [
    node("a", "0.80"),
    node("b", "0.12"),
    node("c"),
    node("d", "free"),
    node("e", "0.12"),
    node("f", "-1"),
    node("g", "1e3"),
]


@pytest.mark.parametrize("missing", [None, 0.0, 2.5])
def test_batch_and_per_node_scores_agree(missing: float | None) -> None:
    plugin = NodeCost({} if missing is None else {"missingCost": missing})
    snap = Snapshot([node_info(n) for n in NODES])
    state, p = CycleState(), pod_info(pod())
    rows = np.arange(snap.n, dtype=np.int64)[::-1]  # any order, any subset
    batch = plugin.score_batch(state, p, snap, rows)
    single = [plugin.score(state, p, snap.node_infos[int(r)]) for r in rows]
    assert batch.tolist() == single
    unpriced = UNKNOWN if missing is None else round(missing * 1000)
    assert single[::-1] == [800, 120, unpriced, unpriced, 120, unpriced, 1_000_000]


def test_scores_in_the_framework_cheapest_best_unpriced_last() -> None:
    """Score then NormalizeScore, as the scheduler runs them (before the weight)."""
    assert run_score(NodeCost(), pod(), NODES) == {
        "a": 99,
        "b": 100,
        "c": 0,
        "d": 0,
        "e": 100,
        "f": 0,
        "g": 0,
    }
    assert run_score(NodeCost({"missingCost": 0.12}), pod(), NODES[:4]) == {
        "a": 0,
        "b": 100,
        "c": 100,
        "d": 100,
    }


def test_normalize_cheapest_best_unpriced_last() -> None:
    scores = np.array([800, 120, UNKNOWN, 450], dtype=np.int64)
    assert NodeCost().normalize_score(CycleState(), pod_info(pod()), scores) is None
    assert scores.tolist() == [0, 100, 0, 51]
    same = np.array([300, 300, UNKNOWN], dtype=np.int64)
    NodeCost().normalize_score(CycleState(), pod_info(pod()), same)
    assert same.tolist() == [100, 100, 0]
    none = np.array([UNKNOWN, UNKNOWN], dtype=np.int64)
    NodeCost().normalize_score(CycleState(), pod_info(pod()), none)
    assert none.tolist() == [0, 0]


# ---- in the scheduler ------------------------------------------------------------------------


def test_scheduled_to_cheap_nodes_that_fit() -> None:
    """One scheduling cycle with the default plugins plus NodeCost (weight 5)."""
    nodes = [node("pricey", "0.90"), node("cheap", "0.10", cpu="1"), node("mid", "0.40")]
    assert schedule(config(), pod("small", "500m"), nodes, plugins=[NodeCost]).node == "cheap"
    assert schedule(config(), pod("big", "2"), nodes, plugins=[NodeCost]).node == "mid"
    _, why = schedule(config(), pod("huge", "8"), nodes, plugins=[NodeCost])
    assert why.startswith("0/3 nodes are available: 3 Insufficient cpu.")


def test_the_daemon_binds_to_the_cheapest_node() -> None:
    """The same plugin in the real daemon, against ksched's test API server over HTTP."""

    async def run() -> str:
        async with TestAPIServer() as srv:
            for name, cost in (("n-pricey", "0.9"), ("n-cheap", "0.1"), ("n-unpriced", None)):
                n = make_node(name)
                if cost is not None:
                    n["metadata"].setdefault("labels", {})[LABEL] = cost
                srv.create(n)
            srv.create(make_pod("web", cpu="100m", scheduler_name="ksched"))
            client = await APIClient.for_master(srv.url, qps=0)
            try:
                async with SchedulerDaemon(
                    config(), registry=registry(), client=client, port=0
                ) as d:
                    await d.wait_ready(15)
                    with anyio.fail_after(15):
                        while not (
                            bound := srv.get("pods", "default", "web")["spec"].get("nodeName")
                        ):
                            await anyio.sleep(0.02)
            finally:
                await client.close()
            return str(bound)

    assert anyio.run(run) == "n-cheap"


# ---- installed: discovered through the entry point -------------------------------------------


def test_installed_plugin_is_discovered_with_its_distribution() -> None:
    spec = default_registry().get("NodeCost")
    if spec is None:
        pytest.skip("ksched-nodecost is not installed (pip install -e .)")
    assert (spec.cls, spec.distribution, spec.points) == (NodeCost, "ksched-nodecost", ["score"])
    cfg, _ = load_config(str(HERE / "examples" / "config.yaml"), default_registry().names())
    assert [r.name for r in cfg.profiles[0].plugins.score.enabled] == ["NodeCost"]
