"""node.json -> node_host_config (singleton 'current'; newer row kept; node id conflicts refused)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statekit.legacy_readers.base import fingerprint
from test_devices_harness import (
    MTIME,
    assert_left_in_place,
    assert_retired,
    assert_secrets_absent,
    fixture,
    one,
    place,
    place_fixture,
    run,
    state,  # noqa: F401  (fixture)
)

REL = "node.json"
NODE_ID = "6c1d2e3f-0000-4000-8000-00000000aaaa"
TOKEN = "test-node-host-token-0001"


def test_round_trip(state: Path) -> None:
    original = place_fixture(state, "node-host/node.json", REL)
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, REL, original)
    assert row["target_table"] == "global.node_host_config"
    assert row["report"]["token_fingerprint"] == fingerprint(TOKEN)
    assert row["report"]["fields_without_column"] == []
    # contextPath and installedAppsSharing: the columns 2026.9.6's v12 fold-in reads when present, added for them.
    assert one(state, "SELECT * FROM node_host_config") == {
        "config_key": "current",
        "version": 1,
        "node_id": NODE_ID,
        "token": TOKEN,
        "display_name": "Build Node",
        "gateway_host": "gateway.example",
        "gateway_port": 18443,
        "gateway_tls": 1,
        "gateway_tls_fingerprint": "sha256:TESTFINGERPRINT",
        "updated_at_ms": MTIME,
        "gateway_context_path": "/openclaw-gw",
        "installed_apps_sharing": 0,
    }
    assert not any("node.json" in n for n in report.notices)  # nothing left without a home
    assert_secrets_absent(state, report, [TOKEN])


def test_newer_row_kept_older_row_replaced(state: Path) -> None:
    place_fixture(state, "node-host/node.json", REL, MTIME - 10_000)
    run(state)
    original = place_fixture(state, "node-host/node.json", REL)
    changed = json.loads(original)
    changed["displayName"] = "Renamed"
    original = place(state, REL, changed)
    report = run(state)
    assert assert_retired(state, report, REL, original)["report"]["decision"] == "replaced older database row"
    assert one(state, "SELECT display_name, updated_at_ms FROM node_host_config") == {"display_name": "Renamed", "updated_at_ms": MTIME}
    changed["displayName"] = "Stale file"
    stale = place(state, REL, changed, MTIME - 50_000)
    report = run(state)
    assert assert_retired(state, report, REL, stale)["report"]["decision"] == "kept newer database row"
    assert one(state, "SELECT display_name FROM node_host_config")["display_name"] == "Renamed"


@pytest.mark.parametrize(
    ("patch", "when", "needle"),
    [
        ({"nodeId": "another-node"}, MTIME + 1, "nodeId conflicts with the node-host config already in the database"),
        ({"displayName": "Divergent"}, MTIME, "diverges from the database row written at the same timestamp"),
    ],
)
def test_conflicts_leave_the_file_in_place(state: Path, patch: dict, when: int, needle: str) -> None:
    place_fixture(state, "node-host/node.json", REL)
    run(state)
    document = json.loads(fixture("node-host/node.json"))
    document.update(patch)
    original = place(state, REL, document, when)
    assert_left_in_place(state, run(state), REL, original, needle)
    assert one(state, "SELECT node_id, display_name FROM node_host_config") == {"node_id": NODE_ID, "display_name": "Build Node"}


@pytest.mark.parametrize(
    ("document", "needle"),
    [
        (json.loads((Path(__file__).resolve().parents[2] / "fixtures/readers/node-host/node-bad.json").read_text()), "$.gateway.port: must satisfy maximum 65535"),
        ({"version": 2, "nodeId": "n"}, "$.version: must be 1"),
        ({"version": 1, "nodeId": " "}, "$.nodeId: does not match pattern"),
        ({"version": 1, "nodeId": "n", "token": 42}, "$.token: expected string or null, found integer"),
    ],
)
def test_malformed_variants(state: Path, document: dict, needle: str) -> None:
    original = place(state, REL, document)
    assert_left_in_place(state, run(state), REL, original, needle)
