"""Delivery queues: delivery-queue/, session-delivery-queue/, failed/ and *.delivered markers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from small_store_harness import MTIME, NOW, assert_failed_in_place, assert_imported, new_state, outcome, place, query, run
from helpers import FIXTURES, global_db, rows
from statekit.legacy_readers import reader_for
from statekit.values import js_json as js_stringify

FIX = FIXTURES / "readers" / "delivery-queue"


FRESH = NOW - 3600_000  # an hour before the (frozen) migration time


def _fresh(name: str) -> dict:
    """A fixture entry enqueued an hour ago (a delivery OpenClaw would still replay)."""
    return json.loads((FIX / name).read_text()) | {"enqueuedAt": FRESH}


def _files() -> dict[str, bytes]:
    return {
        "delivery-queue/outbound-1.json": _fresh("outbound-1.json"),
        "delivery-queue/failed/outbound-failed.json": (FIX / "outbound-failed.json").read_bytes(),
        "session-delivery-queue/session-1.json": _fresh("session-1.json"),
        "delivery-queue/outbound-0.delivered": (FIX / "outbound-0.delivered").read_bytes(),
    }


def test_claims():
    assert reader_for("delivery-queue/a.json").kind == "delivery-queue"
    assert reader_for("session-delivery-queue/failed/a.json").kind == "delivery-queue"
    assert reader_for("delivery-queue/a.delivered").kind == "delivery-queue-delivered"
    assert reader_for("delivery-queue/a.json.tmp") is None


def test_round_trip(tmp_path: Path):
    state, originals = new_state(tmp_path, _files())
    report = run(state)
    assert report.status == "completed", report.warnings
    for rel in ("delivery-queue/outbound-1.json", "delivery-queue/failed/outbound-failed.json", "session-delivery-queue/session-1.json"):
        assert_imported(state, report, rel, originals[rel], records=1)

    # The queue names OpenClaw reads (2026.7.35 and 2026.9.6): "outbound" and "session".
    row = query(state, "SELECT * FROM delivery_queue_entries WHERE queue_name = 'outbound' AND id = 'outbound-1'")[0]
    text = row.pop("entry_json")
    assert row == {
        "queue_name": "outbound",
        "id": "outbound-1",
        "status": "pending",
        "entry_kind": "text",
        "session_key": None,
        "channel": "telegram",
        "target": "123456789",
        "account_id": "main",
        "retry_count": 2,
        "last_attempt_at": 1774999500000,
        "last_error": "ETIMEDOUT",
        "recovery_state": "retry-scheduled",
        "platform_send_started_at": None,
        "enqueued_at": FRESH,  # the entry's own enqueuedAt
        "updated_at": NOW,
        "failed_at": None,
    }
    # {...file, id, enqueuedAt, retryCount}, as JSON.stringify writes it (the three spread last keep their place).
    assert text == js_stringify(json.loads(originals["delivery-queue/outbound-1.json"]))

    failed = query(state, "SELECT * FROM delivery_queue_entries WHERE id = 'outbound-failed'")[0]
    assert (failed["queue_name"], failed["status"], failed["entry_kind"]) == ("outbound", "failed", "outbound")
    assert (failed["channel"], failed["target"], failed["account_id"]) == ("discord", "channel:42", "default")
    # A failed entry is kept whatever its age; failed_at falls back to its enqueuedAt (no failedAt, no lastAttemptAt).
    assert (failed["retry_count"], failed["platform_send_started_at"], failed["failed_at"], failed["enqueued_at"]) == (5, 1774990001000, 1774990000000, 1774990000000)

    session = query(state, "SELECT * FROM delivery_queue_entries WHERE queue_name = 'session'")[0]
    assert (session["id"], session["status"], session["entry_kind"], session["session_key"]) == ("session-1", "pending", "agentTurn", "agent:main:main")
    assert (session["channel"], session["target"], session["account_id"], session["retry_count"]) == ("slack", "user:U123", "work", 0)

    marker = outcome(report, "delivery-queue/outbound-0.delivered")
    assert marker.status == "dropped" and marker.records == 0
    assert not (state / "delivery-queue").exists() and not (state / "session-delivery-queue").exists()
    assert rows(global_db(state), "SELECT count(*) FROM delivery_queue_entries") == [(3,)]


def test_deliveries_openclaw_would_not_replay_are_not_queued_again(tmp_path: Path):
    """2026.9.6's doctor: a delivered marker, no valid enqueue time, or 72 hours old -> archived, never sent again."""
    files = {
        "delivery-queue/outbound-1.json": (FIX / "outbound-1.json").read_bytes(),  # enqueued two months before NOW
        "delivery-queue/no-time.json": {"channel": "telegram", "to": "1"},
        "delivery-queue/future.json": {"channel": "telegram", "to": "1", "enqueuedAt": NOW + 1},
        "delivery-queue/sent.json": {"channel": "telegram", "to": "1", "enqueuedAt": FRESH},
        "delivery-queue/sent.delivered": b"",
        "delivery-queue/recent.json": {"channel": "telegram", "to": "1", "enqueuedAt": NOW - 72 * 3600_000 + 1},
    }
    state, originals = new_state(tmp_path, files)
    report = run(state)
    assert report.exit_code == 3
    reasons = {"outbound-1": "at least 72 hours old", "no-time": "unverified enqueue time", "future": "unverified enqueue time",
               "sent": "already delivered (a .delivered marker exists)"}  # fmt: skip
    for name, reason in reasons.items():
        rel = f"delivery-queue/{name}.json"
        assert_imported(state, report, rel, originals[rel], records=0)  # retired byte-exact, no row
        assert any(w.startswith(f"{rel}: not queued again: {reason}, as OpenClaw does not replay it") for w in report.warnings), name
    assert [r["id"] for r in query(state, "SELECT id FROM delivery_queue_entries")] == ["recent"]


def test_entry_json_defaults_and_id_from_file_name(tmp_path: Path):
    state, originals = new_state(tmp_path, {"session-delivery-queue/failed/abc.json": {"kind": "systemEvent", "text": "x"}})
    report = run(state)
    assert_imported(state, report, "session-delivery-queue/failed/abc.json", originals["session-delivery-queue/failed/abc.json"])
    row = query(state, "SELECT * FROM delivery_queue_entries")[0]
    assert row["entry_json"] == '{"kind":"systemEvent","text":"x","id":"abc","enqueuedAt":%d,"retryCount":0}' % MTIME
    assert (row["status"], row["entry_kind"], row["retry_count"], row["failed_at"]) == ("failed", "systemEvent", 0, MTIME)


def test_reimport_of_changed_file_upserts(tmp_path: Path):
    state, _ = new_state(tmp_path, {"delivery-queue/q1.json": {"channel": "telegram", "to": "1", "retryCount": 1, "enqueuedAt": FRESH}})
    run(state)
    place(state, "delivery-queue/q1.json", {"channel": "telegram", "to": "1", "retryCount": 3, "enqueuedAt": FRESH + 1}, MTIME + 1000)
    report = run(state)
    assert report.status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    assert query(state, "SELECT retry_count, enqueued_at FROM delivery_queue_entries") == [{"retry_count": 3, "enqueued_at": FRESH + 1}]


def test_pending_and_failed_copy_of_one_id_is_a_conflict(tmp_path: Path):
    state, originals = new_state(tmp_path, {"delivery-queue/dup.json": {"retryCount": 1, "enqueuedAt": FRESH}, "delivery-queue/failed/dup.json": {"retryCount": 4}})
    report = run(state)
    assert report.exit_code == 3
    assert outcome(report, "delivery-queue/dup.json").status == "conflict"
    assert (state / "delivery-queue/dup.json").read_bytes() == originals["delivery-queue/dup.json"]
    assert query(state, "SELECT status, retry_count FROM delivery_queue_entries") == [{"status": "failed", "retry_count": 4}]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b'{"channel": "telegram", ', "invalid JSON"),
        (b"[1, 2]", "expected object"),
        (b'{"retryCount": -1, "to": "secret-token-value-123"}', "$.retryCount"),
        (b"", "file is empty"),
    ],
)
def test_malformed_file_stays_in_place(tmp_path: Path, content: bytes, needle: str):
    state, originals = new_state(tmp_path, {"delivery-queue/bad.json": content, "delivery-queue/good.json": {"to": "1", "enqueuedAt": FRESH}})
    report = run(state)
    message = assert_failed_in_place(state, report, "delivery-queue/bad.json", originals["delivery-queue/bad.json"], needle)
    assert "secret-token-value-123" not in message
    assert_imported(state, report, "delivery-queue/good.json", originals["delivery-queue/good.json"])
