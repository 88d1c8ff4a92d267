"""Issue 16, migrate side: one pass per byte, batched directory fsyncs, a session index linear in entries.

Each test fails on 308a7ed (said in its docstring) and pins the outcome, not only the speed:
the rows themselves are pinned by ``test_same_rows.py``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from helpers import agent_db, global_db, make_state, rows
import statekit.legacy_readers.transcripts as transcripts
import statekit.legacy_readers.writer as writer
import statekit.migrate.retire as retire
from statekit.migrate.apply import MigrateOptions, Migration, migrate
from statekit.migrate.plan import build_plan


def transcript(session_id: str, events: int) -> str:
    lines = [json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-01T00:00:00Z"})]
    lines += [json.dumps({"type": "message", "id": f"{session_id[:4]}{n:04x}", "timestamp": "2026-01-01T00:00:01Z",
                          "message": {"role": "user", "content": [{"type": "text", "text": f"hello {n} ünïcode"}]}}) for n in range(events)]
    return "\n".join(lines) + "\n"


def world(tmp_path: Path, files: int, events: int = 5) -> Path:
    return make_state(tmp_path, {f"agents/main/sessions/s{n:04d}.jsonl": transcript(f"s{n:04d}", events) for n in range(files)})


def count_calls(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls = [0]
    original = getattr(module, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_migrate_parses_each_transcript_line_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """308a7ed parsed every line twice (plan, then write): 2 x 6 x 30 = 360 parses here; now 210: each line once, plus the header read by the plan's glance."""
    state = world(tmp_path, 30, events=5)
    parsed = count_calls(monkeypatch, transcripts, "parse_line")  # every transcript line goes through it (msgspec, or json)
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 0, report.warnings
    assert parsed[0] == 30 * 6 + 30  # every line once, the header once more (the plan's glance)
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events") == [(30 * 6,)]
    receipts = rows(global_db(state), "SELECT source_path, source_sha256, source_record_count FROM migration_sources WHERE removed_source = 1")
    assert len(receipts) == 30
    for rel, digest, count in receipts:
        data = (state / ".statekit" / "migrated").glob(f"*/{rel}")
        assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in data] == [digest]
        assert count == 6


def test_statekit_plan_still_checks_every_line(tmp_path: Path) -> None:
    """``statekit plan`` keeps its full check: a bad line in the middle is named before anything runs."""
    state = world(tmp_path, 2)
    path = state / "agents/main/sessions/s0001.jsonl"
    lines = path.read_text().splitlines()
    lines[3] = '{"type": 5}'
    path.write_text("\n".join(lines) + "\n")
    planned = {s.rel: s for s in build_plan(state).sources}
    assert planned["agents/main/sessions/s0001.jsonl"].action == "unreadable"
    assert planned["agents/main/sessions/s0000.jsonl"].record_count == 6
    glanced = {s.rel: s for s in build_plan(state, full=False).sources}
    assert glanced["agents/main/sessions/s0000.jsonl"].record_count is None  # counted by the import, once


def test_a_file_that_changes_after_the_glance_is_planned_again(tmp_path: Path) -> None:
    """Bytes appended between migrate's plan and the import are imported, and the receipt hashes what was imported."""
    state = world(tmp_path, 1)
    plan = build_plan(state, full=False)
    path = state / "agents/main/sessions/s0000.jsonl"
    with open(path, "a") as out:
        out.write(json.dumps({"type": "message", "id": "late0001", "message": {"role": "user", "content": "late"}}) + "\n")
    final = path.read_bytes()
    migration = Migration(state, MigrateOptions(backup=False))
    try:
        report = migration.run(plan)
    finally:
        migration.close()
    assert any("changed since the plan" in n for n in report.notices)
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events") == [(7,)]
    assert rows(global_db(state), "SELECT source_sha256, source_record_count FROM migration_sources WHERE source_path LIKE '%s0000.jsonl'") == [
        (hashlib.sha256(final).hexdigest(), 7)]


def test_a_glanced_file_that_fails_gets_the_receipt_a_full_plan_gives(tmp_path: Path) -> None:
    """A bad line found only by the import: failed receipt, file left in place, named as statekit plan names it."""
    state = world(tmp_path, 2)
    path = state / "agents/main/sessions/s0001.jsonl"
    lines = path.read_text().splitlines()
    lines[3] = '{"type": 5}'
    path.write_text("\n".join(lines) + "\n")
    expected = next(s for s in build_plan(state).sources if s.rel.endswith("s0001.jsonl"))
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 3
    assert path.exists()
    outcome = next(o for o in report.outcomes if o.rel.endswith("s0001.jsonl"))
    assert (outcome.status, outcome.message) == ("unreadable", expected.reason)
    assert rows(global_db(state), "SELECT source_key, status FROM migration_sources WHERE source_path LIKE '%s0001.jsonl'") == [
        (expected.source_key, "failed")]


def test_retiring_fsyncs_each_directory_once_per_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """308a7ed fsynced two directories per retired file (120 here, plus a rmdir try of the sessions dir each time)."""
    state = world(tmp_path, 60, events=1)
    synced = count_calls(monkeypatch, retire, "fsync_dir")
    rmdirs = count_calls(monkeypatch, retire, "remove_empty_parents")
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 0, report.warnings
    assert synced[0] <= 4 and rmdirs[0] <= 2
    assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE removed_source = 1 AND status = 'completed'") == [(60,)]
    assert not (state / "agents/main/sessions").exists()  # emptied, removed once at the end


def test_session_index_import_is_linear_in_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """308a7ed compared every upserted entry with each new one (claim_recovered's delete): 2,000 entries made ~4 million
    comparisons (20,000 made 400 million, 4 minutes). Now none when there is no recovered history to claim."""
    entries = {f"agent:main:s{n}": {"sessionId": f"s{n:05d}", "updatedAt": 1767225600000 + n} for n in range(2000)}
    state = make_state(tmp_path, {"agents/main/sessions/sessions.json": json.dumps(entries)})
    compared = count_calls(monkeypatch, writer, "_matches")
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 0, report.warnings
    assert compared[0] < 10 * len(entries)
    assert rows(agent_db(state), "SELECT count(*) FROM session_entries") == [(2000,)]


def test_an_index_still_claims_recovered_history(tmp_path: Path) -> None:
    """A transcript imported before its index (recovered key) is taken over when the index names it."""
    state = make_state(tmp_path, {"agents/main/sessions/s0000.jsonl": transcript("s0000", 2)})
    assert migrate(state, MigrateOptions(backup=False)).exit_code == 0
    assert rows(agent_db(state), "SELECT session_key FROM session_entries") == [("agent:main:recovered:s0000",)]
    (state / "agents/main/sessions").mkdir()
    (state / "agents/main/sessions/sessions.json").write_text(json.dumps({"agent:main:main": {"sessionId": "s0000", "updatedAt": 1767225600000}}))
    assert migrate(state, MigrateOptions(backup=False)).exit_code == 0
    assert rows(agent_db(state), "SELECT session_key FROM session_entries") == [("agent:main:main",)]


def test_a_kill_before_the_batch_is_durable_keeps_the_directory_modes(tmp_path: Path) -> None:
    """Batched retirements widen the window between a move and its receipt being marked: the run killed there
    (``after-retire``, receipts not yet marked) is finished by the next run, and every receipt still records
    the directory modes ``recover`` puts back. Fails on the merge of perf without the import-time ``dir_modes``:
    the sources the next run finished had none."""
    from helpers import run_cli

    state = world(tmp_path, 6, events=2)
    (state / "agents" / "main" / "sessions").chmod(0o750)
    killed = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", env={"STATEKIT_CRASHPOINT": "after-retire:4"})
    assert killed.returncode == -9, killed.stderr[-300:]
    assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE removed_source = 1") == [(0,)]  # none marked yet
    rerun = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert rerun.returncode == 0, rerun.stderr
    modes = rows(global_db(state), "SELECT source_path, json_extract(report_json, '$.dir_modes') FROM migration_sources WHERE removed_source = 1")
    assert len(modes) == 6
    assert all(m is not None and json.loads(m).get("agents/main/sessions") == 0o750 for _rel, m in modes), modes


def test_session_index_upserts_share_one_statement(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sessions upsert of an index import is one SQL text, whatever the number of entries (one prepared statement).

    Fails on 2ef7472 and perf: the recovered key was spliced into the SQL per entry, so 2,000 entries made 2,000
    texts, each checked and prepared anew (and kept in the statement caches)."""
    import statekit.db as db

    entries = {f"agent:main:s{n}": {"sessionId": f"s{n:05d}", "updatedAt": 1767225600000 + n} for n in range(2000)}
    state = make_state(tmp_path, {"agents/main/sessions/sessions.json": json.dumps(entries)})
    texts: set[str] = set()
    original = db.Cursor._execute

    def seen(self: Any, statements: str, bindings: Any = None, **kwargs: Any) -> Any:
        if statements.startswith('INSERT INTO "sessions"'):
            texts.add(statements)
        return original(self, statements, bindings, **kwargs)

    monkeypatch.setattr(db.Cursor, "_execute", seen)
    assert migrate(state, MigrateOptions(backup=False)).exit_code == 0
    assert len(texts) == 1, len(texts)
    assert rows(agent_db(state), "SELECT count(*) FROM sessions") == [(2000,)]


def test_an_older_index_entry_still_takes_over_the_recovered_session(tmp_path: Path) -> None:
    """The takeover clause (``sessions.session_key`` is the recovered key of this session id) holds even when the
    index entry is older than the recovered row: the row becomes the index's key, with the index's time."""
    state = make_state(tmp_path, {"agents/main/sessions/s0000.jsonl": transcript("s0000", 2)})
    assert migrate(state, MigrateOptions(backup=False)).exit_code == 0
    assert rows(agent_db(state), "SELECT session_key FROM sessions WHERE session_id = 's0000'") == [("agent:main:recovered:s0000",)]
    (state / "agents/main/sessions").mkdir()
    (state / "agents/main/sessions/sessions.json").write_text(json.dumps({"agent:main:main": {"sessionId": "s0000", "updatedAt": 1000}}))
    assert migrate(state, MigrateOptions(backup=False)).exit_code == 0
    assert rows(agent_db(state), "SELECT session_key, updated_at FROM sessions WHERE session_id = 's0000'") == [("agent:main:main", 1000)]


def test_a_sqlite_sibling_removed_before_its_import_is_gone_not_failed(tmp_path: Path) -> None:
    """``-wal``/``-shm`` beside a legacy SQLite source that SQLite removes between the plan and their import (a
    pre-migration backup killed while it held the database open left them; the rerun's backup closed it again):
    no ``failed`` receipt, the database imported, exit 0. Fails on 2ef7472 and the perf merge: two failed receipts
    (the every-family crash walk's "bookkeeping differs: migration_sources" at backup kill points)."""
    from helpers import FIXTURES
    from statekit import seams

    state = make_state(tmp_path, {})
    (state / "tasks").mkdir()
    (state / "tasks" / "runs.sqlite").write_bytes((FIXTURES / "every-family" / ".openclaw" / "tasks" / "runs.sqlite").read_bytes())
    (state / "tasks" / "runs.sqlite-wal").write_bytes(b"")
    (state / "tasks" / "runs.sqlite-shm").write_bytes(bytes(32768))

    def sqlite_closes_it(name: str) -> None:
        if name == "migrate-backup-done":
            for suffix in ("-wal", "-shm"):
                (state / "tasks" / f"runs.sqlite{suffix}").unlink(missing_ok=True)

    previous = seams.install_checkpoint_hook(sqlite_closes_it)
    try:
        report = migrate(state, MigrateOptions(backup=False))
    finally:
        seams.install_checkpoint_hook(previous)
    assert report.exit_code == 0, report.warnings
    assert rows(global_db(state), "SELECT source_path, status, removed_source FROM migration_sources ORDER BY source_path") == [
        ("tasks/runs.sqlite", "completed", 1)]
    assert sorted(o.status for o in report.outcomes) == ["gone", "gone", "imported"]
    assert any("runs.sqlite-wal: removed by SQLite before its import" in n for n in report.notices), report.notices


def test_the_glance_reads_a_header_line_longer_than_its_first_read(tmp_path: Path) -> None:
    """The glance asks for ``SMALL_READ`` bytes, not a 1 MiB block: a header longer than that is still read whole
    (its session id and version found), and the import then gives the receipt a full plan gives."""
    from statekit.fsutil import SMALL_READ

    header = {"type": "session", "version": 3, "id": "long-header", "timestamp": "2026-01-01T00:00:00Z", "cwd": "x" * (3 * SMALL_READ)}
    body = transcript("long-header", 3).splitlines()[1:]
    state = make_state(tmp_path, {"agents/main/sessions/long-header.jsonl": "\n".join([json.dumps(header), *body]) + "\n"})
    glanced = {s.rel: s for s in build_plan(state, full=False).sources}["agents/main/sessions/long-header.jsonl"]
    assert glanced.glanced and glanced.action == "import"  # planned from the header (an unreadable one is inspected in full)
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 0, report.warnings
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id = 'long-header'") == [(4,)]
    assert rows(global_db(state), "SELECT source_record_count FROM migration_sources WHERE removed_source = 1") == [(4,)]
