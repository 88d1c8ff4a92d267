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
from statekit.legacy_readers.base import fingerprint
from statekit.migrate.apply import MigrateOptions, migrate

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


def _row(state: Path, agent: str, kind: str) -> tuple[str, int]:
    """``main``'s rows are OpenClaw's shared store (config_machine_state); every other agent's are in its own database."""
    if agent == "main":
        key = "authProfiles.store" if kind == "store" else "authProfiles.state"
        (row,) = rows(global_db(state), "SELECT value_json, updated_at_ms FROM config_machine_state WHERE state_key = ?", (key,))
    elif kind == "store":
        (row,) = rows(agent_db(state, agent), "SELECT store_json, updated_at FROM auth_profile_store WHERE store_key = 'primary'")
    else:
        (row,) = rows(agent_db(state, agent), "SELECT state_json, updated_at FROM auth_profile_state WHERE state_key = 'primary'")
    return str(row[0]), int(row[1])


def store(state: Path, agent: str = "main") -> tuple[dict[str, Any], int]:
    text, updated = _row(state, agent, "store")
    return json.loads(text), updated


def store_text(state: Path, agent: str = "main") -> str:
    return _row(state, agent, "store")[0]


def state_row(state: Path, agent: str = "main") -> tuple[dict[str, Any], int]:
    text, updated = _row(state, agent, "state")
    return json.loads(text), updated


def ownership(state: Path) -> list[tuple[Any, ...]]:
    return rows(global_db(state), "SELECT value_json FROM config_machine_state WHERE state_key = 'auth.sharedStore'")


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
    assert (profiles_report["agent_id"], profiles_report["store_key"], profiles_report["format"]) == ("main", "authProfiles.store", "canonical")
    assert profiles_report["target"] == "state/openclaw.sqlite#config_machine_state" and profiles_report["dropped_fields"] == []
    # main is OpenClaw's shared-main owner: its store is the shared one, marked as living in the state database
    assert ownership(state) == [('{"location":"state-db"}',)]
    assert rows(global_db(state), "SELECT updated_at_ms FROM config_machine_state WHERE state_key = 'auth.sharedStore'") == [(MTIME_MS,)]
    assert not agent_db(state).exists()  # nothing else of main's: no agent database was created for it
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
    assert migrate(state, MigrateOptions(backup=False)).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
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
    assert rows(global_db(state), "SELECT count(*) FROM config_machine_state WHERE state_key LIKE 'authProfiles.%'") == [(0,)]
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
    assert ownership(state) == []  # an unreadable row of main's own: not moved, nothing marked (9.6's doctor reports it)
    assert any("is not a JSON object OpenClaw can read" in n for n in report.notices)


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
    state_json = _row(state, "main", "state")[0]
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


def _agent_with_rows(state: Path, agent: str, store_json: str, state_json: str | None = None) -> None:
    from statekit.schema import open_agent, open_global

    global_conn, _ = open_global(state)
    conn, _ = open_agent(state, agent, global_conn)
    conn.execute("INSERT INTO auth_profile_store VALUES ('primary', ?, 5)", (store_json,))
    if state_json is not None:
        conn.execute("INSERT INTO auth_profile_state VALUES ('primary', ?, 6)", (state_json,))
    conn.commit()
    conn.close()
    global_conn.commit()
    global_conn.close()


def test_main_rows_already_in_its_database_are_merged_there_then_moved_to_the_shared_store(tmp_path: Path) -> None:
    """A tree written by 2026.6-2026.7 keeps main's store in main's database: statekit adds to it there, and the
    end of the run moves it into the shared store as 9.6's doctor relocates it (copy and marker, then cleanup)."""
    state = build(tmp_path, {f"{MAIN}/auth.json": fixture("auth.json")})
    _agent_with_rows(state, "main", '{"version":1,"profiles":{"old:default":{"type":"token","provider":"old","token":"t-old"}}}')
    report = migrate(state, MigrateOptions(backup=False))
    assert report.status == "completed", report.warnings
    assert receipt(state, f"{MAIN}/auth.json")[3]["target"] == "agents/main/agent/openclaw-agent.sqlite"
    assert list(store(state)[0]["profiles"]) == ["anthropic:default", "openai:default", "google:default", "old:default"]
    assert ownership(state) == [('{"location":"state-db"}',)]
    assert rows(agent_db(state), "SELECT count(*) FROM auth_profile_store") == [(0,)]
    assert any("moved the main agent's auth store into the shared store" in n for n in report.notices)


def test_settle_moves_main_rows_into_the_shared_store_then_cleans_them(tmp_path: Path) -> None:
    from statekit.legacy_readers.auth_profiles import clean_relocated_main_rows, settle_shared_auth_store
    from statekit.schema import open_agent, open_global

    store_json = '{"version":1,"profiles":{"fakellm:manual":{"type":"token","provider":"fakellm","token":"t-main"}}}'
    state_json = '{"version":1,"lastGood":{"fakellm":"fakellm:manual"}}'
    state = build(tmp_path, {})
    _agent_with_rows(state, "main", store_json, state_json)
    global_conn, _ = open_global(state)
    main_conn, _ = open_agent(state, "main", None)
    try:
        assert clean_relocated_main_rows(global_conn, main_conn) == 0  # nothing moved yet: nothing removed
        assert settle_shared_auth_store(global_conn, main_conn) == (
            "moved the main agent's auth store into the shared store (auth.sharedStore = state-db), as OpenClaw 2026.9.6 keeps it"
        )
        global_conn.commit()
        assert settle_shared_auth_store(global_conn, main_conn) is None  # settled once
        assert clean_relocated_main_rows(global_conn, main_conn) == 2
        main_conn.commit()
    finally:
        main_conn.close()
        global_conn.close()
    assert _row(state, "main", "store") == (store_json, 5) and _row(state, "main", "state") == (state_json, 6)
    assert ownership(state) == [('{"location":"state-db"}',)]
    # the marker carries the moved store's own time, not the clock (a rerun writes the same row)
    assert rows(global_db(state), "SELECT updated_at_ms FROM config_machine_state WHERE state_key = 'auth.sharedStore'") == [(5,)]
    assert rows(agent_db(state), "SELECT count(*) FROM auth_profile_store") == [(0,)]
    assert rows(agent_db(state), "SELECT count(*) FROM auth_profile_state") == [(0,)]


def test_settle_marks_the_shared_store_when_main_has_no_auth_rows_and_refuses_a_conflict(tmp_path: Path) -> None:
    from statekit.legacy_readers.auth_profiles import settle_shared_auth_store
    from statekit.schema import open_global

    state = build(tmp_path, {})
    conn, _ = open_global(state)
    try:
        assert "lives in the state database" in (settle_shared_auth_store(conn, None) or "")
        conn.commit()
    finally:
        conn.close()
    assert ownership(state) == [('{"location":"state-db"}',)]

    other = build(tmp_path / "other", {})
    _agent_with_rows(other, "main", '{"version":1,"profiles":{}}')
    from statekit.schema import open_agent

    conn, _ = open_global(other)
    main_conn, _ = open_agent(other, "main", None)
    conn.execute("INSERT INTO config_machine_state VALUES ('authProfiles.store', '{\"version\":1,\"profiles\":{\"x:y\":{}}}', 1)")
    try:
        assert "differs from the shared store" in (settle_shared_auth_store(conn, main_conn) or "")
        conn.commit()
    finally:
        main_conn.close()
        conn.close()
    assert ownership(other) == []


def test_a_run_without_main_auth_files_still_marks_the_shared_store(tmp_path: Path) -> None:
    """Without the marker 9.6's first doctor pass reads main's version-1 database, and stops."""
    from statekit.schema import open_agent, open_global

    state = build(tmp_path, {"agents/work/agent/auth-profiles.json": fixture("auth-profiles.json")})
    global_conn, _ = open_global(state)
    open_agent(state, "main", global_conn)[0].close()  # main has a database (sessions, say), no auth rows
    global_conn.close()
    report = migrate(state, MigrateOptions(backup=False))
    assert report.status == "completed", report.warnings
    assert ownership(state) == [('{"location":"state-db"}',)]
    assert rows(global_db(state), "SELECT updated_at_ms FROM config_machine_state WHERE state_key = 'auth.sharedStore'") == [(0,)]
    assert rows(global_db(state), "SELECT count(*) FROM config_machine_state WHERE state_key LIKE 'authProfiles.%'") == [(0,)]
    assert set(store(state, "work")[0]["profiles"]) == set(json.loads(fixture("auth-profiles.json"))["profiles"])


def test_a_rerun_settles_the_shared_store_a_stopped_run_left_unmarked(tmp_path: Path) -> None:
    """A run that stopped after its last import but before its end-of-run step (the full-disk sweep found one at
    2,944 KiB) left every source imported and the marker missing; the rerun said "nothing new" and never set it.

    Fails before the fix: the second migrate is ``nothing-to-do`` and the marker stays missing."""
    from statekit.db import connect

    state = build(tmp_path, {"agents/work/agent/auth-profiles.json": fixture("auth-profiles.json")})
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    conn = connect(global_db(state))
    conn.execute("DELETE FROM config_machine_state WHERE state_key = 'auth.sharedStore'")  # as the stopped run left it
    conn.close()
    rerun = migrate(state, MigrateOptions(backup=False))
    assert rerun.status == "completed", (rerun.status, rerun.warnings)
    assert ownership(state) == [('{"location":"state-db"}',)]
    assert migrate(state, MigrateOptions(backup=False)).status == "nothing-to-do"  # settled: no run every time after
