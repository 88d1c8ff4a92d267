"""Feishu plugin files: kept in place for the plugin's own doctor.

OpenClaw 2026.9.6 does not bundle the Feishu plugin (it ships as its own
package) and its doctor leaves these files exactly where they are; the
installed plugin's own doctor contract migrates them into plugin state under
its own namespaces and keys. Rows statekit wrote under keys of its own would
be read by no one while the file they came from was gone, so every file the
plugin owns is ``retain`` (recognised, left byte-exact, with the reason);
pure caches and leftovers keep their ``drop``.
"""

from __future__ import annotations

from legacy_readers._plugin_state import NotImportedReader, RetainedPluginFile, external_plugin_reason

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
    order = 310
