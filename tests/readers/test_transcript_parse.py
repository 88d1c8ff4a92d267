"""Transcript lines parse to exactly what ``json.loads`` gives (issue 16: a faster parser only where it is identical).

``transcripts.parse_line`` tries msgspec first and hands everything it rejects to
``documents.parse_json_line``. These tests compare the two on generated JSON, on the edge cases
where msgspec and ``json`` part ways (NaN/Infinity, numbers past float range, integers past 64
bits, lone surrogates, duplicate keys, BOMs), on every line of the corpus and fixture
transcripts, and on the reliability mutants of them: the same value with the same types, or the
same one-line error. (Fails on 308a7ed: there is no ``parse_line``.)
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from helpers import CORPUS, FIXTURES, make_state
from statekit.documents import parse_json_line
from statekit.errors import SourceError
from statekit.legacy_readers.transcripts import parse_line

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
import rel_mutate  # noqa: E402


def typed(value: Any) -> Any:
    """A form where 1, 1.0 and True differ, -0.0 is not 0.0 and NaN equals NaN."""
    if isinstance(value, dict):
        return ("dict", [(k, typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value.hex())
    return (type(value).__name__, value)


def outcome(parse: Any, line: bytes) -> Any:
    try:
        return ("ok", typed(parse(line, "t.jsonl", 7)))
    except SourceError as exc:
        return ("error", str(exc))


def same(line: bytes) -> None:
    assert outcome(parse_line, line) == outcome(parse_json_line, line), line[:200]


EDGE_CASES = [
    b'1e999', b'-1e999', b'1.7976931348623159e308', b'[1e400, -1e400]', b'NaN', b'-Infinity', b'{"a": NaN}',
    b'"\\ud800"', b'"\\udc00x"', b'{"k\\ud800": 1}', b'"\\ud83d\\ude80"', b'"\xed\xa0\x80"', b'"\xff"', b'"\xc3"',
    b'{"a":1,"a":2}', b'{"a":{"b":1},"a":[2]}', b'18446744073709551615', b'18446744073709551616', b'-9223372036854775809',
    b'{"n": 123456789012345678901234567890}', b'-0', b'-0.0', b'0.1000000000000000055511151231257827', b'1E2', b'1e-400',
    b'2.2250738585072011e-308', b'5e-324', b'123456789012345678901234567890.5', b'"a\x01b"', b'"tab\tin"', b'[1,]', b'{"a":1,}',
    b'01', b'.5', b'1.', b'+1', b'"\\/"', b'"\\u0000"', b'"\x7f"', b'\xef\xbb\xbf{"a":1}', b'{"a":"\xef\xbb\xbf"}', b' {"x" : [1 , 2]} ',
    b'{"x":1} {"y":2}', b'{"x":1}garbage', b'true', b'null', b'"\\x41"', b'"\\u00e9\\u00E9"', b"{'a': 1}", b'{"a" 1}',
    b'[' * 2000 + b']' * 2000, b'{"a":' * 1500 + b'1' + b'}' * 1500, b'[' * 50_000,
]


@pytest.mark.parametrize("line", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_edge_cases(line: bytes) -> None:
    same(line)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(json_values, st.booleans())
def test_generated_json(value: Any, ascii_only: bool) -> None:
    same(json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes(data: bytes) -> None:
    same(data)


def transcript_files() -> list[Path]:
    roots = [FIXTURES, CORPUS / "public-repos"]
    return sorted(p for root in roots if root.is_dir() for p in root.rglob("*.jsonl"))


def test_every_corpus_and_fixture_line() -> None:
    files = transcript_files()
    assert files
    lines = 0
    for path in files:
        for line in path.read_bytes().splitlines():
            if line.strip():
                same(line.strip())
                lines += 1
    assert lines > 100


def test_reliability_mutants_of_every_fixture_transcript() -> None:
    checked = 0
    for mutated in rel_mutate.jsonl_mutants(transcript_files()[:40], random.Random(16)):
        for line in mutated.splitlines()[:200]:
            if line.strip():
                same(line.strip())
                checked += 1
    assert checked > 1000


PROBE = """
import json, sys
from statekit.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
sys.stdout.flush()
print("\\n" + json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def modules_of_plan(state: Path) -> set[str]:
    result = subprocess.run([sys.executable, "-c", PROBE, "plan", "--state-dir", str(state), "--quiet"], capture_output=True, text=True,
                            env={k: v for k, v in os.environ.items() if not k.startswith("STATEKIT_")}, timeout=300)
    return set(json.loads(result.stderr.strip().splitlines()[-1]))


def test_msgspec_loads_only_when_a_transcript_line_is_parsed(tmp_path: Path) -> None:
    """Fast start (issue 16): msgspec is imported on the first transcript line, not with the readers.

    Fails with a module-level ``import msgspec`` in transcripts.py (perf's d1dac8e): a plan of an
    install with no transcript loaded it anyway.
    """
    without = make_state(tmp_path / "a", {"cron/jobs.json": {"version": 1, "jobs": []}})
    loaded = modules_of_plan(without)
    assert "statekit.legacy_readers.transcripts" in loaded  # the reader is there (discovery loads every reader)...
    assert "msgspec" not in loaded  # ...its parser is not
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/"}
    line = {"type": "message", "id": "m1", "parentId": None, "timestamp": "2026-01-01T00:00:01Z", "message": {"role": "user", "content": "hi"}}
    with_one = make_state(tmp_path / "b", {"agents/main/sessions/s1.jsonl": json.dumps(header) + "\n" + json.dumps(line) + "\n"})
    assert "msgspec" in modules_of_plan(with_one)
