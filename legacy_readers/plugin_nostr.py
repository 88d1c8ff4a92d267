"""Nostr plugin files: kept in place for the plugin's own doctor.

OpenClaw 2026.9.6 does not bundle the Nostr plugin (it ships as its own
package) and its doctor leaves these files exactly where they are; the
installed plugin's own doctor contract migrates them into plugin state under
its own namespaces and keys. Rows statekit wrote under keys of its own would
be read by no one while the file they came from was gone, so every file the
plugin owns is ``retain`` (recognised, left byte-exact, with the reason);
pure caches and leftovers keep their ``drop``.
"""

from __future__ import annotations

from legacy_readers._plugin_state import RetainedPluginFile, external_plugin_reason

PLUGIN = "nostr"
REASON = external_plugin_reason("nostr")


class NostrBusStateReader(RetainedPluginFile):
    kind = "nostr-bus-state"
    family = "nostr"
    description = "Nostr relay bus cursors per account"
    patterns = ("nostr/bus-state-*.json",)
    plugin_id = PLUGIN
    reason = REASON
    order = 300


class NostrProfileStateReader(RetainedPluginFile):
    kind = "nostr-profile-state"
    family = "nostr"
    description = "Nostr profile publication state per account"
    patterns = ("nostr/profile-state-*.json",)
    plugin_id = PLUGIN
    reason = REASON
    order = 300
