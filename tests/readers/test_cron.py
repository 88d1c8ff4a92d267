"""Cron readers: cron/jobs.json, cron/jobs-state.json, cron/runs/*.jsonl, cron/jobs.json.bak.

Every test builds a fresh global database in ``tmp_path``, writes through the
reader inside ``BEGIN IMMEDIATE`` exactly as the apply loop does (a
non-seekable hashing handle), commits, checks the ``expect()`` counts, and then
asserts rows column by column.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from statekit import legacy_readers
from helpers import FIXTURES, db_dump, global_db, make_state, named_row, open_db, rows, run_cli, tree_digest, write_files
from statekit.legacy_readers.base import ImportContext, Reader, Source, WriteResult
from statekit.legacy_readers.cron import (
    CronJobsBackupReader,
    CronJobsReader,
    CronRunsReader,
    CronStateReader,
    schedule_identity,
    store_key_for,
)
from statekit.errors import SchemaError, SourceError
from statekit.fsutil import HashingReader
from statekit.schema import open_global
from statekit.db import Connection

CRON_FIXTURES = FIXTURES / "readers" / "cron"
NOW = 1_790_000_000_000
MTIME = 1_780_000_000_000  # pinned mtime of copied fixture files (ms)
JOB1 = "0b7c6c1e-1111-4a4a-9e9e-000000000001"
JOB2 = "0b7c6c1e-1111-4a4a-9e9e-000000000002"
JOB3 = "0b7c6c1e-1111-4a4a-9e9e-000000000003"
RUN_LOG = f"cron/runs/{JOB1}.jsonl"

JOBS = CronJobsReader()
STATE = CronStateReader()
RUNS = CronRunsReader()
BACKUP = CronJobsBackupReader()


# --- harness -----------------------------------------------------------------------


class Env:
    def __init__(self, state: Path, config: dict[str, Any] | None = None) -> None:
        self.state = state
        self.conn, _ = open_global(state)
        self.conn.row_trace = named_row
        self.config = config or {}
        self.run_cache: dict[Any, Any] = {}
        self.ctx = self.new_context()
        self.expectations: list[tuple[str, str, str, tuple[Any, ...], int]] = []

    def new_context(self) -> ImportContext:
        """A context per source, as the apply loop gives one (the run cache shared by the run's sources)."""
        return ImportContext(self.state, "run-test", NOW, self.conn, agent_db_factory=_no_agent_db, config=self.config, run_cache=self.run_cache)

    def close(self) -> None:
        self.conn.close()

    def write(self, reader: Reader, rel: str) -> WriteResult:
        """One source, as the apply loop does it: BEGIN IMMEDIATE, write, COMMIT, check what the writer expects."""
        source = Source(self.state, rel)
        self.ctx = self.new_context()
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            with open(source.path, "rb") as raw:
                result = reader.write(source, HashingReader(raw), self.ctx)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")
        self.expectations = [*result.expected, *(e.as_tuple() for e in self.ctx.writer.expectations())]
        for db, table, where, params, count in self.expectations:
            assert db == "global"
            found = self.conn.execute(f"SELECT count(*) FROM {table} WHERE {where}", params).fetchone()[0]
            assert found >= count, (table, where, found, count)
        return result

    def retire(self, rel: str) -> None:
        """What the apply loop does after a successful commit."""
        (self.state / rel).rename(self.state / f"{rel}.retired")

    @property
    def store_key(self) -> str:
        return store_key_for("cron/jobs.json", self.state)

    def job(self, job_id: str) -> dict[str, Any]:
        row = self.conn.execute("SELECT * FROM cron_jobs WHERE store_key = ? AND job_id = ?", (self.store_key, job_id)).fetchone()
        assert row is not None, job_id
        return dict(row)

    def insert_job(self, job_id: str, name: str, updated_at: int, store_key: str | None = None) -> None:
        """A row as OpenClaw itself writes one (every NOT NULL column of the canonical table filled)."""
        job = {"id": job_id, "name": name, "enabled": True, "createdAtMs": 1, "schedule": {"kind": "cron", "expr": "0 * * * *"},
               "sessionTarget": "main", "wakeMode": "now", "payload": {"kind": "systemEvent", "text": "x"}, "state": {}}  # fmt: skip
        self.conn.execute(
            "INSERT INTO cron_jobs(store_key, job_id, name, enabled, created_at_ms, schedule_kind, schedule_expr, session_target, "
            "wake_mode, payload_kind, payload_message, job_json, state_json, updated_at) "
            "VALUES (?, ?, ?, 1, 1, 'cron', '0 * * * *', 'main', 'now', 'systemEvent', 'x', ?, '{}', ?)",
            (store_key or self.store_key, job_id, name, json.dumps(job), updated_at),
        )

    def count(self, table: str) -> int:
        return self.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]

    def runs(self, job_id: str) -> list[dict[str, Any]]:
        rows = self.conn.execute("SELECT * FROM cron_run_logs WHERE job_id = ? ORDER BY seq", (job_id,)).fetchall()
        return [dict(r) for r in rows]


def _no_agent_db(agent_id: str) -> Connection:
    raise AssertionError(f"cron readers never open an agent database ({agent_id})")


def inspect(reader: Reader, state: Path, rel: str):
    source = Source(state, rel)
    with open(source.path, "rb") as raw:
        return reader.inspect(source, HashingReader(raw))


def place(state: Path, rel: str, content: Any, mtime_ms: int = MTIME) -> Path:
    write_files(state, {rel: content})
    path = state / rel
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path


def place_fixture(state: Path, name: str, rel: str, mtime_ms: int = MTIME) -> Path:
    return place(state, rel, (CRON_FIXTURES / name).read_bytes(), mtime_ms)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return make_state(tmp_path)


@pytest.fixture
def env(state: Path):
    environment = Env(state)
    yield environment
    environment.close()


def assert_one_line_error(exc: pytest.ExceptionInfo[SourceError], rel: str, *needles: str) -> None:
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith(rel)
    for needle in needles:
        assert needle in message, message


# --- registry ----------------------------------------------------------------------


def test_registry_claims_and_order():
    assert legacy_readers.reader_for("cron/jobs.json").kind == "cron-jobs"
    assert legacy_readers.reader_for("cron/jobs-state.json").kind == "cron-state"
    assert legacy_readers.reader_for(f"cron/runs/{JOB1}.jsonl").kind == "cron-runs"
    assert legacy_readers.reader_for("cron/jobs.json.bak").kind == "cron-jobs-backup"
    assert legacy_readers.reader_for("cron/jobs.json.bak.2").kind == "cron-jobs-backup"
    for rel in ("cron/runs/x.jsonl.migrated", "cron/runs/sub/x.jsonl", "agents/main/cron/jobs.json", "cron/jobs.json.tmp"):
        reader = legacy_readers.reader_for(rel)
        assert reader is None or reader.family != "cron", rel
    assert JOBS.order < STATE.order < RUNS.order < BACKUP.order
    assert (JOBS.action, STATE.action, RUNS.action) == ("import", "import", "import")
    assert BACKUP.action == "retain" and BACKUP.reason == "OpenClaw's own backup copy of jobs.json; the live file is imported"
    assert all(r.agent_for("cron/jobs.json") is None for r in (JOBS, STATE, RUNS, BACKUP))
    assert JOBS.schema()["$schema"].endswith("2020-12/schema")


def test_store_keys(tmp_path: Path):
    """The absolute path of jobs.json, as OpenClaw's cronStoreKey(storePath) = path.resolve(storePath)."""
    state = tmp_path / "home" / ".openclaw"
    expected = f"{tmp_path}/home/.openclaw/cron/jobs.json"
    assert store_key_for("cron/jobs.json", state) == expected
    assert store_key_for("cron/jobs-state.json", state) == expected
    assert store_key_for(f"cron/runs/{JOB1}.jsonl", state) == expected
    assert store_key_for("custom/cron-store/runs/a.jsonl", state) == f"{tmp_path}/home/.openclaw/custom/cron-store/jobs.json"
    # Made absolute without resolving symlinks (path.resolve does not follow them either).
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert store_key_for("cron/jobs.json", tmp_path / "link") == f"{tmp_path}/link/cron/jobs.json"
    relative = Path(os.path.relpath(state))
    assert store_key_for("cron/jobs.json", relative) == expected


# --- jobs.json ---------------------------------------------------------------------


def test_jobs_rows_column_by_column(env: Env, state: Path):
    place_fixture(state, "jobs.json", "cron/jobs.json")
    result = env.write(JOBS, "cron/jobs.json")
    assert result.records == 3
    assert result.notices == []
    assert result.report["jobs_in_file"] == 3 and result.report["duplicates_dropped"] == []
    assert env.count("cron_jobs") == 3

    one = env.job(JOB1)
    assert {k: one[k] for k in one if k not in ("job_json",)} == {
        "store_key": f"{state}/cron/jobs.json",
        "job_id": JOB1,
        "declaration_key": None,
        "display_name": None,
        "owner_agent_id": None,
        "owner_session_key": None,
        "name": "daily-digest",
        "description": "Morning digest",
        "enabled": 1,
        "delete_after_run": None,
        "created_at_ms": 1772000000000,
        "agent_id": "main",
        "session_key": "agent:main:telegram:direct:1001",
        "schedule_kind": "cron",
        "schedule_expr": "0 9 * * 1-5",
        "schedule_tz": "Europe/Paris",
        "every_ms": None,
        "anchor_ms": None,
        "at": None,
        "stagger_ms": 30000,
        "session_target": "isolated",
        "wake_mode": "now",
        "trigger_script": None,
        "trigger_once": None,
        "payload_kind": "agentTurn",
        "payload_message": "Summarise yesterday's messages",
        "payload_model": "anthropic/claude-sonnet-4",
        "payload_fallbacks_json": '["openai/gpt-5-mini"]',
        "payload_thinking": "low",
        "payload_timeout_seconds": 120,
        "payload_allow_unsafe_external_content": 0,
        "payload_external_content_source_json": '"gmail"',
        "payload_light_context": 1,
        "payload_tools_allow_json": '["read","web_search"]',
        "payload_tools_allow_is_default": None,  # toolsAllowIsDefault absent: NULL, as booleanToInteger(undefined)
        "delivery_mode": "announce",
        "delivery_channel": "telegram",
        "delivery_to": "1001",
        "delivery_thread_id": "42",
        "delivery_thread_id_type": "number",  # typeof threadId: read back as the number 42
        "delivery_account_id": "default",
        "delivery_best_effort": 1,
        "delivery_completion_mode": None,
        "delivery_completion_to": None,
        "failure_delivery_mode": "announce",
        "failure_delivery_channel": "telegram",
        "failure_delivery_to": "1002",
        "failure_delivery_account_id": "ops",
        "failure_alert_disabled": 0,
        "failure_alert_after": 3,
        "failure_alert_channel": "telegram",
        "failure_alert_to": "1002",
        "failure_alert_cooldown_ms": 3600000,
        "failure_alert_include_skipped": 0,
        "failure_alert_mode": "announce",
        "failure_alert_account_id": "ops",
        "next_run_at_ms": 1772186400000,
        "running_at_ms": None,
        "last_run_at_ms": 1772100000000,
        "last_run_status": "error",  # lastRunStatus absent: falls back to lastStatus
        "last_error": "provider timeout",
        "last_duration_ms": 120000,
        "consecutive_errors": 2,
        "consecutive_skipped": 0,
        "schedule_error_count": 1,
        "last_delivery_status": "not-delivered",
        "last_delivery_error": "chat not found",
        "last_delivered": 0,
        "last_failure_alert_at_ms": 1772100000500,
        "state_json": '{"nextRunAtMs":1772186400000,"lastRunAtMs":1772100000000,"lastStatus":"error","lastError":"provider timeout",'
        '"lastDurationMs":120000,"consecutiveErrors":2,"consecutiveSkipped":0,"scheduleErrorCount":1,'
        '"lastDeliveryStatus":"not-delivered","lastDeliveryError":"chat not found","lastDelivered":false,'
        '"lastFailureAlertAtMs":1772100000500}',
        "runtime_updated_at_ms": 1772100000000,
        "schedule_identity": '{"version":1,"enabled":true,"schedule":{"kind":"cron","expr":"0 9 * * 1-5","tz":"Europe/Paris","staggerMs":30000}}',
        "sort_order": 0,
        "updated_at": 1772100000000,
    }
    job_json = json.loads(one["job_json"])
    assert "updatedAtMs" not in job_json and job_json["state"] == {}  # runtime fields live in their columns
    assert job_json["delivery"]["threadId"] == 42 and job_json["schedule"]["staggerMs"] == 30000
    assert list(job_json)[:3] == ["id", "agentId", "sessionKey"]  # original key order kept
    assert one["job_json"] == one["job_json"].strip() and ": " not in one["job_json"]  # compact

    two = env.job(JOB2)
    assert (two["schedule_kind"], two["every_ms"], two["anchor_ms"], two["schedule_expr"], two["at"]) == ("every", 3600000, 1772000000000, None, None)
    assert (two["enabled"], two["wake_mode"], two["failure_alert_disabled"], two["failure_alert_after"]) == (0, "next-heartbeat", 1, None)
    assert (two["delivery_mode"], two["delivery_channel"], two["delivery_to"]) == ("none", "last", None)
    assert (two["state_json"], two["next_run_at_ms"], two["consecutive_errors"], two["sort_order"]) == ("{}", None, None, 1)

    three = env.job(JOB3)
    assert (three["schedule_kind"], three["at"], three["delete_after_run"]) == ("at", "2026-12-02T09:00:00.000Z", 1)
    assert (three["payload_kind"], three["payload_message"], three["payload_model"]) == ("systemEvent", "Renew the certificate été", None)
    assert (three["session_target"], three["delivery_mode"], three["failure_alert_disabled"]) == ("main", None, None)
    # No updatedAtMs: both clocks take createdAtMs, as the release backfills it (never the file's mtime).
    assert (three["updated_at"], three["runtime_updated_at_ms"], three["sort_order"]) == (1772000000000, 1772000000000, 2)
    assert three["schedule_identity"] == '{"version":1,"enabled":true,"schedule":{"kind":"at","at":"2026-12-02T09:00:00.000Z"}}'
    assert two["schedule_identity"] == '{"version":1,"enabled":false,"schedule":{"kind":"every","everyMs":3600000,"anchorMs":1772000000000}}'
    assert (two["delivery_thread_id"], two["delivery_thread_id_type"], two["payload_tools_allow_is_default"]) == (None, None, None)
    assert "été" in three["job_json"]  # non-ASCII kept, not \u-escaped


def test_later_job_fields_fill_their_canonical_columns(state: Path):
    """Fields of 2026.7-era jobs land where 2026.7.35's bindCronJobRow puts them."""
    environment = Env(state, config={"cron": {"store": "~/elsewhere/jobs.json"}})
    try:
        place(state, "cron/jobs.json", {"version": 1, "jobs": [{
            "id": "newer", "name": "newer", "declarationKey": "heartbeat:main", "displayName": "Heartbeat (main)",
            "owner": {"agentId": "main", "sessionKey": "agent:main:main"}, "createdAtMs": 5,
            "schedule": {"kind": "cron", "expr": "0 * * * *", "staggerMs": 250.7}, "trigger": {"script": "check.sh", "once": True},
            "payload": {"kind": "agentTurn", "message": "m", "toolsAllow": ["read"], "toolsAllowIsDefault": True},
            "delivery": {"mode": "announce", "threadId": "topic-7", "completionDestination": {"mode": "webhook", "to": "https://hook"},
                         "failureDestination": {"channel": None, "to": "99"}},
        }]})  # fmt: skip
        result = environment.write(JOBS, "cron/jobs.json")
        row = environment.job("newer")
        assert {k: row[k] for k in (
            "declaration_key", "display_name", "owner_agent_id", "owner_session_key", "trigger_script", "trigger_once",
            "payload_tools_allow_json", "payload_tools_allow_is_default", "delivery_thread_id", "delivery_thread_id_type",
            "delivery_completion_mode", "delivery_completion_to", "failure_delivery_channel", "failure_delivery_to",
            "failure_delivery_mode", "stagger_ms", "schedule_identity")} == {
            "declaration_key": "heartbeat:main", "display_name": "Heartbeat (main)", "owner_agent_id": "main",
            "owner_session_key": "agent:main:main", "trigger_script": "check.sh", "trigger_once": 1,
            "payload_tools_allow_json": '["read"]', "payload_tools_allow_is_default": 1, "delivery_thread_id": "topic-7",
            "delivery_thread_id_type": "string", "delivery_completion_mode": "webhook", "delivery_completion_to": "https://hook",
            "failure_delivery_channel": "",  # an explicit null is a cleared override: "" (absent would be NULL)
            "failure_delivery_to": "99", "failure_delivery_mode": None, "stagger_ms": 250,
            "schedule_identity": '{"version":1,"enabled":true,"schedule":{"kind":"cron","expr":"0 * * * *","staggerMs":250}}',
        }  # fmt: skip
        assert json.loads(row["job_json"])["trigger"] == {"script": "check.sh", "once": True}
        assert any("the config sets cron.store to another file" in line for line in result.notices)
    finally:
        environment.close()


def test_schedule_identity_matches_what_openclaw_2026_7_35_wrote():
    """Identities of the four jobs in the 2026.7.35 corpus database, recomputed from their job_json."""
    corpus = {
        '{"kind":"cron","expr":"0 9 * * *"}': '{"version":1,"enabled":true,"schedule":{"kind":"cron","expr":"0 9 * * *"}}',
        '{"kind":"every","everyMs":3600000,"anchorMs":1795997872210}':
            '{"version":1,"enabled":true,"schedule":{"kind":"every","everyMs":3600000,"anchorMs":1795997872210}}',
        '{"kind":"at","at":"2026-12-02T09:00:00.000Z"}': '{"version":1,"enabled":true,"schedule":{"kind":"at","at":"2026-12-02T09:00:00.000Z"}}',
    }  # fmt: skip
    for schedule, identity in corpus.items():
        assert schedule_identity({"enabled": True, "schedule": json.loads(schedule)}) == identity
    assert schedule_identity({"schedule": {"kind": "every", "everyMs": "60000"}}) == '{"version":1,"enabled":true,"schedule":{"kind":"every","everyMs":60000}}'
    assert schedule_identity({"schedule": "0 * * * *"}) is None


def test_jobs_inspect_counts_and_writes_nothing(state: Path):
    place_fixture(state, "jobs.json", "cron/jobs.json")
    before = tree_digest(state)
    inspection = inspect(JOBS, state, "cron/jobs.json")
    assert inspection.record_count == 3
    assert inspection.warnings == []
    assert inspection.details == {"store": "cron/jobs.json", "jobs": 3, "duplicates": []}
    assert tree_digest(state) == before
    assert not (state / "state").exists()


def test_legacy_shapes_are_repaired(env: Env, state: Path):
    place_fixture(state, "jobs-legacy.json", "cron/jobs.json")
    result = env.write(JOBS, "cron/jobs.json")
    assert result.records == 4
    assert env.count("cron_jobs") == 4
    assert result.report["duplicates_dropped"] == [{"job_id": "legacy-job-c", "index": 4, "kept_index": 2}]
    assert result.report["repairs"]["jobId"] == 1 and result.report["repairs"]["nullJob"] == 1

    summary, *rest = result.notices
    assert summary.startswith("cron/jobs.json: repaired legacy job shapes: ")
    for label in ("legacy jobId renamed to id", "numeric id stored as text", "string schedule converted", "schedule.cron renamed to expr",
                  "schedule kind canonicalised", "payload kind canonicalised", "top-level payload fields moved into payload",
                  "top-level delivery fields moved into delivery", "null entry skipped"):  # fmt: skip
        assert label in summary, label
    assert "cron/jobs.json: duplicate job id legacy-job-c at $.jobs[4] not imported; kept the newer copy at $.jobs[2]" in rest
    assert any("keeps legacy notify:true: cron.webhook is not set" in line for line in rest)

    # jobId + string schedule + top-level payload and delivery fields.
    a = env.job("legacy-job-a")
    assert (a["name"], a["schedule_kind"], a["schedule_expr"], a["session_target"], a["wake_mode"]) == (
        "legacy string schedule", "cron", "*/15 * * * *", "isolated", "now")  # fmt: skip
    assert (a["payload_kind"], a["payload_message"], a["payload_model"], a["payload_thinking"], a["payload_timeout_seconds"]) == (
        "agentTurn", "Poll the feed", "openai/gpt-5-mini", "off", 90)  # fmt: skip
    assert (a["delivery_mode"], a["delivery_channel"], a["delivery_to"], a["delivery_best_effort"]) == ("announce", "discord", "channel:123", 1)
    job_a = json.loads(a["job_json"])
    assert job_a["id"] == "legacy-job-a" and "jobId" not in job_a
    for legacy_field in ("message", "model", "thinking", "timeoutSeconds", "channel", "to", "bestEffortDeliver"):
        assert legacy_field not in job_a, legacy_field
    assert job_a["schedule"] == {"kind": "cron", "expr": "*/15 * * * *"}
    assert job_a["payload"] == {"kind": "agentTurn", "message": "Poll the feed", "model": "openai/gpt-5-mini", "thinking": "off", "timeoutSeconds": 90}

    # Numeric id, enum case, numeric-string everyMs, payload-level delivery hints (provider alias).
    b = env.job("12345")
    assert (b["name"], b["schedule_kind"], b["every_ms"], b["anchor_ms"]) == ("Ping", "every", 600000, 1771000000000)
    assert (b["session_target"], b["wake_mode"], b["payload_kind"]) == ("isolated", "now", "agentTurn")
    assert (b["delivery_mode"], b["delivery_channel"], b["delivery_to"]) == ("announce", "telegram", "77")
    job_b = json.loads(b["job_json"])
    assert job_b["id"] == "12345" and job_b["payload"] == {"kind": "AGENTTURN", "message": "Ping"} | {"kind": "agentTurn"}

    # schedule.cron, lower-case payload kind with message -> systemEvent text, delivery mode "deliver".
    c = env.job("legacy-job-c")
    assert (c["schedule_kind"], c["schedule_expr"], c["payload_kind"], c["payload_message"]) == ("cron", "0 7 * * *", "systemEvent", "Wake up")
    assert (c["enabled"], c["session_target"], c["wake_mode"], c["delivery_mode"], c["sort_order"]) == (1, "main", "next-heartbeat", "announce", 2)
    job_c = json.loads(c["job_json"])
    assert job_c["schedule"] == {"kind": "cron", "expr": "0 7 * * *"} and job_c["notify"] is True
    assert job_c["payload"] == {"kind": "systemEvent", "text": "Wake up"}

    # atMs without kind; top-level text -> systemEvent payload.
    d = env.job("legacy-job-d")
    assert (d["schedule_kind"], d["at"], d["payload_kind"], d["payload_message"]) == ("at", "2027-01-01T09:00:00.000Z", "systemEvent", "Top-level system text")
    assert json.loads(d["job_json"])["schedule"] == {"at": "2027-01-01T09:00:00.000Z", "kind": "at"}


def test_notify_moves_to_webhook_when_configured(state: Path):
    secret_hook = "https://hooks.example/cron?token=sk-SECRET-VALUE-123"
    environment = Env(state, config={"cron": {"webhook": secret_hook}})
    try:
        place(state, "cron/jobs.json", {"version": 1, "jobs": [
            {"id": "n1", "name": "n1", "notify": True, "schedule": "0 * * * *", "payload": {"kind": "systemEvent", "text": "x"}},
            {"id": "n2", "name": "n2", "notify": True, "schedule": "0 * * * *", "payload": {"kind": "agentTurn", "message": "y"},
             "delivery": {"mode": "announce", "channel": "slack"}},
            {"id": "n3", "name": "n3", "notify": False, "schedule": "0 * * * *", "payload": {"kind": "systemEvent", "text": "z"}},
        ]})  # fmt: skip
        result = environment.write(JOBS, "cron/jobs.json")
        n1 = environment.job("n1")
        assert (n1["delivery_mode"], n1["delivery_to"]) == ("webhook", secret_hook)
        assert "notify" not in json.loads(n1["job_json"])
        assert json.loads(environment.job("n2")["job_json"])["notify"] is True  # announce + notify: left for the user
        assert "notify" not in json.loads(environment.job("n3")["job_json"])
        text = json.dumps([result.notices, result.warnings, result.report])
        assert "SECRET" not in text and "hooks.example" not in text
        assert any("n2" in line and "migrate it by hand" in line for line in result.notices)
    finally:
        environment.close()


@pytest.mark.parametrize(
    ("updated", "kept_index"),
    [((1, 3, 2), 1), ((5, 5, None), 1), ((None, None, None), 2), ((7, None, 7), 2)],
    ids=["newest-wins", "tie-later-position", "no-clock-later-position", "tie-with-missing"],
)
def test_duplicate_ids_keep_newest(env: Env, state: Path, updated: tuple[int | None, ...], kept_index: int):
    jobs = []
    for index, clock in enumerate(updated):
        job = {"id": "dup", "name": f"copy-{index}", "schedule": "0 * * * *", "payload": {"kind": "systemEvent", "text": f"t{index}"}}
        if clock is not None:
            job["updatedAtMs"] = clock
        jobs.append(job)
    jobs.append({"id": "other", "name": "other", "schedule": "0 * * * *", "payload": {"kind": "systemEvent", "text": "o"}})
    place(state, "cron/jobs.json", {"version": 1, "jobs": jobs})
    result = env.write(JOBS, "cron/jobs.json")
    assert result.records == 2
    row = env.job("dup")
    assert (row["name"], row["sort_order"]) == (f"copy-{kept_index}", kept_index)
    dropped = sorted({0, 1, 2} - {kept_index})
    duplicate_lines = [n for n in result.notices if "duplicate job id" in n]
    assert duplicate_lines == [
        f"cron/jobs.json: duplicate job id dup at $.jobs[{i}] not imported; kept the newer copy at $.jobs[{kept_index}]" for i in dropped
    ]
    assert inspect(JOBS, state, "cron/jobs.json").details["duplicates"] == ["dup", "dup"]


def test_reimport_upserts_and_keeps_other_rows(env: Env, state: Path):
    env.insert_job("kept-job", "k", 1)
    place_fixture(state, "jobs.json", "cron/jobs.json")
    env.write(JOBS, "cron/jobs.json")
    changed = json.loads((CRON_FIXTURES / "jobs.json").read_text())
    changed["jobs"][0]["name"] = "daily-digest-renamed"
    changed["jobs"][0]["updatedAtMs"] += 1
    del changed["jobs"][1]
    place(state, "cron/jobs.json", changed, mtime_ms=MTIME + 1)
    result = env.write(JOBS, "cron/jobs.json")
    assert result.records == 2
    assert env.job(JOB1)["name"] == "daily-digest-renamed"
    assert env.job(JOB2)["name"] == "hourly-check"  # never truncated: a job missing from the new file stays
    assert env.job("kept-job")["name"] == "k"
    assert env.count("cron_jobs") == 4


def test_definition_reimport_keeps_imported_runtime_state(env: Env, state: Path):
    place_fixture(state, "jobs.json", "cron/jobs.json")
    env.write(JOBS, "cron/jobs.json")
    env.retire("cron/jobs.json")
    place_fixture(state, "jobs-state.json", "cron/jobs-state.json")
    env.write(STATE, "cron/jobs-state.json")
    before = env.job(JOB2)
    assert before["next_run_at_ms"] == 1772203600000
    # The split-era jobs.json ("state": {}) comes back, e.g. restored from git with a newer mtime.
    place_fixture(state, "jobs.json", "cron/jobs.json", mtime_ms=1772300000000)
    env.write(JOBS, "cron/jobs.json")
    after = env.job(JOB2)
    for column in ("state_json", "next_run_at_ms", "last_run_status", "consecutive_skipped", "runtime_updated_at_ms", "schedule_identity"):
        assert after[column] == before[column], column


def test_newer_database_row_is_kept(env: Env, state: Path):
    env.insert_job(JOB1, "live", 1772100000001)
    place_fixture(state, "jobs.json", "cron/jobs.json")
    result = env.write(JOBS, "cron/jobs.json")
    assert result.records == 2
    assert result.report["kept_newer_database_rows"] == [JOB1]
    assert f"cron/jobs.json: job {JOB1}: the database row is newer; kept it" in result.notices
    assert env.job(JOB1)["name"] == "live"


def test_other_store_keys_are_reported(env: Env, state: Path):
    env.insert_job("x", "x", 1, store_key="/home/u/.openclaw/cron/jobs.json")
    place_fixture(state, "jobs.json", "cron/jobs.json")
    result = env.write(JOBS, "cron/jobs.json")
    assert any("already holds 1 row(s) under other store keys" in line for line in result.notices)
    assert not any("/home/u" in line for line in result.notices)


def test_bare_array_and_empty_store(env: Env, state: Path):
    place(state, "cron/jobs.json", [{"id": "b1", "name": "b1", "schedule": "5 4 * * *", "payload": {"kind": "systemEvent", "text": "x"}}])
    result = env.write(JOBS, "cron/jobs.json")
    assert result.records == 1 and result.report["bare_array"] is True
    assert "cron/jobs.json: bare jobs array (no {version, jobs} wrapper); read as version 1" in result.notices
    place(state, "cron/jobs.json", {"version": 1, "jobs": []})
    empty = env.write(JOBS, "cron/jobs.json")
    assert (empty.records, empty.expected, empty.notices) == (0, [], [])
    assert inspect(JOBS, state, "cron/jobs.json").record_count == 0


def test_missing_id_gets_a_deterministic_id(env: Env, state: Path):
    place(state, "cron/jobs.json", {"jobs": [{"name": "anon", "schedule": "0 1 * * *", "payload": {"kind": "systemEvent", "text": "x"}}]})
    first = env.write(JOBS, "cron/jobs.json")
    second = env.write(JOBS, "cron/jobs.json")
    assert env.count("cron_jobs") == 1
    job_id = env.conn.execute("SELECT job_id FROM cron_jobs").fetchone()[0]
    assert job_id.startswith("cron-migrated-0-") and len(job_id) == len("cron-migrated-0-") + 64
    assert first.notices == second.notices
    assert any(f"$.jobs[0] has no id; imported as {job_id}" in line for line in first.notices)


def _job(**fields: Any) -> dict[str, Any]:
    return {"id": "j", "name": "j", "schedule": "0 * * * *", "payload": {"kind": "systemEvent", "text": "x"}} | fields


BAD_JOB_FILES = {
    "invalid-json": (b'{"version": 1, "jobs": [', "invalid JSON5"),
    "empty-file": (b"  \n", "file is empty"),
    "jobs-not-array": (json.dumps({"version": 1, "jobs": {"a": 1}}).encode(), "$.jobs: expected array, found object"),
    "no-jobs-key": (json.dumps({"version": 1}).encode(), "$: missing required property"),
    "job-not-object": (json.dumps({"jobs": [7]}).encode(), "$.jobs[0]: expected object or null, found integer"),
    "enabled-wrong-type": (json.dumps({"jobs": [_job(enabled="yes")]}).encode(), "$.jobs[0].enabled: expected boolean or null, found string"),
    "id-wrong-type": (json.dumps({"jobs": [_job(id=True)]}).encode(), "$.jobs[0].id: expected string or number or null, found boolean"),
    "schedule-missing": (json.dumps({"jobs": [{"id": "j", "payload": {"kind": "systemEvent", "text": "x"}}]}).encode(), "$.jobs[0]: missing required property"),
    "schedule-number": (json.dumps({"jobs": [_job(schedule=5)]}).encode(), "$.jobs[0].schedule: expected string or object, found integer"),
    "schedule-unknown-kind": (json.dumps({"jobs": [_job(schedule={"kind": "weekly", "day": 1})]}).encode(), "$.jobs[0].schedule.kind: unsupported schedule kind"),
    "schedule-no-shape": (json.dumps({"jobs": [_job(schedule={"tz": "UTC"})]}).encode(), "$.jobs[0].schedule: schedule has no kind"),
    "every-without-ms": (json.dumps({"jobs": [_job(schedule={"kind": "every"})]}).encode(), "$.jobs[0].schedule.everyMs: every schedule needs a positive everyMs"),
    "every-zero": (json.dumps({"jobs": [_job(schedule={"kind": "every", "everyMs": 0})]}).encode(), "positive everyMs"),
    "cron-without-expr": (json.dumps({"jobs": [_job(schedule={"kind": "cron", "expr": "  "})]}).encode(), "$.jobs[0].schedule.expr: cron schedule needs a non-empty expr"),
    "at-not-iso": (json.dumps({"jobs": [_job(schedule={"kind": "at", "at": "next tuesday"})]}).encode(), "$.jobs[0].schedule.at: not an ISO 8601 time"),
    "at-out-of-range": (json.dumps({"jobs": [_job(schedule={"kind": "at", "atMs": 1e20})]}).encode(), "$.jobs[0].schedule.atMs: time is out of range"),
    "payload-unknown-kind": (json.dumps({"jobs": [_job(payload={"kind": "teleport", "message": "x"})]}).encode(), "$.jobs[0].payload.kind: unsupported payload kind"),
    "payload-missing": (json.dumps({"jobs": [{"id": "j", "schedule": "0 * * * *"}]}).encode(), "$.jobs[0]: job has no payload"),
    "agent-turn-no-message": (json.dumps({"jobs": [_job(payload={"kind": "agentTurn", "model": "m"})]}).encode(), "$.jobs[0].payload.message: agentTurn payload needs a message"),
    "nan": (b'{"jobs": [{"id": "j", "createdAtMs": NaN, "schedule": "0 * * * *", "payload": {"kind": "systemEvent", "text": "x"}}]}', "$.jobs[0].createdAtMs: non-finite number"),
    "infinity-json5": (b"{jobs: [{id: 'j', schedule: {kind: 'every', everyMs: Infinity}, payload: {kind: 'systemEvent', text: 'x'}}]}", "$.jobs[0].schedule.everyMs: non-finite number"),
    "bad-utf8": (b'{"jobs": ["\xff"]}', "invalid UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD_JOB_FILES))
def test_bad_jobs_file_is_one_clear_error_and_no_rows(env: Env, state: Path, case: str):
    data, needle = BAD_JOB_FILES[case]
    place(state, "cron/jobs.json", data)
    with pytest.raises(SourceError) as plan_error:
        inspect(JOBS, state, "cron/jobs.json")
    assert_one_line_error(plan_error, "cron/jobs.json", needle)
    with pytest.raises(SourceError) as apply_error:
        env.write(JOBS, "cron/jobs.json")
    assert str(apply_error.value) == str(plan_error.value)
    assert env.count("cron_jobs") == 0


def test_error_messages_never_echo_values(env: Env, state: Path):
    place(state, "cron/jobs.json", {"jobs": [_job(delivery={"mode": "webhook", "to": 12345678})]})
    with pytest.raises(SourceError) as error:
        env.write(JOBS, "cron/jobs.json")
    assert "12345678" not in str(error.value)
    assert str(error.value) == "cron/jobs.json: $.jobs[0].delivery.to: expected string or null, found integer"


def test_foreign_table_missing_a_column_is_refused(tmp_path: Path):
    state = make_state(tmp_path)
    db = state / "state" / "openclaw.sqlite"
    db.parent.mkdir(parents=True)
    conn = open_db(db)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("CREATE TABLE cron_jobs (store_key TEXT NOT NULL, job_id TEXT NOT NULL, job_json TEXT NOT NULL, state_json TEXT NOT NULL DEFAULT '{}', updated_at INTEGER NOT NULL, PRIMARY KEY (store_key, job_id))")
    conn.commit()
    conn.close()
    environment = Env(state)
    try:
        place_fixture(state, "jobs.json", "cron/jobs.json")
        with pytest.raises(SchemaError, match=r"^existing table cron_jobs lacks column\(s\) declaration_key, display_name, .*, name, .* that statekit writes; it was left unaltered$"):
            environment.write(JOBS, "cron/jobs.json")
        assert environment.count("cron_jobs") == 0
    finally:
        environment.close()


def test_foreign_not_null_column_is_a_clear_schema_error(tmp_path: Path):
    state = make_state(tmp_path)
    environment = Env(state)
    environment.close()
    conn = open_db(state / "state" / "openclaw.sqlite")
    conn.execute("ALTER TABLE cron_jobs ADD COLUMN owner_token TEXT NOT NULL DEFAULT 'x'")  # allowed with a default...
    conn.execute("DROP TABLE cron_run_logs")
    conn.execute("CREATE TABLE cron_run_logs (store_key TEXT NOT NULL, job_id TEXT NOT NULL, seq INTEGER NOT NULL, ts INTEGER, status TEXT, error TEXT, summary TEXT, diagnostics_summary TEXT, delivery_status TEXT, delivery_error TEXT, delivered INTEGER, session_id TEXT, session_key TEXT, run_id TEXT, run_at_ms INTEGER, duration_ms INTEGER, next_run_at_ms INTEGER, model TEXT, provider TEXT, total_tokens INTEGER, entry_json TEXT NOT NULL, created_at INTEGER NOT NULL, trace_id TEXT NOT NULL, PRIMARY KEY (store_key, job_id, seq))")
    conn.commit()
    conn.close()
    environment = Env(state)
    try:
        place_fixture(state, "jobs.json", "cron/jobs.json")
        assert environment.write(JOBS, "cron/jobs.json").records == 3  # an extra NOT NULL column with a default is fine
        place_fixture(state, f"runs/{JOB1}.jsonl", RUN_LOG)
        with pytest.raises(SchemaError) as error:
            environment.write(RUNS, RUN_LOG)
        assert str(error.value) == "existing table cron_run_logs requires column trace_id (NOT NULL) that statekit does not fill; it was left unaltered"
        assert environment.count("cron_run_logs") == 0
    finally:
        environment.close()


# --- jobs-state.json -----------------------------------------------------------------


def test_state_updates_existing_jobs(env: Env, state: Path):
    place_fixture(state, "jobs.json", "cron/jobs.json")
    env.write(JOBS, "cron/jobs.json")
    env.retire("cron/jobs.json")
    place_fixture(state, "jobs-state.json", "cron/jobs-state.json")
    assert inspect(STATE, state, "cron/jobs-state.json").record_count == 3
    result = env.write(STATE, "cron/jobs-state.json")
    assert result.records == 2
    assert result.warnings == ["cron/jobs-state.json: state for job deleted-job-0000 not imported: no such job in cron_jobs (the retired file keeps it)"]
    assert result.report == {
        "store": "cron/jobs.json",
        "entries_in_file": 3,
        "applied": 2,
        "orphan_job_ids": ["deleted-job-0000"],
        "kept_newer_database_state": [],
        "stale_next_run_dropped": [],
    }
    assert env.count("cron_jobs") == 3  # no job invented

    two = env.job(JOB2)
    assert {c: two[c] for c in (
        "next_run_at_ms", "running_at_ms", "last_run_at_ms", "last_run_status", "last_error", "last_duration_ms", "consecutive_errors",
        "consecutive_skipped", "schedule_error_count", "last_delivery_status", "last_delivery_error", "last_delivered",
        "last_failure_alert_at_ms", "runtime_updated_at_ms", "schedule_identity", "updated_at")} == {
        "next_run_at_ms": 1772203600000, "running_at_ms": None, "last_run_at_ms": 1772200000000, "last_run_status": "ok",
        "last_error": None, "last_duration_ms": 5100, "consecutive_errors": 0, "consecutive_skipped": 1, "schedule_error_count": None,
        "last_delivery_status": "not-requested", "last_delivery_error": None, "last_delivered": 1, "last_failure_alert_at_ms": None,
        "runtime_updated_at_ms": 1772200000000,
        "schedule_identity": '{"version":1,"enabled":false,"schedule":{"kind":"every","everyMs":3600000,"anchorMs":1772000000000}}',
        "updated_at": 1772200000000,
    }  # fmt: skip
    assert json.loads(two["state_json"])["lastFailureNotificationDeliveryStatus"] == "not-requested"  # unprojected fields kept
    assert two["name"] == "hourly-check" and two["enabled"] == 0  # definition columns untouched

    three = env.job(JOB3)
    at_identity = '{"version":1,"enabled":true,"schedule":{"kind":"at","at":"2026-12-02T09:00:00.000Z"}}'
    assert (three["state_json"], three["next_run_at_ms"], three["schedule_identity"]) == ('{"nextRunAtMs":1796202000000}', 1796202000000, at_identity)
    # Both clocks take the entry's updatedAtMs, as OpenClaw's resolveUpdatedAtMs does.
    assert (three["runtime_updated_at_ms"], three["updated_at"]) == (1772000000000, 1772000000000)

    one = env.job(JOB1)
    assert one["last_error"] == "provider timeout"  # no entry for it: inline state stays


def test_state_for_other_scheduling_inputs_drops_the_next_run(env: Env, state: Path):
    """A sidecar entry written for another schedule (its scheduleIdentity differs): nextRunAtMs is dropped, as OpenClaw does."""
    place_fixture(state, "jobs.json", "cron/jobs.json")
    env.write(JOBS, "cron/jobs.json")
    env.retire("cron/jobs.json")
    old_identity = '{"version":1,"enabled":false,"schedule":{"kind":"every","everyMs":60000}}'
    place(state, "cron/jobs-state.json", {"version": 1, "jobs": {
        JOB2: {"updatedAtMs": 1772200000000, "scheduleIdentity": old_identity, "state": {"nextRunAtMs": 1772200060000, "lastRunStatus": "ok"}},
        JOB3: {"state": {"nextRunAtMs": 1796202000000}},
    }})  # fmt: skip
    result = env.write(STATE, "cron/jobs-state.json")
    assert result.report["stale_next_run_dropped"] == [JOB2]
    assert "cron/jobs-state.json: 1 job(s) had a next run computed for an older schedule; dropped it (OpenClaw computes it again)" in result.notices
    two = env.job(JOB2)
    assert (two["state_json"], two["next_run_at_ms"], two["last_run_status"]) == ('{"lastRunStatus":"ok"}', None, "ok")
    assert two["schedule_identity"] == '{"version":1,"enabled":false,"schedule":{"kind":"every","everyMs":3600000,"anchorMs":1772000000000}}'
    three = env.job(JOB3)  # no updatedAtMs in the entry: the job's own clock (createdAtMs) stays
    assert (three["next_run_at_ms"], three["runtime_updated_at_ms"], three["updated_at"]) == (1796202000000, 1772000000000, 1772000000000)


def test_state_waits_for_pending_jobs_json(env: Env, state: Path):
    place_fixture(state, "jobs.json", "cron/jobs.json")
    place_fixture(state, "jobs-state.json", "cron/jobs-state.json")
    assert inspect(STATE, state, "cron/jobs-state.json").record_count == 3  # the plan does not mind
    with pytest.raises(SourceError) as error:
        env.write(STATE, "cron/jobs-state.json")
    assert str(error.value) == "cron/jobs-state.json: left in place: cron/jobs.json has not been imported yet (its jobs must exist first)"


def test_state_older_than_database_is_kept(env: Env, state: Path):
    place_fixture(state, "jobs.json", "cron/jobs.json")
    env.write(JOBS, "cron/jobs.json")
    env.retire("cron/jobs.json")
    place(state, "cron/jobs-state.json", {"version": 1, "jobs": {JOB1: {"updatedAtMs": 1772099999999, "state": {"nextRunAtMs": 1}}}})
    result = env.write(STATE, "cron/jobs-state.json")
    assert (result.records, result.report["kept_newer_database_state"]) == (0, [JOB1])
    assert f"cron/jobs-state.json: job {JOB1}: the database holds newer runtime state; kept it" in result.notices
    assert env.job(JOB1)["next_run_at_ms"] == 1772186400000


BAD_STATE_FILES = {
    "invalid-json": (b'{"version":1,"jobs":{', "invalid JSON5"),
    "jobs-array": (json.dumps({"version": 1, "jobs": []}).encode(), "$.jobs: expected object, found array"),
    "entry-not-object": (json.dumps({"version": 1, "jobs": {"a": 5}}).encode(), "$.jobs.a: expected object, found integer"),
    "updated-wrong-type": (json.dumps({"version": 1, "jobs": {"a": {"updatedAtMs": "soon"}}}).encode(), "$.jobs.a.updatedAtMs: expected number or null, found string"),
    "state-field-wrong-type": (json.dumps({"jobs": {"a": {"state": {"nextRunAtMs": "x"}}}}).encode(), "$.jobs.a.state.nextRunAtMs: expected number or null, found string"),
    "empty-job-id": (json.dumps({"jobs": {"": {}}}).encode(), "violates minLength 1"),
    "nan": (b'{"version":1,"jobs":{"a":{"updatedAtMs":NaN}}}', "$.jobs.a.updatedAtMs: non-finite number"),
}


@pytest.mark.parametrize("case", sorted(BAD_STATE_FILES))
def test_bad_state_file_is_one_clear_error(env: Env, state: Path, case: str):
    data, needle = BAD_STATE_FILES[case]
    place_fixture(state, "jobs.json", "cron/jobs.json")
    env.write(JOBS, "cron/jobs.json")
    env.retire("cron/jobs.json")
    before = [dict(r) for r in env.conn.execute("SELECT * FROM cron_jobs ORDER BY job_id")]
    place(state, "cron/jobs-state.json", data)
    with pytest.raises(SourceError) as error:
        env.write(STATE, "cron/jobs-state.json")
    assert_one_line_error(error, "cron/jobs-state.json", needle)
    assert [dict(r) for r in env.conn.execute("SELECT * FROM cron_jobs ORDER BY job_id")] == before


# --- runs/<jobId>.jsonl --------------------------------------------------------------


def test_run_log_rows_column_by_column(env: Env, state: Path):
    place_fixture(state, f"runs/{JOB1}.jsonl", RUN_LOG)
    assert inspect(RUNS, state, RUN_LOG).record_count == 3
    result = env.write(RUNS, RUN_LOG)
    assert result.records == 3
    assert result.expected == []  # derived by the writer from the rows it inserted for this job
    assert env.expectations == [("global", "cron_run_logs", '"job_id" = ? AND "store_key" = ?', (JOB1, env.store_key), 3)]
    assert result.report == {"store": "cron/jobs.json", "job_id": JOB1, "rows": 3, "skipped_lines": {}, "replaced_rows": 0, "job_known": False}
    lines = [line for line in (CRON_FIXTURES / "runs" / f"{JOB1}.jsonl").read_text().splitlines() if line.strip()]
    first, second, third = env.runs(JOB1)
    assert first == {
        "store_key": env.store_key, "job_id": JOB1, "seq": 1, "ts": 1772013600500, "status": "ok", "error": None, "summary": "Digest sent",
        "diagnostics_summary": None, "delivery_status": "delivered", "delivery_error": None, "delivered": 1,
        "session_id": "5e1c0a2e-0000-4000-8000-000000000001",
        "session_key": f"agent:main:cron:{JOB1}:run:5e1c0a2e-0000-4000-8000-000000000001",
        "run_id": "sched:0b7c6c1e:1772013600000", "run_at_ms": 1772013600000, "duration_ms": 45000, "next_run_at_ms": 1772100000000,
        "model": "claude-sonnet-4", "provider": "anthropic", "total_tokens": 8400, "entry_json": lines[0], "created_at": 1772013600500,
    }  # fmt: skip
    assert (second["seq"], second["status"], second["error"], second["diagnostics_summary"]) == (2, "error", "provider timeout", "1 provider timeout")
    # Only usage.total_tokens and diagnostics.summary are projected, as 2026.7.35's bindCronRunLogRow does;
    # the other spellings stay in entry_json (the line itself, byte for byte).
    assert (second["delivery_error"], second["delivered"], second["total_tokens"], second["entry_json"]) == ("chat not found", 0, None, lines[1])
    assert (third["seq"], third["diagnostics_summary"], third["total_tokens"], third["run_at_ms"], third["entry_json"]) == (3, None, None, None, lines[2])


def test_run_log_reimport_replaces_rows_and_knows_the_job(env: Env, state: Path):
    place_fixture(state, "jobs.json", "cron/jobs.json")
    env.write(JOBS, "cron/jobs.json")
    place_fixture(state, f"runs/{JOB1}.jsonl", RUN_LOG)
    env.write(RUNS, RUN_LOG)
    place(state, RUN_LOG, b'{"ts":5,"jobId":"%s","action":"finished","status":"ok"}\n' % JOB1.encode())
    place(state, f"cron/runs/{JOB2}.jsonl", b'{"ts":6,"jobId":"%s","action":"finished","status":"ok"}\n' % JOB2.encode())
    env.write(RUNS, f"cron/runs/{JOB2}.jsonl")
    result = env.write(RUNS, RUN_LOG)
    assert result.report == {"store": "cron/jobs.json", "job_id": JOB1, "rows": 1, "skipped_lines": {}, "replaced_rows": 3, "job_known": True}
    assert [(r["seq"], r["ts"]) for r in env.runs(JOB1)] == [(1, 5)]
    assert [(r["seq"], r["ts"]) for r in env.runs(JOB2)] == [(1, 6)]  # other jobs' rows untouched


def test_run_log_keeps_only_lines_openclaw_keeps(env: Env, state: Path):
    """parseCronRunLogEntryObject (2026.7.35, 2026.9.6) drops these lines; 9.6's upgrade would drop such rows."""
    lines = [
        b'\xef\xbb\xbf{"ts":1000,"jobId":"j9","action":"finished","status":"ok"}',
        b'{"jobId":"j9","action":"finished","status":"ok","runAtMs":1000}',  # no ts
        b'{"ts":1001,"jobId":"zz","action":"finished","status":"ok"}',  # another job
        b'{"ts":1002,"jobId":"j9","action":"started"}',  # not a finished run
        b'{"ts":1003,"action":"finished"}',  # no jobId
        b'{"ts":1004.5,"jobId":"j9","action":"finished"}',  # not epoch ms
        b'{"ts":1005,"jobId":"j9","action":"finished","status":"error","sessionId":"  ","model":" "}',
    ]
    place(state, "cron/runs/j9.jsonl", b"\r\n".join(lines) + b"\r\n\r\n")
    notice = (
        "cron/runs/j9.jsonl: 5 line(s) not imported, as OpenClaw skips them (1 not a finished run (action is not \"finished\"), "
        "1 no jobId, 1 names another jobId, 2 no integer ts (epoch ms)); the retired copy keeps them"
    )
    inspection = inspect(RUNS, state, "cron/runs/j9.jsonl")
    assert (inspection.record_count, inspection.warnings) == (2, [notice])
    result = env.write(RUNS, "cron/runs/j9.jsonl")
    assert result.notices == [notice]
    assert result.report["skipped_lines"] == {"action": 1, "jobId": 1, "otherJob": 1, "ts": 2}
    first, second = env.runs("j9")
    assert (first["seq"], first["ts"], first["created_at"], first["entry_json"]) == (1, 1000, 1000, lines[0][3:].decode())
    assert (second["seq"], second["ts"], second["status"], second["session_id"], second["model"]) == (2, 1005, "error", None, None)


def test_empty_run_log(env: Env, state: Path):
    place(state, "cron/runs/j0.jsonl", b"\n \n")
    result = env.write(RUNS, "cron/runs/j0.jsonl")
    assert (result.records, result.expected, env.expectations) == (0, [], [])


BAD_RUN_LOGS = {
    "malformed-line": (b'{"ts":1,"jobId":"j"}\n\n{"ts":2,"jobId":\n{"ts":3}\n', 3, "invalid JSON: Expecting value"),
    "truncated-last-line": (b'{"ts":1,"jobId":"j"}\n{"ts":2,"job', 2, "invalid JSON"),
    "not-an-object": (b'{"ts":1}\n[1,2]\n', 2, "expected object, found array"),
    "ts-wrong-type": (b'{"ts":"yesterday","jobId":"j"}\n', 1, "$.ts: expected number or null, found string"),
    "usage-wrong-type": (b'{"ts":1,"usage":{"total_tokens":"many"}}\n', 1, "$.usage.total_tokens: expected number or null, found string"),
    "nan": (b'{"ts":1}\n{"ts":NaN}\n', 2, "invalid JSON: non-finite number NaN"),
    "bad-utf8": (b'{"ts":1,"summary":"\xc3"}\n', 1, "invalid UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD_RUN_LOGS))
def test_bad_run_log_fails_whole_file_and_keeps_old_rows(env: Env, state: Path, case: str):
    place(state, "cron/runs/j.jsonl", b'{"ts":9,"jobId":"j","action":"finished","status":"ok"}\n')
    env.write(RUNS, "cron/runs/j.jsonl")
    data, line, needle = BAD_RUN_LOGS[case]
    place(state, "cron/runs/j.jsonl", data)
    with pytest.raises(SourceError) as plan_error:
        inspect(RUNS, state, "cron/runs/j.jsonl")
    assert_one_line_error(plan_error, f"cron/runs/j.jsonl:{line}: ", needle)
    with pytest.raises(SourceError) as apply_error:
        env.write(RUNS, "cron/runs/j.jsonl")
    assert str(apply_error.value) == str(plan_error.value)
    assert [(r["seq"], r["ts"]) for r in env.runs("j")] == [(1, 9)]  # the earlier import is intact


def test_bad_run_log_leaves_no_partial_rows_even_without_caller_rollback(env: Env, state: Path):
    place(state, "cron/runs/j.jsonl", b'{"ts":1}\n{"ts":2}\n{oops\n')
    source = Source(state, "cron/runs/j.jsonl")
    env.conn.execute("BEGIN IMMEDIATE")
    with open(source.path, "rb") as raw, pytest.raises(SourceError):
        RUNS.write(source, HashingReader(raw), env.ctx)
    assert env.count("cron_run_logs") == 0  # savepoint rolled back inside the still-open transaction
    env.conn.execute("COMMIT")


class _LinesOnly:
    """A handle that can only be iterated: proves the run log is streamed, never read whole."""

    def __init__(self, raw) -> None:
        self._raw = raw
        self.lines_read = 0

    def __iter__(self):
        for line in self._raw:
            self.lines_read += 1
            yield line

    def read(self, *args):  # pragma: no cover - must not be called
        raise AssertionError("run logs must be streamed line by line")

    readline = read


def test_run_log_is_streamed(env: Env, state: Path):
    lines = b"".join(b'{"ts":%d,"jobId":"big","action":"finished","status":"ok","summary":"%s"}\n' % (i, b"x" * 200) for i in range(5000))
    place(state, "cron/runs/big.jsonl", lines)
    source = Source(state, "cron/runs/big.jsonl")
    for step in ("inspect", "write"):
        with open(source.path, "rb") as raw:
            handle = _LinesOnly(raw)
            if step == "inspect":
                assert RUNS.inspect(source, handle).record_count == 5000
            else:
                env.conn.execute("BEGIN IMMEDIATE")
                assert RUNS.write(source, handle, env.ctx).records == 5000
                env.conn.execute("COMMIT")
            assert handle.lines_read == 5000
    assert env.conn.execute("SELECT min(seq), max(seq), count(*) FROM cron_run_logs WHERE job_id = 'big'").fetchone()[:] == (1, 5000, 5000)


# --- jobs.json.bak -------------------------------------------------------------------


def test_backup_copy_is_counted_never_fatal(state: Path):
    place_fixture(state, "jobs.json", "cron/jobs.json.bak")
    assert (inspect(BACKUP, state, "cron/jobs.json.bak").record_count, inspect(BACKUP, state, "cron/jobs.json.bak").warnings) == (3, [])
    place(state, "cron/jobs.json.bak.1", b"{ truncated")
    broken = inspect(BACKUP, state, "cron/jobs.json.bak.1")
    assert broken.record_count == 0 and len(broken.warnings) == 1 and "retained as is" in broken.warnings[0]
    place(state, "cron/jobs.json.bak.2", b'{"version": 1}')
    assert inspect(BACKUP, state, "cron/jobs.json.bak.2").record_count == 0


# --- end to end through the apply loop ------------------------------------------------


def _fixture_state_dir(tmp_path: Path) -> Path:
    state = make_state(tmp_path)
    place_fixture(state, "jobs.json", "cron/jobs.json")
    place_fixture(state, "jobs-state.json", "cron/jobs-state.json")
    place_fixture(state, "jobs.json", "cron/jobs.json.bak")
    (state / "cron" / "runs").mkdir()
    shutil.copy2(CRON_FIXTURES / "runs" / f"{JOB1}.jsonl", state / RUN_LOG)
    return state


def test_migrate_end_to_end(tmp_path: Path):
    """plan -> migrate through the real CLI: rows, receipts, byte-exact retirement, the .bak retained, rerun idempotent."""
    state = _fixture_state_dir(tmp_path)
    before = tree_digest(state)
    plan = run_cli("plan", "--state-dir", state, "--json")
    assert plan.returncode in (0, 3), plan.stderr
    assert tree_digest(state) == before
    planned = {s["path"] if "path" in s else s["rel"]: s for s in json.loads(plan.stdout)["sources"] if s["kind"].startswith("cron")}
    assert {rel: (s["kind"], s["action"], s["record_count"]) for rel, s in planned.items()} == {
        "cron/jobs.json": ("cron-jobs", "import", 3),
        "cron/jobs-state.json": ("cron-state", "import", 3),
        RUN_LOG: ("cron-runs", "import", 3),
        "cron/jobs.json.bak": ("cron-jobs-backup", "retain", None),
    }
    done = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--json")
    assert done.returncode == 3, done.stderr  # warning: the orphan state entry
    report = json.loads(done.stdout)
    outcomes = {o["path"]: o for o in report["sources"]}
    assert {rel: (outcomes[rel]["status"], outcomes[rel]["records"]) for rel in ("cron/jobs.json", "cron/jobs-state.json", RUN_LOG)} == {
        "cron/jobs.json": ("imported", 3),
        "cron/jobs-state.json": ("imported", 2),
        RUN_LOG: ("imported", 3),
    }
    assert all(outcomes[rel]["retired_to"] for rel in ("cron/jobs.json", "cron/jobs-state.json", RUN_LOG))
    assert report["status"] == "warning" and any("deleted-job-0000" in w for w in report["warnings"])
    assert not (state / "cron" / "jobs.json").exists() and not (state / RUN_LOG).exists()
    assert (state / "cron" / "jobs.json.bak").exists()
    migrated = state / ".statekit" / "migrated" / report["run_id"] / "cron"
    assert (migrated / "jobs.json").read_bytes() == (CRON_FIXTURES / "jobs.json").read_bytes()
    db = global_db(state)
    assert rows(db, "SELECT count(*) FROM cron_jobs WHERE store_key = ?", (f"{state}/cron/jobs.json",)) == [(3,)]
    assert rows(db, "SELECT count(*) FROM cron_run_logs WHERE store_key = ?", (f"{state}/cron/jobs.json",)) == [(3,)]
    assert rows(db, "SELECT next_run_at_ms FROM cron_jobs WHERE job_id = ?", (JOB2,)) == [(1772203600000,)]
    assert rows(db, "SELECT count(*) FROM cron_run_logs WHERE job_id = ?", (JOB1,)) == [(3,)]
    receipts = dict(rows(db, "SELECT source_path, status FROM migration_sources"))
    assert receipts == {"cron/jobs.json": "completed", "cron/jobs-state.json": "completed", RUN_LOG: "completed"}
    dump = db_dump(db)
    again = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--json")
    assert again.returncode in (0, 3), again.stderr
    assert {k: v for k, v in db_dump(db).items() if k.startswith("cron")} == {k: v for k, v in dump.items() if k.startswith("cron")}


def test_out_of_range_numbers_do_not_crash_the_import(env: Env, state: Path):
    place(state, "cron/jobs.json", {"jobs": [_job(id="big", createdAtMs=1e30, updatedAtMs=2, state={"nextRunAtMs": 1e25, "consecutiveErrors": 3})]})
    result = env.write(JOBS, "cron/jobs.json")
    row = env.job("big")
    assert (result.records, row["created_at_ms"], row["next_run_at_ms"], row["consecutive_errors"]) == (1, 2, None, 3)
    assert json.loads(row["state_json"])["nextRunAtMs"] == 1e25  # the value itself is kept in the JSON
    place(state, "cron/jobs.json", {"jobs": [_job(schedule={"kind": "every", "everyMs": 1e300})]})
    with pytest.raises(SourceError, match=r"\$\.jobs\[0\]\.schedule\.everyMs: every schedule needs a positive everyMs$"):
        env.write(JOBS, "cron/jobs.json")
    place(state, "cron/runs/big.jsonl", b'{"ts":1e30,"jobId":"big","action":"finished"}\n{"ts":7,"jobId":"big","action":"finished","durationMs":-1e300}\n')
    result = env.write(RUNS, "cron/runs/big.jsonl")
    assert result.report["skipped_lines"] == {"ts": 1}  # beyond what a JavaScript Date holds
    assert [(r["ts"], r["duration_ms"], r["created_at"]) for r in env.runs("big")] == [(7, None, 7)]
