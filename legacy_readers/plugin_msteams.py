"""Microsoft Teams plugin files: kept in place for the plugin's own doctor.

OpenClaw 2026.9.6 does not bundle the Microsoft Teams plugin (it ships as its own
package) and its doctor leaves these files exactly where they are; the
installed plugin's own doctor contract migrates them into plugin state under
its own namespaces and keys. Rows statekit wrote under keys of its own would
be read by no one while the file they came from was gone, so every file the
plugin owns is ``retain`` (recognised, left byte-exact, with the reason);
pure caches and leftovers keep their ``drop``.
"""

from __future__ import annotations

from legacy_readers._plugin_state import NotImportedReader, RetainedPluginFile, external_plugin_reason

PLUGIN = "msteams"
REASON = external_plugin_reason("msteams")


class MSTeamsConversationsReader(RetainedPluginFile):
    kind = "msteams-conversations"
    family = "msteams"
    description = "Microsoft Teams conversation references for proactive messages"
    patterns = ("msteams-conversations.json",)
    plugin_id = PLUGIN
    reason = REASON
    order = 300


class MSTeamsPollsReader(RetainedPluginFile):
    kind = "msteams-polls"
    family = "msteams"
    description = "Microsoft Teams polls created by the agent"
    patterns = ("msteams-polls.json",)
    plugin_id = PLUGIN
    reason = REASON
    order = 300


class MSTeamsSsoTokensReader(RetainedPluginFile):
    kind = "msteams-sso-tokens"
    family = "msteams"
    description = "Microsoft Teams SSO tokens per user (secret)"
    patterns = ("msteams-sso-tokens.json",)
    plugin_id = PLUGIN
    reason = REASON
    order = 300


class MSTeamsDelegatedTokensReader(RetainedPluginFile):
    kind = "msteams-delegated-tokens"
    family = "msteams"
    description = "Microsoft Teams delegated (on-behalf-of) tokens (secret)"
    patterns = ("msteams-delegated.json",)
    plugin_id = PLUGIN
    reason = REASON
    order = 300


class MSTeamsFeedbackLearningsReader(RetainedPluginFile):
    kind = "msteams-feedback-learnings"
    family = "msteams"
    description = "Microsoft Teams feedback learnings next to a session index"
    patterns = ("agents/*/sessions/*.learnings.json", "sessions/*.learnings.json")
    plugin_id = PLUGIN
    reason = REASON
    order = 290


class MSTeamsPendingUploads(NotImportedReader):
    kind = "msteams-pending-uploads"
    family = "msteams"
    description = "Microsoft Teams pending file-upload buffers"
    patterns = ("msteams-pending-uploads.json",)
    plugin_id = PLUGIN
    action = "drop"
    reason = "short-lived upload cache (minutes); OpenClaw keeps new ones as plugin blobs and does not migrate old JSON caches"
    order = 310
