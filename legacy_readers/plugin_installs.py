"""Installed plugin index ``plugins/installs.json`` -> ``global.installed_plugin_index``.

The whole index is one singleton row ``index_key = 'current'`` (the key of the
KV entry ``installed_plugin_index/current`` OpenClaw used before the typed
table): ``version``, ``install_records_json`` (the ``installRecords`` map),
``plugins_json`` (the ``plugins`` array), ``raw_json`` (the whole document) and
``updated_at_ms`` (``generatedAtMs``, else the file's mtime). Re-import upserts
the row.

OpenClaw 2026.7's own ``installed_plugin_index`` has no ``raw_json`` column
(and NOT NULL host/compat/policy columns): writing into it is refused with a
clear schema error and the file stays in place (the newest OpenClaw doctor
refuses this legacy file too: it must be migrated by an intermediate release
before the state dir can move).
"""

from __future__ import annotations

from typing import Any, BinaryIO

from legacy_readers._jsjson import js_stringify
from legacy_readers._small_stores import file_mtime_ms, fit_row, integer, load_document, text
from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, upsert

TABLE = "installed_plugin_index"
INDEX_KEY = "current"


def index_rows(document: dict[str, Any], mtime: int) -> tuple[dict[str, Any], dict[str, Any]]:
    records = document.get("installRecords") if isinstance(document.get("installRecords"), dict) else {}
    plugins = document.get("plugins") if isinstance(document.get("plugins"), list) else []
    generated = integer(document.get("generatedAtMs"))
    updated = generated if generated is not None else mtime
    base = {
        "index_key": INDEX_KEY,
        "version": integer(document.get("version")),
        "install_records_json": js_stringify(records),
        "plugins_json": js_stringify(plugins),
        "raw_json": js_stringify(document),
        "updated_at_ms": updated,
    }
    extra = {
        "host_contract_version": text(document.get("hostContractVersion")) or "",
        "compat_registry_version": text(document.get("compatRegistryVersion")) or "",
        "migration_version": integer(document.get("migrationVersion")) or 1,
        "policy_hash": text(document.get("policyHash")) or "",
        "generated_at_ms": updated,
        "refresh_reason": text(document.get("refreshReason")),
        "diagnostics_json": js_stringify(document.get("diagnostics") if isinstance(document.get("diagnostics"), list) else []),
        "warning": text(document.get("warning")),
    }
    return base, extra


class InstalledPluginIndexReader(Reader):
    kind = "installed-plugin-index"
    family = "plugin-index"
    description = "Installed plugin index plugins/installs.json"
    patterns = ("plugins/installs.json",)
    schema_name = "installed-plugin-index"
    target_tables = ("global.installed_plugin_index",)
    action = "import"
    order = 71

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        return Inspection(record_count=1, details={"install_records": len(document.get("installRecords") or {})})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        base, extra = index_rows(document, file_mtime_ms(source, ctx.now_ms))
        conn = ctx.global_db
        upsert(conn, TABLE, fit_row(conn, TABLE, base, extra), ("index_key",))
        result = WriteResult(records=1)
        result.expect("global", TABLE, "index_key = ?", (INDEX_KEY,), 1)
        result.report.update(
            {"install_records": len(document.get("installRecords") or {}), "plugins": len(document.get("plugins") or [])}
        )
        return result
