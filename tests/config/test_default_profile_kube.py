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
