"""KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) as plain dataclasses.

Attributes are snake_case; the YAML/JSON keys are kube camelCase (see ``load``).
Durations are held as float seconds so the rest of ksched never sees Go syntax;
``parse_duration``/``format_duration`` convert at the file boundary, exactly as Go's
``time.ParseDuration`` and ``Duration.String`` do, so a dumped config reads the same
in kube-scheduler.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..features import FeatureGates, default_feature_gates
from ..features.versions import minor_key
from ..framework.interface import EXTENSION_POINTS
from ..util.duration import format_duration, parse_duration, parse_duration_ns
from ..util.errors import KschedError

__all__ = [
    "API_GROUP",
    "API_VERSION",
    "API_VERSION_V1BETA3",
    "DEFAULT_SCHEDULER_NAME",
    "KIND",
    "PLUGIN_SETS",
    "WORKLOAD_PLUGIN_SETS",
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
    "WorkloadPluginSet",
    "format_duration",
    "parse_duration",
    "parse_duration_ns",
    "plugin_sets",
    "workload_plugin_sets",
]

API_GROUP = "kubescheduler.config.k8s.io"
API_VERSION = f"{API_GROUP}/v1"
API_VERSION_V1BETA3 = f"{API_GROUP}/v1beta3"
KIND = "KubeSchedulerConfiguration"
# Upstream uses "default-scheduler"; ksched names its own profile so both can run side by side.
DEFAULT_SCHEDULER_NAME = "ksched"

# (attribute, YAML key) of each plugin set of ``Plugins``, in the field order of upstream's
# v1 struct: the framework's extension points every version has
# (``framework.interface.EXTENSION_POINTS``, the one table) and multiPoint, which is config
# only (it expands into the others).
PLUGIN_SETS: tuple[tuple[str, str], ...] = (
    *((p.attr, p.key) for p in EXTENSION_POINTS if not p.since),
    ("multi_point", "multiPoint"),
)


@dataclass(frozen=True)
class WorkloadPluginSet:
    """A plugin set of workload-aware scheduling (the table's points with a ``since``):
    ``key`` is in the config from version ``since`` (a file naming it earlier is refused,
    as upstream's strict decoding refuses an unknown field); of the in-tree plugins it
    holds only those that extend it upstream (``plugins``; upstream's framework refuses
    any other, ``label`` naming its interface)."""

    attr: str
    key: str
    label: str
    since: str
    plugins: frozenset[str]


#: Upstream's v1 ``Plugins`` fields after multiPoint, in order.
WORKLOAD_PLUGIN_SETS: tuple[WorkloadPluginSet, ...] = tuple(
    WorkloadPluginSet(p.attr, p.key, f"{p.label}Plugin", p.since, p.in_tree)
    for p in EXTENSION_POINTS
    if p.since and p.configured
)


def workload_plugin_sets(version: str) -> tuple[WorkloadPluginSet, ...]:
    """The workload plugin sets a config has at emulated ``version``."""
    return tuple(w for w in WORKLOAD_PLUGIN_SETS if minor_key(w.since) <= minor_key(version))


def plugin_sets(version: str) -> tuple[tuple[str, str], ...]:
    """(attribute, YAML key) of every plugin set a config has at emulated ``version``."""
    return (*PLUGIN_SETS, *((w.attr, w.key) for w in workload_plugin_sets(version)))


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
    # workload-aware scheduling's (``WORKLOAD_PLUGIN_SETS``)
    placement_generate: PluginSet = field(default_factory=PluginSet)
    placement_score: PluginSet = field(default_factory=PluginSet)
    pod_group_post_filter: PluginSet = field(default_factory=PluginSet)

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
    # Not in the file: the effective feature gates and emulated version (command-line
    # flags) this configuration is defaulted, validated and run under.
    features: FeatureGates = field(default_factory=default_feature_gates)
