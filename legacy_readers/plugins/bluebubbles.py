"""BlueBubbles plugin files: kept in place for the plugin's own doctor (OpenClaw 2026.9.6 does not bundle it;
why and how: :class:`legacy_readers.plugins._state.RetainedPluginFile`).
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import RetainedPluginFile, external_plugin_reason

PLUGIN = "bluebubbles"
REASON = external_plugin_reason("bluebubbles")


class BlueBubblesCatchupCursorReader(RetainedPluginFile):
    kind = "bluebubbles-catchup-cursor"
    family = "bluebubbles"
    description = "BlueBubbles catch-up cursor per account"
    patterns = ("bluebubbles/catchup/*.json",)
    plugin_id = PLUGIN
    reason = REASON


class BlueBubblesInboundDedupeReader(RetainedPluginFile):
    kind = "bluebubbles-inbound-dedupe"
    family = "bluebubbles"
    description = "BlueBubbles inbound message dedupe markers per account"
    patterns = ("bluebubbles/inbound-dedupe/*.json",)
    plugin_id = PLUGIN
    reason = REASON
