"""Create and check the two database levels (docs/target-schema.md).

Existing databases are opened, never rewritten: a table that already exists
(OpenClaw 2026.6.x-2026.7.x wrote many) is left exactly as it is; only the
tables statekit needs and that are missing are created, together with their
indexes. A database whose ``user_version`` is newer than ours is refused.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from statekit import __version__
from statekit.db import Connection, open_rw, read_only_view, table_columns, table_names
from statekit.errors import SchemaError
from statekit.layout import agent_db_path, global_db_path

SCHEMA_VERSION = 1
ROLE_GLOBAL = "global"
ROLE_AGENT = "agent"

_TABLE_RE = re.compile(r"^CREATE TABLE IF NOT EXISTS (\w+)", re.I)
# statements that belong to a table: run only when statekit creates that table
_DEPENDENT_RES = (
    re.compile(r"^CREATE (?:UNIQUE )?INDEX IF NOT EXISTS \w+\s+ON (\w+)", re.I),
    re.compile(r"^CREATE TRIGGER IF NOT EXISTS \w+\s+(?:BEFORE|AFTER|INSTEAD OF)\s+\w+(?:\s+OF\s+[\w, ]+?)?\s+ON (\w+)", re.I),
    re.compile(r"^INSERT OR IGNORE INTO (\w+)", re.I),  # a seed row the release inserts
)


@dataclass(frozen=True)
class Statement:
    sql: str
    table: str
    is_table: bool


@dataclass
class SchemaReport:
    path: Path
    role: str
    created: bool  # the file was new
    created_tables: list[str] = field(default_factory=list)
    existing_tables: list[str] = field(default_factory=list)


def _split_sql(text: str) -> list[str]:
    """Statements of a schema file: split at ``;``, a trigger body (``BEGIN ... END;``) kept whole."""
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    statements: list[str] = []
    pending = ""
    for chunk in text.split(";"):
        pending = f"{pending};{chunk}" if pending else chunk
        sql = pending.strip()
        if sql.upper().startswith("CREATE TRIGGER") and not re.search(r"\bEND$", sql, re.I):
            continue
        if sql:
            statements.append(sql)
        pending = ""
    if pending.strip():
        raise AssertionError(f"unterminated schema statement: {pending.strip()[:60]}")
    return statements


@lru_cache(maxsize=None)
def _statements(role: str) -> tuple[Statement, ...]:
    text = resources.files(__package__).joinpath(f"{role}.sql").read_text(encoding="utf-8")
    result: list[Statement] = []
    for sql in _split_sql(text):
        table = _TABLE_RE.search(sql)
        if table:
            result.append(Statement(sql, table.group(1), True))
            continue
        owner = next((m for m in (r.search(sql) for r in _DEPENDENT_RES) if m), None)
        if owner is None:
            raise AssertionError(f"unrecognised schema statement: {sql[:60]}")
        result.append(Statement(sql, owner.group(1), False))
    return tuple(result)


def declared_tables(role: str) -> list[str]:
    return [s.table for s in _statements(role) if s.is_table]


def check_version(conn: Connection, path: Path) -> int:
    """Return the database's user_version; refuse one that is newer or foreign."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"{path}: database schema version {version} is newer than statekit supports ({SCHEMA_VERSION}); "
            "it was left untouched (use a newer statekit or OpenClaw's own doctor)"
        )
    if version == 0 and table_names(conn) - {"sqlite_sequence"}:
        raise SchemaError(f"{path}: database has tables but no schema version (user_version 0); not an OpenClaw database, left untouched")
    return version


def ensure_schema(conn: Connection, path: Path, role: str, agent_id: str | None, now_ms: int | None = None) -> SchemaReport:
    """Create missing tables (and their indexes) and the ``schema_meta`` row, in one transaction."""
    version = check_version(conn, path)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    report = SchemaReport(path=path, role=role, created=version == 0)
    conn.execute("BEGIN IMMEDIATE")
    try:
        existing = table_names(conn)
        created_now: set[str] = set()
        for statement in _statements(role):
            if statement.is_table:
                if statement.table in existing:
                    report.existing_tables.append(statement.table)
                    continue
                conn.execute(statement.sql)
                created_now.add(statement.table)
                report.created_tables.append(statement.table)
            elif statement.table in created_now:
                conn.execute(statement.sql)
        if version == 0:
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        meta_columns = set(table_columns(conn, "schema_meta"))
        needed = {"meta_key", "role", "schema_version", "agent_id", "app_version", "created_at", "updated_at"}
        if not needed <= meta_columns:
            raise SchemaError(f"{path}: existing schema_meta table lacks columns {sorted(needed - meta_columns)}; left untouched")
        conn.execute(
            "INSERT OR IGNORE INTO schema_meta(meta_key, role, schema_version, agent_id, app_version, created_at, updated_at)"
            " VALUES ('primary', ?, ?, ?, ?, ?, ?)",
            (role, SCHEMA_VERSION, agent_id, f"statekit {__version__}", now_ms, now_ms),
        )
        row = conn.execute("SELECT role, agent_id FROM schema_meta WHERE meta_key = 'primary'").fetchone()
        if row[0] != role or (role == ROLE_AGENT and row[1] not in (None, agent_id)):
            raise SchemaError(f"{path}: schema_meta says role {row[0]!r} agent {row[1]!r}, expected {role!r} {agent_id!r}; left untouched")
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # SQLite may already have rolled back (disk full); keep the real error
            conn.execute("ROLLBACK")
        raise
    return report


def precheck(path: Path) -> None:
    """Refuse a too-new or foreign database before opening it for writing (which would switch it to WAL)."""
    if path.exists() and path.stat().st_size > 0:
        with read_only_view(path) as conn:
            check_version(conn, path)


def open_global(state_dir: Path, warnings: list[str] | None = None) -> tuple[Connection, SchemaReport]:
    path = global_db_path(state_dir)
    precheck(path)
    conn = open_rw(path, warnings)
    try:
        report = ensure_schema(conn, path, ROLE_GLOBAL, None)
    except BaseException:
        conn.close()
        raise
    return conn, report


def open_agent(
    state_dir: Path, agent_id: str, global_conn: Connection | None, warnings: list[str] | None = None
) -> tuple[Connection, SchemaReport]:
    """Open or create an agent database and register it in ``agent_databases``."""
    path = agent_db_path(state_dir, agent_id)
    precheck(path)
    conn = open_rw(path, warnings)
    try:
        report = ensure_schema(conn, path, ROLE_AGENT, agent_id)
    except BaseException:
        conn.close()
        raise
    if global_conn is not None:
        register_agent_database(global_conn, agent_id, path)
    return conn, report


def register_agent_database(global_conn: Connection, agent_id: str, path: Path, now_ms: int | None = None) -> None:
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    size = path.stat().st_size if path.exists() else None
    global_conn.execute(
        "INSERT INTO agent_databases(agent_id, path, schema_version, last_seen_at, size_bytes) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT(agent_id, path) DO UPDATE SET last_seen_at = excluded.last_seen_at, size_bytes = excluded.size_bytes",
        (agent_id, str(path), SCHEMA_VERSION, now_ms, size),
    )
