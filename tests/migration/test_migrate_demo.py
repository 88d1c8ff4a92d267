"""statekit migrate on the bundled demo install: rows, receipts, retirement, rerun."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import FIXTURES, agent_db, db_dump, global_db, rows, run_cli

MAIN = "3f0c2b7e-1111-4a5b-8c9d-0000000000"
BROKEN = "agents/ops/sessions/9e9e9e9e-3333-4a5b-8c9d-000000000002.jsonl"


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
    failed = [s for s in report["sources"] if s["status"] in ("failed", "unreadable")]
    assert [s["path"] for s in failed] == [BROKEN]
    assert f"{BROKEN}:3: invalid JSON" in result.stderr
    assert "Traceback" not in result.stderr


def test_malformed_file_stays_in_place_byte_identical(migrated) -> None:
    state, originals, _ = migrated
    assert (state / BROKEN).read_bytes() == originals[BROKEN]


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
    state, originals, _ = migrated
    events = [json.loads(e) for (e,) in rows(agent_db(state), "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (MAIN + "04",))]
    assert events[0]["version"] == 3
    assert all(len(e["id"]) == 8 for e in events[1:])
    assert events[1]["parentId"] is None and events[2]["parentId"] == events[1]["id"]
    compaction = events[4]
    assert "firstKeptEntryIndex" not in compaction and compaction["firstKeptEntryId"] == events[3]["id"]
    raw = [json.loads(line) for line in originals[f"agents/main/sessions/{MAIN}04.jsonl"].decode().splitlines()]
    expected = hashlib.sha256(("openclaw-transcript-v1\n" + json.dumps({"index": 1, "entry": raw[1]}, separators=(",", ":"), ensure_ascii=False)).encode()).hexdigest()[:8]
    assert events[1]["id"] == expected


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_v1_ids_match_javascript_json_stringify(migrated) -> None:
    state, originals, _ = migrated
    source = originals[f"agents/main/sessions/{MAIN}04.jsonl"].decode()
    script = (
        "const c=require('crypto');const used=new Set();const out=[];"
        "const lines=require('fs').readFileSync(0,'utf8').split(/\\r?\\n/).filter(l=>l.trim());"
        "lines.forEach((l,index)=>{const entry=JSON.parse(l);if(entry.type==='session')return;"
        "const d=c.createHash('sha256').update('openclaw-transcript-v1\\n'+JSON.stringify({index,entry})).digest('hex');"
        "let id=d;for(let i=0;i+8<=d.length;i+=8){const s=d.slice(i,i+8);if(!used.has(s)){id=s;break;}}used.add(id);out.push(id);});"
        "console.log(JSON.stringify(out));"
    )
    node = subprocess.run(["node", "-e", script], input=source, capture_output=True, text=True, check=True)
    events = [json.loads(e) for (e,) in rows(agent_db(state), "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (MAIN + "04",))]
    assert [e["id"] for e in events[1:]] == json.loads(node.stdout)


def test_v2_hook_messages_become_custom(migrated) -> None:
    state, _, _ = migrated
    events = [json.loads(e) for (e,) in rows(agent_db(state), "SELECT event_json FROM transcript_events WHERE session_id = ? ORDER BY seq", (MAIN + "05",))]
    assert events[0]["version"] == 3 and events[2]["message"]["role"] == "custom"
    assert [e.get("id") for e in events[1:]] == ["a1b2c3d4", "b2c3d4e5", "c3d4e5f6"]


def test_topic_transcript_belongs_to_its_session(migrated) -> None:
    state, _, _ = migrated
    assert rows(agent_db(state), "SELECT count(*) FROM transcript_events WHERE session_id = ?", (MAIN + "03",)) == [(3,)]


def test_receipts_and_retirement(migrated) -> None:
    state, originals, result = migrated
    run_id = json.loads(result.stdout)["run_id"]
    receipts = rows(global_db(state), "SELECT source_path, status, removed_source, source_sha256, last_run_id FROM migration_sources")
    by_path = {r[0]: r for r in receipts}
    assert by_path[BROKEN][1:3] == ("failed", 0)
    for path, status, removed, sha, last_run in receipts:
        if path == BROKEN:
            continue
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
    assert result.returncode == 0, result.stderr  # nothing new failed; the old failure is named as a note
    report = json.loads(result.stdout)
    assert report["status"] == "nothing-to-do" and report["run_id"] is None
    assert any(BROKEN in n and "recorded by run" in n for n in report["notices"])
    human = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert human.returncode == 0 and f"note: {BROKEN}:3: invalid JSON" in human.stderr
    after = {db: db_dump(db) for db in dbs}
    for db in dbs:
        for table in before[db]:
            if table in ("migration_runs", "migration_sources", "agent_databases"):
                continue
            assert after[db][table] == before[db][table], (db, table)
