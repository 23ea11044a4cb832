"""Pods with DRA resource claims while no DynamicResources plugin is enabled: they stay
pending with a message saying why, instead of being bound to a node that cannot start
them (their claims would never be allocated)."""

from __future__ import annotations

import yaml

from ksched.config import PluginRef, load_config_data
from ksched.framework.cycle_state import CycleState
from ksched.framework.interface import FilterPlugin
from ksched.framework.registry import default_registry
from ksched.framework.status import Status
from ksched.framework.types import NodeInfo, PodInfo
from ksched.scheduler.schedule_one import ERR_NO_DRA
from ksched.sim import parse_cluster, simulate
from tests.sim.test_scenarios import node, pod, run

CLAIMS = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]


def test_pod_with_resource_claims_stays_pending_and_says_why() -> None:
    res = run([node("n1"), pod("dra", resourceClaims=CLAIMS), pod("plain")])
    assert res["plain"].node == "n1"
    assert res["dra"].node is None and res["dra"].status == "Unschedulable"
    assert res["dra"].message == ERR_NO_DRA


class DynamicResources(FilterPlugin):
    """A stand-in for a DRA plugin someone ships: with one enabled, ksched lets it decide."""

    name = "DynamicResources"

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status | None:
        return None


def test_an_enabled_dynamic_resources_plugin_takes_over() -> None:
    # The config loader drops "DynamicResources" (ksched has none built in), so the
    # profile gets it after loading, as a distribution shipping one would need.
    reg = default_registry(entry_points=False)
    reg.register("DynamicResources", DynamicResources, "tests")
    raw = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    cfg, _ = load_config_data(raw, "config", None)
    cfg.profiles[0].plugins.filter.enabled.append(PluginRef("DynamicResources"))
    cf = parse_cluster(yaml.safe_dump_all([node("n1"), pod("dra", resourceClaims=CLAIMS)]), "f")
    [res] = simulate(cf, cfg, reg)
    assert (res.name, res.node) == ("dra", "n1")
