"""crestodian/rescue-pending/*.json -> plugin_state_entries (core:crestodian / rescue-pending)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, place, query, run
from helpers import FIXTURES
from statekit.legacy_readers import reader_for

FIX = FIXTURES / "readers" / "crestodian"
REL = "crestodian/rescue-pending/3b1f0c9a.json"


def test_claims():
    assert reader_for(REL).kind == "crestodian-rescue-pending"


def test_round_trip(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "3b1f0c9a.json").read_bytes()})
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, REL, originals[REL], records=1)
    row = query(state, "SELECT * FROM plugin_state_entries")[0]
    assert (row["plugin_id"], row["namespace"], row["entry_key"], row["created_at"], row["expires_at"]) == (
        "core:crestodian", "rescue-pending", "3b1f0c9a", 1772695800000, None)  # fmt: skip
    assert json.loads(row["value_json"]) == json.loads(originals[REL])
    assert not (state / "crestodian").exists()


def test_unparseable_created_at_uses_mtime_and_reimport_upserts(tmp_path: Path):
    doc = json.loads((FIX / "3b1f0c9a.json").read_text())
    doc["createdAt"] = "soon"
    state, _ = new_state(tmp_path, {REL: doc})
    run(state)
    assert query(state, "SELECT created_at FROM plugin_state_entries") == [{"created_at": MTIME}]
    doc["createdAt"] = "2026-03-05T07:31:00Z"
    place(state, REL, doc, MTIME + 1)
    run(state)
    assert query(state, "SELECT created_at FROM plugin_state_entries") == [{"created_at": 1772695860000}]


@pytest.mark.parametrize(("content", "needle"), [({"id": "x", "createdAt": "a", "expiresAt": "b", "operation": [], "auditDetails": {}}, "$.operation: expected object"), ({"id": 1}, "missing required property")])
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    assert_failed_in_place(state, run(state), REL, originals[REL], needle)
