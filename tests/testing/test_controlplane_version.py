"""Which ksched emulation a control plane's binaries call for: worked out from the assets'
version alone, with nothing built or started (the ``kube`` tests rely on it to run ksched
beside kube-scheduler of either version ``KSCHED_KUBE_VERSION`` selects)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ksched.features import FeatureGates
from ksched.testing.controlplane import Assets, ControlPlane


@pytest.mark.parametrize(("version", "minor"), [("v1.36.3", "1.36"), ("v1.37.2", "1.37")])
def test_the_emulated_version_is_the_binaries_minor(version: str, minor: str) -> None:
    assets = Assets(Path("/nonexistent"), version)
    assert assets.emulated_version == minor
    cp = ControlPlane(assets=assets)
    assert cp.emulated_version == minor
    assert cp.features == FeatureGates(minor)
    # the gate table of that very release, not ksched's default
    assert cp.features.table.version.kube == version
