"""Row writes into the canonical tables, shared by the small global-store readers.

Moved out of ``devices.py`` (which keeps only the device readers); the
writer the apply loop owns replaces these once every reader goes through it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from statekit.db import table_columns
from statekit.errors import SchemaError
from statekit.legacy_readers._later_columns import fit_later_columns
from statekit.legacy_readers.base import WriteResult, upsert


def write_row(
    conn: Any,
    table: str,
    row: Mapping[str, Any],
    key: Sequence[str],
    *,
    optional: Iterable[str] = (),
    update: bool | Sequence[str] = True,
    where: str | None = None,
) -> None:
    """``upsert`` for the canonical tables.

    A column OpenClaw adds to this version-1 table later (``_later_columns``)
    is added when the row has a value for it and left out when it has none.
    A column listed in ``optional`` whose value is None is left out when the
    existing table does not have it; with a value it is kept, so ``upsert``
    refuses the table with a clear SchemaError instead of losing data.
    """
    have = set(table_columns(conn, table))
    if not have:
        raise SchemaError(f"table {table} does not exist")
    row = fit_later_columns(conn, table, row)
    have = set(table_columns(conn, table))
    skip = {c for c in optional if c not in have and row.get(c) is None}
    kept = {k: v for k, v in row.items() if k not in skip}
    names: bool | Sequence[str] = update
    if not isinstance(update, bool):
        names = [c for c in update if c in kept]
    upsert(conn, table, kept, key, update=names, where=where)


def fetch_row(conn: Any, table: str, where: str, params: Sequence[Any]) -> dict[str, Any] | None:
    cursor = conn.execute(f'SELECT * FROM "{table}" WHERE {where}', tuple(params))
    row = cursor.fetchone()
    if row is None:
        return None
    return {d[0]: row[i] for i, d in enumerate(cursor.description)}


def expect_keys(result: WriteResult, table: str, column: str, keys: Iterable[str]) -> None:
    """Expect one global row per key (``column IN keys``) after commit."""
    values = sorted(set(keys))
    result.expect("global", table, f"{column} IN (SELECT value FROM json_each(?))", (json.dumps(values),), len(values))
