"""PodTopologySpread: spread pods over topology domains (upstream ``podtopologyspread``).

Hard constraints (``DoNotSchedule``) filter nodes whose domain would exceed ``maxSkew``
over the least loaded eligible domain; soft ones (``ScheduleAnyway``) and the default
constraints score nodes by how many matching pods their domains already hold.
"""

from __future__ import annotations

from .args import PodTopologySpreadArgs
from .filtering import ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH
from .plugin import SYSTEM_DEFAULT_CONSTRAINTS, PodTopologySpread

__all__ = [
    "ERR_REASON_CONSTRAINTS_NOT_MATCH",
    "ERR_REASON_NODE_LABEL_NOT_MATCH",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "PodTopologySpread",
    "PodTopologySpreadArgs",
]
