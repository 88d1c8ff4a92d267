"""A stale writer never erases imported history (issue 11 item 5).

An old process that still writes the old paths after ``statekit migrate`` (a gateway left running on
another host, a cron job of the old release) makes a legacy file *come back*: a new file at the old
path holding only what it wrote since -- three new transcript lines, one new session-index entry, one
new cron run line. The rerun must import what is new, keep every row imported before, and warn with
one line naming the file; ``statekit inspect`` must report such a file (exit 3) so a cron job can alert.
Before a source is retired or deleted (``--remove-sources``) its moved bytes are hashed again: bytes
that changed after the import are put back in place (never deleted), and the next run imports them.

Every test here fails on 308a7ed: the transcript's 4 imported events were replaced by the 3 new ones,
the run log's rows by the new line, the new index entry took over the main session key, inspect said
nothing about the file, and an append between import and retirement was deleted or retired unimported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import rel_harness as h
from statekit import seams
from statekit.migrate import migrate
from statekit.migrate.apply import MigrateOptions

SESSIONS = "agents/main/sessions"
SESSION = "3f0c2b7e-1111-4a5b-8c9d-000000000001"
TRANSCRIPT = f"{SESSIONS}/{SESSION}.jsonl"
INDEX = f"{SESSIONS}/sessions.json"
RUN_LOG = "cron/runs/2724d87a-f7ba-4cb6-8390-83c7ff828e3c.jsonl"
AGENT_DB = "agents/main/agent/openclaw-agent.sqlite"
STATE_DB = "state/openclaw.sqlite"


def _new_lines(count: int, tag: str) -> bytes:
    return b"".join(
        json.dumps({"type": "message", "id": f"{tag}-{i}", "parentId": f"{tag}-{i - 1}" if i else None,
                    "timestamp": f"2026-03-01T00:00:0{i}.000Z", "message": {"role": "user", "content": f"late {i}"}}).encode() + b"\n"
        for i in range(count)
    )


@pytest.fixture()
def migrated(tmp_path: Path) -> Path:
    state = h.copy_world("demo-install", tmp_path)
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert run.returncode in (0, 3) and not run.traceback, run
    assert not (state / TRANSCRIPT).exists()
    return state


def _write(state: Path, rel: str, data: bytes) -> None:
    path = state / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def _events(state: Path, session: str = SESSION) -> list[str]:
    return [r[0] for r in h._rows(state / AGENT_DB, f"SELECT event_json FROM transcript_events WHERE session_id = '{session}' ORDER BY seq")]


def _came_back_lines(run: h.Run, rel: str) -> list[str]:
    return [line for line in run.stderr.splitlines() if line.startswith("statekit: warning:") and f"{rel}: came back" in line]


def test_transcript_that_comes_back_keeps_its_imported_events(migrated: Path) -> None:
    state = migrated
    before = _events(state)
    assert len(before) == 4
    identities = f"SELECT count(*) FROM transcript_event_identities WHERE session_id = '{SESSION}'"
    ids_before = h._rows(state / AGENT_DB, identities)[0][0]
    _write(state, TRANSCRIPT, _new_lines(3, "late"))
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert run.returncode == 3 and not run.traceback, run
    assert len(_came_back_lines(run, TRANSCRIPT)) == 1, run.stderr
    after = _events(state)
    assert after[:4] == before, "imported events were replaced"
    assert [json.loads(e)["id"] for e in after[4:]] == ["late-0", "late-1", "late-2"]
    assert h._rows(state / AGENT_DB, identities)[0][0] == ids_before + 3
    # the same file again (a rerun after a crash, or the writer rewrote it whole): nothing is doubled
    _write(state, TRANSCRIPT, _new_lines(3, "late") + _new_lines(1, "later"))
    again = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert again.returncode == 3 and not again.traceback, again
    assert [json.loads(e)["id"] for e in _events(state)[4:]] == ["late-0", "late-1", "late-2", "later-0"]
    h.FIGURES["stale-writer/transcript"]["merged"] += 1


def test_session_index_that_comes_back_adds_its_entry_and_takes_nothing_over(migrated: Path) -> None:
    state = migrated
    keys = "SELECT session_key, session_id FROM session_entries ORDER BY session_key"
    before = h._rows(state / AGENT_DB, keys)
    routes = h._rows(state / AGENT_DB, "SELECT session_key, session_id FROM session_routes ORDER BY session_key")
    # a plain direct-chat key and no main key: on a fresh install this entry would become agent:main:main
    _write(state, INDEX, json.dumps({"telegram:direct:99999": {"sessionId": "stale-new-1", "updatedAt": 1900000000000}}).encode())
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert run.returncode == 3 and not run.traceback, run
    assert len(_came_back_lines(run, INDEX)) == 1, run.stderr
    after = h._rows(state / AGENT_DB, keys)
    assert set(before) <= set(after), "an imported session entry was replaced"
    assert ("agent:main:telegram:direct:99999", "stale-new-1") in after
    assert set(routes) <= set(h._rows(state / AGENT_DB, "SELECT session_key, session_id FROM session_routes ORDER BY session_key"))
    h.FIGURES["stale-writer/session-index"]["merged"] += 1


def test_run_log_that_comes_back_keeps_its_imported_runs(migrated: Path) -> None:
    state = migrated
    rows = "SELECT seq, entry_json FROM cron_run_logs ORDER BY seq"
    before = h._rows(state / STATE_DB, rows)
    assert before
    late = {"ts": 1767430805000, "jobId": "2724d87a-f7ba-4cb6-8390-83c7ff828e3c", "action": "finished", "status": "ok", "summary": "late run"}
    _write(state, RUN_LOG, json.dumps(late).encode() + b"\n")
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert run.returncode == 3 and not run.traceback, run
    assert len(_came_back_lines(run, RUN_LOG)) == 1, run.stderr
    after = h._rows(state / STATE_DB, rows)
    assert after[: len(before)] == before and len(after) == len(before) + 1
    assert json.loads(after[-1][1])["summary"] == "late run"
    h.FIGURES["stale-writer/run-log"]["merged"] += 1


def test_inspect_reports_files_that_came_back(migrated: Path) -> None:
    state = migrated
    quiet = h.fork_cli("inspect", "--state-dir", state)
    assert quiet.returncode == 0, quiet
    _write(state, TRANSCRIPT, _new_lines(3, "late"))
    _write(state, RUN_LOG, b'{"ts":1767430805000,"jobId":"2724d87a-f7ba-4cb6-8390-83c7ff828e3c","action":"finished","status":"ok"}\n')
    found = h.fork_cli("inspect", "--state-dir", state)
    assert found.returncode == 3 and not found.traceback, found
    lines = [line for line in found.stdout.splitlines() if "came back after run" in line]
    assert sorted(rel for rel in (TRANSCRIPT, RUN_LOG) if any(rel in line for line in lines)) == sorted((TRANSCRIPT, RUN_LOG))
    assert len(lines) == 2, lines
    report = json.loads(h.fork_cli("inspect", "--state-dir", state, "--json").stdout)
    assert sorted(report["came_back"]) == sorted((TRANSCRIPT, RUN_LOG))
    # after the merge nothing is left to report
    assert h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup").returncode == 3
    assert h.fork_cli("inspect", "--state-dir", state).returncode == 0
    h.FIGURES["stale-writer/inspect"]["reported"] += len(lines)


@pytest.mark.parametrize("remove_sources", [False, True], ids=["retire", "remove-sources"])
def test_bytes_appended_after_the_import_are_never_lost(tmp_path: Path, remove_sources: bool) -> None:
    """A writer appends to a transcript after its rows commit, before it is retired: the moved bytes are checked."""
    state = h.copy_world("demo-install", tmp_path)
    target = state / TRANSCRIPT
    appended = _new_lines(2, "racing")
    fired: list[str] = []

    def append_once(name: str) -> None:
        if name == "after-commit" and not fired and target.exists() and (state / AGENT_DB).exists() and _events(state):  # its rows just committed
            with open(target, "ab") as handle:
                handle.write(appended)
            fired.append(name)

    previous = seams.install_checkpoint_hook(append_once)
    try:
        report = migrate(state, MigrateOptions(backup=False, remove_sources=remove_sources))
    finally:
        seams.install_checkpoint_hook(previous)
    assert fired
    assert any(w.startswith(f"{TRANSCRIPT}: changed after it was imported; left in place") for w in report.warnings), report.warnings
    assert target.read_bytes().endswith(appended), "the appended bytes were not put back"
    again = migrate(state, MigrateOptions(backup=False, remove_sources=remove_sources))
    assert not target.exists()
    assert [json.loads(e)["id"] for e in _events(state)[-2:]] == ["racing-0", "racing-1"]
    assert len(_events(state)) == 4 + 2
    assert again.status == "warning"  # the changed file is named once more as it is merged
    h.FIGURES["stale-writer/retire-rehash"]["kept"] += 1
