"""Discord plugin files: kept in place for the plugin's own doctor (OpenClaw 2026.9.6 does not bundle it;
why and how: :class:`legacy_readers.plugins._state.RetainedPluginFile`).
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import NotImportedReader, RetainedPluginFile, external_plugin_reason

PLUGIN = "discord"
REASON = external_plugin_reason("discord")


class DiscordModelPickerPreferencesReader(RetainedPluginFile):
    kind = "discord-model-picker-preferences"
    family = "discord"
    description = "Discord /model picker recent-model preferences per scope"
    patterns = ("discord/model-picker-preferences.json",)
    plugin_id = PLUGIN
    reason = REASON


class DiscordThreadBindingsReader(RetainedPluginFile):
    kind = "discord-thread-bindings"
    family = "discord"
    description = "Discord thread bindings (thread -> subagent/ACP session)"
    patterns = ("discord/thread-bindings.json",)
    plugin_id = PLUGIN
    reason = REASON


class DiscordCommandDeployCache(NotImportedReader):
    kind = "discord-command-deploy-cache"
    family = "discord"
    description = "Discord slash-command deployment hash cache"
    patterns = ("discord/command-deploy-cache.json",)
    plugin_id = PLUGIN
    action = "drop"
    reason = "rebuildable cache of deployed slash-command hashes; the next start re-deploys and records fresh hashes"
