"""Share the strings that repeat across a cluster's pods and nodes.

msgspec makes a fresh ``str`` for every value it decodes, so 50,000 pods of 200
Deployments hold 50,000 copies of each label, namespace, image, toleration and condition
string, and 5,000 nodes each a copy of every image name they cache. Interning them after
decoding (before anyone else sees the object) keeps one copy of each: at 5,000 nodes and
50,000 realistic pods the daemon's objects shrink by about 40 % (``bench/daemon_rss.py``).
Values longer than ``MAX_INTERNED`` (kubectl's last-applied-configuration annotation,
messages) are left alone: they rarely repeat and would only bloat the intern table.
Nodes' images go further: one decoded ``ContainerImage`` per distinct image.
"""

from __future__ import annotations

import sys

from .objects import Container, ContainerImage, Node, ObjectMeta, Pod

__all__ = ["MAX_INTERNED", "MAX_SHARED_IMAGES", "intern_node", "intern_pod"]

MAX_INTERNED = 256
# Distinct node images remembered for sharing. Past it the table starts afresh: bounded
# whatever the image churn, and nodes decoded later (every kubelet reports its status
# every few minutes) share the new entries.
MAX_SHARED_IMAGES = 8192

_intern = sys.intern
# (size, *names) -> the one ContainerImage every node listing that image holds
_images: dict[tuple[object, ...], ContainerImage] = {}


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


def _image(img: ContainerImage) -> ContainerImage:
    """The shared ``ContainerImage`` equal to ``img`` (``img`` itself the first time).

    The same few hundred images repeat across thousands of nodes: at 15,000 nodes of 40
    images each, 600,000 structs, names lists and sizes shrink to one per distinct image.
    Nothing mutates a decoded node's images, so sharing them is safe.
    """
    key = (img.size_bytes, *img.names)
    got = _images.get(key)
    if got is None:
        img.names = [_s(n) for n in img.names]
        if len(_images) >= MAX_SHARED_IMAGES:
            _images.clear()
        got = _images[(img.size_bytes, *img.names)] = img
    return got


def intern_node(node: Node) -> Node:
    """``node`` with its repeating strings (labels) and images shared, in place."""
    _meta(node.metadata)
    if node.status.images:
        node.status.images = [_image(img) for img in node.status.images]
    for cond in node.status.conditions:
        _share(cond, "type", "status")
    if node.status.declared_features:
        node.status.declared_features = [_s(f) for f in node.status.declared_features]
    for t in node.spec.taints:
        _share(t, "key", "value", "effect")
    return node
