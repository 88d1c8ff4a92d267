"""exec-approvals.json -> exec_approvals_config as OpenClaw 2026.9.6 imports it (seconds->ms, stubs, newer DB rows, path-only errors)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import global_db, open_db, run_cli
from statekit.legacy_readers.base import fingerprint
from test_devices_harness import (
    MTIME,
    assert_left_in_place,
    assert_retired,
    assert_secrets_absent,
    corpus_files,
    fixture,
    one,
    place,
    place_fixture,
    receipt,
    rows,
    run,
    state,  # noqa: F401  (fixture)
)

REL = "exec-approvals.json"
SOCKET_TOKEN = "test-socket-token-secret-0001"


def test_round_trip(state: Path) -> None:
    original = place_fixture(state, "exec-approvals/exec-approvals.json", REL)
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, REL, original)
    assert row["target_table"] == "global.exec_approvals_config"
    assert row["report"]["lastUsedAt_seconds_converted"] == 2
    assert row["report"]["has_socket_token"] is True
    assert row["report"]["socket_token_fingerprint"] == fingerprint(SOCKET_TOKEN)
    assert row["report"]["decision"] == "imported"
    got = one(state, "SELECT * FROM exec_approvals_config")
    text = got.pop("raw_json")
    raw = json.loads(text)
    assert got == {
        "config_key": "current",
        "socket_path": "~/.openclaw/exec-approvals.sock",
        "has_socket_token": 1,
        "default_security": "allowlist",
        "default_ask": "on-miss",
        "default_ask_fallback": "deny",
        "auto_allow_skills": 1,
        "agent_count": 3,
        "allowlist_count": 4,
        "updated_at_ms": MTIME,
    }
    # JSON.stringify(file, null, 2) + "\n", the socket token kept (as OpenClaw keeps it; never in a receipt or message).
    assert text.startswith('{\n  "version": 1,\n  "socket": {\n    "path": "~/.openclaw/exec-approvals.sock",\n') and text.endswith("\n}\n")
    assert raw["socket"] == {"path": "~/.openclaw/exec-approvals.sock", "token": SOCKET_TOKEN}
    assert list(raw["agents"]) == ["main", "*", "work"]  # key order kept
    # Entries in OpenClaw's schema key order; a missing id is filled with a UUID (stable across reruns).
    assert list(raw["agents"]["main"]["allowlist"][0]) == ["pattern", "id", "lastUsedAt"]
    generated = raw["agents"]["work"]["allowlist"][0]
    assert list(generated) == ["pattern", "id"] and re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", generated["id"])
    assert [e["lastUsedAt"] for e in raw["agents"]["main"]["allowlist"]] == [1790000000123, 1790000100000]
    assert raw["agents"]["*"]["allowlist"][0]["lastUsedAt"] == 1790000200500
    assert "lastUsedAt" not in raw["agents"]["work"]["allowlist"][0]
    assert raw["agents"]["main"]["allowlist"][1]["lastUsedCommand"] == "git status"
    assert any("2 lastUsedAt value(s) were in seconds" in n for n in report.notices)
    assert_secrets_absent(state, report, [SOCKET_TOKEN])


def test_normalised_as_openclaw_normalises_it(state: Path) -> None:
    """parsePersistedExecApprovals + normalizeExecApprovalsInternal (2026.9.6): legacy default agent, string entries, commandText."""
    document = json.loads(fixture("exec-approvals/exec-approvals.json"))
    for agent in document["agents"].values():
        for number, entry in enumerate(agent["allowlist"]):
            entry.setdefault("id", f"00000000-0000-4000-8000-00000000000{number}")
            if entry.get("lastUsedAt", 1e12) < 1e11:
                entry["lastUsedAt"] *= 1000  # statekit converts seconds; here the file already has ms
    document["agents"]["default"] = {"ask": "off", "allowlist": ["  /bin/echo  ", {"pattern": "/usr/bin/ls", "commandText": "ls -la"}]}
    document["future"] = {"x": 1}
    original = place(state, REL, document)
    run(state)
    text = one(state, "SELECT raw_json FROM exec_approvals_config")["raw_json"]
    raw = json.loads(text)
    assert "future" not in raw  # unknown top-level keys: OpenClaw's normaliser rebuilds the document
    assert "default" not in raw["agents"] and raw["agents"]["main"]["ask"] == "off"  # legacy default merged into main
    assert [e["pattern"] for e in raw["agents"]["main"]["allowlist"]] == ["/usr/bin/ls", "/usr/bin/git", "/bin/echo"]  # ls once
    assert all("commandText" not in e for e in raw["agents"]["main"]["allowlist"])
    assert original  # the retired copy keeps every byte

def test_policy_free_stub_imports_nothing_and_is_retired(state: Path) -> None:
    original = place_fixture(state, "exec-approvals/stub.json", REL)
    report = run(state)
    assert report.exit_code == 0
    row = assert_retired(state, report, REL, original)
    assert row["report"]["stub"] is True
    assert row["report"]["decision"] == "stub: policy-free file, nothing to import; retired"
    assert rows(state, "SELECT * FROM exec_approvals_config") == []


def test_stub_socket_is_imported_only_without_a_database_row(state: Path, tmp_path: Path) -> None:
    original = place_fixture(state, "exec-approvals/stub-socket.json", REL)
    report = run(state)
    row = assert_retired(state, report, REL, original)
    assert row["report"]["decision"] == "stub: socket imported (no database row yet)"
    got = one(state, "SELECT raw_json, socket_path, has_socket_token, agent_count, allowlist_count FROM exec_approvals_config")
    stub_raw = '{\n  "version": 1,\n  "socket": {\n    "path": "/tmp/oc/exec.sock",\n    "token": "test-socket-token-stub-0002"\n  },\n  "defaults": {},\n  "agents": {}\n}\n'
    assert got == {
        "raw_json": stub_raw,
        "socket_path": "/tmp/oc/exec.sock",
        "has_socket_token": 1,
        "agent_count": 0,
        "allowlist_count": 0,
    }
    # A second stub with another socket, once a row exists: nothing changes.
    document = json.loads(fixture("exec-approvals/stub-socket.json"))
    document["socket"]["path"] = "/elsewhere.sock"
    again = place(state, REL, document, MTIME + 1000)
    report = run(state)
    row = assert_retired(state, report, REL, again)
    assert row["report"]["decision"] == "stub: policy-free file, nothing to import; retired (database row kept)"
    assert one(state, "SELECT socket_path FROM exec_approvals_config")["socket_path"] == "/tmp/oc/exec.sock"
    assert_secrets_absent(state, report, ["test-socket-token-stub-0002"])


def test_not_a_stub_with_unknown_fields(state: Path) -> None:
    original = place(state, REL, {"version": 1, "defaults": {}, "agents": {}, "futureField": True})
    report = run(state)
    row = assert_retired(state, report, REL, original)
    assert row["report"]["stub"] is False and row["report"]["decision"] == "imported"
    # OpenClaw's normaliser keeps only version/socket/defaults/agents: the unknown field stays in the retired copy.
    assert json.loads(one(state, "SELECT raw_json FROM exec_approvals_config")["raw_json"]) == {"version": 1, "socket": {}, "defaults": {}, "agents": {}}


def test_newer_database_row_is_kept(state: Path) -> None:
    place_fixture(state, "exec-approvals/exec-approvals.json", REL)
    run(state)
    conn = open_db(global_db(state))
    conn.execute("UPDATE exec_approvals_config SET raw_json = '{\"version\":1,\"agents\":{}}', agent_count = 0, updated_at_ms = ?", (MTIME + 10**9,))
    conn.commit()
    conn.close()
    document = json.loads(fixture("exec-approvals/exec-approvals.json"))
    document["defaults"]["security"] = "full"
    original = place(state, REL, document, MTIME + 5000)
    report = run(state)
    row = assert_retired(state, report, REL, original)
    assert row["report"]["decision"] == "kept newer database row; file retired"
    assert one(state, "SELECT agent_count, updated_at_ms FROM exec_approvals_config") == {"agent_count": 0, "updated_at_ms": MTIME + 10**9}


def test_older_database_row_is_replaced_but_its_socket_kept(state: Path) -> None:
    place_fixture(state, "exec-approvals/stub-socket.json", REL, MTIME - 1000)
    run(state)
    original = place_fixture(state, "exec-approvals/exec-approvals.json", REL)
    report = run(state)
    row = assert_retired(state, report, REL, original)
    assert row["report"]["decision"] == "replaced older database row (its socket kept)"
    got = one(state, "SELECT raw_json, socket_path, has_socket_token, agent_count, updated_at_ms FROM exec_approvals_config")
    assert (got["socket_path"], got["has_socket_token"], got["agent_count"], got["updated_at_ms"]) == ("/tmp/oc/exec.sock", 1, 3, MTIME)
    assert json.loads(got["raw_json"])["socket"] == {"path": "/tmp/oc/exec.sock", "token": "test-socket-token-stub-0002"}


def test_first_validation_error_numbers_agents_and_hides_keys_and_values(state: Path) -> None:
    original = place_fixture(state, "exec-approvals/bad-last-used.json", REL)
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert result.returncode == 3, result.stdout + result.stderr
    assert (state / REL).read_bytes() == original
    lines = [line for line in result.stderr.splitlines() if REL in line]
    assert lines == ["statekit: warning: exec-approvals.json: agents entry #2.allowlist[1].lastUsedAt: expected a finite number"]
    for hidden in ("secret-agent-name", "yesterday", "test-socket-token-bad-0003"):
        assert hidden not in result.stdout + result.stderr
    failed = receipt(state, REL)
    assert failed["status"] == "failed" and "secret-agent-name" not in failed["report_json"]


@pytest.mark.parametrize(
    ("document", "needle"),
    [
        ({"version": 2, "agents": {}}, "exec-approvals.json: version: unsupported version (expected 1)"),
        ({"agents": {"a": {"allowlist": [{"lastUsedAt": 1}]}}}, "exec-approvals.json: agents entry #1.allowlist[0].pattern: expected a non-empty string"),
        ({"agents": {"a": {"allowlist": {}}}}, "exec-approvals.json: agents entry #1.allowlist: expected an array, found object"),
        ({"defaults": {"autoAllowSkills": "yes"}}, "exec-approvals.json: defaults.autoAllowSkills: expected a boolean, found string"),
        ({"socket": {"token": 5}}, "exec-approvals.json: socket.token: expected a string, found integer"),
        # A value OpenClaw's schema refuses would make it read the row as invalid and deny every command.
        ({"defaults": {"security": "maybe"}}, "exec-approvals.json: defaults.security: expected one of allowlist, full, deny"),
        ({"agents": {"a": {"ask": "sometimes"}}}, "exec-approvals.json: agents entry #1.ask: expected one of always, off, on-miss"),
        ({"agents": {"a": {"mcpTools": [{"server": "s", "tool": "t", "source": "manual", "addedAt": 1}]}}},
         "exec-approvals.json: agents entry #1.mcpTools[0].source: expected a supported value"),
        ({"agents": {"a": {"allowlist": ["  "]}}}, "exec-approvals.json: agents entry #1.allowlist[0]: expected a non-empty string"),
        ([], "exec-approvals.json: expected a JSON object, found array"),
        # Object.keys order: integer-like keys first, so the bad "7" agent is entry #1, not #3.
        ('{"agents": {"b": {}, "a": {}, "7": {"allowlist": [{"pattern": "x", "lastUsedAt": "no"}]}}}',
         "exec-approvals.json: agents entry #1.allowlist[0].lastUsedAt: expected a finite number"),
        ('{"agents": {"a": {"allowlist": [{"pattern": "/bin/ls", "lastUsedAt": NaN}]}}}', "exec-approvals.json: invalid JSON: non-finite number NaN"),
    ],
)
def test_malformed_variants(state: Path, document, needle: str) -> None:
    original = place(state, REL, document if isinstance(document, str) else json.dumps(document))
    report = run(state)
    message = assert_left_in_place(state, report, REL, original)
    assert message.startswith(needle), message


@pytest.mark.corpus
def test_corpus_public_repo_mixed_seconds(tmp_path: Path) -> None:
    """Jeremy-J-J/.openclaw: a '*' agent, per-agent allowlists, two lastUsedAt in seconds, a socket token."""
    state = corpus_files("Jeremy-J-J__.openclaw", [REL], tmp_path)
    original = (state / REL).read_bytes()
    token = json.loads(original)["socket"]["token"]
    report = run(state)
    row = assert_retired(state, report, REL, original)
    assert row["report"]["lastUsedAt_seconds_converted"] == 2
    got = one(state, "SELECT * FROM exec_approvals_config")
    raw = json.loads(got["raw_json"])
    assert (got["agent_count"], got["allowlist_count"], got["has_socket_token"]) == (4, 18, 1)
    assert list(raw["agents"]) == ["main", "*", "dev", "product"]
    assert [e["lastUsedAt"] for e in raw["agents"]["product"]["allowlist"]][2:4] == [1775214200000, 1775214200000]
    assert raw["socket"]["token"] == token  # kept, as OpenClaw keeps it
    assert_secrets_absent(state, report, [token])


@pytest.mark.corpus
def test_corpus_2026_7_database_row_is_not_clobbered(tmp_path: Path) -> None:
    """2026.7.35 keeps exec approvals in its own (foreign, NOT NULL) table: import fills it; a newer row wins."""
    state = corpus_files("legacy-2026.7.35-std", [REL, "state/openclaw.sqlite"], tmp_path)
    original = (state / REL).read_bytes()
    report = run(state)
    row = assert_retired(state, report, REL, original)
    assert row["report"]["decision"] == "imported"
    assert one(state, "SELECT agent_count, allowlist_count, has_socket_token FROM exec_approvals_config") == {
        "agent_count": 2, "allowlist_count": 2, "has_socket_token": 0,
    }
    # Same tree, but OpenClaw wrote a newer row after the file: the row stays.
    state2 = corpus_files("legacy-2026.7.35-std", [REL, "state/openclaw.sqlite"], tmp_path / "second")
    conn = open_db(global_db(state2))
    newer = (2**53 - 1) // 1000
    conn.execute(
        "INSERT INTO exec_approvals_config (config_key, raw_json, socket_path, has_socket_token, agent_count, allowlist_count, updated_at_ms)"
        " VALUES ('current', '{\"version\":1}', NULL, 0, 0, 0, ?)",
        (newer,),
    )
    conn.commit()
    conn.close()
    report = run(state2)
    row = assert_retired(state2, report, REL, original)
    assert row["report"]["decision"] == "kept newer database row; file retired"
    assert one(state2, "SELECT raw_json, updated_at_ms FROM exec_approvals_config") == {"raw_json": '{"version":1}', "updated_at_ms": newer}


@pytest.mark.corpus
def test_corpus_smoke_two_agents(tmp_path: Path) -> None:
    """2026.5.28: `openclaw approvals allowlist add` for main and work; empty socket and defaults."""
    state = corpus_files("legacy-2026.5.28-smoke", [REL], tmp_path)
    original = (state / REL).read_bytes()
    report = run(state)
    row = assert_retired(state, report, REL, original)
    assert row["report"]["lastUsedAt_seconds_converted"] == 0 and row["report"]["has_socket_token"] is False
    got = one(state, "SELECT raw_json, socket_path, default_security, agent_count, allowlist_count FROM exec_approvals_config")
    # The rows 2026.9.6's own doctor wrote for this file (its generated id for the id-less work entry is random).
    expected = original.decode().replace('"lastUsedAt": 1795996621158,\n          "id": "106a6721-e3b6-4431-a58b-8717c137641b"',
                                         '"id": "106a6721-e3b6-4431-a58b-8717c137641b",\n          "lastUsedAt": 1795996621158')
    work_id = json.loads(got["raw_json"])["agents"]["work"]["allowlist"][0]["id"]
    expected = expected.replace('"lastUsedAt": 1795996624063\n', f'"lastUsedAt": 1795996624063,\n          "id": "{work_id}"\n')
    assert got["raw_json"] == expected
    assert (got["socket_path"], got["default_security"], got["agent_count"], got["allowlist_count"]) == (None, None, 2, 2)
