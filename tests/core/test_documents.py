"""statekit.documents: one-line errors naming file, line and JSON path, never the value."""

from __future__ import annotations

import io

import pytest

from statekit.documents import (
    decode_utf8,
    load_document,
    load_object,
    load_schema,
    parse_json5_document,
    parse_json_document,
    parse_json_line,
    read_text,
    unmapped_fields,
    validate,
    validate_hiding_keys,
)
from statekit.errors import SourceError


class _Src:
    rel = "devices/bootstrap.json"


def _error(excinfo: pytest.ExceptionInfo[SourceError]) -> str:
    return str(excinfo.value)


def test_strict_json_names_file_and_line_and_refuses_non_finite() -> None:
    with pytest.raises(SourceError) as excinfo:
        parse_json_document(b'{\n  "a": 1,\n  "b": }', "x.json")
    assert excinfo.value.line == 3 and "x.json" in _error(excinfo) and "invalid JSON" in _error(excinfo)
    with pytest.raises(SourceError, match="non-finite"):
        parse_json_document(b'{"a": NaN}', "x.json")
    with pytest.raises(SourceError, match="file is empty"):
        parse_json_document(b"  \n", "x.json")
    assert parse_json_document(b'\xef\xbb\xbf{"a": 1}', "x.json") == {"a": 1}


def test_json_line_errors_carry_the_line_number() -> None:
    assert parse_json_line(b'{"a":1}', "l.jsonl", 4) == {"a": 1}
    with pytest.raises(SourceError) as excinfo:
        parse_json_line(b'{"a":', "l.jsonl", 4)
    assert excinfo.value.line == 4
    with pytest.raises(SourceError, match="invalid UTF-8 at byte 1"):
        parse_json_line(b'"\xff"', "l.jsonl", 2)


def test_utf8_errors_name_byte_and_line() -> None:
    with pytest.raises(SourceError) as excinfo:
        decode_utf8(b'{\n"a": "\xc3"}', "x.json")
    assert excinfo.value.line == 2 and "byte 8" in _error(excinfo)
    assert read_text(io.BytesIO("é".encode()), "x") == "é"


def test_json5_accepts_comments_and_trailing_commas() -> None:
    assert parse_json5_document(b"// c\n{a: 1, b: [2,],}", "openclaw.json") == {"a": 1, "b": [2]}
    with pytest.raises(SourceError) as excinfo:
        parse_json5_document(b"{\n a: \n}", "openclaw.json")
    assert "invalid JSON5" in _error(excinfo)


def test_validation_names_the_path_and_hides_the_value() -> None:
    assert load_schema("devices-bootstrap")["type"] == "object"
    secret = "tok-SECRET-123"
    document = {secret: {"token": 5}}
    with pytest.raises(SourceError) as excinfo:
        validate(document, "devices-bootstrap", "devices/bootstrap.json")
    assert "expected" in _error(excinfo)
    with pytest.raises(SourceError) as hidden:
        validate_hiding_keys(document, "devices-bootstrap", "devices/bootstrap.json")
    assert secret not in _error(hidden) and "entry #1" in _error(hidden)


def test_load_object_and_document() -> None:
    assert load_object(io.BytesIO(b"{}"), "x.json") == {}
    with pytest.raises(SourceError, match="expected a JSON object"):
        load_object(io.BytesIO(b"[1]"), "x.json")
    assert load_document(_Src(), io.BytesIO(b"[1]"), None) == [1]
    with pytest.raises(SourceError):
        load_document(_Src(), io.BytesIO(b"[1]"), "devices-bootstrap")


def test_unmapped_fields_lists_names_only() -> None:
    assert unmapped_fields([{"a": 1, "z": "secret"}, {"y": 2}], ["a"]) == ["y", "z"]
