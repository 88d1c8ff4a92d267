"""QQ Bot plugin files: kept in place for the plugin's own doctor.

OpenClaw 2026.9.6 does not bundle the QQ Bot plugin (it ships as its own
package) and its doctor leaves these files exactly where they are; the
installed plugin's own doctor contract migrates them into plugin state under
its own namespaces and keys. Rows statekit wrote under keys of its own would
be read by no one while the file they came from was gone, so every file the
plugin owns is ``retain`` (recognised, left byte-exact, with the reason);
pure caches and leftovers keep their ``drop``.
"""

from __future__ import annotations

from legacy_readers._plugin_state import NotImportedReader, RetainedPluginFile, external_plugin_reason

PLUGIN = "qqbot"
REASON = external_plugin_reason("qqbot")


class QQBotGatewaySessions(NotImportedReader):
    kind = "qqbot-gateway-session"
    family = "qqbot"
    description = "QQBot gateway session resume cache per account"
    patterns = ("qqbot/sessions/session-*.json", "qqbot/session-*.json")
    plugin_id = PLUGIN
    action = "drop"
    reason = "gateway resume cache; QQBot opens a fresh gateway session (design seed: caches, not migrated)"
    order = 310


class QQBotKnownUsers(NotImportedReader):
    kind = "qqbot-known-users"
    family = "qqbot"
    description = "QQBot known-user records (openid cache)"
    patterns = ("qqbot/data/known-users.json", "qqbot/known-users.json")
    plugin_id = PLUGIN
    action = "drop"
    reason = "cache of users seen by the bot, refilled as they write again (design seed: caches, not migrated)"
    order = 310


class QQBotRefIndex(NotImportedReader):
    kind = "qqbot-ref-index"
    family = "qqbot"
    description = "QQBot quote/ref-index cache (JSONL)"
    patterns = ("qqbot/data/ref-index.jsonl", "qqbot/ref-index.jsonl")
    plugin_id = PLUGIN
    action = "drop"
    reason = "quote lookup cache of recent messages (design seed: caches, not migrated)"
    order = 310
