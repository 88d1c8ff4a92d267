"""subagents/runs.json -> subagent_runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, outcome, place, query, run
from helpers import FIXTURES
from statekit.legacy_readers import reader_for

FIX = FIXTURES / "readers" / "subagents"
REL = "subagents/runs.json"


def test_claims():
    assert reader_for(REL).kind == "subagent-runs"


def test_round_trip_v3(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "runs-v3.json").read_bytes()})
    report = run(state)
    assert report.exit_code == 3  # run-broken cannot be imported
    assert any("run 'run-broken' has no childSessionKey/requesterSessionKey; skipped" in w for w in report.warnings)
    assert_imported(state, report, REL, originals[REL], records=2)
    rows = {r["run_id"]: r for r in query(state, "SELECT * FROM subagent_runs")}
    assert set(rows) == {"run-a", "run-b"}
    a = {k: v for k, v in rows["run-a"].items() if v is not None}
    payload = json.loads(a.pop("payload_json"))
    assert a == {
        "run_id": "run-a",
        "child_session_key": "agent:main:subagent:aaa",
        "controller_session_key": "agent:main:main",
        "requester_session_key": "agent:main:main",
        "requester_display_key": "main",
        "requester_origin_json": '{"channel":"telegram","to":"123","accountId":"default"}',
        "task": "Summarize the ops queue",
        "cleanup": "delete",
        "label": "ops-summary",
        "model": "fakellm/fake-model",
        "spawn_mode": "run",
        "created_at": 1774000000000,
        "started_at": 1774000001000,
        "ended_at": 1774000060000,
        "outcome_json": '{"status":"ok"}',
        "archive_at_ms": 1774086400000,
        "cleanup_completed_at": 1774000061000,
        "cleanup_handled": 1,
        "pending_final_delivery": 1,
    }
    original = json.loads(originals[REL])["runs"]["run-a"]
    assert payload == original | {
        "spawnMode": "run",
        "execution": {"status": "terminal", "startedAt": 1774000001000, "endedAt": 1774000060000, "outcome": {"status": "ok"}},
        "completion": {"required": False},
        "delivery": {"status": "pending", "lastError": None},
    }
    b = rows["run-b"]
    # NOT NULL columns the record lacks: the requester key and 'keep' (the payload stays as the record says)
    assert (b["requester_display_key"], b["cleanup"], b["controller_session_key"], b["ended_at"], b["cleanup_handled"]) == (
        "agent:work:main", "keep", "agent:work:main", None, None)  # fmt: skip
    assert "requesterDisplayKey" not in json.loads(b["payload_json"])


def test_flat_legacy_fields_match_the_release(tmp_path: Path):
    """Rows byte-equal to what OpenClaw 2026.7.35's own import wrote for this file (run on the release's code):
    flat delivery fields folded into delivery/completion, blank account ids left out, handoff leases renamed."""
    state, originals = new_state(tmp_path, {REL: (FIX / "runs-v2-flat.json").read_bytes()})
    assert run(state).status == "completed"
    rows = {r["run_id"]: r for r in query(state, "SELECT * FROM subagent_runs")}
    assert rows["a"]["payload_json"] == (
        '{"runId":"a","childSessionKey":"ca","requesterSessionKey":"ra","requesterDisplayKey":"main","task":"t","cleanup":"keep",'
        '"createdAt":10,"startedAt":11,"endedAt":12,"generation":3,"taskRunId":"tr","killReconciliation":{"killedAt":5,'
        '"suppressTaskDelivery":true},"requesterOrigin":{"channel":"telegram","to":"123","threadId":42},"controllerSessionKey":"ra",'
        '"spawnMode":"run","execution":{"status":"terminal","startedAt":11,"endedAt":12},"completion":{"required":false},'
        '"delivery":{"status":"suspended","lastError":"net","createdAt":12,"suspendedAt":13,"suspendedReason":"offline"}}'
    )
    assert {k: v for k, v in rows["a"].items() if v is not None and k != "payload_json"} == {
        "run_id": "a", "child_session_key": "ca", "controller_session_key": "ra", "requester_session_key": "ra",
        "requester_display_key": "main", "requester_origin_json": '{"channel":"telegram","to":"123","threadId":42}', "task": "t",
        "cleanup": "keep", "spawn_mode": "run", "created_at": 10, "started_at": 11, "ended_at": 12, "last_announce_delivery_error": "net",
        "pending_final_delivery": 0, "pending_final_delivery_created_at": 12, "pending_final_delivery_last_error": "net",
    }  # fmt: skip
    assert rows["b"]["payload_json"] == (
        '{"runId":"b","childSessionKey":"cb","requesterSessionKey":"rb","controllerSessionKey":"ctl","requesterDisplayKey":"main",'
        '"task":"t","cleanup":"keep","createdAt":20,"cleanupHandled":false,"expectsCompletionMessage":false,'
        '"execution":{"status":"running","extra":1},"completion":{"required":false,"resultText":"r"},'
        '"delivery":{"status":"not_required","attemptCount":1,"steeringLeaseId":"L"},"spawnMode":"run"}'
    )
    assert (rows["b"]["cleanup_handled"], rows["b"]["expects_completion_message"], rows["b"]["frozen_result_text"]) == (0, 0, "r")
    assert rows["c"]["payload_json"] == (
        '{"runId":"c","childSessionKey":"cc","requesterSessionKey":"rc","requesterDisplayKey":"main","task":"t","cleanup":"keep",'
        '"createdAt":30,"endedAt":31,"delivery":{"status":"pending","lastError":null},"wakeOnDescendantSettle":true,'
        '"runTimeoutSeconds":60,"label":"l","childKeys":["x"],"deleteCleanupDispatchedAt":33,"controllerSessionKey":"rc",'
        '"spawnMode":"run","execution":{"status":"terminal","endedAt":31},"completion":{"required":false}}'
    )
    assert (rows["c"]["wake_on_descendant_settle"], rows["c"]["pending_final_delivery"], rows["c"]["run_timeout_seconds"]) == (1, 1, 60)


def test_version_1_records_are_normalised(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "runs-v1.json").read_bytes()})
    report = run(state)
    assert report.status == "completed"
    assert_imported(state, report, REL, originals[REL], records=1)
    row = query(state, "SELECT * FROM subagent_runs")[0]
    assert (row["cleanup_handled"], row["ended_at"], row["cleanup_completed_at"], row["task"]) == (1, 1760000050000, 1760000051000, "legacy task")
    assert row["requester_origin_json"] == '{"channel":"discord","accountId":"acct-9"}'
    payload = json.loads(row["payload_json"])
    assert payload["cleanupCompletedAt"] == 1760000051000 and payload["cleanupHandled"] is True
    assert payload["requesterOrigin"] == {"channel": "discord", "accountId": "acct-9"}
    assert not {"announceCompletedAt", "requesterChannel", "requesterAccountId"} & set(payload)


def test_reimport_upserts(tmp_path: Path):
    doc = json.loads((FIX / "runs-v1.json").read_text())
    state, _ = new_state(tmp_path, {REL: doc})
    run(state)
    doc["runs"]["old-1"]["endedAt"] = 1760000099000
    place(state, REL, doc, MTIME + 1)
    assert run(state).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    assert query(state, "SELECT run_id, ended_at FROM subagent_runs") == [{"run_id": "old-1", "ended_at": 1760000099000}]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ({"version": 4, "runs": {}}, "$.version: must be one of 1, 2, 3"),
        ({"version": 2, "runs": []}, "$.runs: expected object, found array"),
        ({"version": 2, "runs": {"x": {"createdAt": "yesterday"}}}, "$.runs.x.createdAt"),
        ('{"version": 2, "runs": {', "invalid JSON"),
    ],
)
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    report = run(state)
    assert_failed_in_place(state, report, REL, originals[REL], needle)
    assert outcome(report, REL).status == "unreadable"
