"""QQ Bot plugin files: kept in place for the plugin's own doctor (OpenClaw 2026.9.6 does not bundle it;
why and how: :class:`legacy_readers.plugins._state.RetainedPluginFile`).
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import NotImportedReader, RetainedPluginFile, external_plugin_reason

PLUGIN = "qqbot"
REASON = external_plugin_reason("qqbot")


class QQBotGatewaySessions(NotImportedReader):
    kind = "qqbot-gateway-session"
    family = "qqbot"
    description = "QQBot gateway session resume cache per account"
    patterns = ("qqbot/sessions/session-*.json", "qqbot/session-*.json")
    plugin_id = PLUGIN
    action = "drop"
    reason = "gateway resume cache; QQBot opens a fresh gateway session (caches are not migrated)"


class QQBotKnownUsers(NotImportedReader):
    kind = "qqbot-known-users"
    family = "qqbot"
    description = "QQBot known-user records (openid cache)"
    patterns = ("qqbot/data/known-users.json", "qqbot/known-users.json")
    plugin_id = PLUGIN
    action = "drop"
    reason = "cache of users seen by the bot, refilled as they write again (caches are not migrated)"


class QQBotRefIndex(NotImportedReader):
    kind = "qqbot-ref-index"
    family = "qqbot"
    description = "QQBot quote/ref-index cache (JSONL)"
    patterns = ("qqbot/data/ref-index.jsonl", "qqbot/ref-index.jsonl")
    plugin_id = PLUGIN
    action = "drop"
    reason = "quote lookup cache of recent messages (caches are not migrated)"
