"""ACPX plugin files: kept in place for the plugin's own doctor (OpenClaw 2026.9.6 does not bundle it;
why and how: :class:`legacy_readers.plugins._state.RetainedPluginFile`).
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import RetainedPluginFile, external_plugin_reason

PLUGIN = "acpx"
REASON = external_plugin_reason("acpx")


class AcpxProcessLeasesReader(RetainedPluginFile):
    kind = "acpx-process-leases"
    family = "acpx"
    description = "ACPX process lease registry"
    patterns = ("acpx/process-leases.json",)
    plugin_id = PLUGIN
    reason = REASON
