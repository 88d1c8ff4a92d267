"""Moved: JSON text as JavaScript writes it is :func:`statekit.values.js_json`.

These names stay importable for the readers that still use them.
"""

from __future__ import annotations

from statekit.values import js_json as js_stringify
from statekit.values import js_loads as loads_js
from statekit.values import js_number

__all__ = ["js_number", "js_stringify", "loads_js"]
