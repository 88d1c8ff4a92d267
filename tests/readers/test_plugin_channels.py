"""iMessage, BlueBubbles, Nostr (imported) and QQBot, Feishu (recognised caches, dropped)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from test_plugin_common import T, assert_imported, assert_rejected, fixture_state, outcome, read, run, state_rows

FAMILIES = ("imessage", "bluebubbles", "nostr", "qqbot", "feishu")


@pytest.fixture()
def migrated(tmp_path: Path):
    state = fixture_state(tmp_path, *FAMILIES)
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    return state, run(state), originals


def test_imessage(migrated) -> None:
    state, report, originals = migrated
    assert_imported(state, report, "imessage/catchup/default.json", originals["imessage/catchup/default.json"], records=1)
    cursor = state_rows(state, "imessage", "catchup-cursors")["default"]
    assert cursor == {"value": {"accountId": "default", "lastSeenMs": T, "updatedAt": T + 1000, "failureRetries": {"p:0/ABC-GUID": 2}},
                      "created_at": T + 1000, "expires_at": None}
    assert_imported(state, report, "imessage/reply-cache.jsonl", originals["imessage/reply-cache.jsonl"], records=2)
    reply = state_rows(state, "imessage", "reply-cache")["default:2"]
    assert reply["value"]["messageId"] == "p:0/66666666-7777-8888-9999-000000000000" and reply["created_at"] == T + 1000
    stored = assert_imported(state, report, "imessage/sent-echoes.jsonl", originals["imessage/sent-echoes.jsonl"], records=1)
    assert stored["skipped_expired"] == 1
    key = hashlib.sha256(f"default:imessage:+15551234567\x00p:0/AAAA\x00{T + 1_800_000}".encode()).hexdigest()[:32]
    echo = state_rows(state, "imessage", "sent-echoes")[key]
    assert echo["value"]["text"] == "On it!" and echo["expires_at"] == T + 1_800_000 + 43_200_000


def test_bluebubbles(migrated) -> None:
    state, report, originals = migrated
    rel = "bluebubbles/catchup/default__2c26b46b68ff.json"
    assert_imported(state, report, rel, originals[rel], records=1)
    assert state_rows(state, "bluebubbles", "catchup-cursors")["default__2c26b46b68ff"]["value"]["lastSeenMs"] == T
    rel = "bluebubbles/inbound-dedupe/default.json"
    assert_imported(state, report, rel, originals[rel], records=1)
    assert state_rows(state, "bluebubbles", "inbound-dedupe")["default"]["value"]["entries"] == {"guid-1": T, "guid-2": T + 10}


def test_nostr(migrated) -> None:
    state, report, originals = migrated
    assert_imported(state, report, "nostr/bus-state-default.json", originals["nostr/bus-state-default.json"], records=1)
    bus = state_rows(state, "nostr", "bus-state")["default"]
    assert bus["value"]["relays"]["wss://relay.damus.io"]["lastEventId"] == "e0f1a2b3" and bus["created_at"] == T
    assert_imported(state, report, "nostr/profile-state-default.json", originals["nostr/profile-state-default.json"], records=1)
    assert state_rows(state, "nostr", "profile-state")["default"]["created_at"] == T - 3_600_000


@pytest.mark.parametrize("rel", ["qqbot/sessions/session-default.json", "qqbot/data/known-users.json", "qqbot/data/ref-index.jsonl", "feishu/dedup/default.json"])
def test_caches_are_dropped_with_reason(migrated, rel: str) -> None:
    state, report, originals = migrated
    stored = assert_imported(state, report, rel, originals[rel], records=0)
    assert stored["dropped"]
    assert outcome(report, rel).records == 0


@pytest.mark.parametrize(
    ("rel", "content", "problem"),
    [
        ("imessage/catchup/default.json", '{"updatedAt": 1}', "missing required property"),
        ("imessage/reply-cache.jsonl", '{"messageId": "a"}\nnot json\n{"messageId": "b"}\n', ":2: invalid JSON"),
        ("imessage/sent-echoes.jsonl", '{"scope": "s", "timestamp": "now"}\n', ":1: $.timestamp: expected number"),
        ("imessage/sent-echoes.jsonl", '{"scope": "s", "timestamp": 1}\n{"scope": "s", "timestamp": 1e999}\n', ":2: $.timestamp: timestamp is not a finite number"),
        ("bluebubbles/inbound-dedupe/default.json", "[]", "$: expected object, found array"),
        ("nostr/bus-state-default.json", "", "file is empty"),
    ],
)
def test_malformed_stays_in_place(tmp_path: Path, rel: str, content: str, problem: str) -> None:
    state = fixture_state(tmp_path, extra={rel: content})
    original = read(state, rel)
    assert_rejected(state, run(state), rel, original, problem)


def test_torn_last_line_is_reported_and_the_rest_imported(tmp_path: Path) -> None:
    rel = "imessage/reply-cache.jsonl"
    state = fixture_state(tmp_path, extra={rel: '{"messageId": "g1", "shortId": "1"}\n{"messageId": "g2", "sho'})
    original = read(state, rel)
    report = run(state)
    assert_imported(state, report, rel, original, records=1)
    assert "default:1" in state_rows(state, "imessage", "reply-cache")
    assert any(f"{rel}:2: torn last line" in w for w in report.warnings)
