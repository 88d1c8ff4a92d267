"""acp/event-ledger.json -> acp_replay_sessions + acp_replay_events (the release's tables, keyed by session id)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, place, query, run
from helpers import FIXTURES
from statekit.legacy_readers import reader_for

FIX = FIXTURES / "readers" / "acp"
REL = "acp/event-ledger.json"


def test_claims():
    assert reader_for(REL).kind == "acp-event-ledger"


def test_round_trip(tmp_path: Path):
    """Every ledger session is a row keyed by its session id, as OpenClaw 2026.7.35 imported the file."""
    state, originals = new_state(tmp_path, {REL: (FIX / "event-ledger.json").read_bytes()})
    report = run(state)
    assert report.exit_code == 3  # s-bad and one malformed event
    assert any("session 's-bad' skipped" in w for w in report.warnings)
    assert any("session 's-new': 1 malformed event(s) skipped" in w for w in report.warnings)
    assert_imported(state, report, REL, originals[REL], records=6)
    assert query(state, "SELECT * FROM acp_replay_sessions ORDER BY session_id") == [
        {"session_id": "s-new", "session_key": "agent:main:work", "cwd": "/work", "complete": 1, "created_at": 3000, "updated_at": 4000, "next_seq": 3},
        {"session_id": "s-old", "session_key": "agent:main:work", "cwd": "/work", "complete": 1, "created_at": 1000, "updated_at": 2000, "next_seq": 2},
        {"session_id": "s-other", "session_key": "agent:main:other", "cwd": "", "complete": 0, "created_at": 5000, "updated_at": 6000, "next_seq": 1},
    ]
    events = query(state, "SELECT * FROM acp_replay_events ORDER BY session_id, seq")
    assert [(e["session_id"], e["seq"], e["at"], e["session_key"], e["run_id"]) for e in events] == [
        ("s-new", 1, 3100, "agent:main:work", "run-1"),
        ("s-new", 2, 3200, "agent:main:work", "run-1"),
        ("s-old", 1, 1500, "agent:main:work", None),
    ]
    assert events[1]["update_json"] == '{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"Thinking"}}'


def test_repeated_seq_keeps_the_first_and_foreign_events_are_skipped(tmp_path: Path):
    ledger = json.loads((FIX / "event-ledger.json").read_text())
    events = ledger["sessions"]["s-old"]["events"]
    events.append(dict(events[0], at=9999))
    events.append(dict(events[0], seq=5, sessionId="s-new"))
    events.append({k: v for k, v in events[0].items() if k != "sessionKey"} | {"seq": 6})
    state, _ = new_state(tmp_path, {REL: {"version": 1, "sessions": {"s-old": ledger["sessions"]["s-old"]}}})
    report = run(state)
    assert any("session 's-old': 1 repeated seq(s); the first event kept" in n for n in report.notices)
    assert any("session 's-old': 1 event(s) naming another session skipped" in w for w in report.warnings)
    assert any("session 's-old': 1 malformed event(s) skipped" in w for w in report.warnings)
    assert query(state, "SELECT session_id, seq, at FROM acp_replay_events") == [{"session_id": "s-old", "seq": 1, "at": 1500}]


def test_session_already_in_the_database_is_kept(tmp_path: Path):
    ledger = json.loads((FIX / "event-ledger.json").read_text())
    del ledger["sessions"]["s-bad"]
    ledger["sessions"]["s-new"]["events"] = ledger["sessions"]["s-new"]["events"][:2]
    state, _ = new_state(tmp_path, {REL: ledger})
    assert run(state).status == "completed"
    ledger["sessions"]["s-new"]["events"] = ledger["sessions"]["s-new"]["events"][:1]
    ledger["sessions"]["s-new"]["nextSeq"] = 7
    place(state, REL, ledger, MTIME + 1)
    report = run(state)
    # The ledger came back after its migration (issue 11 item 5): the run says so (a warning), and the rows stay.
    assert report.status == "warning"
    assert any(w.startswith(f"{REL}: came back after run") for w in report.warnings)
    assert any("session 's-new' is already in the database; kept as it is" in n for n in report.notices)
    assert query(state, "SELECT count(*) AS n FROM acp_replay_events WHERE session_id = 's-new'") == [{"n": 2}]
    assert query(state, "SELECT next_seq FROM acp_replay_sessions WHERE session_id = 's-new'") == [{"next_seq": 3}]


@pytest.mark.parametrize(("content", "needle"), [({"version": 2, "sessions": {}}, "$.version: must be 1"), ({"version": 1, "sessions": []}, "$.sessions: expected object")])
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    assert_failed_in_place(state, run(state), REL, originals[REL], needle)
