"""Reading a legacy SQLite *source* (a sidecar database of an older release) without touching it.

The source is copied (with its ``-wal`` / hot ``-journal``, so committed rows in
the WAL are seen) into a private temp dir and opened there; the original is
never opened by SQLite. The copy's siblings are re-read through the reader
context, so a sibling that changed since the plan is noticed like the source
itself. Queries here run on that private copy only -- statekit's own databases
are written through :mod:`statekit.legacy_readers.writer`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from statekit.db import Connection, SQLiteError, connect
from statekit.errors import SourceError
from statekit.legacy_readers.base import ReadContext, Source

COPIED_SUFFIXES = ("-wal", "-journal")  # what SQLite needs besides the database to see every committed row


@contextmanager
def open_sidecar_copy(source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Iterator[Connection]:
    """A private copy of the database (and its WAL / hot journal); siblings are read through ``ctx.reopen``."""
    ctx = ctx or ReadContext.for_source(source)
    with tempfile.TemporaryDirectory(prefix="statekit-sidecar-") as tmp:
        copy = Path(tmp) / "sidecar.sqlite"
        with copy.open("wb") as out:
            shutil.copyfileobj(handle, out)
        for suffix in COPIED_SUFFIXES:
            sibling_rel = str(PurePosixPath(source.rel).with_name(PurePosixPath(source.rel).name + suffix))
            if not ctx.path(sibling_rel).exists():
                continue
            try:
                with ctx.reopen(sibling_rel) as src, open(str(copy) + suffix, "wb") as out:
                    shutil.copyfileobj(src, out)
            except OSError as exc:
                name = PurePosixPath(sibling_rel).name
                raise SourceError(source.rel, f"cannot read {name} to see its committed rows ({exc.strerror or exc}); left in place") from None
        try:
            conn = connect(copy, untrusted=True)  # a foreign database: no view evaluated, no trigger fired, budgeted
        except SQLiteError as exc:
            raise SourceError(source.rel, f"not a readable SQLite database ({exc})") from None
        try:
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except SQLiteError as exc:
                raise SourceError(source.rel, f"not a readable SQLite database ({exc})") from None
            yield conn
        finally:
            conn.close()


def columns_of(conn: Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}


def count_rows(sidecar: Connection, table: str) -> int:
    if not columns_of(sidecar, table):
        return 0
    return int(sidecar.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])


def select_rows(conn: Connection, rel: str, table: str, wanted: Sequence[str], required: Sequence[str], order_by: str) -> list[dict[str, Any]]:
    """Rows of ``table`` with the ``wanted`` columns (a missing optional column reads NULL, ``revision`` 0); none when the table is absent."""
    have = columns_of(conn, table)
    if not have:
        return []
    missing = [name for name in required if name not in have]
    if missing:
        raise SourceError(rel, f"table {table} lacks column(s) {', '.join(missing)}")
    parts = [f'"{name}"' if name in have else f"{'0' if name == 'revision' else 'NULL'} AS \"{name}\"" for name in wanted]
    try:
        cursor = conn.execute(f'SELECT {", ".join(parts)} FROM "{table}" ORDER BY {order_by}')
        return [dict(zip(wanted, row)) for row in cursor]
    except SQLiteError as exc:
        raise SourceError(rel, f"cannot read table {table} ({exc})") from None
