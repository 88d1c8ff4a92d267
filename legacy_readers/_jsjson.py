"""JSON text exactly as JavaScript's ``JSON.stringify`` writes it.

Needed for the deterministic V1 transcript ids (sha256 over
``JSON.stringify({index, entry})``): no whitespace, original key order but
array-index keys first in ascending order (as JS objects order them),
non-ASCII unescaped, lone surrogates escaped, and numbers formatted like
``Number.prototype.toString`` (``1`` not ``1.0``, ``1e+21``, ``1e-7``).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')
_INDEX_KEY = re.compile(r"^(?:0|[1-9][0-9]*)$")


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group(0)
    return _ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def _string(value: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, value) + '"'


def js_number(value: float | int) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) < 10**21:
            return str(value)
        value = float(value)
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    exp = int(exponent)
    if -7 < exp < 21:
        # repr chose exponent form where JS uses plain digits.
        return format(value, "f").rstrip("0").rstrip(".") if exp < 0 else str(int(value))
    if mantissa.endswith(".0"):
        mantissa = mantissa[:-2]
    return f"{mantissa}e{'+' if exp > 0 else '-'}{abs(exp)}"


def _ordered_keys(obj: dict[str, Any]) -> list[str]:
    index_keys = [k for k in obj if _INDEX_KEY.match(k) and int(k) < 4294967295]
    if not index_keys:
        return list(obj)
    rest = [k for k in obj if not (_INDEX_KEY.match(k) and int(k) < 4294967295)]
    return sorted(index_keys, key=int) + rest


def js_stringify(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, list):
        return "[" + ",".join(js_stringify(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_string(k) + ":" + js_stringify(value[k]) for k in _ordered_keys(value)) + "}"
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def loads_js(text: str) -> Any:
    """Parse JSON the way ``JSON.parse`` does for our purposes (duplicate keys: last value wins)."""
    return json.loads(text)
