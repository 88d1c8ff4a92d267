"""The reader interface: one subclass of :class:`Reader` per legacy source family.

A reader declares what it claims (``patterns``), what its input must look
like (``schema_name``: a JSON Schema under ``legacy_readers/schemas``), which
tables it writes (``target_tables``) and what happens to the file
(``action``). It implements two steps:

* :meth:`Reader.inspect` (plan, read-only): count records and notice
  problems cheaply; raise :class:`SourceError` for an unreadable source.
* :meth:`Reader.write` (apply): parse, validate, transform and write rows
  through the :class:`ImportContext`; return what was written so the apply
  loop can validate the rows after commit.

The apply loop owns transactions, receipts and retirement: a reader never
commits, never writes another family's tables and never touches a file it
does not claim.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, ClassVar

from statekit.db import Connection, table_columns
from statekit.errors import SchemaError, SourceError
from statekit.layout import DEFAULT_AGENT_ID, is_valid_agent_id, normalize_agent_id

ACTIONS = ("import", "import+archive", "drop", "deferred", "retain")


@dataclass(frozen=True)
class Source:
    """One legacy file: where it is and which agent owns it."""

    state_dir: Path
    rel: str  # POSIX path relative to the state dir
    agent_id: str | None = None

    @property
    def path(self) -> Path:
        return self.state_dir.joinpath(*PurePosixPath(self.rel).parts)


@dataclass
class Inspection:
    """What the plan learns about a source without writing anything."""

    record_count: int
    warnings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    # A reader may decide, for this one file, not to import it: "retain" (kept in place on purpose)
    # or "drop" (retired without rows). ``reason`` says why, in one line.
    action: str | None = None
    reason: str | None = None


@dataclass
class WriteResult:
    """What a reader wrote: ``expected`` maps ``db.table`` to (where-clause, params, row count) for validation."""

    records: int
    expected: list[tuple[str, str, str, tuple[Any, ...], int]] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # informational lines (repairs, skipped duplicates)
    warnings: list[str] = field(default_factory=list)  # something could not be imported: the run ends "warning", exit 3
    report: dict[str, Any] = field(default_factory=dict)

    def expect(self, db: str, table: str, where: str, params: Sequence[Any], count: int) -> None:
        """Record that after commit ``SELECT count(*) FROM table WHERE where`` must be >= count.

        ``db`` is ``"global"``, ``"agent"`` (the source's agent) or ``"agent:<id>"``.
        """
        self.expected.append((db, table, where, tuple(params), count))


class ImportContext:
    """The open transaction(s) a reader writes through.

    ``global_db`` is already inside ``BEGIN IMMEDIATE``. ``agent_db(id)``
    opens (creating if needed) that agent's database and begins a
    transaction on it lazily. The apply loop commits or rolls back.
    """

    def __init__(
        self,
        state_dir: Path,
        run_id: str,
        now_ms: int,
        global_db: Connection,
        agent_db_factory: Callable[[str], Connection],
        config: Mapping[str, Any] | None = None,
        run_cache: dict[Any, Any] | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.run_id = run_id
        self.now_ms = now_ms
        self.global_db = global_db
        self._agent_db_factory = agent_db_factory
        self.config = config or {}
        self.touched_agents: dict[str, Connection] = {}
        self._run_cache = {} if run_cache is None else run_cache

    def run_cached(self, key: Any, compute: Callable[[], Any]) -> Any:
        """A value computed once per migrate run (facts earlier sources of the run settled, read once)."""
        if key not in self._run_cache:
            self._run_cache[key] = compute()
        return self._run_cache[key]

    def agent_db(self, agent_id: str) -> Connection:
        conn = self.touched_agents.get(agent_id)
        if conn is None:
            conn = self._agent_db_factory(agent_id)
            conn.execute("BEGIN IMMEDIATE")
            self.touched_agents[agent_id] = conn
        return conn

    def dependency_pending(self, rel: str) -> bool:
        """True while the source ``rel`` (imported earlier in plan order) is still waiting for its rows.

        A dependency is satisfied when its current file version has a
        ``completed`` receipt (it may still be on disk if its retirement
        failed), or when the file is gone (retired by an earlier run).
        Readers call this instead of testing whether the file exists.
        """
        path = self.state_dir / rel
        if not os.path.lexists(path):
            return False
        from statekit.fsutil import HashingReader, open_regular_file  # local: base stays light for the plan

        try:
            with open_regular_file(path) as handle:  # never blocks on a FIFO, never follows a link
                digest = HashingReader(handle).finish()
        except OSError:
            return True  # a FIFO, link or unreadable file is no imported dependency
        row = self.global_db.execute(
            "SELECT 1 FROM migration_sources WHERE source_path = ? AND source_sha256 = ? AND status = 'completed' LIMIT 1",
            (rel, digest),
        ).fetchone()
        return row is None

    def db(self, name: str, agent_id: str | None = None) -> Connection:
        if name == "global":
            return self.global_db
        if agent_id is None:
            raise ValueError("agent_id is required for the agent database")
        return self.agent_db(agent_id)


# --- SQL helpers -----------------------------------------------------------

# id(conn) -> (conn, {table: columns}). Holding the connection keeps its id from being reused
# by another connection while the entry exists; the apply loop forgets a connection before closing it.
_columns_cache: dict[int, tuple[Connection, dict[str, set[str]]]] = {}


def require_columns(conn: Connection, table: str, columns: Iterable[str]) -> None:
    """Refuse to write into an existing table that lacks a column statekit needs."""
    entry = _columns_cache.get(id(conn))
    if entry is None or entry[0] is not conn:
        entry = (conn, {})
        _columns_cache[id(conn)] = entry
    have = entry[1].get(table)
    if have is None:
        have = set(table_columns(conn, table))
        entry[1][table] = have
    if not have:
        raise SchemaError(f"table {table} does not exist")
    missing = [c for c in columns if c not in have]
    if missing:
        raise SchemaError(
            f"existing table {table} lacks column(s) {', '.join(missing)} that statekit writes; it was left unaltered"
        )


def forget_columns(conn: Connection) -> None:
    entry = _columns_cache.get(id(conn))
    if entry is not None and entry[0] is conn:
        del _columns_cache[id(conn)]


def upsert(
    conn: Connection,
    table: str,
    row: Mapping[str, Any],
    key: Sequence[str],
    *,
    update: bool | Sequence[str] = True,
    where: str | None = None,
) -> None:
    """INSERT ... ON CONFLICT(key) DO UPDATE (never REPLACE: a REPLACE would cascade-delete children).

    ``update=False`` keeps an existing row; a sequence names the columns to
    update; ``where`` guards the update (for "newer wins" merges), written
    against ``excluded`` and the table's current row.
    """
    columns = list(row)
    require_columns(conn, table, columns)
    placeholders = ", ".join("?" for _ in columns)
    sql = f'INSERT INTO "{table}" ({", ".join(columns)}) VALUES ({placeholders})'
    if update is False:
        sql += f" ON CONFLICT({', '.join(key)}) DO NOTHING"
    else:
        names = [c for c in (columns if update is True else update) if c not in key]
        if names:
            sets = ", ".join(f"{c} = excluded.{c}" for c in names)
            sql += f" ON CONFLICT({', '.join(key)}) DO UPDATE SET {sets}"
            if where:
                sql += f" WHERE {where}"
        else:
            sql += f" ON CONFLICT({', '.join(key)}) DO NOTHING"
    conn.execute(sql, [row[c] for c in columns])


def insert_many(conn: Connection, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    require_columns(conn, table, columns)
    placeholders = ", ".join("?" for _ in columns)
    cursor = conn.executemany(f'INSERT INTO "{table}" ({", ".join(columns)}) VALUES ({placeholders})', rows)
    return cursor.rowcount


# --- input helpers ---------------------------------------------------------
# Moved to statekit.documents / statekit.values; re-exported for the readers that still import them from here.

from statekit.documents import (  # noqa: E402
    decode_utf8,
    describe_validation_error,
    json_type,
    load_schema,
    parse_json5_document,
    parse_json_document,
    parse_json_line,
    validate,
)
from statekit.documents import validator as _validator  # noqa: E402
from statekit.values import finite_number  # noqa: E402
from statekit.values import integer as as_int  # noqa: E402


def compact_json(value: Any) -> str:
    """JSON text as JavaScript's JSON.stringify writes it (no spaces, non-ASCII kept)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def fingerprint(value: str) -> str:
    """A short, non-reversible fingerprint for receipts (never the secret itself)."""
    return "sha256:" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:16]


def agent_id_from_rel(rel: str) -> str | None:
    """``agents/<id>/...`` -> normalised id; flat ``sessions/`` -> the default agent; else None."""
    parts = PurePosixPath(rel).parts
    if len(parts) >= 3 and parts[0] == "agents":
        agent = normalize_agent_id(parts[1])
        return agent if is_valid_agent_id(agent) else None
    if parts and parts[0] in ("sessions", "agent"):
        return DEFAULT_AGENT_ID
    return None


def match_patterns(rel: str, patterns: Sequence[str]) -> bool:
    """Glob match where ``*`` stays inside one path segment and ``**`` spans segments."""
    return any(_compile_pattern(p).match(rel) for p in patterns)


@lru_cache(maxsize=None)
def _compile_pattern(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("^" + "".join(out) + "$")


class Reader:
    """Base class for one legacy source family. Subclasses set the ClassVars and override the steps."""

    kind: ClassVar[str]
    family: ClassVar[str] = ""
    description: ClassVar[str] = ""
    patterns: ClassVar[tuple[str, ...]] = ()
    exclude: ClassVar[tuple[str, ...]] = ()
    # Patterns relative to a workspace root (``workspace/``, ``workspace-*/``): discovery does not walk
    # workspaces (user content) but probes these paths inside each one. Matches are also tested
    # against ``patterns`` with the workspace prefix, so list them in both.
    workspace_patterns: ClassVar[tuple[str, ...]] = ()
    schema_name: ClassVar[str | None] = None
    target_tables: ClassVar[tuple[str, ...]] = ()
    action: ClassVar[str] = "import"
    reason: ClassVar[str | None] = None  # why a drop/deferred/retain source is not imported
    # Kinds this reader must come after in plan order (it reads their rows or receipts, or lets them claim first).
    depends_on: ClassVar[tuple[str, ...]] = ()
    order: ClassVar[int] = 100  # set by the registry: the reader's position in plan order (smaller first)

    def claims(self, rel: str) -> bool:
        return match_patterns(rel, self.patterns) and not match_patterns(rel, self.exclude)

    def agent_for(self, rel: str) -> str | None:
        return agent_id_from_rel(rel)

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        """Plan step: count records; raise SourceError when unreadable. Must not write anything."""
        raise NotImplementedError

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        """Apply step: parse, validate, transform and write rows through ``ctx``."""
        raise NotImplementedError

    @classmethod
    def schema(cls) -> dict[str, Any] | None:
        return load_schema(cls.schema_name) if cls.schema_name else None

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "family": self.family,
            "description": self.description,
            "patterns": list(self.patterns),
            "target_tables": list(self.target_tables),
            "action": self.action,
            "reason": self.reason,
            "schema": self.schema_name,
        }
