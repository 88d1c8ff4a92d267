"""plugins/phone-control/armed.json -> plugin_state_entries (phone-control / arm-state / current)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, query, run
from helpers import FIXTURES
from statekit.legacy_readers import reader_for

FIX = FIXTURES / "readers" / "phone-control"
REL = "plugins/phone-control/armed.json"


def test_claims():
    assert reader_for(REL).kind == "phone-control-arm-state"


@pytest.mark.parametrize(
    "doc",
    [
        json.loads((FIX / "armed-v2.json").read_text()),
        {"version": 1, "armedAtMs": 1774200000000, "expiresAtMs": None, "removedFromDeny": ["screen.record"]},
    ],
)
def test_round_trip(tmp_path: Path, doc):
    state, originals = new_state(tmp_path, {REL: doc})
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, REL, originals[REL], records=1)
    row = query(state, "SELECT * FROM plugin_state_entries")[0]
    assert (row["plugin_id"], row["namespace"], row["entry_key"], row["created_at"], row["expires_at"]) == ("phone-control", "arm-state", "current", MTIME, None)
    assert json.loads(row["value_json"]) == doc
    assert not (state / "plugins").exists()


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"version": 3, "armedAtMs": 1, "expiresAtMs": None, "removedFromDeny": []}, "$.version: must be one of 1, 2"),
        ({"version": 2, "armedAtMs": 1, "expiresAtMs": None, "removedFromDeny": []}, "missing required property"),
        ({"version": 2, "armedAtMs": 1, "expiresAtMs": 2, "removedFromDeny": [], "group": "mic", "armedCommands": [], "addedToAllow": []}, "$.group"),
        ({"version": 1, "armedAtMs": "now", "expiresAtMs": None, "removedFromDeny": []}, "$.armedAtMs: expected number"),
    ],
)
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    assert_failed_in_place(state, run(state), REL, originals[REL], needle)
