"""iMessage plugin files: kept in place for the plugin's own doctor (OpenClaw 2026.9.6 does not bundle it;
why and how: :class:`legacy_readers.plugins._state.RetainedPluginFile`).
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import RetainedPluginFile, external_plugin_reason

PLUGIN = "imessage"
REASON = external_plugin_reason("imessage")


class IMessageCatchupCursorReader(RetainedPluginFile):
    kind = "imessage-catchup-cursor"
    family = "imessage"
    description = "iMessage catch-up cursor per account"
    patterns = ("imessage/catchup/*.json",)
    plugin_id = PLUGIN
    reason = REASON


class IMessageReplyCacheReader(RetainedPluginFile):
    kind = "imessage-reply-cache"
    family = "imessage"
    description = "iMessage reply short-id -> message GUID cache (JSONL)"
    patterns = ("imessage/reply-cache.jsonl",)
    plugin_id = PLUGIN
    reason = REASON


class IMessageSentEchoesReader(RetainedPluginFile):
    kind = "imessage-sent-echoes"
    family = "imessage"
    description = "iMessage sent-echo dedupe lines (JSONL, 12 h TTL)"
    patterns = ("imessage/sent-echoes.jsonl",)
    plugin_id = PLUGIN
    reason = REASON
