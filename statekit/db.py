"""Open and create statekit databases: PRAGMAs, private modes, short write transactions."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from statekit.fsutil import PRIVATE_FILE_MODE, chmod_best_effort, ensure_private_dir

SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000


def is_sqlite_file(path: Path) -> bool:
    """True when ``path`` starts with the SQLite file header (found by content, not by name)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _apply_pragmas(conn: sqlite3.Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")


def harden_modes(path: Path, warnings: list[str] | None = None) -> None:
    """0600 on the database and its -wal/-shm sidecars (best effort)."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if candidate.exists():
            chmod_best_effort(candidate, PRIVATE_FILE_MODE, warnings)


def open_rw(path: Path, warnings: list[str] | None = None) -> sqlite3.Connection:
    """Open (creating if needed) a database for writing with statekit's PRAGMAs.

    Parent directories that do not exist are created 0700; the file and its
    sidecars are made 0600. Transactions are explicit (autocommit mode).
    """
    ensure_private_dir(path.parent, warnings)
    if not path.exists():
        # Create the file ourselves so it never exists with a wider mode.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
        os.close(fd)
    conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    try:
        _apply_pragmas(conn)
    except BaseException:
        conn.close()
        raise
    harden_modes(path, warnings)
    return conn


def open_ro(path: Path) -> sqlite3.Connection:
    """Open an existing database read-only (no file is created, no WAL switch)."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return conn


@contextmanager
def immediate(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A short ``BEGIN IMMEDIATE`` write transaction: commit on success, roll back on any error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def table_columns(conn: sqlite3.Connection, table: str, schema: str = "main") -> list[str]:
    return [row[1] for row in conn.execute(f'PRAGMA "{schema}".table_info("{table}")')]


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@contextmanager
def read_only_view(path: Path) -> Iterator[sqlite3.Connection]:
    """Read a database without writing a single byte next to it.

    A plain read-only open of a WAL database creates ``-wal``/``-shm`` files.
    When no WAL content is pending the file is opened ``immutable`` (no
    locks, no sidecars); when a ``-wal`` exists, the database and its WAL
    are copied to a private temp dir and read there.
    """
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        with tempfile.TemporaryDirectory(prefix="statekit-ro-") as tmp:
            copy = Path(tmp) / "view.sqlite"
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, Path(f"{copy}-wal"))
            conn = sqlite3.connect(str(copy), isolation_level=None)
            try:
                yield conn
            finally:
                conn.close()
        return
    uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        yield conn
    finally:
        conn.close()
