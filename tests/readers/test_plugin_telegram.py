"""Telegram plugin files -> plugin_state_entries (plugin ``telegram``), through the real apply loop."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from test_plugin_common import T, assert_imported, assert_rejected, fixture_state, outcome, read, run, state_rows

SESSIONS = "agents/main/sessions/"


@pytest.fixture()
def migrated(tmp_path: Path):
    state = fixture_state(tmp_path, "telegram")
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    report = run(state)
    return state, report, originals


def test_update_offset(migrated) -> None:
    state, report, originals = migrated
    rel = "telegram/update-offset-default.json"
    stored = assert_imported(state, report, rel, originals[rel], records=1)
    assert stored["by_namespace"] == {"telegram/update-offsets": 1}
    row = state_rows(state, "telegram", "update-offsets")["default"]
    assert row["value"] == {"version": 2, "lastUpdateId": 734501122, "botId": "6012345678"}
    assert row["expires_at"] is None
    # An account that never received an update has nothing to import, but is still retired.
    assert_imported(state, report, "telegram/update-offset-ops.json", originals["telegram/update-offset-ops.json"], records=0)
    assert "ops" not in state_rows(state, "telegram", "update-offsets")


def test_sticker_cache(migrated) -> None:
    state, report, originals = migrated
    rel = "telegram/sticker-cache.json"
    assert_imported(state, report, rel, originals[rel], records=2)
    stickers = state_rows(state, "telegram", "sticker-cache")
    row = stickers["AgADxQADVp29Cg"]
    assert row["value"] == {
        "fileId": "CAACAgIAAxkBAAIBZ2VhYmNkZWZnaGlqa2xtbm9wcXJzdHV2",
        "fileUniqueId": "AgADxQADVp29Cg",
        "description": "A cartoon cherry giving a thumbs up",
        "cachedAt": "2026-11-29T12:00:00.000Z",
        "emoji": "👍",
        "setName": "HotCherry",
        "receivedFrom": "telegram:direct:555000111",
    }
    assert row["created_at"] == T
    assert "emoji" not in stickers["AgADyAADVp29Cg"]["value"]


def test_message_cache(migrated) -> None:
    state, report, originals = migrated
    rel = SESSIONS + "sessions.json.telegram-messages.json"
    assert_imported(state, report, rel, originals[rel], records=2)
    cache = state_rows(state, "telegram", "message-cache")
    row = cache["555000111:4012"]
    assert row["value"]["version"] == 1
    assert row["value"]["sourceMessage"]["text"] == "Can you summarise the report?"
    assert "openclaw_prompt_context_projection" not in row["value"]["sourceMessage"]
    assert "threadId" not in row["value"]
    assert row["created_at"] == 1795953000 * 1000
    assert cache["-1001234567890:77"]["value"]["threadId"] == "12"


def test_message_cache_jsonl_variant(tmp_path: Path) -> None:
    rel = SESSIONS + "sessions.json.telegram-messages.json"
    lines = [
        '[{"key": "1:10", "node": {"sourceMessage": {"message_id": 10, "text": "a"}}}]',
        '{"key": "1:10", "node": {"sourceMessage": {"message_id": 10, "text": "a, edited"}}}',
        '{"key": "2:20", "node": {"sourceMessage": {"message_id": 20, "text": "b"}, "threadId": 3}}',
    ]
    state = fixture_state(tmp_path, extra={rel: "\n".join(lines) + "\n"})
    report = run(state)
    assert outcome(report, rel).records == 2
    cache = state_rows(state, "telegram", "message-cache")
    assert cache["1:10"]["value"]["sourceMessage"]["text"] == "a, edited"
    assert cache["2:20"]["value"]["threadId"] == "3"


def test_sent_messages_ttl(migrated) -> None:
    state, report, originals = migrated
    rel = SESSIONS + "sessions.json.telegram-sent-messages.json"
    stored = assert_imported(state, report, rel, originals[rel], records=2)
    sent = state_rows(state, "telegram", "sent-messages")
    assert sent["555000111:4013"] == {
        "value": {"chatId": "555000111", "messageId": "4013", "timestamp": T + 60_000},
        "created_at": T + 60_000,
        "expires_at": T + 60_000 + 86_400_000,
    }
    assert "-1001234567890:78" not in sent  # two days old: expired, skipped as OpenClaw does
    assert stored["skipped_expired"] == 1


def test_topic_names(migrated) -> None:
    state, report, originals = migrated
    rel = SESSIONS + "sessions.json.telegram-topic-names.json"
    assert_imported(state, report, rel, originals[rel], records=2)
    row = state_rows(state, "telegram", "topic-names")["-1001234567890:12"]
    assert row == {"value": {"name": "Deployments", "updatedAt": T + 5000, "iconColor": 7322096}, "created_at": T + 5000, "expires_at": None}


def test_thread_bindings(migrated) -> None:
    state, report, originals = migrated
    rel = "telegram/thread-bindings-default.json"
    stored = assert_imported(state, report, rel, originals[rel], records=1)
    assert stored["skipped_invalid"] == 1
    key = hashlib.sha256(b"default\x00-1001234567890:topic:12").hexdigest()[:32]
    row = state_rows(state, "telegram", "thread-bindings")[key]
    assert row["value"] == {
        "accountId": "default",
        "conversationId": "-1001234567890:topic:12",
        "targetSessionKey": "agent:main:subagent:7f1c2d3e",
        "targetKind": "subagent",
        "boundAt": T,
        "lastActivityAt": T + 120_000,
        "idleTimeoutMs": 3_600_000,
        "agentId": "main",
        "label": "deploy watcher",
        "boundBy": "555000111",
    }
    assert row["created_at"] == T


def test_bot_info_cache_is_dropped(migrated) -> None:
    state, report, originals = migrated
    rel = "telegram/bot-info-default.json"
    stored = assert_imported(state, report, rel, originals[rel], records=0)
    assert "getMe" in stored["dropped"]


@pytest.mark.parametrize(
    ("rel", "content", "problem"),
    [
        ("telegram/update-offset-default.json", '{"version": 2, "lastUpdateId": -5}', "$.lastUpdateId: must satisfy minimum 0"),
        ("telegram/sticker-cache.json", '{"version": 1, "stickers": {"x": {"fileId": "f"}}}', "$.stickers.x: missing required property"),
        ("telegram/sticker-cache.json", '{"version": 1, "stickers": {', "invalid JSON"),
        (SESSIONS + "sessions.json.telegram-messages.json", '{"key": "1:1", "node": {}}\n{"key": "nope"}\n', ":1: $.node: missing required property"),
        (SESSIONS + "sessions.json.telegram-sent-messages.json", '{"1": {"2": "yesterday"}}', "$['1']['2']: matches none"),
        ("telegram/thread-bindings-default.json", '{"version": 2, "bindings": []}', "$.version: must be 1"),
        (SESSIONS + "sessions.json.telegram-topic-names.json", "", "file is empty"),
    ],
)
def test_malformed_stays_in_place(tmp_path: Path, rel: str, content: str, problem: str) -> None:
    state = fixture_state(tmp_path, extra={rel: content})
    original = read(state, rel)
    report = run(state)
    assert_rejected(state, report, rel, original, problem)


def test_interrupted_write_leftover_is_dropped(migrated) -> None:
    state, report, originals = migrated
    rel = "telegram/update-offset-default.json.5c2d9e.tmp"
    stored = assert_imported(state, report, rel, originals[rel], records=0)
    assert "interrupted atomic write" in stored["dropped"]
