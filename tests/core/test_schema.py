from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from helpers import db_dump, extract_corpus_tree, open_db
from statekit.errors import SchemaError
from statekit.schema import declared_tables, open_agent, open_global
from statekit.db import Connection, IntegrityError

GLOBAL_TABLES = """schema_meta agent_databases migration_runs migration_sources backup_runs state_leases
exec_approvals_config task_runs task_delivery_state flow_runs subagent_runs current_conversation_bindings
plugin_binding_approvals tui_last_sessions plugin_state_entries plugin_blob_entries media_blobs skill_uploads
web_push_subscriptions web_push_vapid_keys apns_registrations node_host_config device_identities device_auth_tokens
macos_port_guardian_records workspace_setup_state native_hook_relay_bridges model_capability_cache agent_model_catalogs
managed_outgoing_image_records gateway_restart_sentinel channel_pairing_requests channel_pairing_allow_entries
voicewake_triggers voicewake_routing_config voicewake_routing_routes update_check_state config_health_entries
sandbox_registry_entries cron_jobs cron_run_logs delivery_queue_entries commitments auth_profile_stores
auth_profile_state device_pairing_pending device_pairing_paired device_bootstrap_tokens installed_plugin_index
acp_replay_sessions acp_replay_events""".split()
AGENT_TABLES = """schema_meta sessions conversations session_conversations session_routes session_entries transcript_events
transcript_event_identities transcript_snapshots vfs_entries tool_artifacts run_artifacts trajectory_runtime_events
memory_index_meta memory_index_sources memory_index_chunks memory_embedding_cache memory_index_state cache_entries""".split()


def _tables(conn: Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_global_and_agent_databases_are_created_as_the_contract_says(tmp_path: Path) -> None:
    state = tmp_path / ".openclaw"
    state.mkdir()
    conn, report = open_global(state)
    assert set(GLOBAL_TABLES) <= _tables(conn) and sorted(declared_tables("global")) == sorted(GLOBAL_TABLES)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("SELECT role, schema_version, agent_id FROM schema_meta WHERE meta_key='primary'").fetchone() == ("global", 1, None)
    agent, _ = open_agent(state, "work", conn)
    assert set(AGENT_TABLES) <= _tables(agent) and sorted(declared_tables("agent")) == sorted(AGENT_TABLES)
    assert agent.execute("SELECT role, agent_id FROM schema_meta").fetchone() == ("agent", "work")
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
        agent.execute("INSERT INTO sessions(session_id, session_scope, created_at, updated_at) VALUES ('s', 'weird', 0, 0)")
    with pytest.raises(IntegrityError):
        agent.execute("INSERT INTO transcript_events(session_id, seq, event_json, created_at) VALUES ('missing', 0, '{}', 0)")
    agent.execute("INSERT INTO sessions(session_id, created_at, updated_at) VALUES ('s1', 0, 0)")
    agent.execute("INSERT INTO transcript_events VALUES ('s1', 0, '{}', 0)")
    agent.execute("INSERT INTO transcript_event_identities(session_id, event_id, seq, created_at, message_idempotency_key) VALUES ('s1', 'e', 0, 0, 'k')")
    with pytest.raises(IntegrityError):
        agent.execute("INSERT INTO transcript_event_identities(session_id, event_id, seq, created_at, message_idempotency_key) VALUES ('s1', 'f', 0, 0, 'k')")
    agent.execute("DELETE FROM sessions WHERE session_id = 's1'")
    assert agent.execute("SELECT count(*) FROM transcript_events").fetchone()[0] == 0
    assert agent.execute("SELECT count(*) FROM transcript_event_identities").fetchone()[0] == 0


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
