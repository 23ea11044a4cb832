"""KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) as plain dataclasses.

Attributes are snake_case; the YAML/JSON keys are kube camelCase (see ``load``).
Durations are held as float seconds so the rest of ksched never sees Go syntax;
``parse_duration``/``format_duration`` convert at the file boundary, exactly as Go's
``time.ParseDuration`` and ``Duration.String`` do, so a dumped config reads the same
in kube-scheduler.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..framework.interface import EXTENSION_POINTS
from ..util.errors import KschedError

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "API_VERSION_V1BETA3",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "PLUGIN_SETS",
    "ClientConnection",
    "ConfigError",
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "KubeSchedulerConfiguration",
    "LeaderElection",
    "PluginConfig",
    "PluginRef",
    "PluginSet",
    "Plugins",
    "Profile",
    "format_duration",
    "parse_duration",
]

API_GROUP = "kubescheduler.config.k8s.io"
API_VERSION = f"{API_GROUP}/v1"
API_VERSION_V1BETA3 = f"{API_GROUP}/v1beta3"
KIND = "KubeSchedulerConfiguration"
# Upstream uses "default-scheduler"; ksched names its own profile so both can run side by side.
DEFAULT_SCHEDULER_NAME = "ksched"

# (attribute, YAML key) of each plugin set of ``Plugins``, in the field order of upstream's
# v1 struct: the framework's extension points (``framework.interface.EXTENSION_POINTS``,
# the one table) and multiPoint, which is config only (it expands into the others).
PLUGIN_SETS: tuple[tuple[str, str], ...] = (
    *((p.attr, p.key) for p in EXTENSION_POINTS),
    ("multi_point", "multiPoint"),
)


class ConfigError(KschedError, ValueError):
    """Every problem found in a configuration, one per line.

    Loading collects all problems before raising so a user fixes a file in one pass;
    each line already carries its source prefix (``config.yaml: path: message``).
    """

    def __init__(self, problems: list[str], warnings: list[str] | None = None) -> None:
        self.problems = list(problems)
        # Warnings gathered before the failure, so a CLI can still show them.
        self.warnings = list(warnings or [])
        super().__init__("\n".join(self.problems))

    def __str__(self) -> str:
        return "\n".join(self.problems)


@dataclass
class PluginRef:
    name: str
    weight: int | None = None


@dataclass
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[PluginRef] = field(default_factory=list)


@dataclass
class Plugins:
    pre_enqueue: PluginSet = field(default_factory=PluginSet)
    queue_sort: PluginSet = field(default_factory=PluginSet)
    pre_filter: PluginSet = field(default_factory=PluginSet)
    filter: PluginSet = field(default_factory=PluginSet)
    post_filter: PluginSet = field(default_factory=PluginSet)
    pre_score: PluginSet = field(default_factory=PluginSet)
    score: PluginSet = field(default_factory=PluginSet)
    reserve: PluginSet = field(default_factory=PluginSet)
    permit: PluginSet = field(default_factory=PluginSet)
    pre_bind: PluginSet = field(default_factory=PluginSet)
    bind: PluginSet = field(default_factory=PluginSet)
    post_bind: PluginSet = field(default_factory=PluginSet)
    multi_point: PluginSet = field(default_factory=PluginSet)

    def point(self, attr: str) -> PluginSet:
        """The plugin set of one extension point by attribute name (see PLUGIN_SETS)."""
        ps = getattr(self, attr)
        assert isinstance(ps, PluginSet)
        return ps


@dataclass
class PluginConfig:
    """Args stay a plain dict: each plugin decodes and validates its own."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)


@dataclass
class Profile:
    scheduler_name: str = ""
    # None: use the top-level value; 0 there (or None) means adaptive.
    percentage_of_nodes_to_score: int | None = None
    plugins: Plugins = field(default_factory=Plugins)
    plugin_config: list[PluginConfig] = field(default_factory=list)


@dataclass
class LeaderElection:
    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = "ksched"
    resource_namespace: str = "kube-system"


@dataclass
class ClientConnection:
    kubeconfig: str = ""
    qps: float = 50.0
    burst: int = 100
    # Upstream defaults to protobuf; ksched's client speaks JSON only.
    content_type: str = "application/json"
    accept_content_types: str = ""


@dataclass
class ExtenderTLSConfig:
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    # PEM bytes; base64 in YAML/JSON like Go's []byte.
    cert_data: bytes = b""
    key_data: bytes = b""
    ca_data: bytes = b""


@dataclass
class ExtenderManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass
class Extender:
    url_prefix: str = ""
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    # Upstream v1 has no weight default: validation rejects 0 when prioritizeVerb is set.
    weight: int = 0
    bind_verb: str = ""
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    # Upstream's extender client turns 0 into DefaultExtenderTimeout (5s); ksched makes it visible.
    http_timeout: float = 5.0
    node_cache_capable: bool = False
    managed_resources: list[ExtenderManagedResource] = field(default_factory=list)
    ignorable: bool = False


@dataclass
class KubeSchedulerConfiguration:
    api_version: str = API_VERSION
    kind: str = KIND
    parallelism: int = 16
    # None (or 0) means adaptive: 50% minus 1% per 125 nodes, at least 5%.
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    profiles: list[Profile] = field(default_factory=list)
    extenders: list[Extender] = field(default_factory=list)
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    delay_cache_until_active: bool = False


# --- Go durations ---------------------------------------------------------------

_NS = 1
_US = 1000 * _NS
_MS = 1000 * _US
_S = 1000 * _MS
_UNITS = {
    "ns": _NS,
    "us": _US,
    "µs": _US,  # U+00B5 micro sign
    "μs": _US,  # U+03BC Greek mu
    "ms": _MS,
    "s": _S,
    "m": 60 * _S,
    "h": 3600 * _S,
}
_MAX_NS = 2**63 - 1
_COMPONENT = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def parse_duration_ns(text: str) -> int:
    """Go's ``time.ParseDuration`` in integer nanoseconds (exact, no float drift)."""
    s = text
    neg = False
    if s[:1] in ("+", "-"):
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    total = 0
    pos = 0
    while pos < len(s):
        m = _COMPONENT.match(s, pos)
        assert m is not None  # the pattern matches the empty string
        whole, frac, unit = m.group(1), m.group(2), m.group(3)
        if not whole and not frac:
            raise ValueError(f"invalid duration {text!r}")
        if not unit:
            raise ValueError(f"missing unit in duration {text!r}")
        if unit not in _UNITS:
            raise ValueError(f"unknown unit {unit!r} in duration {text!r}")
        scale = _UNITS[unit]
        value = int(whole or "0") * scale
        if frac:
            # Go truncates the fractional part towards zero at nanosecond precision.
            value += int(frac) * scale // 10 ** len(frac)
        total += value
        if total > _MAX_NS:
            raise ValueError(f"invalid duration {text!r}")
        pos = m.end()
    return -total if neg else total


def parse_duration(text: str) -> float:
    """A Go duration string ("1m30s", "500ms", "2h", "1.5s") in seconds."""
    return parse_duration_ns(text) / _S


def _frac(v: int, prec: int) -> tuple[str, int]:
    """Go's fmtFrac: the fractional digits of v/10**prec without trailing zeros."""
    digits = ""
    printed = False
    for _ in range(prec):
        d = v % 10
        printed = printed or d != 0
        if printed:
            digits = str(d) + digits
        v //= 10
    return ("." + digits if printed else ""), v


def format_duration(seconds: float) -> str:
    """Seconds as Go's ``Duration.String`` would print them ("1m30s", "500ms", "2h0m0s")."""
    ns = round(seconds * _S)
    neg = ns < 0
    u = -ns if neg else ns
    if u == 0:
        return "0s"
    if u < _S:
        if u < _US:
            prec, unit = 0, "ns"
        elif u < _MS:
            prec, unit = 3, "µs"
        else:
            prec, unit = 6, "ms"
        frac, whole = _frac(u, prec)
        out = f"{whole}{frac}{unit}"
    else:
        frac, whole = _frac(u, 9)
        out = f"{whole % 60}{frac}s"
        whole //= 60
        if whole:
            out = f"{whole % 60}m{out}"
            whole //= 60
            if whole:
                out = f"{whole}h{out}"
    return "-" + out if neg else out
