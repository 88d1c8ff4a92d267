"""Session-directory artifacts through the real apply loop: trajectories, checkpoints, prompt cache, kept/dropped files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from helpers import FIXTURES, agent_db, global_db, make_state, rows, run_cli
from statekit.values import js_json as js_stringify
from statekit.migrate.apply import MigrateOptions, migrate

FIX = FIXTURES / "readers" / "sessions-artifacts"
SESSIONS = "agents/main/sessions"
TRAJ = f"{SESSIONS}/s-traj.trajectory.jsonl"
POINTER = f"{SESSIONS}/s-traj.trajectory-path.json"
LIVE = f"{SESSIONS}/s-live.jsonl"
CP_PREFIX_ID = "11111111-2222-4333-8444-555555555555"
CP_COPY_ID = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
CP_PREFIX = f"{SESSIONS}/s-live.checkpoint.{CP_PREFIX_ID}.jsonl"
CP_COPY = f"{SESSIONS}/s-live.checkpoint.{CP_COPY_ID}.jsonl"
MTIME_MS = 1_780_000_000_000


def fixture_files(*names: str, into: str = SESSIONS) -> dict[str, bytes]:
    return {f"{into}/{name}": (FIX / name).read_bytes() for name in names}


def build(tmp_path: Path, files: dict[str, Any]) -> Path:
    state = make_state(tmp_path, files)
    for rel in files:
        os.utime(state / rel, ns=(MTIME_MS * 1_000_000, MTIME_MS * 1_000_000))
    return state


def receipt(state: Path, rel: str) -> tuple[str, int, str, dict[str, Any]]:
    found = rows(global_db(state), "SELECT status, removed_source, last_run_id, report_json FROM migration_sources WHERE source_path = ?", (rel,))
    assert len(found) == 1, (rel, found)
    status, removed, run_id, report = found[0]
    return status, removed, run_id, json.loads(report)


def assert_retired(state: Path, rel: str, original: bytes) -> dict[str, Any]:
    status, removed, run_id, report = receipt(state, rel)
    assert (status, removed) == ("completed", 1)
    assert not (state / rel).exists()
    assert (state / ".statekit" / "migrated" / run_id / rel).read_bytes() == original
    return report


def one_line_naming(stderr: str, rel: str) -> list[str]:
    lines = [line for line in stderr.splitlines() if rel in line]
    assert lines, stderr
    assert "Traceback" not in stderr
    return lines


# --- trajectory sidecars ----------------------------------------------------------------


def test_trajectory_round_trip(tmp_path: Path) -> None:
    files = fixture_files("s-traj.jsonl", "s-traj.trajectory.jsonl", "s-traj.trajectory-path.json")
    state = build(tmp_path, files)
    report = migrate(state, MigrateOptions(backup=False))
    assert report.status == "completed", report.warnings

    db = agent_db(state)
    got = rows(db, "SELECT session_id, run_id, seq, event_json, created_at FROM trajectory_runtime_events ORDER BY seq")
    # seq is the line's position in the file: unique per session, as OpenClaw 2026.9.6's key
    # (session_id, seq) requires; the line's own per-run "seq" stays in event_json
    assert [(r[0], r[1], r[2]) for r in got] == [
        ("s-traj", "run-a", 1),
        ("s-traj", "run-a", 2),
        ("s-traj", "run-a", 3),
        ("s-traj", "run-b", 4),
        ("s-traj", "run-b", 5),
        ("s-traj", None, 6),  # no runId
    ]
    lines = files[TRAJ].decode().splitlines()
    first = json.loads(lines[0])
    del first["data"]["sessionFile"]
    assert got[0][3] == js_stringify(first)  # file-era path stripped, key order kept
    second = json.loads(lines[1])
    del second["data"]["harness"]["sessionFile"]
    assert got[1][3] == js_stringify(second)
    assert got[2][3] == lines[2]  # untouched lines are stored byte for byte
    assert got[4][3] == lines[4]  # (including its \u escapes)
    assert all("sessionFile" not in r[3] for r in got)
    assert [r[4] for r in got] == [1772359200000, 1772359200100, 1772359201000, 1772362800000, 1772362800500, 1772362802000]
    # the trajectory belongs to the session its transcript made; it makes no session of its own
    assert rows(db, "SELECT session_id, session_key FROM sessions") == [("s-traj", "agent:main:recovered:s-traj")]

    traj_report = assert_retired(state, TRAJ, files[TRAJ])
    assert traj_report["events"] == 6 and traj_report["runs"] == 3
    assert traj_report["file_era_fields_stripped"] == 2
    assert traj_report["pointer"] == {
        "path": POINTER,
        "traceSchema": "openclaw-trajectory-pointer",
        "schemaVersion": 1,
        "sessionId": "s-traj",
        "runtime_file_name": "s-traj.trajectory.jsonl",
        "runtime_file_matches": True,
        "session_id_matches": True,
    }
    pointer_report = assert_retired(state, POINTER, files[POINTER])
    assert pointer_report["dropped"].startswith("file-era path pointer")
    # no row anywhere stores the pointer's absolute path
    assert "/home/u/.openclaw" not in json.dumps(rows(db, "SELECT * FROM trajectory_runtime_events")).replace("/home/u/.openclaw/workspace", "")


def test_trajectory_reimport_replaces_its_rows(tmp_path: Path) -> None:
    files = fixture_files("s-traj.jsonl", "s-traj.trajectory.jsonl")
    state = build(tmp_path, files)
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    imported = rows(agent_db(state), "SELECT run_id, seq FROM trajectory_runtime_events ORDER BY seq")
    shorter = b"\n".join(files[TRAJ].splitlines()[:2]) + b"\n"
    build(tmp_path, {TRAJ: shorter})  # the sidecar comes back, changed
    assert migrate(state, MigrateOptions(backup=False)).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    # A stale writer's file never erases imported history (issue 11 item 5): its two lines are already there, nothing is lost.
    assert rows(agent_db(state), "SELECT run_id, seq FROM trajectory_runtime_events ORDER BY seq") == imported


def test_trajectory_in_flat_sessions_dir_belongs_to_main(tmp_path: Path) -> None:
    state = build(tmp_path, fixture_files("s-traj.jsonl", "s-traj.trajectory.jsonl", into="sessions"))
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    assert rows(agent_db(state), "SELECT count(*) FROM trajectory_runtime_events WHERE session_id = 's-traj'") == [(6,)]


def test_trajectory_without_an_imported_session_stays_in_place(tmp_path: Path) -> None:
    files = fixture_files("s-traj.trajectory.jsonl")
    state = build(tmp_path, files)
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert result.returncode == 3
    assert "no imported session 's-traj' owns this trajectory" in one_line_naming(result.stderr, TRAJ)[0]
    assert (state / TRAJ).read_bytes() == files[TRAJ]
    assert rows(agent_db(state), "SELECT count(*) FROM sessions") == [(0,)]
    # once its transcript is there, the sidecar imports (a failure is retried when asked)
    build(tmp_path, fixture_files("s-traj.jsonl"))
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--retry-failed")
    assert result.returncode == 0, result.stderr
    assert rows(agent_db(state), "SELECT count(*) FROM trajectory_runtime_events WHERE session_id = 's-traj'") == [(6,)]


def test_topic_trajectory_belongs_to_the_session_of_its_topic_transcript(tmp_path: Path) -> None:
    topic = f"{SESSIONS}/s-traj-topic-review-7"
    files = {f"{topic}.jsonl": (FIX / "s-traj.jsonl").read_bytes(), f"{topic}.trajectory.jsonl": (FIX / "s-traj.trajectory.jsonl").read_bytes()}
    state = build(tmp_path, files)
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    db = agent_db(state)
    assert rows(db, "SELECT session_id FROM sessions") == [("s-traj",)]
    assert rows(db, "SELECT DISTINCT session_id FROM trajectory_runtime_events") == [("s-traj",)]


def test_trajectory_bad_middle_line_stays_in_place(tmp_path: Path) -> None:
    lines = (FIX / "s-traj.trajectory.jsonl").read_bytes().splitlines()
    lines[2] = lines[2][:40]
    data = b"\n".join(lines) + b"\n"
    state = build(tmp_path, {TRAJ: data})
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert result.returncode == 3
    named = one_line_naming(result.stderr, f"{TRAJ}:3")
    assert "invalid JSON" in named[0]
    assert (state / TRAJ).read_bytes() == data


def test_trajectory_torn_last_line_imports_the_rest(tmp_path: Path) -> None:
    data = (FIX / "s-traj.trajectory.jsonl").read_bytes() + b'{"traceSchema":"openclaw-traj'
    state = build(tmp_path, {**fixture_files("s-traj.jsonl"), TRAJ: data})
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 3
    assert any(f"{TRAJ}:7: torn last line" in w for w in report.warnings)
    assert rows(agent_db(state), "SELECT count(*) FROM trajectory_runtime_events") == [(6,)]
    assert assert_retired(state, TRAJ, data)["torn_line"] == 7


def test_trajectory_bad_file_name_and_wrong_shape(tmp_path: Path) -> None:
    bad_name = f"{SESSIONS}/bad name!.trajectory.jsonl"
    wrong = f"{SESSIONS}/s-shape.trajectory.jsonl"
    state = build(tmp_path, {bad_name: b'{"type":"x"}\n', wrong: b'{"type":"x","runId":42}\n'})
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 3
    assert any(bad_name in w and "valid session id" in w for w in report.warnings)
    assert any(f"{wrong}:1: $.runId: expected string or null, found integer" in w for w in report.warnings)
    assert (state / bad_name).exists() and (state / wrong).exists()


# --- compaction checkpoints -------------------------------------------------------------


def test_checkpoints_prefix_and_divergent_copy(tmp_path: Path) -> None:
    files = fixture_files("s-live.jsonl", Path(CP_PREFIX).name, Path(CP_COPY).name)
    state = build(tmp_path, files)
    report = migrate(state, MigrateOptions(backup=False))
    assert report.status == "completed", report.warnings
    db = agent_db(state)

    live_lines = files[LIVE].decode().splitlines()
    assert rows(db, "SELECT seq, event_json FROM transcript_events WHERE session_id = 's-live' ORDER BY seq") == list(enumerate(live_lines))
    snapshots = rows(db, "SELECT session_id, snapshot_id, reason, event_count, created_at, metadata_json FROM transcript_snapshots ORDER BY snapshot_id")
    assert [s[:5] for s in snapshots] == [
        ("s-live", CP_PREFIX_ID, "compaction-checkpoint", 4, 1772442003000),
        ("s-live", CP_COPY_ID, "compaction-checkpoint", 3, 1772442002000),
    ]
    prefix_meta, copy_meta = json.loads(snapshots[0][5]), json.loads(snapshots[1][5])
    assert prefix_meta == {
        "checkpointId": CP_PREFIX_ID,
        "storage": "prefix-of-session",
        "eventsSessionId": "s-live",
        "headerSessionId": "s-live",
        "fileSessionId": "s-live",
        "headerVersion": 3,
        "leafId": "e0000003",
        "tornLine": None,
    }
    copy_id = f"s-live.checkpoint.{CP_COPY_ID}"
    assert copy_meta["storage"] == "copy" and copy_meta["eventsSessionId"] == copy_id and copy_meta["leafId"] == "e0000002"
    copy_lines = files[CP_COPY].decode().splitlines()
    assert rows(db, "SELECT seq, event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (copy_id,)) == list(enumerate(copy_lines))
    assert rows(db, "SELECT event_id, seq, parent_id FROM transcript_event_identities WHERE session_id = ? ORDER BY seq", (copy_id,)) == [
        ("s-live", 0, None),
        ("e0000001", 1, None),
        ("e0000002", 2, "e0000001"),
    ]
    # the prefix checkpoint stored no copy of its events
    assert rows(db, "SELECT count(*) FROM sessions WHERE session_id LIKE ?", (f"%{CP_PREFIX_ID}",)) == [(0,)]
    for rel in (LIVE, CP_PREFIX, CP_COPY):
        assert_retired(state, rel, files[rel])
    assert receipt(state, CP_COPY)[3]["storage"] == "copy"


def test_checkpoint_without_live_transcript_is_stored_as_a_copy(tmp_path: Path) -> None:
    files = fixture_files(Path(CP_PREFIX).name)
    state = build(tmp_path, files)
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    db = agent_db(state)
    copy_id = f"s-live.checkpoint.{CP_PREFIX_ID}"
    assert rows(db, "SELECT count(*) FROM transcript_events WHERE session_id = ?", (copy_id,)) == [(4,)]
    assert rows(db, "SELECT count(*) FROM transcript_events WHERE session_id = 's-live'") == [(0,)]
    assert rows(db, "SELECT session_id, snapshot_id, event_count FROM transcript_snapshots") == [("s-live", CP_PREFIX_ID, 4)]
    assert rows(db, "SELECT session_id, session_key FROM sessions ORDER BY session_id") == [
        ("s-live", "agent:main:recovered:s-live"),
        (copy_id, f"agent:main:recovered:{copy_id}"),
    ]


def test_checkpoint_reimport_as_prefix_removes_the_old_copy(tmp_path: Path) -> None:
    files = fixture_files(Path(CP_PREFIX).name)
    state = build(tmp_path, files)
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    # the live transcript arrives later, then the checkpoint file changes (re-imported)
    more = fixture_files("s-live.jsonl")
    build(tmp_path, more)
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    build(tmp_path, {CP_PREFIX: files[CP_PREFIX] + b"\n"})
    assert migrate(state, MigrateOptions(backup=False)).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    db = agent_db(state)
    copy_id = f"s-live.checkpoint.{CP_PREFIX_ID}"
    assert rows(db, "SELECT count(*) FROM sessions WHERE session_id = ?", (copy_id,)) == [(0,)]
    assert rows(db, "SELECT count(*) FROM transcript_events WHERE session_id = ?", (copy_id,)) == [(0,)]
    assert json.loads(rows(db, "SELECT metadata_json FROM transcript_snapshots")[0][0])["storage"] == "prefix-of-session"


def test_checkpoint_malformed_stays_in_place(tmp_path: Path) -> None:
    bad = f"{SESSIONS}/s-live.checkpoint.{CP_COPY_ID}.jsonl"
    odd = f"{SESSIONS}/s-live.checkpoint.not-a-uuid.jsonl"
    data = b'{"type":"session","version":3,"id":"s-live"}\n{"type":\n{"type":"message"}\n'
    state = build(tmp_path, {bad: data, odd: b'{"type":"session","id":"s-live"}\n'})
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert result.returncode == 3
    one_line_naming(result.stderr, f"{bad}:2")
    assert "not a compaction checkpoint name" in one_line_naming(result.stderr, odd)[0]
    assert (state / bad).read_bytes() == data and (state / odd).exists()


# --- kept in place, dropped, prompt cache ---------------------------------------------------


def test_retained_and_dropped_artifacts(tmp_path: Path) -> None:
    kept = fixture_files(
        "s-acp.acp-stream.jsonl",
        "s-old.jsonl.reset.2026-02-28T09-01-44.974Z",
        "s-del.jsonl.deleted.2026-03-02T04-02-17.424Z",
        "sessions.json.bak.1",
    )
    kept[f"{SESSIONS}/s-x.jsonl.bak"] = b'{"type":"session","version":3,"id":"s-x"}\n'
    dropped = fixture_files("s-live.jsonl.lock", "sessions.json.lock")
    state = build(tmp_path, {**kept, **dropped})
    plan = json.loads(run_cli("plan", "--state-dir", state, "--json").stdout)
    actions = {s["path"]: (s["kind"], s["action"]) for s in plan["sources"]}
    assert actions[f"{SESSIONS}/s-acp.acp-stream.jsonl"] == ("acp-stream-jsonl", "retain")
    assert actions[f"{SESSIONS}/sessions.json.bak.1"] == ("transcript-archive", "retain")
    assert actions[f"{SESSIONS}/s-live.jsonl.lock"] == ("session-lock", "drop")
    assert not plan["unrecognised"]

    report = migrate(state, MigrateOptions(backup=False))
    assert report.status == "completed", report.warnings
    for rel, data in kept.items():
        assert (state / rel).read_bytes() == data, rel
        assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE source_path = ?", (rel,)) == [(0,)]
    for rel, data in dropped.items():
        assert assert_retired(state, rel, data)["dropped"] == "stale lock file (the gateway is stopped)"
    outcomes = {o.rel: o.status for o in report.outcomes}
    assert outcomes[f"{SESSIONS}/s-acp.acp-stream.jsonl"] == "retain"


def test_rerun_changes_nothing(tmp_path: Path) -> None:
    files = fixture_files("s-traj.jsonl", "s-traj.trajectory.jsonl", "s-live.jsonl", Path(CP_COPY).name)
    state = build(tmp_path, files)
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    before = rows(agent_db(state), "SELECT * FROM trajectory_runtime_events") + rows(agent_db(state), "SELECT * FROM transcript_snapshots")
    again = migrate(state, MigrateOptions(backup=False))
    assert again.status == "nothing-to-do"
    assert rows(agent_db(state), "SELECT * FROM trajectory_runtime_events") + rows(agent_db(state), "SELECT * FROM transcript_snapshots") == before


@pytest.mark.parametrize("name", ["s-traj.trajectory.jsonl", Path(CP_COPY).name])
def test_plan_is_read_only_and_counts_records(tmp_path: Path, name: str) -> None:
    state = build(tmp_path, fixture_files(name))
    result = run_cli("plan", "--state-dir", state, "--json")
    assert result.returncode == 0, result.stderr
    (source,) = json.loads(result.stdout)["sources"]
    assert source["action"] == "import"
    assert source["record_count"] == len((FIX / name).read_bytes().splitlines())
    assert not (state / "state").exists() and not (state / "agents" / "main" / "agent").exists()
