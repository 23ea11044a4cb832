"""The Kubernetes versions ksched knows: one row each.

``implemented`` says whether ksched's behaviour (default plugins, messages, config
validation, metric names) is that version's. The newest implemented row is ksched's own
"binary version": its default ``--emulated-version``, as kube-scheduler's default is the
binary's. A row that is known (its gate table generated) but not implemented is refused
as kube-scheduler refuses an emulated version above its binary's.

Adding a version: a row here, ``scripts/gen_feature_gates.py`` (its gate table), then the
behaviour work; when done, ``implemented=True`` makes it the default.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BINARY",
    "KUBERNETES_VERSION",
    "KUBE_VERSIONS",
    "KubeVersion",
    "minor_key",
    "minor_of_release",
    "version_of_release",
]


@dataclass(frozen=True)
class KubeVersion:
    minor: str  # "1.36": what --emulated-version takes
    kube: str  # "v1.36.3": the release whose module the tables come from
    implemented: bool


KUBE_VERSIONS: tuple[KubeVersion, ...] = (
    KubeVersion("1.36", "v1.36.3", implemented=True),
    KubeVersion("1.37", "v1.37.2", implemented=True),
)


def minor_of_release(release: str) -> str:
    """A release's minor as ``--emulated-version`` takes it: "v1.36.3" -> "1.36"."""
    return ".".join(release.lstrip("v").split(".")[:2])


def version_of_release(release: str) -> KubeVersion:
    """The row of a kube-scheduler release ("v1.36.3", or any patch of its minor): what a
    control plane built from that release is emulated as. KeyError if ksched has none."""
    minor = minor_of_release(release)
    for row in KUBE_VERSIONS:
        if row.minor == minor:
            return row
    raise KeyError(release)


def minor_key(minor: str) -> tuple[int, int]:
    """``"1.37"`` as ``(1, 37)``, so that 1.100 sorts after 1.99."""
    major, _, rest = minor.partition(".")
    return int(major), int(rest)


#: ksched's own "binary version": the newest row it implements.
BINARY: KubeVersion = max(
    (v for v in KUBE_VERSIONS if v.implemented), key=lambda v: minor_key(v.minor)
)
#: The kube-scheduler release ksched follows by default (``--version``, the package root,
#: and the release the test control plane builds): read from the table, never restated.
KUBERNETES_VERSION: str = BINARY.kube
