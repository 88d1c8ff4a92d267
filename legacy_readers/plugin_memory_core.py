"""memory-core "dreaming" files in agent workspaces -> plugin state (plugin ``memory-core``).

memory-core kept its dreaming/ingestion state in each agent workspace under
``memory/.dreams/``. Discovery does not walk workspaces (user content); it probes these
paths inside every workspace (``workspace/``, ``workspace-<agent>/``,
``agents/<id>/workspace/``). Each row is keyed by the workspace (its state-dir relative
directory, e.g. ``workspace-work``):

* ``daily-ingestion.json`` -> ``daily-ingestion``; ``session-ingestion.json`` ->
  ``session-ingestion``; ``short-term-recall.json`` -> ``short-term-recall``;
  ``phase-signals.json`` -> ``phase-signals`` (one row per workspace, the JSON as written);
* ``events.jsonl`` -> ``host-events``: one row per line, key
  ``<workspace>:legacy:<line>:<sha256(line)[:16]>`` (streamed);
* ``session-corpus/<file>`` -> blob ``session-corpus``, key ``<workspace>:<file>`` (bytes as is);
* ``short-term-promotion.lock``: a stale lock, dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import BinaryIO

from legacy_readers._plugin_state import (
    BlobEntry,
    EntryContext,
    NotImportedReader,
    PluginStateReader,
    StateEntry,
    as_ms,
    in_workspaces,
    iter_jsonl,
    load_document,
    workspace_key,
)
from legacy_readers.base import Source

PLUGIN = "memory-core"
DREAMS = "memory/.dreams/"
DOCUMENTS = {
    "daily-ingestion.json": "daily-ingestion",
    "session-ingestion.json": "session-ingestion",
    "short-term-recall.json": "short-term-recall",
    "phase-signals.json": "phase-signals",
}


def _stamp(value: dict) -> int | None:
    for name in ("updatedAt", "ts", "timestamp", "at", "createdAt"):
        stamp = as_ms(value.get(name))
        if stamp is not None:
            return stamp
    return None


class MemoryCoreDreamsStateReader(PluginStateReader):
    kind = "memory-core-dreams-state"
    family = "memory-core"
    description = "memory-core dreaming/ingestion state in a workspace (memory/.dreams/*.json)"
    workspace_patterns = tuple(DREAMS + name for name in DOCUMENTS)
    patterns = in_workspaces(*workspace_patterns)
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    namespaces = tuple(DOCUMENTS.values())

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        namespace = DOCUMENTS[PurePosixPath(source.rel).name]
        yield StateEntry(namespace, workspace_key(source.rel), document, created_at=_stamp(document))


class MemoryCoreEventsReader(PluginStateReader):
    kind = "memory-core-events"
    family = "memory-core"
    description = "memory-core host event log in a workspace (memory/.dreams/events.jsonl)"
    workspace_patterns = (DREAMS + "events.jsonl",)
    patterns = in_workspaces(*workspace_patterns)
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    namespaces = ("host-events",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        workspace = workspace_key(source.rel)
        for number, line, value in iter_jsonl(source, handle, self.schema_name, ectx):
            key = f"{workspace}:legacy:{number}:{hashlib.sha256(line).hexdigest()[:16]}"
            yield StateEntry("host-events", key, value, created_at=_stamp(value))


class MemoryCoreSessionCorpusReader(PluginStateReader):
    kind = "memory-core-session-corpus"
    family = "memory-core"
    description = "memory-core session corpus file in a workspace (memory/.dreams/session-corpus/*)"
    workspace_patterns = (DREAMS + "session-corpus/*",)
    patterns = in_workspaces(*workspace_patterns)
    target_tables = ("global.plugin_blob_entries",)
    plugin_id = PLUGIN
    namespaces = ("session-corpus",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[BlobEntry]:
        data = handle.read()
        name = PurePosixPath(source.rel).name
        metadata = {"workspace": workspace_key(source.rel), "name": name, "sizeBytes": len(data)}
        yield BlobEntry("session-corpus", f"{workspace_key(source.rel)}:{name}", data, metadata)


class MemoryCorePromotionLock(NotImportedReader):
    kind = "memory-core-promotion-lock"
    family = "memory-core"
    description = "memory-core short-term promotion lock file in a workspace"
    workspace_patterns = (DREAMS + "short-term-promotion.lock",)
    patterns = in_workspaces(*workspace_patterns)
    plugin_id = PLUGIN
    action = "drop"
    reason = "stale lock file of a finished promotion run; locks now live in SQLite leases"
