"""Gate sets and the real kube-scheduler's effective configuration, shared by the feature
gate tests and the config parity test."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path

import yaml

from ksched.features import BINARY_VERSION

#: Per version, a gate set kube-scheduler accepts and ksched implements, every value
#: non-default. 1.36: the NodeDeclaredFeatures plugin out (with the gates that need it),
#: StorageCapacityScoring (default shape), no DRA filter timeout, no batching, no /flagz.
#: 1.37 locks NodeDeclaredFeatures and turns StorageCapacityScoring on: no shape.
NON_DEFAULT_BY_VERSION = {
    "1.36": [
        "NodeDeclaredFeatures=false,InPlacePodVerticalScalingInitContainers=false,"
        "InPlacePodLevelResourcesVerticalScaling=false,RestartAllContainersOnContainerExits=false,"
        "ExtendWebSocketsToKubelet=false",
        "StorageCapacityScoring=true,DRASchedulerFilterTimeout=false",
        "OpportunisticBatching=false,ComponentFlagz=false",
    ],
    "1.37": [
        "StorageCapacityScoring=false,DRASchedulerFilterTimeout=false",
        "OpportunisticBatching=false,ComponentFlagz=false",
    ],
}
#: The default version's.
NON_DEFAULT = NON_DEFAULT_BY_VERSION[BINARY_VERSION]


def minor_of(release: str) -> str:
    """A release's minor, as ``--emulated-version`` takes it: "v1.36.3" -> "1.36"."""
    from ksched.features.versions import minor_of_release

    return minor_of_release(release)


def kube_minor() -> str:
    """The minor of the kube-scheduler the session's control plane builds
    (``KSCHED_KUBE_VERSION``): the version ksched emulates when compared with it."""
    from ksched.testing.controlplane._build import kube_version

    return minor_of(kube_version())


def kube_scheduler_effective(
    flags: list[str], config: Path | None = None
) -> tuple[dict[str, object] | None, str]:
    """The real kube-scheduler's effective configuration under ``flags`` (its
    ``--write-config-to``, which it writes and exits: the componentconfig ``/configz``
    serves), or None and its error text."""
    from ksched.testing.controlplane import build

    binary = build().path("kube-scheduler")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "effective.yaml"
        argv = [str(binary), "--master=http://127.0.0.1:1", f"--write-config-to={out}", *flags]
        if config is not None:
            argv.append(f"--config={config}")
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        if proc.returncode == 0 and out.exists():
            return yaml.safe_load(out.read_text()), ""
    m = re.search(r'"command failed" err=(".*")\s*$', proc.stderr, re.M)
    return None, json.loads(m[1]) if m else proc.stderr[-500:]
