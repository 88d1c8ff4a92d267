"""commitments/commitments.json (older commitments.json) -> commitments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, place, query, run
from helpers import FIXTURES
from statekit.legacy_readers import reader_for

FIX = FIXTURES / "readers" / "commitments"
REL = "commitments/commitments.json"


def test_claims():
    assert reader_for(REL).kind == "commitments"
    assert reader_for("commitments.json").kind == "commitments"


def test_round_trip(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "commitments.json").read_bytes()})
    report = run(state)
    assert report.exit_code == 3 and any("commitments[1]: missing or invalid" in w for w in report.warnings)
    assert_imported(state, report, REL, originals[REL], records=1)
    row = query(state, "SELECT * FROM commitments")[0]
    record = json.loads(row.pop("record_json"))
    assert row == {
        "id": "cm_m1abc_0123456789",
        "agent_id": "main",
        "session_key": "agent:main:main",
        "channel": "telegram",
        "account_id": "default",
        "recipient_id": "123456789",
        "thread_id": "77",
        "sender_id": "u-1",
        "kind": "event_check_in",
        "sensitivity": "routine",
        "source": "inferred_user_context",
        "status": "pending",
        "reason": "User has a dentist appointment tomorrow",
        "suggested_text": "How did the dentist go?",
        "dedupe_key": "dentist-2026-03-02",
        "confidence": 0.82,
        "due_earliest_ms": 1772460000000,
        "due_latest_ms": 1772496000000,
        "due_timezone": "Europe/Paris",
        "source_message_id": "msg-9",
        "source_run_id": "run-7",
        "created_at_ms": 1772380000000,
        "updated_at_ms": 1772380000500,
        "attempts": 1,
        "last_attempt_at_ms": 1772461000000,
        "sent_at_ms": None,
        "dismissed_at_ms": None,
        "snoozed_until_ms": 1772470000000,
        "expired_at_ms": None,
    }
    expected = json.loads(originals[REL])["commitments"][0]
    del expected["sourceUserText"]
    assert record == expected
    assert any("legacy raw conversation text" in n for n in report.notices)


def test_older_root_path_and_reimport(tmp_path: Path):
    doc = json.loads((FIX / "commitments.json").read_text())
    doc["commitments"] = doc["commitments"][:1]
    state, _ = new_state(tmp_path, {"commitments.json": doc})
    assert run(state).status == "completed"
    doc["commitments"][0]["status"] = "sent"
    doc["commitments"][0]["sentAtMs"] = 1772470000001
    place(state, "commitments.json", doc, MTIME + 1)
    assert run(state).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    assert query(state, "SELECT status, sent_at_ms FROM commitments") == [{"status": "sent", "sent_at_ms": 1772470000001}]


@pytest.mark.parametrize(("content", "needle"), [({"version": 2, "commitments": []}, "$.version: must be 1"), ({"version": 1, "commitments": [1]}, "$.commitments[0]")])
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    assert_failed_in_place(state, run(state), REL, originals[REL], needle)
