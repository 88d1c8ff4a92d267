"""Plugin conversation-binding approvals ``plugin-binding-approvals.json`` -> ``global.plugin_binding_approvals``.

``{"version": 1, "approvals": [{pluginRoot, pluginId, pluginName?, channel,
accountId, approvedAt}]}``. Each approval becomes one row: ``channel``
lower-cased, ``account_id`` lower-cased (``default`` when empty),
``plugin_name`` as given, ``approved_at`` from ``approvedAt`` (the file's
mtime when missing). An approval without ``pluginRoot``, ``pluginId`` or
``channel`` is skipped with a warning.

Keys: statekit's table is keyed ``(plugin_root, channel, account_id,
plugin_id)``, OpenClaw 2026.7's own table ``(plugin_root, channel,
account_id)``. Rows are therefore replaced per ``(plugin_root, channel,
account_id)`` (delete, then insert, in the source's transaction), which is
valid in both shapes and converges on re-import; within one file the later
approval for the same plugin root/channel/account wins.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from statekit.documents import load_document
from statekit.legacy_readers._small_stores import normalize_account_id
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.values import file_mtime_ms, integer, js_json, trimmed

TABLE = "plugin_binding_approvals"


def select_approvals(document: dict[str, Any], mtime: int) -> tuple[dict[tuple[str, str, str], dict[str, Any]], list[str], list[str]]:
    chosen: dict[tuple[str, str, str], dict[str, Any]] = {}
    notices: list[str] = []
    warnings: list[str] = []
    for index, approval in enumerate(document["approvals"]):
        root, plugin_id, channel = trimmed(approval.get("pluginRoot")), trimmed(approval.get("pluginId")), trimmed(approval.get("channel"))
        if not (root and plugin_id and channel):
            warnings.append(f"approvals[{index}] lacks pluginRoot, pluginId or channel; skipped")
            continue
        key = (root, channel.lower(), normalize_account_id(approval.get("accountId")))
        if key in chosen:
            notices.append(f"approvals[{index}] repeats an earlier plugin root/channel/account; the later approval wins")
        approved = integer(approval.get("approvedAt"))
        chosen[key] = {
            "plugin_root": key[0],
            "channel": key[1],
            "account_id": key[2],
            "plugin_id": plugin_id,
            "plugin_name": trimmed(approval.get("pluginName")),
            "approved_at": approved if approved is not None else mtime,
        }
    return chosen, notices, warnings


class PluginBindingApprovalsReader(Reader):
    kind = "plugin-binding-approvals"
    family = "plugin-binding-approvals"
    description = "Plugin conversation-binding approvals plugin-binding-approvals.json"
    patterns = ("plugin-binding-approvals.json",)
    schema_name = "plugin-binding-approvals"
    target_tables = ("global.plugin_binding_approvals",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        _chosen, _notices, warnings = select_approvals(document, 0)
        return Inspection(record_count=len(document["approvals"]), warnings=[f"{source.rel}: {w}" for w in warnings])

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        chosen, notices, warnings = select_approvals(document, file_mtime_ms(source, ctx.now_ms))
        db = ctx.writer.state
        for root, channel, account in chosen:
            db.delete(TABLE, {"plugin_root": root, "channel": channel, "account_id": account})
        rows = [db.fit(TABLE, row) for row in chosen.values()]
        if rows:
            columns = list(rows[0])
            db.insert_many(TABLE, columns, [[row[c] for c in columns] for row in rows])
        result = WriteResult(
            records=len(rows),
            notices=[f"{source.rel}: {n}" for n in notices],
            warnings=[f"{source.rel}: {w}" for w in warnings],
        )
        keys = js_json([[r["plugin_root"], r["channel"], r["account_id"], r["plugin_id"]] for r in rows])
        result.expect(
            "global",
            TABLE,
            "EXISTS (SELECT 1 FROM json_each(?) AS k WHERE json_extract(k.value, '$[0]') = plugin_root"
            " AND json_extract(k.value, '$[1]') = channel AND json_extract(k.value, '$[2]') = account_id"
            " AND json_extract(k.value, '$[3]') = plugin_id)",
            (keys,),
            len(rows),
        )
        result.report.update({"approvals": len(document["approvals"]), "imported": len(rows), "skipped": len(warnings)})
        return result
