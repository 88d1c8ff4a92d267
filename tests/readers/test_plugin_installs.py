"""plugins/installs.json -> installed_plugin_index (singleton row 'current')."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from b2_harness import assert_failed_in_place, assert_imported, new_state, query, run
from helpers import FIXTURES, global_db
from legacy_readers import reader_for

FIX = FIXTURES / "readers" / "plugin-installs"
REL = "plugins/installs.json"


def test_claims():
    assert reader_for(REL).kind == "installed-plugin-index"


def test_round_trip(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "installs.json").read_bytes()})
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, REL, originals[REL], records=1)
    row = query(state, "SELECT * FROM installed_plugin_index")[0]
    doc = json.loads(originals[REL])
    assert (row["index_key"], row["version"], row["updated_at_ms"]) == ("current", 1, 1777118400000)
    assert json.loads(row["install_records_json"]) == doc["installRecords"]
    assert json.loads(row["plugins_json"]) == doc["plugins"]
    assert json.loads(row["raw_json"]) == doc


def test_openclaw_table_without_raw_json_is_refused(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "installs.json").read_bytes()})
    db = global_db(state)
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE installed_plugin_index (index_key TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL, host_contract_version TEXT NOT NULL,"
        " compat_registry_version TEXT NOT NULL, migration_version INTEGER NOT NULL, policy_hash TEXT NOT NULL, generated_at_ms INTEGER NOT NULL,"
        " refresh_reason TEXT, install_records_json TEXT NOT NULL, plugins_json TEXT NOT NULL, diagnostics_json TEXT NOT NULL, warning TEXT,"
        " updated_at_ms INTEGER NOT NULL)"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    report = run(state)
    assert_failed_in_place(state, report, REL, originals[REL], "lacks column(s) raw_json")


@pytest.mark.parametrize(("content", "needle"), [({"version": 1}, "matches none of the allowed shapes"), ({"installRecords": []}, "$.installRecords")])
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    assert_failed_in_place(state, run(state), REL, originals[REL], needle)
