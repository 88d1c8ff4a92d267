"""``logs/config-health.json``: config fingerprints -> ``global.config_health_entries``.

Shape: ``{entries: {<absolute config path>: {lastKnownGood?, lastPromotedGood?,
lastObservedSuspiciousSignature?}}}``; the two snapshots are objects (hash,
bytes, mtimeMs, ctimeMs, dev, ino, mode, nlink, uid, gid, hasMeta,
gatewayMode, observedAt) stored as ``JSON.stringify`` writes them. As
OpenClaw 2026.7.35 imports the file: one row per config path with at least
one of the three values (an empty entry or a blank path is skipped, with a
notice), ``updated_at_ms`` = the import time; a path already in the database
keeps its values and only gets the snapshots it lacks (then ``updated_at_ms``
moves to the import time). The config path is kept as recorded, even when the
state dir has moved since (OpenClaw then simply starts a fresh entry for the
new path).
"""

from __future__ import annotations

from typing import Any, BinaryIO

from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.values import js_json
from statekit.documents import load_object, unmapped_fields

FAMILY = "config-health"
TABLE = "config_health_entries"
ENTRY_FIELDS = ("lastKnownGood", "lastPromotedGood", "lastObservedSuspiciousSignature")


def _snapshot(value: Any) -> str | None:
    return js_json(value) if isinstance(value, dict) else None


def entry_row(path: str, entry: dict[str, Any], now_ms: int) -> dict[str, Any] | None:
    """The release's row for one entry; None for a blank path or an entry without any value."""
    signature = entry.get("lastObservedSuspiciousSignature")
    row = {
        "config_path": path,
        "last_known_good_json": _snapshot(entry.get("lastKnownGood")),
        "last_promoted_good_json": _snapshot(entry.get("lastPromotedGood")),
        "last_observed_suspicious_signature": signature if isinstance(signature, str) else None,
        "updated_at_ms": now_ms,
    }
    if not path.strip() or all(row[c] is None for c in ("last_known_good_json", "last_promoted_good_json", "last_observed_suspicious_signature")):
        return None
    return row


class ConfigHealthReader(Reader):
    kind = "config-health"
    family = FAMILY
    description = "Config health fingerprints (logs/config-health.json)"
    patterns = ("logs/config-health.json",)
    schema_name = "config-health"
    target_tables = ("global.config_health_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=len(document.get("entries") or {}))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        entries: dict[str, Any] = document.get("entries") or {}
        db = ctx.writer.state
        kept = skipped = 0
        imported: dict[str, Any] = {}
        for path, entry in entries.items():
            row = entry_row(path, entry, ctx.now_ms)
            if row is None:
                skipped += 1
                continue
            imported[path] = entry
            existing = db.first_row(TABLE, {"config_path": path})
            if existing is None:
                db.upsert(TABLE, row, ("config_path",))
                continue
            kept += 1
            filled = {c: existing[c] if existing[c] is not None else row[c] for c in ("last_known_good_json", "last_promoted_good_json")}
            if any(filled[c] != existing[c] for c in filled):
                db.update(TABLE, {**filled, "updated_at_ms": ctx.now_ms}, {"config_path": path})
        result = WriteResult(records=len(imported))
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} entr(y/ies) already in the database (missing snapshots filled in)")
        if skipped:
            result.notices.append(f"{source.rel}: skipped {skipped} entr(y/ies) without a path or any value")
        extra = unmapped_fields(entries.values(), ENTRY_FIELDS) + sorted(f"$.{k}" for k in document if k != "entries")
        if extra:
            result.notices.append(f"{source.rel}: field(s) without a column kept only in the retired copy: {', '.join(extra)}")
        db.expect_rows(TABLE, {"config_path": sorted(imported)}, len(imported))  # the kept rows too
        result.report.update({"entries": len(entries), "kept_database_rows": kept, "skipped": skipped, "fields_without_column": extra})
        return result
