"""Memory Wiki plugin metadata -> ``plugin_state_entries`` (plugin ``memory-wiki``).

The default vault is ``wiki/<vault>/`` in the state dir (``wiki/main``); only its
``.openclaw-wiki/`` plugin metadata is state. The wiki markdown is the user's content and
stays where it is.

* ``.openclaw-wiki/log.jsonl`` -> ``activity-log``: one row per line, key
  ``<vault>:legacy:<line>:<sha256(line)[:16]>`` (streamed; torn last line reported);
* ``.openclaw-wiki/source-sync.json`` -> ``source-sync``: one row per source
  (``sources`` map; key ``<vault>:<source>``), or one row for the vault when the file
  has no ``sources`` map;
* ``.openclaw-wiki/import-runs/<run>.json`` -> ``import-runs``, key ``<vault>:<run>``;
* dropped: ``cache/agent-digest.json`` and ``cache/claims.jsonl`` (compiled caches that
  are rebuilt), ``state.json`` and ``locks/`` (retired plugin metadata OpenClaw removes).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import BinaryIO

from legacy_readers._plugin_state import (
    EntryContext,
    NotImportedReader,
    PluginStateReader,
    StateEntry,
    as_ms,
    file_stem,
    iter_jsonl,
    load_document,
)
from legacy_readers.base import Source

PLUGIN = "memory-wiki"
META = "wiki/*/.openclaw-wiki/"


def vault_of(rel: str) -> str:
    parts = PurePosixPath(rel).parts
    return parts[1] if len(parts) > 1 else "main"


def _stamp(value: dict) -> int | None:
    for name in ("ts", "timestamp", "at", "updatedAt", "createdAt", "startedAt"):
        stamp = as_ms(value.get(name))
        if stamp is not None:
            return stamp
    return None


class MemoryWikiActivityLogReader(PluginStateReader):
    kind = "memory-wiki-activity-log"
    family = "memory-wiki"
    description = "Memory Wiki activity log (JSONL)"
    patterns = (META + "log.jsonl",)
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    namespaces = ("activity-log",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        vault = vault_of(source.rel)
        for number, line, value in iter_jsonl(source, handle, self.schema_name, ectx):
            digest = hashlib.sha256(line).hexdigest()[:16]
            yield StateEntry("activity-log", f"{vault}:legacy:{number}:{digest}", value, created_at=_stamp(value))


class MemoryWikiSourceSyncReader(PluginStateReader):
    kind = "memory-wiki-source-sync"
    family = "memory-wiki"
    description = "Memory Wiki imported-source sync ledger"
    patterns = (META + "source-sync.json",)
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    namespaces = ("source-sync",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        vault = vault_of(source.rel)
        sources = document.get("sources")
        if isinstance(sources, dict) and sources:
            for key, value in sources.items():
                yield StateEntry("source-sync", f"{vault}:{key}", value, created_at=_stamp(value) if isinstance(value, dict) else None)
        else:
            yield StateEntry("source-sync", vault, document, created_at=_stamp(document))


class MemoryWikiImportRunReader(PluginStateReader):
    kind = "memory-wiki-import-run"
    family = "memory-wiki"
    description = "Memory Wiki ChatGPT import run record"
    patterns = (META + "import-runs/*.json",)
    schema_name = "plugin-json-object"
    plugin_id = PLUGIN
    namespaces = ("import-runs",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        yield StateEntry("import-runs", f"{vault_of(source.rel)}:{file_stem(source.rel)}", document, created_at=_stamp(document))


class MemoryWikiCompiledCache(NotImportedReader):
    kind = "memory-wiki-cache"
    family = "memory-wiki"
    description = "Memory Wiki compiled digest/claims cache"
    patterns = (META + "cache/agent-digest.json", META + "cache/claims.jsonl")
    plugin_id = PLUGIN
    action = "drop"
    reason = "compiled cache, rebuilt from the vault; OpenClaw deletes it without importing"


class MemoryWikiRetiredMetadata(NotImportedReader):
    kind = "memory-wiki-retired-metadata"
    family = "memory-wiki"
    description = "Memory Wiki retired state.json and locks/"
    patterns = (META + "state.json", META + "locks/**")
    plugin_id = PLUGIN
    action = "drop"
    reason = "retired plugin metadata (no longer written or read); OpenClaw's migration removes it"
