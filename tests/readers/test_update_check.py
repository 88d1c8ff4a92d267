"""update-check.json -> update_check_state (the release's TEXT columns: ISO instants as written)."""

from __future__ import annotations

from pathlib import Path

import pytest
from freezegun import freeze_time

from helpers import global_db, open_db
from statekit.values import ms_to_iso
from test_devices_harness import (
    MTIME,
    assert_left_in_place,
    assert_retired,
    corpus_files,
    one,
    place,
    place_fixture,
    run,
    state,  # noqa: F401  (fixture)
)

REL = "update-check.json"
NOW = 1_780_315_200_000  # 2026-06-01T12:00:00Z: the frozen import time
ISO_PUBLIC = "2026-04-09T06:03:26.366Z"  # the public repo's lastCheckedAt, as written


def test_round_trip(state: Path) -> None:
    original = place_fixture(state, "update-check/update-check.json", REL)
    with freeze_time("2026-06-01T12:00:00Z"):
        report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, REL, original)
    assert row["target_table"] == "global.update_check_state"
    assert one(state, "SELECT * FROM update_check_state") == {
        "state_key": "default",
        "last_checked_at": "2026-08-20T00:00:00.000Z",
        "last_notified_version": "2026.8.19",
        "last_notified_tag": "stable",
        "last_available_version": "2026.8.20",
        "last_available_tag": "beta",
        "auto_install_id": "installation-42",
        "auto_first_seen_version": "2026.8.18",
        "auto_first_seen_tag": "stable",
        "auto_first_seen_at": "2026-08-18T00:00:00.000Z",
        "auto_last_attempt_version": "2026.8.19",
        "auto_last_attempt_at": "2026-08-19T00:00:00.000Z",
        "auto_last_success_version": "2026.8.17",
        "auto_last_success_at": "2026-08-17T00:00:00.000Z",
        "updated_at_ms": NOW,
    }


def test_numeric_instant_and_existing_row(state: Path) -> None:
    original = place(state, REL, {"lastCheckedAt": 1790000000123, "lastNotifiedVersion": "1.0"})
    run(state)
    assert one(state, "SELECT last_checked_at, last_notified_version FROM update_check_state") == {
        "last_checked_at": "2026-09-21T14:13:20.123Z", "last_notified_version": "1.0"}  # fmt: skip
    later = place(state, REL, {"lastNotifiedVersion": "0.9"}, MTIME + 1)
    report = run(state)
    assert assert_retired(state, report, REL, later)["report"]["decision"] == "kept database row"
    assert any("kept the update-check state already in the database" in n for n in report.notices)
    assert one(state, "SELECT last_notified_version FROM update_check_state")["last_notified_version"] == "1.0"
    assert original


def test_ms_instants_are_written_as_javascript_writes_them() -> None:
    assert ms_to_iso(1795996656884) == "2026-11-29T23:57:36.884Z"
    assert ms_to_iso(1787184000000) == "2026-08-20T00:00:00.000Z"


@pytest.mark.parametrize(
    ("document", "needle"),
    [
        ({"lastCheckedAt": "last tuesday"}, "update-check.json: $.lastCheckedAt: is not an ISO-8601 date-time"),
        ({"lastNotifiedVersion": 3}, "update-check.json: $.lastNotifiedVersion: expected string or null, found integer"),
        ({"autoLastAttemptAt": True}, "update-check.json: $.autoLastAttemptAt: expected string or number or null, found boolean"),
    ],
)
def test_malformed_variants(state: Path, document: dict, needle: str) -> None:
    original = place(state, REL, document)
    message = assert_left_in_place(state, run(state), REL, original)
    assert message == needle


@pytest.mark.corpus
def test_corpus_smoke_and_public_repo(tmp_path: Path) -> None:
    state = corpus_files("legacy-2026.5.28-smoke", [REL], tmp_path / "smoke")
    original = (state / REL).read_bytes()
    report = run(state)
    assert_retired(state, report, REL, original)
    assert one(state, "SELECT last_checked_at, last_available_version, last_notified_tag FROM update_check_state") == {
        "last_checked_at": "2026-11-29T23:57:36.884Z", "last_available_version": "2026.9.6", "last_notified_tag": "latest",
    }
    public = corpus_files("Jeremy-J-J__.openclaw", [REL], tmp_path / "public")
    original = (public / REL).read_bytes()
    report = run(public)
    assert_retired(public, report, REL, original)
    assert one(public, "SELECT last_checked_at, last_notified_version, last_available_version FROM update_check_state") == {
        "last_checked_at": ISO_PUBLIC, "last_notified_version": "2026.4.2", "last_available_version": None,
    }


@pytest.mark.corpus
def test_corpus_2026_7_text_columns_get_iso_strings(tmp_path: Path) -> None:
    """In OpenClaw 2026.7's own database the ISO string goes in as written."""
    state = corpus_files("legacy-2026.7.35-std", ["state/openclaw.sqlite"], tmp_path)
    conn = open_db(global_db(state))
    conn.execute("DELETE FROM update_check_state")
    conn.commit()
    conn.close()
    original = place_fixture(state, "update-check/update-check.json", REL)
    report = run(state)
    assert_retired(state, report, REL, original)
    got = one(state, "SELECT last_checked_at, auto_first_seen_at, typeof(last_checked_at) AS t FROM update_check_state")
    assert got == {"last_checked_at": "2026-08-20T00:00:00.000Z", "auto_first_seen_at": "2026-08-18T00:00:00.000Z", "t": "text"}


@pytest.mark.corpus
def test_corpus_2026_7_own_row_is_newer_and_kept(tmp_path: Path) -> None:
    state = corpus_files("legacy-2026.7.35-std", ["state/openclaw.sqlite"], tmp_path)
    before = one(state, "SELECT * FROM update_check_state")
    original = place_fixture(state, "update-check/update-check.json", REL)
    report = run(state)
    assert assert_retired(state, report, REL, original)["report"]["decision"] == "kept database row"
    assert one(state, "SELECT * FROM update_check_state") == before
