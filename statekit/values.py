"""Values as OpenClaw's JavaScript reads and writes them: the one place for these conversions.

Readers turn JSON values into column values with these helpers (and nothing
else):

* ``text`` / ``trimmed`` / ``flag`` / ``finite_number`` / ``integer`` /
  ``int64``: typed projections of a JSON value (``None`` when the value has
  another type);
* ``ms``: epoch milliseconds from a number or an ISO-8601 string;
* ``iso_to_ms`` / ``ms_to_iso`` / ``datetime_ms``: the one ISO-8601 parser and
  the one formatter (``Date.prototype.toISOString``), in exact integer
  arithmetic;
* ``mtime_ms`` / ``file_mtime_ms``: a file's mtime in epoch ms with the one
  rounding rule OpenClaw 2026.9.6 uses (``Math.floor(stat.mtimeMs)``);
* ``js_json`` / ``js_number`` / ``json_text``: JSON text exactly as
  ``JSON.stringify`` writes it.

Pure functions: no I/O except the ``stat`` in ``file_mtime_ms``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Protocol

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_ONE_MS = timedelta(milliseconds=1)

# --- typed projections of JSON values --------------------------------------------------


def text(value: Any) -> str | None:
    """A string as it is (empty and untrimmed included); anything else None."""
    return value if isinstance(value, str) else None


def trimmed(value: Any) -> str | None:
    """A trimmed non-empty string; anything else (or only whitespace) None."""
    if isinstance(value, str):
        stripped = value.strip()
        return stripped or None
    return None


def flag(value: Any) -> int | None:
    """A JSON boolean as SQLite's 0/1; anything else None."""
    return int(value) if isinstance(value, bool) else None


def finite_number(value: Any) -> int | float | None:
    """A finite JSON number (booleans are not numbers); anything else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def integer(value: Any) -> int | None:
    """A finite number truncated toward zero (``Math.trunc``), unbounded; anything else None."""
    number = finite_number(value)
    return None if number is None else int(number)


def int64(value: Any) -> int | None:
    """``integer`` limited to what an SQLite INTEGER holds; beyond that None."""
    number = integer(value)
    return number if number is not None and INT64_MIN <= number <= INT64_MAX else None


def record(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def nested_text(container: Any, key: str, field: str) -> str | None:
    """``trimmed(container[key][field])`` where each step may be missing or of another type."""
    return trimmed(record(record(container).get(key)).get(field))


# --- time ------------------------------------------------------------------------------


def datetime_ms(moment: datetime) -> int:
    """Epoch ms of an aware datetime, exact (sub-millisecond digits floored, as ``Date.parse`` drops them)."""
    return (moment - _EPOCH) // _ONE_MS


def parse_iso(value: Any) -> datetime | None:
    """THE ISO-8601 parser: a datetime (naive when the text has no offset), or None when it does not parse.

    Surrounding whitespace is ignored; ``Z`` and ``z`` mean UTC (``Date.parse`` accepts both).
    """
    if not isinstance(value, str):
        return None
    raw = value.strip()
    if not raw:
        return None
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        return None


def iso_to_ms(value: Any) -> int | None:
    """Epoch ms of an ISO-8601 string (``Z``/``z`` or an offset; no offset = UTC); None when it does not parse.

    Exact: ``2026-01-17T09:30:00.123Z`` is ...123, never ...122 (float
    ``timestamp() * 1000`` loses a millisecond for about one value in 160).
    """
    parsed = parse_iso(value)
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        return datetime_ms(parsed)
    except OverflowError:
        return None


def ms_to_iso(ms: int) -> str:
    """``new Date(ms).toISOString()``: ``2026-01-17T09:30:00.000Z`` (exact; OverflowError outside years 1-9999)."""
    moment = _EPOCH + timedelta(milliseconds=int(ms))
    return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def datetime_to_iso(moment: datetime) -> str:
    """An aware datetime in ``toISOString`` form (milliseconds, ``Z``)."""
    return ms_to_iso(datetime_ms(moment.astimezone(timezone.utc)))


def ms_to_display(value: Any) -> str:
    """Epoch ms for people: ``2026-01-17 09:30:00Z`` (UTC, whole seconds); ``-`` for anything but a finite number."""
    number = finite_number(value)
    if number is None:
        return "-"
    moment = _EPOCH + timedelta(milliseconds=math.floor(number))
    return f"{moment.year:04d}-{moment:%m-%d %H:%M:%S}Z"


def ms(value: Any) -> int | None:
    """Epoch ms from a finite number (truncated, SQLite range) or an ISO-8601 string; anything else None."""
    if isinstance(value, str):
        return iso_to_ms(value)
    return int64(value)


# --- file mtimes -------------------------------------------------------------------------


def mtime_ms(st: os.stat_result) -> int:
    """``Math.floor(stat.mtimeMs)`` as Node computes it: ``floor(sec * 1e3 + nsec / 1e6)`` in doubles.

    The one rule: OpenClaw 2026.9.6 takes ``Math.floor`` (or ``Math.trunc``,
    the same for any mtime after 1970) of Node's ``mtimeMs`` wherever it
    stores a file's mtime. Node adds the nanoseconds as a double, so an mtime
    within ~0.25 µs below the next millisecond rounds up to it before the floor.
    """
    seconds, nanos = divmod(st.st_mtime_ns, 1_000_000_000)
    return math.floor(seconds * 1e3 + nanos / 1e6)


class _Located(Protocol):
    @property
    def path(self) -> Path: ...


def file_mtime_ms(where: Path | _Located, fallback: int) -> int:
    """The mtime (``mtime_ms``) of a file or of a source's file; ``fallback`` when it cannot be read or is not after 1970."""
    path = where if isinstance(where, (str, os.PathLike)) else where.path
    try:
        value = mtime_ms(os.stat(path))
    except OSError:
        return fallback
    return value if value > 0 else fallback


# --- JSON text as JavaScript writes it -----------------------------------------------------

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')
_INDEX_KEY = re.compile(r"^(?:0|[1-9][0-9]*)$")
_MAX_INDEX = 4294967295  # 2**32 - 1: array-index keys are below it


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group(0)
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def js_string(value: str) -> str:
    """A JSON string literal as ``JSON.stringify`` writes it (non-ASCII kept, lone surrogates escaped)."""
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, value) + '"'


def js_number(value: float | int) -> str:
    """``Number.prototype.toString`` for a JSON number: ``1`` not ``1.0``, ``1e+21``, ``1e-7``; non-finite ``null``.

    The digits are the shortest that round-trip (Python's ``repr`` and JS
    agree on them); an integer beyond 2**53 is the double JavaScript's
    ``JSON.parse`` would have made of it.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) <= 2**53:
            return str(value)
        value = float(value)
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # value = 0.<digits> * 10**point
    point = len(whole) + int(exponent or 0) - (len(whole + fraction) - len((whole + fraction).lstrip("0")))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * (-point) + digits
    e = point - 1
    head = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{head}e{'+' if e >= 0 else '-'}{abs(e)}"


def _is_index_key(key: str) -> bool:
    return bool(_INDEX_KEY.match(key)) and int(key) < _MAX_INDEX


def js_key_order(obj: Mapping[str, Any]) -> list[str]:
    """Keys in the order a JS object holds them: array-index keys ascending first, then insertion order."""
    index_keys = [k for k in obj if _is_index_key(k)]
    if not index_keys:
        return list(obj)
    return sorted(index_keys, key=int) + [k for k in obj if not _is_index_key(k)]


def js_json(value: Any) -> str:
    """JSON text exactly as ``JSON.stringify(value)`` writes it (no whitespace)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return js_string(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(js_string(k) + ":" + js_json(value[k]) for k in js_key_order(value)) + "}"
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def json_text(value: Any) -> str | None:
    """A JSON column: ``js_json(value)``, or None (SQL NULL) for None."""
    return None if value is None else js_json(value)


def js_loads(text_: str) -> Any:
    """Parse JSON as ``JSON.parse`` does for our purposes (duplicate keys: the last value wins)."""
    return json.loads(text_)
