"""Feishu channel plugin files: message dedupe markers, dropped with a reason (plugin ``feishu``).

``feishu/dedup/*.json`` held replay-protection dedupe markers. OpenClaw now keeps them
in the core claimable dedupe (``feishu.dedup.*`` namespaces) and, because that replay
cache rebuilds itself after the upgrade, does not import the old files (second design
seed). They are recognised, retired byte-exact into the run's folder, and not imported.
"""

from __future__ import annotations

from legacy_readers._plugin_state import NotImportedReader


class FeishuDedupe(NotImportedReader):
    kind = "feishu-dedupe"
    family = "feishu"
    description = "Feishu inbound message dedupe markers"
    patterns = ("feishu/dedup/*.json",)
    plugin_id = "feishu"
    namespaces = ("dedup",)
    action = "drop"
    reason = "replay-protection dedupe cache; rebuilt after the upgrade, so OpenClaw does not import it"
