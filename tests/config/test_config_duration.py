import pytest
from hypothesis import given
from hypothesis import strategies as st

from ksched.config import format_duration, parse_duration
from ksched.config.types import parse_duration_ns


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("2h", 7200.0),
        ("1.5s", 1.5),
        ("0", 0.0),
        ("0s", 0.0),
        ("-1.5h", -5400.0),
        ("+10s", 10.0),
        ("1h2m3.5s", 3723.5),
        ("100us", 0.0001),
        ("100µs", 0.0001),
        ("100μs", 0.0001),
        ("250ns", 250e-9),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("1m1m", 120.0),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds, abs=1e-12)


def test_parse_duration_is_exact_in_nanoseconds() -> None:
    assert parse_duration_ns("1.000000001s") == 1_000_000_001
    assert parse_duration_ns("1m30s") == 90_000_000_000
    # Go truncates sub-nanosecond fractions.
    assert parse_duration_ns("1.9ns") == 1


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "invalid duration"),
        ("15", "missing unit"),
        ("1m30", "missing unit"),
        ("15x", "unknown unit 'x'"),
        ("s", "invalid duration"),
        (".s", "invalid duration"),
        ("-", "invalid duration"),
        ("1.5.5s", "missing unit"),
        ("3000000h", "invalid duration"),
        ("1 s", "unknown unit ' s'"),
    ],
)
def test_parse_duration_rejects(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0s"),
        (15.0, "15s"),
        (90.0, "1m30s"),
        (0.5, "500ms"),
        (7200.0, "2h0m0s"),
        (1.5, "1.5s"),
        (3723.004, "1h2m3.004s"),
        (0.0015, "1.5ms"),
        (0.0001, "100µs"),
        (250e-9, "250ns"),
        (-90.0, "-1m30s"),
        (60.0, "1m0s"),
        (3600.5, "1h0m0.5s"),
    ],
)
def test_format_duration_matches_go(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_format_then_parse_round_trips(ns: int) -> None:
    text = format_duration(ns / 1e9)
    assert parse_duration_ns(text) == round(ns / 1e9 * 1e9)
