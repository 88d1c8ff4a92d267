"""The SQLite engine, and how statekit opens its databases.

This is the only module that imports the engine. statekit does not use the
operating system's SQLite (Python's ``sqlite3`` links whatever the distribution
ships, 3.40 on Debian 12): OpenClaw 2026.9.6 writes schemas that call
functions such an old library lacks (``octet_length`` needs 3.43) and refuses
SQLite libraries that are not "WAL-reset-safe" (3.51.3+, 3.50.7+ or 3.44.6+).
The engine is ``apsw``, whose wheels bundle a current SQLite (see
``docs/sqlite-engine.md``). Every module goes through :func:`connect` and the
error groups below, so one SQLite library handles every file in the process
(two libraries in one process break each other's POSIX locks).

What the rest of the code relies on, kept as it was under ``sqlite3``:

* explicit transactions: a connection is in autocommit mode and nothing
  begins a transaction behind the caller's back;
* a busy timeout on every connection (5 s unless the caller asks for more);
* ``secure_delete`` on: deleted content is zeroed in the file;
* ``execute`` runs one statement (more is refused before anything runs, as
  ``sqlite3`` did); :meth:`Connection.executescript` runs several;
* ``cursor.rowcount`` counts the rows the statement itself changed (not
  those its triggers changed), summed over ``executemany``;
* a hostile schema cannot hang a run or reach outside SQL: every connection has
  ``trusted_schema`` off (no function with side effects and no virtual table
  runs from a view, trigger, index or default), extension loading off, tight
  limits on statement size and trigger depth, and a work budget: one statement
  may run at most :data:`STATEMENT_STEP_BUDGET` virtual-machine steps between
  two rows it hands back (:data:`FOREIGN_STEP_BUDGET` on read-only connections),
  then it stops with :class:`WorkLimitError`. Read-only connections also refuse
  views and never fire triggers (statekit reads tables only);
* values are bound as ``sqlite3`` bound them (``bool`` as 0/1, ``date`` and
  ``datetime`` as ISO text, an int beyond 64 bits raises ``OverflowError``); an
  unsupported type, and TEXT that is not UTF-8, raise :data:`SQLiteError`
  (apsw alone would raise ``TypeError``/``UnicodeDecodeError``).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import apsw

from statekit.fsutil import PRIVATE_FILE_MODE, UnsafePathError, chmod_best_effort, create_file, ensure_inside, ensure_private_dir, file_kind_problem, read_prefix

SQLITE_HEADER = b"SQLite format 3\x00"
STATEMENT_STEP_BUDGET = 200_000_000
"""VM steps one statement may run between two rows it returns (a DELETE of a million rows takes ~20 million).

Statements that evaluate no view and fire no trigger and that statekit writes itself (``VACUUM``,
``PRAGMA``, DDL) are not budgeted: ``VACUUM INTO`` a 10 GB database is one long statement."""
FOREIGN_STEP_BUDGET = 100_000_000
"""The same on read-only connections: reads of databases from state dirs and archives."""
PROGRESS_INTERVAL = 10_000
LIMITS: dict[int, int] = {
    apsw.SQLITE_LIMIT_VDBE_OP: 10_000_000,  # one prepared statement's program (a huge view or CTE is refused)
    apsw.SQLITE_LIMIT_EXPR_DEPTH: 1_000,
    apsw.SQLITE_LIMIT_COMPOUND_SELECT: 500,
    apsw.SQLITE_LIMIT_TRIGGER_DEPTH: 100,
    apsw.SQLITE_LIMIT_FUNCTION_ARG: 127,
    apsw.SQLITE_LIMIT_ATTACHED: 4,
    apsw.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: 50_000,
}
BUSY_TIMEOUT_MS = 30_000
DEFAULT_BUSY_TIMEOUT_MS = 5_000  # what Python's sqlite3.connect() waited by default

ENGINE = "apsw"
ENGINE_VERSION: str = apsw.apsw_version()
SQLITE_VERSION: str = apsw.sqlite_lib_version()


def engine_description() -> str:
    """``SQLite 3.54.1, apsw 3.54.1.0``: the library every database is opened with."""
    return f"SQLite {SQLITE_VERSION}, {ENGINE} {ENGINE_VERSION}"

# ---------------------------------------------------------------------------- errors
#
# ``SQLiteError`` is everything the engine raises (``sqlite3.Error`` and
# ``sqlite3.DatabaseError`` both map here: the only difference between those two
# was API misuse, which apsw reports as MisuseError/RangeError under the same base).
# The groups are tuples, for ``except`` and ``isinstance``; they follow the result
# codes exactly as Python's sqlite3 grouped them.

SQLiteError = apsw.Error

IntegrityError: tuple[type[apsw.Error], ...] = (apsw.ConstraintError, apsw.MismatchError)
"""A constraint (UNIQUE, NOT NULL, CHECK, FOREIGN KEY, STRICT type) or datatype mismatch refused the row."""

OperationalError: tuple[type[apsw.Error], ...] = (
    apsw.SQLError, apsw.PermissionsError, apsw.AbortError, apsw.BusyError, apsw.LockedError, apsw.ReadOnlyError,
    apsw.InterruptError, apsw.IOError, apsw.FullError, apsw.CantOpenError, apsw.ProtocolError, apsw.EmptyError,
    apsw.SchemaChangeError,
)
"""Errors of the statement or of its environment (missing table or function, busy, locked, read-only, I/O, full, cannot open)."""

CorruptError: tuple[type[apsw.Error], ...] = (apsw.CorruptError, apsw.NotADBError)
"""The file is damaged or is not a SQLite database."""


class TextDecodeError(apsw.SQLError):
    """A TEXT value that is not UTF-8 (sqlite3 raised ``OperationalError`` for it)."""


class NotADatabaseFile(apsw.CantOpenError):
    """A directory, symlink, FIFO, socket or device where a database (or its ``-wal``) should be: never opened.

    A condition of the machine, not of a source: migrate stops and names what is there."""


class WorkLimitError(apsw.InterruptError):
    """A statement ran past its work budget (a recursive view or a trigger that never ends); it was stopped."""


def error_name(exc: BaseException) -> str:
    """The SQLite result code name of ``exc`` (extended when there is one): ``SQLITE_FULL``, ``SQLITE_IOERR_WRITE``...

    Empty for an exception that carries no SQLite result code.
    """
    code = getattr(exc, "extendedresult", None)
    if not isinstance(code, int):
        code = getattr(exc, "result", None)
    if not isinstance(code, int):
        return ""
    name = apsw.mapping_extended_result_codes.get(code) or apsw.mapping_result_codes.get(code & 0xFF)
    return name if isinstance(name, str) else ""


# ---------------------------------------------------------------------------- bindings


def _convert_binding(cursor: apsw.Cursor, number: int, value: Any) -> Any:
    """Values apsw does not bind natively: the ones sqlite3 adapted by default, otherwise an error like sqlite3's."""
    if isinstance(value, _dt.datetime):
        return value.isoformat(" ")
    if isinstance(value, _dt.date):
        return value.isoformat()
    raise apsw.BindingsError(f"Error binding parameter {number}: type {type(value).__name__!r} is not supported")


_UNBUDGETED = re.compile(r"\s*(?:vacuum|pragma|create|alter|drop|analyze|reindex)\b", re.IGNORECASE)
_DML = re.compile(r"\s*(?:(?:--[^\n]*(?:\n|$)|/\*.*?(?:\*/|$))\s*)*(insert|update|delete|replace)\b", re.IGNORECASE | re.DOTALL)
_TAIL_IGNORABLE = re.compile(r"(?:\s|;|--[^\n]*(?:\n|$)|/\*.*?(?:\*/|$))*", re.DOTALL)


_CHECKED: dict[str, bool] = {}  # SQL text seen to hold one statement -> is it INSERT/UPDATE/DELETE/REPLACE
_CHECKED_LIMIT = 4096
_UNBUDGETED_SEEN: dict[str, bool] = {}  # SQL text -> does _UNBUDGETED match it (one regular expression per text, not per run)


def _first_run_check(cursor: apsw.Cursor, sql: str, bindings: Any) -> bool:
    """Exec tracer for SQL text not seen yet: refuse a second statement before the first one runs."""
    whole = cursor._sql if isinstance(cursor, Cursor) else sql
    if len(sql) < len(whole):
        at = whole.find(sql)
        rest = whole[at + len(sql):] if at >= 0 else ""
        if not _TAIL_IGNORABLE.fullmatch(rest):
            raise apsw.MisuseError("You can only execute one statement at a time.")
    if len(_CHECKED) >= _CHECKED_LIMIT:
        _CHECKED.clear()
    _CHECKED[whole] = _DML.match(sql) is not None
    return True


# ---------------------------------------------------------------------------- rows and cursors


class Row(tuple):
    """A result row readable by position and by column name (case-insensitive), like ``sqlite3.Row``."""

    _names: tuple[str, ...]

    def __new__(cls, values: Iterable[Any], names: Sequence[str]) -> Row:
        row = super().__new__(cls, values)
        row._names = tuple(names)
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            folded = key.casefold()
            for index, name in enumerate(self._names):
                if name.casefold() == folded:
                    return tuple.__getitem__(self, index)
            raise IndexError(f"no column named {key!r}")
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def named_row(cursor: apsw.Cursor, row: tuple[Any, ...]) -> Row:
    """A row tracer (``conn.row_trace = named_row``) that makes every row a :class:`Row`."""
    return Row(row, [d[0] for d in cursor.description])


def _decode_failure(exc: UnicodeDecodeError) -> TextDecodeError:
    return TextDecodeError(f"could not decode a TEXT value as UTF-8 ({exc.reason} at byte {exc.start})")


class Cursor(apsw.Cursor):
    """apsw's cursor with the ``sqlite3`` conveniences statekit uses: ``rowcount``, one statement per ``execute``."""

    _sql = ""
    _dml = False
    _rowcount = -1

    def _budget_exceeded(self, exc: apsw.InterruptError) -> BaseException:
        conn = self.connection
        if isinstance(conn, Connection) and conn.budget_exhausted:
            return WorkLimitError(
                f"a statement ran past statekit's work budget ({conn.step_budget:,} SQLite steps without a result) and was"
                " stopped: the database holds a view or trigger that does not end (hostile or damaged schema)"
            )
        return exc

    def execute(self, statements: str, bindings: Any = None, **kwargs: Any) -> Cursor:
        conn = self.connection
        if isinstance(conn, Connection):
            unbounded = _UNBUDGETED_SEEN.get(statements)
            if unbounded is None:
                if len(_UNBUDGETED_SEEN) >= _CHECKED_LIMIT:
                    _UNBUDGETED_SEEN.clear()
                unbounded = _UNBUDGETED_SEEN[statements] = _UNBUDGETED.match(statements) is not None
            conn.reset_budget(unbounded=unbounded)
        try:
            return self._execute(statements, bindings, **kwargs)
        except apsw.InterruptError as exc:
            raise self._budget_exceeded(exc) from None

    def _execute(self, statements: str, bindings: Any = None, **kwargs: Any) -> Cursor:
        dml = _CHECKED.get(statements)
        if dml is None:  # first time this text runs: check it while it runs (one tracer call per statement)
            self._sql = statements
            self.exec_trace = _first_run_check
            try:
                super().execute(statements, bindings, **kwargs)
            finally:
                self.exec_trace = None
            dml = _CHECKED.get(statements, False)
        else:
            super().execute(statements, bindings, **kwargs)
        self._dml = dml
        self._rowcount = self.connection.changes() if dml else -1
        return self

    def executemany(self, statements: str, sequenceofbindings: Iterable[Any], **kwargs: Any) -> Cursor:
        """Run ``statements`` once per binding set; ``rowcount`` is the sum of the rows each run changed."""
        total = 0
        checked = False
        run = super().execute
        conn = self.connection
        changes = conn.changes
        reset = conn.reset_budget if isinstance(conn, Connection) else (lambda: None)
        for bindings in sequenceofbindings:
            if not checked:  # the first run checks the text (one statement) and learns whether it is DML
                self.execute(statements, bindings, **kwargs)
                checked = True
                total = max(self._rowcount, 0)
            else:
                reset()
                try:
                    run(statements, bindings, **kwargs)
                except apsw.InterruptError as exc:
                    raise self._budget_exceeded(exc) from None
                if self._dml:
                    total += changes()
        if not checked:  # no binding set: nothing ran (0 rows for DML, as sqlite3 says)
            self._dml = _DML.match(statements) is not None
        self._rowcount = total if self._dml else -1
        return self

    def insert_rows(self, statements: str, rows: Sequence[Any]) -> None:
        """Run one INSERT/UPDATE/DELETE for every binding set in ``rows``, with no row count (``rowcount`` unset).

        The first row runs as :meth:`execute` runs it (the text checked on its first run); the rest in
        apsw's own loop, with no Python call per row, under the budget of one statement per row.
        """
        if not rows:
            return
        self.execute(statements, rows[0])
        if len(rows) == 1:
            return
        conn = self.connection
        if isinstance(conn, Connection):
            conn.reset_budget(statements=len(rows) - 1)
        try:
            super().executemany(statements, itertools.islice(rows, 1, None))
        except apsw.InterruptError as exc:
            raise self._budget_exceeded(exc) from None
        self._rowcount = -1

    def executescript(self, statements: str) -> Cursor:
        """Run every statement of ``statements`` (results are discarded)."""
        conn = self.connection
        try:
            for _ in super().execute(statements):
                if isinstance(conn, Connection):
                    conn.reset_budget()
        except apsw.InterruptError as exc:
            raise self._budget_exceeded(exc) from None
        self._rowcount = -1
        return self

    def _row_done(self) -> None:
        conn = self.connection
        if isinstance(conn, Connection):
            conn.reset_budget()

    @property
    def rowcount(self) -> int:
        """Rows changed by the last INSERT/UPDATE/DELETE/REPLACE run through this cursor (-1 for other statements)."""
        return self._rowcount

    def __next__(self) -> Any:
        try:
            row = super().__next__()
        except UnicodeDecodeError as exc:
            raise _decode_failure(exc) from None
        except apsw.InterruptError as exc:
            raise self._budget_exceeded(exc) from None
        self._row_done()
        return row

    def fetchone(self) -> Any:
        try:
            row = super().fetchone()
        except UnicodeDecodeError as exc:
            raise _decode_failure(exc) from None
        except apsw.InterruptError as exc:
            raise self._budget_exceeded(exc) from None
        self._row_done()
        return row

    def fetchall(self) -> list[Any]:
        self._row_done()  # one budget for the rest of the result (a result too large to hold fails on memory first)
        try:
            return super().fetchall()
        except UnicodeDecodeError as exc:
            raise _decode_failure(exc) from None
        except apsw.InterruptError as exc:
            raise self._budget_exceeded(exc) from None


class Connection(apsw.Connection):
    """A connection through statekit's engine. Autocommit: transactions are explicit (``BEGIN IMMEDIATE``...)."""

    def __init__(
        self, filename: str, flags: int, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS, *, untrusted: bool = False
    ) -> None:
        super().__init__(filename, flags=flags)
        # What a caller read of the schema (the writer's columns, cascade edges), keyed by its own version check.
        # A rollback can bring back an earlier schema under the same ``schema_version`` number: it empties the slot.
        self.schema_cache: Any = None
        self.set_rollback_hook(self._forget_schema_cache)
        self.step_budget = FOREIGN_STEP_BUDGET if untrusted else STATEMENT_STEP_BUDGET
        self._steps_left = self.step_budget
        self._harden(untrusted)
        self.cursor_factory = Cursor  # execute/executemany/cursor() of the connection go through Cursor below
        self.convert_binding = _convert_binding
        self.set_busy_timeout(busy_timeout_ms)
        # Deleted rows are overwritten, not left in free pages: the OS library Python's sqlite3 used
        # (Debian's) is built with SECURE_DELETE, apsw's bundled one is not. Touches no file here.
        self.execute("PRAGMA secure_delete = ON")

    def _harden(self, untrusted: bool) -> None:
        """What a hostile schema could use, switched off before the schema is read (see the module doc)."""
        self.config(apsw.SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0)
        self.config(apsw.SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0)
        if untrusted:  # reading only: no view is evaluated, no trigger fires
            self.config(apsw.SQLITE_DBCONFIG_ENABLE_VIEW, 0)
            self.config(apsw.SQLITE_DBCONFIG_ENABLE_TRIGGER, 0)
        for limit, value in LIMITS.items():
            self.limit(limit, value)
        self.set_progress_handler(self._progress, PROGRESS_INTERVAL)

    def _forget_schema_cache(self) -> None:
        self.schema_cache = None

    def _progress(self) -> bool:
        self._steps_left -= PROGRESS_INTERVAL
        return self._steps_left < 0  # True interrupts the statement

    def reset_budget(self, unbounded: bool = False, statements: int = 1) -> None:
        """A new statement, or a row handed back: the statement's budget starts again (``unbounded``: see the budget's doc).

        ``statements``: that many runs of one statement in one call (:meth:`Cursor.insert_rows`), a budget each.
        """
        self._steps_left = 1 << 62 if unbounded else self.step_budget * statements

    @property
    def budget_exhausted(self) -> bool:
        return self._steps_left < 0

    if TYPE_CHECKING:  # cursor_factory makes every cursor a Cursor: say so to the type checker
        def cursor(self) -> Cursor: ...

        def execute(self, statements: str, bindings: Any = None, **kwargs: Any) -> Cursor: ...

    def executescript(self, statements: str) -> Cursor:
        cursor: Cursor = self.cursor()
        return cursor.executescript(statements)

    @property
    def total_changes(self) -> int:  # type: ignore[override]
        """Rows changed since the connection opened, triggers included (an attribute, as in sqlite3)."""
        return int(super().total_changes())

    def commit(self) -> None:
        """Commit the open transaction, if any (there is none unless the caller began one)."""
        if self.in_transaction:
            self.execute("COMMIT")


def connect(
    path: Path | str,
    *,
    mode: str = "rwc",
    immutable: bool = False,
    busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    untrusted: bool | None = None,
) -> Connection:
    """Open ``path`` through the engine, with no PRAGMA applied (see :func:`open_rw` for statekit's own databases).

    ``mode``: ``rwc`` read-write, created when missing; ``rw`` read-write, must
    exist; ``ro`` read-only. ``immutable``: the file is promised not to change
    (no locks, no ``-wal``/``-shm``), for read-only snapshots and views.
    ``":memory:"`` opens a private in-memory database. ``untrusted`` (default:
    read-only opens): a database statekit only reads, from a state dir or an
    archive; views and triggers off, the smaller work budget.
    """
    if mode not in ("rwc", "rw", "ro"):
        raise ValueError(f"unknown open mode {mode!r}")
    flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI
    foreign = mode == "ro" if untrusted is None else untrusted
    if str(path) == ":memory:":
        return Connection(":memory:", flags, busy_timeout_ms, untrusted=foreign)
    uri = f"{Path(path).resolve().as_uri()}?mode={mode}"
    if immutable:
        uri += "&immutable=1"
    return Connection(uri, flags, busy_timeout_ms, untrusted=foreign)


def online_backup(source: Connection, dest: Connection) -> None:
    """Copy the whole ``main`` database of ``source`` into ``dest`` (SQLite's online backup API)."""
    with dest.backup("main", source, "main") as backup:
        backup.step(-1)


# ---------------------------------------------------------------------------- statekit's databases


def is_sqlite_file(path: Path) -> bool:
    """True when ``path`` starts with the SQLite file header (found by content, not by name)."""
    try:
        return read_prefix(path, len(SQLITE_HEADER)) == SQLITE_HEADER  # a FIFO or device is not a database
    except OSError:
        return False


def _apply_pragmas(conn: Connection) -> None:
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")


def harden_modes(path: Path, warnings: list[str] | None = None) -> None:
    """0600 on the database and its -wal/-shm sidecars (best effort)."""
    for candidate in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        if candidate.exists():
            chmod_best_effort(candidate, PRIVATE_FILE_MODE, warnings)


def open_rw(path: Path, warnings: list[str] | None = None, *, inside: Path | None = None) -> Connection:
    """Open (creating if needed) a database for writing with statekit's PRAGMAs.

    Parent directories that do not exist are created 0700; the file and its
    sidecars are made 0600. Transactions are explicit (autocommit mode).
    ``inside``: the tree the database must stay in (the state dir): a
    symlinked directory, database or ``-wal`` leading out of it is refused
    (:class:`statekit.fsutil.UnsafePathError`) before anything is created.
    The database file itself is never opened through a symlink.
    """
    if inside is not None:
        ensure_inside(path, inside, database=True)
    ensure_private_dir(path.parent, warnings)
    if not os.path.lexists(path):
        # Create the file ourselves so it never exists with a wider mode (and, under root, has its dir's owner).
        try:
            os.close(create_file(path, PRIVATE_FILE_MODE))
        except FileExistsError:
            pass  # created meanwhile: opened below like any existing database
    else:
        problem = file_kind_problem(path)  # a symlink, FIFO, socket, device or directory: never opened (a FIFO would hang)
        if problem:  # a database error, not a source's: the run stops and names what is there (migrate.apply.database_failure)
            raise NotADatabaseFile(f"{path}: {problem.replace('expected a regular file', 'expected a SQLite database file')}")
    conn = connect(path, busy_timeout_ms=BUSY_TIMEOUT_MS)
    try:
        _apply_pragmas(conn)
    except BaseException:
        conn.close()
        raise
    harden_modes(path, warnings)
    return conn


@contextmanager
def immediate(conn: Connection) -> Iterator[Connection]:
    """A ``BEGIN IMMEDIATE`` write transaction: commit when the block ends, roll back on any error.

    Any error means any ``BaseException`` (``KeyboardInterrupt`` too), raised in the block or by the
    ``COMMIT`` itself; it is re-raised after the rollback. When SQLite has already rolled the
    transaction back (a full disk does that), no ``ROLLBACK`` is sent, so the real error is the one
    that surfaces. statekit's write transactions begin here (tests/core/test_transactions.py keeps
    hand-written ``BEGIN IMMEDIATE`` out of the other modules).
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def table_columns(conn: Connection, table: str, schema: str = "main") -> list[str]:
    return [row[1] for row in conn.execute(f'PRAGMA "{schema}".table_info("{table}")')]


def table_names(conn: Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _refuse_non_regular(path: Path) -> None:
    """A FIFO or device where a database (or its -wal) should be is an error, never opened: SQLite would block on it."""
    try:
        st = os.stat(path)
    except OSError:
        return  # missing: SQLite says so itself
    problem = file_kind_problem(path, st)
    if problem:
        raise NotADatabaseFile(f"{path}: {problem.replace('expected a regular file', 'expected a SQLite database file')}")


@contextmanager
def read_only_view(path: Path) -> Iterator[Connection]:
    """Read a database without writing a single byte next to it.

    A plain read-only open of a WAL database creates ``-wal``/``-shm`` files.
    When no WAL content is pending the file is opened ``immutable`` (no
    locks, no sidecars); when a ``-wal`` exists, the database and its WAL
    are copied to a private temp dir and read there.
    """
    _refuse_non_regular(path)
    wal = Path(f"{path}-wal")
    if wal.exists() and wal.stat().st_size > 0:
        _refuse_non_regular(wal)
        with tempfile.TemporaryDirectory(prefix="statekit-ro-") as tmp:
            copy = Path(tmp) / "view.sqlite"
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, Path(f"{copy}-wal"))
            conn = connect(copy, untrusted=True)
            try:
                yield conn
            finally:
                conn.close()
        return
    conn = connect(path, mode="ro", immutable=True)
    try:
        yield conn
    finally:
        conn.close()
