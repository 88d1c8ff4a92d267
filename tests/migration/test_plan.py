from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import jsonschema
import pytest

from helpers import FIXTURES, REPO, make_state, open_db, run_cli, tree_digest

PLAN_SCHEMA = json.loads((REPO / "docs" / "plan.schema.json").read_text())


@pytest.fixture()
def demo(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "demo-install", tmp_path / "demo", symlinks=True)
    return tmp_path / "demo" / ".openclaw"


def test_plan_writes_nothing_even_with_a_wal_database(demo: Path) -> None:
    (demo / "state").mkdir()
    conn = open_db(demo / "state" / "openclaw.sqlite")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA user_version=1")
    conn.execute("CREATE TABLE schema_meta(meta_key TEXT PRIMARY KEY, role TEXT, schema_version INT, agent_id TEXT, app_version TEXT, created_at INT, updated_at INT)")
    conn.commit()
    conn.close()
    before = tree_digest(demo.parent)
    listing = sorted(p for p in demo.rglob("*"))
    for args in (("plan", "--state-dir", demo), ("plan", "--state-dir", demo, "--json")):
        result = run_cli(*args)
        assert result.returncode == 0, result.stderr  # the demo's malformed transcript is planned with a warning
    assert tree_digest(demo.parent) == before
    assert sorted(p for p in demo.rglob("*")) == listing


def test_plan_json_follows_its_schema_and_names_every_legacy_file(demo: Path) -> None:
    result = run_cli("plan", "--state-dir", demo, "--json")
    plan = json.loads(result.stdout)
    jsonschema.validate(plan, PLAN_SCHEMA)
    paths = {s["path"]: s for s in plan["sources"]}
    for path in demo.rglob("*.jsonl"):
        assert path.relative_to(demo).as_posix() in paths
    assert paths["agents/main/sessions/sessions.json"]["record_count"] == 5
    assert paths["agents/main/sessions/sessions.json"]["action"] == "import"
    broken = paths["agents/ops/sessions/9e9e9e9e-3333-4a5b-8c9d-000000000002.jsonl"]
    # its readable prefix will be imported, as OpenClaw imports it; the plan says where it ends
    assert broken["action"] == "import" and broken["record_count"] == 4  # 2 readable + the bad line + 1 after it
    assert any(":3: invalid JSON" in w and "the 2 line(s) before it will be imported" in w for w in broken["warnings"])
    lock = paths["agents/main/sessions/3f0c2b7e-1111-4a5b-8c9d-000000000002.jsonl.lock"]
    assert lock["action"] in ("deferred", "drop")
    assert {u["path"] for u in plan["user_content"]} >= {"openclaw.json", "workspace/", "workspace-work/"}
    assert plan["unrecognised"] == []
    assert all(s["sha256"] and len(s["sha256"]) == 64 for s in plan["sources"] if s["action"] != "unreadable" or s["sha256"])


def test_unrecognised_files_are_listed_not_touched(tmp_path: Path) -> None:
    state = make_state(tmp_path, {"mystery/thing.bin": b"\x00\x01", "notes.txt": "hello"})
    plan = json.loads(run_cli("plan", "--state-dir", state, "--json").stdout)
    assert {u["path"] for u in plan["unrecognised"]} == {"mystery/thing.bin", "notes.txt"}


def test_missing_state_dir_is_one_clear_line(tmp_path: Path) -> None:
    result = run_cli("plan", "--state-dir", tmp_path / "nope")
    assert result.returncode == 2  # issue 12 (7): a path that does not exist is exit 2 for every command
    assert result.stderr.strip().count("\n") == 0 and "not found" in result.stderr
    assert "Traceback" not in result.stderr


def test_env_state_dir_is_used(demo: Path) -> None:
    result = run_cli("plan", "--json", env={"OPENCLAW_STATE_DIR": str(demo)})
    assert json.loads(result.stdout)["state_dir_origin"] == "env"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_symlink_where_a_file_is_expected(tmp_path: Path) -> None:
    state = make_state(tmp_path, {"elsewhere.json": {"x": {"sessionId": "a", "updatedAt": 1}}})
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    os.mkfifo(sessions / "sessions.json")
    (state / "agents" / "work" / "sessions").mkdir(parents=True)
    (state / "agents" / "work" / "sessions" / "sessions.json").symlink_to(state / "elsewhere.json")
    result = run_cli("plan", "--state-dir", state, "--json")
    assert result.returncode == 3
    plan = {s["path"]: s for s in json.loads(result.stdout)["sources"]}
    assert "FIFO" in plan["agents/main/sessions/sessions.json"]["reason"]
    assert "symbolic link" in plan["agents/work/sessions/sessions.json"]["reason"]


def test_a_reader_may_retain_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from statekit.legacy_readers.base import Inspection
    from statekit.legacy_readers.transcripts import TranscriptReader
    from statekit.migrate.apply import MigrateOptions, migrate

    state = make_state(tmp_path, {"agents/main/sessions/keep.jsonl": '{"type":"session","version":3,"id":"keep","timestamp":"2026-01-01T00:00:00Z"}\n'})
    monkeypatch.setattr(TranscriptReader, "inspect", lambda self, source, handle, ctx=None: Inspection(1, action="retain", reason="kept on purpose"))
    # A reader whose inspect decides per file does not glance (migrate.plan.Glancing): this one now decides.
    monkeypatch.delattr(TranscriptReader, "glance")
    from statekit.migrate.plan import build_plan

    assert [(s.action, s.reason) for s in build_plan(state).sources] == [("retain", "kept on purpose")]
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 0 and (state / "agents/main/sessions/keep.jsonl").exists()
