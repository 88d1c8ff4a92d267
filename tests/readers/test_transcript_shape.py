"""The plan's full check counts conforming lines without building them, and decides exactly as before (issue 16).

``transcripts.surely_conforms`` decodes a line into the fields the transcript-event schema constrains
and skips the rest; a line it does not accept goes to the full parse (``parse_line``, ``conforms``,
the schema). It must never accept a line the full parse refuses, or the plan would count what the
import then rejects, and the record count (part of every receipt's key) would differ. These tests
compare :meth:`TranscriptReader.inspect` with and without it on edge cases, generated events,
nesting at the recursion limit, every corpus and fixture transcript and their reliability mutants:
the same count and warnings, or the same one-line error.
"""

from __future__ import annotations

import io
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from helpers import FIXTURES, corpus_or_skip
from statekit.errors import SourceError
from statekit.legacy_readers import transcripts
from statekit.legacy_readers.base import Source
from statekit.legacy_readers.transcripts import TranscriptReader, parse_line, surely_conforms

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reliability"))
import rel_mutate  # noqa: E402

HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}'
GOOD = b'{"type":"message","id":"m9","parentId":null,"timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"x"}}'


def inspected(data: bytes) -> Any:
    """What the plan says of a transcript holding ``data``: (count, warnings) or the error."""
    source = Source(Path("/nonexistent"), "agents/main/sessions/s1.jsonl", "main")
    try:
        found = TranscriptReader().inspect(source, io.BytesIO(data))
    except SourceError as exc:
        return ("error", str(exc))
    return ("ok", found.record_count, found.warnings)


def same_plan(data: bytes, monkeypatch: pytest.MonkeyPatch) -> Any:
    with_shape = inspected(data)
    with monkeypatch.context() as patch:
        patch.setattr(transcripts, "surely_conforms", lambda line: False)  # every line through the full parse
        full = inspected(data)
    assert with_shape == full, data[:300]
    return with_shape


def full_parse_conforms(line: bytes) -> bool:
    """What the full parse says of one line: a dict the schema accepts (True), or not (False)."""
    try:
        event = parse_line(line, "t.jsonl", 2)
        if not isinstance(event, dict):
            return False
        if not transcripts.conforms(event):
            transcripts.validate(event, "transcript-event", "t.jsonl", line=2)
    except SourceError:
        return False
    return True


def check_line(line: bytes) -> None:
    """The one rule: the shape check never accepts what the full parse refuses."""
    if surely_conforms(line):
        assert full_parse_conforms(line), line[:300]


EDGE_LINES = [
    GOOD, b'{"type":"a"}', b'{"type":""}', b'{"type":5}', b'{"type":null}', b'{"type":"a","type":""}', b'{"type":"","type":"a"}',
    b'{"type":"a","id":"x","id":5}', b'{"type":"a","id":5,"id":"x"}', b'{"type":"a","i\\u0064":5}', b'{"typ\\u0065":"a"}',
    b'{"type":"a","message":{},"message":5}', b'{"type":"a","message":5,"message":{}}', b'{"type":"a","message":[]}',
    b'{"type":"a","message":null}', b'{"type":"a","message":"m"}', b'{"type":"a","message":{"a":"\\q"}}',
    b'{"type":"a","version":true}', b'{"type":"a","version":1.0}', b'{"type":"a","version":99999999999999999999999}',
    b'{"type":"a","timestamp":true}', b'{"type":"a","timestamp":1e400}', b'{"type":"a","timestamp":NaN}', b'{"type":"a","timestamp":-0}',
    b'{"type":"a","parentId":7}', b'{"type":"a","x":"\xff"}', b'{"type":"a","message":{"a":"\xff"}}', b'{"type":"a","x":"\xed\xa0\x80"}',
    b'{"type":"a","x":"\\ud800"}', b'{"type":"a","x":"\\uD800\\uDC00"}', b'{"type":"a","x":"a\x01b"}', b'{"type":"a","x":"\x7f"}',
    b'{"type":"a","x":01}', b'{"type":"a","x":-}', b'{"type":"a","x":1.}', b'{"type":"a","x":.5}', b'{"type":"a","x":+1}',
    b'{"type":"a","x":1e}', b'{"type":"a","x":NaN}', b'{"type":"a","x":Infinity}', b'{"type":"a","x":-Infinity}', b'{"type":"a","x":tru}',
    b'{"type":"a","x":nul}', b'{"type":"a","x":[1,]}', b'{"type":"a","x":{"a":1,}}', b'{"type":"a","x":{1:2}}', b'{"type":"a",}',
    b'{"type":"a"} x', b'{"type":"a"}{"type":"b"}', b'{"type":"a","x":"abc}', b'{"type":"a","x":{"k":1 "j":2}}', b'[{"type":"a"}]',
    b'"type"', b'null', b'{"type":"a","x":' + b"9" * 4299 + b"}", b'{"type":"a","x":' + b"9" * 4301 + b"}",
    b'{"type":"a","x":' + b"9" * 5000 + b"}", b'{"type":"a","message":{"n":' + b"1" * 4400 + b"}}", b'{"type":"a","x":1e99999}',
    b'{"type":"\xc3\xa9","message":{"t":"\xe2\x82\xac"}}', b'{"type":"a","x":"\\u0000"}', b"{'type': 'a'}", b'{"type":"a","x":[' + b"[" * 50_000,
]


@pytest.mark.parametrize("line", EDGE_LINES, ids=range(len(EDGE_LINES)))
def test_edge_lines(line: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    check_line(line)
    same_plan(HEADER + b"\n" + line + b"\n" + GOOD + b"\n", monkeypatch)  # a bad middle line
    same_plan(HEADER + b"\n" + GOOD + b"\n" + line, monkeypatch)  # the last line, torn or not


def test_conforming_lines_are_counted_without_the_full_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of it: a plain event line is counted by the shape check, the full parse never runs for it."""
    parsed: list[bytes] = []
    real = transcripts.parse_line
    monkeypatch.setattr(transcripts, "parse_line", lambda line, rel, number: parsed.append(line) or real(line, rel, number))
    assert inspected(HEADER + b"\n" + (GOOD + b"\n") * 50) == ("ok", 51, [])
    assert parsed == [HEADER]  # the header only: the 50 events were counted by their shape
    assert surely_conforms(GOOD) and not surely_conforms(b'{"type":"a","x":"\xff"}')


def test_nesting_at_the_recursion_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both decoders meet the recursion limit at the same depth: no depth where one accepts and the other refuses."""
    def nested(depth: int, inside_message: bool) -> bytes:
        value = b"[" * depth + b"]" * depth
        return b'{"type":"a","message":{"v":' + value + b"}}" if inside_message else b'{"type":"a","x":' + value + b"}"

    for inside_message in (False, True):
        plans = {depth: same_plan(HEADER + b"\n" + nested(depth, inside_message) + b"\n", monkeypatch) for depth in range(900, 1100)}
        assert plans[900] == ("ok", 2, [])  # read whole...
        assert plans[1099][2] and "recursion" in plans[1099][2][0]  # ...and past the limit: the readable prefix ends there


event_fields = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["message", "", "session", "é"]) | st.integers() | st.none(),
    "id": st.text(max_size=6) | st.integers() | st.none() | st.booleans(),
    "parentId": st.text(max_size=6) | st.none() | st.floats(allow_nan=False),
    "timestamp": st.text(max_size=8) | st.integers(min_value=-(10**25), max_value=10**25) | st.floats() | st.booleans() | st.none(),
    "version": st.integers(min_value=-(10**22), max_value=10**22) | st.floats(allow_nan=False) | st.booleans() | st.none(),
    "message": st.dictionaries(st.text(max_size=4), st.text(max_size=6) | st.integers(), max_size=3) | st.lists(st.integers(), max_size=2)
    | st.text(max_size=4) | st.none(),
    "other": st.text() | st.lists(st.text(max_size=3), max_size=3),
})


@settings(max_examples=500, deadline=None)
@given(event_fields, st.booleans(), st.sampled_from([None, b"\xff", b"\xed\xa0\x80", b"\\q", b"\x01", b"NaN", b"01"]), st.integers(0, 400))
def test_generated_events(fields: dict[str, Any], ascii_only: bool, splice: bytes | None, at: int) -> None:
    line = json.dumps(fields, ensure_ascii=ascii_only, allow_nan=True).encode("utf-8", "surrogatepass")
    check_line(line)
    if splice is not None:  # a foreign byte sequence anywhere in it: inside a string, a number, between tokens
        position = at % (len(line) + 1)
        check_line(line[:position] + splice + line[position:])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80))
def test_arbitrary_bytes(data: bytes) -> None:
    check_line(data)
    check_line(b'{"type":"a","x":"' + data + b'"}')


def transcript_files(roots: list[Path]) -> list[Path]:
    return sorted(p for root in roots if root.is_dir() for p in root.rglob("*.jsonl"))


def lines_counted(files: list[Path], monkeypatch: pytest.MonkeyPatch) -> int:
    """Each file planned both ways (the same outcome) and each line checked alone; the events the plans counted."""
    assert files
    counted = 0
    for path in files:
        data = path.read_bytes()
        result = same_plan(data, monkeypatch)
        counted += result[1] if result[0] == "ok" else 0
        for line in data.splitlines():
            check_line(line.strip())
    return counted


def test_every_fixture_transcript(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled fixtures alone: what a clone without ../shared runs."""
    assert lines_counted(transcript_files([FIXTURES]), monkeypatch) > 50


def test_every_corpus_and_fixture_transcript(monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = corpus_or_skip()
    files = transcript_files([FIXTURES, corpus / "public-repos", corpus / "generated"])
    assert lines_counted(files, monkeypatch) > 100


def test_reliability_mutants_of_every_fixture_transcript(monkeypatch: pytest.MonkeyPatch) -> None:
    checked = 0
    for mutated in rel_mutate.jsonl_mutants(transcript_files([FIXTURES])[:40], random.Random(16)):
        same_plan(mutated, monkeypatch)
        for line in mutated.splitlines()[:200]:
            check_line(line.strip())
        checked += 1
    assert checked > 100
