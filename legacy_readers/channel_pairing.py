"""Channel DM pairing stores under ``credentials/`` -> ``channel_pairing_allow_entries`` / ``channel_pairing_requests``.

``credentials/**`` is user content for discovery, but readers are consulted
first: these two file families are OpenClaw state, not a tool's credentials.

Allow-lists: ``credentials/<channel>-allowFrom.json`` (default account) and
``credentials/<channel>-<accountId>-allowFrom.json`` (other accounts), each
``{"version": 1, "allowFrom": [...]}`` (oldest: a bare array). The file name
is split into channel and account: the longest known channel id that prefixes
the name wins (OpenClaw's bundled channels, some of which contain ``-``, plus
the channels named in the config), else the first ``-`` separates them.
Entries are normalised like OpenClaw does (``String(v).trim()``, empties and
``*`` dropped, duplicates removed keeping the first), then **merged** into the
table for ``(channel_key, account_id)``: entries already there keep their
place, new ones are appended with the next ``sort_order``; ``updated_at`` =
the file's mtime. Merging is what OpenClaw's reader did at runtime (the
unscoped file and ``<channel>-default-allowFrom.json`` both feed the default
account), and it makes a re-import idempotent. It also means an entry removed
from a changed file is not revoked by a re-import (use ``openclaw pairing``).

Pending requests: ``credentials/<channel>-pairing.json`` (``{"version": 1,
"requests": [{id, code, createdAt, lastSeenAt, meta?}]}``). Each request
needs a non-empty ``id`` and ``code`` and parseable ISO times (``lastSeenAt``
defaults to ``createdAt``), else it is skipped with a warning. ``account_id``
is ``meta.accountId`` lower-cased (``default`` when absent); ``meta_json``
keeps the string-valued meta fields. The channel's requests are replaced as a
whole (delete, then insert), so a re-import converges. ``created_at`` and
``last_seen_at`` are the ISO-8601 text of the file (trimmed), as OpenClaw
2026.9.6's import stores them in these TEXT columns.

``channel_key`` is OpenClaw's ``safeChannelKey``: lower-case, ``\\/:*?"<>|``
and ``..`` replaced by ``_``. Pairing codes and sender ids never appear in
messages or receipts (counts only).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from statekit.values import file_mtime_ms, iso_to_ms, js_json, record
from statekit.legacy_readers._small_stores import normalize_account_id
from statekit.documents import load_document
from statekit.values import trimmed as text  # the trimmed non-empty string
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.errors import SourceError

ALLOW = "channel_pairing_allow_entries"
REQUESTS = "channel_pairing_requests"
ALLOW_SUFFIX = "-allowFrom.json"
PAIRING_SUFFIX = "-pairing.json"
KNOWN_CHANNELS = (
    "bluebubbles", "discord", "feishu", "googlechat", "imessage", "irc", "line", "matrix", "mattermost", "msteams",
    "nextcloud-talk", "nostr", "openclaw-weixin", "signal", "slack", "synology-chat", "telegram", "twitch", "whatsapp",
    "zalo", "zalouser", "google-chat", "zalo-personal", "qqbot", "wecom", "dingtalk", "lark", "webchat",
)  # fmt: skip
_UNSAFE = re.compile(r'[\\/:*?"<>|]')


def safe_channel_key(channel: str) -> str:
    return _UNSAFE.sub("_", channel.strip().lower()).replace("..", "_")


def configured_channels(config: Any) -> set[str]:
    channels = config.get("channels") if isinstance(config, dict) else None
    return {safe_channel_key(name) for name in channels if isinstance(name, str) and name.strip()} if isinstance(channels, dict) else set()


def split_allow_name(stem: str, extra_channels: Iterable[str] = ()) -> tuple[str, str]:
    """``<channel>[-<account>]`` -> (channel_key, account_id)."""
    lowered = stem.lower()
    for channel in sorted({*KNOWN_CHANNELS, *extra_channels}, key=len, reverse=True):
        if lowered == channel:
            return channel, "default"
        if lowered.startswith(channel + "-") and len(lowered) > len(channel) + 1:
            return channel, normalize_account_id(lowered[len(channel) + 1 :])
    channel, sep, account = lowered.partition("-")
    return safe_channel_key(channel), normalize_account_id(account) if sep else "default"


def normalize_entries(values: list[Any]) -> tuple[list[str], int]:
    seen: dict[str, None] = {}
    dropped = 0
    for value in values:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            entry = str(int(value)) if float(value).is_integer() else str(value)
        else:
            entry = str(value).strip()
        if not entry or entry == "*" or entry in seen:
            dropped += 1
            continue
        seen[entry] = None
    return list(seen), dropped


class ChannelAllowFromReader(Reader):
    kind = "channel-allow-from"
    family = "channel-pairing"
    description = "Channel DM pairing allow-lists credentials/<channel>[-<account>]-allowFrom.json"
    patterns = ("credentials/*-allowFrom.json",)
    schema_name = "channel-allow-from"
    target_tables = ("global.channel_pairing_allow_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    @staticmethod
    def _entries(document: Any) -> tuple[list[str], int]:
        values = document if isinstance(document, list) else document["allowFrom"]
        return normalize_entries(values)

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        ctx = ctx or ReadContext.for_source(source)  # the config the apply step splits the name with
        if split_allow_name(PurePosixPath(source.rel).name[: -len(ALLOW_SUFFIX)], configured_channels(ctx.config))[0] in ("", "_"):
            raise SourceError(source.rel, "the file name names no channel")
        entries, _dropped = self._entries(document)
        return Inspection(record_count=len(entries))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        entries, dropped = self._entries(document)
        stem = PurePosixPath(source.rel).name[: -len(ALLOW_SUFFIX)]
        channel, account = split_allow_name(stem, configured_channels(ctx.config))
        if not channel or channel == "_":
            raise SourceError(source.rel, "the file name names no channel")
        mtime = file_mtime_ms(source, ctx.now_ms)
        db = ctx.writer.state
        columns = ("channel_key", "account_id", "entry", "sort_order", "updated_at")
        db.require_columns(ALLOW, columns)
        existing = dict(db.select(ALLOW, ("entry", "sort_order"), {"channel_key": channel, "account_id": account}))
        next_order = max(existing.values(), default=-1) + 1
        new = [e for e in entries if e not in existing]
        db.insert_many(ALLOW, columns, [(channel, account, entry, next_order + i, mtime) for i, entry in enumerate(new)])
        result = WriteResult(records=len(entries))
        if dropped:
            result.notices.append(f"{source.rel}: {dropped} empty, wildcard or duplicate entr{'y' if dropped == 1 else 'ies'} dropped")
        db.expect_rows(ALLOW, {"channel_key": channel, "account_id": account, "entry": entries}, len(entries))  # the kept ones too
        result.report.update({"channel_key": channel, "account_id": account, "entries": len(entries), "new_entries": len(new), "dropped": dropped})
        return result


def normalize_request(raw: dict[str, Any]) -> dict[str, Any] | None:
    request_id, code, created = text(raw.get("id")), text(raw.get("code")), text(raw.get("createdAt"))
    last_seen = text(raw.get("lastSeenAt")) or created
    if not (request_id and code and created and last_seen) or iso_to_ms(created) is None or iso_to_ms(last_seen) is None:
        return None
    meta_raw = record(raw.get("meta"))
    meta = {k: v.strip() for k, v in meta_raw.items() if isinstance(v, str) and v.strip()}
    return {"id": request_id, "code": code, "createdAt": created, "lastSeenAt": last_seen, "meta": meta}


class ChannelPairingRequestsReader(Reader):
    kind = "channel-pairing-requests"
    family = "channel-pairing"
    description = "Pending channel DM pairing requests credentials/<channel>-pairing.json"
    patterns = ("credentials/*-pairing.json",)
    schema_name = "channel-pairing-requests"
    target_tables = ("global.channel_pairing_requests",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    @staticmethod
    def _requests(document: dict[str, Any]) -> tuple[dict[tuple[str, str], dict[str, Any]], list[str]]:
        chosen: dict[tuple[str, str], dict[str, Any]] = {}
        warnings: list[str] = []
        for index, raw in enumerate(document["requests"]):
            request = normalize_request(raw)
            if request is None:
                warnings.append(f"requests[{index}] lacks an id, a code or valid ISO times; skipped")
                continue
            chosen[(normalize_account_id(request["meta"].get("accountId")), request["id"])] = request
        return chosen, warnings

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        if safe_channel_key(PurePosixPath(source.rel).name[: -len(PAIRING_SUFFIX)]) in ("", "_"):
            raise SourceError(source.rel, "the file name names no channel")
        _chosen, warnings = self._requests(document)
        return Inspection(record_count=len(document["requests"]), warnings=[f"{source.rel}: {w}" for w in warnings])

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        chosen, warnings = self._requests(document)
        channel = safe_channel_key(PurePosixPath(source.rel).name[: -len(PAIRING_SUFFIX)])
        if not channel or channel == "_":
            raise SourceError(source.rel, "the file name names no channel")
        columns = ("channel_key", "account_id", "request_id", "code", "created_at", "last_seen_at", "meta_json")
        rows = [
            (channel, account, request_id, request["code"], request["createdAt"], request["lastSeenAt"],
             js_json(request["meta"]) if request["meta"] else None)
            for (account, request_id), request in sorted(chosen.items())
        ]  # fmt: skip
        ctx.writer.state.replace_owned(REQUESTS, {"channel_key": channel}, columns, rows)
        result = WriteResult(records=len(rows), warnings=[f"{source.rel}: {w}" for w in warnings])
        result.report.update({"channel_key": channel, "requests": len(document["requests"]), "imported": len(rows), "skipped": len(warnings)})
        return result
