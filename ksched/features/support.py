"""Which feature-gate values ksched implements: data, one row per gate kube-scheduler reads.

A gate kube-scheduler's code reads (``GateSpec.read_by``) switches behaviour; ksched
implements it enabled, disabled, both or neither (``SUPPORT``). From that row and a
version's table, each value of each gate gets one status (``status``):

* ``implemented``: ksched behaves as kube-scheduler does with the gate at that value;
* ``refused``: ksched exits 2 naming the gate rather than run with a value it does not
  implement (never silently ignored);
* ``gap``: the default value, which ksched runs with but does not (fully) implement yet:
  a known divergence, listed in docs/fidelity.md;
* ``locked``: kube-scheduler itself refuses the value (locked to its default);
* ``no effect``: kube-scheduler's scheduling code does not read the gate (other parts of
  the binary may: logging, client-go), so both values are accepted and change nothing.

docs/fidelity.md's gate table is generated from this (``gate_table_markdown``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .gates import FeatureGateError, FeatureGates, GateTable, gate_table, set_feature_gates
from .versions import KUBE_VERSIONS, minor_key

__all__ = [
    "IMPLEMENTED",
    "SUPPORT",
    "Support",
    "gate_table_markdown",
    "refusals",
    "resolve_feature_gates",
    "status",
]

IMPLEMENTED, REFUSED, GAP, LOCKED, NO_EFFECT = (
    "implemented",
    "refused",
    "gap",
    "locked",
    "no effect",
)


@dataclass(frozen=True)
class Support:
    """Whether ksched implements the gate ``on`` (enabled) and ``off``; ``note``: what is
    missing (or where the switch lives). ``on_since``: ``on`` holds from that emulated
    version only (an earlier one's behaviour under the gate is not implemented)."""

    on: bool
    off: bool
    note: str = ""
    on_since: str = ""


_WORKLOAD = "workload-aware scheduling (GenericWorkload and its plugins) is not implemented yet"

SUPPORT: dict[str, Support] = {
    # cmd/kube-scheduler
    "ComponentFlagz": Support(True, True, "/flagz"),
    "ComponentStatusz": Support(True, True, "/statusz"),
    "CoordinatedLeaderElection": Support(False, True, "no coordinated leader election"),
    # DynamicResources and the DRA allocator
    "DRAAdminAccess": Support(True, True, "adminAccess requests (ksched.dra.features)"),
    "DRAConsumableCapacity": Support(
        True,
        True,
        "allowMultipleAllocations, capacity requests and request policies (ksched.dra.features)",
    ),
    "DRADeviceBindingConditions": Support(
        True, True, "PreBind waits for binding conditions (ksched.dra.features)"
    ),
    "DRADerivedAttributes": Support(False, True, "derived device attributes in requests"),
    "DRADeviceCompatibilityGroups": Support(False, True, "device compatibility groups"),
    "DRADeviceTaintRules": Support(
        True, True, "DeviceTaintRules' taints on slices' devices (ksched.dra.taintrules)"
    ),
    "DRADeviceTaints": Support(True, True, "device taints and tolerations (ksched.dra.features)"),
    "DRAExtendedResource": Support(True, False, "ksched.dra.extended"),
    "DRAFractionalCapacityRange": Support(
        True, True, "capacity request ranges in thousandths (ksched.dra.features)"
    ),
    "DRAListTypeAttributes": Support(False, True, "list-typed device attributes"),
    "DRANodeAllocatableResources": Support(False, True, "node-allocatable DRA resources"),
    "DRAOptionalNodeOperations": Support(False, True, "devices skipping node operations"),
    "DRAPartitionableDevices": Support(True, False, "shared counters (ksched.dra.allocator)"),
    "DRAPrioritizedList": Support(True, False, "firstAvailable (ksched.dra.allocator)"),
    "DRAResourceClaimDeviceStatus": Support(
        True, True, "acts only with DRADeviceBindingConditions (binding conditions)"
    ),
    "DRASchedulerFilterTimeout": Support(True, True, "DynamicResourcesArgs.filterTimeout"),
    "DRAWorkloadResourceClaims": Support(False, True, _WORKLOAD),
    "DynamicResourceAllocation": Support(True, False, "DynamicResources in the default profile"),
    # workloads
    "CompositePodGroup": Support(False, True, _WORKLOAD),
    "PodGroupPreemptionPolicy": Support(False, True, _WORKLOAD),
    "GangScheduling": Support(False, True, _WORKLOAD),
    "GenericWorkload": Support(
        True,
        True,
        "only v1.37's pod-group cycle is implemented (scheduler.schedule_one_podgroup, with "
        "workload-aware preemption at PodGroupPostFilter)",
        on_since="1.37",
    ),
    "TopologyAwareWorkloadScheduling": Support(
        True, True, "placements (scheduler.schedule_one_podgroup)", on_since="1.37"
    ),
    "WorkloadAwarePreemption": Support(False, True, _WORKLOAD),
    # pods and nodes
    "InPlacePodLevelResourcesVerticalScaling": Support(
        False, True, "pod-level resources are read from the spec, never from a resize status"
    ),
    "InterPodAffinityHostnameFastPath": Support(
        False,
        True,
        "InterPodAffinity's per-node evaluation of kubernetes.io/hostname terms (differs from "
        "the topology maps where nodes share a hostname value or lack the label)",
    ),
    "InPlacePodVerticalScaling": Support(
        False, False, "container resources are read from the spec, never from a resize status"
    ),
    "InPlacePodVerticalScalingSchedulerPreemption": Support(
        False, True, "deferred resizes (DeferredPodScheduling, preemption for a resize)"
    ),
    "MatchLabelKeysInPodTopologySpread": Support(True, True, "matchLabelKeys"),
    "NodeDeclaredFeatures": Support(True, True, "the NodeDeclaredFeatures plugin"),
    "NodeInclusionPolicyInPodTopologySpread": Support(True, False, "node inclusion policies"),
    "PodLevelResources": Support(True, False, "pod-level requests (ksched.api.resources)"),
    "SidecarContainers": Support(True, False, "restartable init containers"),
    "TaintTolerationComparisonOperators": Support(
        True, True, "Gt/Lt toleration operators (ksched.api.selectors.tolerates_taint)"
    ),
    # storage
    "StorageCapacityScoring": Support(
        True,
        True,
        "VolumeBindingArgs.shape scores static bindings, else dynamic provisioning by "
        "CSIStorageCapacity",
    ),
    "VolumeAttributesClass": Support(False, False, "VolumeAttributesClass matching"),
    "VolumeLimitScaling": Support(
        True, True, "CSIDriver preventPodSchedulingIfMissing (NodeVolumeLimits)"
    ),
    # the scheduler and its queue
    "NominatedNodeNameForExpectation": Support(True, True, "nominating before PreBind"),
    "OpportunisticBatching": Support(
        True, True, "ksched's exact cycle cache decides as both (scheduler.cycle_cache)"
    ),
    "SchedulerAsyncAPICalls": Support(False, True, "the asynchronous API dispatcher"),
    "SchedulerAsyncPreemption": Support(True, False, "victims evicted asynchronously"),
    "SchedulerPopFromBackoffQ": Support(
        True, True, "popping from backoffQ when activeQ is empty (queue.scheduling_queue)"
    ),
    "SchedulerPreQueueingHints": Support(
        False, True, "PreQueueingHintFn narrowing (DynamicResources' claim events)"
    ),
    "SchedulerQueueingHints": Support(True, False, "queueing hints"),
}


def status(table: GateTable, name: str, value: bool) -> str:
    """The status of gate ``name`` set to ``value`` in ``table``'s version (see above)."""
    spec = table.gates[name]
    if spec.locked and value != spec.default:
        return LOCKED
    if not spec.read_by:
        return NO_EFFECT
    row = SUPPORT.get(name)
    if row is not None and (_on_at(row, table) if value else row.off):
        return IMPLEMENTED
    return GAP if value == spec.default else REFUSED


def _on_at(row: Support, table: GateTable) -> bool:
    if not row.on:
        return False
    return not row.on_since or minor_key(table.version.minor) >= minor_key(row.on_since)


def refusals(gates: FeatureGates) -> list[str]:
    """One line per gate whose effective value ksched refuses (explicit or via AllAlpha)."""
    table = gates.table
    out = []
    for name in sorted(gates.explicit):
        if name in ("AllAlpha", "AllBeta"):
            continue
        value = gates.explicit[name]
        if status(table, name, value) == REFUSED:
            row = SUPPORT.get(name)
            why = f": {row.note}" if row is not None and row.note else ""
            out.append(
                f"feature gate {name}={str(value).lower()} is not implemented by ksched"
                f"{why}; refused"
            )
    return out


def resolve_feature_gates(
    feature_gates: Sequence[str] = (), emulated_version: Sequence[str] = ()
) -> FeatureGates:
    """What ``--feature-gates``/``--emulated-version`` make of a run: kube-scheduler's checks
    and texts first (``gates.set_feature_gates``), then one line per gate value ksched does
    not implement (``refusals``). Raises ``FeatureGateError`` (exit 2)."""
    gates = set_feature_gates(feature_gates, emulated_version)
    problems = refusals(gates)
    if problems:
        err = FeatureGateError("\n".join(problems))
        err.context = "--feature-gates"
        raise err
    return gates


def gate_table_markdown() -> str:
    """docs/fidelity.md's gate table: every gate kube-scheduler's code reads in any known
    version, its stage and default per version (``locked`` when locked), and for each
    version ksched implements its status per value; "-" where a version has no such gate,
    or ksched does not implement the version at all."""
    tables = [gate_table(v.minor) for v in KUBE_VERSIONS]
    done = [t for t in tables if t.version.implemented]
    head = ["gate", *(t.version.kube for t in tables)]
    head += [f"{t.version.minor} {value}" for t in done for value in ("enabled", "disabled")]
    lines = ["| " + " | ".join([*head, "what"]) + " |", "|" + "---|" * (len(head) + 1)]
    names = sorted({n for t in tables for n, s in t.gates.items() if s.read_by})
    for name in names:
        cells = [name]
        for t in tables:
            s = t.gates.get(name)
            lock = ", locked" if s is not None and s.locked else ""
            cells.append(f"{s.stage.lower()}, {'on' if s.default else 'off'}{lock}" if s else "-")
        for t in done:
            known = name in t.gates
            cells += [status(t, name, v) if known else "-" for v in (True, False)]
        row = SUPPORT.get(name)
        cells.append(row.note if row else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
