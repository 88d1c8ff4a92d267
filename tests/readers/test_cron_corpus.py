"""Cron readers against real files from ../shared/corpus (skipped when the corpus is absent).

* public-repos/tiimapp__openclaw-config: 22 jobs (every/cron/at), inline state,
  a non-UUID id, \\uXXXX escapes.
* public-repos/Linux2010__openclaw: an empty store, its .bak, five run logs.
* generated/legacy-2026.5.28-smoke.tar: jobs.json + jobs-state.json + runs/ as
  the last pure-file release wrote them; cross-checked against the rows
  OpenClaw 2026.7.35 itself wrote for the same four jobs.
* generated/legacy-2026.7.35-std.tar: a real 2026.7.35 global database (the
  canonical v1 cron tables, already holding rows under that tree's own store key).
"""

from __future__ import annotations

import json
import shutil
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from helpers import corpus_or_skip, make_state, named_row, open_db
from statekit.legacy_readers.base import ImportContext, Reader, Source, WriteResult
from statekit.legacy_readers.cron import CronJobsBackupReader, CronJobsReader, CronRunsReader, CronStateReader
from statekit.fsutil import HashingReader
from statekit.schema import open_global
from statekit.db import Connection

pytestmark = pytest.mark.corpus

NOW = 1_800_000_000_000
JOBS = CronJobsReader()
STATE = CronStateReader()
RUNS = CronRunsReader()
BACKUP = CronJobsBackupReader()


def _conn(state: Path) -> Connection:
    conn, _ = open_global(state)
    conn.row_trace = named_row
    return conn


def _write(conn: Connection, state: Path, reader: Reader, rel: str, config: dict[str, Any] | None = None) -> WriteResult:
    ctx = ImportContext(state, "run-corpus", NOW, conn, agent_db_factory=lambda a: pytest.fail(f"agent db {a}"), config=config or {})
    source = Source(state, rel)
    conn.execute("BEGIN IMMEDIATE")
    try:
        with open(source.path, "rb") as raw:
            result = reader.write(source, HashingReader(raw), ctx)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    for _, table, where, params, count in [*result.expected, *(e.as_tuple() for e in ctx.writer.expectations())]:
        assert conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()[0] >= count
    if reader is JOBS:
        (state / rel).rename(state / f"{rel}.retired")  # as the apply loop does after commit
    return result


def _inspect(reader: Reader, state: Path, rel: str):
    source = Source(state, rel)
    with open(source.path, "rb") as raw:
        return reader.inspect(source, HashingReader(raw))


def _copy_cron(tmp_path: Path, repo: str) -> Path:
    corpus = corpus_or_skip()
    state = make_state(tmp_path)
    shutil.copytree(corpus / "public-repos" / repo / "cron", state / "cron")
    return state


def _extract(tmp_path: Path, name: str) -> Path:
    corpus = corpus_or_skip()
    tar = corpus / "generated" / f"{name}.tar"
    if not tar.exists():
        pytest.skip(f"{tar.name} not in the corpus")
    with tarfile.open(tar) as archive:
        archive.extractall(tmp_path / name, filter="tar")
    return tmp_path / name / "home" / ".openclaw"


def test_tiimapp_jobs(tmp_path: Path):
    state = _copy_cron(tmp_path, "tiimapp__openclaw-config")
    raw = json.loads((state / "cron" / "jobs.json").read_text())
    inspection = _inspect(JOBS, state, "cron/jobs.json")
    assert (inspection.record_count, inspection.warnings, inspection.details["duplicates"]) == (22, [], [])
    conn = _conn(state)
    try:
        result = _write(conn, state, JOBS, "cron/jobs.json")
        assert (result.records, result.notices, result.report["repairs"]) == (22, [], {})
        rows = {r["job_id"]: dict(r) for r in conn.execute("SELECT * FROM cron_jobs WHERE store_key = ?", (f"{state}/cron/jobs.json",))}
        assert len(rows) == 22
        assert Counter(r["schedule_kind"] for r in rows.values()) == {"cron": 10, "at": 9, "every": 3}
        assert Counter(r["payload_kind"] for r in rows.values()) == {"agentTurn": 20, "systemEvent": 2}
        assert "a1b2c3d4-5e6f-7g8h-9i0j-k1l2m3n4o5p6" in rows  # non-UUID id kept verbatim
        for index, job in enumerate(raw["jobs"]):
            row = rows[job["id"]]
            state_dict = job["state"]
            assert row["sort_order"] == index
            assert (row["name"], row["enabled"]) == (job["name"], int(job["enabled"]))
            assert (row["created_at_ms"], row["updated_at"], row["runtime_updated_at_ms"]) == (job["createdAtMs"], job["updatedAtMs"], job["updatedAtMs"])
            assert row["payload_message"] == (job["payload"].get("message") or job["payload"].get("text"))
            assert json.loads(row["state_json"]) == state_dict
            assert row["next_run_at_ms"] == state_dict.get("nextRunAtMs")
            assert row["last_run_status"] == state_dict.get("lastRunStatus")
            assert row["last_delivered"] == (None if "lastDelivered" not in state_dict else int(state_dict["lastDelivered"]))
            definition = json.loads(row["job_json"])
            expected = {k: v for k, v in job.items() if k not in ("state", "updatedAtMs")} | {"state": {}}
            assert definition == expected  # nothing to repair in a current-shape file: the definition is unchanged
        # \uXXXX-escaped text decoded and stored as real characters.
        assert any(any(ord(ch) > 0x2000 for ch in r["name"]) for r in rows.values())
        assert all("\\u" not in r["job_json"] for r in rows.values())
        every = rows["7086e6e4-5cda-4c06-9e9d-972e74f4c05e"]
        assert (every["every_ms"], every["anchor_ms"], every["running_at_ms"], every["delivery_mode"], every["delivery_channel"]) == (
            3600000, 1772155573016, 1773156457213, "none", "last")  # fmt: skip
        cron = rows["022b6ff3-b437-4ff0-92a5-24d48379844e"]
        assert (cron["schedule_expr"], cron["schedule_tz"], cron["agent_id"]) == ("30 15 * * 1-5", "Asia/Shanghai", "main")
    finally:
        conn.close()


def test_linux2010_empty_store_backup_and_run_logs(tmp_path: Path):
    state = _copy_cron(tmp_path, "Linux2010__openclaw")
    assert _inspect(JOBS, state, "cron/jobs.json").record_count == 0
    backup = _inspect(BACKUP, state, "cron/jobs.json.bak")
    assert (backup.record_count, backup.warnings) == (0, [])
    logs = sorted(p.relative_to(state).as_posix() for p in (state / "cron" / "runs").glob("*.jsonl"))
    assert len(logs) == 5
    conn = _conn(state)
    try:
        assert _write(conn, state, JOBS, "cron/jobs.json").records == 0
        counts = {}
        for rel in logs:
            inspected = _inspect(RUNS, state, rel).record_count
            result = _write(conn, state, RUNS, rel)
            assert result.records == inspected and result.report["job_known"] is False
            counts[Path(rel).stem] = result.records
        assert sum(counts.values()) == 7
        rows = [dict(r) for r in conn.execute("SELECT * FROM cron_run_logs ORDER BY job_id, seq")]
        assert len(rows) == 7
        for row in rows:
            entry = json.loads(row["entry_json"])
            assert entry["jobId"] == row["job_id"]
            assert (row["ts"], row["created_at"], row["status"], row["run_at_ms"]) == (entry["ts"], entry["ts"], entry["status"], entry["runAtMs"])
            assert row["total_tokens"] == entry.get("usage", {}).get("total_tokens")
            assert row["delivered"] == (None if "delivered" not in entry else int(entry["delivered"]))
        skipped = [r for r in rows if r["status"] == "skipped"]
        assert len(skipped) == 1 and skipped[0]["delivery_status"] == "not-requested" and skipped[0]["error"] is not None
    finally:
        conn.close()


def test_smoke_2026_5_28_matches_what_openclaw_2026_7_35_wrote(tmp_path: Path):
    """Import the pure-file 2026.5.28 cron store; compare with the rows 2026.7.35 wrote for the same four jobs."""
    state = _extract(tmp_path, "legacy-2026.5.28-smoke")
    reference_db = _extract(tmp_path, "legacy-2026.7.35-std") / "state" / "openclaw.sqlite"
    assert _inspect(BACKUP, state, "cron/jobs.json.bak").record_count == 3
    run_rel = "cron/runs/757b2ae0-6708-4e28-bd39-05bfffd467fc.jsonl"
    conn = _conn(state)
    try:
        assert _write(conn, state, JOBS, "cron/jobs.json").records == 4
        state_result = _write(conn, state, STATE, "cron/jobs-state.json")
        assert (state_result.records, state_result.warnings, state_result.notices) == (4, [], [])
        run_result = _write(conn, state, RUNS, run_rel)
        assert (run_result.records, run_result.report["job_known"]) == (1, True)
        ours = {r["name"]: dict(r) for r in conn.execute("SELECT * FROM cron_jobs")}
        run = dict(conn.execute("SELECT * FROM cron_run_logs").fetchone())
    finally:
        conn.close()

    ref = open_db(reference_db, "ro", immutable=True)
    ref.row_trace = named_row
    try:
        theirs = {r["name"]: dict(r) for r in ref.execute("SELECT * FROM cron_jobs")}
        their_run = dict(ref.execute("SELECT * FROM cron_run_logs").fetchone())
    finally:
        ref.close()
    assert set(ours) == set(theirs) == {"daily-summary", "hourly-check", "one-shot-reminder", "main-nudge"}
    for name, row in ours.items():
        other = theirs[name]
        filled = {c for c, v in row.items() if v is not None}
        other_filled = {c for c, v in other.items() if v is not None and c in row}
        assert filled == other_filled, name  # the same projection columns are filled
        for column in ("schedule_kind", "schedule_expr", "every_ms", "session_target", "wake_mode", "payload_kind", "payload_message",
                       "delivery_mode", "delivery_channel", "enabled", "delete_after_run", "agent_id", "sort_order", "last_run_status",
                       "consecutive_errors", "consecutive_skipped", "last_delivery_status"):  # fmt: skip
            assert row[column] == other[column], (name, column)
        assert set(json.loads(row["job_json"])) == set(json.loads(other["job_json"]))
        assert set(json.loads(row["state_json"])) == set(json.loads(other["state_json"]))
        ours_identity, their_identity = json.loads(row["schedule_identity"]), json.loads(other["schedule_identity"])
        assert (ours_identity["version"], ours_identity["schedule"]["kind"]) == (their_identity["version"], their_identity["schedule"]["kind"])
    # Both keyed by the absolute path of the store's jobs.json (each tree's own path).
    assert all(r["store_key"] == f"{state}/cron/jobs.json" for r in ours.values())
    assert {r["store_key"] for r in theirs.values()} == {their_run["store_key"]} and their_run["store_key"].endswith("/.openclaw/cron/jobs.json")
    assert run["store_key"] == f"{state}/cron/jobs.json"
    assert {c for c, v in run.items() if v is not None} == {c for c, v in their_run.items() if v is not None}
    assert (run["seq"], their_run["seq"]) == (1, 1)  # same numbering as OpenClaw's own run-log rows


def test_foreign_2026_7_35_cron_table_accepts_our_rows(tmp_path: Path):
    """A hybrid-era database (2026.7.35 wrote it): our rows join its canonical cron tables, its own rows stay untouched."""
    std = _extract(tmp_path, "legacy-2026.7.35-std")
    corpus = corpus_or_skip()
    state = make_state(tmp_path / "target")
    (state / "state").mkdir()
    shutil.copy2(std / "state" / "openclaw.sqlite", state / "state" / "openclaw.sqlite")
    fixtures = Path(__file__).resolve().parents[2] / "fixtures" / "readers" / "cron"
    shutil.copytree(fixtures, state / "cron")
    shutil.copy2(corpus / "public-repos" / "tiimapp__openclaw-config" / "cron" / "jobs.json", state / "cron" / "jobs.json")
    conn = _conn(state)
    try:
        columns = {r[1]: r for r in conn.execute("PRAGMA table_info(cron_jobs)")}
        assert {"declaration_key", "owner_agent_id", "trigger_script"} <= set(columns)  # really the foreign table
        not_null = {name for name, info in columns.items() if info[3] and info[4] is None and not info[5]}
        assert {"name", "enabled", "created_at_ms", "schedule_kind", "session_target", "wake_mode", "payload_kind"} <= not_null
        path_keyed = conn.execute("SELECT count(*) FROM cron_jobs").fetchone()[0]
        assert path_keyed == 4
        result = _write(conn, state, JOBS, "cron/jobs.json")
        assert result.records == 22
        assert any("already holds 4 row(s) under other store keys" in line for line in result.notices)
        legacy = _write(conn, state, JOBS, "cron/jobs-legacy.json")
        assert legacy.records == 4
        runs = _write(conn, state, RUNS, "cron/runs/0b7c6c1e-1111-4a4a-9e9e-000000000001.jsonl")
        assert runs.records == 3
        key = f"{state}/cron/jobs.json"
        assert conn.execute("SELECT count(*) FROM cron_jobs WHERE store_key = ?", (key,)).fetchone()[0] == 26
        assert conn.execute("SELECT count(*) FROM cron_jobs WHERE store_key <> ?", (key,)).fetchone()[0] == path_keyed  # untouched
        # Every NOT NULL column filled; a legacy job has no owner or declaration key.
        row = dict(conn.execute("SELECT * FROM cron_jobs WHERE job_id = '12345'").fetchone())
        assert all(row[c] is not None for c in not_null)
        assert row["owner_agent_id"] is None and row["declaration_key"] is None
        assert conn.execute("SELECT count(*) FROM cron_run_logs WHERE store_key = ?", (key,)).fetchone()[0] == 3
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
