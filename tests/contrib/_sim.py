"""Running ``ksched simulate`` in process with the discovered contrib plugins."""

from __future__ import annotations

from typing import Any

import anyio
import yaml

from ksched.config import load_config_data
from ksched.plugins import default_registry
from ksched.sim import Simulation, parse_cluster
from ksched.sim.simulator import PodResult

__all__ = ["config", "node", "pod", "podgroup", "provide_listers", "run"]

GANG_LABEL = "scheduling.x-k8s.io/pod-group"


def node(name: str, cpu: str = "4", memory: str = "8Gi", pods: int = 110) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": alloc, "capacity": alloc},
    }


def pod(
    name: str,
    cpu: str = "100m",
    *,
    group: str = "",
    scheduler: str = "ksched",
    priority: int | None = None,
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if group:
        meta["labels"] = {GANG_LABEL: group}
    s: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [
            {
                "name": "c",
                "image": "app:1",
                "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
            }
        ],
        **spec,
    }
    if priority is not None:
        s["priority"] = priority
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": s}


def podgroup(
    name: str,
    min_member: int,
    timeout: int | None = None,
    created: str | None = "2024-01-01T00:00:00Z",
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if created:
        meta["creationTimestamp"] = created
    s: dict[str, Any] = {"minMember": min_member, **spec}
    if timeout is not None:
        s["scheduleTimeoutSeconds"] = timeout
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": s,
    }


def config(plugins: dict[str, Any], plugin_config: list[dict[str, Any]] | None = None) -> Any:
    prof: dict[str, Any] = {"schedulerName": "ksched", "plugins": plugins}
    if plugin_config:
        prof["pluginConfig"] = plugin_config
    cfg, _ = load_config_data(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [prof],
        },
        "config",
        None,
    )
    return cfg


def provide_listers(sim: Simulation, pods: bool = True) -> None:
    """The listers Coscheduling reads, unless simulate provides them already: PodGroups by
    "namespace/name" (raw objects from the cluster file) and, with ``pods``, every pod of
    the cluster (without it the plugin counts a group's pods from the cache and queue)."""
    groups = {
        f"{(g.get('metadata') or {}).get('namespace') or 'default'}/"
        f"{(g.get('metadata') or {}).get('name')}": g
        for g in sim.cluster_file.others.get("PodGroup", [])
    }
    for fw in sim.sched.frameworks.values():
        fw.handle.listers.setdefault("podgroups", groups)
        if pods:
            fw.handle.listers.setdefault("pods", sim.cluster.pods)


def run(
    objs: list[dict[str, Any]],
    cfg: Any,
    seed: int = 0,
    explain: bool = False,
    pods_lister: bool = True,
) -> tuple[Simulation, dict[str, PodResult]]:
    cf = parse_cluster(yaml.safe_dump_all(objs), "scenario.yaml")
    sim = Simulation(cf, cfg, default_registry(), seed=seed, explain=explain)
    provide_listers(sim, pods_lister)
    results = anyio.run(sim.run)
    return sim, {r.name: r for r in results}
