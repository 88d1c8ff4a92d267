"""Rows of one session id, table by table: which tables, in which order, and their JSON-safe encoding."""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from typing import Any

from statekit.db import Connection, table_columns, table_names
from statekit.errors import StatekitError


# Rows of one session id, in restore (FK) order.
SESSION_TABLES = (
    "sessions",
    "transcript_events",
    "transcript_event_identities",
    "transcript_snapshots",
    "trajectory_runtime_events",
    "session_conversations",
)


# The deleted key's own rows (delete only), restored last.
ENTRY_TABLES = ("session_entries", "session_routes")


RESTORE_ORDER = SESSION_TABLES + ENTRY_TABLES


# Children deleted before the sessions row (identities before their events).
DELETE_ORDER = (
    "transcript_event_identities",
    "transcript_events",
    "transcript_snapshots",
    "trajectory_runtime_events",
    "session_conversations",
    "session_entries",
    "session_routes",
)


def encode_value(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$base64": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def decode_value(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$base64"}:
        return base64.b64decode(value["$base64"])
    return value


def select_rows(conn: Connection, table: str, where: str, params: Sequence[Any]) -> dict[str, Any]:
    columns = table_columns(conn, table)
    names = ", ".join(f'"{c}"' for c in columns)
    order = "ORDER BY rowid" if _has_rowid(conn, table) else ""
    rows = [[encode_value(v) for v in row] for row in conn.execute(f'SELECT {names} FROM "{table}" WHERE {where} {order}', tuple(params))]
    return {"columns": columns, "rows": rows}


def _has_rowid(conn: Connection, table: str) -> bool:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    return not (row and row[0] and re.search(r"WITHOUT\s+ROWID", row[0], re.I))


def session_rows(conn: Connection, session_id: str) -> dict[str, dict[str, Any]]:
    """Every row that belongs to one session id, per table (tables that do not exist are skipped)."""
    tables = table_names(conn)
    found: dict[str, dict[str, Any]] = {}
    for table in SESSION_TABLES:
        if table in tables and "session_id" in table_columns(conn, table):
            found[table] = select_rows(conn, table, "session_id = ?", (session_id,))
    return found


def merge_rows(into: dict[str, dict[str, Any]], more: dict[str, dict[str, Any]]) -> None:
    for table, block in more.items():
        if not block["rows"]:
            continue
        current = into.get(table)
        if current is None:
            into[table] = {"columns": list(block["columns"]), "rows": list(block["rows"])}
        elif current["columns"] == block["columns"]:
            current["rows"].extend(block["rows"])
        else:  # pragma: no cover - one connection, one shape
            raise StatekitError(f"table {table} changed shape while archiving")


def row_counts(tables: dict[str, dict[str, Any]]) -> dict[str, int]:
    return {table: len(block["rows"]) for table, block in tables.items() if block["rows"]}


def primary_key(conn: Connection, table: str) -> list[str]:
    info = sorted((row[5], row[1]) for row in conn.execute(f'PRAGMA table_info("{table}")') if row[5])
    return [name for _, name in info]
