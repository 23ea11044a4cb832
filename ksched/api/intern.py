"""Share the strings that repeat across a cluster's pods and nodes.

msgspec makes a fresh ``str`` for every value it decodes, so 50,000 pods of 200
Deployments hold 50,000 copies of each label, namespace, image, toleration and condition
string, and 5,000 nodes each a copy of every image name they cache. Interning them after
decoding (before anyone else sees the object) keeps one copy of each: at 5,000 nodes and
50,000 realistic pods the daemon's objects shrink by about 40 % (``bench/daemon_rss.py``).
Values longer than ``MAX_INTERNED`` (kubectl's last-applied-configuration annotation,
messages) are left alone: they rarely repeat and would only bloat the intern table.
"""

from __future__ import annotations

import sys

from .objects import Container, Node, ObjectMeta, Pod

__all__ = ["MAX_INTERNED", "intern_node", "intern_pod"]

MAX_INTERNED = 256

_intern = sys.intern


def _s(v: str) -> str:
    return _intern(v) if len(v) <= MAX_INTERNED else v


def _smap(d: dict[str, str]) -> dict[str, str]:
    return {_intern(k): _s(v) for k, v in d.items()} if d else d


def _share(obj: object, *fields: str) -> None:
    """Intern the string fields ``fields`` of ``obj`` (None stays None)."""
    for f in fields:
        v = getattr(obj, f)
        if v:
            setattr(obj, f, _s(v))


def _meta(m: ObjectMeta) -> None:
    _share(m, "namespace", "creation_timestamp")
    m.labels = _smap(m.labels)
    m.annotations = _smap(m.annotations)
    for o in m.owner_references:
        _share(o, "kind", "name", "uid", "api_version")


def _containers(cs: list[Container]) -> None:
    for c in cs:
        _share(c, "name", "image")
        for p in c.ports:
            _share(p, "protocol", "name")


def intern_pod(pod: Pod) -> Pod:
    """``pod`` with its repeating strings shared (in place: call right after decoding)."""
    _meta(pod.metadata)
    spec = pod.spec
    _share(spec, "node_name", "scheduler_name", "priority_class_name")
    spec.node_selector = _smap(spec.node_selector)
    for t in spec.tolerations:
        _share(t, "key", "operator", "value", "effect")
    _containers(spec.containers)
    _containers(spec.init_containers)
    _share(pod.status, "phase", "start_time")
    for cond in pod.status.conditions:
        _share(cond, "type", "status", "reason", "last_transition_time")
    return pod


def intern_node(node: Node) -> Node:
    """``node`` with its repeating strings (labels, image names) shared, in place."""
    _meta(node.metadata)
    for img in node.status.images:
        img.names = [_s(n) for n in img.names]
    for cond in node.status.conditions:
        _share(cond, "type", "status")
    if node.status.declared_features:
        node.status.declared_features = [_s(f) for f in node.status.declared_features]
    for t in node.spec.taints:
        _share(t, "key", "value", "effect")
    return node
