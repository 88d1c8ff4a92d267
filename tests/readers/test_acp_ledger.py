"""acp/event-ledger.json -> acp_replay_sessions + acp_replay_events (keyed by session key; OpenClaw's session-id shape too)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from b2_harness import MTIME, assert_failed_in_place, assert_imported, new_state, place, query, run
from helpers import FIXTURES, global_db, open_db
from legacy_readers import reader_for

FIX = FIXTURES / "readers" / "acp"
REL = "acp/event-ledger.json"


def test_claims():
    assert reader_for(REL).kind == "acp-event-ledger"


def test_round_trip(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "event-ledger.json").read_bytes()})
    report = run(state)
    assert report.exit_code == 3  # s-bad and one malformed event
    assert any("session 's-bad' skipped" in w for w in report.warnings)
    assert any("session 's-new': 1 malformed event(s) skipped" in w for w in report.warnings)
    assert any("'s-old' shares its session key with the newer 's-new'" in n for n in report.notices)
    assert_imported(state, report, REL, originals[REL], records=4)
    assert query(state, "SELECT * FROM acp_replay_sessions ORDER BY session_key") == [
        {"session_key": "agent:main:other", "session_id": "s-other", "cwd": "", "complete": 0, "next_seq": 1, "created_at": 5000, "updated_at": 6000},
        {"session_key": "agent:main:work", "session_id": "s-new", "cwd": "/work", "complete": 1, "next_seq": 3, "created_at": 3000, "updated_at": 4000},
    ]
    events = query(state, "SELECT * FROM acp_replay_events ORDER BY seq")
    assert [(e["session_key"], e["seq"], e["at"], e["run_id"]) for e in events] == [("agent:main:work", 1, 3100, "run-1"), ("agent:main:work", 2, 3200, "run-1")]
    assert json.loads(events[1]["update_json"]) == {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Thinking"}}


def test_reimport_replaces_the_key(tmp_path: Path):
    ledger = json.loads((FIX / "event-ledger.json").read_text())
    del ledger["sessions"]["s-bad"]
    ledger["sessions"]["s-new"]["events"] = ledger["sessions"]["s-new"]["events"][:2]
    state, _ = new_state(tmp_path, {REL: ledger})
    assert run(state).status == "completed"
    ledger["sessions"]["s-new"]["events"] = ledger["sessions"]["s-new"]["events"][:1]
    place(state, REL, ledger, MTIME + 1)
    assert run(state).status == "completed"
    assert query(state, "SELECT count(*) AS n FROM acp_replay_events") == [{"n": 1}]
    assert query(state, "SELECT next_seq FROM acp_replay_sessions WHERE session_key = 'agent:main:work'") == [{"next_seq": 3}]


def test_openclaw_session_id_keyed_tables(tmp_path: Path):
    ledger = json.loads((FIX / "event-ledger.json").read_text())
    del ledger["sessions"]["s-bad"]
    state, originals = new_state(tmp_path, {REL: ledger})
    db = global_db(state)
    db.parent.mkdir(parents=True)
    conn = open_db(db)
    conn.executescript(
        "CREATE TABLE acp_replay_sessions (session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT NOT NULL, cwd TEXT NOT NULL,"
        " complete INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, next_seq INTEGER NOT NULL);"
        "CREATE TABLE acp_replay_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, session_key TEXT NOT NULL,"
        " run_id TEXT, update_json TEXT NOT NULL, PRIMARY KEY (session_id, seq),"
        " FOREIGN KEY (session_id) REFERENCES acp_replay_sessions(session_id) ON DELETE CASCADE);"
        "INSERT INTO acp_replay_sessions VALUES ('s-new','agent:main:stale','/',0,1,1,1);"
        "PRAGMA user_version = 1;"
    )
    conn.close()
    report = run(state)
    assert report.exit_code == 3  # the malformed event
    assert_imported(state, report, REL, originals[REL])
    assert query(state, "SELECT session_id, session_key FROM acp_replay_sessions ORDER BY session_id") == [
        {"session_id": "s-new", "session_key": "agent:main:work"},
        {"session_id": "s-other", "session_key": "agent:main:other"},
    ]
    assert [(e["session_id"], e["seq"]) for e in query(state, "SELECT session_id, seq FROM acp_replay_events ORDER BY seq")] == [("s-new", 1), ("s-new", 2)]


@pytest.mark.parametrize(("content", "needle"), [({"version": 2, "sessions": {}}, "$.version: must be 1"), ({"version": 1, "sessions": []}, "$.sessions: expected object")])
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    assert_failed_in_place(state, run(state), REL, originals[REL], needle)
