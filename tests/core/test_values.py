"""statekit.values: JSON values as OpenClaw's JavaScript reads and writes them.

Every expected string/number below was produced by Node 26 (the runtime
OpenClaw 2026.9.6 runs on): ``JSON.stringify``, ``Date.parse``,
``new Date(ms).toISOString()`` and ``Math.floor(fs.statSync(f).mtimeMs)``.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from statekit.values import (
    INT64_MAX,
    INT64_MIN,
    datetime_ms,
    file_mtime_ms,
    finite_number,
    flag,
    int64,
    integer,
    iso_to_ms,
    js_json,
    js_key_order,
    js_number,
    json_text,
    ms,
    ms_to_iso,
    mtime_ms,
    nested_text,
    record,
    text,
    trimmed,
)

# --- numbers and JSON text ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "js"),
    [
        (1.0, "1"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (123e-20, "1.23e-18"),
        (0.1, "0.1"),
        (-0.0, "0"),
        (1.5e300, "1.5e+300"),
        (5e-324, "5e-324"),
        (123456789012345680000.0, "123456789012345680000"),
        (0.000001, "0.000001"),
        (2**53 + 1, "9007199254740992"),  # beyond 2**53: the double JSON.parse makes of it
        (2**53 + 2, "9007199254740994"),
        (1e20, "100000000000000000000"),
        (-1.5e-7, "-1.5e-7"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (10**21, "1e+21"),
        (float("nan"), "null"),
        (float("inf"), "null"),
    ],
)
def test_js_number_is_number_to_string(value: float, js: str) -> None:
    assert js_number(value) == js


def test_js_json_orders_index_keys_first_as_js_objects_do() -> None:
    value = {"b": 1, "1": 2, "a": 3, "0": 4, "01": 5, "4294967295": 6, "4294967294": 7, "-1": 8}
    assert js_json(value) == '{"0":4,"1":2,"4294967294":7,"b":1,"a":3,"01":5,"4294967295":6,"-1":8}'
    assert js_key_order({"z": 1, "y": 2}) == ["z", "y"]  # insertion order otherwise


def test_js_json_escapes_like_json_stringify() -> None:
    value = "\u2028\ud800x\u0000\u001f\u007f é \"\\ \b\f\n\r\t"
    assert js_json(value) == '"\u2028\\ud800x\\u0000\\u001f\u007f é \\"\\\\ \\b\\f\\n\\r\\t"'


def test_js_json_differs_from_python_json_where_js_does() -> None:
    value = {"b": 1.0, "1": 1e-07, "nested": [True, None, {"2": "x", "k": 2.50}]}
    assert js_json(value) == '{"1":1e-7,"b":1,"nested":[true,null,{"2":"x","k":2.5}]}'
    assert json.dumps(value, separators=(",", ":")) != js_json(value)
    assert json.loads(js_json(value)) == value


def test_js_json_refuses_what_json_cannot_hold() -> None:
    with pytest.raises(TypeError):
        js_json({"when": datetime.now(timezone.utc)})


def test_json_text_is_null_for_none() -> None:
    assert json_text(None) is None
    assert json_text({"a": 1.0}) == '{"a":1}'


# --- typed projections -----------------------------------------------------------------------


def test_projections() -> None:
    assert text("  x ") == "  x " and text("") == "" and text(1) is None
    assert trimmed("  x ") == "x" and trimmed("   ") is None and trimmed(None) is None
    assert flag(True) == 1 and flag(False) == 0 and flag(1) is None
    assert finite_number(True) is None and finite_number(float("nan")) is None and finite_number(2.5) == 2.5
    assert integer(-2.9) == -2 and integer(10**30) == 10**30 and integer("3") is None
    assert int64(float(2**63)) is None and int64(INT64_MAX) == INT64_MAX and int64(INT64_MIN) == INT64_MIN
    assert record([1]) == {} and record({"a": 1}) == {"a": 1}
    assert nested_text({"a": {"b": " v "}}, "a", "b") == "v" and nested_text({"a": 3}, "a", "b") is None


def test_ms_takes_numbers_and_iso_strings() -> None:
    assert ms(1768642200123.9) == 1768642200123
    assert ms("2026-01-17T09:30:00.123Z") == 1768642200123
    assert ms(True) is None and ms("yesterday") is None and ms(1e300) is None and ms(None) is None


# --- ISO-8601 <-> epoch ms --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("iso", "expected"),
    [
        ("2026-01-17T09:30:00.123Z", 1768642200123),
        ("2026-01-17T09:30:00.1239Z", 1768642200123),  # digits past the millisecond dropped
        ("2026-01-17T11:30:00.5+02:00", 1768642200500),
        ("2026-01-17T09:30:00Z", 1768642200000),
        ("1969-12-31T23:59:59.999Z", -1),
        ("2026-01-17T09:30:00.123-05:30", 1768662000123),
        ("2026-01-17T09:30:00.123z", 1768642200123),
        ("  2026-01-17T09:30:00.123Z ", 1768642200123),
    ],
)
def test_iso_to_ms_is_date_parse(iso: str, expected: int) -> None:
    assert iso_to_ms(iso) == expected


@pytest.mark.parametrize("value", ["", "   ", "not a date", "2026-13-01T00:00:00Z", 1768642200123, None, True])
def test_iso_to_ms_none_when_not_an_instant(value: object) -> None:
    assert iso_to_ms(value) is None


@pytest.mark.parametrize(
    ("value", "iso"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
        (1768642200123, "2026-01-17T09:30:00.123Z"),
        (253402300799999, "9999-12-31T23:59:59.999Z"),
        (-62135596800000, "0001-01-01T00:00:00.000Z"),
    ],
)
def test_ms_to_iso_is_to_iso_string(value: int, iso: str) -> None:
    assert ms_to_iso(value) == iso


def test_ms_to_iso_out_of_range_raises_overflow() -> None:
    with pytest.raises(OverflowError):
        ms_to_iso(253402300800000)


def test_the_float_parse_would_lose_a_millisecond_the_exact_one_does_not() -> None:
    # One of the ~1 in 160 instants where datetime.timestamp() * 1000 truncates to ...594 (the old parsers).
    iso = "2038-11-20T03:43:53.595Z"
    parsed = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    assert int(parsed.timestamp() * 1000) == 2173837433594
    assert iso_to_ms(iso) == datetime_ms(parsed) == 2173837433595  # Date.parse(iso)


@given(st.integers(min_value=-62135596800000, max_value=253402300799999))
def test_iso_round_trip(value: int) -> None:
    assert iso_to_ms(ms_to_iso(value)) == value


@given(st.datetimes(timezones=st.just(timezone(timedelta(hours=5, minutes=45)))))
def test_offsets_and_fractions_parse_to_the_same_instant(moment: datetime) -> None:
    expected = (moment.astimezone(timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
    assert iso_to_ms(moment.isoformat()) == expected


# --- mtimes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mtime_ns", "node"),
    [
        (1_700_000_000_123_999_999, 1_700_000_000_124),  # Node's double sum reaches the next ms before the floor
        (1_700_000_000_123_999_000, 1_700_000_000_123),
        (1_775_000_000_000_000_000, 1_775_000_000_000),
        (1_700_000_000_999_999_999, 1_700_000_001_000),
    ],
)
def test_mtime_ms_is_math_floor_of_node_mtime_ms(tmp_path: Path, mtime_ns: int, node: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"{}")
    os.utime(path, ns=(mtime_ns, mtime_ns))
    assert mtime_ms(os.stat(path)) == node
    assert file_mtime_ms(path, 7) == node


def test_file_mtime_ms_falls_back_when_missing_or_not_after_1970(tmp_path: Path) -> None:
    assert file_mtime_ms(tmp_path / "missing", 42) == 42
    path = tmp_path / "epoch"
    path.write_bytes(b"")
    os.utime(path, ns=(0, 0))
    assert file_mtime_ms(path, 42) == 42

    class Located:
        def __init__(self, p: Path) -> None:
            self.path = p

    os.utime(path, ns=(5_000_000, 5_000_000))
    assert file_mtime_ms(Located(path), 42) == 5
