"""The interop harness's own parts, without OpenClaw: model stand-in, legacy counts, dumps, allow-list, slot."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

import pytest

from interop_db import (AllowList, AllowListError, ByName, KnownDifference, NotCompared, compare, dump_state,
                        load_allow_list)
from interop_model import REPLY_PREFIX, stand_in_model
from interop_reports import doctor_imports
from interop_setup import InteropSetupError, InteropUnavailable, find_or_install
from interop_trees import HomeSlot, SlotBusy, TreeSource, transcript_message_count
from helpers import open_db

pytestmark = pytest.mark.interop


def _post(port: int, body: dict[str, object]) -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.read().decode()


def test_stand_in_model_answers_chat_completions_plain_and_streamed(tmp_path: Path) -> None:
    log = tmp_path / "model.jsonl"
    with stand_in_model(0, log) as model:
        status, text = _post(model.port, {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]})
        assert status == 200
        reply = json.loads(text)["choices"][0]["message"]
        assert reply["role"] == "assistant" and reply["content"].startswith(REPLY_PREFIX)
        status, text = _post(model.port, {"model": "fake-model", "stream": True, "stream_options": {"include_usage": True},
                                          "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]})
        events = [line[len("data: "):] for line in text.splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        streamed = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
        assert streamed == reply["content"]  # the same user text gets the same answer
        assert chunks[-1]["usage"]["total_tokens"] > 0
        assert model.answered == 2
    assert [json.loads(line)["stream"] for line in log.read_text().splitlines()] == [False, True]


def test_legacy_message_count_stops_at_a_torn_line_and_counts_compactions(tmp_path: Path) -> None:
    lines = [{"type": "session", "id": "s-1"}, {"type": "model_change", "id": "m"},
             {"type": "message", "id": "1"}, {"type": "compaction", "summary": "x"}, {"type": "custom", "id": "c"},
             {"type": "message", "id": "2"}]
    path = tmp_path / "whatever-topic-9.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"type":"message","id":"3","mes\n'
                    + json.dumps({"type": "message", "id": "4"}) + "\n")
    assert transcript_message_count(path) == ("s-1", 3)
    headless = tmp_path / "abc-topic-9.jsonl"
    headless.write_text(json.dumps({"type": "message", "id": "1"}) + "\n")
    assert transcript_message_count(headless) == ("abc", 1)


def _db(path: Path, script: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = open_db(path)
    con.executescript(script)
    con.close()


SCHEMA = """
CREATE TABLE cron_jobs (job_id TEXT PRIMARY KEY, name TEXT);
CREATE TABLE cron_job_scratch (job_id TEXT, k TEXT, PRIMARY KEY (job_id, k));
CREATE TABLE migration_runs (id TEXT PRIMARY KEY);
CREATE TABLE counters (n INTEGER PRIMARY KEY);
CREATE TABLE statekit_only (id TEXT PRIMARY KEY);
CREATE TABLE sessions (session_id TEXT PRIMARY KEY, session_key TEXT);
CREATE TABLE transcript_events (session_id TEXT, seq INTEGER, event_json TEXT, PRIMARY KEY (session_id, seq));
"""


def _state(root: Path, heartbeat_id: str, extra: str = "") -> Path:
    _db(root / "state" / "openclaw.sqlite", SCHEMA + f"""
INSERT INTO cron_jobs VALUES ('job-1', 'daily'), ('{heartbeat_id}', 'heartbeat-main');
INSERT INTO cron_job_scratch VALUES ('{heartbeat_id}', 'notes');
INSERT INTO migration_runs VALUES ('{heartbeat_id}');
INSERT INTO counters VALUES (1), (2);
INSERT INTO sessions VALUES ('s1', 'agent:main:main');
INSERT INTO transcript_events VALUES ('s1', 0, '{{"type":"session","id":"s1"}}'), ('s1', 1, '{{"type":"message","id":"e1"}}');
""" + extra)
    return root


def test_compare_honours_the_allow_list_and_finds_real_differences(tmp_path: Path) -> None:
    allow = load_allow_list()
    a = dump_state(_state(tmp_path / "A", "hb-random-1"), allow)
    same = dump_state(_state(tmp_path / "B", "hb-random-2", "INSERT INTO statekit_only VALUES ('x');"), allow)
    result = compare(a, same, allow)
    assert result.failures == []  # the heartbeat job compared by name, bookkeeping not compared
    assert result.extras == ["state/openclaw.sqlite statekit_only (1 rows only in B)"]
    assert compare(a, same, allow, "Error: constraint failed in statekit_only").failures[0].table == "statekit_only"

    changed = dump_state(_state(tmp_path / "C", "hb-random-3", """
UPDATE sessions SET session_key = NULL; INSERT INTO counters VALUES (3);
UPDATE cron_jobs SET job_id = 'job-2' WHERE job_id = 'job-1';
INSERT INTO transcript_events VALUES ('s1', 2, '{"type":"message","id":"e2"}');"""), allow)
    failures = {(d.table, d.ids) for d in compare(a, changed, allow).failures}
    assert ("counters", ()) in failures                      # rowid table: by count
    assert ("cron_jobs", ("job-1", "job-2")) in failures     # same count, other ids
    assert ("transcript_events", ("s1",)) in failures
    assert ("session_keys", ("agent:main:main",)) in failures and ("session_keys", ("s1",)) in failures

    lenient = AllowList(allow.not_compared, allow.by_name,
                        (KnownDifference(reason="r", table="cron_jobs", ids=("job-1", "job-2")),
                         KnownDifference(reason="r", table="counters")))
    allowed = compare(a, changed, lenient)
    assert {d.table for d, _ in allowed.allowed} == {"cron_jobs", "counters"}
    assert "cron_jobs" not in {d.table for d in allowed.failures}


def test_allow_list_file_loads_and_every_entry_needs_a_reason(tmp_path: Path) -> None:
    allow = load_allow_list()
    assert allow.ignored("state/openclaw.sqlite", "messages_fts_data") is not None
    assert allow.ignored("state/openclaw.sqlite", "cron_jobs") is None
    assert any(isinstance(e, ByName) and e.name_prefix == "heartbeat-" for e in allow.by_name)
    assert all(isinstance(e, NotCompared) and e.reason for e in allow.not_compared)
    bad = tmp_path / "bad.toml"
    bad.write_text('[[not_compared]]\ntables = ["x"]\n')
    with pytest.raises(AllowListError, match="no reason"):
        load_allow_list(bad)
    bad.write_text('[[ignored]]\nreason = "r"\n')
    with pytest.raises(AllowListError, match="unknown kind"):
        load_allow_list(bad)


DOCTOR_OUTPUT = """\
[state-migrations] Auto-migrated legacy state:
- Upgraded agent database schema in /h/.openclaw/agents/main/agent/openclaw-agent.sqlite: v1 -> v23.
- Migrated 1 task registry sidecar row → shared SQLite state
│
◇  Doctor changes ──────────────╮
│                               │
│  - Imported legacy exec       │
│    approvals into SQLite.     │
│  Cron store normalized.       │
│                               │
├───────────────────────────────╯
◇  Memory search ───────────────╮
│  Migrated nothing; info only. │
├───────────────────────────────╯
"""


def test_doctor_imports_reads_boxes_and_skips_in_place_upgrades() -> None:
    found = doctor_imports(DOCTOR_OUTPUT, load_allow_list().not_import_patterns)
    assert found == ["Migrated 1 task registry sidecar row → shared SQLite state",
                     "Imported legacy exec approvals into SQLite."]
    assert doctor_imports("◇  Doctor changes ───╮\n│  Cron store normalized.  │\n├──╯\n") == []


def test_home_slot_claims_only_its_own_path(tmp_path: Path) -> None:
    home = tmp_path / "gen" / "home"
    home.mkdir(parents=True)
    with pytest.raises(SlotBusy, match="not made by an interop run"):
        HomeSlot(home, claim_marker=True, wait_s=0).claim()
    assert home.is_dir() and not (tmp_path / "gen" / "home.openclaw-interop").exists()
    os.rmdir(home)
    marker = tmp_path / "gen" / "home.openclaw-interop"
    marker.write_text("999999999\n")  # left by a run that died
    slot = HomeSlot(home, claim_marker=True, wait_s=0)
    slot.claim()
    assert marker.read_text() == f"{os.getpid()}\n"
    src = tmp_path / "src"
    (src / ".openclaw").mkdir(parents=True)
    with slot.occupy(src, keep_as=tmp_path / "kept") as at:
        (at / ".openclaw" / "made").write_text("x")
    assert (tmp_path / "kept" / ".openclaw" / "made").exists() and not home.exists()
    with pytest.raises(SlotBusy, match=f"in use by pid {os.getpid()}"):
        HomeSlot(home, claim_marker=True, wait_s=0).claim()
    slot.release()
    assert not marker.exists()


def test_recorded_home_is_used_only_inside_the_temp_dir(tmp_path: Path) -> None:
    import tarfile

    def tree(manifest: str) -> TreeSource:
        (tmp_path / "MANIFEST.txt").write_text(manifest)
        tar = tmp_path / f"t{len(manifest)}.tar"
        with tarfile.open(tar, "w") as archive:
            archive.add(tmp_path / "MANIFEST.txt", arcname="MANIFEST.txt")
        return TreeSource(label="t", archive=tar)

    assert tree("# original HOME: /tmp/gen-1-x/home  (note)\n").recorded_home() == Path("/tmp/gen-1-x/home")
    assert tree("# original HOME: /home/someone\n").recorded_home() is None
    assert tree("# no home here\n").recorded_home() is None
    # without that line: the home below which the tree's own config stores absolute paths
    config = tmp_path / "home" / ".openclaw" / "openclaw.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"agents": {"defaults": {"workspace": "/tmp/gen-2-y/home/.openclaw/workspace"},
                                             "list": [{"agentDir": "/tmp/gen-2-y/home/.openclaw/agents/w/agent"},
                                                      {"workspace": "/srv/elsewhere/.openclaw/w"}]}}))
    with tarfile.open(tmp_path / "t.tar", "w") as archive:
        archive.add(tmp_path / "home", arcname="home")
    assert TreeSource(label="t", archive=tmp_path / "t.tar").recorded_home() == Path("/tmp/gen-2-y/home")


def test_setup_skips_without_npm_and_refuses_a_missing_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InteropSetupError, match="no openclaw binary"):
        find_or_install({"STATEKIT_OPENCLAW_BIN": str(tmp_path / "nope")})
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(InteropUnavailable, match="npm is not on PATH"):
        find_or_install({"STATEKIT_INTEROP_CACHE": str(tmp_path / "cache")})
    assert not any(p.name.startswith(("node26", "openclaw-")) for p in (tmp_path / "cache").iterdir())


def test_setup_skips_when_the_registry_is_unreachable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import socket

    if not shutil.which("npm"):
        pytest.skip("npm is not on PATH here")
    with socket.socket() as sock:  # a port on this machine that nothing listens on
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    monkeypatch.setenv("npm_config_registry", f"http://127.0.0.1:{closed}/")
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    with pytest.raises(InteropUnavailable, match="registry is unreachable"):
        find_or_install({"STATEKIT_INTEROP_CACHE": str(tmp_path / "cache")})
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [".install.lock", "install-logs"]
