"""Consistent SQLite snapshots: ``VACUUM INTO`` a private file, fsync, check, describe.

The snapshot is not hashed here: ``backup create`` hashes its bytes once, as they stream into the archive.

Never interprets table contents: a snapshot of a database with 75 tables and a
schema far newer than statekit's is taken and checked exactly like our own.
Only ``PRAGMA integrity_check``, ``PRAGMA user_version`` and the ``schema_meta``
role / agent id (when that table exists) are read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from statekit.db import BUSY_TIMEOUT_MS, Connection, CorruptError, OperationalError, SQLiteError, connect, error_name
from statekit.errors import StatekitError, VerificationError
from statekit.fsutil import PRIVATE_FILE_MODE, chmod_best_effort, fsync_file


@dataclass(frozen=True)
class DbFacts:
    """What a check of one database file found."""

    integrity: str  # "ok" or the first problems integrity_check reported
    user_version: int
    meta_role: str | None
    meta_agent_id: str | None
    registry: tuple[tuple[str, str], ...] = ()  # a global database's agent_databases rows: (agent id, path)
    foreign_key_violations: int | None = None  # counted only when asked (OpenClaw 9.6's verifier refuses any)

    @property
    def ok(self) -> bool:
        return self.integrity == "ok"


@dataclass(frozen=True)
class Snapshot:
    path: Path
    size: int
    facts: DbFacts


def open_source(path: Path) -> Connection:
    """Open a live database for reading through its WAL.

    A read-write handle (we only ever read through it) lets SQLite remove the ``-wal``/
    ``-shm`` it creates when we are the last user; a read-only handle would
    leave them behind. Read-only is the fallback for a directory we cannot write.
    """
    try:
        conn = connect(path, mode="rw")
        conn.execute("PRAGMA schema_version").fetchone()
    except OperationalError:
        conn = connect(path, mode="ro")
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


def open_snapshot(path: Path) -> Connection:
    """Open a finished, self-contained snapshot without locks or sidecars."""
    return connect(path, mode="ro", immutable=True)


def _schema_meta(conn: Connection) -> tuple[str | None, str | None]:
    columns = {row[1] for row in conn.execute("PRAGMA table_info('schema_meta')")}
    if "role" not in columns:
        return None, None
    agent_col = "agent_id" if "agent_id" in columns else "NULL"
    order = "CASE meta_key WHEN 'primary' THEN 0 ELSE 1 END, rowid" if "meta_key" in columns else "rowid"
    try:
        row = conn.execute(f"SELECT role, {agent_col} FROM schema_meta ORDER BY {order} LIMIT 1").fetchone()
    except SQLiteError:
        return None, None
    if row is None:
        return None, None
    role = row[0] if isinstance(row[0], str) else None
    agent = row[1] if isinstance(row[1], str) and row[1] else None
    return role, agent


def _registry(conn: Connection) -> tuple[tuple[str, str], ...]:
    """The ``agent_databases`` rows (agent id, path) of an OpenClaw global database, if it has that table."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info('agent_databases')")}
    if not {"agent_id", "path"} <= columns:
        return ()
    try:
        rows = conn.execute("SELECT agent_id, path FROM agent_databases ORDER BY agent_id, path").fetchall()
    except SQLiteError:
        return ()
    return tuple((r[0], r[1]) for r in rows if isinstance(r[0], str) and isinstance(r[1], str))


def inspect_db(path: Path, *, foreign_keys: bool = False) -> DbFacts:
    """integrity_check, user_version and schema_meta role/agent (and agent registry) of a self-contained file;
    with ``foreign_keys`` also the number of ``foreign_key_check`` violations."""
    conn = open_snapshot(path)
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(20)")]
        integrity = "ok" if rows == ["ok"] else "; ".join(rows)[:500]
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        role, agent = _schema_meta(conn) if integrity == "ok" else (None, None)
        registry = _registry(conn) if role == "global" else ()
        violations = sum(1 for _ in conn.execute("PRAGMA foreign_key_check")) if foreign_keys and integrity == "ok" else None
    except SQLiteError as exc:
        return DbFacts(f"cannot be read as SQLite ({exc})", 0, None, None)
    finally:
        conn.close()
    return DbFacts(integrity, version, role, agent, registry, violations)


def _disk_failure(exc: SQLiteError) -> bool:
    """A full or failing disk (never a damaged database: SQLite's "database disk image is malformed" names the image)."""
    name = error_name(exc)
    return isinstance(exc, OperationalError) and (name == "SQLITE_FULL" or name.startswith("SQLITE_IOERR"))


def one_line(text: str) -> str:
    """SQLite's multi-line integrity output as one line (one clear line per failure)."""
    return "; ".join(part.strip() for part in text.splitlines() if part.strip())


def source_integrity(source: Path) -> str | None:
    """Why the live database ``source`` is damaged (``quick_check`` through its WAL, read-only), or None when it reads as sound.

    Asked only after a snapshot failed, to tell a damaged database (exit 5) from a full or failing disk (exit 1)."""
    try:
        conn = connect(source, mode="ro")
    except SQLiteError as exc:
        return str(exc) if isinstance(exc, CorruptError) else None
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)")]
    except CorruptError as exc:
        return str(exc)
    except SQLiteError:
        return None
    finally:
        conn.close()
    return None if rows == ["ok"] else one_line("; ".join(rows))[:300]


def _corrupt(source: Path, detail: str) -> VerificationError:
    return VerificationError(f"{source}: database is corrupt, not backed up (integrity check: {one_line(detail)[:300]}); "
                             "nothing was published")


def snapshot_db(source: Path, dest: Path) -> Snapshot:
    """``VACUUM INTO`` ``dest`` (0600), fsync it, check it (its SHA-256 is taken as it is archived).

    Raises :class:`VerificationError` (exit 5, naming the database) when the database is damaged
    (SQLite says so, or the snapshot fails ``integrity_check``), and :class:`StatekitError` (exit 1)
    when SQLite cannot read the source at all or the disk receiving the snapshot is full or failing
    while the source itself checks sound. ``dest`` must not exist.
    """
    try:
        conn = open_source(source)
    except CorruptError as exc:
        raise _corrupt(source, str(exc)) from None
    except SQLiteError as exc:
        raise StatekitError(f"{source}: cannot open database for snapshot: {exc}") from None
    try:
        conn.execute("VACUUM INTO ?", (str(dest),))
    except SQLiteError as exc:
        dest.unlink(missing_ok=True)
        conn.close()
        damage = str(exc) if isinstance(exc, CorruptError) else source_integrity(source)
        if damage is not None:
            raise _corrupt(source, damage) from None
        if _disk_failure(exc):  # writing the snapshot failed: a full or failing disk says nothing about the database
            raise StatekitError(f"{source}: snapshot could not be written in {dest.parent} ({exc}); free space or check that disk") from None
        raise VerificationError(f"{source}: snapshot failed, database is unreadable or corrupt: {one_line(str(exc))}") from None
    finally:
        conn.close()
    chmod_best_effort(dest, PRIVATE_FILE_MODE)
    fsync_file(dest)
    facts = inspect_db(dest)
    if not facts.ok:
        raise _corrupt(source, facts.integrity)
    return Snapshot(dest, os.stat(dest).st_size, facts)
