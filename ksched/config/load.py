"""Reading and writing KubeSchedulerConfiguration files (YAML or JSON).

The decoder is hand-written rather than msgspec so that one pass reports every
unknown field and wrong type with its full kube path, like kube-scheduler's strict
decoding but without stopping at the first problem.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Collection, Hashable, Mapping
from typing import Any, TypeVar

import yaml

from ksched.config import kubeyaml
from ksched.config.defaults import (
    PLUGINS_WITH_DEFAULT_ARGS,
    set_defaults,
)
from ksched.config.types import (
    API_GROUP,
    API_VERSION,
    API_VERSION_V1BETA3,
    DEFAULT_SCHEDULER_NAME,
    KIND,
    ClientConnection,
    ConfigError,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    KubeSchedulerConfiguration,
    LeaderElection,
    PluginConfig,
    PluginRef,
    Plugins,
    PluginSet,
    Profile,
    format_duration,
    parse_duration,
    plugin_sets,
)
from ksched.config.validation import unknown_plugin_config, validate
from ksched.features import BINARY_VERSION, FeatureGates, default_feature_gates
from ksched.framework.args import got
from ksched.util.limits import BoundedLoaderMixin, loads_json

__all__ = [
    "DEFAULT_SOURCE",
    "decode_config",
    "default_config",
    "dump_yaml",
    "load_config",
    "load_config_data",
    "to_dict",
    "validate_file",
]

DEFAULT_SOURCE = "<default>"

_CHANGE = f"change apiVersion to {API_VERSION}"
_REMOVED_VERSIONS = {
    f"{API_GROUP}/v1alpha1": (
        f"{_CHANGE}: schedulerName and algorithmSource (Policy predicates/priorities) "
        "became profiles[] with plugins and pluginConfig"
    ),
    f"{API_GROUP}/v1alpha2": (
        f"{_CHANGE}: default plugins are now listed under plugins.multiPoint and "
        "plugin args are typed"
    ),
    f"{API_GROUP}/v1beta1": (
        f"{_CHANGE}: NodeResourcesLeastAllocated/MostAllocated/RequestedToCapacityRatio "
        "became NodeResourcesFit scoringStrategy types, NodeLabel/ServiceAffinity/"
        "NodePreferAvoidPods were removed, default plugins moved to plugins.multiPoint"
    ),
    f"{API_GROUP}/v1beta2": (
        f"{_CHANGE}: default plugins moved to plugins.multiPoint and default score "
        "weights changed (TaintToleration 3, NodeAffinity 2, InterPodAffinity 2)"
    ),
}
_V1BETA3_WARNING = (
    f"apiVersion: {API_VERSION_V1BETA3} is deprecated (removed from kube-scheduler in "
    f"Kubernetes 1.29); it is read as v1, {_CHANGE}"
)
_POLICY = (
    "kind: Policy: the scheduler Policy API was removed in Kubernetes 1.23; use a "
    f"{KIND} (apiVersion: {API_VERSION}) with profiles and plugins instead"
)

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

_T = TypeVar("_T")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class _Decoder:
    """Collects problems while turning plain YAML/JSON data into dataclasses.

    Every typed getter returns the default on a problem so decoding goes on and later
    fields are still checked. A null value counts as absent, as for Go pointers.
    """

    def __init__(self, version: str = BINARY_VERSION) -> None:
        self.problems: list[str] = []
        # the emulated version whose fields the config may have
        self.version = version

    def fail(self, path: str, msg: str) -> None:
        self.problems.append(f"{path}: {msg}" if path else msg)

    def obj(
        self,
        raw: Any,
        path: str,
        fields: Collection[str],
        unknown: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """``raw`` as an object of ``fields``; ``unknown`` words the problem of some
        unknown ones."""
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.fail(path, f"must be an object, got {got(raw)}")
            return {}
        out: dict[str, Any] = {}
        for key, value in raw.items():
            if key not in fields:
                self.fail(_join(path, str(key)), (unknown or {}).get(key, "unknown field"))
            elif value is not None:
                out[key] = value
        return out

    def _get(
        self,
        m: dict[str, Any],
        key: str,
        path: str,
        default: _T,
        check: Callable[[Any], bool],
        want: str,
    ) -> _T:
        if key not in m:
            return default
        value = m[key]
        if not check(value):
            self.fail(_join(path, key), f"must be {want}, got {got(value)}")
            return default
        return value  # type: ignore[no-any-return]

    def string(self, m: dict[str, Any], key: str, path: str, default: str = "") -> str:
        return self._get(m, key, path, default, lambda v: isinstance(v, str), "a string")

    def boolean(self, m: dict[str, Any], key: str, path: str, default: bool = False) -> bool:
        return self._get(m, key, path, default, lambda v: isinstance(v, bool), "a boolean")

    def number(self, m: dict[str, Any], key: str, path: str, default: float) -> float:
        value = self._get(
            m,
            key,
            path,
            default,
            lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            "a number",
        )
        return float(value)

    def opt_int(
        self, m: dict[str, Any], key: str, path: str, bounds: tuple[int, int] = _INT32
    ) -> int | None:
        if key not in m:
            return None
        value = m[key]
        if not isinstance(value, int) or isinstance(value, bool):
            self.fail(_join(path, key), f"must be an integer, got {got(value)}")
            return None
        if not bounds[0] <= value <= bounds[1]:
            bits = 32 if bounds == _INT32 else 64
            self.fail(_join(path, key), f"must be a {bits}-bit integer, got {value}")
            return None
        return value

    def integer(
        self,
        m: dict[str, Any],
        key: str,
        path: str,
        default: int,
        bounds: tuple[int, int] = _INT32,
    ) -> int:
        value = self.opt_int(m, key, path, bounds)
        return default if value is None else value

    def duration(self, m: dict[str, Any], key: str, path: str, default: float) -> float:
        if key not in m:
            return default
        value = m[key]
        where = _join(path, key)
        if not isinstance(value, str):
            self.fail(where, f'must be a duration string like "15s" or "1m30s", got {got(value)}')
            return default
        try:
            return parse_duration(value)
        except ValueError as e:
            self.fail(where, str(e))
            return default

    def data(self, m: dict[str, Any], key: str, path: str) -> bytes:
        value = self.string(m, key, path)
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            self.fail(_join(path, key), "must be base64-encoded data")
            return b""

    def items(self, m: dict[str, Any], key: str, path: str) -> list[tuple[str, Any]]:
        if key not in m:
            return []
        value = m[key]
        where = _join(path, key)
        if not isinstance(value, list):
            self.fail(where, f"must be a list, got {got(value)}")
            return []
        return [(f"{where}[{i}]", v) for i, v in enumerate(value)]


# --- sections --------------------------------------------------------------------


def _plugin_set(d: _Decoder, raw: Any, path: str) -> PluginSet:
    m = d.obj(raw, path, ("enabled", "disabled"))
    lists: dict[str, list[PluginRef]] = {}
    for key in ("enabled", "disabled"):
        refs = []
        for where, item in d.items(m, key, path):
            pm = d.obj(item, where, ("name", "weight"))
            refs.append(PluginRef(d.string(pm, "name", where), d.opt_int(pm, "weight", where)))
        lists[key] = refs
    return PluginSet(enabled=lists["enabled"], disabled=lists["disabled"])


def _plugins(d: _Decoder, raw: Any, path: str) -> Plugins:
    sets = plugin_sets(d.version)
    m = d.obj(raw, path, [key for _, key in sets])
    plugins = Plugins()
    for attr, key in sets:
        setattr(plugins, attr, _plugin_set(d, m.get(key), _join(path, key)))
    return plugins


def _plugin_config(d: _Decoder, raw: Any, path: str) -> PluginConfig:
    m = d.obj(raw, path, ("name", "args"))
    name = d.string(m, "name", path)
    args_path = _join(path, "args")
    args = m.get("args", {})
    if not isinstance(args, dict):
        d.fail(args_path, f"must be an object, got {got(args)}")
        return PluginConfig(name)
    args = dict(args)
    if name in PLUGINS_WITH_DEFAULT_ARGS:
        # In-tree args may carry their typed kind, as upstream's nested decoding allows;
        # it must match and is dropped so plugins see only their own fields.
        kind = args.pop("kind", None)
        version = args.pop("apiVersion", None)
        if kind is not None and kind != f"{name}Args":
            d.fail(_join(args_path, "kind"), f'must be "{name}Args", got {got(kind)}')
        if version is not None and version not in (API_VERSION, API_VERSION_V1BETA3):
            d.fail(_join(args_path, "apiVersion"), f'must be "{API_VERSION}", got {got(version)}')
    return PluginConfig(name, args)


def _profile(d: _Decoder, raw: Any, path: str, only: bool) -> Profile:
    m = d.obj(raw, path, ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"))
    # Upstream names a lone profile only when schedulerName is absent (nil), not "".
    default_name = DEFAULT_SCHEDULER_NAME if only else ""
    return Profile(
        scheduler_name=d.string(m, "schedulerName", path, default_name),
        percentage_of_nodes_to_score=d.opt_int(m, "percentageOfNodesToScore", path),
        plugins=_plugins(d, m.get("plugins"), _join(path, "plugins")),
        plugin_config=[_plugin_config(d, r, w) for w, r in d.items(m, "pluginConfig", path)],
    )


def _leader_election(d: _Decoder, raw: Any, path: str) -> LeaderElection:
    m = d.obj(
        raw,
        path,
        (
            "leaderElect",
            "leaseDuration",
            "renewDeadline",
            "retryPeriod",
            "resourceLock",
            "resourceName",
            "resourceNamespace",
        ),
    )
    le = LeaderElection()
    return LeaderElection(
        leader_elect=d.boolean(m, "leaderElect", path, le.leader_elect),
        lease_duration=d.duration(m, "leaseDuration", path, le.lease_duration),
        renew_deadline=d.duration(m, "renewDeadline", path, le.renew_deadline),
        retry_period=d.duration(m, "retryPeriod", path, le.retry_period),
        resource_lock=d.string(m, "resourceLock", path, le.resource_lock),
        resource_name=d.string(m, "resourceName", path, le.resource_name),
        resource_namespace=d.string(m, "resourceNamespace", path, le.resource_namespace),
    )


def _client_connection(d: _Decoder, raw: Any, path: str) -> ClientConnection:
    m = d.obj(raw, path, ("kubeconfig", "qps", "burst", "contentType", "acceptContentTypes"))
    cc = ClientConnection()
    return ClientConnection(
        kubeconfig=d.string(m, "kubeconfig", path),
        qps=d.number(m, "qps", path, cc.qps),
        burst=d.integer(m, "burst", path, cc.burst),
        content_type=d.string(m, "contentType", path, cc.content_type),
        accept_content_types=d.string(m, "acceptContentTypes", path),
    )


def _tls_config(d: _Decoder, raw: Any, path: str) -> ExtenderTLSConfig:
    m = d.obj(
        raw,
        path,
        (
            "insecure",
            "serverName",
            "certFile",
            "keyFile",
            "caFile",
            "certData",
            "keyData",
            "caData",
        ),
    )
    return ExtenderTLSConfig(
        insecure=d.boolean(m, "insecure", path),
        server_name=d.string(m, "serverName", path),
        cert_file=d.string(m, "certFile", path),
        key_file=d.string(m, "keyFile", path),
        ca_file=d.string(m, "caFile", path),
        cert_data=d.data(m, "certData", path),
        key_data=d.data(m, "keyData", path),
        ca_data=d.data(m, "caData", path),
    )


def _extender(d: _Decoder, raw: Any, path: str) -> Extender:
    m = d.obj(
        raw,
        path,
        (
            "urlPrefix",
            "filterVerb",
            "preemptVerb",
            "prioritizeVerb",
            "weight",
            "bindVerb",
            "enableHTTPS",
            "tlsConfig",
            "httpTimeout",
            "nodeCacheCapable",
            "managedResources",
            "ignorable",
        ),
    )
    ext = Extender(
        url_prefix=d.string(m, "urlPrefix", path),
        filter_verb=d.string(m, "filterVerb", path),
        preempt_verb=d.string(m, "preemptVerb", path),
        prioritize_verb=d.string(m, "prioritizeVerb", path),
        weight=d.integer(m, "weight", path, 0, _INT64),
        bind_verb=d.string(m, "bindVerb", path),
        enable_https=d.boolean(m, "enableHTTPS", path),
    )
    if m.get("tlsConfig") is not None:
        ext.tls_config = _tls_config(d, m["tlsConfig"], _join(path, "tlsConfig"))
    ext.http_timeout = d.duration(m, "httpTimeout", path, ext.http_timeout)
    ext.node_cache_capable = d.boolean(m, "nodeCacheCapable", path)
    for where, item in d.items(m, "managedResources", path):
        rm = d.obj(item, where, ("name", "ignoredByScheduler"))
        ext.managed_resources.append(
            ExtenderManagedResource(
                d.string(rm, "name", where), d.boolean(rm, "ignoredByScheduler", where)
            )
        )
    ext.ignorable = d.boolean(m, "ignorable", path)
    return ext


_TOP_FIELDS = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
    # Accepted for kube-scheduler compatibility (DebuggingConfiguration); ksched has no use
    # for them.
    "enableProfiling",
    "enableContentionProfiling",
)
# Fields older versions had that v1 (and so kube-scheduler) refuses as unknown.
_GONE_FIELDS = {
    key: "unknown field (removed from KubeSchedulerConfiguration before v1; kube-scheduler "
    "serves /healthz and /metrics on its secure port)"
    for key in ("healthzBindAddress", "metricsBindAddress")
}


def _type_meta(d: _Decoder, data: dict[str, Any], warnings: list[str]) -> str:
    """Checks apiVersion/kind first: a wrong one makes every other error noise."""
    kind = data.get("kind")
    if kind == "Policy":
        d.fail("", _POLICY)
        return ""
    version = data.get("apiVersion")
    if version is None:
        d.fail("apiVersion", "Required value")
    elif not isinstance(version, str):
        d.fail("apiVersion", f"must be a string, got {got(version)}")
    elif version in _REMOVED_VERSIONS:
        d.fail("apiVersion", f"{version} is no longer supported; {_REMOVED_VERSIONS[version]}")
    elif version == API_VERSION_V1BETA3:
        warnings.append(_V1BETA3_WARNING)
    elif version != API_VERSION:
        d.fail(
            "apiVersion",
            f"Unsupported value: {json.dumps(version)}: supported values: "
            f'"{API_VERSION}", "{API_VERSION_V1BETA3}" (deprecated)',
        )
    if kind is None:
        d.fail("kind", "Required value")
    elif kind != KIND:
        d.fail("kind", f'Unsupported value: {json.dumps(kind)}: supported values: "{KIND}"')
    return version if isinstance(version, str) else ""


def decode_config(
    data: Any, version: str = BINARY_VERSION
) -> tuple[KubeSchedulerConfiguration | None, list[str], list[str]]:
    """Plain data to an undefaulted config: (config or None, problems, warnings), with the
    fields of emulated ``version``.

    Problems and warnings carry kube paths but no source prefix.
    """
    d = _Decoder(version)
    warnings: list[str] = []
    if data is None:
        data = {}
    if not isinstance(data, dict):
        return None, [f"must be an object, got {got(data)}"], warnings
    version = _type_meta(d, data, warnings)
    if d.problems:
        return None, d.problems, warnings
    m = d.obj(data, "", _TOP_FIELDS, _GONE_FIELDS)
    for key in ("enableProfiling", "enableContentionProfiling"):
        d.boolean(m, key, "")
    # Decoded in upstream struct order so problems come out in a predictable order.
    parallelism = d.integer(m, "parallelism", "", 16)
    leader_election = _leader_election(d, m.get("leaderElection"), "leaderElection")
    client_connection = _client_connection(d, m.get("clientConnection"), "clientConnection")
    percentage = d.opt_int(m, "percentageOfNodesToScore", "")
    initial_backoff = d.integer(m, "podInitialBackoffSeconds", "", 1, _INT64)
    max_backoff = d.integer(m, "podMaxBackoffSeconds", "", 10, _INT64)
    profile_items = d.items(m, "profiles", "")
    only = len(profile_items) == 1
    profiles = [_profile(d, raw, where, only) for where, raw in profile_items]
    extenders = [_extender(d, raw, where) for where, raw in d.items(m, "extenders", "")]
    cfg = KubeSchedulerConfiguration(
        api_version=version,
        kind=KIND,
        parallelism=parallelism,
        percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_seconds=initial_backoff,
        pod_max_backoff_seconds=max_backoff,
        profiles=profiles,
        extenders=extenders,
        leader_election=leader_election,
        client_connection=client_connection,
        delay_cache_until_active=d.boolean(m, "delayCacheUntilActive", ""),
    )
    if d.problems:
        return None, d.problems, warnings
    return cfg, [], warnings


def _prefix(source: str, lines: list[str]) -> list[str]:
    return [f"{source}: {line}" for line in lines]


def load_config_data(
    data: Any,
    source: str = "<data>",
    known_plugins: Collection[str] | None = None,
    features: FeatureGates | None = None,
) -> tuple[KubeSchedulerConfiguration, list[str]]:
    """Decode, default and validate already-parsed data; returns (config, warnings).

    Raises ConfigError listing every problem, each line prefixed with ``source``.
    ``known_plugins`` enables the plugin-name check (see ``validate``) and a warning for
    each pluginConfig entry that names no known plugin. ``features``: the feature gates
    (``--feature-gates``, ``--emulated-version``) the file is defaulted and validated
    under, and which the config then carries; the default gates if None.
    """
    version = (features or default_feature_gates()).emulated_version
    cfg, problems, warnings = decode_config(data, version)
    if cfg is None:
        raise ConfigError(_prefix(source, problems), _prefix(source, warnings))
    if features is not None:
        cfg.features = features
    warnings += set_defaults(cfg)
    if known_plugins is not None:
        warnings += unknown_plugin_config(cfg, known_plugins)
    problems = validate(cfg, known_plugins)
    if problems:
        raise ConfigError(_prefix(source, problems), _prefix(source, warnings))
    return cfg, _prefix(source, warnings)


class _StrictLoader(BoundedLoaderMixin, kubeyaml.Loader):
    """YAML as kube-scheduler reads it (``kubeyaml``), refusing a key set twice in a mapping
    as kube's strict decoding does: merged in (``<<``) or written out, in either order;
    nesting and alias expansion bounded (``ksched.util.limits``)."""

    _MERGE = "tag:yaml.org,2002:merge"

    def construct_document(self, node: yaml.Node) -> Any:
        # Before construction, which flattens merges into the mappings it builds.
        self._check_keys(node, set())
        return super().construct_document(node)

    def _check_keys(self, node: yaml.Node, visited: set[int]) -> None:
        if id(node) in visited:
            return
        visited.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for item in node.value:
                self._check_keys(item, visited)
        elif isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, value_node in node.value:
                self._check_keys(value_node, visited)
                merged = key_node.tag == self._MERGE
                for k in self._merged_keys(value_node) if merged else [key_node]:
                    key = self.construct_object(k, deep=True)
                    if isinstance(key, Hashable):
                        if key in seen:
                            raise yaml.constructor.ConstructorError(
                                None, None, f"duplicate key {key!r}", key_node.start_mark
                            )
                        seen.add(key)

    def _merged_keys(self, node: yaml.Node) -> list[yaml.Node]:
        """The key nodes a ``<<`` value sets: a mapping's (its own merges included) or, for
        a list of mappings, each one's."""
        if isinstance(node, yaml.SequenceNode):
            return [k for item in node.value for k in self._merged_keys(item)]
        if not isinstance(node, yaml.MappingNode):
            return []
        out: list[yaml.Node] = []
        for key_node, value_node in node.value:
            if key_node.tag == self._MERGE:
                out += self._merged_keys(value_node)
            else:
                out.append(key_node)
        return out


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _parse(text: str, source: str) -> Any:
    if source.endswith(".json"):
        try:
            return loads_json(text, object_pairs_hook=_json_pairs)
        except json.JSONDecodeError as e:
            raise ConfigError([f"{source}: line {e.lineno}, column {e.colno}: {e.msg}"]) from e
        except ValueError as e:
            raise ConfigError([f"{source}: {e}"]) from e
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError([f"{source}: {where}{e.problem}"]) from None
    except yaml.YAMLError as e:
        raise ConfigError([f"{source}: {' '.join(str(e).split())}"]) from e


def default_config(features: FeatureGates | None = None) -> KubeSchedulerConfiguration:
    """The configuration used when no file is given: every field defaulted (under
    ``features``, the default gates if None)."""
    cfg = KubeSchedulerConfiguration()
    if features is not None:
        cfg.features = features
    set_defaults(cfg)
    return cfg


def load_config(
    path: str | None,
    known_plugins: Collection[str] | None = None,
    features: FeatureGates | None = None,
) -> tuple[KubeSchedulerConfiguration, list[str]]:
    """Load a YAML or JSON file (``.json`` is parsed as JSON); returns (config, warnings).

    ``None`` gives ``default_config()``. Raises ConfigError (lines prefixed with
    ``path``) for unreadable files, decode problems and validation problems alike.
    ``features``: as for ``load_config_data``.
    """
    if path is None:
        return default_config(features), []
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise ConfigError([f"{path}: cannot read: {reason}"]) from e
    return load_config_data(_parse(text, path), path, known_plugins, features)


def validate_file(
    path: str,
    known_plugins: Collection[str] | None = None,
    features: FeatureGates | None = None,
) -> tuple[str | None, list[str], list[str]]:
    """What ``ksched config validate FILE`` reports: (effective YAML, problems, warnings).

    The YAML is None exactly when there are problems; all lines are source-prefixed.
    """
    try:
        cfg, warnings = load_config(path, known_plugins, features)
    except ConfigError as e:
        return None, e.problems, e.warnings
    return dump_yaml(cfg), [], warnings


# --- output ----------------------------------------------------------------------


def _refs(refs: list[PluginRef]) -> list[dict[str, Any]]:
    out = []
    for p in refs:
        item: dict[str, Any] = {"name": p.name}
        if p.weight is not None:
            item["weight"] = p.weight
        out.append(item)
    return out


def _plugin_set_dict(ps: PluginSet) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if ps.enabled:
        out["enabled"] = _refs(ps.enabled)
    if ps.disabled:
        out["disabled"] = _refs(ps.disabled)
    return out


def _profile_dict(prof: Profile, version: str) -> dict[str, Any]:
    out: dict[str, Any] = {"schedulerName": prof.scheduler_name}
    if prof.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = prof.percentage_of_nodes_to_score
    out["plugins"] = {
        key: _plugin_set_dict(prof.plugins.point(attr)) for attr, key in plugin_sets(version)
    }
    out["pluginConfig"] = [
        {"name": pc.name, "args": _plain_copy(pc.args)} for pc in prof.plugin_config
    ]
    return out


def _plain_copy(value: Any) -> Any:
    """Deep copy of plain data so dumped dicts never alias the config's args."""
    if isinstance(value, dict):
        return {k: _plain_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain_copy(v) for v in value]
    return value


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _extender_dict(ext: Extender) -> dict[str, Any]:
    out: dict[str, Any] = {
        "urlPrefix": ext.url_prefix,
        "filterVerb": ext.filter_verb,
        "preemptVerb": ext.preempt_verb,
        "prioritizeVerb": ext.prioritize_verb,
        "weight": ext.weight,
        "bindVerb": ext.bind_verb,
        "enableHTTPS": ext.enable_https,
    }
    if ext.tls_config is not None:
        t = ext.tls_config
        out["tlsConfig"] = {
            "insecure": t.insecure,
            "serverName": t.server_name,
            "certFile": t.cert_file,
            "keyFile": t.key_file,
            "caFile": t.ca_file,
            "certData": _b64(t.cert_data),
            "keyData": _b64(t.key_data),
            "caData": _b64(t.ca_data),
        }
    out |= {
        "httpTimeout": format_duration(ext.http_timeout),
        "nodeCacheCapable": ext.node_cache_capable,
        "managedResources": [
            {"name": r.name, "ignoredByScheduler": r.ignored_by_scheduler}
            for r in ext.managed_resources
        ],
        "ignorable": ext.ignorable,
    }
    return out


def to_dict(cfg: KubeSchedulerConfiguration) -> dict[str, Any]:
    """The config in kube camelCase, field order as upstream's v1 struct, durations as Go.

    Always written as v1 (a v1beta3 file is read as v1), like kube-scheduler's
    ``--write-config-to``. ``percentageOfNodesToScore`` is omitted when None (adaptive).
    """
    le, cc = cfg.leader_election, cfg.client_connection
    out: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": cfg.kind,
        "parallelism": cfg.parallelism,
        "leaderElection": {
            "leaderElect": le.leader_elect,
            "leaseDuration": format_duration(le.lease_duration),
            "renewDeadline": format_duration(le.renew_deadline),
            "retryPeriod": format_duration(le.retry_period),
            "resourceLock": le.resource_lock,
            "resourceName": le.resource_name,
            "resourceNamespace": le.resource_namespace,
        },
        "clientConnection": {
            "kubeconfig": cc.kubeconfig,
            "acceptContentTypes": cc.accept_content_types,
            "contentType": cc.content_type,
            "qps": cc.qps,
            "burst": cc.burst,
        },
    }
    if cfg.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = cfg.percentage_of_nodes_to_score
    out |= {
        "podInitialBackoffSeconds": cfg.pod_initial_backoff_seconds,
        "podMaxBackoffSeconds": cfg.pod_max_backoff_seconds,
        "profiles": [_profile_dict(p, cfg.features.emulated_version) for p in cfg.profiles],
        "extenders": [_extender_dict(e) for e in cfg.extenders],
        "delayCacheUntilActive": cfg.delay_cache_until_active,
    }
    return out


def dump_yaml(cfg: KubeSchedulerConfiguration) -> str:
    return yaml.dump(
        to_dict(cfg),
        Dumper=kubeyaml.Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
    )
