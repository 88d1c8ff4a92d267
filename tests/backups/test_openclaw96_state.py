"""Backups of a state dir shaped like the ones OpenClaw 2026.9.6 writes (its doctor's migration, its gateway).

The databases use what 9.6's schemas use and an old SQLite library lacks or ignores: STRICT tables,
``octet_length`` CHECK constraints (SQLite 3.43+), FTS5 virtual tables with their shadow tables (external
content kept in sync by triggers, and a contentful one), committed rows still in the ``-wal``, the
``state/openclaw-quarantine.sqlite`` database, the ``agent_databases`` registry, and the runtime lock
coordinators 9.6 holds in ``tmp/openclaw-<uid>/*.lock.sqlite`` while it runs. Every database must come back
equal row for row (rowids included) in every table, FTS shadow tables included, and still answer FTS
queries; the lock coordinators are skipped by name (a snapshot of one would wait on its lock).
tests/interop does the same on state dirs the real 9.6 wrote.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from statekit.backup import create_backup, restore_archive, verify_archive
from statekit.db import connect, read_only_view

AGENTS = ("main", "work")


def full_dump(db: Path) -> dict[str, list[str]]:
    """Schema plus every row (with its rowid where the table has one) of every real table, shadow tables included."""
    with read_only_view(db) as conn:
        out = {"<schema>": sorted(repr(tuple(r)) for r in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND rootpage > 0 ORDER BY name"):
            quoted = '"' + name.replace('"', '""') + '"'
            try:
                rows = conn.execute(f"SELECT rowid, * FROM {quoted}").fetchall()
            except Exception:  # WITHOUT ROWID
                rows = conn.execute(f"SELECT * FROM {quoted}").fetchall()
            out[name] = sorted(repr(tuple(r)) for r in rows)
        out["<user_version>"] = [str(conn.execute("PRAGMA user_version").fetchone()[0])]
    return out


def _meta(conn, role: str, version: int, agent: str | None) -> None:
    conn.execute("CREATE TABLE schema_meta (meta_key TEXT NOT NULL PRIMARY KEY, role TEXT NOT NULL, schema_version INTEGER NOT NULL,"
                 " agent_id TEXT, app_version TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) STRICT")
    conn.execute("INSERT INTO schema_meta VALUES ('primary', ?, ?, ?, '2026.9.6', 1, 2)", (role, version, agent))
    conn.execute(f"PRAGMA user_version = {version}")


def make_global(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    _meta(conn, "global", 18, None)
    conn.execute("CREATE TABLE agent_databases (agent_id TEXT NOT NULL PRIMARY KEY, path TEXT NOT NULL, schema_version INTEGER NOT NULL,"
                 " last_seen_at INTEGER NOT NULL, size_bytes INTEGER) STRICT")
    for agent in AGENTS:
        conn.execute("INSERT INTO agent_databases VALUES (?, ?, 23, 1796119743250, 4096)", (agent, f"agents/{agent}/agent/openclaw-agent.sqlite"))
    conn.execute("CREATE TABLE backup_runs (id TEXT NOT NULL PRIMARY KEY, created_at INTEGER NOT NULL, archive_path TEXT NOT NULL,"
                 " status TEXT NOT NULL, manifest_json TEXT NOT NULL) STRICT")
    conn.execute("CREATE TABLE device_pairing (device_id TEXT NOT NULL PRIMARY KEY, public_key BLOB NOT NULL"
                 " CHECK (octet_length(public_key) = 32), label TEXT CHECK (label IS NULL OR octet_length(label) <= 64)) STRICT")
    conn.executemany("INSERT INTO device_pairing VALUES (?, ?, ?)", [(f"dev-{i}", os.urandom(32), f"phone {i} ü") for i in range(20)])
    conn.execute("COMMIT")
    conn.close()


def make_agent(path: Path, agent: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    _meta(conn, "agent", 23, agent)
    conn.execute("CREATE TABLE standing_intents (intent_key INTEGER PRIMARY KEY, trigger_keywords TEXT NOT NULL"
                 " CHECK (octet_length(trigger_keywords) <= 4096)) STRICT")
    conn.execute("CREATE VIRTUAL TABLE standing_intents_fts USING fts5(trigger_keywords, content = 'standing_intents',"
                 " content_rowid = 'intent_key', tokenize = 'unicode61')")
    conn.execute("CREATE TRIGGER standing_intents_ai AFTER INSERT ON standing_intents BEGIN"
                 " INSERT INTO standing_intents_fts(rowid, trigger_keywords) VALUES (new.intent_key, new.trigger_keywords); END")
    conn.execute("CREATE TRIGGER standing_intents_ad AFTER DELETE ON standing_intents BEGIN INSERT INTO standing_intents_fts"
                 "(standing_intents_fts, rowid, trigger_keywords) VALUES ('delete', old.intent_key, old.trigger_keywords); END")
    conn.execute("CREATE TABLE transcript_events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL"
                 " CHECK (octet_length(body) <= 1048576), PRIMARY KEY (session_id, seq)) STRICT, WITHOUT ROWID")
    conn.execute("CREATE VIRTUAL TABLE session_transcript_fts USING fts5(text, session_id UNINDEXED, message_id UNINDEXED,"
                 " role UNINDEXED, tokenize = 'porter unicode61')")
    for i in range(60):
        conn.execute("INSERT INTO standing_intents(trigger_keywords) VALUES (?)", (f"deploy rollback incident {i} ünïcode",))
        conn.execute("INSERT INTO transcript_events VALUES (?, ?, ?)", (f"s{i % 3}", i, json.dumps({"n": i}).encode()))
        conn.execute("INSERT INTO session_transcript_fts(text, session_id, message_id, role) VALUES (?, ?, ?, 'user')",
                     (f"the quick brown fox {i} jumps over migrations", f"s{i % 3}", f"m{i}"))
    conn.execute("COMMIT")
    conn.execute("DELETE FROM standing_intents WHERE intent_key % 7 = 0")  # holes in the rowids, a freelist
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("INSERT INTO session_transcript_fts(text, session_id, message_id, role) VALUES ('committed only in the wal', 's9', 'm999', 'assistant')")
    conn.close()


@pytest.fixture
def state96(tmp_path: Path):
    """A 9.6-shaped state dir; returns (state dir, the open connections holding the WAL and a lock coordinator)."""
    state = tmp_path / "home" / ".openclaw"
    make_global(state / "state" / "openclaw.sqlite")
    for agent in AGENTS:
        make_agent(state / "agents" / agent / "agent" / "openclaw-agent.sqlite", agent)
    quarantine = connect(state / "state" / "openclaw-quarantine.sqlite")
    quarantine.execute("CREATE TABLE quarantined_rows (id INTEGER PRIMARY KEY, source TEXT NOT NULL, payload TEXT NOT NULL) STRICT")
    quarantine.execute("INSERT INTO quarantined_rows(source, payload) VALUES ('cron', '{}')")
    quarantine.execute("PRAGMA user_version = 2")
    quarantine.close()
    (state / "openclaw.json").write_text(json.dumps({"agents": {"list": [{"id": a} for a in AGENTS]}}))
    (state / "config-journal-fingerprint.key").write_bytes(os.urandom(32))
    os.chmod(state / "config-journal-fingerprint.key", 0o600)
    archive_dir = state / "agents" / "main" / "session-sqlite-import-archive"
    archive_dir.mkdir(parents=True)
    (archive_dir / "agent_main_main.s1.jsonl.imported-1796119742617").write_text('{"type":"session","id":"s1"}\n')
    (state / "session-sqlite-migration-runs").mkdir()
    (state / "session-sqlite-migration-runs" / "session-sqlite-1796119736199-a402e4e6.json").write_text("{}")
    (state / "workspace").mkdir()
    (state / "workspace" / "AGENTS.md").write_text("# agents\n")
    locks = state / "tmp" / "openclaw-0"
    locks.mkdir(parents=True)
    (locks / "gateway.3b5c524a.lock.sqlite").touch()
    holder = connect(locks / "gateway.state.lock.sqlite")  # a live coordinator: exclusively locked while 9.6 runs
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("CREATE TABLE IF NOT EXISTS lease (owner TEXT)")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("INSERT INTO lease VALUES ('gateway')")
    wal_holder = connect(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    wal_holder.execute("PRAGMA wal_autocheckpoint = 0")
    wal_holder.execute("INSERT INTO standing_intents(trigger_keywords) VALUES ('held open in the wal')")
    yield state, (holder, wal_holder)
    holder.close()
    wal_holder.close()


def _databases(state: Path) -> list[Path]:
    return sorted([state / "state" / "openclaw.sqlite", state / "state" / "openclaw-quarantine.sqlite"]
                  + [state / "agents" / a / "agent" / "openclaw-agent.sqlite" for a in AGENTS])


def test_backup_of_a_96_state_round_trips_every_table(state96, tmp_path):
    state, _held = state96
    assert Path(f"{state}/agents/main/agent/openclaw-agent.sqlite-wal").stat().st_size > 0
    before = {db.relative_to(state).as_posix(): full_dump(db) for db in _databases(state)}
    result = create_backup(state, tmp_path / "out", record=False)
    manifest = result.manifest
    dbs = {a["source_path"]: a for a in manifest["assets"] if a["kind"] == "sqlite"}
    assert {Path(p).relative_to(state).as_posix() for p in dbs} == set(before)
    assert {a["role"] for a in dbs.values()} == {"global", "agent", "sqlite"}
    assert dbs[str(state / "state" / "openclaw.sqlite")]["schema_version"] == 18
    assert dbs[str(state / "agents" / "work" / "agent" / "openclaw-agent.sqlite")]["agent_id"] == "work"
    skipped = {Path(s["source_path"]).relative_to(state).as_posix(): s["reason"] for s in manifest["skipped"]}
    assert skipped["tmp/openclaw-0/gateway.state.lock.sqlite"].startswith("OpenClaw runtime lock")
    assert skipped["tmp/openclaw-0/gateway.3b5c524a.lock.sqlite"].startswith("OpenClaw runtime lock")
    report = verify_archive(result.archive_path)
    assert report.ok, report.problems
    target = tmp_path / "restored"
    restore_archive(result.archive_path, target=target)
    for rel, dump in before.items():
        assert full_dump(target / rel) == dump, rel
    conn = connect(target / "agents" / "main" / "agent" / "openclaw-agent.sqlite", mode="ro")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM session_transcript_fts WHERE session_transcript_fts MATCH 'wal'").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM standing_intents_fts WHERE standing_intents_fts MATCH 'rollback'").fetchone()[0] > 40
    conn.close()
    conn = connect(target / "agents" / "main" / "agent" / "openclaw-agent.sqlite")  # FTS5's own check (a write statement)
    for table in ("standing_intents_fts", "session_transcript_fts"):
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")
    conn.close()
    assert not (target / "tmp" / "openclaw-0" / "gateway.state.lock.sqlite").exists()
    assert (target / "config-journal-fingerprint.key").read_bytes() == (state / "config-journal-fingerprint.key").read_bytes()


def test_in_place_restore_of_a_96_state(state96, tmp_path):
    state, held = state96
    for conn in held:
        conn.close()
    result = create_backup(state, tmp_path / "out", record=False)
    before = {db.relative_to(state).as_posix(): full_dump(db) for db in _databases(state)}
    (state / "agents" / "work" / "agent" / "openclaw-agent.sqlite").unlink()
    conn = connect(state / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    conn.execute("INSERT INTO session_transcript_fts(text, session_id, message_id, role) VALUES ('after the backup', 's1', 'm1000', 'user')")
    conn.close()
    g = connect(state / "state" / "openclaw.sqlite")
    g.execute("DELETE FROM device_pairing WHERE device_id = 'dev-3'")
    g.close()
    restored = restore_archive(result.archive_path, state_dir=state)
    assert restored.counts()["create"] >= 1 and restored.counts()["replace"] >= 2
    for rel, dump in before.items():
        assert full_dump(state / rel) == dump, rel
    assert not (state / ".statekit" / "restore-journal.json").exists()


def test_a_live_lock_coordinator_does_not_stall_the_backup(state96, tmp_path):
    """9.6 holds ``gateway.state.lock.sqlite`` exclusively while it runs; the backup must not wait for it."""
    import time

    state, _held = state96
    started = time.monotonic()
    result = create_backup(state, tmp_path / "out", record=False, verify=False)
    assert time.monotonic() - started < 20
    assert result.archive_path is not None and result.archive_path.is_file()
