"""Bad input for the core upgrade path: one clear line, the contract's exit code, nothing lost."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import agent_db, global_db, make_state, open_db, rows, run_cli
from statekit.migrate.apply import MigrateOptions, migrate
from statekit.errors import SchemaError, StateDirError

HEADER = '{"type":"session","version":3,"id":"%s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}'
EVENT = '{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:0%d.000Z","message":{"role":"user","content":"hi"}}'


def transcript(session_id: str, n: int = 2) -> str:
    lines = [HEADER % session_id]
    parent = "null"
    for i in range(n):
        eid = f"e{i:07d}"
        lines.append(EVENT % (eid, parent, i))
        parent = f'"{eid}"'
    return "\n".join(lines) + "\n"


def migrate_cli(state: Path) -> tuple[int, str, str]:
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    return result.returncode, result.stdout, result.stderr


def assert_one_line_about(stderr: str, rel: str) -> None:
    lines = [l for l in stderr.splitlines() if rel in l]
    assert len(lines) >= 1, stderr
    assert "Traceback" not in stderr


def test_invalid_json5_index_stays_and_others_import(tmp_path: Path) -> None:
    bad = "agents/main/sessions/sessions.json"
    state = make_state(tmp_path, {bad: "{ main: { sessionId: 'a', updatedAt: 1 ", "agents/main/sessions/good-1.jsonl": transcript("good-1")})
    before = (state / bad).read_bytes()
    mtime = (state / "agents/main/sessions/good-1.jsonl").stat().st_mtime_ns // 1_000_000
    code, _, err = migrate_cli(state)
    assert code == 3
    assert_one_line_about(err, bad)
    assert "invalid JSON5" in err
    assert (state / bad).read_bytes() == before
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id='good-1'") == [(3,)]
    # no index lists it yet: recovered history, keyed and archived as OpenClaw keys it
    assert rows(agent_db(state), "SELECT session_key FROM sessions WHERE session_id='good-1'") == [("agent:main:recovered:good-1",)]
    ((entry,),) = rows(agent_db(state), "SELECT entry_json FROM session_entries WHERE session_key = 'agent:main:recovered:good-1'")
    assert json.loads(entry) == {"sessionId": "good-1", "updatedAt": mtime, "archivedAt": mtime}
    # the index, repaired, claims the session: its key wins and the recovered entry and route go
    (state / bad).write_text(json.dumps({"agent:main:main": {"sessionId": "good-1", "updatedAt": 5}}))
    code, _, err = migrate_cli(state)
    assert code == 0, err
    assert rows(agent_db(state), "SELECT session_key FROM sessions WHERE session_id='good-1'") == [("agent:main:main",)]
    assert rows(agent_db(state), "SELECT session_key FROM session_entries UNION ALL SELECT session_key FROM session_routes") == [
        ("agent:main:main",), ("agent:main:main",)
    ]


def test_malformed_middle_line_imports_the_readable_prefix_and_names_the_line(tmp_path: Path) -> None:
    """As OpenClaw 2026.9.6 imports a transcript: everything before the first line that is not JSON; the rest only in
    the byte-exact retired copy, the line and how much was not imported named."""
    rel = "agents/main/sessions/s-1.jsonl"
    lines = transcript("s-1", 3).splitlines()
    lines[2] = lines[2][:20]
    state = make_state(tmp_path, {rel: "\n".join(lines) + "\n"})
    before = (state / rel).read_bytes()
    code, _, err = migrate_cli(state)
    assert code == 3 and f"{rel}:3: invalid JSON" in err and "the 2 line(s) before it were imported and the 2 from it on not" in err
    assert rows(agent_db(state), "SELECT seq, event_json FROM transcript_events WHERE session_id='s-1' ORDER BY seq") == list(enumerate(lines[:2]))
    ((status, report),) = rows(global_db(state), "SELECT status, report_json FROM migration_sources WHERE source_path=?", (rel,))
    assert status == "completed" and json.loads(report)["unreadable_line"] == 3 and json.loads(report)["lines_not_imported"] == 2
    assert next((state / ".statekit" / "migrated").rglob("s-1.jsonl")).read_bytes() == before


def test_a_line_that_is_json_but_no_event_fails_the_whole_file(tmp_path: Path) -> None:
    rel = "agents/main/sessions/s-3.jsonl"
    lines = transcript("s-3", 3).splitlines()
    lines[2] = "[1, 2]"
    state = make_state(tmp_path, {rel: "\n".join(lines) + "\n"})
    before = (state / rel).read_bytes()
    code, _, err = migrate_cli(state)
    assert code == 3 and f"{rel}:3: expected a JSON object" in err
    assert (state / rel).read_bytes() == before
    assert not agent_db(state).exists() or rows(agent_db(state), "SELECT count(*) FROM transcript_events") == [(0,)]


def test_torn_last_line_imports_the_rest_and_keeps_the_original(tmp_path: Path) -> None:
    rel = "agents/main/sessions/s-2.jsonl"
    text = transcript("s-2", 2) + '{"type":"message","id":"torn'
    state = make_state(tmp_path, {rel: text})
    code, out, err = migrate_cli(state)
    assert code == 3 and "torn last line" in err and f"{rel}:4" in err
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id='s-2'") == [(3,)]
    retired = next((state / ".statekit" / "migrated").rglob("s-2.jsonl"))
    assert retired.read_text() == text


def test_header_id_differs_from_file_name(tmp_path: Path) -> None:
    rel = "agents/main/sessions/boot-2026-05-26_13-09-54-080-abcd.jsonl"
    state = make_state(tmp_path, {rel: transcript("real-session-id", 1)})
    code, out, err = migrate_cli(state)
    assert code == 0
    assert "differs from the file name" in err and rel in err
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id='real-session-id'") == [(2,)]


def test_two_files_with_one_session_id_conflict(tmp_path: Path) -> None:
    state = make_state(tmp_path, {
        "agents/main/sessions/dup-1.jsonl": transcript("dup-1", 1),
        "agents/main/sessions/copy-of-dup.jsonl": transcript("dup-1", 2),
    })
    code, _, err = migrate_cli(state)
    assert code == 3 and "copy-of-dup.jsonl: holds the same session id as agents/main/sessions/dup-1.jsonl" in err
    assert (state / "agents/main/sessions/copy-of-dup.jsonl").exists()
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id='dup-1'") == [(2,)]


def test_missing_session_id_is_skipped_with_a_warning(tmp_path: Path) -> None:
    rel = "agents/main/sessions/sessions.json"
    state = make_state(tmp_path, {rel: {"agent:main:main": {"sessionId": "m-1", "updatedAt": 5}, "agent:main:broken": {"updatedAt": 7}}})
    code, _, err = migrate_cli(state)
    assert code == 3 and "agent:main:broken" in err and "no sessionId" in err
    assert rows(agent_db(state), "SELECT session_key FROM session_entries") == [("agent:main:main",)]
    retired = next((state / ".statekit" / "migrated").rglob("sessions.json"))
    assert "agent:main:broken" in retired.read_text()


def test_non_finite_updated_at_uses_the_file_mtime(tmp_path: Path) -> None:
    rel = "agents/main/sessions/sessions.json"
    state = make_state(tmp_path, {rel: "{main: {sessionId: 'n-1', updatedAt: NaN}}"})
    os.utime(state / rel, (1_700_000_000, 1_700_000_000))
    code, _, err = migrate_cli(state)
    assert code == 0 and "not a finite number" in err
    assert rows(agent_db(state), "SELECT updated_at FROM session_entries") == [(1_700_000_000_000,)]


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rel = "agents/main/sessions/locked.jsonl"
    state = make_state(tmp_path, {rel: transcript("locked"), "agents/main/sessions/fine.jsonl": transcript("fine")})
    import statekit.migrate.plan as plan_module

    real = plan_module.open_regular_file

    def guarded(path: Path):
        if Path(path).name == "locked.jsonl":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(plan_module, "open_regular_file", guarded)
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 3
    assert any("locked.jsonl: cannot read: Permission denied" in w for w in report.warnings)
    assert (state / rel).exists()
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id='fine'") == [(3,)]


def test_state_dir_that_does_not_exist(tmp_path: Path) -> None:
    code, _, err = migrate_cli(tmp_path / "missing")
    assert code == 2 and "state dir not found" in err and err.count("\n") == 1  # issue 12 (7): a missing path is exit 2, every command


def test_read_only_state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = make_state(tmp_path, {"agents/main/sessions/ro.jsonl": transcript("ro")})
    if os.geteuid() != 0:
        os.chmod(state, 0o555)
        try:
            code, _, err = migrate_cli(state)
        finally:
            os.chmod(state, 0o755)
        assert code == 1 and "read-only" in err
    else:  # root ignores directory modes: simulate the kernel's answer
        import statekit.migrate.apply as apply_module

        monkeypatch.setattr(apply_module.os, "access", lambda p, m: False if Path(p) == state and m & os.W_OK else True)
        with pytest.raises(StateDirError, match="read-only"):
            migrate(state, MigrateOptions(backup=False))
    assert not (state / ".statekit").exists() and not (state / "state").exists()


def test_database_with_a_newer_user_version(tmp_path: Path) -> None:
    state = make_state(tmp_path, {"agents/main/sessions/n.jsonl": transcript("n")})
    (state / "state").mkdir()
    conn = open_db(state / "state" / "openclaw.sqlite")
    conn.execute("CREATE TABLE t(x)")
    conn.execute("PRAGMA user_version = 9")
    conn.commit()
    conn.close()
    before = (state / "state" / "openclaw.sqlite").read_bytes()
    code, _, err = migrate_cli(state)
    assert code == 1 and "schema version 9 is newer" in err and err.count("\n") == 1
    assert (state / "state" / "openclaw.sqlite").read_bytes() == before
    assert (state / "agents/main/sessions/n.jsonl").exists()
    with pytest.raises(SchemaError):
        migrate(state, MigrateOptions(backup=False))


def test_newer_agent_database_blocks_only_that_agent(tmp_path: Path) -> None:
    state = make_state(tmp_path, {"agents/main/sessions/a.jsonl": transcript("a"), "agents/work/sessions/b.jsonl": transcript("b")})
    (state / "agents/work/agent").mkdir(parents=True)
    conn = open_db(state / "agents/work/agent/openclaw-agent.sqlite")
    conn.execute("CREATE TABLE t(x)")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    code, _, err = migrate_cli(state)
    assert code == 3 and "agents/work/agent/openclaw-agent.sqlite: schema version 4 is newer" in err
    assert (state / "agents/work/sessions/b.jsonl").exists()
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events") == [(3,)]


def test_headerless_transcript_imports_under_its_file_name(tmp_path: Path) -> None:
    rel = "agents/main/sessions/edce9f16-9dda-4073-8ba4-db42a66a98d2.jsonl"
    body = "\n".join(transcript("x", 2).splitlines()[1:]) + "\n"
    state = make_state(tmp_path, {rel: body})
    code, _, err = migrate_cli(state)
    assert code == 0 and "no session header" in err
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id='edce9f16-9dda-4073-8ba4-db42a66a98d2'") == [(2,)]


def test_failed_source_is_retried_only_when_changed_or_asked(tmp_path: Path) -> None:
    rel = "agents/main/sessions/r-1.jsonl"
    good = transcript("r-1", 2)
    state = make_state(tmp_path, {rel: good.replace('"type":"message"', '"type":7', 1)})  # JSON, but no transcript event
    assert migrate_cli(state)[0] == 3
    code, _, err = migrate_cli(state)
    assert code == 3 and "recorded by run" in err and rel in err  # issue 12 (6): still in place and unreadable = exit 3
    assert run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--retry-failed").returncode == 3
    (state / rel).write_text(good)
    assert migrate_cli(state)[0] == 0
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id='r-1'") == [(3,)]


@pytest.mark.skipif(os.name != "posix", reason="file names that are not UTF-8 are a POSIX thing")
def test_a_file_name_that_is_not_utf8_is_named_left_in_place_and_the_rest_imports(tmp_path: Path) -> None:
    state = make_state(tmp_path, {"agents/main/sessions/good-1.jsonl": transcript("good-1")})
    sessions = os.fsencode(state / "agents/main/sessions")
    bad_file = sessions + b"/bad\xff.jsonl"
    Path(os.fsdecode(bad_file)).write_text(transcript("bad-1"))
    bad_dir = os.fsencode(state) + b"/notes\xfe"
    os.mkdir(bad_dir)
    Path(os.fsdecode(bad_dir + b"/x.txt")).write_bytes(b"kept")
    before = Path(os.fsdecode(bad_file)).read_bytes()

    planned = run_cli("plan", "--state-dir", state)
    assert planned.returncode == 3, planned.stderr
    assert "agents/main/sessions/bad\\xff.jsonl: file name is not valid UTF-8" in planned.stdout
    assert "notes\\xfe/  (name is not valid UTF-8)" in planned.stdout
    assert "Traceback" not in planned.stderr
    as_json = run_cli("plan", "--state-dir", state, "--json")
    assert as_json.returncode == 3
    assert {"path": "agents/main/sessions/bad\\xff.jsonl", "size": len(before), "type": "file"} in json.loads(as_json.stdout)["unrecognised"]

    for _run in range(2):  # every run says it again: work left undone
        code, _, err = migrate_cli(state)
        assert code == 3
        assert_one_line_about(err, "agents/main/sessions/bad\\xff.jsonl: file name is not valid UTF-8")
        assert Path(os.fsdecode(bad_file)).read_bytes() == before
        assert Path(os.fsdecode(bad_dir + b"/x.txt")).read_bytes() == b"kept"
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id='good-1'") == [(3,)]
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id='bad-1'") == [(0,)]
    assert not (state / "agents/main/sessions/good-1.jsonl").exists()  # retired
