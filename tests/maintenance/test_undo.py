"""``statekit undo RUN_ID``: the install comes back exactly as it was before the run, or undo refuses and changes nothing.

Every test here fails on 308a7ed, where there is no ``undo`` command (``run_cli("undo", ...)`` exits 2) and
``migrate`` records no undo facts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers import FIXTURES, agent_db, global_db, make_state, open_db, rows, run_cli
from maint_helpers import entry, transcript
from undo_snapshot import database_content, snapshot, undo_differences


def _demo(tmp_path: Path) -> Path:
    state = tmp_path / "home" / ".openclaw"
    shutil.copytree(FIXTURES / "demo-install" / ".openclaw", state, symlinks=True)
    return state


def _unchanged(state: Path) -> dict:
    """The tree as undo must leave it when it refuses (the run lock's pid aside)."""
    found = snapshot(state)
    found.pop(".statekit/lock", None)
    return found


def _migrate(state: Path, *extra: str) -> dict:
    result = run_cli("migrate", "--state-dir", state, "--yes", "--json", *extra)
    assert result.returncode in (0, 3), result.stderr
    report = json.loads(result.stdout)
    assert report["run_id"], report
    return report


def _plan_actions(state: Path) -> dict[str, str]:
    plan = run_cli("plan", "--state-dir", state, "--json")
    return {s["path"]: s["action"] for s in json.loads(plan.stdout)["sources"]}


def test_demo_undo_is_byte_identical_and_plan_shows_sources_as_new(tmp_path: Path) -> None:
    """Issue 12 problem 5: after `undo` the tree is the one before migrate (bytes, modes, dir names) and `plan` sees the
    sources as new, not `already-imported`."""
    state = _demo(tmp_path)
    before = snapshot(state)
    planned = _plan_actions(state)
    report = _migrate(state)
    assert report["undo"]["databases_before"] == []
    assert _plan_actions(state) == {} or set(_plan_actions(state).values()) <= {"already-imported", "retain", "deferred"}

    dry = run_cli("undo", report["run_id"], "--state-dir", state, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["undoable"] is True
    assert snapshot(state) != before  # the dry run changed nothing

    done = run_cli("undo", report["run_id"], "--state-dir", state, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["differences"] == [] and data["refusals"] == []
    assert undo_differences(before, snapshot(state)) == []
    assert not (state / ".statekit" / "migrated").exists()
    assert not global_db(state).exists() and not agent_db(state).exists()
    assert _plan_actions(state) == planned
    assert Path(report["backup_path"]).is_file()  # the pre-migration backup stays (outside the state dir)


def test_undo_restores_config_bytes_and_mode(tmp_path: Path) -> None:
    """The config the run rewrote comes back byte-exact with its original mode (the retired copy is 0600)."""
    config = b'{\n  // mine\n  "meta": {"lastTouchedAt": "2026-01-01T00:00:00Z"},\n  "agents": {"list": [{"id": "main"}]}\n}\n'
    state = make_state(tmp_path, {
        "agents/main/sessions/sessions.json": {"agent:main:main": entry("s1")},
        "agents/main/sessions/s1.jsonl": transcript("s1", 2),
        "openclaw.json": config.decode(),
    })
    (state / "openclaw.json").chmod(0o644)
    before = snapshot(state)
    report = _migrate(state)
    assert (state / "openclaw.json").read_bytes() != config
    done = run_cli("undo", report["run_id"], "--state-dir", state, "--yes")
    assert done.returncode == 0, done.stderr
    assert (state / "openclaw.json").read_bytes() == config
    assert (state / "openclaw.json").stat().st_mode & 0o777 == 0o644
    assert undo_differences(before, snapshot(state)) == []


def test_undo_refuses_when_a_later_run_would_be_lost(tmp_path: Path) -> None:
    state = _demo(tmp_path)
    original = snapshot(state)
    first = _migrate(state, "--no-backup")
    (state / "agents" / "main" / "sessions").mkdir(parents=True, exist_ok=True)
    (state / "agents" / "main" / "sessions" / "late-1.jsonl").write_text(transcript("late-1", 1))
    second = _migrate(state)
    digest = _unchanged(state)
    refused = run_cli("undo", first["run_id"], "--state-dir", state, "--yes")
    assert refused.returncode == 1
    assert "later runs would be lost" in refused.stderr and second["run_id"] in refused.stderr
    assert _unchanged(state) == digest
    # the latest run can be undone; then the first, back to the original tree
    assert run_cli("undo", second["run_id"], "--state-dir", state, "--yes").returncode == 0
    assert (state / "agents" / "main" / "sessions" / "late-1.jsonl").is_file()
    (state / "agents" / "main" / "sessions" / "late-1.jsonl").unlink()
    done = run_cli("undo", first["run_id"], "--state-dir", state, "--yes")
    assert done.returncode == 0, done.stderr
    assert undo_differences(original, snapshot(state)) == []


def test_undo_refuses_when_a_gateway_wrote_to_a_database(tmp_path: Path) -> None:
    state = _demo(tmp_path)
    report = _migrate(state)
    conn = open_db(agent_db(state), "rw")
    try:
        conn.execute("UPDATE session_entries SET entry_json = json_set(entry_json, '$.label', 'written later')")
    finally:
        conn.close()
    digest = _unchanged(state)
    refused = run_cli("undo", report["run_id"], "--state-dir", state, "--yes")
    assert refused.returncode == 1
    assert "agents/main/agent/openclaw-agent.sqlite: changed since run" in refused.stderr
    assert _unchanged(state) == digest
    dry = run_cli("undo", report["run_id"], "--state-dir", state, "--dry-run", "--json")
    assert dry.returncode == 1 and json.loads(dry.stdout)["undoable"] is False


def test_undo_refuses_a_modified_retired_copy(tmp_path: Path) -> None:
    state = _demo(tmp_path)
    report = _migrate(state)
    retired = state / ".statekit" / "migrated" / report["run_id"] / "cron" / "jobs.json"
    retired.write_text("{}")
    digest = _unchanged(state)
    refused = run_cli("undo", report["run_id"], "--state-dir", state, "--yes")
    assert refused.returncode == 1 and "cron/jobs.json" in refused.stderr
    assert _unchanged(state) == digest


def test_undo_after_remove_sources_takes_them_from_the_backup(tmp_path: Path) -> None:
    state = _demo(tmp_path)
    # a `.jsonl.lock` is dropped by migrate but not archived by backups: deleted with --remove-sources, undo refuses
    lock = state / "agents" / "main" / "sessions" / "3f0c2b7e-1111-4a5b-8c9d-000000000002.jsonl.lock"
    lock.unlink()
    before = snapshot(state)
    report = _migrate(state, "--remove-sources")
    assert not (state / ".statekit" / "migrated").exists() or not any((state / ".statekit" / "migrated").rglob("*.jsonl"))
    done = run_cli("undo", report["run_id"], "--state-dir", state, "--yes")
    assert done.returncode == 0, done.stderr
    assert undo_differences(before, snapshot(state)) == []


def test_a_removed_lock_source_comes_back_from_the_backup(tmp_path: Path) -> None:
    """`--remove-sources` deletes the dropped `*.jsonl.lock` source; since backups hold user `*.lock` files (issue 11
    item 2) undo takes it back from the pre-migration backup, byte-exact. (Before that, undo had to refuse here.)"""
    state = _demo(tmp_path)
    lock = state / "agents" / "main" / "sessions" / "3f0c2b7e-1111-4a5b-8c9d-000000000002.jsonl.lock"
    original = lock.read_bytes()
    report = _migrate(state, "--remove-sources")
    assert not lock.exists()
    done = run_cli("undo", report["run_id"], "--state-dir", state, "--yes")
    assert done.returncode == 0, done.stderr
    assert lock.read_bytes() == original


def test_undo_puts_preexisting_databases_back_as_the_backup_holds_them(tmp_path: Path) -> None:
    """A database that existed before the run (written by a hybrid-era OpenClaw) comes back with its exact content."""
    state = _demo(tmp_path)
    first = _migrate(state, "--no-backup")  # gives the install its databases
    (state / "agents" / "main" / "sessions").mkdir(parents=True, exist_ok=True)
    (state / "agents" / "main" / "sessions" / "late-1.jsonl").write_text(transcript("late-1", 1))
    before = snapshot(state)
    contents = {rel: database_content(state / rel) for rel in first["undo"]["databases"]}
    second = _migrate(state)
    assert set(second["undo"]["databases_before"]) == set(contents)
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id = 'late-1'")[0][0] > 0
    done = run_cli("undo", second["run_id"], "--state-dir", state, "--yes")
    assert done.returncode == 0, done.stderr
    assert undo_differences(before, snapshot(state), content_only=contents, root=state) == []
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id = 'late-1'")[0][0] == 0
    assert _plan_actions(state)["agents/main/sessions/late-1.jsonl"] == "import"


def test_undo_refuses_without_the_backup_when_databases_existed(tmp_path: Path) -> None:
    state = _demo(tmp_path)
    _migrate(state, "--no-backup")
    (state / "agents" / "main" / "sessions").mkdir(parents=True, exist_ok=True)
    (state / "agents" / "main" / "sessions" / "late-1.jsonl").write_text(transcript("late-1", 1))
    second = _migrate(state)
    Path(second["backup_path"]).unlink()
    refused = run_cli("undo", second["run_id"], "--state-dir", state, "--yes")
    assert refused.returncode == 1 and "pre-migration backup" in refused.stderr and "--backup" in refused.stderr


def test_undo_moves_a_relocated_state_dir_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    legacy = home / ".clawdbot"
    shutil.copytree(FIXTURES / "demo-install" / ".openclaw", legacy, symlinks=True)
    before = snapshot(legacy)
    env = {"HOME": str(home), "OPENCLAW_HOME": str(home)}
    result = run_cli("migrate", "--yes", "--json", env=env)
    assert result.returncode in (0, 3), result.stderr
    report = json.loads(result.stdout)
    assert (home / ".openclaw").is_dir() and not legacy.exists()
    assert report["undo"]["relocated"] == {"from": str(legacy), "to": str(home / ".openclaw")}
    done = run_cli("undo", report["run_id"], "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert legacy.is_dir() and not (home / ".openclaw").exists()
    assert undo_differences(before, snapshot(legacy)) == []


def test_unknown_run_is_one_line(tmp_path: Path) -> None:
    state = _demo(tmp_path)
    _migrate(state, "--no-backup")
    result = run_cli("undo", "no-such-run", "--state-dir", state, "--dry-run")
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "no migration run 'no-such-run'" in result.stderr
