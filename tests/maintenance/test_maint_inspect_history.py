"""``statekit inspect`` (read-only health report, exit 0/3/5) and ``statekit history``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import agent_db, global_db, make_state, open_db, run_cli, tree_digest
from maint_helpers import cli, copy_state, entry, migrated_state, transcript
from statekit.maintenance.history import read_history
from statekit.maintenance.inspect import inspect_state


def _healthy(tmp_path: Path) -> Path:
    return migrated_state(tmp_path, {"agent:main:main": entry("s1"), "agent:main:b": entry("s2")}, {"s1": 2, "s2": 1})


def test_healthy_tree_exits_0_and_reports_each_database(tmp_path: Path) -> None:
    state = _healthy(tmp_path)
    digest = tree_digest(state)
    result = cli("inspect", "--state-dir", state, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "healthy"
    by_path = {d["path"]: d for d in report["databases"]}
    assert set(by_path) == {"state/openclaw.sqlite", "agents/main/agent/openclaw-agent.sqlite"}
    main = by_path["agents/main/agent/openclaw-agent.sqlite"]
    assert (main["role"], main["agent_id"], main["user_version"], main["integrity_check"]) == ("agent", "main", 1, "ok")
    assert main["foreign_key_violations"] == {} and main["orphans"] == {}
    assert main["row_counts"]["transcript_events"] == 8 and main["row_counts"]["session_entries"] == 2
    assert main["sessions_without_transcript"] == {"count": 0, "session_ids": []}
    assert by_path["state/openclaw.sqlite"]["role"] == "global" and by_path["state/openclaw.sqlite"]["row_counts"]["migration_runs"] == 1
    # read-only: not a byte written, no WAL/SHM sidecar created
    assert tree_digest(state) == digest
    assert not list(state.rglob("*-wal")) and not list(state.rglob("*-shm"))
    human = cli("inspect", "--state-dir", state, "--all-agents")
    assert human.returncode == 0 and "integrity=ok" in human.stdout


def test_a_schema_openclaw_would_refuse_is_unhealthy_and_says_why(tmp_path: Path) -> None:
    """What statekit wrote before it took the schema from the release: inspect must not call it healthy."""
    state = _healthy(tmp_path)
    assert json.loads(cli("inspect", "--state-dir", state, "--json").stdout)["databases"][1]["schema_differences"] == []
    conn = open_db(agent_db(state))
    conn.executescript(
        "PRAGMA foreign_keys = OFF;"
        "ALTER TABLE transcript_event_identities ADD COLUMN has_parent INTEGER NOT NULL DEFAULT 0;"
        "CREATE UNIQUE INDEX idx_transcript_identities_idempotency ON transcript_event_identities(session_id, message_idempotency_key);"
        "CREATE TABLE sessions_keyless AS SELECT * FROM sessions;"
        "DROP TABLE sessions;"
        "CREATE TABLE sessions (session_id TEXT NOT NULL PRIMARY KEY, session_key TEXT, session_scope TEXT NOT NULL DEFAULT 'conversation',"
        " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, started_at INTEGER, ended_at INTEGER, status TEXT, chat_type TEXT,"
        " channel TEXT, account_id TEXT, primary_conversation_id TEXT, model_provider TEXT, model TEXT, agent_harness_id TEXT,"
        " parent_session_key TEXT, spawned_by TEXT, display_name TEXT);"
        "INSERT INTO sessions SELECT * FROM sessions_keyless; DROP TABLE sessions_keyless;"
        "UPDATE sessions SET session_key = NULL WHERE session_id = 's2';"
    )
    conn.close()
    conn = open_db(global_db(state))
    conn.execute("DROP TABLE agent_deletion_journal")
    conn.close()
    result = cli("inspect", "--state-dir", state, "--json")
    assert result.returncode == 3, result.stdout
    report = json.loads(result.stdout)
    by_path = {d["path"]: d for d in report["databases"]}
    assert by_path["state/openclaw.sqlite"]["schema_differences"] == ["missing table agent_deletion_journal"]
    main = by_path["agents/main/agent/openclaw-agent.sqlite"]
    assert main["schema_differences"] == [
        "table sessions: column definitions differ (type, NOT NULL, default or key of session_key)",
        "table transcript_event_identities: column definitions differ (extra has_parent)",
        "table transcript_event_identities: unexpected unique index idx_transcript_identities_idempotency",
    ]
    assert main["orphans"]["sessions_without_key"] == {"count": 1, "session_ids": ["s2"]}
    human = cli("inspect", "--state-dir", state)
    assert human.returncode == 3
    assert "not the canonical schema OpenClaw 2026.9.6 upgrades: table transcript_event_identities: column definitions differ (extra has_parent)" in human.stdout
    assert "1 session(s) without a session key" in human.stdout


def test_orphans_and_legacy_files_are_findings(tmp_path: Path) -> None:
    state = _healthy(tmp_path)
    conn = open_db(agent_db(state))
    conn.execute("PRAGMA foreign_keys = OFF")
    with conn:
        conn.execute("INSERT INTO transcript_events(session_id, seq, event_json, created_at) VALUES ('ghost', 0, '{}', 1)")
        conn.execute("INSERT INTO session_routes(session_key, session_id, updated_at) VALUES ('agent:main:lost', 'gone', 1)")
        conn.execute("DELETE FROM transcript_events WHERE session_id = 's2' AND seq = 1")
        conn.execute("INSERT INTO sessions(session_id, session_key, created_at, updated_at) VALUES ('empty', 'agent:main:empty', 1, 1)")
    conn.close()
    (state / "agents/main/sessions").mkdir(parents=True, exist_ok=True)
    (state / "agents/main/sessions/s9.jsonl").write_text(transcript("s9", 1))
    report = inspect_state(state)
    assert report.exit_code == 3
    main = next(d for d in report.databases if d.expected_agent == "main")
    assert main.orphans["events_without_session"] == {"count": 1, "session_ids": ["ghost"]}
    assert main.orphans["identities_without_event"] == {"count": 1, "session_ids": ["s2"]}
    assert main.orphans["routes_to_missing_sessions"] == {"count": 1, "session_ids": ["gone"]}
    assert main.sessions_without_transcript == {"count": 1, "session_ids": ["empty"]}
    assert sum(main.foreign_key_violations.values()) >= 2
    assert {"path": "agents/main/sessions/s9.jsonl", "kind": "transcript-jsonl", "action": "import", "reason": None} in main.legacy_files
    assert any("legacy file(s) still waiting" in f for f in main.findings)
    result = cli("inspect", "--state-dir", state, "--agent", "main")
    assert result.returncode == 3 and "events without session" in result.stdout


def test_corruption_exits_5(tmp_path: Path) -> None:
    state = _healthy(tmp_path)
    db = agent_db(state)
    data = bytearray(db.read_bytes())
    page = 4096
    for offset in range(page + 100, min(len(data), 3 * page)):
        data[offset] = 0x5A
    db.write_bytes(bytes(data))
    result = run_cli("inspect", "--state-dir", state, "--json")
    assert result.returncode == 5, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "corrupt"
    broken = next(d for d in report["databases"] if d["path"].startswith("agents/main"))
    assert broken["corruption"]


def test_usage_errors(tmp_path: Path) -> None:
    state = _healthy(tmp_path)
    both = cli("inspect", "--state-dir", state, "--agent", "main", "--all-agents")
    assert both.returncode == 2
    unknown = cli("inspect", "--state-dir", state, "--agent", "ghost")
    assert unknown.returncode == 1 and "no database for agent 'ghost'" in unknown.stderr


def test_history_lists_migration_and_backup_runs(tmp_path: Path) -> None:
    from statekit.migrate.apply import MigrateOptions, migrate

    state = make_state(tmp_path, {"agents/main/sessions/sessions.json": {"agent:main:main": entry("s1")},
                                  "agents/main/sessions/s1.jsonl": transcript("s1", 1),
                                  "agents/main/sessions/bad.jsonl": "{not json\n"})
    empty = cli("history", "--state-dir", state, "--json")
    assert empty.returncode == 0 and json.loads(empty.stdout)["database_present"] is False
    report = migrate(state, MigrateOptions(backup=True, backup_output=tmp_path / "backups"))
    assert report.status == "warning"
    history = read_history(state)
    (run,) = history.migration_runs
    assert (run["id"], run["kind"], run["status"]) == (report.run_id, "legacy-state", "warning")
    assert run["counts"]["imported"] == 2 and run["warnings"] == 1 and run["backup_path"] == str(report.backup_path)
    (backup,) = history.backup_runs
    assert backup["status"] in ("ok", "completed") and backup["archive_path"] == str(report.backup_path)
    result = cli("history", "--state-dir", state, "--json", "--limit", "1")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert [r["id"] for r in data["migration_runs"]] == [report.run_id] and len(data["backup_runs"]) == 1
    human = cli("history", "--state-dir", state)
    assert report.run_id in human.stdout and "Backup runs:" in human.stdout


@pytest.mark.corpus
def test_inspect_and_history_on_every_corpus_tree(tmp_path: Path, migrated_corpus: dict[str, Path]) -> None:
    for index, (name, source) in enumerate(migrated_corpus.items()):
        state = copy_state(source, tmp_path / f"t{index}")
        digest = tree_digest(state)
        report = inspect_state(state)
        assert report.exit_code in (0, 3), (name, report.to_json())
        for database in report.databases:
            assert database.integrity == "ok" and not database.orphans, (name, database.path)
        history = read_history(state)
        if global_db(state).exists():
            assert history.migration_runs and history.migration_runs[-1]["kind"] == "legacy-state", name
        assert tree_digest(state) == digest, name
    assert json.dumps(report.to_json())
