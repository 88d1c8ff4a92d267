"""``statekit sessions``: artifact families archived on delete/reset, restore round-trips, no legacy file touched."""

from __future__ import annotations

import builtins
import json
import os
from pathlib import Path

import pytest

from helpers import agent_db, db_dump, open_db, run_cli, tree_digest
from maint_helpers import T0, checkpoint, cli, copy_state, count, entry, migrated_state, mode, session_row_counts
from statekit.maintenance.sessions import (
    change_session,
    family_of,
    list_session_archives,
    list_sessions,
    preview_change,
    read_session_archive,
    restore_session_archive,
)
from statekit.errors import StatekitError, VerificationError
from statekit.fsutil import sha256_file


def _add_side_rows(state: Path, session_id: str) -> None:
    """A snapshot and two trajectory rows for ``session_id`` (tables the legacy importers fill later)."""
    conn = open_db(agent_db(state))
    with conn:
        conn.execute(
            "INSERT INTO transcript_snapshots(session_id, snapshot_id, reason, event_count, created_at, metadata_json) VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, "snap-1", "compaction", 4, T0, '{"k":1}'),
        )
        conn.executemany(
            "INSERT INTO trajectory_runtime_events(session_id, run_id, seq, event_json, created_at) VALUES (?, ?, ?, ?, ?)",
            [(session_id, "run-a", 0, '{"t":"start"}', T0), (session_id, "run-a", 1, '{"t":"end"}', T0 + 1)],
        )
    conn.close()


def _archive_tables(path: Path) -> dict:
    document, _ = read_session_archive(path)
    return document["tables"]


# --- family collection --------------------------------------------------------------


def test_family_is_deduplicated_in_stable_order_without_empty_strings() -> None:
    value = {
        "sessionId": "cur",
        "compactionCheckpoints": [checkpoint("pre1", "cur"), {"preCompaction": {"sessionId": ""}, "postCompaction": {"sessionId": "post2"}}, "junk"],
        "usageFamilySessionIds": ["u1", "", "pre1", None, 5, "u2"],
    }
    assert family_of(value) == ["cur", "pre1", "post2", "u1", "u2"]
    assert family_of(value, "col") == ["col", "cur", "pre1", "post2", "u1", "u2"]
    assert family_of("not an object", "col") == ["col"]


# --- the four targeted cases of the seed -------------------------------------------------


def test_delete_archives_current_and_pre_compaction_sessions(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {
        "agent:main:main": entry("s-cur", compactionCheckpoints=[checkpoint("s-pre", "s-cur")]),
        "agent:main:other": entry("s-other", T0 + 5),
    }, {"s-pre": 2, "s-cur": 3, "s-other": 1})
    _add_side_rows(state, "s-pre")
    before = {sid: session_row_counts(state, sid) for sid in ("s-pre", "s-cur", "s-other")}
    assert before["s-pre"] == {"sessions": 1, "transcript_events": 5, "transcript_event_identities": 5,
                               "transcript_snapshots": 1, "trajectory_runtime_events": 2}

    change = change_session(state, "delete", "agent:main:main")

    assert change.family == ["s-cur", "s-pre"]
    assert change.archived == ["s-cur", "s-pre"] and change.kept == []
    for sid in ("s-cur", "s-pre"):
        assert set(session_row_counts(state, sid).values()) == {0}
    assert session_row_counts(state, "s-other") == before["s-other"]
    assert count(state, "SELECT count(*) FROM session_entries WHERE session_key = 'agent:main:main'") == 0
    assert count(state, "SELECT count(*) FROM session_routes WHERE session_key = 'agent:main:main'") == 0
    # the archive: private, hashed, zstd, every removed row inside
    archive = change.archive_path
    assert archive is not None and archive.parent == state / ".statekit" / "session-archives" / "main"
    assert mode(archive) == 0o600 and mode(archive.parent) == 0o700 and mode(archive.parent.parent) == 0o700
    assert archive.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"  # zstd frame magic
    receipt = json.loads(change.receipt_path.read_text())
    assert receipt["sha256"] == sha256_file(archive) and receipt["status"] == "committed" and receipt["reason"] == "deleted"
    assert sha256_file(archive).startswith(archive.name.rsplit("-", 1)[1][:16])
    tables = _archive_tables(archive)
    by_table = {t: len(b["rows"]) for t, b in tables.items()}
    assert by_table == {"sessions": 2, "transcript_events": 12, "transcript_event_identities": 12, "transcript_snapshots": 1,
                        "trajectory_runtime_events": 2, "session_conversations": 1, "session_entries": 1, "session_routes": 1}
    assert change.rows == by_table
    event = dict(zip(tables["transcript_events"]["columns"], tables["transcript_events"]["rows"][0]))
    assert event["session_id"] in ("s-cur", "s-pre") and json.loads(event["event_json"])["type"] == "session"


def test_shared_pre_compaction_session_kept_until_last_reference_goes(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {
        "agent:main:a": entry("s-a", compactionCheckpoints=[checkpoint("s-shared", "s-a")]),
        "agent:main:b": entry("s-b", compactionCheckpoints=[checkpoint("s-shared", "s-b")]),
    }, {"s-shared": 2, "s-a": 1, "s-b": 1})
    shared = session_row_counts(state, "s-shared")

    first = change_session(state, "delete", "agent:main:a")
    assert first.archived == ["s-a"] and first.kept == ["s-shared"]
    assert session_row_counts(state, "s-shared") == shared
    assert "s-shared" not in json.dumps(_archive_tables(first.archive_path)["sessions"])

    second = change_session(state, "delete", "agent:main:b")
    assert second.archived == ["s-b", "s-shared"] and second.kept == []
    assert set(session_row_counts(state, "s-shared").values()) == {0}
    assert count(state, "SELECT count(*) FROM sessions") == 0


def test_usage_family_archived_when_unreferenced(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {
        "agent:main:main": entry("s-now", usageFamilySessionIds=["s-old", "", "s-now"]),
        "agent:main:keeper": entry("s-keep", usageFamilySessionIds=["s-older"]),
        "agent:main:drop": entry("s-drop", usageFamilySessionIds=["s-older"]),
    }, {"s-old": 2, "s-now": 1, "s-older": 1, "s-keep": 1, "s-drop": 1})
    change = change_session(state, "delete", "agent:main:main")
    assert change.family == ["s-now", "s-old"] and change.archived == ["s-now", "s-old"]
    assert set(session_row_counts(state, "s-old").values()) == {0}
    # a usage family still referenced by another entry stays
    other = change_session(state, "delete", "agent:main:drop")
    assert other.archived == ["s-drop"] and other.kept == ["s-older"]
    assert session_row_counts(state, "s-older")["transcript_events"] == 3


def test_topic_shaped_key_reads_no_legacy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "agent:main:telegram:group:-100:topic:5"
    state = migrated_state(tmp_path, {key: entry("s-topic", chatType="group", sessionFile="sqlite:::s-topic")}, {"s-topic": 2})
    sessions_dir = state / "agents" / "main" / "sessions"
    sessions_dir.mkdir(parents=True, exist_ok=True)
    # Generated topic variants and trajectory sidecars that a file-era code path would look up:
    # FIFOs hang on open, the unreadable file raises: the test fails loudly if anything reaches them.
    os.mkfifo(sessions_dir / "s-topic-topic-5.jsonl")
    os.mkfifo(sessions_dir / "s-topic.trajectory.jsonl")
    (sessions_dir / "s-topic.trajectory-path.json").write_text("{}")
    (sessions_dir / "s-topic.trajectory-path.json").chmod(0)
    (sessions_dir / "s-topic.jsonl").write_text("not read either\n")
    touched: list[str] = []
    root = str(sessions_dir)

    def spy(name, original):
        def wrapper(path, *args, **kwargs):
            if isinstance(path, (str, os.PathLike)) and os.fspath(path).startswith(root):
                touched.append(f"{name}:{os.fspath(path)}")
            return original(path, *args, **kwargs)
        return wrapper

    for name in ("open", "stat", "lstat", "scandir", "listdir", "access"):
        monkeypatch.setattr(os, name, spy(name, getattr(os, name)))
    monkeypatch.setattr(builtins, "open", spy("builtins.open", builtins.open))

    change = change_session(state, "delete", key)
    monkeypatch.undo()

    assert change.archived == ["s-topic"]
    assert touched == []
    assert (sessions_dir / "s-topic.jsonl").read_text() == "not read either\n"


# --- reset ------------------------------------------------------------------------------


def test_reset_routes_the_key_to_a_fresh_session_and_archives_the_old_family(tmp_path: Path) -> None:
    key = "agent:main:main"
    state = migrated_state(tmp_path, {
        key: entry("s-old", label="Main chat", totalTokens=5120, compactionCheckpoints=[checkpoint("s-pre", "s-old")],
                   usageFamilySessionIds=["s-u"]),
    }, {"s-old": 2, "s-pre": 1, "s-u": 1})
    change = change_session(state, "reset", key)
    new_id = change.new_session_id
    assert new_id and new_id not in ("s-old", "s-pre", "s-u")
    assert change.reason == "reset" and change.archived == ["s-old", "s-pre", "s-u"]
    db = agent_db(state)
    conn = open_db(db)
    (sid, text), = conn.execute("SELECT session_id, entry_json FROM session_entries WHERE session_key = ?", (key,)).fetchall()
    route = conn.execute("SELECT session_id FROM session_routes WHERE session_key = ?", (key,)).fetchone()[0]
    new_row = conn.execute("SELECT session_key, session_scope, chat_type, channel, primary_conversation_id FROM sessions WHERE session_id = ?",
                           (new_id,)).fetchone()
    links = conn.execute("SELECT role FROM session_conversations WHERE session_id = ?", (new_id,)).fetchall()
    remaining = {r[0] for r in conn.execute("SELECT session_id FROM sessions")}
    conn.close()
    fresh = json.loads(text)
    assert sid == route == fresh["sessionId"] == new_id
    assert fresh["label"] == "Main chat" and fresh["lastChannel"] == "telegram"
    assert "compactionCheckpoints" not in fresh and "usageFamilySessionIds" not in fresh and "totalTokens" not in fresh
    assert new_row[:4] == (key, "shared-main", "direct", "telegram") and new_row[4] is not None and links == [("primary",)]
    assert remaining == {new_id}
    receipt = json.loads(change.receipt_path.read_text())
    assert receipt["reason"] == "reset" and receipt["new_session_id"] == new_id
    document, _ = read_session_archive(change.archive_path)
    assert "session_entries" not in document["tables"] and document["previous_entry"]["sessionId"] == "s-old"


# --- restore ------------------------------------------------------------------------------


def test_delete_then_restore_archive_round_trips_rows_exactly(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {
        "agent:main:main": entry("s-cur", compactionCheckpoints=[checkpoint("s-pre", "s-cur")], usageFamilySessionIds=["s-u"]),
        "agent:main:other": entry("s-other"),
    }, {"s-pre": 2, "s-cur": 3, "s-u": 1, "s-other": 1})
    _add_side_rows(state, "s-cur")
    before = db_dump(agent_db(state))
    change = change_session(state, "delete", "agent:main:main")
    assert db_dump(agent_db(state)) != before
    result = restore_session_archive(state, change.archive_path)
    assert result.verified_by == "receipt"
    assert db_dump(agent_db(state)) == before
    assert json.loads(change.receipt_path.read_text())["status"] == "restored"
    # a second restore would overwrite live rows: refused, nothing changes
    with pytest.raises(StatekitError, match="refusing to overwrite live rows"):
        restore_session_archive(state, change.archive_path)
    assert db_dump(agent_db(state)) == before


def test_restore_refuses_a_tampered_archive(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {"agent:main:main": entry("s1")}, {"s1": 1})
    change = change_session(state, "delete", "agent:main:main")
    data = bytearray(change.archive_path.read_bytes())
    data[-5] ^= 0xFF
    change.archive_path.write_bytes(bytes(data))
    after_delete = db_dump(agent_db(state))
    with pytest.raises(VerificationError):
        restore_session_archive(state, change.archive_path)
    result = run_cli("sessions", "restore-archive", change.archive_path, "--state-dir", state, "--yes")
    assert result.returncode == 5 and "does not match its receipt" in result.stderr
    assert db_dump(agent_db(state)) == after_delete


def test_restore_without_receipt_verifies_the_hash_in_the_name(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {"agent:main:main": entry("s1")}, {"s1": 1})
    before = db_dump(agent_db(state))
    change = change_session(state, "delete", "agent:main:main")
    moved = tmp_path / change.archive_path.name
    moved.write_bytes(change.archive_path.read_bytes())
    assert restore_session_archive(state, moved).verified_by == "file name"
    assert db_dump(agent_db(state)) == before


# --- dry run, list, CLI ---------------------------------------------------------------------


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {"agent:main:main": entry("s1", compactionCheckpoints=[checkpoint("s0", "s1")])}, {"s0": 1, "s1": 1})
    digest = tree_digest(state)
    preview = preview_change(state, "delete", "agent:main:main")
    assert preview.archived == ["s1", "s0"] and preview.rows["transcript_events"] == 6
    result = cli("sessions", "reset", "agent:main:main", "--state-dir", state, "--dry-run", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["archived_session_ids"] == ["s1", "s0"]
    assert tree_digest(state) == digest
    assert not list(state.rglob("*-wal")) and not list(state.rglob("*-shm"))


def test_cli_delete_and_list(tmp_path: Path) -> None:
    key = "agent:main:telegram:direct:12345"
    state = migrated_state(tmp_path, {key: entry("s1"), "agent:main:main": entry("s2")}, {"s1": 2, "s2": 1})
    refused = cli("sessions", "delete", key, "--state-dir", state)
    assert refused.returncode == 2 and "--yes" in refused.stderr
    missing = cli("sessions", "delete", "agent:main:nope", "--state-dir", state, "--yes")
    assert missing.returncode == 1 and "no session entry 'agent:main:nope'" in missing.stderr
    listed = json.loads(cli("sessions", "list", "--state-dir", state, "--json").stdout)
    assert {s["session_key"]: s["transcript_events"] for s in listed["agents"][0]["sessions"]} == {key: 5, "agent:main:main": 3}
    done = cli("sessions", "delete", key, "--state-dir", state, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["archived_session_ids"] == ["s1"] and report["archive"].startswith(".statekit/session-archives/main/")
    assert [s["session_key"] for s in list_sessions(state)[0]["sessions"]] == ["agent:main:main"]
    archives = json.loads(cli("sessions", "list", "--archives", "--state-dir", state, "--json").stdout)["archives"]
    assert [(a["reason"], a["session_key"], a["status"]) for a in archives] == [("deleted", key, "committed")]
    human = cli("sessions", "list", "--archives", "--state-dir", state)
    assert human.returncode == 0 and "deleted" in human.stdout
    quiet = cli("sessions", "restore-archive", state / report["archive"], "--state-dir", state, "--yes", "--quiet")
    assert quiet.returncode == 0 and quiet.stdout == ""
    assert count(state, "SELECT count(*) FROM transcript_events WHERE session_id = 's1'") == 5


def test_busy_while_a_gateway_runs(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {"agent:main:main": entry("s1")}, {"s1": 1})
    (state / "gateway.lock").write_text(json.dumps({"pid": os.getpid()}))
    result = run_cli("sessions", "delete", "agent:main:main", "--state-dir", state, "--yes")
    assert result.returncode == 4 and "gateway is running" in result.stderr
    assert count(state, "SELECT count(*) FROM session_entries") == 1


# --- crash safety -------------------------------------------------------------------------


def test_crash_before_commit_leaves_an_orphan_archive_the_next_run_removes(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {"agent:main:main": entry("s1"), "agent:main:b": entry("s2")}, {"s1": 1, "s2": 1})
    before = db_dump(agent_db(state))
    crashed = run_cli("sessions", "delete", "agent:main:main", "--state-dir", state, "--yes",
                      env={"STATEKIT_CRASHPOINT": "session-archive-written"})
    assert crashed.returncode == -9
    assert db_dump(agent_db(state)) == before  # nothing committed
    pending = list_session_archives(state)
    assert [a["status"] for a in pending] == ["pending"]
    done = run_cli("sessions", "delete", "agent:main:b", "--state-dir", state, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert any("orphan archive" in n for n in json.loads(done.stdout)["notices"])
    assert [a["session_key"] for a in list_session_archives(state)] == ["agent:main:b"]
    assert count(state, "SELECT count(*) FROM sessions WHERE session_id = 's1'") == 1


def test_crash_after_commit_is_completed_by_the_next_run(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {"agent:main:main": entry("s1"), "agent:main:b": entry("s2")}, {"s1": 1, "s2": 1})
    crashed = run_cli("sessions", "delete", "agent:main:main", "--state-dir", state, "--yes",
                      env={"STATEKIT_CRASHPOINT": "session-change-committed"})
    assert crashed.returncode == -9
    assert count(state, "SELECT count(*) FROM sessions WHERE session_id = 's1'") == 0
    assert [a["status"] for a in list_session_archives(state)] == ["pending"]
    run_cli("sessions", "delete", "agent:main:b", "--state-dir", state, "--yes").check_returncode()
    statuses = {a["session_key"]: a["status"] for a in list_session_archives(state)}
    assert statuses == {"agent:main:main": "committed", "agent:main:b": "committed"}


def test_unparseable_remaining_entry_that_names_an_id_keeps_it(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {"agent:main:main": entry("s1", usageFamilySessionIds=["s0"]), "agent:main:b": entry("s2")},
                           {"s0": 1, "s1": 1, "s2": 1})
    conn = open_db(agent_db(state))
    with conn:
        conn.execute("UPDATE session_entries SET entry_json = ? WHERE session_key = 'agent:main:b'", ('{broken "s0"',))
    conn.close()
    change = change_session(state, "delete", "agent:main:main")
    assert change.archived == ["s1"] and change.kept == ["s0"]


# --- corpus -------------------------------------------------------------------------------------


@pytest.mark.corpus
def test_corpus_delete_restore_round_trip(tmp_path: Path, migrated_corpus: dict[str, Path]) -> None:
    tried = 0
    for index, (name, source) in enumerate(migrated_corpus.items()):
        state = copy_state(source, tmp_path / f"t{index}")
        for agent in list_sessions(state):
            if not agent["sessions"]:
                continue
            key = agent["sessions"][0]["session_key"]
            db = agent_db(state, agent["agent_id"])
            before = db_dump(db)
            change = change_session(state, "delete", key, agent["agent_id"])
            assert change.archived, (name, key)
            assert db_dump(db) != before
            restore_session_archive(state, change.archive_path)
            assert db_dump(db) == before, name
            tried += 1
    assert tried >= 1


def test_reset_of_a_shared_session_keeps_it_and_records_the_previous_entry(tmp_path: Path) -> None:
    state = migrated_state(tmp_path, {"agent:main:a": entry("s-shared", totalTokens=7), "agent:main:b": entry("s-shared")}, {"s-shared": 1})
    before = session_row_counts(state, "s-shared")
    change = change_session(state, "reset", "agent:main:a")
    assert change.archived == [] and change.kept == ["s-shared"]
    assert session_row_counts(state, "s-shared") == before
    document, _ = read_session_archive(change.archive_path)
    assert document["tables"] == {} and document["previous_entry"]["totalTokens"] == 7
    result = restore_session_archive(state, change.archive_path)
    assert result.rows == {}
