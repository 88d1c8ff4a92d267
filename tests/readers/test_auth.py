"""Auth stores through the real apply loop: auth-profiles.json, auth-state.json, auth.json, oauth.json, .tmp leftovers.

Every agent's store lands in its own database (``auth_profile_store`` / ``auth_profile_state``, key ``primary``),
normalised the way OpenClaw's loader keeps credentials; the global auth tables stay empty.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from helpers import FIXTURES, agent_db, global_db, make_state, rows, run_cli
from legacy_readers.base import fingerprint
from migrate.apply import MigrateOptions, migrate

FIX = FIXTURES / "readers" / "auth"
MAIN = "agents/main/agent"
MTIME_MS = 1_780_000_000_000


def fixture(name: str) -> bytes:
    return (FIX / name).read_bytes()


def build(tmp_path: Path, files: dict[str, Any], mtime_ms: int = MTIME_MS) -> Path:
    state = make_state(tmp_path, files)
    for rel in files:
        os.utime(state / rel, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return state


def store(state: Path, agent: str = "main") -> tuple[dict[str, Any], int]:
    (row,) = rows(agent_db(state, agent), "SELECT store_json, updated_at FROM auth_profile_store WHERE store_key = 'primary'")
    return json.loads(row[0]), row[1]


def store_text(state: Path, agent: str = "main") -> str:
    ((text,),) = rows(agent_db(state, agent), "SELECT store_json FROM auth_profile_store WHERE store_key = 'primary'")
    return str(text)


def state_row(state: Path, agent: str = "main") -> tuple[dict[str, Any], int]:
    (row,) = rows(agent_db(state, agent), "SELECT state_json, updated_at FROM auth_profile_state WHERE state_key = 'primary'")
    return json.loads(row[0]), row[1]


def assert_global_auth_tables_empty(state: Path) -> None:
    assert rows(global_db(state), "SELECT count(*) FROM auth_profile_stores") == [(0,)]
    assert rows(global_db(state), "SELECT count(*) FROM auth_profile_state") == [(0,)]


def receipt(state: Path, rel: str) -> tuple[str, int, str, dict[str, Any]]:
    (found,) = rows(global_db(state), "SELECT status, removed_source, last_run_id, report_json FROM migration_sources WHERE source_path = ?", (rel,))
    return found[0], found[1], found[2], json.loads(found[3])


def assert_retired(state: Path, rel: str, original: bytes) -> dict[str, Any]:
    status, removed, run_id, report = receipt(state, rel)
    assert (status, removed) == ("completed", 1)
    assert not (state / rel).exists()
    assert (state / ".statekit" / "migrated" / run_id / rel).read_bytes() == original
    return report


def test_auth_profiles_and_state_round_trip(tmp_path: Path) -> None:
    files = {f"{MAIN}/auth-profiles.json": fixture("auth-profiles.json"), f"{MAIN}/auth-state.json": fixture("auth-state.json")}
    state = build(tmp_path, files)
    report = migrate(state, MigrateOptions(backup=False))
    assert report.status == "completed", report.warnings

    source = json.loads(files[f"{MAIN}/auth-profiles.json"])
    got, updated = store(state)
    assert got == {"version": 1, "profiles": source["profiles"]}
    assert list(got["profiles"]) == list(source["profiles"])  # order kept
    # fields in OpenClaw's order: common fields (provider, email) before the secrets
    assert list(got["profiles"]["anthropic:me@example.com"]) == ["type", "provider", "email", "access", "refresh", "expires"]
    assert store_text(state).startswith('{"version":1,"profiles":{"openai:default":{"type":"api_key","provider":"openai","key":"')
    assert updated == MTIME_MS
    got_state, state_updated = state_row(state)
    # order/lastGood came from auth-profiles.json, then auth-state.json merged per provider / profile id
    assert got_state == {
        "version": 1,
        "order": {"openai": ["openai:default"]},
        "lastGood": {"openai": "openai:default", "fakellm": "fakellm:manual"},
        "usageStats": json.loads(files[f"{MAIN}/auth-state.json"])["usageStats"],
    }
    assert state_updated == MTIME_MS

    profiles_report = assert_retired(state, f"{MAIN}/auth-profiles.json", files[f"{MAIN}/auth-profiles.json"])
    assert (profiles_report["agent_id"], profiles_report["store_key"], profiles_report["format"]) == ("main", "primary", "canonical")
    assert profiles_report["target"] == "agents/main/agent/openclaw-agent.sqlite" and profiles_report["dropped_fields"] == []
    assert profiles_report["credential_fingerprints"] == {
        "anthropic:me@example.com": {
            "access": fingerprint(source["profiles"]["anthropic:me@example.com"]["access"]),
            "refresh": fingerprint(source["profiles"]["anthropic:me@example.com"]["refresh"]),
        },
        "fakellm:manual": {"token": fingerprint(source["profiles"]["fakellm:manual"]["token"])},
        "openai:default": {"key": fingerprint(source["profiles"]["openai:default"]["key"])},
    }
    assert profiles_report["state_fields"] == ["lastGood", "order"]
    assert_retired(state, f"{MAIN}/auth-state.json", files[f"{MAIN}/auth-state.json"])
    for _status, _removed, _run, report_json in rows(global_db(state), "SELECT status, removed_source, last_run_id, report_json FROM migration_sources"):
        assert "CANARY" not in report_json
    assert_global_auth_tables_empty(state)


def test_legacy_sources_fill_without_overriding(tmp_path: Path) -> None:
    files = {
        f"{MAIN}/auth-profiles.json": fixture("auth-profiles.json"),
        f"{MAIN}/auth.json": fixture("auth.json"),
        "agent/auth-profiles.json": fixture("auth-profiles-flat.json"),
        "credentials/oauth.json": fixture("oauth.json"),
        "agents/ops/agent/auth.json": fixture("auth.json"),
        "openclaw.json": json.dumps({"agents": {"list": [{"id": "main"}, {"id": "Ops", "default": True}]}}),
    }
    state = build(tmp_path, files)
    report = migrate(state, MigrateOptions(backup=False))
    assert report.status == "completed", report.warnings

    main, _ = store(state)
    canonical = json.loads(files[f"{MAIN}/auth-profiles.json"])["profiles"]
    auth_json = json.loads(files[f"{MAIN}/auth.json"])
    flat = json.loads(files["agent/auth-profiles.json"])
    assert main["profiles"]["openai:default"] == canonical["openai:default"]  # auth-profiles.json wins over auth.json
    assert main["profiles"]["anthropic:default"] == {"type": "api_key", "provider": "anthropic", "key": auth_json["anthropic"]["apiKey"]}
    assert main["profiles"]["google:default"] == {"type": "oauth", "provider": "google", **{k: v for k, v in auth_json["google"].items() if k != "type"}}
    # credentials/oauth.json belongs to OpenClaw's shared-main owner (agents/main), whatever the default agent
    oauth = json.loads(files["credentials/oauth.json"])["openai-codex"]
    assert main["profiles"]["openai-codex:default"] == {"type": "oauth", "provider": "openai-codex", **oauth}
    assert list(main["profiles"]["openai-codex:default"]) == ["type", "provider", "access", "refresh", "accountId", "expires"]
    # OpenClaw applies auth.json before auth-profiles.json: auth.json's ids lead the store (values still from
    # auth-profiles.json where both have one); oauth.json, imported last, appends
    assert list(main["profiles"]) == [
        "anthropic:default", "openai:default", "google:default", "anthropic:me@example.com", "fakellm:manual", "openai-codex:default",
    ]

    # the pre-multi-agent agent/ dir belongs to the configured default agent
    ops, _ = store(state, "ops")
    assert ops["profiles"]["ollama-windows:default"] == {"type": "api_key", "provider": "ollama-windows", "key": flat["ollama-windows"]["apiKey"]}
    # legacy sources only fill: the flat store (plan order 50) came first, auth.json (52) kept its openai:default
    assert ops["profiles"]["openai:default"] == {"type": "api_key", "provider": "openai", "key": flat["openai"]["apiKey"]}
    assert set(ops["profiles"]) == {"ollama-windows:default", "openai:default", "anthropic:default", "google:default"}
    ops_auth_report = receipt(state, "agents/ops/agent/auth.json")[3]
    assert (ops_auth_report["added"], ops_auth_report["kept_existing"]) == (2, 1)

    flat_report = assert_retired(state, "agent/auth-profiles.json", files["agent/auth-profiles.json"])
    assert flat_report["agent_id"] == "ops" and flat_report["format"] == "legacy-flat"
    assert flat_report["dropped_fields"] == ["ollama-windows:default.baseUrl"] and flat_report["added"] == 2
    oauth_report = assert_retired(state, "credentials/oauth.json", files["credentials/oauth.json"])
    assert oauth_report["agent_id"] == "main" and oauth_report["added"] == 1
    assert (state / "openclaw.json").exists()
    assert_global_auth_tables_empty(state)


def test_reimport_of_changed_file_converges(tmp_path: Path) -> None:
    rel = f"{MAIN}/auth-profiles.json"
    state = build(tmp_path, {rel: fixture("auth-profiles.json")})
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    changed = json.loads(fixture("auth-profiles.json"))
    changed["profiles"]["openai:default"]["key"] = "sk-rotated-key"
    build(tmp_path, {rel: json.dumps(changed)}, mtime_ms=MTIME_MS + 5000)
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    got, updated = store(state)
    assert got["profiles"] == changed["profiles"]
    assert updated == MTIME_MS + 5000


def test_tmp_leftovers(tmp_path: Path) -> None:
    live = json.loads(fixture("auth-profiles.json"))
    stale = json.loads(fixture("auth-profiles.json"))
    stale["lastGood"] = {"openai": "anthropic:me@example.com"}  # only runtime fields differ
    differing = json.loads(fixture("auth-profiles.json"))
    differing["profiles"]["openai:default"]["key"] = "sk-CANARY-newer-key-in-tmp"
    files = {
        f"{MAIN}/auth-profiles.json": json.dumps(live),
        f"{MAIN}/auth-profiles.json.tmp": json.dumps(stale),
        "agents/work/agent/auth-profiles.json": json.dumps(live),
        "agents/work/agent/auth-profiles.json.tmp": json.dumps(differing),
    }
    state = build(tmp_path, files)
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert result.returncode == 3
    lines = [line for line in result.stderr.splitlines() if "agents/work/agent/auth-profiles.json.tmp" in line]
    assert lines and "credentials differ from the live auth-profiles.json" in lines[0]
    assert "CANARY" not in result.stdout + result.stderr
    assert (state / "agents/work/agent/auth-profiles.json.tmp").read_text() == files["agents/work/agent/auth-profiles.json.tmp"]
    tmp_report = assert_retired(state, f"{MAIN}/auth-profiles.json.tmp", files[f"{MAIN}/auth-profiles.json.tmp"].encode())
    assert tmp_report["disposition"].startswith("stale temp copy; credentials identical to the live file")
    assert store(state)[0]["profiles"] == live["profiles"]  # the temp file wrote nothing


def test_tmp_after_the_live_file_was_imported(tmp_path: Path) -> None:
    live = fixture("auth-profiles.json")
    state = build(tmp_path, {f"{MAIN}/auth-profiles.json": live})
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    build(tmp_path, {f"{MAIN}/auth-profiles.json.tmp": live})
    report = migrate(state, MigrateOptions(backup=False))
    assert report.status == "completed", report.warnings
    tmp_report = assert_retired(state, f"{MAIN}/auth-profiles.json.tmp", live)
    assert "receipt of the imported live file" in tmp_report["disposition"]


def test_malformed_auth_files_stay_in_place(tmp_path: Path) -> None:
    bad_json = f"{MAIN}/auth-profiles.json"
    bad_shape = "agents/work/agent/auth-profiles.json"
    bad_state = f"{MAIN}/auth-state.json"
    files = {
        bad_json: b'{"version": 1, "profiles": {"openai:default": {"type": "api_key", "key": "sk-CANARY-trunc',
        bad_shape: json.dumps({"version": 1, "profiles": {"openai:default": {"type": "api_key", "key": 12345678901234}}}).encode(),
        bad_state: b'{"version": 1, "lastGood": []}',
    }
    state = build(tmp_path, files)
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert result.returncode == 3
    assert "CANARY" not in result.stdout + result.stderr and "12345678901234" not in result.stderr
    assert any(bad_json in line and "invalid JSON5" in line for line in result.stderr.splitlines())
    assert any(f"{bad_shape}: $.profiles['openai:default'].key: expected string or null or object, found integer" in line for line in result.stderr.splitlines())
    assert any(f"{bad_state}: $.lastGood: expected object or null, found array" in line for line in result.stderr.splitlines())
    for rel, data in files.items():
        assert (state / rel).read_bytes() == data
    for agent in ("main", "work"):
        if agent_db(state, agent).exists():
            assert rows(agent_db(state, agent), "SELECT count(*) FROM auth_profile_store") == [(0,)]
    assert_global_auth_tables_empty(state)
    assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE status = 'failed'") == [(3,)]


def test_existing_foreign_row_that_is_not_json_is_left_alone(tmp_path: Path) -> None:
    rel = f"{MAIN}/auth-profiles.json"
    state = build(tmp_path, {rel: fixture("auth-profiles.json")})
    from statekit.schema import open_agent, open_global

    global_conn, _ = open_global(state)
    conn, _ = open_agent(state, "main", global_conn)
    conn.execute("INSERT INTO auth_profile_store VALUES ('primary', 'not json', 1)")
    conn.commit()
    conn.close()
    global_conn.commit()
    global_conn.close()
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 3
    assert any("existing auth_profile_store row 'primary' is not valid JSON" in w for w in report.warnings)
    assert rows(agent_db(state), "SELECT store_json FROM auth_profile_store") == [("not json",)]
    assert (state / rel).exists()


def test_credentials_and_state_are_normalised_as_openclaw_keeps_them(tmp_path: Path) -> None:
    env_ref = {"source": "env", "provider": "default", "id": "ANTHROPIC_API_KEY"}
    document = {
        "version": 3,
        "profiles": {
            "OpenAI:work": {"type": "apiKey", "provider": "OpenAI ", "apiKey": "sk-CANARY-alias-1111", "baseUrl": "http://127.0.0.1:1/v1", "note": "x"},
            "anthropic:ref": {"type": "api_key", "provider": "anthropic", "key": env_ref},
            "x:tok": {"mode": "token", "provider": "x", "token": "tok-CANARY-2222", "expires": -5},
            "y:oauth": {"type": "oauth", "provider": "y", "access": "acc-CANARY", "refresh": "ref-CANARY", "expires": 1.79e12,
                        "subscriptionType": "pro", "custom": "z"},
            "bedrock:me": {"type": "aws-sdk", "provider": "bedrock"},
        },
        "order": {"OpenAI": ["OpenAI:work", " "], "empty": []},
        "lastGood": {"OpenAI": " OpenAI:work "},
        "usageStats": {
            "x:tok": {"errorCount": 1, "lastUsed": 1790000000000, "failureCounts": {"rate_limit": 2.7, "bogus": 1, "auth": 0}, "extra": True},
            "y:oauth": {"unknown": 1},
        },
        "note": "top-level extra",
    }
    rel = f"{MAIN}/auth-profiles.json"
    state = build(tmp_path, {rel: json.dumps(document)})
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 3
    assert [w for w in report.warnings if rel in w] == [
        f"{rel}: profile 'bedrock:me' holds no credential OpenClaw can use; skipped (kept in the retired copy)"
    ]
    assert store_text(state) == (
        '{"version":1,"profiles":{'
        '"OpenAI:work":{"type":"api_key","provider":"openai","key":"sk-CANARY-alias-1111"},'
        '"anthropic:ref":{"type":"api_key","provider":"anthropic","keyRef":{"source":"env","provider":"default","id":"ANTHROPIC_API_KEY"}},'
        '"x:tok":{"type":"token","provider":"x","token":"tok-CANARY-2222","expires":0},'
        '"y:oauth":{"type":"oauth","provider":"y","access":"acc-CANARY","refresh":"ref-CANARY","subscriptionType":"pro","expires":1790000000000}}}'
    )
    ((state_json,),) = rows(agent_db(state), "SELECT state_json FROM auth_profile_state WHERE state_key = 'primary'")
    assert state_json == (
        '{"version":1,"order":{"openai":["OpenAI:work"]},"lastGood":{"openai":"OpenAI:work"},'
        '"usageStats":{"x:tok":{"lastUsed":1790000000000,"errorCount":1,"failureCounts":{"rate_limit":2}}}}'
    )
    stored = assert_retired(state, rel, json.dumps(document).encode())
    assert stored["dropped_fields"] == ["OpenAI:work.baseUrl", "OpenAI:work.note", "note", "y:oauth.custom"]
    assert stored["credential_fingerprints"]["OpenAI:work"] == {"key": fingerprint("sk-CANARY-alias-1111")}
    assert any("field(s) OpenClaw does not keep were not carried: OpenAI:work.baseUrl" in n for o in report.outcomes for n in o.notices)


def test_state_file_alone_gets_an_empty_store_row(tmp_path: Path) -> None:
    """OpenClaw reads an agent's runtime state only together with its store row."""
    rel = "agents/work/agent/auth-state.json"
    state = build(tmp_path, {rel: fixture("auth-state.json")})
    report = migrate(state, MigrateOptions(backup=False))
    assert report.status == "completed", report.warnings
    assert store(state, "work") == ({"version": 1, "profiles": {}}, MTIME_MS)
    got_state, _ = state_row(state, "work")
    source = json.loads(fixture("auth-state.json"))
    assert got_state == {"version": 1, "lastGood": source["lastGood"], "usageStats": source["usageStats"]}
    assert assert_retired(state, rel, fixture("auth-state.json"))["agent_id"] == "work"
    assert not agent_db(state, "main").exists()


def test_auth_json_entries_need_a_type_and_oauth_json_goes_to_main(tmp_path: Path) -> None:
    files = {
        "agents/work/agent/auth.json": json.dumps({"Mistral": {"apiKey": "sk-no-type"}, "groq": {"mode": "api_key", "apiKey": "sk-groq"}}),
        "credentials/oauth.json": json.dumps({"google": {"access": "a", "refresh": "r", "expires": 5, "projectId": "p", "x": 1}}),
        "openclaw.json": json.dumps({"agents": {"list": [{"id": "work", "default": True}, {"id": "main"}]}}),
    }
    state = build(tmp_path, files)
    report = migrate(state, MigrateOptions(backup=False))
    assert sorted(w for w in report.warnings if "auth.json" in w or "oauth.json" in w) == [
        "agents/work/agent/auth.json: entry 'Mistral' holds no credential OpenClaw can use; skipped (kept in the retired copy)",
    ]
    assert store(state, "work")[0]["profiles"] == {"groq:default": {"type": "api_key", "provider": "groq", "key": "sk-groq"}}
    assert store(state, "main")[0]["profiles"] == {
        "google:default": {"type": "oauth", "provider": "google", "access": "a", "refresh": "r", "projectId": "p", "expires": 5}
    }
    assert receipt(state, "credentials/oauth.json")[3]["dropped_fields"] == ["google:default.x"]
