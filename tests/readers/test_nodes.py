"""Node pairing readers: nodes/paired.json and nodes/pending.json -> node surfaces on paired device rows."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import global_db, open_db
from test_devices_harness import (
    assert_left_in_place,
    assert_retired,
    assert_secrets_absent,
    fixture,
    one,
    outcome,
    place,
    place_fixture,
    receipt,
    run,
    state,  # noqa: F401  (fixture)
)

DEV1 = "21fe31dfa154a261626bf854046fd2271b7bed4b6abe45aa58877ef47f9721b9"
DEV2 = "39f713d0a644253f04529421b9f51b9b08979d08295959c4f3990ee617f5139f"


def test_paired_nodes_become_the_device_node_surface(state: Path) -> None:
    place_fixture(state, "devices/paired.json", "devices/paired.json")
    original = place_fixture(state, "nodes/paired.json", "nodes/paired.json")
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, "nodes/paired.json", original)
    assert row["target_table"] == "global.device_pairing_paired"
    assert row["report"]["legacy_node_tokens_not_carried"] == 1
    got = one(state, "SELECT node_surface_json, platform, display_name FROM device_pairing_paired WHERE device_id = ?", (DEV2,))
    assert json.loads(got["node_surface_json"]) == {
        "displayName": "Phone node",
        "version": "2026.5.1",
        "coreVersion": "2026.5.1",
        "modelIdentifier": "iPhone15,2",
        "caps": ["camera", "location"],
        "commands": ["camera.snap", "location.get"],
        "permissions": {"camera": True},
        "bins": ["ffmpeg"],
        "createdAtMs": 1790000001000,
        "approvedAtMs": 1790000001600,
        "lastConnectedAtMs": 1790000005000,
    }
    assert got["platform"] == "iOS" and got["display_name"] == "Phone"  # device columns are not overwritten
    assert one(state, "SELECT node_surface_json FROM device_pairing_paired WHERE device_id = ?", (DEV1,))["node_surface_json"] is None
    assert any("legacy node token(s) not carried over" in n for n in report.notices)
    assert_secrets_absent(state, report, ["test-node-token-legacy-0002"])


def test_pending_node_requests_attach_or_are_skipped_with_a_notice(state: Path) -> None:
    place_fixture(state, "devices/paired.json", "devices/paired.json")
    original = place_fixture(state, "nodes/pending.json", "nodes/pending.json")
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, "nodes/pending.json", original)
    assert row["report"]["attached"] == 1 and row["report"]["skipped_without_device"] == 1
    surface = json.loads(one(state, "SELECT pending_node_surface_json FROM device_pairing_paired WHERE device_id = ?", (DEV2,))["pending_node_surface_json"])
    assert surface == {
        "requestId": "7d7d7d7d-0000-4000-8000-000000000001",
        "revision": "7d7d7d7d-0000-4000-8000-000000000001",
        "displayName": "Phone node",
        "platform": "iOS",
        "caps": ["camera"],
        "commands": ["camera.snap", "screen.record"],
        "silent": False,
        "ts": 1790000600000,
    }
    assert any("skipped 1 pending node request(s) with no paired device (first: stranger-node)" in n for n in report.notices)


def test_a_paired_node_without_a_device_fails_and_stays(state: Path) -> None:
    place_fixture(state, "devices/paired.json", "devices/paired.json")
    original = place_fixture(state, "nodes/paired-orphan.json", "nodes/paired.json")
    report = run(state)
    outcome(report, "devices/paired.json")  # imported in the same run
    message = assert_left_in_place(state, report, "nodes/paired.json", original, "1 paired node(s) have no paired device row", "node-without-device")
    assert "test-node-token-orphan" not in message
    assert receipt(state, "nodes/paired.json")["status"] == "failed"


def test_nodes_wait_for_devices_paired(state: Path) -> None:
    original_devices = place(state, "devices/paired.json", b"{broken")
    original = place_fixture(state, "nodes/paired.json", "nodes/paired.json")
    report = run(state)
    assert (state / "devices/paired.json").read_bytes() == original_devices
    assert_left_in_place(state, report, "nodes/paired.json", original, "devices/paired.json has not been imported yet")


def test_newer_surface_in_the_database_is_kept(state: Path) -> None:
    place_fixture(state, "devices/paired.json", "devices/paired.json")
    run(state)
    newer = json.dumps({"displayName": "renamed", "approvedAtMs": 1890000000000, "createdAtMs": 1})
    conn = open_db(global_db(state))
    conn.execute("UPDATE device_pairing_paired SET node_surface_json = ? WHERE device_id = ?", (newer, DEV2))
    conn.commit()
    conn.close()
    original = place_fixture(state, "nodes/paired.json", "nodes/paired.json")
    report = run(state)
    row = assert_retired(state, report, "nodes/paired.json", original)
    assert row["report"]["kept_newer_database_surfaces"] == 1
    assert one(state, "SELECT node_surface_json FROM device_pairing_paired WHERE device_id = ?", (DEV2,))["node_surface_json"] == newer


def test_malformed_pending_nodes(state: Path) -> None:
    content = json.loads(fixture("nodes/pending.json"))
    del content["7d7d7d7d-0000-4000-8000-000000000001"]["nodeId"]
    original = place(state, "nodes/pending.json", content)
    report = run(state)
    assert_left_in_place(state, report, "nodes/pending.json", original, "missing required property", "nodeId")
