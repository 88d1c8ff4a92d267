"""Microsoft Teams plugin files: kept in place for the plugin's own doctor (OpenClaw 2026.9.6 does not bundle it;
why and how: :class:`legacy_readers.plugins._state.RetainedPluginFile`).
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import NotImportedReader, RetainedPluginFile, external_plugin_reason

PLUGIN = "msteams"
REASON = external_plugin_reason("msteams")


class MSTeamsConversationsReader(RetainedPluginFile):
    kind = "msteams-conversations"
    family = "msteams"
    description = "Microsoft Teams conversation references for proactive messages"
    patterns = ("msteams-conversations.json",)
    plugin_id = PLUGIN
    reason = REASON


class MSTeamsPollsReader(RetainedPluginFile):
    kind = "msteams-polls"
    family = "msteams"
    description = "Microsoft Teams polls created by the agent"
    patterns = ("msteams-polls.json",)
    plugin_id = PLUGIN
    reason = REASON


class MSTeamsSsoTokensReader(RetainedPluginFile):
    kind = "msteams-sso-tokens"
    family = "msteams"
    description = "Microsoft Teams SSO tokens per user (secret)"
    patterns = ("msteams-sso-tokens.json",)
    plugin_id = PLUGIN
    reason = REASON


class MSTeamsDelegatedTokensReader(RetainedPluginFile):
    kind = "msteams-delegated-tokens"
    family = "msteams"
    description = "Microsoft Teams delegated (on-behalf-of) tokens (secret)"
    patterns = ("msteams-delegated.json",)
    plugin_id = PLUGIN
    reason = REASON


class MSTeamsFeedbackLearningsReader(RetainedPluginFile):
    kind = "msteams-feedback-learnings"
    family = "msteams"
    description = "Microsoft Teams feedback learnings next to a session index"
    patterns = ("agents/*/sessions/*.learnings.json", "sessions/*.learnings.json")
    plugin_id = PLUGIN
    reason = REASON


class MSTeamsPendingUploads(NotImportedReader):
    kind = "msteams-pending-uploads"
    family = "msteams"
    description = "Microsoft Teams pending file-upload buffers"
    patterns = ("msteams-pending-uploads.json",)
    plugin_id = PLUGIN
    action = "drop"
    reason = "short-lived upload cache (minutes); OpenClaw keeps new ones as plugin blobs and does not migrate old JSON caches"
