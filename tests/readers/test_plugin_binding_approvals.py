"""plugin-binding-approvals.json -> plugin_binding_approvals (both key shapes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, place, query, run
from helpers import FIXTURES, global_db, open_db
from statekit.legacy_readers import reader_for

FIX = FIXTURES / "readers" / "plugin-binding-approvals"
REL = "plugin-binding-approvals.json"


def test_claims():
    assert reader_for(REL).kind == "plugin-binding-approvals"


def test_round_trip(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / REL).read_bytes()})
    report = run(state)
    assert report.exit_code == 3 and any("approvals[2] lacks pluginRoot, pluginId or channel; skipped" in w for w in report.warnings)
    assert_imported(state, report, REL, originals[REL], records=2)
    assert query(state, "SELECT * FROM plugin_binding_approvals ORDER BY channel") == [
        {"plugin_root": "/plugins/codex-a", "channel": "discord", "account_id": "default", "plugin_id": "codex", "plugin_name": "Codex App Server", "approved_at": 1234},
        {"plugin_root": "/plugins/codex-a", "channel": "telegram", "account_id": "default", "plugin_id": "codex", "plugin_name": None, "approved_at": 2345},
    ]


def test_reimport_replaces_the_approval_for_a_root_channel_account(tmp_path: Path):
    doc = {"version": 1, "approvals": [{"pluginRoot": "/p", "pluginId": "a", "channel": "slack", "accountId": "W1"}]}
    state, _ = new_state(tmp_path, {REL: doc})
    run(state)
    doc["approvals"][0]["pluginId"] = "b"
    place(state, REL, doc, MTIME + 1)
    assert run(state).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    assert query(state, "SELECT plugin_id, account_id, approved_at FROM plugin_binding_approvals") == [
        {"plugin_id": "b", "account_id": "w1", "approved_at": MTIME + 1}
    ]


def test_openclaw_three_column_key(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / REL).read_bytes()})
    db = global_db(state)
    db.parent.mkdir(parents=True)
    conn = open_db(db)
    conn.execute(
        "CREATE TABLE plugin_binding_approvals (plugin_root TEXT NOT NULL, channel TEXT NOT NULL, account_id TEXT NOT NULL,"
        " plugin_id TEXT NOT NULL, plugin_name TEXT, approved_at INTEGER NOT NULL, PRIMARY KEY (plugin_root, channel, account_id))"
    )
    conn.execute("INSERT INTO plugin_binding_approvals VALUES ('/plugins/codex-a','discord','default','old',NULL,1)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    report = run(state)
    assert_imported(state, report, REL, originals[REL], records=2)
    assert [r["plugin_id"] for r in query(state, "SELECT plugin_id FROM plugin_binding_approvals")] == ["codex", "codex"]


@pytest.mark.parametrize(("content", "needle"), [({"version": 1, "approvals": {}}, "$.approvals: expected array"), ([], "expected object")])
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    assert_failed_in_place(state, run(state), REL, originals[REL], needle)
