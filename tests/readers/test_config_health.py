"""logs/config-health.json -> config_health_entries (one row per config path)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import global_db, open_db
from test_devices_harness import (
    MTIME,
    assert_left_in_place,
    assert_retired,
    corpus_files,
    one,
    place,
    place_fixture,
    rows,
    run,
    state,  # noqa: F401  (fixture)
)

REL = "logs/config-health.json"


def test_round_trip(state: Path) -> None:
    original = place_fixture(state, "config-health/config-health.json", REL)
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, REL, original)
    assert row["target_table"] == "global.config_health_entries"
    source = json.loads(original)["entries"]
    got = rows(state, "SELECT * FROM config_health_entries ORDER BY config_path")
    assert got == [
        {
            "config_path": "/home/user/.openclaw/openclaw.json",
            "last_known_good_json": json.dumps(source["/home/user/.openclaw/openclaw.json"]["lastKnownGood"], separators=(",", ":")),
            "last_promoted_good_json": json.dumps(source["/home/user/.openclaw/openclaw.json"]["lastPromotedGood"], separators=(",", ":")),
            "last_observed_suspicious_signature": None,
            "updated_at_ms": MTIME,
        },
        {
            "config_path": "/srv/openclaw/openclaw.json",
            "last_known_good_json": json.dumps(source["/srv/openclaw/openclaw.json"]["lastKnownGood"], separators=(",", ":")),
            "last_promoted_good_json": None,
            "last_observed_suspicious_signature": "size-drop:2213->12",
            "updated_at_ms": MTIME,
        },
    ]
    assert json.loads(got[0]["last_known_good_json"])["mtimeMs"] == 1790000000000.5571  # fractional ms kept


def test_newer_database_entry_is_kept(state: Path) -> None:
    place_fixture(state, "config-health/config-health.json", REL)
    run(state)
    conn = open_db(global_db(state))
    conn.execute("UPDATE config_health_entries SET last_observed_suspicious_signature = 'newer', updated_at_ms = ? WHERE config_path = '/srv/openclaw/openclaw.json'", (MTIME + 10**6,))
    conn.commit()
    conn.close()
    original = place_fixture(state, "config-health/config-health.json", REL, MTIME + 10)
    report = run(state)
    assert assert_retired(state, report, REL, original)["report"]["kept_newer_database_rows"] == 1
    assert one(state, "SELECT last_observed_suspicious_signature FROM config_health_entries WHERE config_path = '/srv/openclaw/openclaw.json'") == {
        "last_observed_suspicious_signature": "newer"
    }
    assert one(state, "SELECT updated_at_ms FROM config_health_entries WHERE config_path = '/home/user/.openclaw/openclaw.json'")["updated_at_ms"] == MTIME + 10


@pytest.mark.parametrize(
    ("name_or_doc", "needle"),
    [
        ("config-health/config-health-bad.json", "$.entries['/x/openclaw.json'].lastKnownGood: expected object or null, found string"),
        ({"version": 1}, "missing required property"),
        ({"entries": []}, "$.entries: expected object or null, found array"),
    ],
)
def test_malformed_variants(state: Path, name_or_doc, needle: str) -> None:
    if isinstance(name_or_doc, str):
        original = place_fixture(state, name_or_doc, REL)
    else:
        original = place(state, REL, name_or_doc)
    assert_left_in_place(state, run(state), REL, original, needle)


@pytest.mark.corpus
def test_corpus_smoke(tmp_path: Path) -> None:
    state = corpus_files("legacy-2026.5.28-smoke", [REL], tmp_path)
    original = (state / REL).read_bytes()
    report = run(state)
    assert_retired(state, report, REL, original)
    got = one(state, "SELECT config_path, last_observed_suspicious_signature, last_known_good_json FROM config_health_entries")
    assert got["config_path"] == "/tmp/gen-2026.5.28-smoke/home/.openclaw/openclaw.json"  # recorded path, tree has moved since
    assert got["last_observed_suspicious_signature"] is None
    assert json.loads(got["last_known_good_json"])["hash"] == "cc752d14000700142c47cdcfd878cbd86e79c0a3baafccee15eb358185698901"
