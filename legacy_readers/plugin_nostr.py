"""Nostr channel plugin files -> ``plugin_state_entries`` (plugin ``nostr``).

* ``nostr/bus-state-<account>.json`` -> ``bus-state`` (relay subscription cursors), key = account;
* ``nostr/profile-state-<account>.json`` -> ``profile-state`` (last published profile), key = account.

Values are the JSON objects as written; ``updatedAt``/``lastPublishedAt`` (ms or ISO)
become ``created_at`` when present.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

from legacy_readers._plugin_state import EntryContext, PluginStateReader, StateEntry, as_ms, file_stem, load_document
from legacy_readers.base import Source

PLUGIN = "nostr"


class _NostrReader(PluginStateReader):
    family = "nostr"
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    prefix = ""
    namespace = ""

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        account = file_stem(source.rel, self.prefix) or "default"
        stamp = next((as_ms(document.get(n)) for n in ("updatedAt", "lastPublishedAt", "savedAt") if as_ms(document.get(n)) is not None), None)
        yield StateEntry(self.namespace, account, document, created_at=stamp)


class NostrBusStateReader(_NostrReader):
    kind = "nostr-bus-state"
    description = "Nostr relay bus cursors per account"
    patterns = ("nostr/bus-state-*.json",)
    namespaces = ("bus-state",)
    prefix = "bus-state-"
    namespace = "bus-state"


class NostrProfileStateReader(_NostrReader):
    kind = "nostr-profile-state"
    description = "Nostr profile publication state per account"
    patterns = ("nostr/profile-state-*.json",)
    namespaces = ("profile-state",)
    prefix = "profile-state-"
    namespace = "profile-state"
