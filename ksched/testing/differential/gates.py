"""Which kube-scheduler version a replay runs, and the random gate sets of the ``gates``
group.

A control plane runs one Kubernetes release; ksched is run at the ``--emulated-version``
of that release's minor (v1.36.3: 1.36). The ``gates`` group gives each seed a random set
of non-default values of gates a user may set, that kube-scheduler's scheduling code reads
and that ksched implements at that version (``ksched.features.support``: derived, never a
hand list), so a gate ksched comes to implement is drawn from then on.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from ...features import (
    KUBE_VERSIONS,
    FeatureGateError,
    gate_table,
    resolve_feature_gates,
    version_of_release,
)
from ...features.gates import GateTable
from ...features.support import IMPLEMENTED, NO_EFFECT, status

__all__ = ["draw_gates", "emulation_of", "gate_names", "settable_gates"]

#: The share of seeds the ``gates`` group leaves at the defaults (the common case).
DEFAULT_SHARE = 1 / 3


def emulation_of(kube_version: str) -> str:
    """The ``--emulated-version`` ksched runs at against kube-scheduler ``kube_version``
    ("v1.36.3": "1.36"); ValueError for a release ksched does not implement."""
    try:
        row = version_of_release(kube_version)
    except KeyError:
        row = None
    if row is None or not row.implemented:
        known = ", ".join(v.kube for v in KUBE_VERSIONS if v.implemented)
        raise ValueError(f"kube version {kube_version!r}: ksched emulates {known} only")
    return row.minor


def gate_names(feature_gates: Sequence[str]) -> set[str]:
    """The gates ``--feature-gates`` values name (``kube:`` component prefixes dropped)."""
    out = set()
    for item in (p for v in feature_gates for p in v.split(",")):
        name = item.partition("=")[0].strip()
        out.add(name.partition(":")[2].strip() if ":" in name else name)
    return out - {""}


def _scheduling(table: GateTable, name: str) -> bool:
    return any(f.startswith("pkg/scheduler/") for f in table.gates[name].read_by)


# Implemented, but never drawn at random: workload-aware scheduling needs the PodGroup API
# served (and kube-scheduler allowed to list it) and scenarios with pod groups.
NOT_DRAWN = frozenset({"GenericWorkload", "TopologyAwareWorkloadScheduling"})


def settable_gates(minor: str) -> list[str]:
    """The gates of version ``minor`` whose non-default value the scheduling code reads
    and ksched implements (not locked: ``status`` says so), but ``NOT_DRAWN``."""
    table = gate_table(minor)
    return sorted(
        name
        for name, spec in table.gates.items()
        if _scheduling(table, name)
        and name not in NOT_DRAWN
        and status(table, name, not spec.default) == IMPLEMENTED
    )


def _close(table: GateTable, values: dict[str, bool], fixed: set[str]) -> bool:
    """Make ``values`` satisfy the version's dependencies as kube-scheduler checks them:
    a gate needing one turned off goes off too, a gate turned on needs its dependencies
    on, each only where that value is implemented (or changes nothing) and not set by the
    user. False when that is impossible."""

    def on(name: str) -> bool:
        return values.get(name, table.gates[name].default)

    def settable(name: str, value: bool) -> bool:
        return name not in fixed and status(table, name, value) in (IMPLEMENTED, NO_EFFECT)

    changed = True
    while changed:
        changed = False
        for feature, deps in sorted(table.dependencies.items()):
            off = [d for d in deps if not on(d)]
            if not on(feature) or not off:
                continue
            if feature not in values and settable(feature, False):
                values[feature] = False
            elif all(d not in values and settable(d, True) for d in off):
                values.update(dict.fromkeys(off, True))
            else:
                return False
            changed = True
    return True


def draw_gates(seed: int, minor: str, fixed: Sequence[str] = ()) -> list[str]:
    """Seed ``seed``'s gate set at version ``minor``: one or two non-default values of
    ``settable_gates`` (and what their dependencies then need), none of the gates the
    user's ``fixed`` values name; empty for a third of the seeds. The same seed always
    draws the same set, whatever else the scenario holds."""
    rng = random.Random(f"gates/{seed}/{minor}")
    table = gate_table(minor)
    user = gate_names(fixed)
    names = [n for n in settable_gates(minor) if n not in user]
    if not names or rng.random() < DEFAULT_SHARE:
        return []
    for _ in range(5):
        picked = rng.sample(names, min(len(names), rng.randint(1, 2)))
        values = {n: not table.gates[n].default for n in picked}
        if not _close(table, values, user):
            continue
        # kube-scheduler refuses a mix of prefixed (kube:) and plain gates: as the user's
        prefix = "kube:" if any(":" in p for v in fixed for p in v.split(",")) else ""
        out = [f"{prefix}{n}={str(v).lower()}" for n, v in sorted(values.items())]
        try:
            resolve_feature_gates([*fixed, *out], [minor])
        except FeatureGateError:
            continue
        return out
    return []
