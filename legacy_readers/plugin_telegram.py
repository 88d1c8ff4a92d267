"""Telegram channel plugin files -> ``plugin_state_entries`` (plugin ``telegram``).

Paths (upstream ``extensions/telegram``; the state dir is ``<state>``):

* ``telegram/update-offset-<account>.json`` -> ``update-offsets``, key = account id;
* ``telegram/sticker-cache.json`` -> ``sticker-cache``, one row per sticker;
* ``<session store>.telegram-messages.json`` -> ``message-cache``, one row per cached message;
* ``<session store>.telegram-sent-messages.json`` -> ``sent-messages`` (24 h TTL);
* ``<session store>.telegram-topic-names.json`` -> ``topic-names``;
* ``telegram/thread-bindings-<account>.json`` -> ``thread-bindings``;
* ``telegram/bot-info-<account>.json`` and ``<session store>.telegram-message-dispatch-*.json``
  are caches OpenClaw refetches/rebuilds: dropped with a reason.

``<session store>`` is ``agents/<id>/sessions/sessions.json`` (or the flat
``sessions/sessions.json``). Keys follow OpenClaw's plugin stores where they
are deterministic (thread bindings: ``sha256(account NUL conversation)[:32]``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, BinaryIO

from legacy_readers._plugin_state import (
    EntryContext,
    NotImportedReader,
    PluginStateReader,
    StateEntry,
    as_ms,
    file_stem,
    in_session_dirs,
    iso_to_ms,
    load_document,
    short_hash,
    text_of,
)
from legacy_readers.base import Source, parse_json_line, validate
from statekit.errors import SourceError

PLUGIN = "telegram"
SENT_MESSAGE_TTL_MS = 24 * 60 * 60 * 1000
STORE_SUFFIXES = ("sessions.json",)


class TelegramUpdateOffsetReader(PluginStateReader):
    kind = "telegram-update-offset"
    family = "telegram"
    description = "Telegram long-poll update offset per bot account"
    patterns = ("telegram/update-offset-*.json",)
    schema_name = "plugin-telegram-update-offset"
    plugin_id = PLUGIN
    namespaces = ("update-offsets",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        account = file_stem(source.rel, "update-offset-") or "default"
        if document.get("lastUpdateId") is None:
            ectx.notices.append(f"{source.rel}: no update offset recorded yet; nothing to import")
            return
        yield StateEntry("update-offsets", account, document)


class TelegramStickerCacheReader(PluginStateReader):
    kind = "telegram-sticker-cache"
    family = "telegram"
    description = "Telegram sticker description cache"
    patterns = ("telegram/sticker-cache.json",)
    schema_name = "plugin-telegram-sticker-cache"
    plugin_id = PLUGIN
    namespaces = ("sticker-cache",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for key, sticker in document["stickers"].items():
            value = {name: sticker[name] for name in ("fileId", "fileUniqueId", "description", "cachedAt")}
            for name in ("emoji", "setName", "receivedFrom"):
                if name in sticker:
                    value[name] = sticker[name]
            yield StateEntry("sticker-cache", key, value, created_at=iso_to_ms(sticker.get("cachedAt")))


def _message_cache_values(source: Source, text: str) -> Iterator[tuple[str, Any]]:
    """(where, value) for every item: a whole JSON array/object, else JSON lines (an array line is expanded)."""
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if whole is not None:
        items = whole if isinstance(whole, list) else [whole]
        for index, item in enumerate(items):
            yield f"$[{index}]", item
        return
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        value = parse_json_line(stripped.encode("utf-8"), source.rel, number)
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield f"line {number}[{index}]", item
        else:
            yield f"line {number}", value


class TelegramMessageCacheReader(PluginStateReader):
    kind = "telegram-message-cache"
    family = "telegram"
    description = "Telegram reply-chain message cache next to a session index"
    patterns = in_session_dirs("*.telegram-messages.json")
    schema_name = "plugin-telegram-message-cache-item"
    plugin_id = PLUGIN
    namespaces = ("message-cache",)
    order = 290  # before any catch-all of the sessions directory

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        text = text_of(handle, source.rel)
        if not text.strip():
            raise SourceError(source.rel, "file is empty")
        for where, item in _message_cache_values(source, text):
            if where.startswith("line "):
                line = int(where.split()[1].split("[")[0])
                validate(item, self.schema_name or "", source.rel, line=line)
            else:
                try:
                    validate(item, self.schema_name or "", source.rel)
                except SourceError as exc:
                    raise SourceError(source.rel, exc.problem, json_path=where + (exc.json_path or "$")[1:]) from None
            node = item["node"]
            message = dict(node["sourceMessage"])
            message.pop("openclaw_prompt_context_projection", None)
            prefix = item["key"][: item["key"].rfind(":") + 1]
            value: dict[str, Any] = {"version": 1, "sourceMessage": message}
            thread = node.get("threadId")
            if thread is not None and str(thread).strip():
                value["threadId"] = str(thread)
            date = message.get("date")
            created = int(date) * 1000 if isinstance(date, int) and not isinstance(date, bool) else None
            yield StateEntry("message-cache", f"{prefix}{message['message_id']}", value, created_at=created)


class TelegramSentMessagesReader(PluginStateReader):
    kind = "telegram-sent-messages"
    family = "telegram"
    description = "Telegram sent-message cache (echo suppression, 24 h TTL)"
    patterns = in_session_dirs("*.telegram-sent-messages.json")
    schema_name = "plugin-telegram-sent-messages"
    plugin_id = PLUGIN
    namespaces = ("sent-messages",)
    order = 290

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for chat_id, messages in document.items():
            for message_id, raw in messages.items():
                timestamp = as_ms(raw["timestamp"] if isinstance(raw, dict) else raw)
                if timestamp is None:
                    ectx.skipped_invalid += 1
                    continue
                value = {"chatId": chat_id, "messageId": message_id, "timestamp": timestamp}
                yield StateEntry("sent-messages", f"{chat_id}:{message_id}", value, created_at=timestamp,
                                 expires_at=timestamp + SENT_MESSAGE_TTL_MS)


class TelegramTopicNamesReader(PluginStateReader):
    kind = "telegram-topic-names"
    family = "telegram"
    description = "Telegram forum topic-name cache"
    patterns = in_session_dirs("*.telegram-topic-names.json")
    schema_name = "plugin-telegram-topic-names"
    plugin_id = PLUGIN
    namespaces = ("topic-names",)
    order = 290

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        for key, entry in document.items():
            yield StateEntry("topic-names", key, entry, created_at=as_ms(entry.get("updatedAt")))


class TelegramThreadBindingsReader(PluginStateReader):
    kind = "telegram-thread-bindings"
    family = "telegram"
    description = "Telegram thread bindings (conversation -> subagent/ACP session) per account"
    patterns = ("telegram/thread-bindings-*.json",)
    schema_name = "plugin-telegram-thread-bindings"
    plugin_id = PLUGIN
    namespaces = ("thread-bindings",)

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
            bound_at = as_ms(entry.get("boundAt")) or ectx.mtime_ms
            record: dict[str, Any] = {
                "accountId": account,
                "conversationId": conversation,
                "targetSessionKey": target,
                "targetKind": "subagent" if entry.get("targetKind") == "subagent" else "acp",
                "boundAt": bound_at,
                "lastActivityAt": as_ms(entry.get("lastActivityAt")) or bound_at,
            }
            for name in ("idleTimeoutMs", "maxAgeMs"):
                number = as_ms(entry.get(name))
                if number is not None:
                    record[name] = max(0, number)
            for name in ("agentId", "label", "boundBy"):
                if isinstance(entry.get(name), str) and entry[name].strip():
                    record[name] = entry[name].strip()
            if isinstance(entry.get("metadata"), dict) and entry["metadata"]:
                record["metadata"] = entry["metadata"]
            yield StateEntry("thread-bindings", short_hash(account, conversation), record, created_at=bound_at)
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
    order = 290


class TelegramAtomicWriteLeftover(NotImportedReader):
    kind = "telegram-tmp-leftover"
    family = "telegram"
    description = "Half-written temp file of an interrupted Telegram state write"
    patterns = ("telegram/*.json.*.tmp",)
    plugin_id = PLUGIN
    action = "drop"
    reason = "leftover of an interrupted atomic write (the .json next to it is the live copy)"
