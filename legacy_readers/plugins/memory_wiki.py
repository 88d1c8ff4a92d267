"""Memory Wiki files: kept in place, where OpenClaw 2026.9.6 handles them itself.

OpenClaw 2026.9.6 keeps a Memory Wiki vault's ``.openclaw-wiki`` files in
place (activity log, source sync, import runs, vault state: seen on its own
migration of the every-family tree) and only removes the rebuildable compiled
cache. statekit does the same: the vault files are ``retain``, the compiled
cache ``drop``.
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import NotImportedReader, RetainedPluginFile

PLUGIN = "memory-wiki"
MEMORY_WIKI_REASON = (
    "OpenClaw 2026.9.6's Memory Wiki keeps this vault file in place (its doctor only removes the rebuildable compiled cache); left in place"
)


class MemoryWikiActivityLogReader(RetainedPluginFile):
    kind = "memory-wiki-activity-log"
    family = "memory-wiki"
    description = "Memory Wiki activity log (JSONL)"
    patterns = ("wiki/*/.openclaw-wiki/log.jsonl",)
    plugin_id = PLUGIN
    reason = MEMORY_WIKI_REASON


class MemoryWikiSourceSyncReader(RetainedPluginFile):
    kind = "memory-wiki-source-sync"
    family = "memory-wiki"
    description = "Memory Wiki imported-source sync ledger"
    patterns = ("wiki/*/.openclaw-wiki/source-sync.json",)
    plugin_id = PLUGIN
    reason = MEMORY_WIKI_REASON


class MemoryWikiImportRunReader(RetainedPluginFile):
    kind = "memory-wiki-import-run"
    family = "memory-wiki"
    description = "Memory Wiki ChatGPT import run record"
    patterns = ("wiki/*/.openclaw-wiki/import-runs/*.json",)
    plugin_id = PLUGIN
    reason = MEMORY_WIKI_REASON


class MemoryWikiCompiledCache(NotImportedReader):
    kind = "memory-wiki-cache"
    family = "memory-wiki"
    description = "Memory Wiki compiled digest/claims cache"
    patterns = ("wiki/*/.openclaw-wiki/cache/agent-digest.json", "wiki/*/.openclaw-wiki/cache/claims.jsonl")
    plugin_id = PLUGIN
    action = "drop"
    reason = "compiled cache, rebuilt from the vault; OpenClaw deletes it without importing"


class MemoryWikiRetiredMetadata(RetainedPluginFile):
    kind = "memory-wiki-retired-metadata"
    family = "memory-wiki"
    description = "Memory Wiki retired state.json and locks/"
    patterns = ("wiki/*/.openclaw-wiki/state.json", "wiki/*/.openclaw-wiki/locks/**")
    plugin_id = PLUGIN
    reason = MEMORY_WIKI_REASON
