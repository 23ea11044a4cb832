"""Seeded random clusters and pending pods covering the default plugins' inputs.

A ``Scenario`` is plain Kubernetes JSON: the objects that exist before the first pending
pod (in creation order) and the pending pods, each tagged with the feature groups that
shaped it so a divergence can be counted against them. The same seed always gives the
same scenario.

Feature groups are functions registered in ``FEATURES``: ``setup`` adds cluster objects
(nodes' taints, PersistentVolumes, PriorityClasses...), ``decorate`` may change a pending
pod and answers whether it did. A new group is one more entry; nothing else here needs
to change.

Objects are built so that kube-apiserver accepts them (the replay still dry-runs each pod
and uses the defaulted object): extended resources carry equal limits, hostPort pods never
use the host network, minDomains only comes with DoNotSchedule.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ...features import BINARY_VERSION
from ...features.versions import minor_key
from ...framework.types import HostPortInfo
from .driver import FAILING_PREFIX
from .gates import draw_gates

__all__ = [
    "APISERVER_ARGS",
    "FEATURES",
    "GANG_GATES",
    "Feature",
    "GangBatch",
    "PendingPod",
    "Scenario",
    "apiserver_args",
    "default_features",
    "generate",
    "parse_features",
    "parse_seeds",
]

JSON = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
RACK = "example.com/rack"
GPU = "example.com/gpu"
IMAGES = [
    ("registry.example.com/web:1.0", 310 * 1024 * 1024),
    ("registry.example.com/db:2.3", 820 * 1024 * 1024),
    ("registry.example.com/cache:7", 45 * 1024 * 1024),
    ("registry.example.com/tools:latest", 1500 * 1024 * 1024),
    ("registry.example.com/tiny:1", 5 * 1024 * 1024),
]
APPS = ["web", "db", "cache", "batch"]


@dataclass
class PendingPod:
    """``batch``: the key (``namespace/name``) of the PodGroup the pod is a member of
    (``Scenario.batches``), empty for a pod scheduled alone."""

    pod: JSON
    groups: set[str] = field(default_factory=set)
    batch: str = ""
    # Objects created just before the pod, while the scheduler runs (the ``images``
    # group's new nodes: a node kube-scheduler cloned earlier keeps its image counts).
    before: list[JSON] = field(default_factory=list)
    # The ``schedgates`` group's step: the scheduling gates one pod update removes once
    # the pod was seen gated; gates not named here stay (the pod is never scheduled).
    ungate: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.pod["metadata"]["namespace"])


@dataclass
class GangBatch:
    """A PodGroup and how its members arrive, the ``gang`` group's unit of replay (its
    members are consecutive in ``Scenario.pending``). ``timing``: ``first`` (the PodGroup,
    then every member at once), ``late`` (the members, then the PodGroup: held at
    PreEnqueue until it appears, they are released together) or ``spread`` (the
    PodGroup, then one member every ``SPREAD_GAP`` seconds). ``late`` only for a group
    of one (``_gang``: kube-scheduler may start a cycle with part of a group whose
    members came before its PodGroup)."""

    pod_group: JSON
    timing: str
    members: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.pod_group["metadata"]["name"])

    @property
    def namespace(self) -> str:
        return str(self.pod_group["metadata"]["namespace"])


@dataclass
class Scenario:
    """``objects`` are created in order (cluster-scoped and namespaced alike); ``pending``
    are then created one at a time. References to another object's uid are written
    ``{"$uid": "Kind/namespace/name"}`` and filled in by whoever creates them."""

    seed: int
    features: tuple[str, ...]
    objects: list[JSON] = field(default_factory=list)
    pending: list[PendingPod] = field(default_factory=list)
    # Namespaces the scenario uses but does not create (and so never deletes), and the
    # prefix of its cluster-scoped objects' names (None: "s<seed>-"; "": all of them).
    existing_namespaces: tuple[str, ...] = ()
    prefix: str | None = None
    # ``--feature-gates`` values both schedulers run this scenario with (the ``gates``
    # group's draw and what groups need, such as ``gang``'s), beside the run's own.
    gates: tuple[str, ...] = ()
    # The ``gang`` group's PodGroups by ``namespace/name`` (``PendingPod.batch``).
    batches: dict[str, GangBatch] = field(default_factory=dict)

    @property
    def namespaces(self) -> list[str]:
        """Every namespace the scenario's objects live in."""
        own = [o["metadata"]["name"] for o in self.objects if o["kind"] == "Namespace"]
        return [*self.existing_namespaces, *own]

    @property
    def own_namespaces(self) -> list[str]:
        """The namespaces the scenario creates (and deletes after)."""
        return [o["metadata"]["name"] for o in self.objects if o["kind"] == "Namespace"]

    @property
    def name_prefix(self) -> str:
        return f"s{self.seed}-" if self.prefix is None else self.prefix

    @property
    def node_names(self) -> list[str]:
        return [o["metadata"]["name"] for o in self.objects if o["kind"] == "Node"]


class _Ctx:
    """What the feature functions share while one scenario is built."""

    def __init__(
        self,
        seed: int,
        rng: random.Random,
        features: tuple[str, ...],
        emulated_version: str = BINARY_VERSION,
        fixed_gates: tuple[str, ...] = (),
    ) -> None:
        self.seed = seed
        self.rng = rng
        self.features = features
        self.emulated_version = emulated_version  # the version both schedulers behave as
        self.fixed_gates = fixed_gates  # the run's own --feature-gates values
        self.gates: list[str] = []  # the ``gates`` group's draw
        self.prefix = f"s{seed}"
        self.namespaces = [f"d{seed}-a", f"d{seed}-b"]
        self.nodes: list[JSON] = []
        self.objects: list[JSON] = []  # besides namespaces and nodes, in creation order
        self.running: list[JSON] = []
        self.zones = [f"{self.prefix}-z{i}" for i in range(rng.randint(1, 3))]
        self.priority_classes: list[tuple[str, int]] = []
        self.claims: dict[str, list[str]] = {}  # namespace -> PVC names pods may use
        self.csi_claims: dict[str, list[str]] = {}  # namespace -> claims bound to CSI PVs
        self.dra_templates: dict[str, list[str]] = {}  # namespace -> ResourceClaimTemplates
        self.dra_claims: dict[str, list[str]] = {}  # namespace -> shared ResourceClaims
        self.nic_templates: dict[str, list[str]] = {}  # the "dradevices" group's
        self.nic_claims: dict[str, list[str]] = {}
        # the "drabinding" group's claims, and its own random source
        self.bind_templates: dict[str, list[str]] = {}
        self.bind_claims: dict[str, list[str]] = {}
        self.bind_rng = random.Random(f"drabinding-{seed}")
        # the "gang" group's own random source and PodGroups (by the first member's key)
        self.gang_rng = random.Random(f"gang-{seed}")
        self.gang_batches: dict[str, GangBatch] = {}
        # the "schedgates" group's own random source, and each gated pod's ungate step
        self.gates_rng = random.Random(f"schedgates-{seed}")
        self.ungate: dict[str, tuple[str, ...]] = {}
        # Labels feature groups add to the scenario's namespaces.
        self.namespace_labels: dict[str, dict[str, str]] = {}
        self.counter = 0

    def name(self, base: str) -> str:
        self.counter += 1
        return f"{base}-{self.counter}"

    def add(self, obj: JSON) -> JSON:
        self.objects.append(obj)
        return obj


@dataclass(frozen=True)
class Feature:
    """A feature group: cluster objects it needs and what it does to a pending pod."""

    name: str
    setup: Callable[[_Ctx], None]
    decorate: Callable[[_Ctx, JSON], bool]
    # the chance that a pending pod gets this group's treatment (1: every pod, and the
    # seed's random draws stay those of the other groups)
    weight: float = 0.5
    # the first emulated version that has the group's inputs ("": every version)
    since: str = ""
    # in the default set ("all groups"); an opt-in group is run when named
    default: bool = True
    # ``--feature-gates`` values both schedulers (and the API server) need for the inputs
    gates: tuple[str, ...] = ()
    # rewrites the pending pods once all are decorated (adds a group's other members)
    finish: Callable[[_Ctx, list[PendingPod]], list[PendingPod]] | None = None

    def offered(self, emulated_version: str) -> bool:
        """Whether a replay at ``emulated_version`` ("1.36") may run the group."""
        return not self.since or minor_key(emulated_version) >= minor_key(self.since)


# -- the base cluster ----------------------------------------------------------------------------


def _node(ctx: _Ctx, i: int) -> JSON:
    rng = ctx.rng
    name = f"{ctx.prefix}-n{i}"
    cpu = rng.choice(["1", "2", "4", "3500m", "8"])
    mem = rng.choice(["2Gi", "4Gi", "8Gi", "16Gi"])
    alloc: JSON = {
        "cpu": cpu,
        "memory": mem,
        "pods": str(rng.choice([4, 8, 20, 110])),
        "ephemeral-storage": rng.choice(["10Gi", "50Gi"]),
    }
    labels = {HOST: name, ZONE: rng.choice(ctx.zones), RACK: f"r{rng.randint(0, 2)}"}
    if rng.random() < 0.3:
        labels["disk"] = rng.choice(["ssd", "hdd"])
    if rng.random() < 0.3:
        labels["tier"] = str(rng.randint(1, 5))
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "capacity": dict(alloc),
            "allocatable": alloc,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _container(ctx: _Ctx, name: str, *, big: bool = False) -> JSON:
    rng = ctx.rng
    c: JSON = {"name": name, "image": rng.choice(IMAGES)[0]}
    r = rng.random()
    if r < 0.15:
        return c  # zero requests: the scorers' non-zero defaults
    req: JSON = {
        "cpu": rng.choice(["50m", "100m", "250m", "500m", "1"] + (["2", "3"] if big else []))
    }
    if rng.random() < 0.8:
        req["memory"] = rng.choice(
            ["64Mi", "256Mi", "512Mi", "1Gi"] + (["3Gi", "6Gi"] if big else [])
        )
    if rng.random() < 0.1:
        req["ephemeral-storage"] = rng.choice(["1Gi", "20Gi"])
    c["resources"] = {"requests": req}
    return c


def _pod(ctx: _Ctx, name: str, namespace: str, *, big: bool = False) -> JSON:
    rng = ctx.rng
    app = rng.choice(APPS)
    containers = [_container(ctx, "c0", big=big)]
    if rng.random() < 0.2:
        containers.append(_container(ctx, "c1"))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": app, "track": rng.choice(["stable", "canary"])},
        },
        # The default grace period: a bound pod deleted (a preemption victim) stays
        # Terminating until PodReaper, playing its kubelet, finishes it a moment later. With
        # 0 it vanished at once, and its deletion could reach kube-scheduler before its
        # preemption goroutine had registered the last victim: the preemptor, held at
        # PreEnqueue, then missed the event that would have requeued it (docs/fidelity.md).
        "spec": {"containers": containers},
    }


def _running_pods(ctx: _Ctx) -> None:
    rng = ctx.rng
    for node in ctx.nodes:
        for _ in range(rng.randint(0, 3)):
            pod = _pod(ctx, ctx.name("run"), rng.choice(ctx.namespaces))
            pod["spec"]["nodeName"] = node["metadata"]["name"]
            ctx.running.append(pod)


# -- feature groups ------------------------------------------------------------------------------


def _no_setup(ctx: _Ctx) -> None:
    return None


def _resources_setup(ctx: _Ctx) -> None:
    rng = ctx.rng
    for node in ctx.nodes:
        if rng.random() < 0.3:
            n = str(rng.choice([1, 2, 4]))
            node["status"]["allocatable"][GPU] = n
            node["status"]["capacity"][GPU] = n
    ctx.add(
        {
            "apiVersion": "node.k8s.io/v1",
            "kind": "RuntimeClass",
            "metadata": {"name": f"{ctx.prefix}-kata"},
            "handler": "kata",
            "overhead": {"podFixed": {"cpu": "250m", "memory": "160Mi"}},
        }
    )


def _resources(ctx: _Ctx, pod: JSON) -> bool:
    rng = ctx.rng
    spec = pod["spec"]
    kind = rng.choice(["big", "init", "sidecar", "podlevel", "overhead", "gpu", "zero"])
    if kind == "big":
        spec["containers"][0] = _container(ctx, "c0", big=True)
    elif kind == "init":
        spec["initContainers"] = [_container(ctx, "init0", big=True)]
    elif kind == "sidecar":
        side = _container(ctx, "side0")
        side["restartPolicy"] = "Always"
        spec["initContainers"] = [side, _container(ctx, "init1")]
    elif kind == "podlevel":
        cpu = rng.choice(["500m", "1", "2"])
        mem = rng.choice(["512Mi", "1Gi", "2Gi"])
        spec["resources"] = {
            "requests": {"cpu": cpu, "memory": mem},
            "limits": {"cpu": cpu, "memory": mem},
        }
        for c in spec["containers"]:
            c.pop("resources", None)
    elif kind == "overhead":
        spec["runtimeClassName"] = f"{ctx.prefix}-kata"
    elif kind == "gpu":
        n = str(rng.choice([1, 2, 3]))
        res = spec["containers"][0].setdefault("resources", {})
        res.setdefault("requests", {})[GPU] = n
        res.setdefault("limits", {})[GPU] = n
    else:
        for c in spec["containers"]:
            c.pop("resources", None)
    return True


def _unschedulable_setup(ctx: _Ctx) -> None:
    for node in ctx.nodes:
        if ctx.rng.random() < 0.2:
            node["spec"]["unschedulable"] = True


def _unschedulable(ctx: _Ctx, pod: JSON) -> bool:
    pod["spec"].setdefault("tolerations", []).append(
        {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    )
    return True


def _ports_setup(ctx: _Ctx) -> None:
    """Running pods' host ports, none conflicting on a node: a kubelet would refuse the
    second pod, and two holders of one port leave kube-scheduler's cache (a set per node,
    ``HostPortInfo``) with the port free once either goes, which no snapshot shows. The
    port is drawn either way, so the seeds' other draws stay as they were."""
    used: dict[str, HostPortInfo] = {}
    for pod in ctx.running:
        if ctx.rng.random() < 0.3:
            port = _draw_port(ctx)
            ports = used.setdefault(pod["spec"]["nodeName"], HostPortInfo())
            ip, protocol = port.get("hostIP", ""), port.get("protocol", "TCP")
            if ports.check_conflict(ip, protocol, port["hostPort"]):
                continue
            ports.add(ip, protocol, port["hostPort"])
            pod["spec"]["containers"][0]["ports"] = [port]


def _draw_port(ctx: _Ctx) -> JSON:
    rng = ctx.rng
    port: JSON = {"containerPort": 8080, "hostPort": rng.choice([80, 443, 8080])}
    if rng.random() < 0.3:
        port["protocol"] = "UDP"
    if rng.random() < 0.2:
        port["hostIP"] = "127.0.0.1"
    return port


def _ports(ctx: _Ctx, pod: JSON) -> bool:
    pod["spec"]["containers"][0]["ports"] = [_draw_port(ctx)]
    return True


def _expr(ctx: _Ctx) -> JSON:
    rng = ctx.rng
    key, values = rng.choice(
        [(ZONE, ctx.zones), ("disk", ["ssd", "hdd"]), (RACK, ["r0", "r1", "r2"]), ("tier", None)]
    )
    if values is None:
        return {
            "key": key,
            "operator": rng.choice(["Gt", "Lt"]),
            "values": [str(rng.randint(1, 5))],
        }
    op = rng.choice(["In", "In", "NotIn", "Exists", "DoesNotExist"])
    if op in ("Exists", "DoesNotExist"):
        return {"key": key, "operator": op}
    return {"key": key, "operator": op, "values": rng.sample(values, rng.randint(1, len(values)))}


def _term(ctx: _Ctx) -> JSON:
    rng = ctx.rng
    if rng.random() < 0.15:
        node = rng.choice(ctx.nodes)["metadata"]["name"]
        return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {"matchExpressions": [_expr(ctx) for _ in range(rng.randint(1, 2))]}


def _nodeaffinity(ctx: _Ctx, pod: JSON) -> bool:
    rng = ctx.rng
    spec = pod["spec"]
    if rng.random() < 0.3:
        spec["nodeSelector"] = {ZONE: rng.choice(ctx.zones)}
    aff: JSON = {}
    if rng.random() < 0.6:
        aff["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [_term(ctx) for _ in range(rng.randint(1, 2))]
        }
    if rng.random() < 0.6:
        aff["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": {"matchExpressions": [_expr(ctx)]}}
            for _ in range(rng.randint(1, 3))
        ]
    if aff:
        spec.setdefault("affinity", {})["nodeAffinity"] = aff
    return bool(aff) or "nodeSelector" in spec


# unique keys: a node's taints must be unique by key and effect
TAINTS = [("dedicated", "infra"), ("gpu", "true"), ("spot", "true"), ("maint", "")]


def _taints_setup(ctx: _Ctx) -> None:
    rng = ctx.rng
    for node in ctx.nodes:
        if rng.random() < 0.4:
            taints = []
            for key, value in rng.sample(TAINTS, rng.randint(1, 2)):
                t: JSON = {
                    "key": key,
                    "effect": rng.choice(["NoSchedule", "PreferNoSchedule", "NoExecute"]),
                }
                if value:
                    t["value"] = value
                taints.append(t)
            node["spec"]["taints"] = taints


def _taints(ctx: _Ctx, pod: JSON) -> bool:
    rng = ctx.rng
    tols = pod["spec"].setdefault("tolerations", [])
    for key, value in rng.sample(TAINTS, rng.randint(1, 3)):
        t: JSON = {"key": key}
        if value and rng.random() < 0.7:
            t["operator"] = "Equal"
            t["value"] = value
        else:
            t["operator"] = "Exists"
        if rng.random() < 0.6:
            t["effect"] = rng.choice(["NoSchedule", "PreferNoSchedule", "NoExecute"])
        tols.append(t)
    return True


def _images_setup(ctx: _Ctx) -> None:
    rng = ctx.rng
    for node in ctx.nodes:
        have = rng.sample(IMAGES, rng.randint(0, 3))
        if have:
            node["status"]["images"] = [{"names": [n], "sizeBytes": s} for n, s in have]


def _images(ctx: _Ctx, pod: JSON) -> bool:
    rng = ctx.rng
    for c in pod["spec"]["containers"]:
        c["image"] = rng.choice(IMAGES)[0]
    if rng.random() < 0.4:
        # an image volume: ImageLocality does not count it (only containers' images)
        image = rng.choice(IMAGES)[0]
        pod["spec"]["volumes"] = [{"name": "data", "image": {"reference": image}}]
    return True


def _images_late_nodes(ctx: _Ctx, pending: list[PendingPod]) -> list[PendingPod]:
    """Nodes that join while pods are scheduled, listing images the others list too:
    upstream's snapshot gives a node the image counts of its last clone (a node that did
    not change since keeps the counts of before), and ImageLocality scores by them. Each
    is a copy of a node of the scenario (its taints, labels) with images of its own; from
    a random source of its own, so the seed's other draws stay as they were."""
    rng = random.Random(f"images-{ctx.seed}")
    if not ctx.nodes:
        return pending
    added = 0
    for pp in pending[1:]:
        if pp.batch or "images" not in pp.groups or rng.random() >= 0.4:
            continue
        node = copy.deepcopy(rng.choice(ctx.nodes))
        name = f"{ctx.prefix}-late{added}"
        added += 1
        node["metadata"]["name"] = name
        node["metadata"]["labels"][HOST] = name
        have = rng.sample(IMAGES, rng.randint(1, 3))
        node["status"]["images"] = [{"names": [n], "sizeBytes": sz} for n, sz in have]
        pp.before.append(node)
    return pending


def _selector(ctx: _Ctx) -> JSON:
    rng = ctx.rng
    if rng.random() < 0.7:
        return {"matchLabels": {"app": rng.choice(APPS)}}
    return {
        "matchExpressions": [
            {"key": "app", "operator": rng.choice(["In", "NotIn"]), "values": rng.sample(APPS, 2)}
        ]
    }


def _spread_setup(ctx: _Ctx) -> None:
    """Services and ReplicaSets give system-default spreading its selectors."""
    rng = ctx.rng
    for ns in ctx.namespaces:
        app = rng.choice(APPS)
        ctx.add(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": f"svc-{app}", "namespace": ns},
                "spec": {"selector": {"app": app}, "ports": [{"port": 80}]},
            }
        )
        ctx.add(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": "rs-web", "namespace": ns},
                "spec": {
                    "replicas": 0,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {"containers": [{"name": "c", "image": "web"}]},
                    },
                },
            }
        )
    for pod in ctx.running:
        _maybe_owned(ctx, pod)


def _maybe_owned(ctx: _Ctx, pod: JSON) -> None:
    meta = pod["metadata"]
    if meta["labels"].get("app") == "web" and ctx.rng.random() < 0.7:
        ns = meta["namespace"]
        meta["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "rs-web",
                "uid": {"$uid": f"ReplicaSet/{ns}/rs-web"},
                "controller": True,
            }
        ]


def _spread(ctx: _Ctx, pod: JSON) -> bool:
    rng = ctx.rng
    _maybe_owned(ctx, pod)
    if rng.random() < 0.25:
        return "ownerReferences" in pod["metadata"]  # the system defaults only
    constraints = []
    for key in rng.sample([ZONE, HOST, RACK], rng.randint(1, 2)):
        c: JSON = {
            "maxSkew": rng.randint(1, 3),
            "topologyKey": key,
            "whenUnsatisfiable": rng.choice(["DoNotSchedule", "ScheduleAnyway"]),
            "labelSelector": _selector(ctx),
        }
        if c["whenUnsatisfiable"] == "DoNotSchedule" and rng.random() < 0.5:
            # more domains than exist too: the global minimum is then 0
            c["minDomains"] = rng.randint(1, 6)
        if rng.random() < 0.3:
            c["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.3:
            c["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
        if rng.random() < 0.3:
            c["matchLabelKeys"] = ["track"]
        constraints.append(c)
    pod["spec"]["topologySpreadConstraints"] = constraints
    return True


def _interpod_setup(ctx: _Ctx) -> None:
    """Some running pods repel others (existing pods' required anti-affinity)."""
    for pod in ctx.running:
        if ctx.rng.random() < 0.15:
            pod["spec"]["affinity"] = {"podAntiAffinity": _pod_affinity(ctx, required=True)}


def _affinity_term(ctx: _Ctx) -> JSON:
    rng = ctx.rng
    term: JSON = {
        "labelSelector": _selector(ctx),
        "topologyKey": rng.choice([ZONE, HOST, RACK]),
    }
    r = rng.random()
    if r < 0.2:
        term["namespaces"] = rng.sample(ctx.namespaces, rng.randint(1, 2))
    elif r < 0.4:
        term["namespaceSelector"] = {"matchLabels": {"team": f"{ctx.prefix}-blue"}}
    elif r < 0.5:
        term["namespaceSelector"] = {}
    if rng.random() < 0.15:
        term["matchLabelKeys"] = ["track"]
    return term


def _pod_affinity(ctx: _Ctx, *, required: bool | None = None) -> JSON:
    rng = ctx.rng
    out: JSON = {}
    if required is True or (required is None and rng.random() < 0.5):
        out["requiredDuringSchedulingIgnoredDuringExecution"] = [_affinity_term(ctx)]
    if required is False or (required is None and rng.random() < 0.6) or not out:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "podAffinityTerm": _affinity_term(ctx)}
            for _ in range(rng.randint(1, 2))
        ]
    return out


def _interpod(ctx: _Ctx, pod: JSON) -> bool:
    rng = ctx.rng
    aff = pod["spec"].setdefault("affinity", {})
    which = rng.choice(["podAffinity", "podAntiAffinity", "both"])
    if which in ("podAffinity", "both"):
        aff["podAffinity"] = _pod_affinity(ctx)
    if which in ("podAntiAffinity", "both"):
        aff["podAntiAffinity"] = _pod_affinity(ctx)
    return True


def _volumes_setup(ctx: _Ctx) -> None:
    """StorageClasses of both binding modes; local PVs pinned to nodes, zonal PVs, claims
    bound, pending and missing."""
    rng = ctx.rng
    p = ctx.prefix
    ctx.add(_sc(f"{p}-wffc", "WaitForFirstConsumer"))
    ctx.add(_sc(f"{p}-now", "Immediate"))
    for ns in ctx.namespaces:
        claims = ctx.claims.setdefault(ns, [])
        for i in range(rng.randint(1, 3)):
            node = rng.choice(ctx.nodes)
            pv_name = f"{p}-pv-{ns}-{i}"
            claim = f"data-{i}"
            pv: JSON = {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv_name},
                "spec": {
                    "capacity": {"storage": "10Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": f"{p}-wffc",
                    "persistentVolumeReclaimPolicy": "Retain",
                },
            }
            if rng.random() < 0.5:
                pv["spec"]["local"] = {"path": "/mnt/disk"}
                pv["spec"]["nodeAffinity"] = {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": HOST,
                                        "operator": "In",
                                        "values": [node["metadata"]["name"]],
                                    }
                                ]
                            }
                        ]
                    }
                }
            else:
                zone = rng.choice(ctx.zones)
                pv["metadata"]["labels"] = {ZONE: zone}
                pv["spec"]["hostPath"] = {"path": f"/tmp/{pv_name}"}
            bound = rng.random() < 0.5
            if bound:
                pv["spec"]["claimRef"] = {"namespace": ns, "name": claim}
            ctx.add(pv)
            pvc: JSON = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim, "namespace": ns},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": f"{p}-wffc",
                },
            }
            if bound:
                pvc["spec"]["volumeName"] = pv_name
            ctx.add(pvc)
            claims.append(claim)
        # an Immediate claim nothing can satisfy: "unbound immediate PersistentVolumeClaims"
        ctx.add(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "immediate", "namespace": ns},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": f"{p}-now",
                },
            }
        )
        claims.append("immediate")
    _storage_capacity_setup(ctx)


def _sc(name: str, mode: str) -> JSON:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": mode,
    }


def _volumes(ctx: _Ctx, pod: JSON) -> bool:
    rng = ctx.rng
    ns = pod["metadata"]["namespace"]
    choices = [*ctx.claims.get(ns, []), "missing"]
    claim = rng.choice(choices)
    pod["spec"].setdefault("volumes", []).append(
        {"name": "claim", "persistentVolumeClaim": {"claimName": claim}}
    )
    return True


def _preemption_setup(ctx: _Ctx) -> None:
    rng = ctx.rng
    for name, value, policy in (
        (f"{ctx.prefix}-low", 10, "PreemptLowerPriority"),
        (f"{ctx.prefix}-high", 1000, "PreemptLowerPriority"),
        (f"{ctx.prefix}-never", 1000, "Never"),  # a pod may not name another policy
    ):
        ctx.add(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "preemptionPolicy": policy,
            }
        )
        ctx.priority_classes.append((name, value))
    for pod in ctx.running:
        if rng.random() < 0.5:
            pod["spec"]["priorityClassName"] = f"{ctx.prefix}-low"
    ns = rng.choice(ctx.namespaces)
    ctx.add(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "pdb-db", "namespace": ns},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
        }
    )


def _preemption(ctx: _Ctx, pod: JSON) -> bool:
    pod["spec"]["priorityClassName"] = ctx.rng.choice(
        [f"{ctx.prefix}-high", f"{ctx.prefix}-high", f"{ctx.prefix}-low", f"{ctx.prefix}-never"]
    )
    return True


# -- DRA -----------------------------------------------------------------------------------------

GPU_DRIVER = "gpu.example.com"
_MODELS = ["a100", "t4", "l4"]
_CEL_SELECTORS = [
    f'device.attributes["{GPU_DRIVER}"].model == "a100"',
    f'device.attributes["{GPU_DRIVER}"].model != "t4"',
    f'device.capacity["{GPU_DRIVER}"].memory.compareTo(quantity("20Gi")) >= 0',
    f'device.attributes["{GPU_DRIVER}"].index < 2',
    f'"{GPU_DRIVER}" in device.attributes && device.attributes["{GPU_DRIVER}"].numa == 0',
]


# Selectors that fail on some devices or all (CEL runtime errors: the pod's Filter is an
# error naming the claim and selector, in cel-go's words) or that celpy alone would fail
# (a string compared with a number is false in cel-go, numbers compare across types).
_ATTR = f'device.attributes["{GPU_DRIVER}"]'
_CEL_ERRORS = [
    f"{_ATTR}.nvlink == true",  # no such key: nvlink
    'device.attributes["other.example.com"].model == "a100"',  # an empty map: no such key
    f"{_ATTR}.index % {_ATTR}.numa == 0",  # modulus by zero where numa is 0
    f"{_ATTR}.index / ({_ATTR}.index - 1) >= 0",  # division by zero on gpu-1
    f"{_ATTR}.index + 9223372036854775807 > 0",  # integer overflow but on gpu-0
    f"{_ATTR}.model > 1",  # no such overload
    f"{_ATTR}.fast + 1 == 2",  # no such overload: _+_
    f"{_ATTR}.model == 1 || {_ATTR}.index < 2.5",  # no error in cel-go
]


def _selectors(ctx: _Ctx, k: int) -> list[JSON]:
    """``k`` CEL selectors; now and then one that fails at runtime (``_CEL_ERRORS``)."""
    rng = ctx.rng
    exprs = rng.sample(_CEL_SELECTORS, k)
    if rng.random() < 0.15:
        exprs[rng.randrange(k)] = rng.choice(_CEL_ERRORS)
    return [{"cel": {"expression": e}} for e in exprs]


def _dra_class(ctx: _Ctx, suffix: str) -> str:
    return f"{ctx.prefix}-{suffix}.{GPU_DRIVER}"


def _resource(kind: str, name: str, spec: JSON, namespace: str | None = None) -> JSON:
    """A resource.k8s.io/v1 object."""
    meta: JSON = {"name": name} if namespace is None else {"name": name, "namespace": namespace}
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": meta, "spec": spec}


def _dra_setup(ctx: _Ctx) -> None:
    """Two DeviceClasses (any GPU; only big ones), a ResourceSlice per GPU node with
    attributes and capacity, claim templates of every request form and shared claims that
    the first pod to use them allocates."""
    rng = ctx.rng
    any_gpu = {"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}
    for suffix, selectors in (
        ("gpu", [any_gpu]),
        ("big", [any_gpu, {"cel": {"expression": _CEL_SELECTORS[2]}}]),
    ):
        ctx.add(_resource("DeviceClass", _dra_class(ctx, suffix), {"selectors": selectors}))
    for node in ctx.nodes:
        if rng.random() < 0.4:
            continue
        name = node["metadata"]["name"]
        devices = [
            {
                "name": f"gpu-{i}",
                "attributes": {
                    "model": {"string": rng.choice(_MODELS)},
                    "index": {"int": i},
                    "numa": {"int": rng.randint(0, 1)},
                    "fast": {"bool": rng.random() < 0.5},
                },
                "capacity": {"memory": {"value": rng.choice(["16Gi", "40Gi", "80Gi"])}},
            }
            for i in range(rng.randint(1, 4))
        ]
        pool = {"name": name, "generation": 1, "resourceSliceCount": 1}
        spec = {"driver": GPU_DRIVER, "nodeName": name, "pool": pool, "devices": devices}
        ctx.add(_resource("ResourceSlice", f"{name}-gpus", spec))
    for ns in ctx.namespaces:
        templates = ctx.dra_templates.setdefault(ns, [])
        for i in range(rng.randint(2, 4)):
            spec = {"spec": {"devices": _device_claim(ctx)}}
            ctx.add(_resource("ResourceClaimTemplate", f"gpu-{i}", spec, ns))
            templates.append(f"gpu-{i}")
        shared = ctx.dra_claims.setdefault(ns, [])
        for i in range(rng.randint(0, 2)):
            ctx.add(_resource("ResourceClaim", f"shared-{i}", {"devices": _device_claim(ctx)}, ns))
            shared.append(f"shared-{i}")


def _device_request(ctx: _Ctx, name: str) -> JSON:
    """ExactCount or All with CEL selectors, or a firstAvailable list of sub-requests."""
    rng = ctx.rng
    if rng.random() < 0.25:
        subs = []
        for j, cls in enumerate(rng.sample(["gpu", "big"], 2)):
            sub: JSON = {
                "name": f"alt{j}",
                "deviceClassName": _dra_class(ctx, cls),
                "count": rng.randint(1, 2),
            }
            if rng.random() < 0.4:
                sub["selectors"] = _selectors(ctx, 1)
            subs.append(sub)
        return {"name": name, "firstAvailable": subs}
    exactly: JSON = {"deviceClassName": _dra_class(ctx, rng.choice(["gpu", "gpu", "big"]))}
    if rng.random() < 0.15:
        exactly["allocationMode"] = "All"
    else:
        exactly["allocationMode"] = "ExactCount"
        exactly["count"] = rng.choice([1, 1, 1, 2, 3])
    if rng.random() < 0.5:
        exactly["selectors"] = _selectors(ctx, rng.randint(1, 2))
    return {"name": name, "exactly": exactly}


def _device_claim(ctx: _Ctx) -> JSON:
    rng = ctx.rng
    requests = [_device_request(ctx, f"r{i}") for i in range(rng.choice([1, 1, 2]))]
    claim: JSON = {"requests": requests}
    if rng.random() < 0.4:
        constraint: JSON = {"matchAttribute": f"{GPU_DRIVER}/{rng.choice(['numa', 'model'])}"}
        if len(requests) > 1 and rng.random() < 0.5:
            constraint["requests"] = [requests[0]["name"]]
        claim["constraints"] = [constraint]
    return claim


def _dra(ctx: _Ctx, pod: JSON) -> bool:
    rng = ctx.rng
    ns = pod["metadata"]["namespace"]
    refs: list[JSON] = []
    templates = ctx.dra_templates.get(ns, [])
    shared = ctx.dra_claims.get(ns, [])
    if templates:
        refs.append({"name": "gpu", "resourceClaimTemplateName": rng.choice(templates)})
    if shared and (not refs or rng.random() < 0.3):
        refs.append({"name": "shared", "resourceClaimName": rng.choice(shared)})
    if not refs:
        return False
    pod["spec"]["resourceClaims"] = refs
    pod["spec"]["containers"][0].setdefault("resources", {})["claims"] = [
        {"name": r["name"]} for r in refs
    ]
    return True


# -- DRA: device taints, admin access, consumable capacity -----------------------------------------

NET_DRIVER = "net.example.com"
# The namespace label admission requires of claims asking for admin access.
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
_DEVICE_TAINTS = [("maint", ""), ("degraded", "true"), ("degraded", "false")]
_TAINT_EFFECTS = ["NoSchedule", "NoSchedule", "NoExecute", "None"]
_BANDWIDTHS = ["1", "2", "3", "4", "5", "8", "10", "12"]  # in Gi (ordered)


def _net_class(ctx: _Ctx) -> str:
    return f"{ctx.prefix}-nic.{NET_DRIVER}"


def _capacity_policy(rng: random.Random, total: int) -> JSON | None:
    """A request policy for a shareable device's bandwidth of ``total`` Gi, valid as the
    API server checks it (default within range or among the values)."""
    r = rng.random()
    if r < 0.3:
        return None
    if r < 0.65:
        lo = rng.choice([1, 2])
        # v1.37's API server refuses a range whose first step passes the capacity.
        step = rng.choice([s for s in (1, 2, 3) if lo + s <= total])
        steps = max(0, (total - lo) // step)
        rng_spec: JSON = {"min": f"{lo}Gi", "step": f"{step}Gi"}
        if rng.random() < 0.6:
            rng_spec["max"] = f"{lo + step * rng.randint(0, steps)}Gi"
        return {"default": f"{lo}Gi", "validRange": rng_spec}
    values = sorted(rng.sample(range(1, total + 1), min(total, rng.randint(1, 3))))
    return {"default": f"{rng.choice(values)}Gi", "validValues": [f"{v}Gi" for v in values]}


def _nic(ctx: _Ctx, i: int) -> JSON:
    """A NIC: maybe tainted, maybe shareable (``allowMultipleAllocations``) with a
    bandwidth capacity and a request policy."""
    rng = ctx.rng
    dev: JSON = {"name": f"nic-{i}", "attributes": {"port": {"int": i % 2}}}
    total = int(rng.choice(_BANDWIDTHS[3:]))
    cap: JSON = {"value": f"{total}Gi"}
    if rng.random() < 0.5:
        dev["allowMultipleAllocations"] = True
        policy = _capacity_policy(rng, total)
        if policy is not None:
            cap["requestPolicy"] = policy
    dev["capacity"] = {"bandwidth": cap}
    if rng.random() < 0.35:
        taints = []
        for key, value in rng.sample(_DEVICE_TAINTS, rng.randint(1, 2)):
            taint: JSON = {"key": key, "effect": rng.choice(_TAINT_EFFECTS)}
            if value:
                taint["value"] = value
            taints.append(taint)
        dev["taints"] = taints
    return dev


def _device_toleration(rng: random.Random) -> JSON:
    key, value = rng.choice(_DEVICE_TAINTS)
    if rng.random() < 0.3:
        tol: JSON = {"operator": "Exists"}
        if rng.random() < 0.7:
            tol["key"] = key
    else:
        tol = {"key": key, "operator": "Equal", "value": rng.choice([value, "true"])}
    if rng.random() < 0.5:
        tol["effect"] = rng.choice(_TAINT_EFFECTS)
    return tol


def _nic_request(ctx: _Ctx, name: str, *, admin: bool) -> JSON:
    """A NIC request: tolerations, capacity requests (some to be rounded up, some more
    than a device has or its policy allows), admin access where the namespace allows."""
    rng = ctx.rng
    spec: JSON = {"deviceClassName": _net_class(ctx)}
    if rng.random() < 0.15:
        spec["allocationMode"] = "All"
    else:
        spec["allocationMode"] = "ExactCount"
        spec["count"] = rng.choice([1, 1, 1, 2])
    if rng.random() < 0.5:
        spec["tolerations"] = [_device_toleration(rng) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.6:
        amount = rng.choice(_BANDWIDTHS)
        spec["capacity"] = {"requests": {"bandwidth": f"{amount}Gi"}}
    if rng.random() < 0.2:
        spec["selectors"] = [{"cel": {"expression": rng.choice(_NIC_SELECTORS)}}]
    if admin and rng.random() < 0.3:
        spec["adminAccess"] = True
    if rng.random() < 0.2:
        sub = {k: v for k, v in spec.items() if k != "adminAccess"}
        plain = {"name": "plain", "deviceClassName": _net_class(ctx)}
        return {"name": name, "firstAvailable": [{"name": "rich", **sub}, plain]}
    return {"name": name, "exactly": spec}


_NIC_SELECTORS = [
    f'device.attributes["{NET_DRIVER}"].port == 0',
    "device.allowMultipleAllocations",
    f'device.capacity["{NET_DRIVER}"].bandwidth.compareTo(quantity("8Gi")) >= 0',
]


def _nic_claim(ctx: _Ctx, admin: bool) -> JSON:
    rng = ctx.rng
    requests = [_nic_request(ctx, f"n{i}", admin=admin) for i in range(rng.choice([1, 1, 2]))]
    claim: JSON = {"requests": requests}
    if len(requests) > 1 and rng.random() < 0.3:
        claim["constraints"] = [{"distinctAttribute": f"{NET_DRIVER}/port"}]
    return claim


def _dra_devices_setup(ctx: _Ctx) -> None:
    """A NIC class and, per node, NICs that may be tainted or shareable (consumable
    capacity with request policies); claim templates and shared claims with tolerations,
    capacity requests and, in the namespace labelled for it, admin access."""
    rng = ctx.rng
    admin_ns = ctx.namespaces[-1]
    ctx.namespace_labels.setdefault(admin_ns, {})[ADMIN_ACCESS_LABEL] = "true"
    selector = {"cel": {"expression": f'device.driver == "{NET_DRIVER}"'}}
    ctx.add(_resource("DeviceClass", _net_class(ctx), {"selectors": [selector]}))
    nic_slices: dict[str, JSON] = {}
    for node in ctx.nodes:
        if rng.random() < 0.3:
            continue
        name = node["metadata"]["name"]
        devices = [_nic(ctx, i) for i in range(rng.randint(1, 4))]
        pool = {"name": f"{name}-nics", "generation": 1, "resourceSliceCount": 1}
        spec = {"driver": NET_DRIVER, "nodeName": name, "pool": pool, "devices": devices}
        ctx.add(_resource("ResourceSlice", f"{name}-nics", spec))
        nic_slices[f"{name}-nics"] = spec
    _device_taint_rules(ctx, nic_slices)
    for ns in ctx.namespaces:
        admin = ns == admin_ns
        templates = ctx.nic_templates.setdefault(ns, [])
        for i in range(rng.randint(2, 4)):
            spec = {"spec": {"devices": _nic_claim(ctx, admin)}}
            ctx.add(_resource("ResourceClaimTemplate", f"nic-{i}", spec, ns))
            templates.append(f"nic-{i}")
        shared = ctx.nic_claims.setdefault(ns, [])
        for i in range(rng.randint(0, 2)):
            ctx.add(
                _resource(
                    "ResourceClaim", f"nic-shared-{i}", {"devices": _nic_claim(ctx, admin)}, ns
                )
            )
            shared.append(f"nic-shared-{i}")


def _device_taint_rules(ctx: _Ctx, devices: dict[str, JSON]) -> None:
    """DeviceTaintRules over the NICs ``devices`` (slice name -> slice spec): by driver,
    pool or device, some matching nothing, some without a selector. v1.37 and later
    only (v1.36 serves them as v1beta2, behind an off gate). Drawn from their own
    random source, so the rest of a seed's scenario is that of older versions."""
    if not devices or minor_key(ctx.emulated_version) < (1, 37):
        return
    rng = random.Random(f"taintrules-{ctx.seed}")
    for i in range(rng.randint(0, 3)):
        spec = rng.choice(list(devices.values()))
        r = rng.random()
        selector: JSON | None
        if r < 0.1:
            selector = None  # matches no device
        elif r < 0.3:
            selector = {"driver": NET_DRIVER}
        elif r < 0.55:
            selector = {"pool": spec["pool"]["name"]}
        elif r < 0.65:
            selector = {"driver": GPU_DRIVER, "pool": spec["pool"]["name"]}  # none
        else:
            device = rng.choice(spec["devices"])["name"]
            selector = {"driver": NET_DRIVER, "pool": spec["pool"]["name"], "device": device}
        key, value = rng.choice(_DEVICE_TAINTS)
        taint: JSON = {"key": key, "effect": rng.choice(_TAINT_EFFECTS)}
        if value:
            taint["value"] = value
        rule: JSON = {"taint": taint}
        if selector is not None:
            rule["deviceSelector"] = selector
        ctx.add(_resource("DeviceTaintRule", f"{ctx.prefix}-rule-{i}", rule))


def _add_claims(pod: JSON, refs: list[JSON]) -> bool:
    """The pod's claims and its first container's use of them, besides any it has."""
    if not refs:
        return False
    pod["spec"].setdefault("resourceClaims", []).extend(refs)
    c0 = pod["spec"]["containers"][0]
    c0.setdefault("resources", {}).setdefault("claims", []).extend(
        {"name": r["name"]} for r in refs
    )
    return True


def _dra_devices(ctx: _Ctx, pod: JSON) -> bool:
    rng = ctx.rng
    ns = pod["metadata"]["namespace"]
    refs: list[JSON] = []
    templates = ctx.nic_templates.get(ns, [])
    shared = ctx.nic_claims.get(ns, [])
    if templates and rng.random() < 0.8:
        refs.append({"name": "nic", "resourceClaimTemplateName": rng.choice(templates)})
    if shared and (not refs or rng.random() < 0.3):
        refs.append({"name": "nic-shared", "resourceClaimName": rng.choice(shared)})
    return _add_claims(pod, refs)


# -- DRA: devices with binding conditions -----------------------------------------------------

BIND_DRIVER = "attach.example.com"
ATTACHED = f"{BIND_DRIVER}/attached"
FABRIC_READY = f"{BIND_DRIVER}/fabric-ready"
ATTACH_FAILED = f"{BIND_DRIVER}/attach-failed"


def _bind_class(ctx: _Ctx) -> str:
    return f"{ctx.prefix}-attach.{BIND_DRIVER}"


def _bound_device(rng: random.Random, i: int, *, fabric: bool) -> JSON:
    """A device whose binding waits for the driver (``driver.py``): most report their
    binding conditions, a ``bad-`` one its failure condition; some have none at all.
    A fabric device (in a slice for all nodes) may be bound to the node it is used on."""
    bad = rng.random() < 0.25
    dev: JSON = {
        "name": f"{FAILING_PREFIX if bad else 'dev-'}{i}",
        "attributes": {"healthy": {"bool": not bad}, "slot": {"int": i}},
    }
    if not bad and rng.random() < 0.2:
        return dev  # no binding conditions: allocated and bound at once
    dev["bindingConditions"] = [ATTACHED] if rng.random() < 0.6 else [ATTACHED, FABRIC_READY]
    dev["bindingFailureConditions"] = [ATTACH_FAILED]
    if fabric and rng.random() < 0.6:
        dev["bindsToNode"] = True
    return dev


def _bind_claim(ctx: _Ctx, *, healthy: bool) -> JSON:
    """One or two requests for attachable devices; ``healthy`` ones only select devices
    that bind (claims from templates: the API server's claim names there are random, so
    a binding failure's text, which names the claim, could not be compared)."""
    rng = ctx.bind_rng
    requests = []
    for i in range(rng.choice([1, 1, 2])):
        exactly: JSON = {"deviceClassName": _bind_class(ctx), "allocationMode": "ExactCount"}
        exactly["count"] = rng.choice([1, 1, 2])
        if healthy:
            expr = f'device.attributes["{BIND_DRIVER}"].healthy'
            exactly["selectors"] = [{"cel": {"expression": expr}}]
        requests.append({"name": f"a{i}", "exactly": exactly})
    return {"requests": requests}


def _dra_binding_setup(ctx: _Ctx) -> None:
    """A class of attachable devices: per-node slices and a fabric slice for all nodes,
    with binding conditions, failure conditions and ``bindsToNode``; claim templates
    (healthy devices only) and shared claims (any). Drawn from the group's own random
    source, so the other groups' scenarios are those of a run without it."""
    rng = ctx.bind_rng
    selector = {"cel": {"expression": f'device.driver == "{BIND_DRIVER}"'}}
    ctx.add(_resource("DeviceClass", _bind_class(ctx), {"selectors": [selector]}))
    for node in ctx.nodes:
        if rng.random() < 0.5:
            continue
        name = node["metadata"]["name"]
        devices = [_bound_device(rng, i, fabric=False) for i in range(rng.randint(1, 3))]
        pool = {"name": f"{name}-attach", "generation": 1, "resourceSliceCount": 1}
        spec = {"driver": BIND_DRIVER, "nodeName": name, "pool": pool, "devices": devices}
        ctx.add(_resource("ResourceSlice", f"{name}-attach", spec))
    if rng.random() < 0.7:
        devices = [_bound_device(rng, i, fabric=True) for i in range(rng.randint(1, 4))]
        pool = {"name": f"{ctx.prefix}-fabric", "generation": 1, "resourceSliceCount": 1}
        spec = {"driver": BIND_DRIVER, "allNodes": True, "pool": pool, "devices": devices}
        ctx.add(_resource("ResourceSlice", f"{ctx.prefix}-fabric", spec))
    for ns in ctx.namespaces:
        templates = ctx.bind_templates.setdefault(ns, [])
        for i in range(rng.randint(1, 2)):
            spec = {"spec": {"devices": _bind_claim(ctx, healthy=True)}}
            ctx.add(_resource("ResourceClaimTemplate", f"attach-{i}", spec, ns))
            templates.append(f"attach-{i}")
        shared = ctx.bind_claims.setdefault(ns, [])
        for i in range(rng.randint(1, 2)):
            claim = {"devices": _bind_claim(ctx, healthy=False)}
            ctx.add(_resource("ResourceClaim", f"attach-shared-{i}", claim, ns))
            shared.append(f"attach-shared-{i}")


def _dra_binding(ctx: _Ctx, pod: JSON) -> bool:
    """A third of the pods wait for attachable devices: a template's claim, a shared
    one, or both."""
    rng = ctx.bind_rng
    if rng.random() >= 0.35:
        return False
    ns = pod["metadata"]["namespace"]
    refs: list[JSON] = []
    templates = ctx.bind_templates.get(ns, [])
    shared = ctx.bind_claims.get(ns, [])
    if templates and rng.random() < 0.6:
        refs.append({"name": "attach", "resourceClaimTemplateName": rng.choice(templates)})
    if shared and (not refs or rng.random() < 0.3):
        refs.append({"name": "attach-shared", "resourceClaimName": rng.choice(shared)})
    return _add_claims(pod, refs)


# -- CSI volume limits ---------------------------------------------------------------------------


def _csi_driver(ctx: _Ctx) -> str:
    return f"{ctx.prefix}-csi.example.com"


def _csi_setup(ctx: _Ctx) -> None:
    """CSINodes with allocatable counts (some nodes without one: no limit), CSI
    PersistentVolumes pre-bound to claims, running pods and VolumeAttachments using some
    of them, so NodeVolumeLimits counts what is already on a node."""
    rng = ctx.rng
    driver = _csi_driver(ctx)
    cls = f"{ctx.prefix}-csi"
    ctx.add(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": cls},
            "provisioner": driver,
            "volumeBindingMode": "Immediate",
        }
    )
    for node in ctx.nodes:
        if rng.random() < 0.2:
            continue
        name = node["metadata"]["name"]
        drv: JSON = {"name": driver, "nodeID": name}
        if rng.random() < 0.85:
            drv["allocatable"] = {"count": rng.randint(1, 3)}
        ctx.add(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "CSINode",
                "metadata": {"name": name},
                "spec": {"drivers": [drv]},
            }
        )
    for ns in ctx.namespaces:
        claims = ctx.csi_claims.setdefault(ns, [])
        for i in range(rng.randint(2, 5)):
            pv = f"{ctx.prefix}-csi-{ns}-{i}"
            claim = f"csi-{i}"
            ctx.add(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": pv},
                    "spec": {
                        "capacity": {"storage": "5Gi"},
                        "accessModes": ["ReadWriteMany"],
                        "storageClassName": cls,
                        "persistentVolumeReclaimPolicy": "Retain",
                        "csi": {"driver": driver, "volumeHandle": f"vol-{ns}-{i}"},
                        "claimRef": {"namespace": ns, "name": claim},
                    },
                }
            )
            ctx.add(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim, "namespace": ns},
                    "spec": {
                        "accessModes": ["ReadWriteMany"],
                        "resources": {"requests": {"storage": "5Gi"}},
                        "storageClassName": cls,
                        "volumeName": pv,
                    },
                }
            )
            claims.append(claim)
    for pod in ctx.running:
        ns = pod["metadata"]["namespace"]
        if ctx.csi_claims.get(ns) and rng.random() < 0.4:
            _add_csi_volumes(ctx, pod)
    for node in ctx.nodes:
        if rng.random() < 0.2:
            ns = rng.choice(ctx.namespaces)
            i = rng.randrange(len(ctx.csi_claims[ns]))
            ctx.add(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "VolumeAttachment",
                    "metadata": {"name": f"{ctx.prefix}-va-{node['metadata']['name']}"},
                    "spec": {
                        "attacher": driver,
                        "nodeName": node["metadata"]["name"],
                        "source": {"persistentVolumeName": f"{ctx.prefix}-csi-{ns}-{i}"},
                    },
                }
            )
    _volume_limit_scaling_setup(ctx)


def _add_csi_volumes(ctx: _Ctx, pod: JSON) -> bool:
    claims = ctx.csi_claims.get(pod["metadata"]["namespace"], [])
    if not claims:
        return False
    picked = ctx.rng.sample(claims, ctx.rng.randint(1, min(3, len(claims))))
    pod["spec"].setdefault("volumes", []).extend(
        {"name": f"vol-{c}", "persistentVolumeClaim": {"claimName": c}} for c in picked
    )
    return True


# -- storage capacity and volume limit scaling ----------------------------------------------------

CAPACITY_SIZES = ("1Gi", "3Gi", "8Gi", "20Gi", "50Gi")


def _storage_capacity_setup(ctx: _Ctx) -> None:
    """The "volumes" group's dynamic provisioning: a WaitForFirstConsumer class of a CSI
    driver that reports CSIStorageCapacity (mostly; else it provisions anywhere), free
    space per node or per zone on some of them (never both, so at most one capacity
    reaches a node: upstream would pick among several in random order), sometimes a
    smaller maximumVolumeSize, and claims of several sizes pods may use."""
    rng = ctx.rng
    p = ctx.prefix
    driver, cls = f"{p}-cap.example.com", f"{p}-cap"
    ctx.add(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": driver},
            "spec": {"attachRequired": False, "storageCapacity": rng.random() < 0.8},
        }
    )
    sc = _sc(cls, "WaitForFirstConsumer")
    sc["provisioner"] = driver
    ctx.add(sc)
    by_zone = rng.random() < 0.3
    reach = (
        [(ZONE, z) for z in ctx.zones]
        if by_zone
        else [(HOST, n["metadata"]["name"]) for n in ctx.nodes]
    )
    for i, (key, value) in enumerate(reach):
        if rng.random() < 0.25:
            continue  # no capacity reported there: nothing can be provisioned
        cap: JSON = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIStorageCapacity",
            "metadata": {"name": f"{p}-cap-{i}", "namespace": ctx.namespaces[0]},
            "storageClassName": cls,
            "nodeTopology": {"matchLabels": {key: value}},
            "capacity": rng.choice(CAPACITY_SIZES),
        }
        if rng.random() < 0.2:
            cap["maximumVolumeSize"] = rng.choice(CAPACITY_SIZES[:3])
        ctx.add(cap)
    for ns in ctx.namespaces:
        claims = ctx.claims.setdefault(ns, [])
        for i in range(rng.randint(1, 2)):
            claim = f"dyn-{i}"
            ctx.add(
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim, "namespace": ns},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": rng.choice(CAPACITY_SIZES[:4])}},
                        "storageClassName": cls,
                    },
                }
            )
            claims.append(claim)


def _volume_limit_scaling_setup(ctx: _Ctx) -> None:
    """The "csi" group's CSIDriver: sometimes it asks that pods not go where its CSINode
    entry is missing (VolumeLimitScaling), and some nodes' CSINodes list no driver."""
    rng = ctx.rng
    spec: JSON = {"attachRequired": True}
    if rng.random() < 0.6:
        spec["preventPodSchedulingIfMissing"] = True
    ctx.add(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": _csi_driver(ctx)},
            "spec": spec,
        }
    )
    have = {o["metadata"]["name"] for o in ctx.objects if o["kind"] == "CSINode"}
    for node in ctx.nodes:
        name = node["metadata"]["name"]
        if name not in have and rng.random() < 0.5:
            ctx.add(
                {
                    "apiVersion": "storage.k8s.io/v1",
                    "kind": "CSINode",
                    "metadata": {"name": name},
                    "spec": {"drivers": []},
                }
            )


# -- node declared features ---------------------------------------------------------------------

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS_HOSTNET = "UserNamespacesHostNetworkSupport"
# Declared names kube-scheduler does not know (dropped by its TryMap) beside the two it infers.
_DECLARED = [RESTART_ALL, USERNS_HOSTNET, "ExampleVendorFeature", "ZetaFeature/sub"]

#: What the API server needs for the generated inputs: a pod on the host network in a user
#: namespace of its own is refused unless UserNamespacesHostNetworkSupport (alpha) is on,
#: a Gt/Lt toleration unless TaintTolerationComparisonOperators (alpha) is.
APISERVER_ARGS: tuple[str, ...] = (
    "--feature-gates=UserNamespacesHostNetworkSupport=true,TaintTolerationComparisonOperators=true",
)
TAINT_RULES = "DRADeviceTaintRules"
TAINT_RULES_RUNTIME_CONFIG = "resource.k8s.io/v1beta2/devicetaintrules=true"


def _nodefeatures_setup(ctx: _Ctx) -> None:
    """Some nodes declare features (sorted, as the API server requires), some none."""
    rng = ctx.rng
    for node in ctx.nodes:
        if rng.random() < 0.6:
            names = [*_DECLARED, BIND_MOUNT]
            have = rng.sample(names, rng.randint(1, len(names)))
            node["status"]["declaredFeatures"] = sorted(have)


def _restart_all_rule() -> JSON:
    return {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}


#: The feature v1.37 infers from a mount's ``bindMountOptions`` (a node may declare it).
BIND_MOUNT = "VolumeBindMountOptions"


def apiserver_args(kube_version: str, features: Iterable[str] = ()) -> tuple[str, ...]:
    """``APISERVER_ARGS`` for an API server of ``kube_version``: from v1.37 on also
    VolumeBindMountOptions (alpha), without which it drops a mount's ``bindMountOptions``
    (v1.36 knows neither gate nor field, and drops the field too); with the ``gang``
    group among ``features`` also its gates and the scheduling.k8s.io/v1beta1 API."""
    minor = int(kube_version.removeprefix("v").split(".")[1])
    if minor < 37:
        # DRADeviceTaintRules is beta but off at 1.36: the ``gates`` group may turn it on in
        # kube-scheduler, which then lists DeviceTaintRules (resource.k8s.io/v1beta2) and is
        # never ready unless the API server serves them and its bootstrap policy, which
        # reads the server's own gate, lets system:kube-scheduler read them
        return (
            f"{APISERVER_ARGS[0]},{TAINT_RULES}=true",
            f"--runtime-config={TAINT_RULES_RUNTIME_CONFIG}",
        )
    gates = [f"{APISERVER_ARGS[0]},{BIND_MOUNT}=true"]
    if "gang" not in features:
        return tuple(gates)
    gates += [g for g in FEATURES["gang"].gates]
    return (",".join(gates), f"--runtime-config={GANG_RUNTIME_CONFIG}")


def _nodefeatures(ctx: _Ctx, pod: JSON) -> bool:
    """A RestartAllContainers restart rule (on a container or an init container) and/or
    the host network with ``hostUsers: false``, or a mount's ``bindMountOptions``
    (v1.37): what NodeDeclaredFeatures infers."""
    rng = ctx.rng
    spec = pod["spec"]
    kind = rng.choice(["container", "init", "userns", "both", "plain-rule", "bindmount"])
    if kind == "bindmount":
        # an emptyDir (the options may not go on an image volume)
        spec.setdefault("volumes", []).append({"name": "scratch", "emptyDir": {}})
        options = rng.sample(["noexec", "nodev", "nosuid"], rng.randint(1, 2))
        mount = {"name": "scratch", "mountPath": "/scratch", "bindMountOptions": options}
        spec["containers"][-1].setdefault("volumeMounts", []).append(mount)
        return True
    if kind in ("container", "both", "plain-rule"):
        c = spec["containers"][0]
        c["restartPolicy"] = "Never"
        rule = _restart_all_rule()
        if kind == "plain-rule":
            rule["action"] = "Restart"  # no feature needed: the plugin skips the pod
        c["restartPolicyRules"] = [rule]
    if kind == "init":
        # no requests: pod-level resources must cover the containers' (the API server)
        init: JSON = {"name": "init-rule", "image": IMAGES[4][0]}
        init["restartPolicy"] = "Never"
        init["restartPolicyRules"] = [_restart_all_rule()]
        spec.setdefault("initContainers", []).append(init)
    if kind in ("userns", "both"):
        # the host network needs hostPort == containerPort: only pods without ports
        if any(c.get("ports") for c in spec["containers"]):
            return kind == "both"
        spec["hostNetwork"] = True
        spec["hostUsers"] = False
    return True


# -- feature gates -------------------------------------------------------------------------------


def _gates_setup(ctx: _Ctx) -> None:
    """The seed's random non-default gate set (``gates.draw_gates``: its own random
    stream, so the rest of the scenario is the same with the group or without)."""
    ctx.gates = draw_gates(ctx.seed, ctx.emulated_version, ctx.fixed_gates)


def _gates(ctx: _Ctx, pod: JSON) -> bool:
    """Every pod of a seed with non-default gates is scheduled under them."""
    return bool(ctx.gates)


# -- Gt/Lt tolerations (TaintTolerationComparisonOperators) ----------------------------------------

SLA_TAINT = "example.com/sla"
# numeric values (a taint value is a label value: never negative), one kube-scheduler never
# parses ("high") and one not canonical ("0950")
_SLA_VALUES = ["100", "950", "999", "5", "high", "0950"]
_SLA_THRESHOLDS = ["0", "500", "950", "998", "-10"]
_SLA_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]


def _tolerationops_setup(ctx: _Ctx) -> None:
    """Some nodes get a numeric SLA taint (beside the taints group's, unique by key and
    effect as the API server requires)."""
    rng = ctx.rng
    for node in ctx.nodes:
        if rng.random() < 0.6:
            taint = {
                "key": SLA_TAINT,
                "value": rng.choice(_SLA_VALUES),
                "effect": rng.choice(_SLA_EFFECTS),
            }
            node["spec"].setdefault("taints", []).append(taint)


def _tolerationops(ctx: _Ctx, pod: JSON) -> bool:
    """Gt/Lt tolerations of the SLA taint: with the gate on they compare the values as
    int64, off (and for an unparsable value) they tolerate nothing. The API server takes
    them only with its gate on (``APISERVER_ARGS``); run both schedulers with
    ``--feature-gates TaintTolerationComparisonOperators=true`` for the "on" side."""
    rng = ctx.rng
    tols = pod["spec"].setdefault("tolerations", [])
    for _ in range(rng.randint(1, 2)):
        t: JSON = {
            "key": SLA_TAINT,
            "operator": rng.choice(["Gt", "Lt"]),
            "value": rng.choice(_SLA_THRESHOLDS),
        }
        if rng.random() < 0.7:
            t["effect"] = rng.choice(_SLA_EFFECTS)
        tols.append(t)
    return True


# -- gangs: PodGroups of workload-aware scheduling (GenericWorkload, v1.37) ------------------------

#: The gates the ``gang`` group's inputs need, in kube-scheduler, ksched and the API server
#: (which otherwise drops ``spec.schedulingGroup`` and refuses ``schedulingConstraints``).
GANG_GATES: tuple[str, ...] = ("GenericWorkload=true", "TopologyAwareWorkloadScheduling=true")
#: What else v1.37's API server needs: scheduling.k8s.io/v1beta1 is a beta API, off by
#: default (``betaAPIGroupVersionsDisabledByDefault``).
GANG_RUNTIME_CONFIG = "scheduling.k8s.io/v1beta1=true"
#: Seconds between the members of a ``spread`` group: each is seen alone.
SPREAD_GAP = 1.5
GANG_TIMINGS = ("first", "late", "spread")
SCHEDULING_V1BETA1 = "scheduling.k8s.io/v1beta1"


def _gang_classes(ctx: _Ctx) -> tuple[str, str]:
    return f"{ctx.prefix}-gang-low", f"{ctx.prefix}-gang-high"


def _gang_setup(ctx: _Ctx) -> None:
    """Two priority classes of the group's own, and half the running pods (those without
    a class) at the low one, so a high-priority gang may need preemption. Drawn from the
    group's own random source: the other groups' scenarios are those of a run without
    it."""
    rng = ctx.gang_rng
    for name, value in zip(_gang_classes(ctx), (10, 1000), strict=True):
        ctx.add(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "preemptionPolicy": "PreemptLowerPriority",
            }
        )
    for pod in ctx.running:
        if rng.random() < 0.5 and "priorityClassName" not in pod["spec"]:
            pod["spec"]["priorityClassName"] = _gang_classes(ctx)[0]


def _gang(ctx: _Ctx, pod: JSON) -> bool:
    """Makes half of the pending pods the first member of a PodGroup: a gang
    (random ``minCount``, sometimes more than the members created) or the basic
    policy, sometimes a topology constraint (rack or zone), the members' priority (the
    group's, as the scheduler requires) and how they arrive (``GangBatch.timing``); big
    requests now and then, so some groups cannot fit. The other members are the pod's
    copies (``_gang_members``)."""
    rng = ctx.gang_rng
    if rng.random() >= 0.5:
        return False
    spec = pod["spec"]
    policy: JSON
    # Only groups that one cycle decides whole: kube-scheduler starts a cycle as soon as a
    # group passes PreEnqueue, so members beyond a gang's quorum (or a basic group's
    # second member) may join a later cycle, in the order its informers deliver them,
    # and that later cycle may write the PodGroup's condition over the first one's from a
    # stale PodGroup (True back to False). Neither is reproducible; a gang of exactly its
    # quorum, or short of it, and a basic group of one are.
    if rng.random() < 0.75:
        min_count = rng.randint(1, 8)
        policy = {"gang": {"minCount": min_count}}
        created = min_count
        if min_count > 1 and rng.random() < 0.2:
            created = rng.randint(1, min_count - 1)  # never reaches its quorum
    else:
        policy = {"basic": {}}
        created = 1
    name = f"pg-{pod['metadata']['name']}"
    group: JSON = {
        "apiVersion": SCHEDULING_V1BETA1,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": pod["metadata"]["namespace"]},
        "spec": {"schedulingPolicy": policy},
    }
    if rng.random() < 0.35:
        key = rng.choice([RACK, ZONE])
        group["spec"]["schedulingConstraints"] = {"topology": [{"key": key}]}
    cls = spec.get("priorityClassName") or rng.choice([None, *_gang_classes(ctx), "high"])
    if cls == "high":
        cls = _gang_classes(ctx)[1]
    if cls:
        spec["priorityClassName"] = group["spec"]["priorityClassName"] = cls
    if rng.random() < 0.3 and "resources" not in spec:
        cpu = rng.choice(["1", "2", "3"])
        for c in spec["containers"]:
            c.setdefault("resources", {}).setdefault("requests", {})["cpu"] = cpu
    spec["schedulingGroup"] = {"podGroupName": name}
    timing = rng.choice(GANG_TIMINGS)
    # A group of several members comes after its PodGroup (``first`` or ``spread``): each
    # member then joins the gated group under the queue's lock, and the last one releases
    # it whole. Members that come first (``late``) are moved into the group one by one when
    # the PodGroup arrives, while the scheduling loop may pop it (activeQ's lock, not the
    # queue's): a cycle with part of the group, PlacementFeasible failing before any
    # member, DynamicResources' PodGroupPostFilter erring "not found" (1 in 70 such pods).
    if created > 1 and timing == "late":
        timing = rng.choice(("first", "spread"))
    first = pod["metadata"]["name"]
    names = [first, *(f"{first}-m{j}" for j in range(1, created))]
    ctx.gang_batches[f"{pod['metadata']['namespace']}/{name}"] = GangBatch(group, timing, names)
    return True


def _gang_members(ctx: _Ctx, pending: list[PendingPod]) -> list[PendingPod]:
    """Each group's other members, right after its first (copies of it by other names:
    a homogeneous group), all of them tagged with the PodGroup's key; the PodGroup gets
    their priority class."""
    out: list[PendingPod] = []
    for p in pending:
        group = p.pod["spec"].get("schedulingGroup")
        if group is None:
            out.append(p)
            continue
        batch = ctx.gang_batches[f"{p.namespace}/{group['podGroupName']}"]
        # the group's priority is its members' (a group decorated later may have set it)
        cls = p.pod["spec"].get("priorityClassName")
        batch.pod_group["spec"].pop("priorityClassName", None)
        if cls:
            batch.pod_group["spec"]["priorityClassName"] = cls
        for name in batch.members:
            pod = copy.deepcopy(p.pod)
            pod["metadata"]["name"] = name
            out.append(PendingPod(pod, set(p.groups), f"{batch.namespace}/{batch.name}"))
    return out


# -- scheduling gates (spec.schedulingGates; not the ``gates`` group's feature gates) -----------

#: The gates' names: ``example.com/wait-<n>``.
SCHEDULING_GATE_PREFIX = "example.com/wait-"


def _schedgates(ctx: _Ctx, pod: JSON) -> bool:
    """Gives half of the pending pods one or two scheduling gates, and the update that
    later removes all of them (most pods), one of two, or none (the pod stays gated:
    the API server lets a client remove gates, never add them). A PodGroup's member is
    left alone (its group is released whole, not one gated member at a time). Drawn
    from the group's own random source: the rest of the scenario is that of a run
    without the group."""
    rng = ctx.gates_rng
    if rng.random() >= 0.5 or pod["spec"].get("schedulingGroup"):
        return False
    first = rng.randint(0, 3)
    gates = [f"{SCHEDULING_GATE_PREFIX}{first + i}" for i in range(rng.randint(1, 2))]
    pod["spec"]["schedulingGates"] = [{"name": g} for g in gates]
    r = rng.random()
    if r < 0.65:
        ungate = tuple(gates)
    elif r < 0.85 and len(gates) > 1:
        ungate = (rng.choice(gates),)
    else:
        ungate = ()
    ctx.ungate[f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"] = ungate
    return True


def _schedgates_steps(ctx: _Ctx, pending: list[PendingPod]) -> list[PendingPod]:
    """Each gated pod's ungate step, on its ``PendingPod``."""
    for p in pending:
        p.ungate = ctx.ungate.get(f"{p.namespace}/{p.name}", ())
    return pending


FEATURES: dict[str, Feature] = {
    f.name: f
    for f in (
        Feature("resources", _resources_setup, _resources, 0.5),
        Feature("unschedulable", _unschedulable_setup, _unschedulable, 0.2),
        Feature("ports", _ports_setup, _ports, 0.2),
        Feature("nodeaffinity", _no_setup, _nodeaffinity, 0.35),
        Feature("taints", _taints_setup, _taints, 0.4),
        Feature("images", _images_setup, _images, 0.4, finish=_images_late_nodes),
        Feature("spread", _spread_setup, _spread, 0.35),
        Feature("interpod", _interpod_setup, _interpod, 0.3),
        Feature("volumes", _volumes_setup, _volumes, 0.2),
        Feature("preemption", _preemption_setup, _preemption, 0.3),
        Feature("dra", _dra_setup, _dra, 0.3),
        Feature("csi", _csi_setup, _add_csi_volumes, 0.3),
        Feature("nodefeatures", _nodefeatures_setup, _nodefeatures, 0.3),
        Feature("dradevices", _dra_devices_setup, _dra_devices, 0.45),
        # weight 1: the group draws from its own random source (``_dra_binding``)
        Feature("drabinding", _dra_binding_setup, _dra_binding, 1.0),
        Feature("gates", _gates_setup, _gates, 1.0),
        Feature("tolerationops", _tolerationops_setup, _tolerationops, 0.3),
        # opt-in until ksched's pod-group cycle is in: the default set is what CI and the
        # long runs compare with 0 divergences
        Feature(
            "gang",
            _gang_setup,
            _gang,
            1.0,
            since="1.37",
            default=False,
            gates=GANG_GATES,
            finish=_gang_members,
        ),
        # after ``gang``: a PodGroup's members get no gates; weight 1: its own random source.
        # Opt-in: each gated pod costs the kube replay a wait while it is seen gated.
        Feature("schedgates", _no_setup, _schedgates, 1.0, default=False, finish=_schedgates_steps),
    )
}


def default_features(emulated_version: str = BINARY_VERSION) -> tuple[str, ...]:
    """The groups a run compares unless told otherwise: every default group the version
    has."""
    return tuple(n for n, f in FEATURES.items() if f.default and f.offered(emulated_version))


def parse_features(text: str | None, emulated_version: str = BINARY_VERSION) -> tuple[str, ...]:
    """``a,b``: those groups (in FEATURES order); empty or None: the default ones
    (``default_features``). A group ``emulated_version`` has no inputs for is refused."""
    if not text:
        return default_features(emulated_version)
    wanted = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [w for w in wanted if w not in FEATURES]
    if unknown:
        raise ValueError(
            f"unknown feature group(s) {', '.join(unknown)}; known: {', '.join(FEATURES)}"
        )
    absent = [w for w in wanted if not FEATURES[w].offered(emulated_version)]
    if absent:
        since = ", ".join(f"{w} (from {FEATURES[w].since})" for w in absent)
        raise ValueError(f"feature group(s) not offered at {emulated_version}: {since}")
    return tuple(f for f in FEATURES if f in wanted)


def parse_seeds(text: str) -> list[int]:
    """``0-199``, ``3,5,9`` or a mix (``0-9,42``)."""
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        try:
            if sep:
                a, b = int(lo), int(hi)
                if b < a:
                    raise ValueError
                out.extend(range(a, b + 1))
            else:
                out.append(int(part))
        except ValueError:
            raise ValueError(f"bad seed range {part!r}: expected N, N-M or a comma list") from None
    return out


def generate(
    seed: int,
    features: Iterable[str] | None = None,
    *,
    nodes: tuple[int, int] = (3, 10),
    pods: tuple[int, int] = (6, 14),
    emulated_version: str = BINARY_VERSION,
    fixed_gates: Iterable[str] = (),
) -> Scenario:
    """The scenario for ``seed`` with the given feature groups (default: all), for both
    schedulers at ``emulated_version`` run with ``fixed_gates`` (``--feature-gates``)."""
    feats = tuple(features) if features is not None else default_features(emulated_version)
    absent = [f for f in feats if not FEATURES[f].offered(emulated_version)]
    if absent:
        raise ValueError(f"feature group(s) not offered at {emulated_version}: {absent}")
    needed = tuple(g for f in feats for g in FEATURES[f].gates)
    rng = random.Random(seed)
    ctx = _Ctx(seed, rng, feats, emulated_version, (*fixed_gates, *needed))
    ctx.nodes = [_node(ctx, i) for i in range(rng.randint(*nodes))]
    _running_pods(ctx)
    for f in feats:
        FEATURES[f].setup(ctx)
    ns_objs: list[JSON] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": ns,
                "labels": {"team": f"{ctx.prefix}-{team}", **ctx.namespace_labels.get(ns, {})},
            },
        }
        for ns, team in zip(ctx.namespaces, ("blue", "red"), strict=True)
    ]
    pending: list[PendingPod] = []
    for i in range(rng.randint(*pods)):
        pod = _pod(ctx, f"p{i}", rng.choice(ctx.namespaces))
        groups: set[str] = set()
        for f in feats:
            feat = FEATURES[f]
            if (feat.weight >= 1 or rng.random() < feat.weight) and feat.decorate(ctx, pod):
                groups.add(f)
        if not groups:
            groups.add("base")
        pending.append(PendingPod(pod, groups))
    for f in feats:
        finish = FEATURES[f].finish
        if finish is not None:
            pending = finish(ctx, pending)
    # Namespaced objects need their namespace; pods may name the RuntimeClass and own
    # references to ReplicaSets, so everything else goes before the running pods.
    objects = [*ns_objs, *ctx.objects, *ctx.nodes, *ctx.running]
    gates = (*needed, *ctx.gates)
    return Scenario(seed, feats, objects, pending, gates=gates, batches=ctx.gang_batches)
