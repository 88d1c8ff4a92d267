"""Nostr plugin files: kept in place for the plugin's own doctor (OpenClaw 2026.9.6 does not bundle it;
why and how: :class:`legacy_readers.plugins._state.RetainedPluginFile`).
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import RetainedPluginFile, external_plugin_reason

PLUGIN = "nostr"
REASON = external_plugin_reason("nostr")


class NostrBusStateReader(RetainedPluginFile):
    kind = "nostr-bus-state"
    family = "nostr"
    description = "Nostr relay bus cursors per account"
    patterns = ("nostr/bus-state-*.json",)
    plugin_id = PLUGIN
    reason = REASON


class NostrProfileStateReader(RetainedPluginFile):
    kind = "nostr-profile-state"
    family = "nostr"
    description = "Nostr profile publication state per account"
    patterns = ("nostr/profile-state-*.json",)
    plugin_id = PLUGIN
    reason = REASON
