"""InterPodAffinity: required and preferred pod (anti-)affinity, as kube-scheduler's plugin.

Modules follow upstream's files: ``filtering`` (PreFilter/Filter and AddPod/RemovePod),
``scoring`` (PreScore/Score/NormalizeScore), ``plugin`` (wiring and queueing hints),
``args``; ``terms`` compiles a pod's terms once and ``index`` keeps existing pods grouped
per snapshot row so each cycle costs distinct pod shapes, not all pods.
"""

from __future__ import annotations

from .args import InterPodAffinityArgs
from .filtering import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
)
from .plugin import InterPodAffinity

__all__ = [
    "ERR_REASON_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH",
    "ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH",
    "InterPodAffinity",
    "InterPodAffinityArgs",
]
