"""iMessage channel plugin files -> ``plugin_state_entries`` (plugin ``imessage``).

* ``imessage/catchup/<account>.json`` -> ``catchup-cursors``, key = ``accountId`` in the
  file, else the file's stem; value ``{lastSeenMs, updatedAt?, failureRetries?}``;
* ``imessage/reply-cache.jsonl`` -> ``reply-cache``: one row per line (streamed), key
  ``<accountId>:<shortId>`` (``<accountId>:<messageId>`` when the line has no short id);
* ``imessage/sent-echoes.jsonl`` -> ``sent-echoes``: one row per line, key
  ``sha256(scope NUL messageId-or-text NUL timestamp)[:32]``; 12 h TTL, so expired lines
  are skipped as OpenClaw does.

A torn last line (crash mid-append) is reported and skipped; any other invalid
line fails the file, which then stays in place.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from legacy_readers._plugin_state import (
    EntryContext,
    PluginStateReader,
    StateEntry,
    as_ms,
    file_stem,
    iter_jsonl,
    load_document,
    short_hash,
)
from legacy_readers.base import Source
from statekit.errors import SourceError

PLUGIN = "imessage"
SENT_ECHO_TTL_MS = 12 * 60 * 60 * 1000


def catchup_entries(source: Source, handle: BinaryIO, schema: str) -> Iterator[StateEntry]:
    document = load_document(source, handle, schema)
    account = document.get("accountId")
    key = account.strip() if isinstance(account, str) and account.strip() else file_stem(source.rel)
    yield StateEntry("catchup-cursors", key, document, created_at=as_ms(document.get("updatedAt")))


class IMessageCatchupCursorReader(PluginStateReader):
    kind = "imessage-catchup-cursor"
    family = "imessage"
    description = "iMessage catch-up cursor per account"
    patterns = ("imessage/catchup/*.json",)
    schema_name = "plugin-catchup-cursor"
    plugin_id = PLUGIN
    namespaces = ("catchup-cursors",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        yield from catchup_entries(source, handle, self.schema_name or "")


class IMessageReplyCacheReader(PluginStateReader):
    kind = "imessage-reply-cache"
    family = "imessage"
    description = "iMessage reply short-id -> message GUID cache (JSONL)"
    patterns = ("imessage/reply-cache.jsonl",)
    schema_name = "plugin-imessage-reply-cache-line"
    plugin_id = PLUGIN
    namespaces = ("reply-cache",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        for _number, _line, value in iter_jsonl(source, handle, self.schema_name, ectx):
            account = value.get("accountId") or "default"
            short = value.get("shortId")
            ident = str(short) if short is not None and str(short).strip() else value["messageId"]
            yield StateEntry("reply-cache", f"{account}:{ident}", value, created_at=as_ms(value.get("timestamp")))


class IMessageSentEchoesReader(PluginStateReader):
    kind = "imessage-sent-echoes"
    family = "imessage"
    description = "iMessage sent-echo dedupe lines (JSONL, 12 h TTL)"
    patterns = ("imessage/sent-echoes.jsonl",)
    schema_name = "plugin-imessage-sent-echo-line"
    plugin_id = PLUGIN
    namespaces = ("sent-echoes",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        for number, _line, value in iter_jsonl(source, handle, self.schema_name, ectx):
            stamp = as_ms(value["timestamp"])
            if stamp is None:
                raise SourceError(source.rel, "timestamp is not a finite number", line=number, json_path="$.timestamp")
            ident = value.get("messageId") or value.get("text") or ""
            yield StateEntry("sent-echoes", short_hash(value["scope"], ident, stamp), value,
                             created_at=stamp, expires_at=stamp + SENT_ECHO_TTL_MS)
