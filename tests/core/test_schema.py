from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from helpers import db_dump, extract_corpus_tree, open_db
from statekit.errors import SchemaError
from statekit.schema import declared_tables, open_agent, open_global
from statekit.db import Connection, IntegrityError

# The release part: the 74 tables OpenClaw 2026.7.35 creates, plus config_machine_state, agent_deletion_journal and workspace_path_aliases (9.6's) (tests/core/test_canonical_schema.py diffs
# their definitions against a database that release wrote); a few statekit writes into, by name.
SOME_GLOBAL_TABLES = """schema_meta agent_databases migration_runs migration_sources backup_runs cron_jobs cron_run_logs
auth_profile_stores device_pairing_paired task_runs commitments installed_plugin_index acp_replay_events""".split()
AGENT_TABLES = """schema_meta cache_entries auth_profile_store auth_profile_state memory_index_meta memory_index_sources
memory_index_chunks memory_embedding_cache memory_index_state sessions conversations session_conversations session_routes
session_entries transcript_events transcript_event_identities transcript_snapshots vfs_entries tool_artifacts run_artifacts
trajectory_runtime_events""".split()


def _tables(conn: Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_global_and_agent_databases_are_created_as_the_contract_says(tmp_path: Path) -> None:
    state = tmp_path / ".openclaw"
    state.mkdir()
    conn, report = open_global(state)
    assert len(declared_tables("global")) == 77 and set(SOME_GLOBAL_TABLES) <= set(declared_tables("global"))
    assert set(declared_tables("global")) <= _tables(conn)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("SELECT role, schema_version, agent_id FROM schema_meta WHERE meta_key='primary'").fetchone() == ("global", 1, None)
    agent, _ = open_agent(state, "work", conn)
    assert set(AGENT_TABLES) <= _tables(agent) and sorted(declared_tables("agent")) == sorted(AGENT_TABLES)
    assert agent.execute("SELECT role, agent_id FROM schema_meta").fetchone() == ("agent", "work")
    # the release's seed row and triggers come with the tables
    assert agent.execute("SELECT id, revision FROM memory_index_state").fetchall() == [(1, 0)]
    assert agent.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'").fetchone()[0] == 6
    registered = conn.execute("SELECT agent_id, path, schema_version FROM agent_databases").fetchall()
    assert registered == [("work", str(state / "agents/work/agent/openclaw-agent.sqlite"), 1)]
    for path in (state / "state", state / "agents/work/agent", state / "agents/work", state / "agents"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    for path in (state / "state/openclaw.sqlite", state / "agents/work/agent/openclaw-agent.sqlite"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    conn.close()
    agent.close()


def test_constraints_hold(tmp_path: Path) -> None:
    state = tmp_path / ".openclaw"
    state.mkdir()
    conn, _ = open_global(state)
    agent, _ = open_agent(state, "main", conn)
    with pytest.raises(IntegrityError):
        agent.execute("INSERT INTO sessions(session_id, session_key, session_scope, created_at, updated_at) VALUES ('s', 'k', 'weird', 0, 0)")
    with pytest.raises(IntegrityError):  # OpenClaw 2026.9.6's upgrade refuses a session without a key
        agent.execute("INSERT INTO sessions(session_id, created_at, updated_at) VALUES ('s', 0, 0)")
    with pytest.raises(IntegrityError):
        agent.execute("INSERT INTO transcript_events(session_id, seq, event_json, created_at) VALUES ('missing', 0, '{}', 0)")
    agent.execute("INSERT INTO sessions(session_id, session_key, created_at, updated_at) VALUES ('s1', 'agent:main:main', 0, 0)")
    agent.execute("INSERT INTO transcript_events VALUES ('s1', 0, '{}', 0)")
    agent.execute("INSERT INTO transcript_event_identities(session_id, event_id, seq, created_at, message_idempotency_key) VALUES ('s1', 'e', 0, 0, 'k')")
    with pytest.raises(IntegrityError):
        agent.execute("INSERT INTO transcript_event_identities(session_id, event_id, seq, created_at, message_idempotency_key) VALUES ('s1', 'f', 0, 0, 'k')")
    agent.execute("INSERT INTO trajectory_runtime_events(session_id, seq, run_id, event_json, created_at) VALUES ('s1', 1, 'r', '{}', 0)")
    with pytest.raises(IntegrityError):  # one seq per session, whatever the run (9.6's key)
        agent.execute("INSERT INTO trajectory_runtime_events(session_id, seq, run_id, event_json, created_at) VALUES ('s1', 1, 'other', '{}', 0)")
    agent.execute("DELETE FROM sessions WHERE session_id = 's1'")
    assert agent.execute("SELECT count(*) FROM transcript_events").fetchone()[0] == 0
    assert agent.execute("SELECT count(*) FROM transcript_event_identities").fetchone()[0] == 0
    assert agent.execute("SELECT count(*) FROM trajectory_runtime_events").fetchone()[0] == 0


def test_newer_user_version_is_refused_and_left_untouched(tmp_path: Path) -> None:
    state = tmp_path / ".openclaw"
    (state / "state").mkdir(parents=True)
    db = state / "state/openclaw.sqlite"
    raw = open_db(db)
    raw.execute("CREATE TABLE future(x)")
    raw.execute("PRAGMA user_version = 17")
    raw.commit()
    raw.close()
    before = db.read_bytes()
    with pytest.raises(SchemaError, match="schema version 17 is newer"):
        open_global(state)
    assert db.read_bytes() == before


def test_foreign_database_without_version_is_refused(tmp_path: Path) -> None:
    state = tmp_path / ".openclaw"
    (state / "state").mkdir(parents=True)
    raw = open_db(state / "state/openclaw.sqlite")
    raw.execute("CREATE TABLE something(x)")
    raw.commit()
    raw.close()
    with pytest.raises(SchemaError, match="no schema version"):
        open_global(state)


def test_hybrid_era_databases_gain_only_missing_tables(tmp_path: Path) -> None:
    state = extract_corpus_tree("legacy-2026.7.35-std", tmp_path)
    global_path = state / "state/openclaw.sqlite"
    agent_path = state / "agents/main/agent/openclaw-agent.sqlite"
    before_global, before_agent = db_dump(global_path), db_dump(agent_path)
    schema_before = {r[0]: r[1] for r in open_db(global_path).execute("SELECT name, sql FROM sqlite_master")}
    conn, report = open_global(state)
    agent, agent_report = open_agent(state, "main", conn)
    conn.close()
    agent.close()
    after_global, after_agent = db_dump(global_path), db_dump(agent_path)
    for table, table_rows in before_global.items():
        if table != "agent_databases":
            assert after_global[table] == table_rows, table
    for table, table_rows in before_agent.items():
        assert after_agent[table] == table_rows, table
    schema_after = {r[0]: r[1] for r in open_db(global_path).execute("SELECT name, sql FROM sqlite_master")}
    assert all(schema_after[name] == sql for name, sql in schema_before.items())
    assert "sessions" in agent_report.created_tables and "cache_entries" in agent_report.existing_tables
    assert "cron_jobs" in report.existing_tables


def test_copy_of_corpus_is_not_needed_for_core(tmp_path: Path) -> None:
    # The core suite must run on what the repository holds.
    assert (Path(__file__).resolve().parents[2] / "fixtures" / "demo-install" / ".openclaw" / "openclaw.json").is_file()
    shutil.rmtree(tmp_path, ignore_errors=True)
