"""SQLite sidecars: task registry, task flows and plugin state imported as OpenClaw 2026.9.6 imports them; the rest
retained or dropped with a reason; workspace attestations retained."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from helpers import corpus_or_skip, extract_corpus_tree, global_db, make_state, open_db, rows, run_cli, tree_digest, write_files, named_row
from statekit.migrate.plan import build_plan
from statekit.errors import redact
from statekit.schema import open_global
from test_plugin_common import NOW_MS, assert_imported, outcome, receipt, run

# The sidecar schema written by OpenClaw 2026.5.28 (tasks/runs.sqlite in the corpus tree).
TASKS_SQL = """
CREATE TABLE task_runs (
  task_id TEXT PRIMARY KEY, runtime TEXT NOT NULL, task_kind TEXT, source_id TEXT, requester_session_key TEXT,
  owner_key TEXT NOT NULL, scope_kind TEXT NOT NULL, child_session_key TEXT, parent_flow_id TEXT, parent_task_id TEXT,
  agent_id TEXT, run_id TEXT, label TEXT, task TEXT NOT NULL, status TEXT NOT NULL, delivery_status TEXT NOT NULL,
  notify_policy TEXT NOT NULL, created_at INTEGER NOT NULL, started_at INTEGER, ended_at INTEGER, last_event_at INTEGER,
  cleanup_after INTEGER, error TEXT, progress_summary TEXT, terminal_summary TEXT, terminal_outcome TEXT
);
CREATE TABLE task_delivery_state (task_id TEXT PRIMARY KEY, requester_origin_json TEXT, last_notified_event_at INTEGER);
"""
# An older flow registry: the owner is still owner_session_key, no sync_mode/controller_id/revision columns.
FLOWS_SQL = """
CREATE TABLE flow_runs (
  flow_id TEXT PRIMARY KEY, shape TEXT, owner_session_key TEXT NOT NULL, requester_origin_json TEXT, status TEXT NOT NULL,
  notify_policy TEXT NOT NULL, goal TEXT NOT NULL, current_step TEXT, blocked_task_id TEXT, blocked_summary TEXT,
  state_json TEXT, wait_json TEXT, cancel_requested_at INTEGER, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
  ended_at INTEGER
);
"""
PLUGIN_STATE_SQL = """
CREATE TABLE plugin_state_entries (
  plugin_id TEXT NOT NULL, namespace TEXT NOT NULL, entry_key TEXT NOT NULL, value_json TEXT NOT NULL,
  created_at INTEGER NOT NULL, expires_at INTEGER, PRIMARY KEY (plugin_id, namespace, entry_key)
);
"""

# The debug proxy's own capture database (the columns OpenClaw's importer requires).
CAPTURE_SQL = """
CREATE TABLE capture_sessions (
  id TEXT PRIMARY KEY, started_at INTEGER NOT NULL, ended_at INTEGER, mode TEXT NOT NULL, source_scope TEXT NOT NULL,
  source_process TEXT NOT NULL, proxy_url TEXT, db_path TEXT, blob_dir TEXT
);
CREATE TABLE capture_events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, ts INTEGER NOT NULL, source_scope TEXT NOT NULL,
  source_process TEXT NOT NULL, protocol TEXT NOT NULL, direction TEXT NOT NULL, kind TEXT NOT NULL, flow_id TEXT NOT NULL,
  method TEXT, host TEXT, path TEXT, status INTEGER, close_code INTEGER, content_type TEXT, headers_json TEXT, data_text TEXT,
  data_blob_id TEXT, data_sha256 TEXT, error_text TEXT, meta_json TEXT
);
"""
PAYLOAD = b'{"model":"fake-model","messages":[]}'
BLOB_ID = hashlib.sha256(PAYLOAD).hexdigest()[:24]
BLOB_GZ = gzip.compress(PAYLOAD, mtime=0)


def _event(**values: Any) -> dict[str, Any]:
    base = {"session_id": "s1", "ts": 1000, "source_scope": "gateway", "source_process": "openclaw", "protocol": "https",
            "direction": "outbound", "kind": "request", "flow_id": "flow-1", "method": "POST", "host": "api.example",
            "path": "/v1/chat", "status": None, "close_code": None, "content_type": None, "headers_json": "{}",
            "data_text": None, "data_blob_id": None, "data_sha256": None, "error_text": None, "meta_json": None}
    return {**base, **values}


CAPTURE_SESSIONS = [{"id": "s1", "started_at": 900, "ended_at": 2000, "mode": "explicit", "source_scope": "gateway",
                     "source_process": "openclaw", "proxy_url": "http://127.0.0.1:7777", "db_path": "/elsewhere/capture.sqlite",
                     "blob_dir": "/elsewhere/blobs"}]
CAPTURE_EVENTS = [
    _event(content_type="application/json", data_blob_id=BLOB_ID, data_sha256=hashlib.sha256(PAYLOAD).hexdigest()),
    _event(ts=1100, kind="response", direction="inbound", status=200),
    _event(ts=1100, kind="response", direction="inbound", status=200),  # the same event twice: both kept
    _event(session_id="s2", ts=1500, source_process="cli", kind="error", error_text="reset"),  # a session named only here
]


TASK_DEFAULTS: dict[str, Any] = {
    "task_kind": None, "source_id": None, "requester_session_key": None, "child_session_key": None, "parent_flow_id": None,
    "parent_task_id": None, "agent_id": None, "run_id": None, "label": None, "started_at": None, "ended_at": None,
    "last_event_at": None, "cleanup_after": None, "error": None, "progress_summary": None, "terminal_summary": None,
    "terminal_outcome": None,
}
CRON_TASK = {
    **TASK_DEFAULTS, "task_id": "t-cron", "runtime": "cron", "source_id": "job-1", "requester_session_key": "",
    "owner_key": "system:cron:job-1", "scope_kind": "system", "agent_id": "main", "run_id": "cron:job-1:1795996919803",
    "label": "daily", "task": "daily", "status": "succeeded", "delivery_status": "not_applicable", "notify_policy": "silent",
    "created_at": 1795996919803, "ended_at": 1795996937911, "cleanup_after": 1796601737911,
}
SUBAGENT_TASK = {
    **TASK_DEFAULTS, "task_id": "t-sub", "runtime": "subagent", "requester_session_key": " agent:ops:main ", "owner_key": "",
    "scope_kind": "session", "child_session_key": "  agent:Worker:subagent:abc  ", "agent_id": "worker", "run_id": " run-7 ",
    "task": "summarise", "status": "running", "delivery_status": "not-requested", "notify_policy": "done_only",
    "created_at": 1795996920000,
}
ORPHAN_OWNER_TASK = {
    **TASK_DEFAULTS, "task_id": "t-bare", "runtime": "cli", "source_id": "src-9", "owner_key": " ", "scope_kind": "session",
    "task": "x", "status": "queued", "delivery_status": "pending", "notify_policy": "silent", "created_at": 1795996910000,
}


def _database(path: Path, sql: str, inserts: dict[str, list[dict[str, Any]]], *, keep_wal: bool = False) -> None:
    """Create a sidecar; with ``keep_wal`` the rows stay in its -wal file (copied while the writer is still open)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    work = path.parent / (".build-" + path.name)
    conn = open_db(work)
    conn.executescript(sql)
    if keep_wal:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA wal_autocheckpoint=0")
    for table, items in inserts.items():
        for item in items:
            conn.execute(f"INSERT INTO {table} ({', '.join(item)}) VALUES ({', '.join('?' for _ in item)})", list(item.values()))
        conn.commit()
    for suffix in ("", "-wal", "-shm"):
        if Path(str(work) + suffix).exists():
            shutil.copyfile(str(work) + suffix, str(path) + suffix)
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(work) + suffix).unlink(missing_ok=True)


def _plain(path: Path, table: str) -> None:
    _database(path, f"CREATE TABLE {table} (id TEXT PRIMARY KEY, payload TEXT)", {table: [{"id": "a", "payload": "x"}]})


def _state(tmp_path: Path) -> Path:
    state = make_state(tmp_path, {
        "debug-proxy/ca/openclaw-debug-proxy-ca.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        "debug-proxy/blobs/ab/abcdef.gz": b"\x1f\x8b\x08\x00",
        "workspace-attestations/738dd14d.attested": "openclaw-workspace-attestation:v1\n2026-11-30T00:19:00.932Z\ngenerated:AGENTS.md:c9a6\n",
    })
    _database(state / "tasks" / "runs.sqlite", TASKS_SQL, {"task_runs": [CRON_TASK]}, keep_wal=True)
    _plain(state / "tasks" / "flows" / "registry.sqlite", "flow_runs")
    _database(state / "flows" / "registry.sqlite", FLOWS_SQL, {"flow_runs": []})
    _database(state / "plugin-state" / "state.sqlite", PLUGIN_STATE_SQL, {"plugin_state_entries": []})
    _plain(state / "memory" / "main.sqlite", "chunks")
    _database(state / "debug-proxy" / "capture.sqlite", CAPTURE_SQL, {"capture_sessions": CAPTURE_SESSIONS, "capture_events": CAPTURE_EVENTS})
    write_files(state, {f"debug-proxy/blobs/{BLOB_ID}.bin.gz": BLOB_GZ})
    write_files(state, {"memory/main.sqlite-wal": b"\x37\x7f\x06\x82" + b"\x00" * 28})
    return state


EXPECTED = {
    "tasks/runs.sqlite": ("tasks-runs-sqlite", "import"),
    "tasks/runs.sqlite-wal": ("tasks-runs-sqlite", "import"),
    "tasks/runs.sqlite-shm": ("tasks-runs-sqlite", "import"),
    "tasks/flows/registry.sqlite": ("task-flows-sqlite", "retain"),
    "flows/registry.sqlite": ("flow-runs-sqlite", "import"),
    "plugin-state/state.sqlite": ("plugin-state-sqlite", "import"),
    "memory/main.sqlite": ("memory-index-sqlite", "drop"),
    "memory/main.sqlite-wal": ("memory-index-sqlite", "drop"),
    "debug-proxy/capture.sqlite": ("debug-proxy-capture-sqlite", "import"),
    f"debug-proxy/blobs/{BLOB_ID}.bin.gz": ("debug-proxy-capture-blobs", "import"),
    "debug-proxy/blobs/ab/abcdef.gz": ("debug-proxy-capture-blobs", "import"),
    "debug-proxy/ca/openclaw-debug-proxy-ca.pem": ("debug-proxy-files", "retain"),
    "workspace-attestations/738dd14d.attested": ("workspace-attestation", "retain"),
}


def task_rows(state: Path) -> dict[str, dict[str, Any]]:
    conn = open_db(global_db(state), "ro")
    conn.row_trace = named_row
    try:
        return {r["task_id"]: dict(r) for r in conn.execute("SELECT * FROM task_runs")}
    finally:
        conn.close()


def test_plan_claims_sidecars_out_of_the_database_bucket(tmp_path: Path) -> None:
    state = _state(tmp_path)
    before = tree_digest(state)
    plan = build_plan(state)
    assert {s.rel: (s.kind, s.action) for s in plan.sources} == EXPECTED
    assert plan.databases == [] and plan.unrecognised == [] and plan.user_content == []
    for source in plan.sources:
        if source.action != "import":
            assert source.reason, source.rel
    assert {s.rel: s.record_count for s in plan.sources if s.kind == "tasks-runs-sqlite"} == {
        "tasks/runs.sqlite": 1, "tasks/runs.sqlite-wal": 0, "tasks/runs.sqlite-shm": 0,
    }
    assert tree_digest(state) == before


def test_migrate_imports_retains_and_drops(tmp_path: Path) -> None:
    state = _state(tmp_path)
    originals = {rel: (state / rel).read_bytes() for rel in EXPECTED}
    report = run(state)
    assert report.status == "completed" and report.warnings == []
    for rel, (_kind, action) in EXPECTED.items():
        if action == "retain":
            assert outcome(report, rel).status == "retain"
            assert (state / rel).read_bytes() == originals[rel]
        elif action == "drop":
            stored = assert_imported(state, report, rel, originals[rel], records=0)
            assert "regenerable memory-search index" in stored["dropped"]
            assert receipt(state, rel)["report"]["kind"] == "memory-index-sqlite"
        else:
            assert_imported(state, report, rel, originals[rel])
    # the row lived only in the WAL: it was read together with the database, then both were retired
    alone = tmp_path / "main-file-alone.sqlite"
    alone.write_bytes(originals["tasks/runs.sqlite"])
    assert open_db(alone).execute("SELECT count(*) FROM task_runs").fetchone() == (0,)
    assert list(task_rows(state)) == ["t-cron"]
    assert receipt(state, "tasks/runs.sqlite-wal")["report"]["disposition"].startswith("sibling of tasks/runs.sqlite")
    retired = state / ".statekit" / "migrated" / report.run_id / "memory" / "main.sqlite"
    assert open_db(retired).execute("SELECT payload FROM chunks").fetchone() == ("x",)
    # the capture: sessions (one implied by an event), events (the repeated one twice) and the checked blob
    db = global_db(state)
    assert rows(db, "SELECT id, started_at, ended_at, mode, source_scope, source_process, proxy_url FROM capture_sessions ORDER BY id") == [
        ("s1", 900, 2000, "explicit", "gateway", "openclaw", "http://127.0.0.1:7777"),
        ("s2", 1500, None, "implicit", "gateway", "cli", None),
    ]
    assert rows(db, "SELECT blob_id, content_type, encoding, size_bytes, sha256, data, created_at FROM capture_blobs") == [
        (BLOB_ID, "application/json", "gzip", len(PAYLOAD), hashlib.sha256(PAYLOAD).hexdigest(), BLOB_GZ, 1000)
    ]
    columns = list(CAPTURE_EVENTS[0])
    assert rows(db, f"SELECT {', '.join(columns)} FROM capture_events ORDER BY id") == [tuple(e[c] for c in columns) for e in CAPTURE_EVENTS]
    assert receipt(state, f"debug-proxy/blobs/{BLOB_ID}.bin.gz")["report"]["disposition"].startswith("payload blob of debug-proxy/capture.sqlite")


def test_task_registry_rows_are_the_ones_openclaw_imports(tmp_path: Path) -> None:
    state = make_state(tmp_path, {})
    deliveries = [
        {"task_id": "t-sub", "requester_origin_json": '{"channel":"telegram"}', "last_notified_event_at": 1795996930000},
        {"task_id": "t-gone", "requester_origin_json": None, "last_notified_event_at": 1},
    ]
    _database(state / "tasks" / "runs.sqlite", TASKS_SQL, {"task_runs": [CRON_TASK, SUBAGENT_TASK, ORPHAN_OWNER_TASK], "task_delivery_state": deliveries})
    original = (state / "tasks/runs.sqlite").read_bytes()
    report = run(state)
    assert report.warnings == [
        "tasks/runs.sqlite: 1 task delivery row(s) of a task the sidecar does not have were skipped (first: t-gone; kept in the retired copy)"
    ]
    stored = assert_imported(state, report, "tasks/runs.sqlite", original, records=3)
    assert stored["task_ids"] == ["t-bare", "t-cron", "t-sub"]  # created_at order, as OpenClaw reads them
    got = task_rows(state)
    assert got["t-cron"] == {**CRON_TASK, "requester_agent_id": None, "detail_json": None}
    # a spawned run: requester agent from the requester key, executor from the child key, keys trimmed
    assert got["t-sub"] == {
        **SUBAGENT_TASK, "requester_session_key": "agent:ops:main", "owner_key": "agent:ops:main", "scope_kind": "session",
        "child_session_key": "agent:Worker:subagent:abc", "agent_id": "worker", "requester_agent_id": "ops", "run_id": "run-7",
        "delivery_status": "not_applicable", "detail_json": None,
    }
    # no owner at all: OpenClaw's system owner key of its runtime and source
    assert got["t-bare"] == {
        **ORPHAN_OWNER_TASK, "owner_key": "system:cli:src-9", "scope_kind": "system", "requester_session_key": "",
        "requester_agent_id": None, "detail_json": None,
    }
    assert rows(global_db(state), "SELECT task_id, requester_origin_json, last_notified_event_at FROM task_delivery_state") == [
        ("t-sub", '{"channel":"telegram"}', 1795996930000)
    ]
    again = run(state)
    assert again.exit_code == 0 and task_rows(state) == got


def test_conflicting_task_row_leaves_the_sidecar_and_its_wal_in_place(tmp_path: Path) -> None:
    state = make_state(tmp_path, {})
    _database(state / "tasks" / "runs.sqlite", TASKS_SQL, {"task_runs": [CRON_TASK]}, keep_wal=True)
    conn, _ = open_global(state)
    names = [*CRON_TASK]
    conn.execute(f"INSERT INTO task_runs ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
                 [{**CRON_TASK, "status": "failed"}[n] for n in names])
    conn.commit()
    conn.close()
    originals = {rel: (state / rel).read_bytes() for rel in ("tasks/runs.sqlite", "tasks/runs.sqlite-wal")}
    report = run(state)
    assert report.exit_code == 3
    assert [w for w in report.warnings if w.startswith("tasks/runs.sqlite:")] == [
        "tasks/runs.sqlite: left in place: 1 task registry row(s) already stored with other values (first: t-cron); nothing imported from it"
    ]
    assert [w for w in report.warnings if w.startswith("tasks/runs.sqlite-wal")] == [
        "tasks/runs.sqlite-wal: waits until tasks/runs.sqlite is imported (it may hold that database's rows); left in place"
    ]
    for rel, data in originals.items():
        assert (state / rel).read_bytes() == data
    assert task_rows(state)["t-cron"]["status"] == "failed"


def test_flow_registry_rows_are_the_ones_openclaw_imports(tmp_path: Path) -> None:
    state = make_state(tmp_path, {})
    flows = [
        {"flow_id": "f-managed", "shape": "multi_step", "owner_session_key": " agent:main:main ", "status": "running",
         "notify_policy": "done_only", "goal": "ship", "state_json": '{"step":1}', "created_at": 10, "updated_at": 20},
        {"flow_id": "f-single", "shape": "single_task", "owner_session_key": "agent:main:main", "status": "succeeded",
         "notify_policy": "silent", "goal": "one", "created_at": 5, "updated_at": 6, "ended_at": 7},
    ]
    _database(state / "flows" / "registry.sqlite", FLOWS_SQL, {"flow_runs": flows})
    report = run(state)
    assert report.status == "completed", report.warnings
    conn = open_db(global_db(state), "ro")
    conn.row_trace = named_row
    got = {r["flow_id"]: dict(r) for r in conn.execute("SELECT * FROM flow_runs")}
    conn.close()
    empty = {"requester_origin_json": None, "current_step": None, "blocked_task_id": None, "blocked_summary": None,
             "state_json": None, "wait_json": None, "cancel_requested_at": None, "ended_at": None}
    assert got == {
        "f-managed": {**empty, "flow_id": "f-managed", "shape": "multi_step", "sync_mode": "managed", "owner_key": "agent:main:main",
                      "controller_id": "core/legacy-restored", "revision": 0, "status": "running", "notify_policy": "done_only",
                      "goal": "ship", "state_json": '{"step":1}', "created_at": 10, "updated_at": 20},
        "f-single": {**empty, "flow_id": "f-single", "shape": "single_task", "sync_mode": "task_mirrored", "owner_key": "agent:main:main",
                     "controller_id": None, "revision": 0, "status": "succeeded", "notify_policy": "silent", "goal": "one",
                     "created_at": 5, "updated_at": 6, "ended_at": 7},
    }
    assert receipt(state, "flows/registry.sqlite")["report"]["flow_ids"] == ["f-single", "f-managed"]


def test_plugin_state_sidecar_drops_expired_rows_and_keeps_newer_stored_ones(tmp_path: Path) -> None:
    state = make_state(tmp_path, {})
    entries = [
        {"plugin_id": "p", "namespace": "n", "entry_key": "live", "value_json": '{"a":1}', "created_at": 100, "expires_at": None},
        {"plugin_id": "p", "namespace": "n", "entry_key": "soon", "value_json": "2", "created_at": 100, "expires_at": NOW_MS + 60_000},
        {"plugin_id": "p", "namespace": "n", "entry_key": "old", "value_json": "3", "created_at": 100, "expires_at": NOW_MS - 1},
        {"plugin_id": "p", "namespace": "n", "entry_key": "stored", "value_json": "4", "created_at": 100, "expires_at": None},
    ]
    _database(state / "plugin-state" / "state.sqlite", PLUGIN_STATE_SQL, {"plugin_state_entries": entries})
    conn, _ = open_global(state)
    conn.execute("INSERT INTO plugin_state_entries VALUES ('p', 'n', 'stored', '5', 200, NULL)")
    conn.commit()
    conn.close()
    report = run(state)
    assert report.status == "completed", report.warnings
    assert rows(global_db(state), "SELECT entry_key, value_json, created_at, expires_at FROM plugin_state_entries ORDER BY entry_key") == [
        ("live", '{"a":1}', 100, None), ("soon", "2", 100, NOW_MS + 60_000), ("stored", "5", 200, None),
    ]
    stored = receipt(state, "plugin-state/state.sqlite")["report"]
    assert (stored["plugin_state_inserted"], stored["plugin_state_expired"], stored["plugin_state_kept_newer"]) == (2, 1, 1)


def test_capture_blob_that_fails_its_hash_keeps_the_capture_and_its_blobs_in_place(tmp_path: Path) -> None:
    state = make_state(tmp_path, {f"debug-proxy/blobs/{BLOB_ID}.bin.gz": gzip.compress(b"tampered", mtime=0)})
    _database(state / "debug-proxy" / "capture.sqlite", CAPTURE_SQL, {"capture_sessions": CAPTURE_SESSIONS, "capture_events": CAPTURE_EVENTS})
    report = run(state)
    assert report.exit_code == 3
    assert [w for w in report.warnings if w.startswith("debug-proxy/")] == [
        # a 24-hex id looks like a credential: messages show it redacted (issue 11 item 9)
        redact(f"debug-proxy/capture.sqlite: capture blob {BLOB_ID} does not match its hash ({BLOB_ID}.bin.gz); left in place"),
        f"debug-proxy/blobs/{BLOB_ID}.bin.gz: waits until debug-proxy/capture.sqlite is imported (its events use these blobs); left in place",
    ]
    assert (state / "debug-proxy/capture.sqlite").exists() and (state / f"debug-proxy/blobs/{BLOB_ID}.bin.gz").exists()
    assert rows(global_db(state), "SELECT count(*) FROM capture_events") == [(0,)]


def test_blobs_without_a_capture_database_stay(tmp_path: Path) -> None:
    state = make_state(tmp_path, {f"debug-proxy/blobs/{BLOB_ID}.bin.gz": BLOB_GZ})
    plan = build_plan(state)
    assert [(s.rel, s.action) for s in plan.sources] == [(f"debug-proxy/blobs/{BLOB_ID}.bin.gz", "retain")]
    assert "without a capture database" in (plan.sources[0].reason or "")


def test_a_blob_left_by_a_run_killed_after_its_capture_database_was_retired_is_retired(tmp_path: Path) -> None:
    """Killed after the capture database was imported and retired, before its blob's import committed: the blob is in
    place without a receipt, its capture database gone (retired, with a completed receipt). The rerun retires the blob as
    an uninterrupted run does; it does not keep it as a blob without a capture database (the crash walk's `*:698`)."""
    state = make_state(tmp_path, {})
    _database(state / "debug-proxy" / "capture.sqlite", CAPTURE_SQL, {"capture_sessions": CAPTURE_SESSIONS, "capture_events": CAPTURE_EVENTS})
    blob = f"debug-proxy/blobs/{BLOB_ID}.bin.gz"
    write_files(state, {blob: BLOB_GZ})
    first = run(state)
    assert outcome(first, blob).status == "imported"
    # the state the kill leaves: the blob back in its place, its receipt not committed
    retired = state / outcome(first, blob).retired_to
    (state / blob).parent.mkdir(parents=True, exist_ok=True)
    shutil.move(retired, state / blob)
    conn = open_db(global_db(state))
    with conn:
        conn.execute("DELETE FROM migration_sources WHERE source_path = ?", (blob,))
    conn.close()
    assert not (state / "debug-proxy" / "capture.sqlite").exists()
    rerun = run(state)
    assert outcome(rerun, blob).status == "imported", outcome(rerun, blob)
    assert not (state / blob).exists()
    assert (state / outcome(rerun, blob).retired_to).read_bytes() == BLOB_GZ
    found = receipt(state, blob)
    assert (found["status"], found["removed"]) == ("completed", 1)
    assert found["report"]["disposition"].startswith("payload blob of debug-proxy/capture.sqlite")
    # a blob with neither its capture database nor an import of one still stays (test_blobs_without_a_capture_database_stay)


def test_a_file_that_is_not_sqlite_is_unreadable_and_stays(tmp_path: Path) -> None:
    state = make_state(tmp_path, {"tasks/runs.sqlite": b"SQLite format 3\x00" + b"\xff" * 200})
    report = run(state)
    assert report.exit_code == 3
    assert outcome(report, "tasks/runs.sqlite").status in ("unreadable", "failed")
    lines = [w for w in report.warnings if w.startswith("tasks/runs.sqlite")]
    assert len(lines) == 1 and "not a readable SQLite database" in lines[0]
    assert (state / "tasks/runs.sqlite").exists()


def test_cli_plan_json_lists_reasons(tmp_path: Path) -> None:
    state = _state(tmp_path)
    proc = run_cli("plan", "--state-dir", state, "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    by_path = {s["path"]: s for s in plan["sources"]}
    assert "flows/registry.sqlite only" in by_path["tasks/flows/registry.sqlite"]["reason"]
    assert by_path["tasks/runs.sqlite"]["action"] == "import"
    assert plan["summary"]["unrecognised"] == 0 and plan["databases"] == []


def test_real_task_registry_sidecar(tmp_path: Path) -> None:
    """The 2026.5.28 corpus sidecar: its one cron task run, with the values OpenClaw 2026.9.6 keeps for it."""
    corpus_or_skip()
    state = extract_corpus_tree("legacy-2026.5.28-smoke", tmp_path)
    original = (state / "tasks/runs.sqlite").read_bytes()
    plan = build_plan(state)
    runs = [s for s in plan.sources if s.rel == "tasks/runs.sqlite"]
    assert len(runs) == 1 and runs[0].kind == "tasks-runs-sqlite" and runs[0].action == "import" and runs[0].record_count == 1
    report = run(state)
    assert_imported(state, report, "tasks/runs.sqlite", original, records=1)
    got = task_rows(state)["e3d43044-7eaa-4f28-ac17-be3ce76acf35"]
    assert {k: got[k] for k in ("runtime", "owner_key", "scope_kind", "requester_session_key", "agent_id", "requester_agent_id",
                                "run_id", "label", "task", "status", "delivery_status", "notify_policy", "created_at",
                                "ended_at", "cleanup_after", "detail_json")} == {
        "runtime": "cron", "owner_key": "system:cron:757b2ae0-6708-4e28-bd39-05bfffd467fc", "scope_kind": "system",
        "requester_session_key": "", "agent_id": "main", "requester_agent_id": None,
        "run_id": "cron:757b2ae0-6708-4e28-bd39-05bfffd467fc:1795996919803", "label": "daily-summary", "task": "daily-summary",
        "status": "succeeded", "delivery_status": "not_applicable", "notify_policy": "silent", "created_at": 1795996919803,
        "ended_at": 1795996937911, "cleanup_after": 1796601737911, "detail_json": None,
    }


def test_real_workspace_attestations(tmp_path: Path) -> None:
    corpus_or_skip()
    state = extract_corpus_tree("legacy-2026.7.35-std", tmp_path)
    plan = build_plan(state)
    attested = [s for s in plan.sources if s.kind == "workspace-attestation"]
    assert len(attested) == 2 and all(s.action == "retain" for s in attested)
    assert not any(rel.startswith("workspace-attestations") for rel, _why, _n in plan.user_content)
