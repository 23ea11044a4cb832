"""Feature gates and the emulated version, parsed and checked as kube-scheduler does.

kube-scheduler registers its gates in component-base's ``ComponentGlobalsRegistry`` and
sets them from ``--emulated-version`` and ``--feature-gates`` (``registry.Set``, then
``Validate``); the texts below are component-base's (``featuregate/feature_gate.go``,
``compatibility/registry.go``, ``compatibility/version.go``) so a command line kube-scheduler
refuses is refused here with the same words. The result is one frozen ``FeatureGates``
object that rides on the configuration into profile building and every plugin's
``Handle``: never a process global, so two schedulers in one process may differ.
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, cached_property
from types import MappingProxyType

from ..util.errors import KschedError
from .versions import BINARY, KUBE_VERSIONS, KubeVersion
from .versions import minor_key as _minor_key

__all__ = [
    "BINARY_VERSION",
    "FeatureGateError",
    "FeatureGates",
    "GateSpec",
    "GateTable",
    "default_feature_gates",
    "flagz_values",
    "gate_table",
    "set_feature_gates",
]

#: kube-scheduler's only component in its registry ("kube"); ``--feature-gates`` and
#: ``--emulated-version`` entries without a component are its.
KUBE_COMPONENT = "kube"


class FeatureGateError(KschedError, ValueError):
    """A ``--feature-gates``/``--emulated-version`` value refused before anything runs."""


@dataclass(frozen=True)
class GateSpec:
    """One gate at one version: stage, default, whether it is locked to that default, and
    which files of kube-scheduler read it (empty: no scheduling effect)."""

    name: str
    stage: str
    default: bool
    locked: bool
    read_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class GateTable:
    """Every gate a kube-scheduler version accepts (``kube_<minor>.py``, generated)."""

    version: KubeVersion
    emulation_floor: str
    gates: Mapping[str, GateSpec]
    dependencies: Mapping[str, tuple[str, ...]]


#: ksched's own "binary version": the newest version whose behaviour it implements.
BINARY_VERSION = BINARY.minor


@cache
def gate_table(minor: str) -> GateTable:
    """The gate table of version ``minor`` ("1.36"); KeyError if ksched has none."""
    row = next((v for v in KUBE_VERSIONS if v.minor == minor), None)
    if row is None:
        raise KeyError(minor)
    mod = importlib.import_module(f"{__package__}.kube_{minor.replace('.', '_')}")
    gates = {
        name: GateSpec(name, stage, default, locked, read_by)
        for name, (stage, default, locked, read_by) in mod.GATES.items()
    }
    return GateTable(
        row,
        mod.EMULATION_FLOOR,
        MappingProxyType(gates),
        MappingProxyType(dict(mod.DEPENDENCIES)),
    )


@dataclass(frozen=True)
class FeatureGates:
    """The effective gates of one scheduler: a version's table and what the user set.

    ``enabled(name)`` answers like upstream's ``featureGate.Enabled``; an unknown name is a
    programming error (KeyError), as upstream panics."""

    emulated_version: str = BINARY_VERSION
    #: the gates set on the command line (after AllAlpha/AllBeta), by name
    explicit: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def table(self) -> GateTable:
        return gate_table(self.emulated_version)

    def __deepcopy__(self, memo: dict[int, object]) -> FeatureGates:
        return self  # immutable: a copied configuration shares it

    def __reduce__(self) -> tuple[object, tuple[str, dict[str, bool]]]:
        return (_rebuild, (self.emulated_version, dict(self.explicit)))

    def __hash__(self) -> int:
        return hash((self.emulated_version, frozenset(self.explicit.items())))

    @cached_property
    def _values(self) -> Mapping[str, bool]:
        # every gate's value, worked out once: ``enabled`` runs in each binding cycle
        return MappingProxyType(self.effective())

    def enabled(self, name: str) -> bool:
        return self._values[name]

    def enabled_if_known(self, name: str) -> bool:
        """``enabled``, with a gate the emulated version does not have counted as off
        (GenericWorkload's points exist in every version's framework)."""
        return self._values.get(name, False)

    def at_least(self, minor: str) -> bool:
        """Whether the emulated version is ``minor`` ("1.37") or newer: the switch for a
        behaviour that changed between releases without a gate of its own (a message, an
        order, a metric name). A gate, where upstream has one, is the switch instead."""
        return _minor_key(self.emulated_version) >= _minor_key(minor)

    def effective(self) -> dict[str, bool]:
        """Every gate's value, by name (what ``/configz`` shows)."""
        return {name: self.explicit.get(name, s.default) for name, s in self.table.gates.items()}

    def flag_value(self) -> str:
        """The explicitly set gates as ``--feature-gates`` takes them (sorted)."""
        return ",".join(f"{k}={str(v).lower()}" for k, v in sorted(self.explicit.items()))


def _rebuild(emulated_version: str, explicit: dict[str, bool]) -> FeatureGates:
    return FeatureGates(emulated_version, MappingProxyType(explicit))


@cache
def default_feature_gates() -> FeatureGates:
    return FeatureGates()


# --- parsing, as component-base does -----------------------------------------------------


_SHOWN = 100  # characters of a user's value an error quotes, at most


def _cut(text: str) -> str:
    """A user's value as an error shows it: whole up to ``_SHOWN`` characters (every real
    gate name and version), else its start and its length, so a hostile flag cannot
    flood the terminal or the log."""
    if len(text) <= _SHOWN:
        return text
    return f"{text[:_SHOWN]}...({len(text)} characters)"


def _q(text: str) -> str:
    """Go's ``%q`` of a user's value (cut as ``_cut``)."""
    return json.dumps(_cut(text), ensure_ascii=False)


def _aggregate(errors: Sequence[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message, or ``[a, b]`` without repeats."""
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


_VERSION = re.compile(r"^\s*v?([0-9]+(?:\.[0-9]+)*)(.*)$", re.S)
_SEMVER_EXTRA = re.compile(
    r"^(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?\s*$"
)


def _parse_version(text: str) -> tuple[tuple[int, ...], str]:
    """apimachinery ``version.Parse``: (components, as ``String()`` prints it); semantic
    (three numbers and a suffix) first, else generic (two or more numbers)."""
    m = _VERSION.match(text)
    if m is None:
        raise FeatureGateError(f"could not parse {_q(text)} as version")
    comps, extra = m[1].split("."), m[2]
    semver_extra = _SEMVER_EXTRA.match(extra)
    if (
        len(comps) == 3
        and semver_extra is not None
        and not any(c.startswith("0") and c != "0" for c in comps)
    ):
        shown = ".".join(str(int(c)) for c in comps) + extra.rstrip()
        return tuple(int(c) for c in comps), shown
    if len(comps) < 2:
        raise FeatureGateError(f"illegal version string {_q(text)}")
    if comps[0].startswith("0") and comps[0] != "0":
        raise FeatureGateError(
            f"illegal zero-prefixed version component {_q(comps[0])} in {_q(text)}"
        )
    nums = tuple(int(c) for c in comps)
    return nums, ".".join(str(n) for n in nums)


def _emulated_version(values: Sequence[str]) -> str | None:
    """``toVersionMap`` of ``--emulated-version`` (a comma-separated list, repeatable)."""
    seen: dict[str, tuple[str, str]] = {}  # component -> (major.minor, as given)
    # a string slice flag: an empty value is no item, "a," is "a" and ""
    for item in (s for v in values if v for s in v.split(",")):
        comp, ver = KUBE_COMPONENT, item
        if "=" in item:
            comp, _, ver = item.partition("=")
            comp, ver = comp.strip(), ver.strip()
        nums, shown = _parse_version(ver)
        if len(nums) > 2 and nums[2] != 0:
            raise FeatureGateError(f"patch version not allowed, got: {_cut(comp)}={_cut(shown)}")
        if comp in seen:
            raise FeatureGateError(
                f"duplicate version flag, {_cut(comp)}={_cut(seen[comp][1])} and "
                f"{_cut(comp)}={_cut(shown)}"
            )
        seen[comp] = (f"{nums[0]}.{nums[1]}", shown)
    for comp in seen:
        if comp != KUBE_COMPONENT:
            raise FeatureGateError(f"component not registered: {_cut(comp)}")
    return seen[KUBE_COMPONENT][0] if KUBE_COMPONENT in seen else None


def _gate_pairs(values: Sequence[str]) -> list[str]:
    """``ColonSeparatedMultimapStringString`` of ``--feature-gates``: the kube pairs."""
    by_comp: dict[str, list[str]] = {}
    for pair in (s for v in values for s in v.split(",")):
        if not pair:
            continue
        comp, sep, rest = pair.partition(":")
        key, value = (comp.strip(), rest.strip()) if sep else ("", pair.strip())
        by_comp.setdefault(key, []).append(value)
    if "" in by_comp and KUBE_COMPONENT in by_comp:
        raise FeatureGateError(
            "set kube feature gates with default empty prefix or kube: prefix consistently, "
            "do not mix use"
        )
    for comp in by_comp:
        if comp not in ("", KUBE_COMPONENT):
            raise FeatureGateError(f"component not registered: {_cut(comp)}")
    return [p for pairs in by_comp.values() for p in pairs]


_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def _parse_bool(key: str, value: str) -> bool:
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    raise FeatureGateError(
        f"invalid value of {_cut(key)}={_cut(value)}, err: strconv.ParseBool: parsing "
        f"{_q(value)}: invalid syntax"
    )


def _requested(pairs: Iterable[str]) -> dict[str, bool]:
    """``featureGate.Set``: ``k=v`` pairs into a map (a later pair wins)."""
    out: dict[str, bool] = {}
    for s in pairs:
        if not s:
            continue
        k, sep, v = s.partition("=")
        k = k.strip()
        if not sep:
            raise FeatureGateError(f"missing bool value for {_cut(k)}")
        out[k] = _parse_bool(k, v.strip())
    return out


def _set_from_map(table: GateTable, requested: Mapping[str, bool]) -> dict[str, bool]:
    """``unsafeSetFromMap``: the explicit map, or kube-scheduler's refusal. Gates are
    visited in name order (Go's map order is random, so any order is one it may take)."""
    errs: list[str] = []
    enabled: dict[str, bool] = {}
    special: list[tuple[str, bool]] = []
    for k in sorted(requested):
        v = requested[k]
        spec = table.gates.get(k)
        if spec is None:
            errs.append(f"unrecognized feature gate: {_cut(k)}")
            raise FeatureGateError(_aggregate(errs))
        if spec.locked and spec.default != v:
            errs.append(
                f"cannot set feature gate {k} to {str(v).lower()}, feature is locked to "
                f"{str(spec.default).lower()}"
            )
            continue
        if k in ("AllAlpha", "AllBeta"):
            special.append((k, v))
            enabled[k] = v
            continue
        if spec.stage == "PreAlpha":
            emu = table.version.minor
            errs.append(
                f"cannot set feature gate {k} to {str(v).lower()}, feature is PreAlpha at "
                f"emulated version {emu}, min compatibility version {_previous(emu)}"
            )
            continue
        enabled[k] = v
    if errs:
        raise FeatureGateError(_aggregate(errs))
    for k, v in special:
        stage = "ALPHA" if k == "AllAlpha" else "BETA"
        for name, spec in table.gates.items():
            if name not in ("AllAlpha", "AllBeta") and spec.stage == stage:
                enabled.setdefault(name, v)

    def on(name: str) -> bool:
        return enabled.get(name, table.gates[name].default)

    for feature in sorted(table.dependencies):
        if not on(feature):
            continue
        off = [d for d in table.dependencies[feature] if not on(d)]
        if off:
            errs.append(
                f"{feature} is enabled, but depends on features that are disabled: "
                f"[{' '.join(off)}]"
            )
    if errs:
        raise FeatureGateError(_aggregate(errs))
    return enabled


def _previous(minor: str) -> str:
    major, m = _minor_key(minor)
    return f"{major}.{m - 1}"


def set_feature_gates(
    feature_gates: Sequence[str] = (), emulated_version: Sequence[str] = ()
) -> FeatureGates:
    """``--feature-gates`` and ``--emulated-version`` values (each flag's occurrences, in
    order) into the effective gates, or a ``FeatureGateError`` with kube-scheduler's text:
    first ``registry.Set`` (versions, then gates), then ``Validate`` (the version range).
    A version kube-scheduler would accept but ksched does not implement is refused after
    those, in ksched's words. Whether ksched implements each gate's value is
    ``support.resolve_feature_gates``' question."""
    with _about("--emulated-version"):
        version = _emulated_version(emulated_version) or BINARY_VERSION
    # The gates ksched's binary knows: those of the version it emulates when it implements
    # it (v1.36.3's at 1.36), else its own binary version's, as a binary's specs are at
    # any other emulated version (kube then refuses that version, or ksched does below).
    implemented = any(v.minor == version and v.implemented for v in KUBE_VERSIONS)
    table = gate_table(version if implemented else BINARY_VERSION)
    with _about("--feature-gates"):
        explicit = _set_from_map(table, _requested(_gate_pairs(feature_gates)))
    with _about("--emulated-version"):
        errs = _version_range(version, gate_table(BINARY_VERSION).emulation_floor)
        if errs:
            raise FeatureGateError(_aggregate(errs))
        if not implemented:
            rows = [v for v in KUBE_VERSIONS if v.implemented]
            raise FeatureGateError(
                f"emulation version {version} is not implemented by ksched: it emulates "
                + ", ".join(f"kube-scheduler {v.kube} (--emulated-version {v.minor})" for v in rows)
                + (" only" if len(rows) == 1 else "")
            )
    return FeatureGates(version, MappingProxyType(explicit))


@contextmanager
def _about(flag: str) -> Iterator[None]:
    """Errors raised inside are about ``flag`` (the CLI prints it before them)."""
    try:
        yield
    except FeatureGateError as e:
        e.context = e.context or flag
        raise


def flagz_values(feature_gates: Sequence[str], emulated_version: Sequence[str]) -> dict[str, str]:
    """The two flags as kube-scheduler's ``/flagz`` prints them: ``--feature-gates`` as its
    ``ColonSeparatedMultimapStringString`` (``component:Name=bool``, the component empty
    when not given, stable-sorted by it), ``--emulated-version`` as a pflag string slice."""
    pairs = []
    for item in (p for v in feature_gates for p in v.split(",") if p):
        comp, sep, rest = item.partition(":")
        pairs.append((comp.strip(), rest.strip()) if sep else ("", item.strip()))
    pairs.sort(key=lambda kv: kv[0])
    versions = [item for v in emulated_version for item in v.split(",")]
    return {
        "feature-gates": ",".join(f"{k}:{v}" for k, v in pairs),
        "emulated-version": "[" + ",".join(versions) + "]",
    }


def _version_range(version: str, floor: str) -> list[str]:
    """``effectiveVersion.Validate``: the emulated version within [floor, binary], and the
    min compatibility version (the emulated one's predecessor, at least the floor) within
    [floor, emulated]."""
    errs = []
    key, low = _minor_key(version), _minor_key(floor)
    if key > _minor_key(BINARY_VERSION) or key < low:
        errs.append(f"emulation version {version} is not between [{floor}, {BINARY_VERSION}.0]")
    compat = max((key[0], key[1] - 1), low)
    if compat > key:
        errs.append(
            f"minCompatibilityVersion version {compat[0]}.{compat[1]} is not between "
            f"[{floor}, {version}]"
        )
    return errs
