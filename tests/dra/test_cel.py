"""Device selectors in CEL: Kubernetes' device variables, quantity and semver functions,
compile/evaluation errors as CELError (never an exception escaping), caching."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ksched.api.objects import decode
from ksched.api.resource import Device
from ksched.dra.cel import (
    CELError,
    CompiledExpression,
    DeviceEnv,
    ExpressionCache,
    parse_semver,
    qualified_name,
)

DRIVER = "gpu.example.com"
GPU: dict[str, Any] = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "a100"},
        "index": {"int": 3},
        "healthy": {"bool": True},
        "driverVersion": {"version": "1.2.3"},
        "example.com/pcieRoot": {"string": "root-1"},
    },
    "capacity": {"memory": {"value": "80Gi"}, "example.com/slots": {"value": "7"}},
}


def env(raw: dict[str, Any] | None = None, driver: str = DRIVER) -> DeviceEnv:
    return DeviceEnv(driver, decode(raw or GPU, Device))


def matches(expression: str, device: DeviceEnv | None = None) -> bool:
    return CompiledExpression(expression).matches(device or env())


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.driver == "other"', False),
        ('device.attributes["gpu.example.com"].model == "a100"', True),
        ('device.attributes["gpu.example.com"].index > 2', True),
        ('device.attributes["gpu.example.com"].healthy', True),
        ('device.attributes["example.com"].pcieRoot == "root-1"', True),
        ('"model" in device.attributes["gpu.example.com"]', True),
        ('"nope" in device.attributes["gpu.example.com"]', False),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("81Gi")) >= 0', False),
        ('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("80G"))', True),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("1Ti"))', True),
        ('device.capacity["gpu.example.com"].memory == quantity("81920Mi")', True),
        ('device.capacity["example.com"].slots.asInteger() == 7', True),
        ('device.capacity["example.com"].slots.add(1).isInteger()', True),
        ('quantity("1.5").isInteger()', False),
        ('quantity("-2").sign() == -1', True),
        ('quantity("500m").sub(quantity("1")).sign() == -1', True),
        ('quantity("1k").asApproximateFloat() == 1000.0', True),
        ('isQuantity("1Gi") && !isQuantity("x")', True),
        ('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.0"))', True),
        ('device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.10.0"))', True),
        (
            'device.attributes["gpu.example.com"].driverVersion.compareTo(semver("1.2.3")) == 0',
            True,
        ),
        ('device.attributes["gpu.example.com"].driverVersion.major() == 1', True),
        ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True),
        ('semver("1.0.0-alpha.1").isLessThan(semver("1.0.0-alpha.beta"))', True),
        ('semver("v1.2", true) == semver("1.2.0")', True),
        ('isSemver("1.2.3") && !isSemver("1.2")', True),
    ],
)
def test_kubernetes_device_expressions(expression: str, expected: bool) -> None:
    assert matches(expression) is expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # an unknown domain is an empty map, as upstream's: the attribute is what is missing
        ('device.attributes["no-such-domain"].model == "a"', "no such key: model"),
        ('quantity("not a quantity").sign() == 1', "quantities must match"),
        ('semver("1.2") == semver("1.2.0")', "No Major.Minor.Patch elements found"),
        ("device.driver", "CEL result of type string could not be converted to bool"),
        (
            'quantity("1").compareTo(semver("1.0.0")) == 0',
            r"no such overload: compareTo\(kubernetes.Quantity, kubernetes.Semver\)",
        ),
    ],
)
def test_runtime_errors_are_cel_errors(expression: str, message: str) -> None:
    with pytest.raises(CELError, match=message):
        matches(expression)


@pytest.mark.parametrize("depth", [10, 3000, 20000])
def test_deep_nesting_is_a_result_or_a_cel_error(depth: int) -> None:
    c = CompiledExpression("(" * depth + "true" + ")" * depth)
    try:
        assert c.matches(env()) is True
    except CELError as e:
        assert depth > 10 and str(e)


@pytest.mark.parametrize("expression", ["device.driver ==", "x" * (11 * 1024)])
def test_compile_errors_are_reported_not_raised(expression: str) -> None:
    c = CompiledExpression(expression)
    assert c.error
    with pytest.raises(CELError):
        c.matches(env())


def test_cache_compiles_once_and_evicts_least_recently_used() -> None:
    cache = ExpressionCache(size=2)
    a = cache.get("true")
    assert cache.get("true") is a
    cache.get("false")
    cache.get("true")  # refreshes "true"
    cache.get("1 == 1")  # evicts "false"
    assert cache.get("true") is a
    assert cache.get("false") is not None


def test_verdicts_are_cached_per_device() -> None:
    d = env()
    expr = CompiledExpression('device.driver == "gpu.example.com"')
    assert expr.matches(d)
    d.results[expr.expression] = False  # the cached verdict is what is answered
    assert not expr.matches(d)


def test_qualified_names_default_to_the_driver_domain() -> None:
    assert qualified_name("model", "d.example.com") == ("d.example.com", "model")
    assert qualified_name("x.io/model", "d.example.com") == ("x.io", "model")


def test_unparsable_version_attribute_is_a_string() -> None:
    raw = {"name": "d", "attributes": {"v": {"version": "not-semver"}}}
    assert matches('device.attributes["gpu.example.com"].v == "not-semver"', env(raw))


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text_never_crashes(expression: str) -> None:
    c = CompiledExpression(expression)
    with contextlib.suppress(CELError):
        c.matches(env())


@given(
    st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(0, 20)),
    st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(0, 20)),
)
def test_semver_order_is_numeric(a: tuple[int, int, int], b: tuple[int, int, int]) -> None:
    va, vb = parse_semver(".".join(map(str, a))), parse_semver(".".join(map(str, b)))
    assert va is not None and vb is not None
    assert (va < vb) == (a < b)
