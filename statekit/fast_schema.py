"""A compiled JSON Schema check (fastjsonschema) that may only ever say "valid" where jsonschema does.

jsonschema stays the authority: it decides every document the compiled check does not accept, and words
every error a user sees. The compiled check is ~20x faster (0.35 ms per backup-manifest asset with
jsonschema; a session index of 10,000 entries), so documents that are fine cost almost nothing.

A schema is compiled only when every keyword in it is one fastjsonschema implements as jsonschema does for
draft 2020-12 (:data:`SUPPORTED`); a schema using anything else (``unevaluatedProperties``, ``prefixItems``,
``$dynamicRef``: keywords fastjsonschema would silently ignore, so it would accept more) gets no compiled
check and goes to jsonschema alone. Where the two differ on a value (``format`` assertions, ``1.0`` as an
integer, a ``Decimal``), the compiled check is the stricter one, which only sends the document to jsonschema.
tests/core/test_fast_schema.py holds the two to that on every shipped schema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

# Only the keywords the shipped schemas use, each checked to behave as jsonschema's or stricter
# (``pattern``: fastjsonschema reads ``$`` as ``\Z``, so "abc\n" goes to jsonschema; ``enum``/``const``
# tell ``true`` from ``1`` as jsonschema does). Anything else, even a keyword fastjsonschema knows
# (``uniqueItems``, ``multipleOf``, ``format``, ``dependentRequired``...), leaves the schema to jsonschema.
_SUBSCHEMA = frozenset({"items", "if", "then", "else", "additionalProperties", "propertyNames"})
_SUBSCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf"})
_SUBSCHEMA_MAP = frozenset({"properties", "$defs"})
_DATA = frozenset({"enum", "const", "required", "default", "examples"})
_ASSERTIONS = frozenset({"type", "minimum", "maximum", "minLength", "maxLength", "minProperties", "pattern", "$ref"})
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description"})
SUPPORTED = _SUBSCHEMA | _SUBSCHEMA_LIST | _SUBSCHEMA_MAP | _DATA | _ASSERTIONS | _ANNOTATIONS


def unsupported_keywords(schema: Any) -> set[str]:
    """Every keyword of ``schema`` (walked through its subschemas) outside :data:`SUPPORTED`."""
    found: set[str] = set()
    if isinstance(schema, bool):
        return found
    if not isinstance(schema, Mapping):
        return {"<not a schema>"}
    for key, value in schema.items():
        if key not in SUPPORTED:
            found.add(str(key))
        elif key in _SUBSCHEMA:
            found |= unsupported_keywords(value)
        elif key in _SUBSCHEMA_LIST:
            for item in value if isinstance(value, list) else [None]:
                found |= unsupported_keywords(item)
        elif key in _SUBSCHEMA_MAP:
            for item in value.values() if isinstance(value, Mapping) else [None]:
                found |= unsupported_keywords(item)
        elif key == "$ref" and not (isinstance(value, str) and value.startswith("#")):
            found.add("$ref to another document")
    return found


def compile_check(schema: Mapping[str, Any]) -> Check | None:
    """A check that returns True only for documents ``schema`` accepts; None when the schema cannot be compiled safely."""
    if unsupported_keywords(schema):
        return None
    import fastjsonschema  # only where a document is checked: not at every start

    try:
        compiled = fastjsonschema.compile(dict(schema))
    except Exception:  # noqa: BLE001  a schema fastjsonschema cannot compile: jsonschema alone, as before
        return None

    def check(document: Any) -> bool:
        try:
            compiled(document)
        except Exception:  # noqa: BLE001  any "not accepted" (a schema error, a document too deep...): jsonschema decides
            return False
        return True

    return check
