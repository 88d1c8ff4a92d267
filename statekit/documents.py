"""Loading and validating legacy documents: JSON, JSON5 and JSONL lines, checked against a reader schema.

Every problem is one :class:`~statekit.errors.SourceError` naming the file
(its state-dir-relative path), the line where known, the JSON path where
known, and what is wrong -- never the offending value (it may be a secret).
Schemas are the JSON Schemas under ``legacy_readers/schemas``.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

import json5

from statekit.errors import SourceError, shown_key

if TYPE_CHECKING:  # imported when a schema is first used (a fast --help and empty plan)
    import jsonschema

SCHEMA_PACKAGE = "statekit.legacy_readers"
_BOM = b"\xef\xbb\xbf"


class _Named(Protocol):
    @property
    def rel(self) -> str: ...


# --- decoding and parsing ----------------------------------------------------------------


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name}")


_STRICT = json.JSONDecoder(parse_constant=_reject_constant)  # one decoder for every call (json.loads(..., parse_constant=) builds one each time)


def _strict_loads(text: str) -> Any:
    """``json.loads(text, parse_constant=_reject_constant)`` without a new decoder per call (its BOM error kept)."""
    if text.startswith("\ufeff"):
        return json.loads(text, parse_constant=_reject_constant)
    return _STRICT.decode(text)


def decode_utf8(data: bytes, rel: str) -> str:
    """UTF-8 text (a leading BOM dropped); invalid bytes name the byte offset and line."""
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SourceError(rel, f"invalid UTF-8 at byte {exc.start}", line=line) from None


def parse_json_line(raw: bytes, rel: str, line: int) -> Any:
    """Strict JSON for one JSONL line (no NaN/Infinity); errors name file and line."""
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(rel, f"invalid UTF-8 at byte {exc.start}", line=line) from None
    try:
        return _strict_loads(decoded)
    except (ValueError, RecursionError) as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc) or "nesting too deep"
        raise SourceError(rel, f"invalid JSON: {message}", line=line) from None


def parse_json_document(data: bytes, rel: str) -> Any:
    """Strict JSON document (what ``JSON.stringify`` wrote); NaN/Infinity rejected; an empty file is an error."""
    decoded = decode_utf8(data, rel)
    if not decoded.strip():
        raise SourceError(rel, "file is empty")
    try:
        return _strict_loads(decoded)
    except json.JSONDecodeError as exc:
        raise SourceError(rel, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise SourceError(rel, f"invalid JSON: {exc or 'nesting too deep'}") from None


def parse_json5_document(data: bytes, rel: str) -> Any:
    """JSON5 (comments, trailing commas, unquoted keys) as old OpenClaw read it."""
    decoded = decode_utf8(data, rel)
    if not decoded.strip():
        raise SourceError(rel, "file is empty")
    try:
        # Writers emitted plain JSON: the C parser is ~100x faster than json5.
        return json.loads(decoded)
    except (ValueError, RecursionError):
        pass
    try:
        return json5.loads(decoded, allow_duplicate_keys=True)
    except RecursionError:
        raise SourceError(rel, "invalid JSON5: nesting too deep") from None
    except ValueError as exc:
        message = str(exc).splitlines()[0] if str(exc) else "invalid JSON5"
        line_match = re.search(r"<string>:(\d+)", message)
        line = int(line_match.group(1)) if line_match else None
        message = re.sub(r"^<string>:\d+(?::\d+)?\s*", "", message)
        raise SourceError(rel, f"invalid JSON5: {message}", line=line) from None


# --- schemas -----------------------------------------------------------------------------


@lru_cache(maxsize=1)
def schema_dir() -> Path:
    """``legacy_readers/schemas``, found without importing the readers (this module is below them)."""
    spec = importlib.util.find_spec(SCHEMA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {SCHEMA_PACKAGE} not found")
    return Path(next(iter(spec.submodule_search_locations))) / "schemas"


def schema_path(name: str) -> Path:
    return schema_dir() / f"{name}.schema.json"


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    """The reader schema ``legacy_readers/schemas/<name>.schema.json``."""
    schema: dict[str, Any] = json.loads(schema_path(name).read_text(encoding="utf-8"))
    return schema


@lru_cache(maxsize=None)
def validator(name: str) -> jsonschema.protocols.Validator:
    """A checked validator for the named schema (built once)."""
    import jsonschema.validators

    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def json_type(value: Any) -> str:
    """The JSON type name of a parsed value (``integer`` and ``number`` apart)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def describe_validation_error(error: jsonschema.ValidationError) -> str:
    """A one-line description that never echoes the offending value (it may be a secret)."""
    v = error.validator
    vv = error.validator_value
    if v == "type":
        expected = vv if isinstance(vv, str) else " or ".join(vv)
        return f"expected {expected}, found {json_type(error.instance)}"
    if v == "required":
        missing = [name for name in vv if isinstance(error.instance, dict) and name not in error.instance] or list(vv)
        return "missing required property " + ", ".join(repr(m) for m in missing)
    if v == "enum":
        return f"must be one of {', '.join(json.dumps(x) for x in vv)}"
    if v == "const":
        return f"must be {json.dumps(vv)}"
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"must satisfy {v} {vv}"
    if v in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
        return f"violates {v} {vv}"
    if v == "pattern":
        return f"does not match pattern {vv}"
    if v == "additionalProperties":
        return "has properties that are not allowed"
    if v in ("anyOf", "oneOf"):
        return f"matches none of the allowed shapes ({v})"
    return f"fails {v}"


def _first_error(document: Any, schema_name: str) -> jsonschema.ValidationError | None:
    errors = sorted(validator(schema_name).iter_errors(document), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    return errors[0] if errors else None


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # jsonschema writes these keys with a dot, others as ['key']


def shown_path(error: jsonschema.ValidationError) -> str:
    """The error's JSON path (``$.profiles.<key sha256:…>.token``) with every object key through ``shown_key``:
    a map keyed by secrets never puts a key into a message."""
    parts = ["$"]
    for item in error.absolute_path:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            key = shown_key(str(item))
            if key != item:
                parts.append(f"[{key}]")
            else:
                parts.append(f".{key}" if _IDENTIFIER.match(key) else f"[{key!r}]")
    return "".join(parts)


@lru_cache(maxsize=None)
def fast_check(name: str) -> Callable[[Any], bool] | None:
    """The compiled check of the named schema (``statekit.fast_schema``), None where it cannot be compiled safely."""
    from statekit.fast_schema import compile_check

    return compile_check(load_schema(name))


def accepted_fast(document: Any, schema_name: str) -> bool:
    """True when the compiled check accepts ``document``: then jsonschema would too, and need not run."""
    check = fast_check(schema_name)
    return check is not None and check(document)


def validate(document: Any, schema_name: str, rel: str, *, line: int | None = None) -> None:
    """Validate against a reader schema; raise SourceError with the first error's JSON path (jsonschema's)."""
    if accepted_fast(document, schema_name):
        return
    first = _first_error(document, schema_name)
    if first is not None:
        raise SourceError(rel, describe_validation_error(first), line=line, json_path=shown_path(first))


def validate_hiding_keys(document: Any, schema_name: str, rel: str, label: str = "entry") -> None:
    """Schema validation whose error path numbers top-level map keys (``entry #2.profile``).

    For maps keyed by secrets (bootstrap tokens): the key never reaches a message.
    """
    if accepted_fast(document, schema_name):
        return
    first = _first_error(document, schema_name)
    if first is None:
        return
    parts: list[str] = []
    for depth, item in enumerate(first.absolute_path):
        if depth == 0 and isinstance(document, dict) and isinstance(item, str):
            number = list(document).index(item) + 1 if item in document else 0
            parts.append(f"{label} #{number}")
        elif isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    raise SourceError(rel, describe_validation_error(first), json_path="".join(parts) or "$")


# --- whole documents -----------------------------------------------------------------------


def load_json(handle: BinaryIO, rel: str) -> Any:
    """Strict JSON read from ``handle`` (what OpenClaw's ``JSON.stringify`` wrote): errors name file and line."""
    return parse_json_document(handle.read(), rel)


def load_object(handle: BinaryIO, rel: str, schema_name: str | None = None) -> dict[str, Any]:
    """A strict JSON object, validated against ``schema_name`` when given."""
    document = load_json(handle, rel)
    if schema_name:
        validate(document, schema_name, rel)
    if not isinstance(document, dict):
        raise SourceError(rel, f"expected a JSON object, found {type(document).__name__}")
    return document


def load_document(source: _Named, handle: BinaryIO, schema_name: str | None) -> Any:
    """A strict JSON document of ``source`` validated against the reader's schema (any JSON type)."""
    document = load_json(handle, source.rel)
    if schema_name:
        validate(document, schema_name, source.rel)
    return document


def unmapped_fields(entries: Iterable[Mapping[str, Any]], known: Iterable[str]) -> list[str]:
    """Field names (never values) present in the input that have no column and no JSON home."""
    known_set = set(known)
    return sorted({shown_key(name) for entry in entries for name in entry if name not in known_set})


def read_text(handle: BinaryIO, rel: str) -> str:
    """The whole of ``handle`` as UTF-8 text (``decode_utf8``)."""
    return decode_utf8(handle.read(), rel)
