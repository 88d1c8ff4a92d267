"""Feishu plugin files: kept in place for the plugin's own doctor (OpenClaw 2026.9.6 does not bundle it;
why and how: :class:`legacy_readers.plugins._state.RetainedPluginFile`).
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import NotImportedReader, RetainedPluginFile, external_plugin_reason

PLUGIN = "feishu"
REASON = external_plugin_reason("feishu")


class FeishuDedupe(NotImportedReader):
    kind = "feishu-dedupe"
    family = "feishu"
    description = "Feishu inbound message dedupe markers"
    patterns = ("feishu/dedup/*.json",)
    plugin_id = PLUGIN
    action = "drop"
    reason = "replay-protection dedupe cache; rebuilt after the upgrade, so OpenClaw does not import it"
