"""Memory Core files: kept in place, where OpenClaw 2026.9.6 handles them itself.

OpenClaw 2026.9.6's Memory Core doctor imports the workspace's ``memory/.dreams``
files itself: row keys bound to the absolute workspace path, host events
sequenced from archive generations with migration checkpoints and cursors,
JSON stores normalised by the plugin. It leaves the session corpus in place.
A copy of that logic would have to follow every release of the plugin; its own
doctor writes exactly its own rows. So statekit keeps these files where they
are (``retain``) for 9.6's doctor; the promotion lock is still dropped.
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import NotImportedReader, RetainedPluginFile

PLUGIN = "memory-core"
MEMORY_CORE_REASON = (
    "OpenClaw 2026.9.6's Memory Core doctor imports this file itself (keys bound to the workspace path, archive generations, checkpoints); statekit leaves it in place for it"
)


class MemoryCoreDreamsStateReader(RetainedPluginFile):
    kind = "memory-core-dreams-state"
    family = "memory-core"
    description = "memory-core dreaming/ingestion state in a workspace (memory/.dreams/*.json)"
    workspace_patterns = ("memory/.dreams/daily-ingestion.json", "memory/.dreams/session-ingestion.json", "memory/.dreams/short-term-recall.json", "memory/.dreams/phase-signals.json")
    patterns = ("workspace/memory/.dreams/daily-ingestion.json", "workspace/memory/.dreams/session-ingestion.json", "workspace/memory/.dreams/short-term-recall.json", "workspace/memory/.dreams/phase-signals.json", "workspace-*/memory/.dreams/daily-ingestion.json", "workspace-*/memory/.dreams/session-ingestion.json", "workspace-*/memory/.dreams/short-term-recall.json", "workspace-*/memory/.dreams/phase-signals.json", "agents/*/workspace/memory/.dreams/daily-ingestion.json", "agents/*/workspace/memory/.dreams/session-ingestion.json", "agents/*/workspace/memory/.dreams/short-term-recall.json", "agents/*/workspace/memory/.dreams/phase-signals.json")
    plugin_id = PLUGIN
    reason = MEMORY_CORE_REASON


class MemoryCoreEventsReader(RetainedPluginFile):
    kind = "memory-core-events"
    family = "memory-core"
    description = "memory-core host event log in a workspace (memory/.dreams/events.jsonl)"
    workspace_patterns = ("memory/.dreams/events.jsonl",)
    patterns = ("workspace/memory/.dreams/events.jsonl", "workspace-*/memory/.dreams/events.jsonl", "agents/*/workspace/memory/.dreams/events.jsonl")
    plugin_id = PLUGIN
    reason = MEMORY_CORE_REASON


class MemoryCoreSessionCorpusReader(RetainedPluginFile):
    kind = "memory-core-session-corpus"
    family = "memory-core"
    description = "memory-core session corpus file in a workspace (memory/.dreams/session-corpus/*)"
    workspace_patterns = ("memory/.dreams/session-corpus/*",)
    patterns = ("workspace/memory/.dreams/session-corpus/*", "workspace-*/memory/.dreams/session-corpus/*", "agents/*/workspace/memory/.dreams/session-corpus/*")
    plugin_id = PLUGIN
    reason = MEMORY_CORE_REASON


class MemoryCorePromotionLock(NotImportedReader):
    kind = "memory-core-promotion-lock"
    family = "memory-core"
    description = "memory-core short-term promotion lock file in a workspace"
    workspace_patterns = ("memory/.dreams/short-term-promotion.lock",)
    patterns = ("workspace/memory/.dreams/short-term-promotion.lock", "workspace-*/memory/.dreams/short-term-promotion.lock", "agents/*/workspace/memory/.dreams/short-term-promotion.lock")
    plugin_id = PLUGIN
    action = "drop"
    reason = "stale lock file of a finished promotion run; locks now live in SQLite leases"
