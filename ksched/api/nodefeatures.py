"""Node declared features: ``k8s.io/component-helpers/nodedeclaredfeatures`` (v0.36.3 and
v0.37.2).

A kubelet publishes the features it supports in ``node.status.declaredFeatures``; a pod
whose spec needs one of them (inferred here from the spec alone) may only go to nodes that
declare it. Feature sets are bitmaps over the registry sorted by name, as upstream's
``FeatureSet``: bit ``i`` is ``FEATURE_NAMES[i]``. A Python int holds them (the snapshot
keeps them in a uint64 column; the registry has far fewer than 64 features).

The registry here is the union of both versions' (each feature tagged with the release
that added it): v0.37.2 adds InPlacePodVerticalScalingMemoryBackedVolumes (updates only),
DRANodeAllocatableResources and DRAOptionalNodeOperations (never inferred for
scheduling) and VolumeBindMountOptions (a volume mount with ``bindMountOptions``).
Inference for release 1.36 skips the features v0.36.3 lacks, so it stays v0.36.3's; a
node's bitmap (``try_map``) is over the union, which for the sorted lists the API server
admits differs from a release's own only in bits that release never requires.

Only scheduling inference lives here: ``InferForUpdate`` (in-place resize of pod-level
resources and of non-sidecar init containers) concerns the kubelet's admission of updates,
which no scheduler runs, and discovery concerns the kubelet.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .objects import PodSpec

__all__ = [
    "FEATURES",
    "FEATURE_NAMES",
    "NodeFeature",
    "feature_names",
    "infer_for_pod_scheduling",
    "try_map",
]

# ContainerRestartRuleActionRestartAllContainers
_RESTART_ALL_CONTAINERS = "RestartAllContainers"


def _never(spec: PodSpec) -> bool:
    return False


def _restart_all_containers(spec: PodSpec) -> bool:
    """A container or init container with a ``RestartAllContainers`` restart rule."""
    return any(
        rule.action == _RESTART_ALL_CONTAINERS
        for c in (*spec.containers, *spec.init_containers)
        for rule in c.restart_policy_rules
    )


def _user_namespaces_host_network(spec: PodSpec) -> bool:
    """The host's network with a user namespace of its own (``hostUsers: false``)."""
    return spec.host_network and spec.host_users is False


def _volume_bind_mount_options(spec: PodSpec) -> bool:
    """A volume mount of a container, init or ephemeral container with bind mount options."""
    return any(
        m.bind_mount_options
        for c in (*spec.containers, *spec.init_containers, *spec.ephemeral_containers)
        for m in c.volume_mounts
    )


@dataclass(frozen=True, slots=True)
class NodeFeature:
    """One entry of ``features.AllFeatures``: its name and ``InferForScheduling``.

    ``max_version`` is upstream's ``MaxVersion`` (the last Kubernetes version for which the
    feature still constrains scheduling; None: no bound). No feature of v0.36.3 or v0.37.2
    has one. ``since``: the release whose component-helpers first registers it."""

    name: str
    infer_for_scheduling: Callable[[PodSpec], bool]
    max_version: tuple[int, int] | None = None
    since: tuple[int, int] = (1, 36)


# ``features.AllFeatures``, sorted by name as ``nodedeclaredfeatures.New`` sorts them.
FEATURES: tuple[NodeFeature, ...] = tuple(
    sorted(
        (
            NodeFeature("RestartAllContainersOnContainerExits", _restart_all_containers),
            NodeFeature("InPlacePodLevelResourcesVerticalScaling", _never),
            NodeFeature("ExtendWebSocketsToKubelet", _never),
            NodeFeature("InPlacePodVerticalScalingInitContainers", _never),
            NodeFeature("UserNamespacesHostNetworkSupport", _user_namespaces_host_network),
            NodeFeature("InPlacePodVerticalScalingMemoryBackedVolumes", _never, since=(1, 37)),
            NodeFeature("DRANodeAllocatableResources", _never, since=(1, 37)),
            NodeFeature("VolumeBindMountOptions", _volume_bind_mount_options, since=(1, 37)),
            NodeFeature("DRAOptionalNodeOperations", _never, since=(1, 37)),
        ),
        key=lambda f: f.name,
    )
)
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)


def infer_for_pod_scheduling(
    spec: PodSpec, version: tuple[int, int] | None = None, release: tuple[int, int] = (1, 37)
) -> int:
    """``Framework.InferForPodScheduling``: the features scheduling ``spec`` requires.

    ``version``: the target Kubernetes version; a feature past its ``max_version`` is no
    longer required (every node of a supported skew has it). ``release``: the emulated
    kube-scheduler release, whose component-helpers registry applies."""
    reqs = 0
    for i, f in enumerate(FEATURES):
        if f.since > release:
            continue
        if f.max_version is not None and version is not None and version > f.max_version:
            continue
        if f.infer_for_scheduling(spec):
            reqs |= 1 << i
    return reqs


def try_map(sorted_features: Sequence[str]) -> int:
    """``FeatureMapper.TryMap``: the registered features among ``sorted_features``.

    Upstream walks both sorted lists side by side and drops unknown names; the walk is
    kept (not a set lookup) so a list the API server would not have admitted unsorted
    maps exactly as kube-scheduler maps it."""
    out = 0
    i = j = 0
    n, m = len(sorted_features), len(FEATURE_NAMES)
    while i < n and j < m:
        a, b = sorted_features[i], FEATURE_NAMES[j]
        if a == b:
            out |= 1 << j
            i += 1
            j += 1
        elif a < b:
            i += 1
        else:
            j += 1
    return out


def feature_names(features: int) -> list[str]:
    """``FeatureMapper.Unmap``: the names of the features set, sorted."""
    return [name for i, name in enumerate(FEATURE_NAMES) if features >> i & 1]
