"""Voice Call plugin files: kept in place for the plugin's own doctor (OpenClaw 2026.9.6 does not bundle it;
why and how: :class:`legacy_readers.plugins._state.RetainedPluginFile`).
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import RetainedPluginFile, external_plugin_reason

PLUGIN = "voice-call"
REASON = external_plugin_reason("voice-call")


class VoiceCallCallsReader(RetainedPluginFile):
    kind = "voice-call-calls"
    family = "voice-call"
    description = "Voice-call call records (JSONL)"
    patterns = ("voice-calls/calls.jsonl",)
    plugin_id = PLUGIN
    reason = REASON
