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
    run,
    state,  # noqa: F401  (fixture)
)

def columns(state: Path, table: str) -> list[str]:
    conn = open_db(global_db(state))
    try:
        return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()


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
    # node_surface_json is the column 2026.9.6 adds to the v1 table on its upgrade: added for this surface.
    assert columns(state, "device_pairing_paired")[-1] == "node_surface_json"
    got = one(state, "SELECT node_surface_json, platform, display_name, device_family FROM device_pairing_paired WHERE device_id = ?", (DEV2,))
    # Exactly the surface 2026.9.6's doctor folds this row into (its fields, its order).
    assert got["node_surface_json"] == json.dumps({
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
    }, separators=(",", ":"))
    # Device columns are neither overwritten nor filled from the node row (as OpenClaw; the retired copy keeps it).
    assert (got["platform"], got["display_name"], got["device_family"]) == ("iOS", "Phone", "iPhone")
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
    assert columns(state, "device_pairing_paired")[-1] == "pending_node_surface_json"
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


def test_a_paired_node_without_a_node_device_is_not_imported(state: Path) -> None:
    """No paired device, or one without the approved node role: OpenClaw drops such a row; statekit warns (exit 3)."""
    place_fixture(state, "devices/paired.json", "devices/paired.json")
    content = json.loads(fixture("nodes/paired-orphan.json"))
    content[DEV1] = {"nodeId": DEV1, "createdAtMs": 1, "approvedAtMs": 2}  # DEV1 is paired as an operator only
    original = place(state, "nodes/paired.json", content)
    report = run(state)
    outcome(report, "devices/paired.json")  # imported in the same run
    assert report.exit_code == 3, report.to_json()
    row = assert_retired(state, report, "nodes/paired.json", original)
    assert (row["report"]["attached"], row["report"]["skipped_without_node_device"]) == (0, 2)
    warning = next(w for w in report.warnings if "nodes/paired.json" in w)
    assert "2 paired node(s) not imported: no paired device with the node role to attach to (first: node-without-device)" in warning
    assert "test-node-token-orphan" not in json.dumps(report.to_json())
    assert "node_surface_json" not in columns(state, "device_pairing_paired")  # nothing needed the later column


def test_nodes_wait_for_devices_paired(state: Path) -> None:
    original_devices = place(state, "devices/paired.json", b"{broken")
    original = place_fixture(state, "nodes/paired.json", "nodes/paired.json")
    report = run(state)
    assert (state / "devices/paired.json").read_bytes() == original_devices
    assert_left_in_place(state, report, "nodes/paired.json", original, "devices/paired.json has not been imported yet")


def test_a_surface_already_in_the_database_is_kept(state: Path) -> None:
    place_fixture(state, "devices/paired.json", "devices/paired.json")
    run(state)
    newer = json.dumps({"displayName": "renamed", "approvedAtMs": 1, "createdAtMs": 1})
    conn = open_db(global_db(state))
    conn.execute("ALTER TABLE device_pairing_paired ADD COLUMN node_surface_json TEXT")  # as 2026.9.6 adds it
    conn.execute("UPDATE device_pairing_paired SET node_surface_json = ? WHERE device_id = ?", (newer, DEV2))
    conn.commit()
    conn.close()
    original = place_fixture(state, "nodes/paired.json", "nodes/paired.json")
    report = run(state)
    row = assert_retired(state, report, "nodes/paired.json", original)
    assert row["report"]["kept_database_surfaces"] == 1  # as OpenClaw's fold: an existing surface wins, whatever its age
    assert one(state, "SELECT node_surface_json FROM device_pairing_paired WHERE device_id = ?", (DEV2,))["node_surface_json"] == newer


def test_malformed_pending_nodes(state: Path) -> None:
    content = json.loads(fixture("nodes/pending.json"))
    del content["7d7d7d7d-0000-4000-8000-000000000001"]["nodeId"]
    original = place(state, "nodes/pending.json", content)
    report = run(state)
    assert_left_in_place(state, report, "nodes/pending.json", original, "missing required property", "nodeId")
