"""``sessions restore-archive``: an archive's rows put back exactly, in one transaction."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statekit.maintenance.sessions.archive_format import load_receipt, read_session_archive, receipt_path_for, write_receipt
from statekit.maintenance.sessions.common import existing_agent_db, maintenance_lock, epoch_ms
from statekit.maintenance.sessions.rows import RESTORE_ORDER, decode_value, primary_key
from statekit.db import Connection, IntegrityError, SQLiteError, immediate, open_rw, read_only_view, table_columns, table_names
from statekit.errors import StatekitError, VerificationError
from statekit.layout import is_valid_agent_id
from statekit.states import SessionReceiptStatus


@dataclass
class SessionRestoreResult:
    archive: Path
    agent_id: str
    reason: str
    session_key: str
    rows: dict[str, int]
    dry_run: bool = False
    verified_by: str = "receipt"

    def to_json(self) -> dict[str, Any]:
        return {"archive": str(self.archive), "agent_id": self.agent_id, "reason": self.reason, "session_key": self.session_key,
                "rows": self.rows, "dry_run": self.dry_run, "verified_by": self.verified_by}


def _live_conflicts(conn: Connection, tables: dict[str, dict[str, Any]]) -> list[str]:
    conflicts = []
    present = table_names(conn)
    for table, block in tables.items():
        if table not in present:
            raise StatekitError(f"table {table} does not exist in this database; nothing was restored")
        columns = table_columns(conn, table)
        missing = [c for c in block["columns"] if c not in columns]
        if missing:
            raise StatekitError(f"table {table} lacks columns {missing}; nothing was restored")
        key = primary_key(conn, table) or list(block["columns"])
        index = [block["columns"].index(c) for c in key if c in block["columns"]]
        if len(index) != len(key):
            continue
        where = " AND ".join(f'"{c}" IS ?' for c in key)
        for row in block["rows"]:
            values = tuple(decode_value(row[i]) for i in index)
            if conn.execute(f'SELECT 1 FROM "{table}" WHERE {where} LIMIT 1', values).fetchone():
                conflicts.append(f"{table} ({', '.join(f'{c}={v}' for c, v in zip(key, values))})")
    return conflicts


def restore_session_archive(state_dir: Path, archive: Path, *, dry_run: bool = False, locked: bool = False) -> SessionRestoreResult:
    """Put an archive's rows back exactly, in one transaction; refuse if any of them is live."""
    archive = Path(os.path.abspath(archive))
    document, verified_by = read_session_archive(archive)
    agent_id = str(document.get("agent_id") or "")
    if not is_valid_agent_id(agent_id):
        raise VerificationError(f"{archive}: archive names an invalid agent id")
    tables = document.get("tables")
    if not isinstance(tables, dict) or any(t not in RESTORE_ORDER for t in tables):
        raise VerificationError(f"{archive}: archive lists unexpected tables")
    result = SessionRestoreResult(archive, agent_id, str(document.get("reason")), str(document.get("session_key")),
                           {t: len(b.get("rows") or []) for t, b in tables.items()}, dry_run, verified_by)
    path = existing_agent_db(state_dir, agent_id)
    if dry_run:
        with read_only_view(path) as conn:
            conflicts = _live_conflicts(conn, tables)
        if conflicts:
            raise StatekitError(_conflict_message(archive, conflicts))
        return result
    if not locked:
        with maintenance_lock(state_dir):
            return restore_session_archive(state_dir, archive, dry_run=False, locked=True)
    conn = open_rw(path)
    try:
        with immediate(conn):
            conflicts = _live_conflicts(conn, tables)
            if conflicts:
                raise StatekitError(_conflict_message(archive, conflicts))
            for table in RESTORE_ORDER:
                block = tables.get(table)
                if not block or not block.get("rows"):
                    continue
                columns = block["columns"]
                names = ", ".join(f'"{c}"' for c in columns)
                marks = ", ".join("?" for _ in columns)
                try:
                    conn.executemany(
                        f'INSERT INTO "{table}"({names}) VALUES ({marks})',
                        [tuple(decode_value(v) for v in row) for row in block["rows"]],
                    )
                except IntegrityError as exc:
                    raise StatekitError(f"{archive}: the database refused the {table} rows ({exc}); nothing was restored") from None
    except SQLiteError as exc:
        raise StatekitError(f"{path}: {exc}; nothing was restored") from None
    finally:
        conn.close()
    receipt_path = receipt_path_for(archive)
    receipt = load_receipt(receipt_path)
    if receipt is not None and receipt.get("archive") == archive.name:
        receipt["status"] = SessionReceiptStatus.RESTORED
        receipt["restored_at"] = epoch_ms()
        write_receipt(receipt_path, receipt)
    return result


def _conflict_message(archive: Path, conflicts: list[str]) -> str:
    shown = "; ".join(conflicts[:3]) + (f"; and {len(conflicts) - 3} more" if len(conflicts) > 3 else "")
    return f"{archive}: refusing to overwrite live rows: {shown}; nothing was restored"
