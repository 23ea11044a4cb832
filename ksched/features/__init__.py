"""Kubernetes versions and feature gates: kube-scheduler's tables (generated from the
upstream modules by ``scripts/gen_feature_gates.py``), ``--feature-gates`` and
``--emulated-version`` parsed as kube-scheduler parses them, and which gate values ksched
implements.

A low-level room: it imports only ``util``; the configuration carries the resulting
``FeatureGates`` into profile building and every plugin's ``Handle``.
"""

from .gates import (
    BINARY_VERSION,
    FeatureGateError,
    FeatureGates,
    GateSpec,
    GateTable,
    default_feature_gates,
    flagz_values,
    gate_table,
    set_feature_gates,
)
from .support import (
    SUPPORT,
    Support,
    gate_table_markdown,
    refusals,
    resolve_feature_gates,
    status,
)
from .versions import KUBE_VERSIONS, KUBERNETES_VERSION, KubeVersion, version_of_release

__all__ = [
    "BINARY_VERSION",
    "KUBERNETES_VERSION",
    "KUBE_VERSIONS",
    "SUPPORT",
    "FeatureGateError",
    "FeatureGates",
    "GateSpec",
    "GateTable",
    "KubeVersion",
    "Support",
    "default_feature_gates",
    "flagz_values",
    "gate_table",
    "gate_table_markdown",
    "refusals",
    "resolve_feature_gates",
    "set_feature_gates",
    "status",
    "version_of_release",
]
