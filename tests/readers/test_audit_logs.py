"""Legacy audit logs (config audit, file-transfer audit, Crestodian audit) -> plugin_state_entries."""

from __future__ import annotations

import hashlib
import json
import tarfile
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, place, query, report_json, run
from helpers import CORPUS, FIXTURES, corpus_or_skip
from statekit.legacy_readers import reader_for
from statekit.legacy_readers.audit_logs import mask_argv

FIX = FIXTURES / "readers" / "audit-logs"
SECRETS = ("fixture-gateway-token-0000", "sk-fixturekey0000000000000000")


def _key(number: int, line: bytes) -> str:
    return f"legacy:{number}:{hashlib.sha256(line.strip()).hexdigest()[:16]}"


def test_claims():
    for rel in ("logs/config-audit.jsonl", "audit/file-transfer.jsonl", "audit/crestodian.jsonl"):
        assert reader_for(rel).kind == "audit-jsonl"
    assert reader_for("audit/other.jsonl") is None


def test_mask_argv():
    masked, count = mask_argv(
        ["node", "cli", "--gateway-token", "tok", "--api-key=abc", "--custom-api-key", "k", "OPENAI_API_KEY=zzz", "Bearer abcdefghijklmnop", 3, "--port", "1"]
    )
    assert masked == ["node", "cli", "--gateway-token", "***", "--api-key=***", "--custom-api-key", "***", "OPENAI_API_KEY=***", "***", 3, "--port", "1"]
    assert count == 5


def test_round_trip(tmp_path: Path):
    files = {
        "logs/config-audit.jsonl": (FIX / "config-audit.jsonl").read_bytes(),
        "audit/file-transfer.jsonl": (FIX / "file-transfer.jsonl").read_bytes(),
        "audit/crestodian.jsonl": (FIX / "crestodian.jsonl").read_bytes(),
    }
    state, originals = new_state(tmp_path, files)
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, "logs/config-audit.jsonl", originals["logs/config-audit.jsonl"], records=2)
    assert_imported(state, report, "audit/file-transfer.jsonl", originals["audit/file-transfer.jsonl"], records=2)
    assert_imported(state, report, "audit/crestodian.jsonl", originals["audit/crestodian.jsonl"], records=1)

    lines = files["logs/config-audit.jsonl"].split(b"\n")
    config = query(state, "SELECT * FROM plugin_state_entries WHERE plugin_id = 'core:config' ORDER BY entry_key")
    assert [r["entry_key"] for r in config] == [_key(1, lines[0]), _key(3, lines[2])]
    first = config[0]
    assert (first["namespace"], first["created_at"], first["expires_at"]) == ("audit", 1772359200000, None)
    value = json.loads(first["value_json"])
    assert value["argv"][2:] == ["onboard", "--gateway-token", "***", "--custom-api-key=***"]
    assert {k: v for k, v in value.items() if k != "argv"} == {k: v for k, v in json.loads(lines[0]).items() if k != "argv"}
    assert json.loads(config[1]["value_json"]) == json.loads(lines[2])  # nothing to mask: kept as is

    transfer = query(state, "SELECT entry_key, namespace, created_at, value_json FROM plugin_state_entries WHERE plugin_id = 'file-transfer'")
    assert [(r["namespace"], r["created_at"]) for r in transfer] == [("audit", 1772438400000), ("audit", 1772438460000)]
    assert json.loads(transfer[1]["value_json"]) == {"timestamp": "2026-03-02T08:01:00Z", "decision": "deny", "path": "/etc/shadow", "direction": "download"}
    crest = query(state, "SELECT namespace, entry_key, created_at FROM plugin_state_entries WHERE plugin_id = 'core:crestodian'")
    assert crest == [{"namespace": "audit", "entry_key": _key(1, files["audit/crestodian.jsonl"].split(b"\n")[0]), "created_at": 1772528400000}]

    dumped = json.dumps(query(state, "SELECT value_json FROM plugin_state_entries")) + report_json(report)
    dumped += json.dumps(query(state, "SELECT report_json FROM migration_sources"))
    for secret in SECRETS:
        assert secret not in dumped


def test_missing_time_falls_back_to_mtime_and_reimport_converges(tmp_path: Path):
    state, _ = new_state(tmp_path, {"audit/file-transfer.jsonl": '{"decision":"allow"}\n{"decision":"deny","timestamp":"not a date"}\n'})
    run(state)
    assert [r["created_at"] for r in query(state, "SELECT created_at FROM plugin_state_entries ORDER BY entry_key")] == [MTIME, MTIME]
    place(state, "audit/file-transfer.jsonl", '{"decision":"deny","timestamp":"not a date"}\n', MTIME + 1)
    assert run(state).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    rows = query(state, "SELECT entry_key, value_json FROM plugin_state_entries ORDER BY entry_key")
    # The log came back after its migration (issue 11 item 5): the imported lines stay, the new file's line is added.
    assert sorted(json.loads(r["value_json"])["decision"] for r in rows) == ["allow", "deny", "deny"]
    assert sum(r["entry_key"].startswith("legacy:1:") for r in rows) == 2


def test_runtime_rows_survive_reimport(tmp_path: Path):
    state, _ = new_state(tmp_path, {"audit/crestodian.jsonl": '{"timestamp":"2026-01-01T00:00:00Z"}\n'})
    run(state)
    from helpers import global_db, open_db

    conn = open_db(global_db(state))
    conn.execute("INSERT INTO plugin_state_entries VALUES ('core:crestodian','audit','2026-02-01T00:00:00Z:x:uuid','{}',1,NULL)")
    conn.commit()
    conn.close()
    place(state, "audit/crestodian.jsonl", '{"timestamp":"2026-01-02T00:00:00Z"}\n', MTIME + 7)
    run(state)
    assert len(query(state, "SELECT * FROM plugin_state_entries WHERE plugin_id = 'core:crestodian'")) == 3  # the log came back after its migration: its old line is kept, the new one added (issue 11 item 5)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b'{"ts":"2026-01-01T00:00:00Z"}\n{"ts": oops}\n{"ts":"x"}\n', ":2: invalid JSON"),
        (b'{"ts":"2026-01-01T00:00:00Z"}\n[1,2]\n', ":2: expected a JSON object"),
        (b'{"ts":"2026-01-01T00:00:00Z"}\n{"argv":["--token","torn-secret-abc"', ":2: invalid JSON"),
        (b'{"a":1}\n\xff\xfe\n', ":2: invalid UTF-8"),
    ],
)
def test_bad_line_fails_whole_file(tmp_path: Path, content: bytes, needle: str):
    state, originals = new_state(tmp_path, {"logs/config-audit.jsonl": content})
    report = run(state)
    message = assert_failed_in_place(state, report, "logs/config-audit.jsonl", originals["logs/config-audit.jsonl"], needle)
    assert "torn-secret-abc" not in message and "torn-secret-abc" not in report_json(report)


@pytest.mark.corpus
@pytest.mark.parametrize(("tarball", "count"), [("legacy-2026.5.28-smoke", 6), ("legacy-2026.7.35-std", 7)])
def test_real_config_audit_logs(tmp_path: Path, tarball: str, count: int):
    corpus = corpus_or_skip()
    with tarfile.open(corpus / "generated" / f"{tarball}.tar") as archive:
        data = archive.extractfile("home/.openclaw/logs/config-audit.jsonl").read()
    state, originals = new_state(tmp_path, {"logs/config-audit.jsonl": data})
    report = run(state)
    assert_imported(state, report, "logs/config-audit.jsonl", originals["logs/config-audit.jsonl"], records=count)
    rows = query(state, "SELECT entry_key, created_at, value_json FROM plugin_state_entries WHERE plugin_id = 'core:config' AND namespace = 'audit'")
    assert len(rows) == count
    lines = [line for line in data.split(b"\n") if line.strip()]
    by_key = {r["entry_key"]: r for r in rows}
    for number, line in enumerate(lines, 1):
        row = by_key[_key(number, line)]
        record = json.loads(line)
        assert json.loads(row["value_json"]) == record  # no credential-looking argv in these real logs
        assert row["created_at"] > 1_700_000_000_000
    assert CORPUS.is_dir()
