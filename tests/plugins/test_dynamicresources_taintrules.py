"""DeviceTaintRules (DRADeviceTaintRules, GA and on in 1.37, beta and off in 1.36): their
taints reach the allocator as if the slices had them (upstream's ResourceSlice tracker)."""

from __future__ import annotations

from typing import Any

from ksched.api.objects import decode
from ksched.api.resource import DeviceTaintRule, ResourceSlice
from ksched.cluster.wiring import (
    DEVICE_TAINT_RULES_PATH,
    DEVICE_TAINT_RULES_PATH_1_36,
    _collection_path,
    requested_listers,
)
from ksched.dra.taintrules import apply_taint_rules
from ksched.features.gates import set_feature_gates
from ksched.framework.cycle_state import CycleState
from ksched.framework.handle import Handle
from ksched.framework.listers import Listers, RevisionedStore
from ksched.framework.status import Code
from ksched.plugins.dynamicresources import DynamicResources
from ksched.sim.cluster_file import DRA_LISTERS, KINDS
from tests.dra.factories import DRIVER, DRIVER_B, device, slice_
from tests.plugins.test_dynamicresources import DRIVER as ENV_DRIVER
from tests.plugins.test_dynamicresources import Env, _claim, pod_with

RULES = Listers.DEVICE_TAINT_RULES


def rule(name: str, effect: str = "NoSchedule", **selector: str) -> DeviceTaintRule:
    spec: dict[str, Any] = {"taint": {"key": f"k-{name}", "value": "v", "effect": effect}}
    spec["deviceSelector"] = selector
    return decode({"metadata": {"name": name}, "spec": spec}, DeviceTaintRule)


def no_selector(name: str) -> DeviceTaintRule:
    raw = {"metadata": {"name": name}, "spec": {"taint": {"key": "k", "effect": "NoSchedule"}}}
    return decode(raw, DeviceTaintRule)


def taints(slices: list[ResourceSlice]) -> dict[str, list[str]]:
    return {
        f"{s.spec.driver}/{s.spec.pool.name}/{d.name}": [t.key for t in d.taints]
        for s in slices
        for d in s.spec.devices
    }


SLICES = [
    slice_("a", [device("d0"), device("d1")], pool="p1", node_name="n1"),
    slice_("b", [device("d0")], pool="p2", node_name="n2"),
    slice_("c", [device("d0")], driver=DRIVER_B, pool="p1", node_name="n1"),
]


def test_selector_fields_each_narrow_the_devices() -> None:
    rules = {
        "all": rule("all"),
        "drv": rule("drv", driver=DRIVER),
        "pool": rule("pool", pool="p1"),
        "dev": rule("dev", driver=DRIVER, pool="p1", device="d1"),
        "none": no_selector("none"),
    }
    assert taints(apply_taint_rules(SLICES, rules)) == {
        f"{DRIVER}/p1/d0": ["k-all", "k-drv", "k-pool"],
        f"{DRIVER}/p1/d1": ["k-all", "k-dev", "k-drv", "k-pool"],
        f"{DRIVER}/p2/d0": ["k-all", "k-drv"],
        f"{DRIVER_B}/p1/d0": ["k-all", "k-pool"],
    }


def test_untouched_slices_stay_the_same_objects_and_own_taints_come_first() -> None:
    own = slice_("own", [device("d0", taints=[{"key": "own", "effect": "NoExecute"}])])
    out = apply_taint_rules([*SLICES, own], {"x": rule("x", pool="pool-1")})
    assert out[:3] == SLICES and all(a is b for a, b in zip(out[:3], SLICES, strict=True))
    assert [t.key for t in out[3].spec.devices[0].taints] == ["own", "k-x"]
    assert own.spec.devices[0].taints[0].key == "own" and len(own.spec.devices[0].taints) == 1


def _env(version: str, *flags: str) -> Env:
    env = Env([_claim()])
    handle = env.pl._handle
    handle.features = set_feature_gates(list(flags), [version] if version else [])
    env.pl = DynamicResources(None, handle)
    return env


def _fits(env: Env) -> bool:
    pod = pod_with()
    state = CycleState()
    st = env.pre_filter(pod, state)
    assert st.is_success(), st
    return env.filter(pod, state).code == Code.SUCCESS


def _add_rule(env: Env, r: DeviceTaintRule) -> None:
    store = env.pl._handle.listers.setdefault(RULES, RevisionedStore())
    store[r.metadata.name] = r
    store.bump(r)


def test_a_rule_taints_the_only_device_in_1_37() -> None:
    env = _env("")
    assert _fits(env)
    _add_rule(env, rule("t", driver=ENV_DRIVER))
    assert not _fits(env)  # the inventory is rebuilt when the rules change
    del env.pl._handle.listers[RULES]["t"]
    env.pl._handle.listers[RULES].bump()
    assert _fits(env)


def test_none_effect_and_other_drivers_do_not_block() -> None:
    env = _env("")
    _add_rule(env, rule("n", effect="None"))
    _add_rule(env, rule("o", driver="other"))
    assert _fits(env)


def test_rules_are_ignored_with_the_gate_off_and_in_1_36_by_default() -> None:
    for env in (_env("", "DRADeviceTaintRules=false"), _env("1.36")):
        _add_rule(env, rule("t"))
        assert _fits(env)
    on_136 = _env("1.36", "DRADeviceTaintRules=true")
    _add_rule(on_136, rule("t"))
    assert not _fits(on_136)


class _Fw:
    def __init__(self, version: str, *flags: str) -> None:
        self.handle = Handle(features=set_feature_gates(list(flags), [version] if version else []))
        self.plugins = {"DynamicResources": DynamicResources(None, self.handle)}


def test_the_daemon_watches_rules_only_with_the_gate_and_per_version_path() -> None:
    assert RULES in requested_listers([_Fw("")])
    assert RULES not in requested_listers([_Fw("1.36")])
    assert RULES not in requested_listers([_Fw("", "DRADeviceTaintRules=false")])
    assert RULES in requested_listers([_Fw("1.36", "DRADeviceTaintRules=true")])
    assert _collection_path(RULES, [_Fw("")]) == DEVICE_TAINT_RULES_PATH
    assert _collection_path(RULES, [_Fw("1.36")]) == DEVICE_TAINT_RULES_PATH_1_36


def test_cluster_files_carry_rules() -> None:
    assert KINDS["DeviceTaintRule"] is DeviceTaintRule
    assert DRA_LISTERS["DeviceTaintRule"] == RULES


def test_every_rule_change_is_a_resource_slice_update() -> None:
    """Upstream's tracker turns a rule's add, update and delete into slice updates, which
    DynamicResources registers (a ResourceSlice Delete it does not)."""
    from ksched.cluster.wiring import _forward_as_update

    class Inf:
        handlers: tuple[Any, ...] = ()

        def add_handlers(self, *h: Any) -> None:
            self.handlers = h

    inf, seen = Inf(), []
    _forward_as_update(inf, "ResourceSlice", lambda e, old, new: seen.append((e.action, old, new)))  # type: ignore[arg-type]
    add, update, delete = inf.handlers
    add("r1")
    update("r1", "r2")
    delete("r2")
    assert seen == [("Update", None, "r1"), ("Update", "r1", "r2"), ("Update", "r2", None)]


def test_the_inventory_is_kept_across_cycles_without_rules() -> None:
    """No DeviceTaintRules (no store, an empty one, or the gate off) is the same stamp every
    cycle: the inventory and its selector verdicts are built once, not per pod (an empty
    store used to be replaced by a fresh ``{}`` whose identity changed every call). A
    rule added to the store still rebuilds it."""
    for env, store in (
        (_env(""), False),
        (_env(""), True),
        (_env("", "DRADeviceTaintRules=false"), True),
        (_env("1.36"), False),
    ):
        if store:
            env.pl._handle.listers[RULES] = RevisionedStore()
        else:
            env.pl._handle.listers.pop(RULES, None)
        first = env.pl.inventory()
        assert _fits(env) and _fits(env)
        assert env.pl.inventory() is first
    env = _env("")
    env.pl._handle.listers[RULES] = RevisionedStore()
    first = env.pl.inventory()
    _add_rule(env, rule("t", driver=ENV_DRIVER))
    assert env.pl.inventory() is not first and not _fits(env)
