"""Device selectors' runtime errors in cel-go's words, and cel-go's verdicts where celpy's differ.

kube-scheduler's FitError for a selector that fails reads ``claim ns/c: selector #0: CEL
runtime error: no such key: numa``; ksched's must read the same. ``cel_go_reference.jsonl``
holds what kube-scheduler v1.36.3's CEL library (cel-go v0.26.0) answers for every expression
below, evaluated on ``DEVICE``: recorded by ``scripts/cel-reference`` (run this file with
``--expressions`` to feed it). v1.37.2's (dynamic-resource-allocation v0.37.2 on cel-go
v0.29.2, the module built with those versions) answers every one of them identically,
texts and actual costs included. Expressions cel-go refuses at compile time (its type checker;
celpy has none, and the API server refuses such selectors) are recorded but not compared.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ksched.api.objects import decode
from ksched.api.resource import Device
from ksched.dra import cel
from ksched.dra.cel import CELError, CELTimeout, CompiledExpression, DeviceEnv

REFERENCE = Path(__file__).with_name("cel_go_reference.jsonl")
DRIVER = "gpu.example.com"
DEVICE: dict[str, Any] = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "a100"},
        "index": {"int": 3},
        "big": {"int": 9223372036854775807},
        "healthy": {"bool": True},
        "driverVersion": {"version": "1.2.3"},
        "example.com/pcieRoot": {"string": "root-1"},
    },
    "capacity": {"memory": {"value": "80Gi"}, "example.com/slots": {"value": "7"}},
}
A = f'device.attributes["{DRIVER}"]'
C = f'device.capacity["{DRIVER}"]'

MISSING_KEY = {
    f"{A}.numa == 0": "no such key: numa",
    f'{A}["numa"] == 0': "no such key: numa",
    # an unknown domain is an empty map (upstream's mapper), so the attribute is missing
    'device.attributes["other.example.com"].model == "a"': "no such key: model",
    f"{C}.nope.isInteger()": "no such key: nope",
    f"{A}.model[0] == 1": "no such key: 0",
    f"{A}.healthy.x == 1": "no such key: x",
    "[1, 2][5] == 1": "index out of bounds: 5",
    "dyn([1, 2]).x == 1": "unsupported index type 'string' in list",
    'cel.bind(d, device.attributes["other.example.com"], d.model == "a")': "no such key: model",
}
TYPE_MISMATCH = {
    f"{A}.model > 1": "no such overload",
    f"{A}.model + 1 == 2": "no such overload",
    f'{A}.index + "a" == "b"': "no such overload",
    f"-{A}.model == 1": "no such overload",
    f"{A}.healthy + 1 == 2": "no such overload: _+_",
    f"{A}.healthy * 2 == 2": "no such overload: _*_",
    f"{A}.driverVersion < 2": "no such overload: _<_",
    "-dyn(1u) == 1": "no such overload: -_",
    f"size({A}.index) == 1": "no such overload: size",
    f"{A}.healthy && {A}.model": "no such overload",
    f"{A}.model.major() == 1": "no such overload: major(string)",
    f'{A}.model.compareTo(quantity("1")) == 0': (
        "no such overload: compareTo(string, kubernetes.Quantity)"
    ),
    f"{A}.index.isInteger()": "no such overload: isInteger(int)",
    f"{C}.memory.add({A}.model).isInteger()": "no such overload: add(kubernetes.Quantity, string)",
    f"{A}.driverVersion == 1": "no such overload",
    f"1 in {A}.model": "no such overload",
}
OVERFLOW = {
    f"{A}.big + 1 > 0": "integer overflow",
    f"{A}.big * 2 > 0": "integer overflow",
    f"-9223372036854775807 - 1 - {A}.index < 0": "integer overflow",
    f"-(-9223372036854775807 - 1 + {A}.index - 3) < 0": "integer overflow",
    f"(-9223372036854775807 - 1) / -1 + {A}.index < 0": "integer overflow",
    f"(-9223372036854775807 - 1) % -1 + {A}.index < 0": "integer overflow",
    f"uint({A}.index - 4) > 0u": "unsigned integer overflow",
    f"int(double({A}.big) * 10.0) > 0": "integer overflow",
}
DIVISION = {
    f"{A}.index / 0 == 1": "division by zero",
    f"{A}.index / ({A}.index - 3) == 1": "division by zero",
    f"{A}.index % 0 == 1": "modulus by zero",
    f"{A}.index % ({A}.index - 3) == 1": "modulus by zero",
}
SEMVER = {
    'semver("1.2") == semver("1.2.0")': "No Major.Minor.Patch elements found",
    'semver("") == semver("1.0.0")': "Version string empty",
    'semver("01.2.3") == semver("1.2.3")': 'Major number must not contain leading zeroes "01"',
    'semver("1.x.3") == semver("1.2.3")': 'Invalid character(s) found in minor number "x"',
    'semver("1..3") == semver("1.2.3")': 'strconv.ParseUint: parsing "": invalid syntax',
    'semver("1.2.3-01") == semver("1.2.3")': (
        'Numeric PreRelease version must not contain leading zeroes "01"'
    ),
    'semver("1.2.3+") == semver("1.2.3")': "Build meta data is empty",
}
# Where celpy would raise and cel-go answers (heterogeneous equality, numbers compared
# across types), or the other way round.
VERDICTS = {
    f"{A}.model == 1": False,
    f"{A}.model != 1": True,
    f"{A}.index == 3.0": True,
    f"{A}.index < 2.5": False,
    f"{A}.index == 3u": True,
    f"{A}.model in [1, 2]": False,
    f"{A}.index in {{3.0: 1}}": False,
    f"{A}.index in {{3u: 1}}": True,
    '"x" in device.attributes["other.example.com"]': False,
    '"other.example.com" in device.attributes': False,
    f"{A}.nope || {A}.index > 2": True,
    f"{A}.index > 2 || {A}.nope": True,
    f"{A}.driverVersion != 1": True,
    f"{A}.index / 0.0 > 1.0 || true": True,
    # cel.bind (cel-go's Bindings extension); its value is only computed where it is used
    f'cel.bind(d, {A}, d.model == "a100" && d.index == 3)': True,
    "cel.bind(x, 1, cel.bind(y, x + 1, y == 2))": True,
    "cel.bind(x, 1, cel.bind(x, 2, x == 2))": True,
    "cel.bind(x, 2, [1, 2].exists(i, i == x))": True,
    f"cel.bind(x, {A}.nope, true)": True,
}
_R50 = "[" + ",".join(map(str, range(50))) + "]"
# A loop cel-go runs within its budget (its cost is recorded beside it).
WITHIN_BUDGET = f"{_R50}.all(x, {_R50}.all(y, x + y >= 0))"
KINDS = {
    "missing key": MISSING_KEY,
    "type mismatch": TYPE_MISMATCH,
    "overflow": OVERFLOW,
    "division": DIVISION,
    "semver": SEMVER,
}


def _grid() -> list[str]:
    """Every operator on every pair of the value types a selector meets, made dynamic so
    cel-go's checker lets them through to evaluation."""
    vals = {
        "int": "dyn(1)",
        "uint": "dyn(1u)",
        "double": "dyn(1.5)",
        "string": "dyn('a')",
        "bool": "dyn(true)",
        "list": "dyn([1])",
        "map": "dyn({'a':1})",
        "null": "dyn(null)",
        "semver": "dyn(semver('1.0.0'))",
        "quantity": "dyn(quantity('1'))",
    }
    out = []
    for op in ["+", "-", "*", "/", "%", "<", "<=", ">", ">=", "==", "!=", "in"]:
        for a in vals.values():
            for b in vals.values():
                out.append(f"(({a} {op} {b}) == dyn(true)) || true")
    for a in vals.values():
        out += [f"(-{a}) == dyn(1)", f"(!{a})", f"size({a}) == 1", f"{a}[0] == 1", f"{a}.x == 1"]
    return out


def expressions() -> list[str]:
    out: list[str] = []
    for table in (*KINDS.values(), VERDICTS):
        out += list(table)
    return [*out, WITHIN_BUDGET, *_grid()]


def env() -> DeviceEnv:
    return DeviceEnv(DRIVER, decode(DEVICE, Device))


def outcome(expression: str) -> dict[str, Any]:
    try:
        return {"result": CompiledExpression(expression).matches(env())}
    except CELError as e:
        return {"runtime": str(e)}


def _reference() -> dict[str, dict[str, Any]]:
    lines = [json.loads(x) for x in REFERENCE.read_text().splitlines() if x.strip()]
    return {d["expression"]: d for d in lines}


def test_the_reference_covers_exactly_these_expressions() -> None:
    """Regenerate cel_go_reference.jsonl (see the module docstring) when this fails."""
    assert list(_reference()) == expressions()


@pytest.mark.parametrize("kind", list(KINDS))
def test_runtime_errors_read_as_cel_gos(kind: str) -> None:
    ref = _reference()
    for expression, text in KINDS[kind].items():
        assert ref[expression].get("runtime") == text, expression  # the table is cel-go's
        assert outcome(expression) == {"runtime": text}, expression


def test_verdicts_are_cel_gos() -> None:
    ref = _reference()
    for expression, verdict in VERDICTS.items():
        assert ref[expression].get("result") is verdict, expression
        assert outcome(expression) == {"result": verdict}, expression


def test_every_operator_on_every_type_pair_is_cel_gos() -> None:
    ref = _reference()
    differ = []
    for expression in _grid():
        want = {k: ref[expression][k] for k in ("result", "runtime") if k in ref[expression]}
        if not want or "internal error" in str(want.get("runtime")):
            continue  # refused by cel-go's checker, or a Go panic (a hash of a Semver key)
        got = outcome(expression)
        if got != want:
            differ.append((expression, want, got))
    assert not differ, differ[:10]
    assert len(_grid()) - len(differ) > 1000


def test_an_unknown_function_is_named_in_one_line() -> None:
    """cel-go refuses it at compile time (``undeclared reference to 'foo' (in container
    '')``); celpy finds out when evaluating, and its message would carry the whole
    activation: ksched keeps cel-go's sentence."""
    for expression, name in (
        ("foo(1) == 1", "foo"),
        (f"{A}.model.lowerAscii() == 'a'", "lowerAscii"),
    ):
        assert outcome(expression) == {
            "runtime": f"undeclared reference to '{name}' (in container '')"
        }


def test_the_cost_limit_is_cel_gos_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget counts celpy's tree visits (about 4.5 per unit of cel-go's cost); here a
    small one, so the test need not run a million-unit loop."""
    monkeypatch.setattr(cel, "_MAX_VISITS", 5000)
    r = "[" + ",".join(map(str, range(30))) + "]"
    with pytest.raises(CELError, match=r"^operation cancelled: actual cost limit exceeded$"):
        CompiledExpression(f"{r}.all(x, {r}.all(y, x + y >= 0))").matches(env())
    assert CompiledExpression(f"{r}.all(x, x >= 0)").matches(env())


def test_the_budget_passes_what_cel_go_passes() -> None:
    ref = _reference()[WITHIN_BUDGET]
    assert ref["result"] is True and ref["cost"] < cel.COST_LIMIT
    assert CompiledExpression(WITHIN_BUDGET).matches(env())


def test_a_deadline_stops_a_long_evaluation() -> None:
    r = "[" + ",".join(map(str, range(100))) + "]"
    c = CompiledExpression(f"{r}.all(x, {r}.all(y, {r}.all(z, x + y + z >= 0)))")
    start = time.monotonic()
    with pytest.raises(CELTimeout):
        c.matches(env(), deadline=start + 0.2)
    assert time.monotonic() - start < 5


if __name__ == "__main__" and sys.argv[1:] == ["--expressions"]:
    print("\n".join(expressions()))
