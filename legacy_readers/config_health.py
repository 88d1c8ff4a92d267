"""``logs/config-health.json``: config fingerprints -> ``global.config_health_entries``.

Shape: ``{entries: {<absolute config path>: {lastKnownGood?, lastPromotedGood?,
lastObservedSuspiciousSignature?}}}``; the two snapshots are objects (hash,
bytes, mtimeMs, ctimeMs, dev, ino, mode, nlink, uid, gid, hasMeta,
gatewayMode, observedAt) stored as compact JSON. One row per config path,
upsert by ``config_path``; ``updated_at_ms`` is the file's mtime and a
database row with a newer ``updated_at_ms`` is kept. The config path is kept
as recorded, even when the state dir has moved since (OpenClaw then simply
starts a fresh entry for the new path).
"""

from __future__ import annotations

from typing import Any, BinaryIO

from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult
from legacy_readers.devices import expect_keys, fetch_row, file_mtime_ms, json_col, load_object, unmapped_fields, write_row

FAMILY = "config-health"
TABLE = "config_health_entries"
ENTRY_FIELDS = ("lastKnownGood", "lastPromotedGood", "lastObservedSuspiciousSignature")


class ConfigHealthReader(Reader):
    kind = "config-health"
    family = FAMILY
    description = "Config health fingerprints (logs/config-health.json)"
    patterns = ("logs/config-health.json",)
    schema_name = "config-health"
    target_tables = ("global.config_health_entries",)
    action = "import"
    order = 53

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=len(document.get("entries") or {}))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        entries: dict[str, Any] = document.get("entries") or {}
        conn = ctx.global_db
        mtime = file_mtime_ms(source, ctx.now_ms)
        kept = 0
        for path, entry in entries.items():
            signature = entry.get("lastObservedSuspiciousSignature")
            row = {
                "config_path": path,
                "last_known_good_json": json_col(entry.get("lastKnownGood")),
                "last_promoted_good_json": json_col(entry.get("lastPromotedGood")),
                "last_observed_suspicious_signature": signature if isinstance(signature, str) else None,
                "updated_at_ms": mtime,
            }
            existing = fetch_row(conn, TABLE, "config_path = ?", (path,))
            if existing is not None and (existing.get("updated_at_ms") or 0) > mtime:
                kept += 1
            else:
                write_row(conn, TABLE, row, ("config_path",))
        result = WriteResult(records=len(entries))
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer entr(y/ies) already in the database")
        extra = unmapped_fields(entries.values(), ENTRY_FIELDS) + sorted(f"$.{k}" for k in document if k != "entries")
        if extra:
            result.notices.append(f"{source.rel}: field(s) without a column kept only in the retired copy: {', '.join(extra)}")
        expect_keys(result, TABLE, "config_path", entries)
        result.report.update({"entries": len(entries), "kept_newer_database_rows": kept, "fields_without_column": extra})
        return result
