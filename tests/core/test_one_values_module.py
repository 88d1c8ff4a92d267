"""One values module, one documents module: no second copy of their helpers in the product.

``statekit/values.py`` (text, flags, numbers, ms, ISO<->ms, file mtimes,
JSON as JavaScript writes it) and ``statekit/documents.py`` (load and
validate JSON/JSON5/JSONL) are the only places these conversions are
written. This test fails when a second definition (a function with one of
their names, or the hand-rolled code they replace) appears anywhere in
statekit/, migrate/, backup/, maintenance/ or legacy_readers/.

``KNOWN_DEFS`` / ``KNOWN_PATTERNS`` list the copies that remain on purpose;
they may only shrink: an entry that is gone must be taken off. A reader whose
field follows another rule keeps its function under a name saying so
(``session_index._text_or_number``, ``transcripts.event_time_ms``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from helpers import REPO

PRODUCT = ("statekit", "migrate", "backup", "maintenance", "legacy_readers")
HOMES = {"statekit/values.py", "statekit/documents.py"}

HELPER_NAMES = {
    # values
    "text", "_text", "trimmed", "_trimmed", "flag", "_flag", "finite_number", "_finite", "integer", "as_int", "int64", "_int",
    "ms", "_ms", "as_ms", "record", "nested_text",
    "parse_iso", "iso_to_ms", "parse_iso_ms", "_iso_to_ms", "ms_to_iso", "iso_from_ms", "_iso", "_iso_ms", "iso_ms", "iso_utc",
    "_epoch_ms", "datetime_ms", "datetime_to_iso", "ms_to_display", "_when",
    "mtime_ms", "_mtime_ms", "file_mtime_ms", "_file_mtime_ms",
    "js_json", "js_stringify", "compact_json", "js_number", "_js_number_text", "js_string", "json_col", "json_text", "_json_or_none", "loads_js",
    # documents
    "decode_utf8", "parse_json_line", "parse_json_document", "parse_json5_document", "load_json", "load_object", "load_document",
    "validate", "validate_hiding_keys", "describe_validation_error", "json_type", "load_schema", "text_of", "read_text",
    "unmapped_fields",
}

# Hand-rolled versions of what values.py does, by pattern (file -> how many are known).
PATTERNS = {
    "ISO parse": re.compile(r"\bfromisoformat\("),
    "float mtime": re.compile(r"\bst_mtime\s*\*\s*1000"),
    "ns mtime": re.compile(r"\bst_mtime_ns\s*//\s*1_?000_?000\b"),
    "ms -> datetime": re.compile(r"\b(?:utc)?fromtimestamp\("),
    "ISO format": re.compile(r"strftime\(\s*[\"']%Y-%m-%dT%H:%M:%S"),
}

KNOWN_DEFS: set[tuple[str, str]] = set()
KNOWN_PATTERNS = {
    # statekit's own source identity (plan, apply, config receipt): size + mtime + sha256 as receipts have always
    # recorded it; not a value OpenClaw reads. Changing it would make existing receipts stop matching.
    ("migrate/discover.py", "ns mtime"): 2,
    ("migrate/apply.py", "ns mtime"): 1,
    ("migrate/steps.py", "ns mtime"): 1,
}


def _product_files() -> list[tuple[str, Path]]:
    files = []
    for top in PRODUCT:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if ".venv" not in rel and rel not in HOMES:
                files.append((rel, path))
    return files


def test_no_second_definition_of_a_values_or_documents_helper() -> None:
    found = set()
    for rel, path in _product_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in HELPER_NAMES:
                found.add((rel, node.name))
    assert sorted(found - KNOWN_DEFS) == [], "use statekit.values / statekit.documents instead of a local copy"
    assert sorted(KNOWN_DEFS - found) == [], "gone: take these off KNOWN_DEFS"


def test_no_hand_rolled_time_or_mtime_conversions() -> None:
    found: dict[tuple[str, str], int] = {}
    for rel, path in _product_files():
        source = path.read_text(encoding="utf-8")
        for name, pattern in PATTERNS.items():
            count = len(pattern.findall(source))
            if count:
                found[(rel, name)] = count
    new = {k: v for k, v in found.items() if v > KNOWN_PATTERNS.get(k, 0)}
    gone = {k: v for k, v in KNOWN_PATTERNS.items() if found.get(k, 0) < v}
    assert new == {}, "use statekit.values (parse_iso / iso_to_ms / ms_to_iso / mtime_ms / file_mtime_ms)"
    assert gone == {}, "fewer than listed: lower KNOWN_PATTERNS"


def test_the_homes_define_each_helper_once() -> None:
    for home in HOMES:
        names = [n.name for n in ast.parse((REPO / home).read_text(encoding="utf-8")).body if isinstance(n, ast.FunctionDef)]
        assert len(names) == len(set(names)), home
