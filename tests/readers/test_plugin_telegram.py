"""Telegram plugin files -> plugin_state_entries (plugin ``telegram``), through the real apply loop."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from test_plugin_common import NOW_MS, assert_imported, assert_rejected, fixture_state, outcome, read, run, state_rows

SESSIONS = "agents/main/sessions/"


@pytest.fixture()
def migrated(tmp_path: Path):
    state = fixture_state(tmp_path, "telegram")
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    report = run(state)
    return state, report, originals


def store_path(state: Path) -> str:
    return os.path.join(os.path.abspath(state), "agents", "main", "sessions", "sessions.json")


def sha(text: str, length: int = 64) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def test_update_offset(migrated) -> None:
    state, report, originals = migrated
    rel = "telegram/update-offset-default.json"
    stored = assert_imported(state, report, rel, originals[rel], records=1)
    assert stored["by_namespace"] == {"telegram/telegram.update-offsets": 1}
    row = state_rows(state, "telegram", "telegram.update-offsets")["default"]
    # 9.6's row: safeParseState's canonical value (tokenFingerprint null before version 3), import time
    assert row == {"value": {"version": 2, "lastUpdateId": 734501122, "botId": "6012345678", "tokenFingerprint": None},
                   "created_at": NOW_MS, "expires_at": None}
    # An account that never received an update has nothing to import, but is still retired.
    assert_imported(state, report, "telegram/update-offset-ops.json", originals["telegram/update-offset-ops.json"], records=0)
    assert "ops" not in state_rows(state, "telegram", "telegram.update-offsets")


def test_sticker_cache(migrated) -> None:
    state, report, originals = migrated
    rel = "telegram/sticker-cache.json"
    assert_imported(state, report, rel, originals[rel], records=2)
    stickers = state_rows(state, "telegram", "telegram.sticker-cache")
    assert set(stickers) == {"AgADxQADVp29Cg", "AgADyAADVp29Cg"}
    assert all(r["created_at"] == NOW_MS and r["expires_at"] is None for r in stickers.values())
    assert list(stickers["AgADxQADVp29Cg"]["value"]) == ["fileId", "fileUniqueId", "description", "cachedAt", "emoji", "setName", "receivedFrom"]


def test_message_cache(migrated) -> None:
    state, report, originals = migrated
    rel = SESSIONS + "sessions.json.telegram-messages.json"
    assert_imported(state, report, rel, originals[rel], records=2)
    scope = sha(store_path(state) + ".telegram-messages.json", 24)
    cache = state_rows(state, "telegram", "telegram.message-cache")
    assert set(cache) == {f"{scope}:555000111:4012", f"{scope}:-1001234567890:77"}
    first = cache[f"{scope}:555000111:4012"]
    assert first["created_at"] == NOW_MS and first["value"]["version"] == 1
    assert "openclaw_prompt_context_projection" not in first["value"]["sourceMessage"]
    assert cache[f"{scope}:-1001234567890:77"]["value"]["threadId"] == "12"


def test_message_cache_skips_what_openclaw_skips(tmp_path: Path) -> None:
    rel = SESSIONS + "sessions.json.telegram-messages.json"
    good = {"key": "5:1", "node": {"sourceMessage": {"message_id": 9, "date": 1, "text": "x"}, "threadId": "x"}}
    lines = [json.dumps([good]), json.dumps({"key": "nope", "node": {}}), json.dumps({"key": "5:2", "node": {"sourceMessage": {"message_id": "9"}}})]
    state = fixture_state(tmp_path, extra={rel: "\n".join(lines) + "\n"})
    original = read(state, rel)
    stored = assert_imported(state, run(state), rel, original, records=1)
    assert stored["skipped_invalid"] == 2
    scope = sha(store_path(state) + ".telegram-messages.json", 24)
    # the key ends with the message's own id (9), not the one in the item key; no integer thread id, no threadId
    assert state_rows(state, "telegram", "telegram.message-cache")[f"{scope}:5:9"]["value"] == {"version": 1, "sourceMessage": {"message_id": 9, "date": 1, "text": "x"}}


def test_sent_messages_ttl(migrated) -> None:
    state, report, originals = migrated
    rel = SESSIONS + "sessions.json.telegram-sent-messages.json"
    stored = assert_imported(state, report, rel, originals[rel], records=2)
    assert stored["skipped_expired"] == 1
    scope = sha(store_path(state), 24)
    sent = state_rows(state, "telegram", "telegram.sent-messages")
    key = sha(f"{scope}\x00555000111\x004013", 32)
    assert sent[key] == {"value": {"scopeKey": scope, "chatId": "555000111", "messageId": "4013", "timestamp": 1795953660000},
                         "created_at": 1795953660000, "expires_at": 1795953660000 + 86_400_000}
    assert len(sent) == 2


def test_topic_names(migrated) -> None:
    state, report, originals = migrated
    rel = SESSIONS + "sessions.json.telegram-topic-names.json"
    assert_imported(state, report, rel, originals[rel], records=2)
    topics = state_rows(state, "telegram", "telegram.topic-name-cache." + sha(store_path(state), 16))
    assert topics["-1001234567890:12"] == {"value": json.loads(originals[rel])["-1001234567890:12"], "created_at": NOW_MS, "expires_at": None}
    assert set(topics) == {"-1001234567890:12", "-1001234567890:14"}


def test_thread_bindings(migrated) -> None:
    state, report, originals = migrated
    rel = "telegram/thread-bindings-default.json"
    assert_imported(state, report, rel, originals[rel])
    bindings = state_rows(state, "telegram", "telegram.thread-bindings")
    key = sha("default\x00-1001234567890:topic:12", 32)
    assert bindings[key]["created_at"] == NOW_MS
    assert bindings[key]["value"]["targetSessionKey"] == "agent:main:subagent:7f1c2d3e"


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
