"""``tui/last-session.json``: TUI restore pointers -> ``global.tui_last_sessions``.

Shape: ``{<scopeKey>: {sessionKey, updatedAt}}`` where the scope key is
OpenClaw's hash of (session scope, agent id, connection URL). One row per
scope key, upsert by ``scope_key``; the newer ``updatedAt`` wins against a row
already in the database; a missing ``updatedAt`` takes the file's mtime.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult
from legacy_readers.devices import expect_keys, fetch_row, file_mtime_ms, load_object, ms, write_row

FAMILY = "tui"
TABLE = "tui_last_sessions"


class TuiLastSessionReader(Reader):
    kind = "tui-last-session"
    family = FAMILY
    description = "TUI last-session restore pointers (tui/last-session.json)"
    patterns = ("tui/last-session.json",)
    schema_name = "tui-last-session"
    target_tables = ("global.tui_last_sessions",)
    action = "import"
    order = 54

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        return Inspection(record_count=len(load_object(handle, source.rel, self.schema_name)))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        store: dict[str, Any] = load_object(handle, source.rel, self.schema_name)
        conn = ctx.global_db
        mtime = file_mtime_ms(source, ctx.now_ms)
        kept = 0
        for scope_key, entry in store.items():
            updated = ms(entry.get("updatedAt"))
            row = {"scope_key": scope_key, "session_key": entry["sessionKey"].strip(), "updated_at": mtime if updated is None else updated}
            existing = fetch_row(conn, TABLE, "scope_key = ?", (scope_key,))
            if existing is not None and (existing.get("updated_at") or 0) > row["updated_at"]:
                kept += 1
                continue
            write_row(conn, TABLE, row, ("scope_key",))
        result = WriteResult(records=len(store))
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer pointer(s) already in the database")
        expect_keys(result, TABLE, "scope_key", store)
        result.report.update({"scopes": len(store), "kept_newer_database_rows": kept})
        return result
