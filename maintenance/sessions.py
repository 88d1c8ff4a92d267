"""Offline session maintenance on the per-agent SQLite store: delete, reset, list, restore-archive.

The *artifact family* of a session entry (seed "Path 3 session artifact
family") is its ``sessionId``, every
``compactionCheckpoints[*].preCompaction.sessionId`` and
``.postCompaction.sessionId``, and every id in ``usageFamilySessionIds``:
empty strings dropped, duplicates removed, first occurrence wins.

``delete KEY`` removes the key's ``session_entries``/``session_routes``
rows; ``reset KEY`` keeps the key and routes it to a fresh session id. In
the same transaction, every family id that no remaining entry references
any more (the *reference set* is built from the family of every remaining
``session_entries`` row, plus the ``session_id`` column of every remaining
entry and route) has its transcript rows copied into an archive and its
``sessions`` row deleted (children are deleted explicitly too, so a foreign
shape without ``ON DELETE CASCADE`` converges the same way). Ids that are
still referenced are left untouched.

Archive files live under ``<state>/.statekit/session-archives/<agentId>/``
(directories 0700, files 0600): ``<name>.json.zst`` is the zstd-compressed
JSON document holding every removed row column by column, and
``<name>.receipt.json`` is its receipt (file SHA-256, size, counts,
status). The archive and a ``pending`` receipt are written and fsynced
*before* the transaction commits; after the commit the receipt becomes
``committed``. A crash in between leaves a ``pending`` receipt that the
next run on that agent settles: ``committed`` when the change is visible in
the database, otherwise the archive is an orphan (a copy of rows that are
still live) and is removed.

Nothing here reads a legacy JSONL file, a topic transcript variant or a
trajectory sidecar: SQLite rows are the only input.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

from statekit.legacy_readers.session_family import family_of
from statekit import __version__
from statekit.db import Connection, IntegrityError, SQLiteError, open_rw, read_only_view, table_columns, table_names
from statekit.errors import StatekitError, UsageError, VerificationError
from statekit.faults import checkpoint
from statekit.fsutil import (
    PRIVATE_FILE_MODE,
    atomic_write_bytes,
    chmod_best_effort,
    ensure_private_dir,
    fsync_dir,
    sha256_bytes,
)
from statekit.layout import DEFAULT_AGENT_ID, agent_db_path, is_valid_agent_id, lock_path, normalize_agent_id, statekit_dir
from statekit.locking import exclusive_lock, refuse_if_gateway_running
from statekit.schema import SCHEMA_VERSION
from statekit.values import js_json

ARCHIVE_FORMAT = "statekit-session-archive"
ARCHIVE_VERSION = 1
ARCHIVE_SUFFIX = ".json.zst"
RECEIPT_SUFFIX = ".receipt.json"
ZSTD_LEVEL = 10
MAX_ARCHIVE_BYTES = 1 << 30  # decompressed size cap for restore (1 GiB)

REASONS = {"delete": "deleted", "reset": "reset"}

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

_SAFE_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$", re.I)


# --- families -----------------------------------------------------------------


@dataclass
class References:
    """Session ids that remaining entries and routes still need."""

    ids: set[str] = field(default_factory=set)
    unparsed_texts: list[str] = field(default_factory=list)  # entry_json that is not a JSON object

    def __contains__(self, session_id: str) -> bool:
        if session_id in self.ids:
            return True
        # An entry we cannot parse might still name the id: keep it (never delete on a guess).
        return any(session_id in text for text in self.unparsed_texts)


def referenced_ids(conn: Connection, exclude_key: str | None = None) -> References:
    """The reference set: the family of every ``session_entries`` row (except ``exclude_key``) plus route targets."""
    refs = References()
    tables = table_names(conn)
    if "session_entries" in tables:
        for key, session_id, text in conn.execute("SELECT session_key, session_id, entry_json FROM session_entries"):
            if key == exclude_key:
                continue
            try:
                entry = json.loads(text) if isinstance(text, str) else None
            except ValueError:
                entry = None
            if not isinstance(entry, dict):
                refs.unparsed_texts.append(text if isinstance(text, str) else "")
            refs.ids.update(family_of(entry, session_id))
    if "session_routes" in tables:
        for key, session_id in conn.execute("SELECT session_key, session_id FROM session_routes"):
            if key != exclude_key and isinstance(session_id, str):
                refs.ids.add(session_id)
    return refs


# --- rows ---------------------------------------------------------------------


def _encode(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$base64": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"$base64"}:
        return base64.b64decode(value["$base64"])
    return value


def _select(conn: Connection, table: str, where: str, params: Sequence[Any]) -> dict[str, Any]:
    columns = table_columns(conn, table)
    names = ", ".join(f'"{c}"' for c in columns)
    order = "ORDER BY rowid" if _has_rowid(conn, table) else ""
    rows = [[_encode(v) for v in row] for row in conn.execute(f'SELECT {names} FROM "{table}" WHERE {where} {order}', tuple(params))]
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
            found[table] = _select(conn, table, "session_id = ?", (session_id,))
    return found


def _merge(into: dict[str, dict[str, Any]], more: dict[str, dict[str, Any]]) -> None:
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


# --- plan ---------------------------------------------------------------------


@dataclass
class SessionChange:
    """What ``sessions delete|reset KEY`` does (or did) to one agent database."""

    action: str  # delete | reset
    agent_id: str
    session_key: str
    session_id: str | None
    family: list[str]
    archived: list[str] = field(default_factory=list)  # unreferenced family ids with rows: archived then deleted
    kept: list[str] = field(default_factory=list)  # family ids still referenced elsewhere: untouched
    absent: list[str] = field(default_factory=list)  # family ids without any row in this database
    new_session_id: str | None = None
    rows: dict[str, int] = field(default_factory=dict)  # archived row counts per table
    archive_path: Path | None = None
    receipt_path: Path | None = None
    archive_sha256: str | None = None
    dry_run: bool = False
    notices: list[str] = field(default_factory=list)

    @property
    def reason(self) -> str:
        return REASONS[self.action]

    def to_json(self, state_dir: Path | None = None) -> dict[str, Any]:
        def rel(path: Path | None) -> str | None:
            if path is None:
                return None
            if state_dir is not None:
                try:
                    return path.relative_to(state_dir).as_posix()
                except ValueError:
                    pass
            return str(path)

        return {
            "action": self.action,
            "reason": self.reason,
            "dry_run": self.dry_run,
            "agent_id": self.agent_id,
            "session_key": self.session_key,
            "session_id": self.session_id,
            "new_session_id": self.new_session_id,
            "family": self.family,
            "archived_session_ids": self.archived,
            "kept_session_ids": self.kept,
            "absent_session_ids": self.absent,
            "rows": self.rows,
            "archive": rel(self.archive_path),
            "receipt": rel(self.receipt_path),
            "archive_sha256": self.archive_sha256,
            "notices": self.notices,
        }


def agent_for_key(key: str, agent: str | None) -> str:
    """``--agent`` if given, else the ``agent:<id>:`` prefix of the key, else the default agent."""
    if agent:
        agent_id = normalize_agent_id(agent)
    else:
        parts = key.split(":")
        agent_id = normalize_agent_id(parts[1]) if len(parts) > 2 and parts[0].lower() == "agent" and parts[1] else DEFAULT_AGENT_ID
    if not is_valid_agent_id(agent_id):
        raise UsageError(f"invalid agent id {agent_id!r}")
    return agent_id


def existing_agent_db(state_dir: Path, agent_id: str) -> Path:
    path = agent_db_path(state_dir, agent_id)
    if not path.is_file():
        raise StatekitError(f"{path}: no database for agent {agent_id!r} (run `statekit migrate` first, or pass --agent)")
    return path


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
    except (TypeError, ValueError):
        entry = None
    if not isinstance(entry, dict):
        raise StatekitError(f"session entry {key!r} in agent {agent_id!r}: entry_json is not a JSON object; left untouched")
    change = SessionChange(action, agent_id, key, session_id, family_of(entry, session_id))
    tables = table_names(conn)
    entry_rows: dict[str, dict[str, Any]] = {}
    if action == "delete":
        for table in ENTRY_TABLES:
            if table in tables:
                entry_rows[table] = _select(conn, table, "session_key = ?", (key,))
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


# --- archive files ------------------------------------------------------------


def archives_dir(state_dir: Path, agent_id: str) -> Path:
    return statekit_dir(state_dir) / "session-archives" / agent_id


def _slug(text: str, limit: int = 48) -> str:
    slug = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-.")
    return slug[:limit].rstrip("-.") or "session"


def receipt_path_for(archive: Path) -> Path:
    name = archive.name
    stem = name[: -len(ARCHIVE_SUFFIX)] if name.endswith(ARCHIVE_SUFFIX) else name
    return archive.with_name(stem + RECEIPT_SUFFIX)


def _write_private(path: Path, data: bytes) -> None:
    """Create ``path`` (0600, must not exist), write, fsync file and directory."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    chmod_best_effort(path, PRIVATE_FILE_MODE)
    fsync_dir(path.parent)


def _write_receipt(path: Path, receipt: dict[str, Any]) -> None:
    atomic_write_bytes(path, (json.dumps(receipt, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))


def build_document(change: SessionChange, entry: dict[str, Any], tables: dict[str, dict[str, Any]], now_ms: int) -> dict[str, Any]:
    document: dict[str, Any] = {
        "format": ARCHIVE_FORMAT,
        "version": ARCHIVE_VERSION,
        "statekit_version": __version__,
        "created_at": now_ms,
        "agent_id": change.agent_id,
        "reason": change.reason,
        "session_key": change.session_key,
        "session_id": change.session_id,
        "new_session_id": change.new_session_id,
        "family": change.family,
        "archived_session_ids": change.archived,
        "kept_session_ids": change.kept,
        "tables": {t: tables[t] for t in RESTORE_ORDER if t in tables},
    }
    if change.action == "reset":
        # The entry itself stays live (pointing at the new id); its previous value is kept for the record only.
        document["previous_entry"] = entry
    return document


def write_archive(state_dir: Path, change: SessionChange, document: dict[str, Any], now_ms: int) -> tuple[Path, Path, dict[str, Any]]:
    """Write the compressed archive and a ``pending`` receipt (both fsynced) and return their paths."""
    payload = json.dumps(document, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")
    data = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True).compress(payload)
    digest = sha256_bytes(data)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now_ms / 1000))
    directory = ensure_private_dir(archives_dir(state_dir, change.agent_id))
    archive = directory / f"{stamp}-{change.reason}-{_slug(change.session_key)}-{digest[:16]}{ARCHIVE_SUFFIX}"
    if archive.exists():
        archive.unlink()  # identical name means identical bytes (hash in the name): rewrite cleanly
    _write_private(archive, data)
    receipt = {
        "format": ARCHIVE_FORMAT + "-receipt",
        "version": ARCHIVE_VERSION,
        "archive": archive.name,
        "sha256": digest,
        "payload_sha256": sha256_bytes(payload),
        "size": len(data),
        "created_at": now_ms,
        "agent_id": change.agent_id,
        "reason": change.reason,
        "session_key": change.session_key,
        "session_id": change.session_id,
        "new_session_id": change.new_session_id,
        "archived_session_ids": change.archived,
        "kept_session_ids": change.kept,
        "rows": change.rows,
        "status": "pending",
    }
    receipt_path = receipt_path_for(archive)
    _write_receipt(receipt_path, receipt)
    return archive, receipt_path, receipt


def load_receipt(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def iter_receipts(state_dir: Path, agent_id: str | None = None) -> Iterator[tuple[Path, dict[str, Any]]]:
    root = statekit_dir(state_dir) / "session-archives"
    if not root.is_dir():
        return
    agents = [agent_id] if agent_id else sorted(p.name for p in root.iterdir() if p.is_dir())
    for agent in agents:
        directory = root / agent
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*" + RECEIPT_SUFFIX)):
            receipt = load_receipt(path)
            if receipt is not None:
                yield path, receipt


def _change_visible(conn: Connection, receipt: dict[str, Any]) -> bool:
    """True when the database shows the change a pending receipt describes (its transaction committed)."""
    key = receipt.get("session_key")
    tables = table_names(conn)
    if "session_entries" not in tables:
        return False
    row = conn.execute("SELECT session_id FROM session_entries WHERE session_key = ?", (key,)).fetchone()
    if receipt.get("reason") == "reset":
        return row is not None and row[0] == receipt.get("new_session_id")
    if row is not None:
        return False
    return all(
        conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (sid,)).fetchone() is None
        for sid in receipt.get("archived_session_ids") or []
    )


def settle_pending(state_dir: Path, agent_id: str, conn: Connection) -> list[str]:
    """Settle receipts left ``pending`` by a crash: mark committed, or remove the orphan archive."""
    notes: list[str] = []
    for path, receipt in list(iter_receipts(state_dir, agent_id)):
        if receipt.get("status") != "pending":
            continue
        archive = path.with_name(str(receipt.get("archive", "")))
        if _change_visible(conn, receipt):
            receipt["status"] = "committed"
            _write_receipt(path, receipt)
            notes.append(f"{archive.name}: interrupted earlier after commit; receipt completed")
        else:
            archive.unlink(missing_ok=True)
            path.unlink(missing_ok=True)
            fsync_dir(path.parent)
            notes.append(f"{archive.name}: orphan archive from an interrupted run removed (its rows are still live)")
    return notes


# --- delete / reset -----------------------------------------------------------


@contextmanager
def maintenance_lock(state_dir: Path) -> Iterator[None]:
    """The state-dir lock, and no gateway running on the state dir."""
    with exclusive_lock(lock_path(state_dir), f"state dir {state_dir}"):
        refuse_if_gateway_running(state_dir)
        yield


def _now_ms() -> int:
    return int(time.time() * 1000)


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
        names = ", ".join(f'"{c}"' for c in columns)
        found = conn.execute(f"SELECT {names} FROM sessions WHERE session_id = ?", (old_id,)).fetchone()
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
            _merge(tables, session_rows(conn, sid))
        _merge(tables, entry_rows)
    change.rows = row_counts(tables)
    change.dry_run = True
    if action == "reset":
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
        now_ms = _now_ms()
        conn.execute("BEGIN IMMEDIATE")
        try:
            change, entry, entry_rows = _compute(conn, action, agent_id, key)
            change.notices.extend(notices)
            tables_present = table_names(conn)
            archived_rows: dict[str, dict[str, Any]] = {}
            for sid in change.archived:
                _merge(archived_rows, session_rows(conn, sid))
            _merge(archived_rows, entry_rows)
            # 1. the entry change
            if action == "delete":
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
            if archived_rows or action == "reset":
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
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if change is not None:
                _discard_uncommitted(change)
            raise
        conn.execute("COMMIT")
        checkpoint("session-change-committed")
    except SQLiteError as exc:
        raise StatekitError(f"{path}: {exc}; nothing was changed") from None
    finally:
        conn.close()
    assert change is not None
    if change.receipt_path is not None:
        receipt = load_receipt(change.receipt_path) or {}
        receipt["status"] = "committed"
        _write_receipt(change.receipt_path, receipt)
    return change


def _discard_uncommitted(change: SessionChange) -> None:
    """The transaction rolled back: the archive copies rows that are still live; remove it."""
    for path in (change.archive_path, change.receipt_path):
        if path is not None:
            path.unlink(missing_ok=True)


# --- list ---------------------------------------------------------------------


def agent_ids_on_disk(state_dir: Path) -> list[str]:
    root = state_dir / "agents"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "agent" / "openclaw-agent.sqlite").is_file())


def list_sessions(state_dir: Path, agent: str | None = None) -> list[dict[str, Any]]:
    """Session entries per agent with their family and transcript size (read-only)."""
    agents = [agent_for_key("", agent)] if agent else agent_ids_on_disk(state_dir)
    result = []
    for agent_id in agents:
        path = existing_agent_db(state_dir, agent_id)
        sessions: list[dict[str, Any]] = []
        with read_only_view(path) as conn:
            tables = table_names(conn)
            if "session_entries" in tables:
                has_events = "transcript_events" in tables
                for key, sid, text, updated in conn.execute(
                    "SELECT session_key, session_id, entry_json, updated_at FROM session_entries ORDER BY updated_at DESC, session_key"
                ):
                    try:
                        entry = json.loads(text)
                    except (TypeError, ValueError):
                        entry = None
                    family = family_of(entry, sid)
                    events = 0
                    if has_events:
                        events = conn.execute(
                            "SELECT count(*) FROM transcript_events WHERE session_id IN (SELECT value FROM json_each(?))",
                            (json.dumps(family),),
                        ).fetchone()[0]
                    sessions.append({"session_key": key, "session_id": sid, "updated_at": updated, "family": family,
                                     "transcript_events": events})
        result.append({"agent_id": agent_id, "database": path.relative_to(state_dir).as_posix(), "sessions": sessions})
    return result


def list_archives(state_dir: Path, agent: str | None = None) -> list[dict[str, Any]]:
    found = []
    for path, receipt in iter_receipts(state_dir, agent_for_key("", agent) if agent else None):
        archive = path.with_name(str(receipt.get("archive", "")))
        found.append({
            "archive": archive.relative_to(state_dir).as_posix(),
            "present": archive.is_file(),
            **{k: receipt.get(k) for k in ("agent_id", "reason", "session_key", "session_id", "new_session_id",
                                           "archived_session_ids", "rows", "created_at", "status", "sha256", "size")},
        })
    return found


# --- restore ------------------------------------------------------------------


@dataclass
class RestoreResult:
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


def read_archive(path: Path) -> tuple[dict[str, Any], str]:
    """Verify the archive's hash (against its receipt, else the hash in its name) and decode it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StatekitError(f"{path}: cannot read archive: {exc.strerror or exc}") from None
    digest = sha256_bytes(data)
    receipt = load_receipt(receipt_path_for(path))
    if receipt is not None and receipt.get("archive") == path.name:
        if receipt.get("sha256") != digest:
            raise VerificationError(f"{path}: SHA-256 does not match its receipt; archive left alone")
        verified_by = "receipt"
    else:
        match = re.search(r"-([0-9a-f]{16})" + re.escape(ARCHIVE_SUFFIX) + "$", path.name)
        if match is None:
            raise VerificationError(f"{path}: no receipt beside it and no hash in its name; cannot verify it")
        if not digest.startswith(match.group(1)):
            raise VerificationError(f"{path}: SHA-256 does not match the hash in its name; archive left alone")
        verified_by = "file name"
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(data)
        payload = reader.read(MAX_ARCHIVE_BYTES + 1)
    except zstandard.ZstdError as exc:
        raise VerificationError(f"{path}: not a zstd archive ({exc})") from None
    if len(payload) > MAX_ARCHIVE_BYTES:
        raise VerificationError(f"{path}: archive expands beyond {MAX_ARCHIVE_BYTES} bytes; refused")
    if receipt is not None and verified_by == "receipt" and receipt.get("payload_sha256") not in (None, sha256_bytes(payload)):
        raise VerificationError(f"{path}: content does not match its receipt")
    try:
        document = json.loads(payload)
    except ValueError:
        raise VerificationError(f"{path}: archive content is not JSON") from None
    if not isinstance(document, dict) or document.get("format") != ARCHIVE_FORMAT:
        raise VerificationError(f"{path}: not a statekit session archive")
    if document.get("version") != ARCHIVE_VERSION:
        raise StatekitError(f"{path}: archive version {document.get('version')!r} is not supported")
    return document, verified_by


def _primary_key(conn: Connection, table: str) -> list[str]:
    info = sorted((row[5], row[1]) for row in conn.execute(f'PRAGMA table_info("{table}")') if row[5])
    return [name for _, name in info]


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
        key = _primary_key(conn, table) or list(block["columns"])
        index = [block["columns"].index(c) for c in key if c in block["columns"]]
        if len(index) != len(key):
            continue
        where = " AND ".join(f'"{c}" IS ?' for c in key)
        for row in block["rows"]:
            values = tuple(_decode(row[i]) for i in index)
            if conn.execute(f'SELECT 1 FROM "{table}" WHERE {where} LIMIT 1', values).fetchone():
                conflicts.append(f"{table} ({', '.join(f'{c}={v}' for c, v in zip(key, values))})")
    return conflicts


def restore_archive(state_dir: Path, archive: Path, *, dry_run: bool = False, locked: bool = False) -> RestoreResult:
    """Put an archive's rows back exactly, in one transaction; refuse if any of them is live."""
    archive = Path(os.path.abspath(archive))
    document, verified_by = read_archive(archive)
    agent_id = str(document.get("agent_id") or "")
    if not is_valid_agent_id(agent_id):
        raise VerificationError(f"{archive}: archive names an invalid agent id")
    tables = document.get("tables")
    if not isinstance(tables, dict) or any(t not in RESTORE_ORDER for t in tables):
        raise VerificationError(f"{archive}: archive lists unexpected tables")
    result = RestoreResult(archive, agent_id, str(document.get("reason")), str(document.get("session_key")),
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
            return restore_archive(state_dir, archive, dry_run=False, locked=True)
    conn = open_rw(path)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
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
                        [tuple(_decode(v) for v in row) for row in block["rows"]],
                    )
                except IntegrityError as exc:
                    raise StatekitError(f"{archive}: the database refused the {table} rows ({exc}); nothing was restored") from None
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    except SQLiteError as exc:
        raise StatekitError(f"{path}: {exc}; nothing was restored") from None
    finally:
        conn.close()
    receipt_path = receipt_path_for(archive)
    receipt = load_receipt(receipt_path)
    if receipt is not None and receipt.get("archive") == archive.name:
        receipt["status"] = "restored"
        receipt["restored_at"] = _now_ms()
        _write_receipt(receipt_path, receipt)
    return result


def _conflict_message(archive: Path, conflicts: list[str]) -> str:
    shown = "; ".join(conflicts[:3]) + (f"; and {len(conflicts) - 3} more" if len(conflicts) > 3 else "")
    return f"{archive}: refusing to overwrite live rows: {shown}; nothing was restored"


__all__ = [
    "SessionChange",
    "RestoreResult",
    "family_of",
    "referenced_ids",
    "change_session",
    "preview_change",
    "list_sessions",
    "list_archives",
    "restore_archive",
    "read_archive",
    "settle_pending",
    "archives_dir",
]
