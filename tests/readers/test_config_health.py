"""logs/config-health.json -> config_health_entries (one row per config path)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from freezegun import freeze_time

from helpers import FIXTURES, global_db, open_db
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
NOW = 1_780_315_200_000  # 2026-06-01T12:00:00Z: the frozen import time


def test_round_trip(state: Path) -> None:
    original = place_fixture(state, "config-health/config-health.json", REL)
    with freeze_time("2026-06-01T12:00:00Z"):
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
            "updated_at_ms": NOW,
        },
        {
            "config_path": "/srv/openclaw/openclaw.json",
            "last_known_good_json": json.dumps(source["/srv/openclaw/openclaw.json"]["lastKnownGood"], separators=(",", ":")),
            "last_promoted_good_json": None,
            "last_observed_suspicious_signature": "size-drop:2213->12",
            "updated_at_ms": NOW,
        },
    ]
    assert json.loads(got[0]["last_known_good_json"])["mtimeMs"] == 1790000000000.5571  # fractional ms kept


def test_database_entry_is_kept_and_only_gets_missing_snapshots(state: Path) -> None:
    """As the release merges: a path already in the database keeps its values, a NULL snapshot is filled in."""
    place_fixture(state, "config-health/config-health.json", REL)
    with freeze_time("2026-05-01T12:00:00Z"):
        run(state)
    conn = open_db(global_db(state))
    conn.execute("UPDATE config_health_entries SET last_observed_suspicious_signature = 'newer', last_known_good_json = NULL, updated_at_ms = 5"
                 " WHERE config_path = '/srv/openclaw/openclaw.json'")  # fmt: skip
    conn.execute("UPDATE config_health_entries SET last_known_good_json = '{\"hash\":\"db\"}', updated_at_ms = 6 WHERE config_path = '/home/user/.openclaw/openclaw.json'")
    conn.commit()
    conn.close()
    doc = json.loads((FIXTURES / "readers" / "config-health" / "config-health.json").read_text())
    doc["entries"]["/c/openclaw.json"] = {"lastObservedSuspiciousSignature": "new"}
    original = place(state, REL, doc, MTIME + 10)
    with freeze_time("2026-06-01T12:00:00Z"):
        report = run(state)
    assert assert_retired(state, report, REL, original)["report"]["kept_database_rows"] == 2
    srv = one(state, "SELECT * FROM config_health_entries WHERE config_path = '/srv/openclaw/openclaw.json'")
    source = json.loads(original)["entries"]["/srv/openclaw/openclaw.json"]
    assert (srv["last_observed_suspicious_signature"], json.loads(srv["last_known_good_json"]), srv["updated_at_ms"]) == ("newer", source["lastKnownGood"], NOW)
    home = one(state, "SELECT last_known_good_json, updated_at_ms FROM config_health_entries WHERE config_path = '/home/user/.openclaw/openclaw.json'")
    assert home == {"last_known_good_json": '{"hash":"db"}', "updated_at_ms": 6}


def test_entry_without_any_value_is_skipped(state: Path) -> None:
    place(state, REL, {"entries": {"/a/openclaw.json": {}, "/b/openclaw.json": {"lastObservedSuspiciousSignature": "x"}}})
    report = run(state)
    assert any("skipped 1 entr(y/ies) without a path or any value" in n for n in report.notices)
    assert rows(state, "SELECT config_path FROM config_health_entries") == [{"config_path": "/b/openclaw.json"}]


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
