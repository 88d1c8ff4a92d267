"""QQBot channel plugin files: recognised caches, dropped with a reason (plugin ``qqbot``).

The design seed: QQBot gateway sessions, known users and the ref-index quote cache now
live in plugin state (``gateway-sessions``, ``known-users``, ``ref-index``), and the old
``session-*.json``, ``known-users.json`` and ``ref-index.jsonl`` "are caches and are not
migrated". They are recognised (so nothing is left unexplained), retired into the run's
folder byte-exact, and not imported. Paths: ``qqbot/sessions/session-<account>.json``,
``qqbot/data/known-users.json``, ``qqbot/data/ref-index.jsonl`` (and the same names
directly under ``qqbot/`` in older releases).
"""

from __future__ import annotations

from legacy_readers._plugin_state import NotImportedReader

PLUGIN = "qqbot"


class QQBotGatewaySessions(NotImportedReader):
    kind = "qqbot-gateway-session"
    family = "qqbot"
    description = "QQBot gateway session resume cache per account"
    patterns = ("qqbot/sessions/session-*.json", "qqbot/session-*.json")
    plugin_id = PLUGIN
    namespaces = ("gateway-sessions",)
    action = "drop"
    reason = "gateway resume cache; QQBot opens a fresh gateway session (design seed: caches, not migrated)"


class QQBotKnownUsers(NotImportedReader):
    kind = "qqbot-known-users"
    family = "qqbot"
    description = "QQBot known-user records (openid cache)"
    patterns = ("qqbot/data/known-users.json", "qqbot/known-users.json")
    plugin_id = PLUGIN
    namespaces = ("known-users",)
    action = "drop"
    reason = "cache of users seen by the bot, refilled as they write again (design seed: caches, not migrated)"


class QQBotRefIndex(NotImportedReader):
    kind = "qqbot-ref-index"
    family = "qqbot"
    description = "QQBot quote/ref-index cache (JSONL)"
    patterns = ("qqbot/data/ref-index.jsonl", "qqbot/ref-index.jsonl")
    plugin_id = PLUGIN
    namespaces = ("ref-index",)
    action = "drop"
    reason = "quote lookup cache of recent messages (design seed: caches, not migrated)"
