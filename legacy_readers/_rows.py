"""Row helpers of the small global-store readers, over the writer (``legacy_readers.writer``).

Moved out of ``devices.py`` (which keeps only the device readers). Both take a
:class:`~statekit.legacy_readers.writer.DatabaseWriter` (``ctx.writer.state``)
or, for readers not converted yet, a raw connection (wrapped in one).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from statekit.db import Connection
from statekit.legacy_readers.base import WriteResult
from statekit.legacy_readers.writer import DatabaseWriter, as_database_writer


def write_row(
    db: DatabaseWriter | Connection,
    table: str,
    row: Mapping[str, Any],
    key: Sequence[str],
    *,
    optional: Iterable[str] = (),
    update: bool | Sequence[str] = True,
    where: str | None = None,
) -> None:
    """``upsert`` for the canonical tables (the writer fits the row: later columns, ``optional`` columns)."""
    as_database_writer(db).upsert(table, row, key, update=update, where=where, optional=optional)


def fetch_row(db: DatabaseWriter | Connection, table: str, where: Mapping[str, Any] | str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
    """The first row matching ``where`` (an equality mapping; an SQL condition with ``params`` for older callers)."""
    writer = as_database_writer(db)
    if not isinstance(where, str):
        return writer.first_row(table, where)
    names = list(writer.columns(table))
    found = next(writer.query(f'SELECT {", ".join(f"{chr(34)}{n}{chr(34)}" for n in names)} FROM "{table}" WHERE {where} LIMIT 1', params), None)
    return None if found is None else dict(zip(names, found))


def expect_keys(result: WriteResult, table: str, column: str, keys: Iterable[str]) -> None:
    """Expect one global row per key (``column IN keys``) after commit (rows the reader kept count too)."""
    values = sorted(set(keys))
    result.expect("global", table, f"{column} IN (SELECT value FROM json_each(?))", (json.dumps(values),), len(values))
