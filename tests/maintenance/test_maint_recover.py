"""``statekit recover RUN_ID``: retired sources back byte-identical, receipts reopened, sanitized report."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from helpers import global_db, make_state, open_db, rows, run_cli, tree_digest
from maint_helpers import cli, copy_state, entry, transcript
from statekit.migrate.apply import MigrateOptions, migrate
from statekit.maintenance.recover import recover, sanitize_line

SECRET = "sk-proj-0123456789ABCDEFGHIJKLMNOPQRSTUV"
MESSAGE = "user text 0 of s1"


def _state(tmp_path: Path) -> tuple[Path, dict[str, bytes], dict[str, int]]:
    files = {
        "agents/main/sessions/sessions.json": {"agent:main:main": entry("s1"), "agent:main:b": entry("s2")},
        "agents/main/sessions/s1.jsonl": transcript("s1", 2),
        "agents/main/sessions/s2.jsonl": transcript("s2", 1),
        # a malformed transcript (a line that is JSON but no event): fails, stays in place, its error line goes into the run report
        "agents/main/sessions/s3.jsonl": transcript("s3", 1) + '{"type": 7, "secret": "' + SECRET + '"}\n',
    }
    state = make_state(tmp_path, files)
    originals = {rel: (state / rel).read_bytes() for rel in files}
    mtimes = {rel: (state / rel).stat().st_mtime_ns for rel in files}
    return state, originals, mtimes


def _run_id(state: Path) -> str:
    (run_id,) = rows(global_db(state), "SELECT id FROM migration_runs ORDER BY started_at DESC LIMIT 1")[0]
    return run_id


def test_recover_puts_sources_back_and_a_later_migrate_imports_them_again(tmp_path: Path) -> None:
    state, originals, mtimes = _state(tmp_path)
    first = migrate(state, MigrateOptions(backup=False))
    assert first.status == "warning"
    retired = [o.rel for o in first.outcomes if o.retired_to]
    assert sorted(retired) == ["agents/main/sessions/s1.jsonl", "agents/main/sessions/s2.jsonl", "agents/main/sessions/sessions.json"]
    assert not (state / retired[0]).exists()

    result = cli("recover", first.run_id, "--state-dir", state, "--yes", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["counts"] == {"recovered": 3}
    for rel in retired:
        assert (state / rel).read_bytes() == originals[rel]
        assert (state / rel).stat().st_mtime_ns == mtimes[rel]
    assert not (state / ".statekit" / "migrated" / first.run_id).exists()
    receipts = rows(global_db(state), "SELECT source_path, status, removed_source, last_run_id FROM migration_sources"
                                      " WHERE removed_source = 0 AND status = 'recovered' ORDER BY source_path")
    assert [r[0] for r in receipts] == sorted(retired) and {r[3] for r in receipts} == {first.run_id}
    (recover_run,) = rows(global_db(state), "SELECT status, report_json FROM migration_runs WHERE id = ?", (report["recover_run_id"],))
    assert recover_run[0] == "completed" and json.loads(recover_run[1])["kind"] == "recover"

    second = migrate(state, MigrateOptions(backup=False))
    assert sorted(o.rel for o in second.outcomes if o.status == "imported") == sorted(retired)
    statuses = rows(global_db(state), "SELECT DISTINCT status FROM migration_sources WHERE source_path IN (?, ?, ?)", tuple(retired))
    assert statuses == [("completed",)]


def test_recover_refuses_to_overwrite_a_different_file(tmp_path: Path) -> None:
    state, originals, _ = _state(tmp_path)
    run = migrate(state, MigrateOptions(backup=False))
    rel = "agents/main/sessions/s1.jsonl"
    (state / rel).write_text("a newer file the user made\n")
    result = cli("recover", run.run_id, "--state-dir", state, "--yes", "--json")
    assert result.returncode == 3
    items = {s["path"]: s["status"] for s in json.loads(result.stdout)["sources"]}
    assert items[rel] == "conflict" and items["agents/main/sessions/s2.jsonl"] == "recovered"
    assert (state / rel).read_text() == "a newer file the user made\n"
    assert f"{rel}: a different file exists at the original path" in result.stderr
    retired = state / ".statekit" / "migrated" / run.run_id / rel
    assert retired.read_bytes() == originals[rel]
    (status,) = rows(global_db(state), "SELECT status FROM migration_sources WHERE source_path = ? AND removed_source = 1", (rel,))[0]
    assert status == "completed"


def test_recover_refuses_a_retired_copy_that_fails_its_hash(tmp_path: Path) -> None:
    state, _, _ = _state(tmp_path)
    run = migrate(state, MigrateOptions(backup=False))
    retired = state / ".statekit" / "migrated" / run.run_id / "agents/main/sessions/s2.jsonl"
    retired.write_bytes(retired.read_bytes().replace(b"assistant", b"ASSISTANT"))
    result = run_cli("recover", run.run_id, "--state-dir", state, "--yes")
    assert result.returncode == 5
    assert not (state / "agents/main/sessions/s2.jsonl").exists()
    assert "does not match the SHA-256 in its receipt" in result.stderr


def test_dry_run_changes_nothing_and_needs_no_yes(tmp_path: Path) -> None:
    state, _, _ = _state(tmp_path)
    run = migrate(state, MigrateOptions(backup=False))
    digest = tree_digest(state)
    result = cli("recover", run.run_id, "--state-dir", state, "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["counts"] == {"would-recover": 3}
    assert tree_digest(state) == digest
    refused = cli("recover", run.run_id, "--state-dir", state)
    assert refused.returncode == 2 and tree_digest(state) == digest


def test_sanitized_report_has_relative_paths_and_no_secret_or_message_text(tmp_path: Path) -> None:
    state, _, _ = _state(tmp_path)
    run = migrate(state, MigrateOptions(backup=False))
    out = tmp_path / "report.json"
    result = cli("recover", run.run_id, "--state-dir", state, "--yes", "--report", out)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    report = json.loads(text)
    assert report["format"] == "statekit-recover-report" and report["counts"] == {"recovered": 3}
    assert report["migration_run"]["status"] == "warning" and len(report["migration_run"]["warnings"]) == 1
    assert "agents/main/sessions/s3.jsonl" in report["migration_run"]["warnings"][0]
    assert str(state) not in text and str(tmp_path) not in text
    assert SECRET not in text and MESSAGE not in text
    assert {s["path"] for s in report["sources"]} >= {"agents/main/sessions/sessions.json"}
    assert oct(out.stat().st_mode & 0o777) == "0o600"


def test_sanitize_line_strips_paths_and_long_tokens(tmp_path: Path) -> None:
    line = f"{tmp_path}/.openclaw/agents/x.json: bad token {SECRET} near /etc/passwd and abcdef"
    cleaned = sanitize_line(line, tmp_path / ".openclaw")
    assert cleaned.startswith("agents/x.json: bad token <redacted> near <path>") and SECRET not in cleaned


def test_unknown_run_and_busy_state(tmp_path: Path) -> None:
    state, _, _ = _state(tmp_path)
    run = migrate(state, MigrateOptions(backup=False))
    unknown = run_cli("recover", "no-such-run", "--state-dir", state, "--yes")
    assert unknown.returncode == 1 and "no migration run 'no-such-run'" in unknown.stderr
    (state / "gateway.lock").write_text(json.dumps({"pid": os.getpid()}))
    busy = run_cli("recover", run.run_id, "--state-dir", state, "--yes")
    assert busy.returncode == 4 and "gateway is running" in busy.stderr
    assert not (state / "agents/main/sessions/s1.jsonl").exists()


def test_remove_sources_run_cannot_be_recovered_but_says_why(tmp_path: Path) -> None:
    state, _, _ = _state(tmp_path)
    run = migrate(state, MigrateOptions(backup=False, remove_sources=True))
    result = recover(state, run.run_id)
    assert {i.status for i in result.items} == {"missing"}
    assert all("--remove-sources" in e for e in result.errors) and result.exit_code == 3


def test_recover_config_rewrite_only_while_unchanged(tmp_path: Path, wired: bool) -> None:
    old = b'{"session": {"idleMinutes": 30}, "gateway": {"auth": {"token": "t0k"}}}\n'
    state = make_state(tmp_path, {"openclaw.json": old, "agents/main/sessions/sessions.json": {"agent:main:main": entry("s1")}})
    run = migrate(state, MigrateOptions(backup=False))
    assert json.loads((state / "openclaw.json").read_text())["session"] == {"reset": {"mode": "idle", "idleMinutes": 30}}
    other = copy_state(state, tmp_path / "copy")
    (other / "openclaw.json").write_text("{}\n")  # edited by the user since
    edited = recover(other, run.run_id)
    assert {i.path: i.status for i in edited.items}["openclaw.json"] == "conflict"
    assert (other / "openclaw.json").read_text() == "{}\n"
    result = recover(state, run.run_id)
    assert {i.path: i.status for i in result.items}["openclaw.json"] == "recovered"
    assert (state / "openclaw.json").read_bytes() == old


@pytest.mark.corpus
def test_recover_every_corpus_tree(tmp_path: Path, migrated_corpus: dict[str, Path]) -> None:
    for index, (name, source) in enumerate(migrated_corpus.items()):
        state = copy_state(source, tmp_path / f"t{index}")
        runs = rows(global_db(state), "SELECT id FROM migration_runs") if global_db(state).exists() else []
        if not runs:
            continue
        run_id = runs[0][0]
        retired_root = state / ".statekit" / "migrated" / run_id
        expected = {p.relative_to(retired_root).as_posix(): p.read_bytes() for p in retired_root.rglob("*") if p.is_file()}
        result = recover(state, run_id)
        assert result.exit_code == 0, (name, result.errors)
        assert {i.status for i in result.items} <= {"recovered"}, name
        for rel, data in expected.items():
            assert (state / rel).read_bytes() == data, (name, rel)


def test_recover_closes_a_killed_run_and_leaves_foreign_rows_alone(tmp_path: Path) -> None:
    state, _, _ = _state(tmp_path)
    first = migrate(state, MigrateOptions(backup=False))
    with open_db(global_db(state)) as conn:  # what a SIGKILLed migrate and an OpenClaw doctor run leave behind
        conn.execute("INSERT INTO migration_runs VALUES ('killed', 1, NULL, 'running', '{\"kind\": \"legacy-state\"}')")
        conn.execute("INSERT INTO migration_runs VALUES ('theirs', 2, NULL, 'running', '{\"kind\": \"doctor\"}')")
    assert cli("recover", first.run_id, "--state-dir", state, "--yes").returncode == 0
    statuses = dict(rows(global_db(state), "SELECT id, status || ':' || coalesce(json_extract(report_json, '$.interrupted'), 0)"
                                           " FROM migration_runs WHERE id IN ('killed', 'theirs')"))
    assert statuses == {"killed": "failed:1", "theirs": "running:0"}
