"""ClawHub skill tracking: <workspace>/.clawhub/lock.json and skills/<slug>/.clawhub/origin.json -> plugin_state_entries."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, query, run
from helpers import FIXTURES
from statekit.legacy_readers import reader_for
from statekit.migrate.discover import discover

FIX = FIXTURES / "readers" / "clawhub"
LOCK = "workspace/.clawhub/lock.json"
ORIGIN = "workspace/skills/weather/.clawhub/origin.json"


def _prefix(state: Path, ws: str) -> str:
    return hashlib.sha256(os.path.abspath(state / ws).encode()).hexdigest()[:24]


def test_claims_and_discovery_probe(tmp_path: Path):
    assert reader_for(LOCK).kind == "clawhub-lock"
    assert reader_for("workspace-work/.clawdhub/lock.json").kind == "clawhub-lock"
    assert reader_for(ORIGIN).kind == "clawhub-origin"
    assert reader_for("agents/a/workspace/skills/x/.clawdhub/origin.json").kind == "clawhub-origin"
    state, _ = new_state(tmp_path, {LOCK: "{}", ORIGIN: "{}", "workspace/skills/weather/SKILL.md": "# skill"})
    found = {entry.rel: reader.kind for entry, reader in discover(state).legacy}
    assert found == {LOCK: "clawhub-lock", ORIGIN: "clawhub-origin"}


def test_round_trip_lock_then_origin(tmp_path: Path):
    state, originals = new_state(tmp_path, {LOCK: (FIX / "lock.json").read_bytes(), ORIGIN: (FIX / "origin.json").read_bytes()}, MTIME)
    os.utime(state / ORIGIN, ns=((MTIME + 9) * 1_000_000,) * 2)
    originals[ORIGIN] = (state / ORIGIN).read_bytes()
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, LOCK, originals[LOCK], records=2)
    assert_imported(state, report, ORIGIN, originals[ORIGIN], records=1)
    ws = os.path.abspath(state / "workspace")
    rows = {r["entry_key"]: r for r in query(state, "SELECT * FROM plugin_state_entries WHERE plugin_id = 'core:clawhub-skills'")}
    prefix = _prefix(state, "workspace")
    assert set(rows) == {f"{prefix}:weather", f"{prefix}:notes"}
    weather = rows[f"{prefix}:weather"]
    assert (weather["namespace"], weather["created_at"], weather["expires_at"]) == ("skill-installs", 1774300500000, None)
    assert json.loads(weather["value_json"]) == {
        "version": 1,
        "registry": "https://registry.example.org",
        "slug": "weather",
        "installedVersion": "1.1.0",
        "installedAt": 1774300500000,
        "workspaceDir": ws,
        "targetDir": f"{ws}/skills/weather",
        "updatedAt": MTIME + 9,
    }
    notes = json.loads(rows[f"{prefix}:notes"]["value_json"])
    assert (notes["registry"], notes["installedVersion"], notes["targetDir"], notes["updatedAt"]) == ("https://clawhub.ai", "0.3.1", f"{ws}/skills/notes", MTIME)
    assert not (state / "workspace" / ".clawhub").exists() and (state / "workspace" / "skills" / "weather").is_dir() is False


def test_origin_wins_whatever_the_order(tmp_path: Path):
    """A lock imported after the origin only fills what is missing."""
    state, _ = new_state(tmp_path, {ORIGIN: (FIX / "origin.json").read_bytes()})
    run(state)
    from small_store_harness import place

    place(state, LOCK, (FIX / "lock.json").read_bytes(), MTIME + 50)
    assert run(state).status == "completed"
    prefix = _prefix(state, "workspace")
    weather = json.loads(query(state, "SELECT value_json FROM plugin_state_entries WHERE entry_key = ?", (f"{prefix}:weather",))[0]["value_json"])
    assert (weather["registry"], weather["installedVersion"], weather["updatedAt"]) == ("https://registry.example.org", "1.1.0", MTIME + 50)


@pytest.mark.parametrize(
    ("rel", "content", "needle"),
    [
        (LOCK, {"version": 2, "skills": {}}, "$.version: must be 1"),
        (LOCK, {"version": 1, "skills": {"../evil": {"version": "1", "installedAt": 1}}}, "does not match pattern"),
        (LOCK, {"version": 1, "skills": {"ok": {"version": "1"}}}, "$.skills.ok: missing required property"),
        (ORIGIN, {"version": 1, "registry": "r", "slug": "a/b", "installedVersion": "1", "installedAt": 1}, "$.slug: does not match pattern"),
    ],
)
def test_malformed_file_stays_in_place(tmp_path: Path, rel: str, content, needle: str):
    state, originals = new_state(tmp_path, {rel: content})
    assert_failed_in_place(state, run(state), rel, originals[rel], needle)
