"""Kubernetes quantities: parse_quantity / milli_value / value.

Expected values are ported from apimachinery's quantity_test.go (TestQuantityParse,
invalid forms, rounding) and written as exact fractions: ``dec(i, e)`` is i·10^e.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.api.quantity import QuantityError, milli_value, parse_quantity, value

KI, MI, GI, TI, PI, EI = (2 ** (10 * i) for i in range(1, 7))
MAX_INT64 = 2**63 - 1


def dec(i: int, exponent: int) -> Fraction:
    return Fraction(i) * Fraction(10) ** exponent


# (input, exact value) -- TestQuantityParse's table, where ksched models the value.
UPSTREAM_PARSE = [
    ("0", dec(0, 0)),
    ("0n", dec(0, 0)),
    ("0u", dec(0, 0)),
    ("0m", dec(0, 0)),
    ("0Ki", dec(0, 0)),
    ("0k", dec(0, 0)),
    ("0Mi", dec(0, 0)),
    ("0M", dec(0, 0)),
    ("0Gi", dec(0, 0)),
    ("0G", dec(0, 0)),
    ("0Ti", dec(0, 0)),
    ("0T", dec(0, 0)),
    ("1", dec(1, 0)),
    # Binary suffixes
    ("1Ki", dec(1024, 0)),
    ("8Ki", dec(8 * 1024, 0)),
    ("7Mi", dec(7 * MI, 0)),
    ("6Gi", dec(6 * GI, 0)),
    ("5Ti", dec(5 * TI, 0)),
    ("4Pi", dec(4 * PI, 0)),
    ("3Ei", dec(3 * EI, 0)),
    ("10Ti", dec(10 * TI, 0)),
    ("100Ti", dec(100 * TI, 0)),
    # Decimal suffixes
    ("5n", dec(5, -9)),
    ("4u", dec(4, -6)),
    ("3m", dec(3, -3)),
    ("9", dec(9, 0)),
    ("8k", dec(8, 3)),
    ("50k", dec(5, 4)),
    ("7M", dec(7, 6)),
    ("6G", dec(6, 9)),
    ("5T", dec(5, 12)),
    ("40T", dec(4, 13)),
    ("300T", dec(3, 14)),
    ("2P", dec(2, 15)),
    ("1E", dec(1, 18)),
    # Decimal exponents
    ("1E-3", dec(1, -3)),
    ("1e3", dec(1, 3)),
    ("1E6", dec(1, 6)),
    ("1e9", dec(1, 9)),
    ("1E12", dec(1, 12)),
    ("1e15", dec(1, 15)),
    ("1E18", dec(1, 18)),
    # Nonstandard but still parsable
    ("1e14", dec(1, 14)),
    ("1e13", dec(1, 13)),
    ("100.035k", dec(100035, 0)),
    # Things that look like floating point
    ("0.001", dec(1, -3)),
    ("0.0005k", dec(5, -1)),
    ("0.005", dec(5, -3)),
    ("0.05", dec(5, -2)),
    ("0.5", dec(5, -1)),
    ("0.00050k", dec(5, -1)),
    ("0.00500", dec(5, -3)),
    ("0.05000", dec(5, -2)),
    ("0.50000", dec(5, -1)),
    ("0.5e0", dec(5, -1)),
    ("0.5e-1", dec(5, -2)),
    ("0.5e-2", dec(5, -3)),
    ("10.035M", dec(10035, 3)),
    ("1.2e3", dec(12, 2)),
    ("1.3E+6", dec(13, 5)),
    ("1.40e9", dec(14, 8)),
    ("1.53E12", dec(153, 10)),
    ("1.6e15", dec(16, 14)),
    ("1.7E18", dec(17, 17)),
    ("9.01", dec(901, -2)),
    ("8.1k", dec(81, 2)),
    ("7.123456M", dec(7123456, 0)),
    ("6.987654321G", dec(6987654321, 0)),
    ("5.444T", dec(5444, 9)),
    ("40.1T", dec(401, 11)),
    ("300.2T", dec(3002, 11)),
    ("2.5P", dec(25, 14)),
    ("1.01E", dec(101, 16)),
    # Things that saturate/round: parsing rounds up to a whole nanounit
    ("3.001n", dec(4, -9)),
    ("1.1E-9", dec(2, -9)),
    ("0.0000000001", dec(1, -9)),
    ("0.0000000005", dec(1, -9)),
    ("0.00000000050", dec(1, -9)),
    ("0.5e-9", dec(1, -9)),
    ("0.9n", dec(1, -9)),
    ("0.00000012345", dec(124, -9)),
    ("0.00000012354", dec(124, -9)),
    # ... and binary amounts are capped at the largest int64
    ("9Ei", Fraction(MAX_INT64)),
    ("9223372036854775807Ki", Fraction(MAX_INT64)),
    ("12E", dec(12, 18)),
    # Fractional binary amounts
    ("100.035Ki", dec(10243584, -2)),
    ("0.5Mi", dec(MI // 2, 0)),
    ("0.05Gi", dec(536870912, -1)),
    ("0.025Ti", dec(274877906944, -1)),
    # Things written by trolls
    ("0.000000000001Ki", dec(2, -9)),
    (".001", dec(1, -3)),
    (".0001k", dec(100, -3)),
    ("1.", dec(1, 0)),
    ("1.G", dec(1, 9)),
]


@pytest.mark.parametrize(("text", "expected"), UPSTREAM_PARSE)
def test_upstream_parse_table(text: str, expected: Fraction) -> None:
    assert parse_quantity(text) == expected
    # Upstream also parses every entry with an explicit sign.
    assert parse_quantity("+" + text) == expected
    assert parse_quantity("-" + text) == -expected


@pytest.mark.parametrize(
    ("text", "factor"),
    [
        ("n", Fraction(1, 10**9)),
        ("u", Fraction(1, 10**6)),
        ("m", Fraction(1, 1000)),
        ("", Fraction(1)),
        ("k", Fraction(10**3)),
        ("M", Fraction(10**6)),
        ("G", Fraction(10**9)),
        ("T", Fraction(10**12)),
        ("P", Fraction(10**15)),
        ("E", Fraction(10**18)),
        ("Ki", Fraction(KI)),
        ("Mi", Fraction(MI)),
        ("Gi", Fraction(GI)),
        ("Ti", Fraction(TI)),
        ("Pi", Fraction(PI)),
        ("Ei", Fraction(EI)),
    ],
)
def test_every_suffix_scales_exactly(text: str, factor: Fraction) -> None:
    assert parse_quantity("3" + text) == 3 * factor
    # 1.5n is not a whole nanounit: parsing rounds it up to 2n.
    assert parse_quantity("1.5" + text) == Fraction(
        math.ceil(Fraction(3, 2) * factor * 10**9), 10**9
    )
    assert value("2" + text) == math.ceil(2 * factor)
    # 2E is 2e21 millicores: MilliValue saturates at the largest int64.
    assert milli_value("2" + text) == min(math.ceil(2000 * factor), MAX_INT64)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e3", 1000),
        ("1E3", 1000),
        ("1E-3", Fraction(1, 1000)),
        ("12e6", 12_000_000),
        ("1e+3", 1000),
        ("1.5e-3", Fraction(15, 10_000)),
        ("5e0", 5),
        ("0e9", 0),
    ],
)
def test_decimal_exponents(text: str, expected: Fraction | int) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize(
    ("text", "milli", "whole"),
    [
        ("1n", 1, 1),  # MilliValue and Value both round up
        ("0.1m", 1, 1),
        ("1m", 1, 1),
        ("1.5m", 2, 1),
        ("999m", 999, 1),
        ("1000m", 1000, 1),
        ("1001m", 1001, 2),
        ("100m", 100, 1),
        ("0.5", 500, 1),
        (".5", 500, 1),
        ("1.", 1000, 1),
        ("2", 2000, 2),
        ("1Ki", 1_024_000, 1024),
        ("1.5Ki", 1_536_000, 1536),
        ("0.3Ki", 307_200, 308),  # 307.2 bytes round up to 308
        ("1e3", 1_000_000, 1000),
        ("1E-3", 1, 1),
        ("12e6", 12_000_000_000, 12_000_000),
        ("0", 0, 0),
        ("-0", 0, 0),
        # Away from zero for negative amounts (negativeScaleInt64).
        ("-1n", -1, -1),
        ("-1.5m", -2, -1),
        ("-0.5", -500, -1),
        ("-9.01", -9010, -10),
        ("9.01", 9010, 10),
    ],
)
def test_milli_value_and_value_round_up(text: str, milli: int, whole: int) -> None:
    assert milli_value(text) == milli
    assert value(text) == whole


def test_signs() -> None:
    assert parse_quantity("+1.5") == Fraction(3, 2)
    assert parse_quantity("-1.5") == Fraction(-3, 2)
    assert parse_quantity("-100m") == Fraction(-1, 10)
    assert parse_quantity("-1Gi") == -GI
    assert parse_quantity("-1e3") == -1000
    assert parse_quantity("1e-3") == parse_quantity("1m")


def test_yaml_numbers_are_exact() -> None:
    # YAML loads `cpu: 0.1` as a float; it must still be exactly 100 millicores.
    assert parse_quantity(0.1) == Fraction(1, 10)
    assert milli_value(0.1) == 100
    assert milli_value(0.3) == 300  # 0.1 + 0.2 style float noise must not leak in
    assert milli_value(2.5) == 2500
    assert milli_value(0.001) == 1
    assert parse_quantity(1e20) == 10**20
    assert value(1e20) == MAX_INT64  # Value() saturates
    assert parse_quantity(1.5e-7) == Fraction(15, 10**8)
    assert parse_quantity(-0.25) == Fraction(-1, 4)
    assert parse_quantity(4) == 4
    assert value(4) == 4 and milli_value(4) == 4000
    assert parse_quantity(10**30) == 10**30
    assert value(10**30) == MAX_INT64 and value(-(10**30)) == -MAX_INT64 - 1
    assert parse_quantity(0) == 0


@given(st.integers(min_value=-(10**12), max_value=10**12), st.integers(min_value=0, max_value=9))
def test_float_and_text_agree(mantissa: int, scale: int) -> None:
    text = str(Fraction(mantissa, 10**scale).__float__())
    assert parse_quantity(float(text)) == parse_quantity(text)


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_milli_suffix_round_trips(m: int) -> None:
    assert milli_value(f"{m}m") == m
    assert value(f"{m}m") == (math.ceil(m / 1000) if m >= 0 else -math.ceil(-m / 1000))


def test_whitespace_around_text_is_trimmed_like_unmarshal_json() -> None:
    # Quantity.UnmarshalJSON trims spaces before ParseQuantity.
    assert parse_quantity(" 1Gi ") == GI
    assert parse_quantity("\t500m\n") == Fraction(1, 2)


@pytest.mark.parametrize(
    "bad",
    [
        "",
        " ",
        "Ki",
        "1.2.3",
        "1KI",
        "1K",
        "abc",
        "1 Gi",
        "e3",
        "1e",
        "1E+",
        "1e-",
        "1.1.M",
        "1+1.0M",
        "0.1mi",
        "0.1am",
        "aoeu",
        ".5i",
        "1i",
        "-3.01i",
        "-3.01e-",
        "1e4294967297",
        "--1",
        "+-1",
        "1Mi2",
        "Mi1",
        "1m1",
        "0x10",
        "1_000",
        "inf",
        "NaN",
        "\u0661\u0662",  # Arabic-Indic digits: Go only accepts ASCII digits
        "\uff11",  # fullwidth one
        "1\u00a0Gi",
    ],
)
def test_invalid_text_raises(bad: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)
    with pytest.raises(QuantityError):
        milli_value(bad)
    with pytest.raises(QuantityError):
        value(bad)


@pytest.mark.parametrize(
    "bad",
    [True, False, None, [], {}, b"1", float("inf"), float("nan"), -float("inf"), Fraction(1, 2)],
)
def test_invalid_types_raise(bad: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)


def test_quantity_error_is_a_value_error_naming_the_text() -> None:
    with pytest.raises(ValueError, match="1KI"):
        parse_quantity("1KI")


def test_tiny_exponents_round_up_to_one_nanounit() -> None:
    assert parse_quantity("1e-100") == Fraction(1, 10**9)
    assert parse_quantity("-1e-100") == -Fraction(1, 10**9)
    assert parse_quantity("0e-100") == 0
    assert milli_value("1e-100") == 1


def test_cmp_order_from_upstream() -> None:
    # TestQuantityCmp
    assert parse_quantity("100m") > parse_quantity("50m")
    assert parse_quantity("50m") < parse_quantity("100m")
    assert parse_quantity("10000T") > parse_quantity("100Gi")
    assert parse_quantity("0") == parse_quantity("0")


# ---- int64 boundaries: MilliValue/Value saturate like upstream's ScaledValue ----------------

MIN_INT64 = -(2**63)


@pytest.mark.parametrize(
    ("text", "milli", "whole"),
    [
        # the largest millicore count there is, and one past it
        ("9223372036854775807m", MAX_INT64, 9_223_372_036_854_776),
        ("9223372036854775808m", MAX_INT64, 9_223_372_036_854_776),
        ("-9223372036854775808m", MIN_INT64, -9_223_372_036_854_776),
        ("-9223372036854775809m", MIN_INT64, -9_223_372_036_854_776),
        # 1e18 cpu: 1e21 millicores saturate; the whole value still fits
        ("1e18", MAX_INT64, 10**18),
        ("1E", MAX_INT64, 10**18),
        ("-1e18", MIN_INT64, -(10**18)),
        # 8Ei is capped at 2**63 - 1 by parsing (BinarySI), then saturates in milli
        ("8Ei", MAX_INT64, MAX_INT64),
        ("-8Ei", MIN_INT64, -MAX_INT64),
        ("9223372036854775807", MAX_INT64, MAX_INT64),
        ("9223372036854775808", MAX_INT64, MAX_INT64),
        ("1e19", MAX_INT64, MAX_INT64),
        ("-1e19", MIN_INT64, MIN_INT64),
        # the smallest amounts round away from zero
        ("1n", 1, 1),
        ("-1n", -1, -1),
        ("-1", -1000, -1),
    ],
)
def test_int64_boundaries_saturate(text: str, milli: int, whole: int) -> None:
    assert milli_value(text) == milli
    assert value(text) == whole


def test_huge_decimal_exponents_parse_and_saturate() -> None:
    # kube-apiserver accepts any exponent that fits an int32 (int64Amount{1, 100}).
    for text in ("1e100", "1e2147483647", "0.5e2147483647", "123.456e300"):
        assert milli_value(text) == MAX_INT64 and value(text) == MAX_INT64
        assert milli_value("-" + text) == MIN_INT64
    assert parse_quantity("0e2147483647") == 0
    assert parse_quantity("1e-2147483648") == Fraction(1, 10**9)
    # a long mantissa keeps the value exact even with a large exponent
    assert parse_quantity("0." + "0" * 70 + "1e75") == 10**4
    assert parse_quantity("1" + "0" * 70 + "e-70") == 1
    for bad in ("1e2147483648", "1e-2147483649"):
        with pytest.raises(QuantityError):
            parse_quantity(bad)


def test_int64_helpers() -> None:
    from ksched.api.quantity import saturate_int64, wrap_int64

    assert saturate_int64(2**70) == MAX_INT64 and saturate_int64(-(2**70)) == MIN_INT64
    assert saturate_int64(5) == 5
    assert wrap_int64(MAX_INT64 + 1) == MIN_INT64
    assert wrap_int64(2 * MAX_INT64) == -2  # two 2**63 - 1 millicore pods
    assert wrap_int64(MIN_INT64 - 1) == MAX_INT64
    assert wrap_int64(-5) == -5
