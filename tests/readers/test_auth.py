"""Auth stores through the real apply loop: auth-profiles.json, auth-state.json, auth.json, oauth.json, .tmp leftovers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from helpers import FIXTURES, global_db, make_state, rows, run_cli
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


def store(state: Path, key: str = "agent:main") -> tuple[dict[str, Any], int]:
    (row,) = rows(global_db(state), "SELECT store_json, updated_at FROM auth_profile_stores WHERE store_key = ?", (key,))
    return json.loads(row[0]), row[1]


def state_row(state: Path, key: str = "agent:main") -> tuple[dict[str, Any], int]:
    (row,) = rows(global_db(state), "SELECT state_json, updated_at FROM auth_profile_state WHERE store_key = ?", (key,))
    return json.loads(row[0]), row[1]


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
    assert profiles_report["store_key"] == "agent:main" and profiles_report["format"] == "canonical"
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
    assert set(main["profiles"]) == {"openai:default", "anthropic:me@example.com", "fakellm:manual", "anthropic:default", "google:default"}

    # the pre-multi-agent agent/ dir and credentials/oauth.json belong to the configured default agent
    ops, _ = store(state, "agent:ops")
    oauth = json.loads(files["credentials/oauth.json"])["openai-codex"]
    assert ops["profiles"]["openai-codex:default"] == {"type": "oauth", "provider": "openai-codex", **oauth}
    assert ops["profiles"]["ollama-windows:default"] == {"type": "api_key", "provider": "ollama-windows", "key": flat["ollama-windows"]["apiKey"]}
    # legacy sources only fill: the flat store (plan order 50) came first, auth.json (52) kept its openai:default
    assert ops["profiles"]["openai:default"] == {"type": "api_key", "provider": "openai", "key": flat["openai"]["apiKey"]}
    assert set(ops["profiles"]) == {"ollama-windows:default", "openai:default", "anthropic:default", "google:default", "openai-codex:default"}
    ops_auth_report = receipt(state, "agents/ops/agent/auth.json")[3]
    assert (ops_auth_report["added"], ops_auth_report["kept_existing"]) == (2, 1)

    flat_report = assert_retired(state, "agent/auth-profiles.json", files["agent/auth-profiles.json"])
    assert flat_report["store_key"] == "agent:ops" and flat_report["format"] == "legacy-flat"
    assert flat_report["dropped_fields"] == ["ollama-windows.baseUrl"] and flat_report["added"] == 2
    assert_retired(state, "credentials/oauth.json", files["credentials/oauth.json"])
    assert (state / "openclaw.json").exists()


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
    assert any(f"{bad_shape}: $.profiles['openai:default'].key: expected string or null, found integer" in line for line in result.stderr.splitlines())
    assert any(f"{bad_state}: $.lastGood: expected object or null, found array" in line for line in result.stderr.splitlines())
    for rel, data in files.items():
        assert (state / rel).read_bytes() == data
    assert rows(global_db(state), "SELECT count(*) FROM auth_profile_stores") == [(0,)]
    assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE status = 'failed'") == [(3,)]


def test_existing_foreign_row_that_is_not_json_is_left_alone(tmp_path: Path) -> None:
    rel = f"{MAIN}/auth-profiles.json"
    state = build(tmp_path, {rel: fixture("auth-profiles.json")})
    from statekit.schema import open_global

    conn, _ = open_global(state)
    conn.execute("INSERT INTO auth_profile_stores VALUES ('agent:main', 'not json', 1)")
    conn.commit()
    conn.close()
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 3
    assert any("existing auth_profile_stores row 'agent:main' is not valid JSON" in w for w in report.warnings)
    assert rows(global_db(state), "SELECT store_json FROM auth_profile_stores") == [("not json",)]
    assert (state / rel).exists()
