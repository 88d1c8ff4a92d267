"""``sessions delete|reset``: the plan and the one transaction that archives and deletes the unreferenced family."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from statekit.maintenance.sessions.archive_format import (
    build_document, load_receipt, settle_pending, write_archive, write_receipt,
)
from statekit.maintenance.sessions.common import (
    REASONS, SessionChange, agent_for_key, existing_agent_db, maintenance_lock, epoch_ms,
)
from statekit.maintenance.sessions.family import referenced_ids
from statekit.maintenance.sessions.rows import (
    DELETE_ORDER, ENTRY_TABLES, SESSION_TABLES, merge_rows, row_counts, select_rows, session_rows,
)
from statekit.legacy_readers.session_family import family_of
from statekit.db import Connection, SQLiteError, immediate, open_rw, read_only_view, table_columns, table_names
from statekit.errors import StatekitError, UsageError
from statekit.seams import checkpoint
from statekit.schema import SCHEMA_VERSION
from statekit.states import SessionAction, SessionReceiptStatus
from statekit.values import js_json


# Fields that belong to the old session and are dropped from the entry on reset.
RESET_DROPPED_FIELDS = (
    "compactionCheckpoints",
    "usageFamilySessionIds",
    "usageFamilyKey",
    "compactionCount",
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "totalTokensFresh",
    "estimatedCostUsd",
    "cacheRead",
    "cacheWrite",
    "contextTokens",
    "memoryFlushAt",
    "memoryFlushCompactionCount",
    "systemSent",
    "abortedLastRun",
    "sessionStartedAt",
    "startedAt",
    "endedAt",
    "runtimeMs",
    "status",
    "lastInteractionAt",
    "lastActivityAt",
)


def _check_shape(conn: Connection, path: Path) -> None:
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StatekitError(f"{path}: schema version {version} is newer than statekit supports ({SCHEMA_VERSION}); left untouched")
    tables = table_names(conn)
    missing = [t for t in ("sessions", "session_entries") if t not in tables]
    if missing:
        raise StatekitError(f"{path}: no {', '.join(missing)} table; this agent database holds no migrated sessions")


def _compute(conn: Connection, action: str, agent_id: str, key: str) -> tuple[SessionChange, dict[str, Any], dict[str, dict[str, Any]]]:
    """Decide the change from the current rows (read-only). Returns (change, entry, entry rows)."""
    row = conn.execute("SELECT session_id, entry_json FROM session_entries WHERE session_key = ?", (key,)).fetchone()
    if row is None:
        raise StatekitError(f"no session entry {key!r} in agent {agent_id!r} (see `statekit sessions list --agent {agent_id}`)")
    session_id, text = row
    try:
        entry = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        entry = None
    if not isinstance(entry, dict):
        raise StatekitError(f"session entry {key!r} in agent {agent_id!r}: entry_json is not a JSON object; left untouched")
    change = SessionChange(action, agent_id, key, session_id, family_of(entry, session_id))
    tables = table_names(conn)
    entry_rows: dict[str, dict[str, Any]] = {}
    if action == SessionAction.DELETE:
        for table in ENTRY_TABLES:
            if table in tables:
                entry_rows[table] = select_rows(conn, table, "session_key = ?", (key,))
    refs = referenced_ids(conn, exclude_key=key)
    for sid in change.family:
        if sid in refs:
            change.kept.append(sid)
        elif conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone() is None and not _any_rows(conn, sid, tables):
            change.absent.append(sid)
        else:
            change.archived.append(sid)
    return change, entry, entry_rows


def _any_rows(conn: Connection, session_id: str, tables: set[str]) -> bool:
    for table in SESSION_TABLES[1:]:
        if table in tables and conn.execute(f'SELECT 1 FROM "{table}" WHERE session_id = ? LIMIT 1', (session_id,)).fetchone():
            return True
    return False


def _fresh_entry(entry: dict[str, Any], new_id: str, now_ms: int) -> dict[str, Any]:
    fresh = {k: v for k, v in entry.items() if k not in RESET_DROPPED_FIELDS}
    fresh["sessionId"] = new_id
    fresh["updatedAt"] = now_ms
    fresh["sessionStartedAt"] = now_ms
    return fresh


def _new_session_row(conn: Connection, old_id: str | None, key: str, new_id: str, now_ms: int) -> None:
    columns = table_columns(conn, "sessions")
    old = None
    if old_id is not None:
        selected = ", ".join(f'"{c}"' for c in columns)
        found = conn.execute(f"SELECT {selected} FROM sessions WHERE session_id = ?", (old_id,)).fetchone()
        old = dict(zip(columns, found)) if found else None
    row: dict[str, Any] = {c: (old or {}).get(c) for c in columns}
    fresh = {"session_id": new_id, "session_key": key, "created_at": now_ms, "updated_at": now_ms, "started_at": now_ms,
             "ended_at": None, "status": None}
    row.update({k: v for k, v in fresh.items() if k in columns})
    if old is None and "session_scope" in columns:
        row.pop("session_scope")  # column default
    names = list(row)
    quoted = ", ".join(f'"{n}"' for n in names)
    marks = ", ".join("?" for _ in names)
    conn.execute(f"INSERT INTO sessions({quoted}) VALUES ({marks})", tuple(row[n] for n in names))
    tables = table_names(conn)
    if old is not None and "session_conversations" in tables:
        conn.execute(
            "INSERT INTO session_conversations(session_id, conversation_id, role, first_seen_at, last_seen_at)"
            " SELECT ?, conversation_id, role, ?, ? FROM session_conversations WHERE session_id = ?",
            (new_id, now_ms, now_ms, old_id),
        )


def _delete_session(conn: Connection, session_id: str, tables: set[str]) -> None:
    for table in DELETE_ORDER:
        if table in tables and "session_id" in table_columns(conn, table):
            conn.execute(f'DELETE FROM "{table}" WHERE session_id = ?', (session_id,))
    conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))


def preview_change(state_dir: Path, action: str, key: str, agent: str | None = None) -> SessionChange:
    """``--dry-run``: what delete/reset would do, read without writing a byte."""
    if action not in REASONS:
        raise UsageError(f"unknown action {action!r}")
    agent_id = agent_for_key(key, agent)
    path = existing_agent_db(state_dir, agent_id)
    with read_only_view(path) as conn:
        _check_shape(conn, path)
        change, entry, entry_rows = _compute(conn, action, agent_id, key)
        tables: dict[str, dict[str, Any]] = {}
        for sid in change.archived:
            merge_rows(tables, session_rows(conn, sid))
        merge_rows(tables, entry_rows)
    change.rows = row_counts(tables)
    change.dry_run = True
    if action == SessionAction.RESET:
        change.new_session_id = "(new)"
    return change


def change_session(state_dir: Path, action: str, key: str, agent: str | None = None, *, locked: bool = False) -> SessionChange:
    """Delete or reset one session key, archiving every unreferenced family member, in one transaction."""
    if action not in REASONS:
        raise UsageError(f"unknown action {action!r}")
    agent_id = agent_for_key(key, agent)
    path = existing_agent_db(state_dir, agent_id)
    if not locked:
        with maintenance_lock(state_dir):
            return change_session(state_dir, action, key, agent_id, locked=True)
    conn = open_rw(path)
    change: SessionChange | None = None
    try:
        _check_shape(conn, path)
        notices = settle_pending(state_dir, agent_id, conn)
        now_ms = epoch_ms()
        with _discarded_on_failure(lambda: change), immediate(conn):
            change, entry, entry_rows = _compute(conn, action, agent_id, key)
            change.notices.extend(notices)
            tables_present = table_names(conn)
            archived_rows: dict[str, dict[str, Any]] = {}
            for sid in change.archived:
                merge_rows(archived_rows, session_rows(conn, sid))
            merge_rows(archived_rows, entry_rows)
            # 1. the entry change
            if action == SessionAction.DELETE:
                for table in ENTRY_TABLES:
                    if table in tables_present:
                        conn.execute(f'DELETE FROM "{table}" WHERE session_key = ?', (key,))
            else:
                change.new_session_id = str(uuid.uuid4())
                _new_session_row(conn, change.session_id, key, change.new_session_id, now_ms)
                fresh = _fresh_entry(entry, change.new_session_id, now_ms)
                conn.execute(
                    "UPDATE session_entries SET session_id = ?, entry_json = ?, updated_at = ? WHERE session_key = ?",
                    (change.new_session_id, js_json(fresh), now_ms, key),
                )
                if "session_routes" in tables_present:
                    conn.execute(
                        "INSERT INTO session_routes(session_key, session_id, updated_at) VALUES (?, ?, ?)"
                        " ON CONFLICT(session_key) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at",
                        (key, change.new_session_id, now_ms),
                    )
            # 2. the reference set after the change decides again (same answer: computed without this key)
            refs = referenced_ids(conn)
            still = [sid for sid in change.archived if sid in refs]
            if still:  # pragma: no cover - defensive: never archive what a remaining row needs
                raise StatekitError(f"session ids {still} are still referenced after the change; nothing was changed")
            change.rows = row_counts(archived_rows)
            # 3. archive file + pending receipt, durable before the commit (a reset always keeps the previous entry)
            if archived_rows or action == SessionAction.RESET:
                document = build_document(change, entry, archived_rows, now_ms)
                change.archive_path, change.receipt_path, receipt = write_archive(state_dir, change, document, now_ms)
                change.archive_sha256 = receipt["sha256"]
                checkpoint("session-archive-written")
            # 4. remove the unreferenced family members
            for sid in change.archived:
                _delete_session(conn, sid, tables_present)
            for sid in change.archived:
                if conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone() is not None:
                    raise StatekitError(f"session {sid} could not be removed; nothing was changed")
        checkpoint("session-change-committed")
    except SQLiteError as exc:
        raise StatekitError(f"{path}: {exc}; nothing was changed") from None
    finally:
        conn.close()
    assert change is not None
    if change.receipt_path is not None:
        receipt = load_receipt(change.receipt_path) or {}
        receipt["status"] = SessionReceiptStatus.COMMITTED
        write_receipt(change.receipt_path, receipt)
    return change


@contextmanager
def _discarded_on_failure(change_of: Callable[[], SessionChange | None]) -> Iterator[None]:
    """Around the transaction: when it fails (its block or its COMMIT), discard the change's archive."""
    try:
        yield
    except BaseException:
        change = change_of()
        if change is not None:
            _discard_uncommitted(change)
        raise


def _discard_uncommitted(change: SessionChange) -> None:
    """The transaction rolled back: the archive copies rows that are still live; remove it."""
    for path in (change.archive_path, change.receipt_path):
        if path is not None:
            path.unlink(missing_ok=True)
