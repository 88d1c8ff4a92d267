"""Device pairing readers: devices/pending.json, devices/paired.json, devices/bootstrap.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import global_db, open_db, run_cli
from test_devices_harness import (
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

DEV1 = "21fe31dfa154a261626bf854046fd2271b7bed4b6abe45aa58877ef47f9721b9"
DEV2 = "39f713d0a644253f04529421b9f51b9b08979d08295959c4f3990ee617f5139f"
REQ1 = "3f1c2a9e-0c4e-4d61-9d1a-5b6f7a8b9c01"
def columns(state: Path, table: str) -> list[str]:
    conn = open_db(global_db(state))
    try:
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


PENDING_V1 = ["request_id", "device_id", "public_key", "display_name", "platform", "device_family", "client_id", "client_mode",
              "role", "roles_json", "scopes_json", "remote_ip", "silent", "is_repair", "ts"]  # fmt: skip
PAIRED_V1 = ["device_id", "public_key", "display_name", "platform", "device_family", "client_id", "client_mode", "role", "roles_json",
             "scopes_json", "approved_scopes_json", "remote_ip", "tokens_json", "created_at_ms", "approved_at_ms", "last_seen_at_ms",
             "last_seen_reason"]  # fmt: skip
TOKENS = ["test-device-token-operator-0001", "test-device-token-node-0002", "test-bootstrap-token-aaaa-0001", "test-bootstrap-token-bbbb-0002"]


def test_pending_round_trip(state: Path) -> None:
    original = place_fixture(state, "devices/pending.json", "devices/pending.json")
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, "devices/pending.json", original)
    assert row["target_table"] == "global.device_pairing_pending"
    assert row["report"]["requests"] == 2
    assert row["report"]["fields_without_column"] == []
    # browserOrigin has no v1 column: the column 2026.9.6 adds itself (browser_origin TEXT) is added for it;
    # refreshed_at_ms is not (no request carries refreshedAtMs), so the table keeps that v1 column set.
    assert columns(state, "device_pairing_pending") == PENDING_V1 + ["browser_origin"]
    got = one(state, "SELECT * FROM device_pairing_pending WHERE request_id = ?", (REQ1,))
    assert got == {
        "request_id": REQ1,
        "device_id": DEV2,
        "public_key": json.loads(original)[REQ1]["publicKey"],
        "display_name": "Ops laptop",
        "platform": "darwin",
        "device_family": "Mac",
        "client_id": "openclaw-control-ui",
        "client_mode": "webchat",
        "role": "operator",
        "roles_json": '["operator"]',
        "scopes_json": '["operator.read","operator.write"]',
        "remote_ip": "192.0.2.44",
        "silent": 0,
        "is_repair": 1,
        "ts": 1790000100000,
        "browser_origin": "https://gateway.example",
    }
    minimal = one(state, "SELECT * FROM device_pairing_pending WHERE request_id = ?", ("5a0b7c3d-1111-4e2f-8a9b-0c1d2e3f4a5b",))
    assert minimal["roles_json"] is None and minimal["silent"] is None and minimal["ts"] == 1790000200000


def test_empty_pending_map_imports_nothing_and_is_retired(state: Path) -> None:
    original = place_fixture(state, "devices/pending-empty.json", "devices/pending.json")
    assert original == b"{}"
    report = run(state)
    assert report.exit_code == 0
    row = assert_retired(state, report, "devices/pending.json", original)
    assert row["source_record_count"] == 0
    assert rows(state, "SELECT * FROM device_pairing_pending") == []


def test_paired_round_trip_keeps_tokens_verbatim(state: Path) -> None:
    original = place_fixture(state, "devices/paired.json", "devices/paired.json")
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, "devices/paired.json", original)
    assert row["report"]["devices"] == 2 and row["report"]["role_tokens"] == 2
    source = json.loads(original)
    got = one(state, "SELECT * FROM device_pairing_paired WHERE device_id = ?", (DEV2,))
    assert got == {
        "device_id": DEV2,
        "public_key": source[DEV2]["publicKey"],
        "display_name": "Phone",
        "platform": "iOS",
        "device_family": "iPhone",
        "client_id": "openclaw-ios",
        "client_mode": "node",
        "role": "node",
        "roles_json": '["node","operator"]',
        "scopes_json": "[]",
        "approved_scopes_json": "[]",
        "remote_ip": "198.51.100.7",
        "tokens_json": json.dumps(source[DEV2]["tokens"], separators=(",", ":")),
        "created_at_ms": 1790000001000,
        "approved_at_ms": 1790000001500,
        "last_seen_at_ms": 1790000004000,
        "last_seen_reason": "connect",
    }
    assert json.loads(one(state, "SELECT tokens_json FROM device_pairing_paired WHERE device_id = ?", (DEV1,))["tokens_json"]) == source[DEV1]["tokens"]
    assert_secrets_absent(state, report, TOKENS)
    assert columns(state, "device_pairing_paired") == PAIRED_V1  # nothing here needs a later column: the exact v1 table


def test_paired_fields_without_a_v1_column_go_where_openclaw_2026_9_6_keeps_them(state: Path) -> None:
    """operatorLabel, approvedVia, browserOrigin, nodeSurface: the columns 2026.9.6 adds to the v1 table on its upgrade."""
    source = json.loads(fixture("devices/paired.json"))
    source[DEV1] |= {"operatorLabel": "Build box", "approvedVia": "cli", "browserOrigin": "https://gw.example",
                     "nodeSurface": {"displayName": "Build box", "commands": ["system.run"], "createdAtMs": 5, "approvedAtMs": 6}}  # fmt: skip
    source["  key-wins  "] = source.pop(DEV2) | {"deviceId": "a-different-id"}
    original = place(state, "devices/paired.json", source)
    report = run(state)
    row = assert_retired(state, report, "devices/paired.json", original)
    assert row["report"]["fields_without_column"] == []
    assert columns(state, "device_pairing_paired") == PAIRED_V1 + ["operator_label", "browser_origin", "approved_via", "node_surface_json"]
    got = one(state, "SELECT operator_label, approved_via, browser_origin, node_surface_json FROM device_pairing_paired WHERE device_id = ?", (DEV1,))
    assert got == {
        "operator_label": "Build box", "approved_via": "cli", "browser_origin": "https://gw.example",
        "node_surface_json": '{"displayName":"Build box","commands":["system.run"],"createdAtMs":5,"approvedAtMs":6}',
    }  # fmt: skip
    # The map key is the device id (trimmed), as 2026.9.6 imports it; the differing deviceId is reported.
    assert [r["device_id"] for r in rows(state, "SELECT device_id FROM device_pairing_paired ORDER BY device_id")] == [DEV1, "key-wins"]
    assert any("1 device(s) stored under a key different from their deviceId; imported under the key" in n for n in report.notices)


def test_paired_keeps_a_newer_database_row_and_replaces_an_older_one(state: Path) -> None:
    place_fixture(state, "devices/paired.json", "devices/paired.json")
    run(state)
    conn = open_db(global_db(state))
    conn.execute("UPDATE device_pairing_paired SET display_name = 'renamed later', last_seen_at_ms = 1890000000000 WHERE device_id = ?", (DEV2,))
    conn.execute("UPDATE device_pairing_paired SET display_name = 'older', approved_at_ms = 1, last_seen_at_ms = NULL WHERE device_id = ?", (DEV1,))
    conn.commit()
    conn.close()
    changed = json.loads(fixture("devices/paired.json"))
    changed[DEV1]["displayName"] = "from the file"
    original = place(state, "devices/paired.json", changed)
    report = run(state)
    row = assert_retired(state, report, "devices/paired.json", original)
    assert row["report"]["kept_newer_database_rows"] == 1
    assert one(state, "SELECT display_name FROM device_pairing_paired WHERE device_id = ?", (DEV2,))["display_name"] == "renamed later"
    assert one(state, "SELECT display_name, approved_at_ms FROM device_pairing_paired WHERE device_id = ?", (DEV1,)) == {
        "display_name": "from the file",
        "approved_at_ms": 1790000000001,
    }
    assert any("kept 1 device(s)" in n for n in report.notices)


def test_paired_without_public_key_is_left_in_place(state: Path) -> None:
    original = place_fixture(state, "devices/paired-missing-key.json", "devices/paired.json")
    report = run(state)
    assert_left_in_place(state, report, "devices/paired.json", original, "$['dev-x']", "missing required property", "publicKey")
    assert rows(state, "SELECT * FROM device_pairing_paired") == []


@pytest.mark.parametrize(
    ("content", "needle"),
    [(b"{not json", "invalid JSON"), (b"", "file is empty"), (b"[]", "expected object, found array"), (b'{"a": 1}', "$.a: expected object")],
)
def test_pending_malformed_variants(state: Path, content: bytes, needle: str) -> None:
    original = place(state, "devices/pending.json", content)
    report = run(state)
    assert_left_in_place(state, report, "devices/pending.json", original, needle)


def test_bootstrap_round_trip(state: Path) -> None:
    original = place_fixture(state, "devices/bootstrap.json", "devices/bootstrap.json")
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    assert_retired(state, report, "devices/bootstrap.json", original)
    got = one(state, "SELECT * FROM device_bootstrap_tokens WHERE token_key = ?", ("test-bootstrap-token-bbbb-0002",))
    source = json.loads(original)["test-bootstrap-token-bbbb-0002"]
    assert got == {
        "token_key": "test-bootstrap-token-bbbb-0002",
        "token": "test-bootstrap-token-bbbb-0002",
        "ts": 1790000400000,
        "device_id": DEV2,
        "public_key": source["publicKey"],
        "profile_json": '{"roles":["operator"],"scopes":["operator.read"]}',  # legacy top-level roles/scopes
        "redeemed_profile_json": None,
        "pending_profile_json": None,
        "issued_at_ms": 1790000400000,
        "last_used_at_ms": 1790000401000,
    }
    first = one(state, "SELECT profile_json, redeemed_profile_json FROM device_bootstrap_tokens WHERE token_key = ?", ("test-bootstrap-token-aaaa-0001",))
    assert first == {"profile_json": '{"roles":["node"],"scopes":[]}', "redeemed_profile_json": '{"roles":[],"scopes":[]}'}
    assert_secrets_absent(state, report, TOKENS)


def test_bootstrap_error_numbers_the_entry_and_never_prints_the_token(state: Path) -> None:
    original = place_fixture(state, "devices/bootstrap-bad.json", "devices/bootstrap.json")
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert result.returncode == 3, result.stdout + result.stderr
    assert (state / "devices/bootstrap.json").read_bytes() == original
    lines = [line for line in result.stderr.splitlines() if "devices/bootstrap.json" in line]
    assert lines == ["statekit: warning: devices/bootstrap.json: entry #2.profile.roles: expected array, found string"]
    for token in ("test-bootstrap-token-aaaa-0001", "test-bootstrap-token-cccc-0003"):
        assert token not in result.stdout + result.stderr
    assert receipt(state, "devices/bootstrap.json")["status"] == "failed"


def test_rerun_is_already_imported(state: Path) -> None:
    place_fixture(state, "devices/paired.json", "devices/paired.json")
    run(state)
    before = rows(state, "SELECT * FROM device_pairing_paired ORDER BY device_id")
    report = run(state)
    assert report.status == "nothing-to-do"
    assert rows(state, "SELECT * FROM device_pairing_paired ORDER BY device_id") == before


@pytest.mark.corpus
def test_corpus_smoke_devices(tmp_path: Path) -> None:
    """Real 2026.5.28 files: paired.json (one CLI device, one operator token) and the 2-byte pending.json."""
    state = corpus_files("legacy-2026.5.28-smoke", ["devices/paired.json", "devices/pending.json"], tmp_path)
    paired = (state / "devices/paired.json").read_bytes()
    pending = (state / "devices/pending.json").read_bytes()
    report = run(state)
    assert_retired(state, report, "devices/paired.json", paired)
    assert_retired(state, report, "devices/pending.json", pending)
    got = one(state, "SELECT device_id, platform, client_id, role, approved_scopes_json, created_at_ms FROM device_pairing_paired")
    assert got == {
        "device_id": "70e75f147c3affdb7b1f2893f94ce8ac83fa4174ace2a68bb8f896ab5ffff1dc",
        "platform": "linux",
        "client_id": "cli",
        "role": "operator",
        "approved_scopes_json": '["operator.admin"]',
        "created_at_ms": 1795996876441,
    }
    token = json.loads(paired)[got["device_id"]]["tokens"]["operator"]["token"]
    assert_secrets_absent(state, report, [token])


@pytest.mark.corpus
def test_corpus_public_repo_devices(tmp_path: Path) -> None:
    """Linux2010/openclaw: three paired devices (cli + two control-UI browsers), empty pending.json."""
    state = corpus_files("Linux2010__openclaw", ["devices/paired.json", "devices/pending.json"], tmp_path)
    paired = (state / "devices/paired.json").read_bytes()
    report = run(state)
    assert_retired(state, report, "devices/paired.json", paired)
    got = rows(state, "SELECT client_id, client_mode, last_seen_at_ms FROM device_pairing_paired ORDER BY created_at_ms")
    assert [(r["client_id"], r["client_mode"]) for r in got] == [
        ("cli", "cli"),
        ("openclaw-control-ui", "webchat"),
        ("openclaw-control-ui", "webchat"),
    ]
