"""mcp-oauth/*.json -> plugin_state_entries (core:mcp / oauth-sessions); locks fail closed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, outcome, query, report_json, run
from helpers import FIXTURES
from statekit.legacy_readers import reader_for

FIX = FIXTURES / "readers" / "mcp-oauth"
REL = "mcp-oauth/linear.json"
SECRETS = ("fixture-client-secret-ABCDEF", "fixture-access-token-123456", "fixture-refresh-token-654321", "fixture-oauth-state-xyz")


def test_claims():
    assert reader_for(REL).kind == "mcp-oauth-session"
    assert reader_for("mcp-oauth/linear.lock").kind == "mcp-oauth-lock"


def test_round_trip_drops_state_and_never_prints_tokens(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "linear.json").read_bytes()})
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, REL, originals[REL], records=1)
    row = query(state, "SELECT * FROM plugin_state_entries")[0]
    assert (row["plugin_id"], row["namespace"], row["entry_key"], row["created_at"], row["expires_at"]) == ("core:mcp", "oauth-sessions", "linear", MTIME, None)
    expected = json.loads(originals[REL])
    del expected["state"]
    assert json.loads(row["value_json"]) == expected
    printed = report_json(report) + json.dumps(query(state, "SELECT report_json FROM migration_sources")) + json.dumps(query(state, "SELECT report_json FROM migration_runs"))
    for secret in SECRETS:
        assert secret not in printed
    assert any("dropped the persisted OAuth state" in n for n in report.notices)


@pytest.mark.parametrize("lock", ["linear.lock", "linear.json.lock"])
def test_lock_fails_closed(tmp_path: Path, lock: str):
    state, originals = new_state(tmp_path, {REL: (FIX / "linear.json").read_bytes(), f"mcp-oauth/{lock}": ""})
    report = run(state)
    message = assert_failed_in_place(state, report, REL, originals[REL], f"{lock} exists")
    for secret in SECRETS:
        assert secret not in message
    if lock == "linear.lock":
        assert outcome(report, "mcp-oauth/linear.lock").status == "retain"
    assert (state / "mcp-oauth" / lock).exists()


@pytest.mark.parametrize(("content", "needle"), [(b"{}", "violates minProperties 1"), (b'{"tokens": {"access_token": "fixture-access-token-123456"', "invalid JSON"), (b"[]", "expected object")])
def test_malformed_file_stays_in_place(tmp_path: Path, content: bytes, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    report = run(state)
    message = assert_failed_in_place(state, report, REL, originals[REL], needle)
    assert "fixture-access-token-123456" not in message + report_json(report)
