"""ACPX plugin files: kept in place for the plugin's own doctor.

OpenClaw 2026.9.6 does not bundle the ACPX plugin (it ships as its own
package) and its doctor leaves these files exactly where they are; the
installed plugin's own doctor contract migrates them into plugin state under
its own namespaces and keys. Rows statekit wrote under keys of its own would
be read by no one while the file they came from was gone, so every file the
plugin owns is ``retain`` (recognised, left byte-exact, with the reason);
pure caches and leftovers keep their ``drop``.
"""

from __future__ import annotations

from legacy_readers._plugin_state import RetainedPluginFile, external_plugin_reason

PLUGIN = "acpx"
REASON = external_plugin_reason("acpx")


class AcpxProcessLeasesReader(RetainedPluginFile):
    kind = "acpx-process-leases"
    family = "acpx"
    description = "ACPX process lease registry"
    patterns = ("acpx/process-leases.json",)
    plugin_id = PLUGIN
    reason = REASON
    order = 300
