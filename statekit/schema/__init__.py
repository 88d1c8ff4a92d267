"""Create and check the two database levels (docs/target-schema.md).

Existing databases are opened, never rewritten: a table that already exists
(OpenClaw 2026.6.x-2026.7.x wrote many) is left exactly as it is; only the
tables statekit needs and that are missing are created, together with their
indexes. A database whose ``user_version`` is newer than ours is refused.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from statekit import __version__
from statekit.db import Connection, connect, immediate, open_rw, read_only_view, table_columns, table_names
from statekit.errors import SchemaError
from statekit.layout import agent_db_path, global_db_path

SCHEMA_VERSION = 1
PLAN_SCHEMA_NAME = "plan.schema.json"  # the `statekit plan --json` format, package data (docs/plan.schema.json links here)
ROLE_GLOBAL = "global"
ROLE_AGENT = "agent"

_TABLE_RE = re.compile(r"^CREATE TABLE IF NOT EXISTS (\w+)", re.I)
_PART_2_MARKER = "\n-- Part 2"
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
    from_release: bool  # part 1 of the file: what OpenClaw 2026.7.35 wrote (docs/schema.md)


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
    release_part, marker, rest = text.partition(_PART_2_MARKER)
    later_parts = marker + rest  # the marker line is a comment
    result: list[Statement] = []
    for part, from_release in ((release_part, True), (later_parts, False)):
        for sql in _split_sql(part):
            table = _TABLE_RE.search(sql)
            if table:
                result.append(Statement(sql, table.group(1), True, from_release))
                continue
            owner = next((m for m in (r.search(sql) for r in _DEPENDENT_RES) if m), None)
            if owner is None:
                raise AssertionError(f"unrecognised schema statement: {sql[:60]}")
            result.append(Statement(sql, owner.group(1), False, from_release))
    return tuple(result)


def declared_tables(role: str) -> list[str]:
    return [s.table for s in _statements(role) if s.is_table]


# Columns OpenClaw 2026.9.6's upgrade adds to version-1 release tables (``ALTER TABLE ... ADD COLUMN``),
# which a reader adds only when a legacy value needs one (legacy_readers/_later_columns.py says where
# each comes from): (table, column) -> declared type, in the order 9.6 adds them. A release table with
# some of them is still canonical.
LATER_COLUMNS: dict[tuple[str, str], str] = {
    ("apns_registrations", "relay_origin"): "TEXT",
    ("device_pairing_pending", "refreshed_at_ms"): "INTEGER",
    ("device_pairing_pending", "browser_origin"): "TEXT",
    ("device_pairing_paired", "approved_via"): "TEXT",
    ("device_pairing_paired", "browser_origin"): "TEXT",
    ("device_pairing_paired", "operator_label"): "TEXT",
    ("device_pairing_paired", "node_surface_json"): "TEXT",
    ("device_pairing_paired", "pending_node_surface_json"): "TEXT",
    # Read by the v12 fold-in of node_host_config when present.
    ("node_host_config", "gateway_context_path"): "TEXT",
    ("node_host_config", "gateway_cloudflare_access_json"): "TEXT",
    ("node_host_config", "installed_apps_sharing"): "INTEGER",
}


def _table_facts(conn: Connection, table: str) -> tuple[tuple[Any, ...], bool]:
    """(columns as (name, type, not null, default, pk position), STRICT) of one table."""
    columns = tuple((r[1], str(r[2] or "").upper(), r[3], r[4], r[5]) for r in conn.execute(f'PRAGMA table_info("{table}")'))
    listed = conn.execute("SELECT strict FROM pragma_table_list WHERE schema = 'main' AND name = ?", (table,)).fetchone()
    return columns, bool(listed and listed[0])


def _unique_indexes(conn: Connection, table: str) -> dict[str, tuple[Any, ...]]:
    """Explicit unique indexes of a table: name -> (key columns or expressions, partial)."""
    found: dict[str, tuple[Any, ...]] = {}
    for _seq, name, unique, origin, partial in conn.execute(f'PRAGMA index_list("{table}")'):
        if unique and origin == "c":
            keys = tuple(r[2] for r in conn.execute(f'PRAGMA index_xinfo("{name}")') if r[5])
            found[name] = (keys, partial)
    return found


@lru_cache(maxsize=None)
def _canonical_facts(role: str) -> dict[str, tuple[tuple[Any, ...], bool, dict[str, tuple[Any, ...]], bool]]:
    """table -> (columns, STRICT, unique indexes, from the release part)."""
    conn = connect(":memory:")
    try:
        conn.executescript("\n".join(f"{s.sql};" for s in _statements(role)))
        release = {s.table for s in _statements(role) if s.is_table and s.from_release}
        return {t: (*_table_facts(conn, t), _unique_indexes(conn, t), t in release) for t in declared_tables(role)}
    finally:
        conn.close()


def _column_difference(table: str, have: tuple[Any, ...], want: tuple[Any, ...], from_release: bool) -> str | None:
    """One line naming the columns that differ, or None.

    An earlier version-1 release wrote some release tables narrower
    (2026.6.x: fewer ``cron_jobs`` and ``task_runs`` columns); that is its
    canonical form too (9.6's upgrade adds the columns), so for release tables
    missing columns alone are no difference.
    """
    wanted = {c[0]: c for c in want}
    if from_release:  # a later column 9.6 itself adds, appended with its own declaration
        have = tuple(c for c in have if not (c[0] not in wanted and LATER_COLUMNS.get((table, c[0])) == c[1] and not c[2] and c[3] is None))
    extra = [c[0] for c in have if c[0] not in wanted]
    present = {c[0] for c in have}
    missing = [c[0] for c in want if c[0] not in present]
    changed = [c[0] for c in have if c[0] in wanted and c != wanted[c[0]]]
    if from_release and not extra and not changed and [c for c in want if c[0] in present] == list(have):
        return None
    if have == want:
        return None
    parts = (f"extra {', '.join(extra)}" if extra else "", f"missing {', '.join(missing)}" if missing else "",
             f"type, NOT NULL, default or key of {', '.join(changed)}" if changed else "")
    return f"table {table}: column definitions differ ({'; '.join(p for p in parts if p) or 'column order'})"


def canonical_differences(conn: Connection, role: str) -> list[str]:
    """How a version-1 database differs from the canonical layout statekit writes (docs/schema.md).

    One line per difference: a missing table, a table whose columns or STRICT
    option differ, a unique index the canonical layout does not have (OpenClaw
    2026.9.6 refuses those) or lacks. Tables the layout does not declare are
    allowed (9.6 allows unrelated tables); release tables an earlier version-1
    release did not create or wrote narrower are allowed too (9.6's upgrade
    creates and widens them). Empty when canonical.
    """
    differences: list[str] = []
    present = table_names(conn)
    for table, (columns, strict, uniques, from_release) in _canonical_facts(role).items():
        if table not in present:
            if not from_release:
                differences.append(f"missing table {table}")
            continue
        have_columns, have_strict = _table_facts(conn, table)
        line = _column_difference(table, have_columns, columns, from_release)
        if line:
            differences.append(line)
        if have_strict != strict:
            differences.append(f"table {table}: table options differ ({'STRICT' if strict else 'not STRICT'} expected)")
        have_uniques = _unique_indexes(conn, table)
        for name in sorted(set(have_uniques) - set(uniques)):
            differences.append(f"table {table}: unexpected unique index {name}")
        for name in sorted(set(uniques) - set(have_uniques)):
            differences.append(f"table {table}: missing unique index {name}")
        for name in sorted(set(uniques) & set(have_uniques)):
            if uniques[name] != have_uniques[name]:
                differences.append(f"table {table}: unique index {name} differs")
    return differences


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
    with immediate(conn):
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
    return report


def precheck(path: Path) -> None:
    """Refuse a too-new or foreign database before opening it for writing (which would switch it to WAL)."""
    if path.exists() and path.stat().st_size > 0:
        with read_only_view(path) as conn:
            check_version(conn, path)


def open_global(state_dir: Path, warnings: list[str] | None = None) -> tuple[Connection, SchemaReport]:
    path = global_db_path(state_dir)
    precheck(path)
    conn = open_rw(path, warnings, inside=state_dir)
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
    conn = open_rw(path, warnings, inside=state_dir)
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


def plan_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of ``statekit plan --json``, as installed with the package."""
    loaded: dict[str, Any] = json.loads(resources.files(__name__).joinpath(PLAN_SCHEMA_NAME).read_text(encoding="utf-8"))
    return loaded
