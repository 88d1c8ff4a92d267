"""subagents/runs.json -> subagent_runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from b2_harness import MTIME, assert_failed_in_place, assert_imported, new_state, outcome, place, query, run
from helpers import FIXTURES, global_db, open_db
from legacy_readers import reader_for

FIX = FIXTURES / "readers" / "subagents"
REL = "subagents/runs.json"


def test_claims():
    assert reader_for(REL).kind == "subagent-runs"


def test_round_trip_v3(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "runs-v3.json").read_bytes()})
    report = run(state)
    assert report.exit_code == 3  # run-broken cannot be imported
    assert any("run 'run-broken' has no childSessionKey/requesterSessionKey; skipped" in w for w in report.warnings)
    assert_imported(state, report, REL, originals[REL], records=2)
    rows = {r["run_id"]: r for r in query(state, "SELECT * FROM subagent_runs")}
    assert set(rows) == {"run-a", "run-b"}
    a = rows["run-a"]
    payload = json.loads(a.pop("payload_json"))
    assert a == {
        "run_id": "run-a",
        "child_session_key": "agent:main:subagent:aaa",
        "requester_session_key": "agent:main:main",
        "controller_session_key": "agent:main:main",
        "created_at": 1774000000000,
        "ended_at": 1774000060000,
        "cleanup_handled": 1,
    }
    assert payload == json.loads(originals[REL])["runs"]["run-a"]
    b = rows["run-b"]
    assert (b["controller_session_key"], b["ended_at"], b["cleanup_handled"], json.loads(b["payload_json"])["childKeys"]) == (None, None, None, [])


def test_version_1_records_are_normalised(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "runs-v1.json").read_bytes()})
    report = run(state)
    assert report.status == "completed"
    assert_imported(state, report, REL, originals[REL], records=1)
    row = query(state, "SELECT * FROM subagent_runs")[0]
    assert (row["cleanup_handled"], row["ended_at"]) == (1, 1760000050000)
    payload = json.loads(row["payload_json"])
    assert payload["cleanupCompletedAt"] == 1760000051000 and payload["cleanupHandled"] is True
    assert payload["requesterOrigin"] == {"channel": "discord", "accountId": "acct-9"}
    assert not {"announceCompletedAt", "requesterChannel", "requesterAccountId"} & set(payload)


def test_reimport_upserts(tmp_path: Path):
    doc = json.loads((FIX / "runs-v1.json").read_text())
    state, _ = new_state(tmp_path, {REL: doc})
    run(state)
    doc["runs"]["old-1"]["endedAt"] = 1760000099000
    place(state, REL, doc, MTIME + 1)
    assert run(state).status == "completed"
    assert query(state, "SELECT run_id, ended_at FROM subagent_runs") == [{"run_id": "old-1", "ended_at": 1760000099000}]


def test_openclaw_wide_table_gets_its_not_null_columns(tmp_path: Path):
    """OpenClaw 2026.7's subagent_runs is wider: requester_display_key, task, cleanup are NOT NULL."""
    state, originals = new_state(tmp_path, {REL: (FIX / "runs-v1.json").read_bytes()})
    db = global_db(state)
    db.parent.mkdir(parents=True)
    conn = open_db(db)
    conn.execute(
        "CREATE TABLE subagent_runs (run_id TEXT NOT NULL PRIMARY KEY, child_session_key TEXT NOT NULL, controller_session_key TEXT,"
        " requester_session_key TEXT NOT NULL, requester_display_key TEXT NOT NULL, requester_origin_json TEXT, task TEXT NOT NULL,"
        " cleanup TEXT NOT NULL, created_at INTEGER NOT NULL, ended_at INTEGER, cleanup_completed_at INTEGER, cleanup_handled INTEGER,"
        " payload_json TEXT NOT NULL DEFAULT '{}')"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, REL, originals[REL])
    row = query(state, "SELECT requester_display_key, task, cleanup, cleanup_completed_at, requester_origin_json FROM subagent_runs")[0]
    assert row == {
        "requester_display_key": "agent:main:main",
        "task": "legacy task",
        "cleanup": "keep",
        "cleanup_completed_at": 1760000051000,
        "requester_origin_json": '{"channel":"discord","accountId":"acct-9"}',
    }


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"version": 4, "runs": {}}, "$.version: must be one of 1, 2, 3"),
        ({"version": 2, "runs": []}, "$.runs: expected object, found array"),
        ({"version": 2, "runs": {"x": {"createdAt": "yesterday"}}}, "$.runs.x.createdAt"),
        ('{"version": 2, "runs": {', "invalid JSON"),
    ],
)
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    report = run(state)
    assert_failed_in_place(state, report, REL, originals[REL], needle)
    assert outcome(report, REL).status == "unreadable"
