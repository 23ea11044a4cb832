"""The default profile is the real kube-scheduler's: its ``/configz`` beside ksched's defaults.

A kube-scheduler (the control plane's version) started with an empty
KubeSchedulerConfiguration shows its effective profile at ``/configz``: its multiPoint
plugins (with its version's default feature gates) and the defaulted args. ksched's
``default_config()`` at the same emulated version must list the same plugins in the same
order with the same weights, and the same pluginConfig.
"""

from __future__ import annotations

import json
import ssl
import urllib.request
from typing import Any

import pytest

from ksched.config.load import default_config, to_dict
from ksched.testing.controlplane import ControlPlane

pytestmark = pytest.mark.kube


def _configz(cp: ControlPlane) -> Any:
    with cp.kube_scheduler(None, name="kube-scheduler-configz") as ks:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        req = urllib.request.Request(ks.url + "/configz")
        req.add_header("Authorization", f"Bearer {cp.admin.token}")
        with urllib.request.urlopen(req, timeout=10, context=ctx) as r:
            return json.loads(r.read())["componentconfig"]


def test_default_profile_plugins_and_args_are_kube_schedulers(controlplane: ControlPlane) -> None:
    kube = _configz(controlplane)["profiles"]
    ours = to_dict(default_config(controlplane.features))["profiles"]
    assert len(ours) == len(kube) == 1  # (ksched's is named "ksched": docs/fidelity.md)
    multi = _multi_point(kube[0])
    assert multi[-1] == ("NodeDeclaredFeatures", 0), multi
    assert _multi_point(ours[0]) == multi
    assert _plugin_config(ours[0]) == _plugin_config(kube[0])


def _plugin_config(profile: Any) -> list[tuple[str, Any]]:
    """Each plugin's args without the type meta kube-scheduler's ``/configz`` adds to them."""
    meta = ("kind", "apiVersion")
    return [
        (c["name"], {k: v for k, v in c["args"].items() if k not in meta})
        for c in profile["pluginConfig"]
    ]


def _multi_point(profile: Any) -> list[tuple[str, int]]:
    """multiPoint's plugins and weights; kube-scheduler's ``/configz`` (the internal type)
    shows an unset weight as 0, ksched's v1 form leaves it out."""
    return [(p["name"], p.get("weight", 0)) for p in profile["plugins"]["multiPoint"]["enabled"]]


WORKLOAD_GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"


def test_workload_gates_profile_is_kube_schedulers(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the workload gates the default profile gains the pod-group plugins where the
    real kube-scheduler's ``--write-config-to`` puts them, and no pluginConfig; the
    placement sets stay empty (NodeResourcesFit scores placements through multiPoint)."""
    import ksched.config.defaults as defaults
    from ksched.features import set_feature_gates
    from ksched.testing.controlplane._build import kube_version
    from tests.features.gatesets import kube_scheduler_effective, minor_of

    # GangScheduling is registered by its own change; its place is what is checked here.
    monkeypatch.setattr(defaults, "BUILTIN_PLUGINS", {*defaults.BUILTIN_PLUGINS, "GangScheduling"})
    theirs, err = kube_scheduler_effective([f"--feature-gates={WORKLOAD_GATES}"])
    assert theirs is not None, err
    # set_feature_gates: the gates without ksched's refusal of what it does not run yet
    gates = set_feature_gates([WORKLOAD_GATES], [minor_of(kube_version())])
    ours = to_dict(default_config(gates))["profiles"][0]
    kube = theirs["profiles"][0]  # type: ignore[index]
    assert _multi_point(ours) == _multi_point(kube)
    assert ("PodGroupPodsCount", 1) in _multi_point(kube)
    assert _plugin_config(ours) == _plugin_config(kube)
    for point in ("placementGenerate", "placementScore"):
        assert ours["plugins"][point] == kube["plugins"][point] == {}
