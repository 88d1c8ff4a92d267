"""statekit migrate on the bundled demo install: rows, receipts, retirement, rerun."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import FIXTURES, agent_db, db_dump, global_db, rows, run_cli

MAIN = "3f0c2b7e-1111-4a5b-8c9d-0000000000"
BROKEN = "agents/ops/sessions/9e9e9e9e-3333-4a5b-8c9d-000000000002.jsonl"
BROKEN_ID = "9e9e9e9e-3333-4a5b-8c9d-000000000002"


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes], subprocess.CompletedProcess[str]]:
    root = tmp_path_factory.mktemp("demo")
    shutil.copytree(FIXTURES / "demo-install", root / "demo", symlinks=True)
    state = root / "demo" / ".openclaw"
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--json")
    return state, originals, result


def test_exit_code_and_report(migrated) -> None:
    state, _, result = migrated
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "warning"
    assert [s["path"] for s in report["sources"] if s["status"] in ("failed", "unreadable")] == []
    assert f"{BROKEN}:3: invalid JSON" in result.stderr and "as OpenClaw imports the readable prefix" in result.stderr
    assert "Traceback" not in result.stderr


def test_malformed_transcript_imports_its_readable_prefix_and_is_kept_byte_exact(migrated) -> None:
    """As OpenClaw 2026.9.6 imports it: the lines before the first line that is not JSON; the original stays whole in the retired folder."""
    state, originals, result = migrated
    lines = [line for line in originals[BROKEN].decode().splitlines() if line.strip()]
    got = rows(agent_db(state, "ops"), "SELECT seq, event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (BROKEN_ID,))
    assert got == list(enumerate(lines[:2]))
    run_id = json.loads(result.stdout)["run_id"]
    assert not (state / BROKEN).exists()
    assert (state / ".statekit" / "migrated" / run_id / BROKEN).read_bytes() == originals[BROKEN]


def test_session_rows_follow_the_index(migrated) -> None:
    state, _, _ = migrated
    db = agent_db(state, "main")
    keys = {r[0] for r in rows(db, "SELECT session_key FROM session_entries")}
    assert keys == {
        "agent:main:main",
        "agent:main:telegram:direct:12345",
        "agent:main:telegram:group:-100200:topic:42",
        "agent:main:subagent:release-notes",
        "agent:main:hooks:ping",
    }
    entry = json.loads(rows(db, "SELECT entry_json FROM session_entries WHERE session_key='agent:main:main'")[0][0])
    assert "sessionFile" not in entry and "resolvedSkills" not in entry["skillsSnapshot"]
    assert entry["skillsSnapshot"]["skills"] == ["web"] and entry["totalTokens"] == 5120
    topic = json.loads(rows(db, "SELECT entry_json FROM session_entries WHERE session_key LIKE '%topic:42'")[0][0])
    assert topic["groupChannel"] == "#release-team" and "room" not in topic
    session = rows(db, "SELECT session_id, session_scope, chat_type, channel, display_name, created_at, updated_at FROM sessions WHERE session_key='agent:main:main'")
    assert session == [(MAIN + "01", "shared-main", "direct", "telegram", "Main chat", 1767226500000, 1767226500000)]
    group = rows(db, "SELECT session_scope, chat_type, primary_conversation_id FROM sessions WHERE session_key LIKE '%topic:42'")[0]
    assert group[0] == "group" and group[1] == "group" and group[2].startswith("conv:")
    conv = rows(db, "SELECT channel, kind, peer_id, thread_id FROM conversations WHERE conversation_id = ?", (group[2],))
    assert conv == [("telegram", "group", "-100200", "42")]
    assert rows(db, "SELECT role FROM session_conversations WHERE conversation_id = ?", (group[2],)) == [("primary",)]
    routes = rows(db, "SELECT session_key, session_id FROM session_routes ORDER BY session_key")
    assert len(routes) == 5 and ("agent:main:main", MAIN + "01") in routes
    no_paths = rows(db, "SELECT count(*) FROM session_entries WHERE entry_json LIKE '%.jsonl%' OR entry_json LIKE '%/home/olduser%'")
    assert no_paths == [(0,)]


def test_transcript_events_match_the_files(migrated) -> None:
    state, originals, _ = migrated
    for rel, data in originals.items():
        if not rel.endswith(".jsonl") or rel == BROKEN or "/cron/" in f"/{rel}":
            continue
        if not rel.startswith("agents/"):
            continue
        agent = rel.split("/")[1]
        lines = [line for line in data.decode().splitlines() if line.strip()]
        header = json.loads(lines[0])
        got = rows(agent_db(state, agent), "SELECT seq, event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (header["id"],))
        assert [s for s, _ in got] == list(range(len(lines))), rel
        if header.get("version") == 3:
            assert [e for _, e in got] == lines, rel
        ids = [json.loads(e).get("id") for _, e in got]
        assert ids[0] == header["id"] or header.get("version") is None


def test_v3_event_identities_and_idempotency_keys(migrated) -> None:
    state, _, _ = migrated
    db = agent_db(state, "main")
    ident = rows(db, "SELECT event_id, seq, event_type, parent_id, message_idempotency_key FROM transcript_event_identities WHERE session_id = ? ORDER BY seq", (MAIN + "02",))
    assert ident[0][:4] == (MAIN + "02", 0, "session", None)
    assert ident[1][2:] == ("message", None, f"idem-{MAIN}02-0")
    assert ident[2][3] == ident[1][0]


def test_v1_transcript_is_upgraded_with_deterministic_ids(migrated) -> None:
    """OpenClaw 2026.9.6's ids for a version-1 transcript: sha256(file path NUL session id)[:16] + "-" + position in base 36."""
    state, _originals, _ = migrated
    events = [json.loads(e) for (e,) in rows(agent_db(state), "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (MAIN + "04",))]
    assert events[0]["version"] == 3 and events[0]["id"] == MAIN + "04" and events[0]["cwd"] == "/home/olduser/project"
    path = os.path.abspath(state / "agents/main/sessions" / f"{MAIN}04.jsonl")
    prefix = hashlib.sha256(f"{path}\0{MAIN}04".encode()).hexdigest()[:16]
    assert [e["id"] for e in events[1:]] == [f"{prefix}-{n}" for n in range(1, len(events))]
    assert events[1]["parentId"] is None and events[2]["parentId"] == events[1]["id"]
    compaction = events[4]
    assert "firstKeptEntryIndex" not in compaction and compaction["firstKeptEntryId"] == events[3]["id"]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_v1_ids_match_javascript(migrated) -> None:
    """The same ids computed by Node (the hash of the UTF-8 path, base-36 positions), beyond ten entries too."""
    state, _originals, _ = migrated
    path = os.path.abspath(state / "agents/main/sessions" / f"{MAIN}04.jsonl")
    script = (
        "const c=require('crypto');const [p,s]=process.argv.slice(1);"
        "const x=c.createHash('sha256').update(p).update('\\0').update(s).digest('hex').slice(0,16);"
        "console.log(JSON.stringify([1,2,3,4,5,35,36,1295].map(i=>x+'-'+i.toString(36))));"
    )
    node = subprocess.run(["node", "-e", script, path, MAIN + "04"], capture_output=True, text=True, check=True)
    from statekit.legacy_readers.transcripts import v1_entry_id, v1_id_prefix

    prefix = v1_id_prefix(path, MAIN + "04")
    assert [v1_entry_id(prefix, i) for i in (1, 2, 3, 4, 5, 35, 36, 1295)] == json.loads(node.stdout)
    events = [json.loads(e) for (e,) in rows(agent_db(state), "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (MAIN + "04",))]
    assert [e["id"] for e in events[1:6]] == json.loads(node.stdout)[: len(events[1:6])]


def test_v2_hook_messages_become_custom(migrated) -> None:
    state, _, _ = migrated
    events = [json.loads(e) for (e,) in rows(agent_db(state), "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (MAIN + "05",))]
    assert events[0]["version"] == 3 and events[2]["message"]["role"] == "custom"
    assert events[2]["message"]["customType"] == "reminder"  # kept (9.6 sets "hook" only when there is none)
    assert [e.get("id") for e in events[1:]] == ["a1b2c3d4", "b2c3d4e5", "c3d4e5f6"]


def test_topic_transcript_belongs_to_its_session(migrated) -> None:
    state, _, _ = migrated
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id = ?", (MAIN + "03",)) == [(3,)]


def test_receipts_and_retirement(migrated) -> None:
    state, originals, result = migrated
    run_id = json.loads(result.stdout)["run_id"]
    receipts = rows(global_db(state), "SELECT source_path, status, removed_source, source_sha256, last_run_id FROM migration_sources")
    assert {r[0] for r in receipts} >= {BROKEN}
    for path, status, removed, sha, last_run in receipts:
        assert (status, removed, last_run) == ("completed", 1, run_id), path
        retired = state / ".statekit" / "migrated" / run_id / path
        assert retired.read_bytes() == originals[path], path
        assert hashlib.sha256(originals[path]).hexdigest() == sha
        assert not (state / path).exists()
    assert rows(global_db(state), "SELECT status FROM migration_runs WHERE id = ?", (run_id,)) == [("warning",)]
    assert (state / "workspace" / "AGENTS.md").read_bytes() == originals["workspace/AGENTS.md"]
    assert (state / "openclaw.json").read_bytes() == originals["openclaw.json"]


def test_rerun_imports_nothing_and_changes_no_row(migrated) -> None:
    state, _, _ = migrated
    dbs = sorted(state.rglob("openclaw*.sqlite"))
    before = {db: db_dump(db) for db in dbs}
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "nothing-to-do" and report["run_id"] is None
    human = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert human.returncode == 0, human.stderr
    after = {db: db_dump(db) for db in dbs}
    for db in dbs:
        for table in before[db]:
            if table in ("migration_runs", "migration_sources", "agent_databases"):
                continue
            assert after[db][table] == before[db][table], (db, table)
