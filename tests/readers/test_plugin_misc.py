"""Skill Workshop, ACPX process leases, voice-call records and device-pair notify -> plugin state."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from helpers import corpus_or_skip, extract_corpus_tree
from migrate.plan import build_plan
from test_plugin_common import T, assert_imported, assert_rejected, fixture_state, outcome, read, run, state_rows

FAMILIES = ("skill-workshop", "acpx", "voice-call", "device-pair-notify")


@pytest.fixture()
def migrated(tmp_path: Path):
    state = fixture_state(tmp_path, *FAMILIES)
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    return state, run(state), originals


def test_skill_workshop(migrated) -> None:
    state, report, originals = migrated
    rel = "skill-workshop/proposals.json"
    stored = assert_imported(state, report, rel, originals[rel], records=1)
    assert stored["manifest_updated_at"] == "2026-11-29T12:00:00.000Z"
    proposal = state_rows(state, "skill-workshop", "proposals")["proposal-1"]
    assert proposal["value"]["skillKey"] == "pdf-summary" and proposal["value"]["scanState"] == "clean"
    assert proposal["created_at"] == T
    rel = "skill-workshop/3f2a9c.json"
    assert_imported(state, report, rel, originals[rel], records=2)
    legacy = state_rows(state, "skill-workshop", "proposals")["legacy-proposal-7"]["value"]
    assert legacy["workspace"] == "3f2a9c" and legacy["name"] == "deploy-notes"
    assert state_rows(state, "skill-workshop", "reviews")["3f2a9c"]["value"] == {"reviewCount": 4, "lastReviewAt": "2026-10-02T08:00:00.000Z"}
    rel = "skill-workshop/skill-workshop-review-3f2a9c.json"
    assert assert_imported(state, report, rel, originals[rel], records=0)["dropped"]


def test_real_skill_workshop_manifest(tmp_path: Path) -> None:
    corpus_or_skip()
    state = extract_corpus_tree("legacy-2026.7.35-std", tmp_path)
    planned = {s.rel: s for s in build_plan(state).sources}
    manifest = planned["skill-workshop/proposals.json"]
    assert manifest.kind == "skill-workshop-proposals" and manifest.action == "import" and manifest.record_count == 0


def test_acpx_process_leases(migrated) -> None:
    state, report, originals = migrated
    rel = "acpx/process-leases.json"
    assert_imported(state, report, rel, originals[rel], records=1)
    lease = state_rows(state, "acpx", "process-leases")["lease-1"]
    assert lease["value"]["pid"] == 48213 and lease["created_at"] == T + 30_000


def test_voice_call_calls(migrated) -> None:
    state, report, originals = migrated
    rel = "voice-calls/calls.jsonl"
    result = outcome(report, rel)
    assert_imported(state, report, rel, originals[rel], records=2)
    calls = state_rows(state, "voice-call", "calls")
    assert calls["call-1"]["value"]["state"] == "completed"  # the last line of a call wins
    assert calls["call-1"]["created_at"] == T + 90_000
    assert any("duplicate entry key" in n for n in result.notices)


def test_device_pair_notify(migrated) -> None:
    state, report, originals = migrated
    rel = "device-pair-notify.json"
    stored = assert_imported(state, report, rel, originals[rel], records=3)
    assert stored["skipped_expired"] == 1
    key = hashlib.sha256(b"555000111\x00default\x00").hexdigest()[:32]
    subscriber = state_rows(state, "device-pair", "notify-subscribers")[key]
    assert subscriber["value"] == {"to": "555000111", "accountId": "default", "mode": "persistent", "addedAtMs": T}
    delivered = state_rows(state, "device-pair", "notify-delivered")
    assert delivered == {"req-aaaa": {"value": {"requestId": "req-aaaa", "notifiedAtMs": T + 1000}, "created_at": T + 1000,
                                      "expires_at": T + 1000 + 86_400_000}}


@pytest.mark.parametrize(
    ("rel", "content", "problem"),
    [
        ("skill-workshop/proposals.json", '{"schema": "other", "proposals": []}', "$.schema: must be"),
        ("skill-workshop/ws.json", '{"proposals": [{"name": "x"}]}', "$.proposals[0]: proposal has no id"),
        ("acpx/process-leases.json", '{"leases": [{"command": "x"}]}', "lease has no id"),
        ("voice-calls/calls.jsonl", '{"callId": 5}\n', ":1: $.callId: expected string"),
        ("device-pair-notify.json", '{"subscribers": [{"mode": "once"}]}', "$.subscribers[0]: missing required property"),
    ],
)
def test_malformed_stays_in_place(tmp_path: Path, rel: str, content: str, problem: str) -> None:
    state = fixture_state(tmp_path, extra={rel: content})
    original = read(state, rel)
    assert_rejected(state, run(state), rel, original, problem)
