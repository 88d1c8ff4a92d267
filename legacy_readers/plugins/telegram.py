"""Telegram channel plugin files -> ``plugin_state_entries`` (plugin ``telegram``).

Rows exactly as OpenClaw 2026.9.6's bundled Telegram plugin imports the same
files (``extensions/telegram/src/state-migrations.ts``); ``<store>`` is the
absolute path of the owning agent's ``sessions.json`` (the flat
``sessions/sessions.json`` belongs to agent ``main``), ``created_at`` is the
import time unless said otherwise, a key already in the database is kept:

* ``telegram/update-offset-<account>.json`` -> ``telegram.update-offsets``, key = the
  account id as 9.6 normalises it, value ``{version, lastUpdateId, botId, tokenFingerprint}``
  (``botId`` null before version 2, ``tokenFingerprint`` null before version 3); a file
  without an offset has nothing to import (retired, nothing lost);
* ``telegram/sticker-cache.json`` -> ``telegram.sticker-cache``, one row per sticker;
* ``<store>.telegram-messages.json`` -> ``telegram.message-cache``, key
  ``sha256(<store>.telegram-messages.json)[:24]:<chat>:<message id>``, value
  ``{version: 1, sourceMessage, threadId?}``; items 9.6 skips (no ``chat:id`` key, no
  numeric ``message_id``/``date``) are skipped and counted; at most the newest 3000;
* ``<store>.telegram-sent-messages.json`` -> ``telegram.sent-messages`` (24 h TTL), key
  ``sha256(scope NUL chat NUL message)[:32]`` with scope ``sha256(<store>)[:24]``, value
  ``{scopeKey, chatId, messageId, timestamp}``, ``created_at`` = the timestamp,
  ``expires_at`` = timestamp + 24 h; expired entries are skipped, as 9.6 does;
* ``<store>.telegram-topic-names.json`` -> ``telegram.topic-name-cache.<sha256(<store>)[:16]>``,
  key and value as written (entries with a name and a numeric ``updatedAt``, newest 2048);
* ``telegram/thread-bindings-<account>.json`` -> ``telegram.thread-bindings``, key
  ``sha256(account NUL conversation)[:32]``;
* ``telegram/bot-info-<account>.json`` (9.6 re-imports it; statekit drops this getMe
  cache, which 9.6 fetches again at startup: a documented difference) and
  ``<store>.telegram-message-dispatch-*.json`` (9.6 leaves it and rebuilds its own):
  dropped with a reason.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from statekit.documents import load_document, read_text
from statekit.legacy_readers.plugins._state import (
    EntryContext,
    NotImportedReader,
    PluginStateReader,
    StateEntry,
    file_stem,
    in_session_dirs,
    sha_hex,
    short_hash,
)
from statekit.legacy_readers.base import Source
from statekit.errors import SourceError
from statekit.layout import DEFAULT_AGENT_ID
from statekit.values import finite_number, js_number, ms

PLUGIN = "telegram"
SENT_MESSAGE_TTL_MS = 24 * 60 * 60 * 1000
MESSAGE_CACHE_MAX = 3000
TOPIC_NAMES_MAX = 2048
NS_UPDATE_OFFSETS = "telegram.update-offsets"
NS_STICKERS = "telegram.sticker-cache"
NS_MESSAGES = "telegram.message-cache"
NS_SENT = "telegram.sent-messages"
NS_TOPICS_PREFIX = "telegram.topic-name-cache."
NS_BINDINGS = "telegram.thread-bindings"


def owner_store_path(source: Source, suffix: str) -> str:
    """The absolute path of the session store a ``<store><suffix>`` sidecar belongs to, as 9.6 spells it.

    ``agents/<id>/sessions/<store><suffix>`` belongs to that store; the flat
    ``sessions/`` dir's sidecars go to agent ``main``'s store, as 9.6 moves them.
    """
    rel = PurePosixPath(source.rel)
    store_name = rel.name[: -len(suffix)] if rel.name.endswith(suffix) else "sessions.json"
    if rel.parts[0] == "agents" and len(rel.parts) >= 4:
        return os.path.join(os.path.abspath(source.state_dir), *rel.parts[:-1], store_name)
    return os.path.join(os.path.abspath(source.state_dir), "agents", DEFAULT_AGENT_ID, "sessions", store_name)


def account_state_id(account: str | None) -> str:
    """normalizeTelegramStateAccountId: trimmed, runs of other characters as ``_``, empty -> ``default``."""
    trimmed = (account or "").strip()
    return re.sub(r"[^a-z0-9._-]+", "_", trimmed, flags=re.I) if trimmed else "default"


def _safe_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 2**53 - 1


def parse_update_offset(document: Any) -> dict[str, Any] | None:
    """safeParseState of 9.6: the canonical value, or None when 9.6 would not import it."""
    if not isinstance(document, dict) or document.get("version") not in (1, 2, 3) or isinstance(document.get("version"), bool):
        return None
    version = document["version"]
    last = document.get("lastUpdateId")
    if last is not None and not _safe_int(last):
        return None
    bot = document.get("botId")
    if version >= 2 and bot is not None and not isinstance(bot, str):
        return None
    fingerprint = document.get("tokenFingerprint")
    if version == 3 and fingerprint is not None and not isinstance(fingerprint, str):
        return None
    return {
        "version": version,
        "lastUpdateId": last,
        "botId": bot if version >= 2 else None,
        "tokenFingerprint": fingerprint if version == 3 else None,
    }


class TelegramUpdateOffsetReader(PluginStateReader):
    kind = "telegram-update-offset"
    family = "telegram"
    description = "Telegram long-poll update offset per bot account"
    patterns = ("telegram/update-offset-*.json",)
    schema_name = "plugin-telegram-update-offset"
    plugin_id = PLUGIN
    namespaces = (NS_UPDATE_OFFSETS,)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        value = parse_update_offset(document)
        if value is None:
            raise SourceError(source.rel, "not an update-offset state OpenClaw accepts (version 1-3, integer lastUpdateId, string botId)")
        if value["lastUpdateId"] is None:
            ectx.notices.append(f"{source.rel}: no update offset recorded yet; nothing to import")
            return
        yield StateEntry(NS_UPDATE_OFFSETS, account_state_id(file_stem(source.rel, "update-offset-")), value)

    def should_replace(self, existing_value: Any, incoming_value: Any) -> bool:
        """9.6's shouldReplaceTelegramUpdateOffsetEntry without a bot token: a higher offset of the same bot."""
        existing, incoming = parse_update_offset(existing_value), parse_update_offset(incoming_value)
        if incoming is None or incoming["lastUpdateId"] is None:
            return False
        if existing is None or existing["lastUpdateId"] is None:
            return True
        for name in ("botId", "tokenFingerprint"):
            if existing[name] and incoming[name] and existing[name] != incoming[name]:
                return False
        return incoming["lastUpdateId"] > existing["lastUpdateId"]


class TelegramStickerCacheReader(PluginStateReader):
    kind = "telegram-sticker-cache"
    family = "telegram"
    description = "Telegram sticker description cache"
    patterns = ("telegram/sticker-cache.json",)
    schema_name = "plugin-telegram-sticker-cache"
    plugin_id = PLUGIN
    namespaces = (NS_STICKERS,)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for key, sticker in document["stickers"].items():
            value = {name: sticker[name] for name in ("fileId", "fileUniqueId", "description", "cachedAt")}
            for name in ("emoji", "setName", "receivedFrom"):
                if name in sticker:
                    value[name] = sticker[name]
            yield StateEntry(NS_STICKERS, key, value)


def _loads(text: str) -> list[Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) else [value]


_ARRAY_THEN_LINES = re.compile(r"\](?=\s*\{\s*\"key\"\s*:)")


def message_cache_values(text: str) -> list[Any]:
    """readLegacyMessageCacheValues of 9.6: a whole JSON document, else an array prefix plus JSON lines."""
    text = text.strip()
    whole = _loads(text)
    if whole is not None:
        return whole
    values: list[Any] = []
    rest = text
    if text.startswith("["):
        for match in _ARRAY_THEN_LINES.finditer(text):
            initial = _loads(text[: match.start() + 1])
            if initial is not None:
                values.extend(initial)
                rest = text[match.start() + 1:]
                break
    for line in rest.split("\n"):
        values.extend(_loads(line) or [])
    return values



def thread_id_text(value: Any) -> str | None:
    """parseTelegramMessageThreadId then String(): an integer thread id, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return str(int(value))
    return None


class TelegramMessageCacheReader(PluginStateReader):
    kind = "telegram-message-cache"
    family = "telegram"
    description = "Telegram reply-chain message cache next to a session index"
    patterns = in_session_dirs("*.telegram-messages.json")
    plugin_id = PLUGIN
    namespaces = (NS_MESSAGES,)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        text = read_text(handle, source.rel)
        if not text.strip():
            raise SourceError(source.rel, "file is empty")
        scope = sha_hex(owner_store_path(source, ".telegram-messages.json") + ".telegram-messages.json", 24)
        chosen: dict[str, dict[str, Any]] = {}
        for item in message_cache_values(text):
            key = item.get("key") if isinstance(item, dict) else None
            node = item.get("node") if isinstance(item, dict) else None
            message = node.get("sourceMessage") if isinstance(node, dict) else None
            if (not isinstance(key, str) or not key.strip() or ":" not in key or not isinstance(message, dict)
                    or finite_number(message.get("message_id")) is None or finite_number(message.get("date")) is None):
                ectx.skipped_invalid += 1
                continue
            message = {k: v for k, v in message.items() if k != "openclaw_prompt_context_projection"}
            value: dict[str, Any] = {"version": 1, "sourceMessage": message}
            assert isinstance(node, dict)  # message is a dict only when node is
            thread = thread_id_text(node.get("threadId"))
            if thread:
                value["threadId"] = thread
            entry_key = f"{key[: key.rfind(':') + 1]}{js_number(message['message_id'])}"
            chosen.pop(entry_key, None)
            chosen[entry_key] = value
            if len(chosen) > MESSAGE_CACHE_MAX:
                del chosen[next(iter(chosen))]
        if ectx.skipped_invalid:
            ectx.notices.append(f"{source.rel}: {ectx.skipped_invalid} item(s) OpenClaw does not import skipped")
        for entry_key, value in chosen.items():
            yield StateEntry(NS_MESSAGES, f"{scope}:{entry_key}", value)


class TelegramSentMessagesReader(PluginStateReader):
    kind = "telegram-sent-messages"
    family = "telegram"
    description = "Telegram sent-message cache (echo suppression, 24 h TTL)"
    patterns = in_session_dirs("*.telegram-sent-messages.json")
    schema_name = "plugin-telegram-sent-messages"
    plugin_id = PLUGIN
    namespaces = (NS_SENT,)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        scope = sha_hex(owner_store_path(source, ".telegram-sent-messages.json"), 24)
        for chat_id, messages in document.items():
            if not isinstance(messages, dict):
                continue
            for message_id, timestamp in messages.items():
                if finite_number(timestamp) is None:
                    ectx.skipped_invalid += 1
                    continue
                value = {"scopeKey": scope, "chatId": chat_id, "messageId": message_id, "timestamp": timestamp}
                key = sha_hex(f"{scope}\0{chat_id}\0{message_id}", 32)
                yield StateEntry(NS_SENT, key, value, created_at=int(timestamp), expires_at=int(timestamp) + SENT_MESSAGE_TTL_MS)


class TelegramTopicNamesReader(PluginStateReader):
    kind = "telegram-topic-names"
    family = "telegram"
    description = "Telegram forum topic-name cache"
    patterns = in_session_dirs("*.telegram-topic-names.json")
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    namespaces = (NS_TOPICS_PREFIX + "<sha256(store)[:16]>",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        namespace = NS_TOPICS_PREFIX + sha_hex(owner_store_path(source, ".telegram-topic-names.json"), 16)
        topics = [(k, v) for k, v in document.items()
                  if isinstance(v, dict) and isinstance(v.get("name"), str) and v["name"] and finite_number(v.get("updatedAt")) is not None]
        ectx.skipped_invalid += len(document) - len(topics)
        topics.sort(key=lambda item: -item[1]["updatedAt"])  # stable, newest first, as 9.6 sorts
        for key, entry in topics[:TOPIC_NAMES_MAX]:
            yield StateEntry(namespace, key, entry)


class TelegramThreadBindingsReader(PluginStateReader):
    kind = "telegram-thread-bindings"
    family = "telegram"
    description = "Telegram thread bindings (conversation -> subagent/ACP session) per account"
    patterns = ("telegram/thread-bindings-*.json",)
    schema_name = "plugin-telegram-thread-bindings"
    plugin_id = PLUGIN
    namespaces = (NS_BINDINGS,)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        account = file_stem(source.rel, "thread-bindings-") or "default"
        for entry in document["bindings"]:
            conversation = entry.get("conversationId")
            conversation = str(conversation).strip() if conversation is not None else ""
            target = (entry.get("targetSessionKey") or "").strip()
            if not conversation or not target:
                ectx.skipped_invalid += 1
                continue
            bound_at = ms(entry.get("boundAt")) or ectx.mtime_ms
            record: dict[str, Any] = {
                "accountId": account,
                "conversationId": conversation,
                "targetSessionKey": target,
                "targetKind": "subagent" if entry.get("targetKind") == "subagent" else "acp",
                "boundAt": bound_at,
                "lastActivityAt": ms(entry.get("lastActivityAt")) or bound_at,
            }
            for name in ("idleTimeoutMs", "maxAgeMs"):
                number = ms(entry.get(name))
                if number is not None:
                    record[name] = max(0, number)
            for name in ("agentId", "label", "boundBy"):
                if isinstance(entry.get(name), str) and entry[name].strip():
                    record[name] = entry[name].strip()
            if isinstance(entry.get("metadata"), dict) and entry["metadata"]:
                record["metadata"] = entry["metadata"]
            yield StateEntry(NS_BINDINGS, short_hash(account, conversation), record)
        if ectx.skipped_invalid:
            ectx.notices.append(f"{source.rel}: {ectx.skipped_invalid} binding(s) without conversationId/targetSessionKey skipped")


class TelegramBotInfoCache(NotImportedReader):
    kind = "telegram-bot-info-cache"
    family = "telegram"
    description = "Telegram startup bot-info cache (getMe result)"
    patterns = ("telegram/bot-info-*.json",)
    plugin_id = PLUGIN
    action = "drop"
    reason = "cache of Telegram's getMe answer (24 h TTL); OpenClaw fetches it again at startup"


class TelegramMessageDispatchCache(NotImportedReader):
    kind = "telegram-message-dispatch-cache"
    family = "telegram"
    description = "Telegram inbound message-dispatch dedupe sidecar"
    patterns = in_session_dirs("*.telegram-message-dispatch-*.json")
    plugin_id = PLUGIN
    action = "drop"
    reason = "short-lived inbound dispatch dedupe cache; rebuilt by the running gateway"


class TelegramAtomicWriteLeftover(NotImportedReader):
    kind = "telegram-tmp-leftover"
    family = "telegram"
    description = "Half-written temp file of an interrupted Telegram state write"
    patterns = ("telegram/*.json.*.tmp",)
    plugin_id = PLUGIN
    action = "drop"
    reason = "leftover of an interrupted atomic write (the .json next to it is the live copy)"
