"""Idempotency keys and ``migration_runs`` / ``migration_sources`` records."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statekit.db import Connection, Row, immediate, is_sqlite_file, read_only_view, table_names
from statekit.layout import global_db_path
from statekit.states import ReceiptStatus, RunStatus

MIGRATION_KIND = "legacy-state"


def source_key(
    kind: str, rel: str, target_tables: Sequence[str], sha256: str, size: int, mtime_ms: int, record_count: int | None
) -> str:
    """``legacy-state:`` + sha256 of the NUL-joined identity fields. Same file, same key."""
    fields = [kind, rel, ",".join(target_tables), sha256, str(size), str(mtime_ms), "" if record_count is None else str(record_count)]
    return "legacy-state:" + hashlib.sha256("\0".join(fields).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Receipt:
    source_key: str
    source_path: str
    status: str  # a ReceiptStatus value (read back as stored)
    last_run_id: str
    removed_source: bool
    source_sha256: str | None
    report: dict[str, Any]
    imported_at: int = 0


def _row_to_receipt(row: Row | tuple) -> Receipt:
    key, path, status, run_id, removed, sha, report, *rest = row
    try:
        parsed = json.loads(report) if report else {}
    except (ValueError, RecursionError):
        parsed = {}
    imported_at = rest[0] if rest and isinstance(rest[0], int) else 0
    return Receipt(key, path, status, run_id, bool(removed), sha, parsed if isinstance(parsed, dict) else {}, imported_at)


_SELECT = ("SELECT source_key, source_path, status, last_run_id, removed_source, source_sha256, report_json, imported_at"
           " FROM migration_sources")


def load_receipts(conn: Connection) -> dict[str, Receipt]:
    if "migration_sources" not in table_names(conn):
        return {}
    return {r.source_key: r for r in map(_row_to_receipt, conn.execute(_SELECT + " WHERE migration_kind = ?", (MIGRATION_KIND,)))}


def load_receipts_readonly(state_dir: Path) -> dict[str, Receipt]:
    """Receipts for the plan, read without writing a byte (no WAL/SHM files created)."""
    path = global_db_path(state_dir)
    if not path.is_file() or not is_sqlite_file(path):
        return {}
    with read_only_view(path) as conn:
        return load_receipts(conn)


def earlier_version(receipts: Mapping[str, Receipt], rel: str, sha256: str | None) -> Receipt | None:
    """The latest ``completed`` receipt of ``rel`` for another version of the file (other bytes), or None.

    A legacy file whose path an earlier run imported, now holding different bytes: it changed after
    its import (its retirement was refused), or it *came back* after it was retired (``removed_source``):
    a process that still writes the old path. Its rows are merged, never replaced (docs/reliability.md).
    """
    found = [r for r in receipts.values()
             if r.source_path == rel and r.status == ReceiptStatus.COMPLETED and r.source_sha256 != sha256]
    return max(found, key=lambda r: (r.imported_at, r.removed_source)) if found else None


def came_back_line(rel: str, earlier: Receipt) -> str:
    """The one line that names a legacy file written again after statekit imported it (a stale writer)."""
    what = "came back after run {} migrated it (something still writes the old file)" if earlier.removed_source else "changed after run {} imported it"
    return (f"{rel}: {what.format(earlier.last_run_id)}; imported again: history (transcripts, run and audit logs,"
            " session entries) is merged with what was imported, never replaced")


_WRITE_RECEIPT = (
    "INSERT INTO migration_sources(source_key, migration_kind, source_path, target_table, source_sha256,"
    " source_size_bytes, source_record_count, last_run_id, status, imported_at, removed_source, report_json)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT(source_key) DO UPDATE SET last_run_id = excluded.last_run_id, status = excluded.status,"
    " imported_at = excluded.imported_at, removed_source = excluded.removed_source, report_json = excluded.report_json"
)


RECEIPT_SHA256, RECEIPT_REPORT = 4, 11  # positions in a receipt_row


def receipt_row(
    *,
    key: str,
    rel: str,
    target_tables: Sequence[str],
    sha256: str,
    size: int,
    record_count: int | None,
    run_id: str,
    status: ReceiptStatus,
    now_ms: int,
    removed_source: bool,
    report: dict[str, Any],
) -> tuple[Any, ...]:
    """One ``migration_sources`` row, as :func:`write_receipts` inserts or updates it (a batch of small sources writes its receipts together)."""
    return (
        key,
        MIGRATION_KIND,
        rel,
        ",".join(target_tables) or "-",
        sha256,
        size,
        record_count,
        run_id,
        status,
        now_ms,
        int(removed_source),
        json.dumps(report, ensure_ascii=False, sort_keys=True),
    )


def write_receipts(conn: Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Several :func:`receipt_row` values, in order (one prepared statement)."""
    if rows:
        conn.executemany(_WRITE_RECEIPT, rows)


_MARK_REMOVED = "UPDATE migration_sources SET removed_source = 1, report_json = ? WHERE source_key = ?"


def mark_removed(conn: Connection, key: str, report: dict[str, Any]) -> None:
    conn.execute(_MARK_REMOVED, (json.dumps(report, ensure_ascii=False, sort_keys=True), key))


def mark_removed_many(conn: Connection, retired: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """:func:`mark_removed` of each ``(key, report)``, in order (one prepared statement)."""
    conn.executemany(_MARK_REMOVED, [(json.dumps(report, ensure_ascii=False, sort_keys=True), key) for key, report in retired])


def close_interrupted_runs(conn: Connection, now_ms: int) -> list[str]:
    """statekit runs still ``running`` while we hold the state-dir lock were killed: mark them ``failed``.

    Only rows statekit wrote (report kind ``legacy-state`` or ``recover``); anything else is left as it is.
    """
    rows = conn.execute(
        "SELECT id FROM migration_runs WHERE status = ? AND json_valid(report_json)"
        " AND json_extract(report_json, '$.kind') IN ('legacy-state', 'recover') ORDER BY started_at, id",
        (RunStatus.RUNNING,),
    ).fetchall()
    ids = [row[0] for row in rows]
    for run_id in ids:
        conn.execute(
            "UPDATE migration_runs SET finished_at = ?, status = ?,"
            " report_json = json_set(report_json, '$.status', ?, '$.interrupted', json('true'))"
            " WHERE id = ? AND status = ?",
            (now_ms, RunStatus.FAILED, RunStatus.FAILED, run_id, RunStatus.RUNNING),
        )
    return ids


def open_run(conn: Connection, run_id: str, now_ms: int, report: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO migration_runs(id, started_at, finished_at, status, report_json) VALUES (?, ?, NULL, ?, ?)",
        (run_id, now_ms, RunStatus.RUNNING, json.dumps(report, ensure_ascii=False, sort_keys=True)),
    )


# The run report's JSON text (as ``json.dumps(report, ensure_ascii=False, sort_keys=True)`` makes it), in UTF-8 pieces:
# each call makes the pieces again, from the first.
ReportPieces = Callable[[], Iterable[bytes]]


def close_run(conn: Connection, run_id: str, now_ms: int, status: RunStatus, report: ReportPieces) -> None:
    """The run's row closed with its report (:func:`_store_report_pieces`), in the caller's transaction or one of its own."""
    if conn.in_transaction:
        _store_report_pieces(conn, run_id, now_ms, status, report)
        return
    with immediate(conn):
        _store_report_pieces(conn, run_id, now_ms, status, report)


def _store_report_pieces(conn: Connection, run_id: str, now_ms: int, status: RunStatus, pieces: ReportPieces) -> None:
    """The run's row closed with its report written piece by piece (SQLite's incremental blob I/O, in the caller's
    transaction): the row first gets a TEXT value of the report's length, then the pieces overwrite it in place.

    A bound report is copied by SQLite beside the caller's whole text; here SQLite alone makes the value and its
    record once, and Python holds one piece at a time (the pieces are made twice: once to count their bytes)."""
    size = sum(map(len, pieces()))
    conn.execute("UPDATE migration_runs SET finished_at = ?, status = ?, report_json = CAST(zeroblob(?) AS TEXT) WHERE id = ?",
                 (now_ms, status, size, run_id))
    found = conn.execute("SELECT rowid FROM migration_runs WHERE id = ?", (run_id,)).fetchone()
    if found is None or not size:
        return
    blob = conn.blob_open("main", "migration_runs", "report_json", found[0], True)
    written = 0
    try:
        for piece in pieces():
            blob.write(piece)  # past the counted size: ValueError, and the caller's transaction rolls back
            written += len(piece)
    finally:
        blob.close()
    if written != size:  # fewer bytes the second time: the value would keep NUL bytes at its end
        raise RuntimeError(f"run report for {run_id}: {written} bytes written into a value of {size}")
