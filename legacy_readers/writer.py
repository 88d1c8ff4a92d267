"""The one boundary between readers and the databases.

A reader turns a legacy source into rows; the :class:`Writer` the apply loop
hands it (``ctx.writer``) turns rows into SQL. A reader never holds a raw
connection. ``ctx.writer.state`` is the state (global) database,
``ctx.writer.agent(agent_id)`` an agent's database; both are
:class:`DatabaseWriter` objects with a few operations:

* :meth:`DatabaseWriter.upsert` (key, update columns, a where-guard),
  :meth:`DatabaseWriter.newer_wins` (update only when a timestamp is newer),
  :meth:`DatabaseWriter.insert` / :meth:`DatabaseWriter.insert_many`,
  :meth:`DatabaseWriter.replace_owned` (delete what a source owns, insert it again),
  :meth:`DatabaseWriter.delete` and :meth:`DatabaseWriter.update` (equality
  where-clauses given as mappings);
* read-only look-ups: :meth:`DatabaseWriter.select`, ``first``, ``exists``,
  ``count`` and :meth:`DatabaseWriter.query` for the few joins a reader needs.

Every row goes through :meth:`DatabaseWriter.fit`, the one place that fits
rows to the table that is there (statekit's canonical table, a wider
hybrid-era table, a table of an older release lacking a later column).
``dict``/``list`` values and :class:`Json` values are written as JavaScript's
``JSON.stringify`` writes them (OpenClaw reads what JavaScript wrote).

What a source wrote is remembered, so the apply loop validates the rows
after commit without the reader writing SQL (:meth:`Writer.expectations`).
While a reader writes, the apply loop installs a :class:`Guard` (an SQLite
authorizer) on every connection: a write or DDL to a table outside the
reader's ``target_tables``, or any read of statekit's own bookkeeping tables,
fails with a :class:`~statekit.errors.SchemaError` naming reader and table.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

import apsw

from statekit.db import Connection
from statekit.errors import SchemaError, ValueRangeError, int64_overflow_message
from statekit.schema import LATER_COLUMNS
from statekit.values import iso_to_ms, js_json, ms_to_iso

# statekit's own tables: the apply loop's receipts and run history. No reader reads or writes them.
BOOKKEEPING_TABLES = frozenset({"migration_sources", "migration_runs"})

Where = Mapping[str, Any]


@dataclass(frozen=True)
class Json:
    """A value to store as JSON text (``JSON.stringify``'s bytes): for scalars and ``None`` that mean JSON."""

    value: Any


def _bind(value: Any) -> Any:
    if isinstance(value, Json):
        return js_json(value.value)
    if isinstance(value, (dict, list)):
        return js_json(value)
    return value


@dataclass(frozen=True)
class Column:
    name: str
    declared: str  # declared type, upper case
    not_null: bool
    pk: int  # position in the primary key, 0 when not part of it

    @property
    def is_text(self) -> bool:
        return "CHAR" in self.declared or "TEXT" in self.declared or "CLOB" in self.declared


@dataclass(frozen=True)
class Expectation:
    """After commit, ``SELECT count(*) FROM table WHERE where`` must be >= ``count`` in database ``db``."""

    db: str  # "global" or "agent:<id>"
    table: str
    where: str
    params: tuple[Any, ...]
    count: int

    def as_tuple(self) -> tuple[str, str, str, tuple[Any, ...], int]:
        return (self.db, self.table, self.where, self.params, self.count)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def where_clause(where: Where | None) -> tuple[str, list[Any]]:
    """``{"a": 1, "b": None, "c": [1, 2]}`` -> ``"a" = ? AND "b" IS NULL AND "c" IN (...)``."""
    if not where:
        return "", []
    parts: list[str] = []
    params: list[Any] = []
    for name, value in where.items():
        if value is None:
            parts.append(f"{_quote(name)} IS NULL")
        elif isinstance(value, (list, tuple, set, frozenset)):
            parts.append(f"{_quote(name)} IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(sorted(value) if isinstance(value, (set, frozenset)) else list(value)))
        else:
            parts.append(f"{_quote(name)} = ?")
            params.append(_bind(value))
    return " WHERE " + " AND ".join(parts), params


def _matches(tracked: tuple[Any, ...], where: Where) -> bool:
    """Whether a row the tracker keeps (its column names, then its values) matches an equality mapping (a sequence: IN)."""
    names = tracked[0]
    for name, value in where.items():
        if name not in names:
            return False
        found = tracked[1 + names.index(name)]
        if isinstance(value, (list, tuple, set, frozenset)):
            if found not in value:
                return False
        elif found != value:
            return False
    return True


def _keyable(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


class _Unmatched:
    """Stands for a row's JSON value (a ``Json``, dict or list) in the tracker: equal to no value a delete names."""

    __slots__ = ()


_UNMATCHED = _Unmatched()
_TrackedRow = tuple[Any, ...]  # the column names (one tuple per row shape), then the values, in one tuple


_JSON_VALUES = (Json, dict, list)
# The exact types of the values rows mostly hold: a row of these alone is kept as it is, with no test per value.
_PLAIN_TYPES = frozenset({str, int, float, bool, bytes, type(None)})
_KEY_TYPES = frozenset({str, int, float})  # keyable without a test (a subclass, or a bool, goes through _keyable)


def _all_keyable(values: tuple[Any, ...]) -> bool:
    return _KEY_TYPES.issuperset(map(type, values)) or all(map(_keyable, values))


def _plain(values: Iterable[Any]) -> bool:
    """Every value is of a plain type exactly: bound as it is (``_bind`` changes none), kept by the tracker as it is."""
    return _PLAIN_TYPES.issuperset(map(type, values))


def _tracked(names: tuple[str, ...], row: Mapping[str, Any], plain: bool | None = None) -> _TrackedRow:
    """The row as the tracker keeps it: a JSON value (a whole session entry) is not kept alive for a delete's match.

    ``plain``: :func:`_plain` of the row's values, when the caller already knows it."""
    if plain if plain is not None else _plain(row.values()):
        return (names, *row.values())
    return (names, *[_UNMATCHED if isinstance(value, _JSON_VALUES) else value for value in row.values()])


@dataclass
class _Tracker:
    """What one source wrote into one database, for the post-commit validation."""

    # (table, key columns) -> key values -> the row as a later delete matches it (_TrackedRow)
    keyed: dict[tuple[str, tuple[str, ...]], dict[tuple[Any, ...], _TrackedRow]] = field(default_factory=dict)
    owned: dict[tuple[str, tuple[tuple[str, Any], ...]], int] = field(default_factory=dict)
    _names: dict[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict)  # one column tuple per row shape

    def row(self, table: str, key: Sequence[str], row: Mapping[str, Any], plain: bool | None = None) -> None:
        values = tuple(map(row.__getitem__, key))
        if _all_keyable(values):
            names = tuple(row)
            self.keyed.setdefault((table, tuple(key)), {})[values] = _tracked(self._names.setdefault(names, names), row, plain)

    def rows(self, table: str, owner: Where, count: int) -> None:
        frozen = {k: tuple(sorted(set(v), key=repr)) if isinstance(v, (list, tuple, set, frozenset)) else v for k, v in owner.items()}
        ident = (table, tuple(sorted(frozen.items())))
        self.owned[ident] = self.owned.get(ident, 0) + count

    def deleted(self, table: str, where: Where) -> None:
        for (name, _key), rows in self.keyed.items():
            if name == table:
                for values in [v for v, tracked in rows.items() if _matches(tracked, where)]:
                    del rows[values]
        for ident in list(self.owned):
            name, owner = ident
            if name == table and all(dict(owner).get(k, _MISSING) == v for k, v in where.items() if not isinstance(v, (list, tuple, set, frozenset))):
                del self.owned[ident]

    def expectations(self, db: str) -> list[Expectation]:
        out: list[Expectation] = []
        for (table, key), rows in self.keyed.items():
            if not rows:
                continue
            values = sorted(rows, key=lambda v: [(type(x).__name__, x) for x in v])
            if len(key) == 1:
                where = f"{_quote(key[0])} IN (SELECT value FROM json_each(?))"
                params: tuple[Any, ...] = (json.dumps([v[0] for v in values]),)
            else:
                picks = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(key)))
                where = f"({', '.join(_quote(k) for k in key)}) IN (SELECT {picks} FROM json_each(?))"
                params = (json.dumps([list(v) for v in values]),)
            out.append(Expectation(db, table, where, params, len(values)))
        for (table, owner), count in self.owned.items():
            if count <= 0:
                continue
            clause, params_list = where_clause(dict(owner))
            out.append(Expectation(db, table, clause.removeprefix(" WHERE "), tuple(params_list), count))
        return out


_MISSING = object()


# --- the guard ---------------------------------------------------------------------------

_WRITES = {apsw.SQLITE_INSERT, apsw.SQLITE_UPDATE, apsw.SQLITE_DELETE}
_TABLE_DDL_P1 = {apsw.SQLITE_CREATE_TABLE, apsw.SQLITE_DROP_TABLE, apsw.SQLITE_CREATE_TEMP_TABLE, apsw.SQLITE_DROP_TEMP_TABLE,
                 apsw.SQLITE_CREATE_VIEW, apsw.SQLITE_DROP_VIEW, apsw.SQLITE_CREATE_TEMP_VIEW, apsw.SQLITE_DROP_TEMP_VIEW}
_TABLE_DDL_P2 = {apsw.SQLITE_ALTER_TABLE, apsw.SQLITE_CREATE_INDEX, apsw.SQLITE_DROP_INDEX, apsw.SQLITE_CREATE_TEMP_INDEX,
                 apsw.SQLITE_DROP_TEMP_INDEX, apsw.SQLITE_CREATE_TRIGGER, apsw.SQLITE_DROP_TRIGGER,
                 apsw.SQLITE_CREATE_TEMP_TRIGGER, apsw.SQLITE_DROP_TEMP_TRIGGER}
_REFUSED = {apsw.SQLITE_ATTACH, apsw.SQLITE_DETACH, apsw.SQLITE_CREATE_VTABLE, apsw.SQLITE_DROP_VTABLE}


@dataclass
class SchemaFacts:
    """What statekit read of one connection's schema at one ``PRAGMA schema_version``: table columns, cascade edges."""

    version: int
    columns: dict[str, dict[str, Column]] = field(default_factory=dict)
    cascades: dict[str, set[str]] | None = None


def schema_facts(conn: Connection) -> SchemaFacts:
    """The connection's schema facts, read again only when its schema version moved (one PRAGMA per call).

    The DDL a reader runs through the writer (``DatabaseWriter.add_later_column``) and the rollback of a savepoint
    forget them (:func:`forget_schema_facts`), as every transaction rollback does (``statekit.db.Connection``'s
    rollback hook): a rolled-back ALTER brings the version number back, so the number alone cannot tell two
    schemas apart.
    """
    version = int(conn.execute("PRAGMA schema_version").fetchone()[0])
    cached = conn.schema_cache
    if not isinstance(cached, SchemaFacts) or cached.version != version:
        cached = SchemaFacts(version)
        conn.schema_cache = cached
    return cached


def forget_schema_facts(conn: Connection) -> None:
    conn.schema_cache = None


def _cascade_edges(conn: Connection, facts: SchemaFacts | None = None) -> dict[str, set[str]]:
    """parent table -> tables whose foreign keys cascade from it; read once per connection and schema version."""
    facts = facts or schema_facts(conn)
    if facts.cascades is not None:
        return facts.cascades
    edges: dict[str, set[str]] = {}
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        for fk in conn.execute(f"PRAGMA foreign_key_list({_quote(name)})"):
            on_update, on_delete = str(fk[5]).upper(), str(fk[6]).upper()
            if on_update != "NO ACTION" or on_delete != "NO ACTION":
                edges.setdefault(fk[2], set()).add(name)
    facts.cascades = edges
    return edges


def cascade_children(conn: Connection, parents: Iterable[str], facts: SchemaFacts | None = None) -> frozenset[str]:
    """Tables whose rows a delete/update of ``parents`` changes through ``ON DELETE/UPDATE CASCADE/SET NULL`` (transitively)."""
    edges = _cascade_edges(conn, facts)
    found: set[str] = set()
    todo = [p for p in parents]
    while todo:
        for child in edges.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return frozenset(found)


def tables_of(targets: Iterable[str], level: str) -> frozenset[str]:
    """The tables of ``target_tables`` (``"global.t"`` / ``"agent.t"``; a bare name counts for both) in one database level."""
    found = set()
    for target in targets:
        prefix, dot, table = target.partition(".")
        if not dot:
            found.add(target)
        elif prefix == level:
            found.add(table)
    return frozenset(found)


class Guard:
    """An SQLite authorizer: the reader ``reader`` may write only ``targets`` and never read bookkeeping tables."""

    def __init__(self, reader: str, targets: Iterable[str], cascades: Iterable[str] = (), declared: Iterable[str] | None = None) -> None:
        self.reader = reader
        self.targets = frozenset(targets)  # the tables of this database level
        self.cascades = frozenset(cascades) - self.targets
        self.declared = tuple(declared) if declared is not None else tuple(sorted(self.targets))  # as the reader wrote them
        self.made_from: tuple[str, SchemaFacts] | None = None  # Writer._install: the level and schema facts it was made for

    def same(self, other: object) -> bool:
        """``other`` is a guard that allows and refuses exactly what this one does (for the same reader's messages)."""
        return isinstance(other, Guard) and (self.reader, self.targets, self.cascades, self.declared) == (
            other.reader, other.targets, other.cascades, other.declared)

    def refuse(self, what: str, table: str) -> SchemaError:
        declared = ", ".join(self.declared) or "none"
        return SchemaError(f"reader {self.reader} tried to {what} table {table}, which is not among its target_tables ({declared})")

    def __call__(self, op: int, p1: str | None, p2: str | None, db_name: str | None, trigger: str | None) -> int:
        if trigger is not None:  # a trigger of the schema itself
            return apsw.SQLITE_OK
        if op == apsw.SQLITE_READ:
            if p1 in BOOKKEEPING_TABLES:
                raise SchemaError(f"reader {self.reader} tried to read statekit's bookkeeping table {p1}; use the import context instead")
            return apsw.SQLITE_OK
        if op in _WRITES:
            table = p1 or ""
            if table in self.targets or table.startswith("sqlite_"):
                return apsw.SQLITE_OK
            if op != apsw.SQLITE_INSERT and table in self.cascades:
                return apsw.SQLITE_OK
            raise self.refuse({apsw.SQLITE_INSERT: "insert into", apsw.SQLITE_UPDATE: "update", apsw.SQLITE_DELETE: "delete from"}[op], table)
        if op in _TABLE_DDL_P1:
            if p1 in self.targets:
                return apsw.SQLITE_OK
            raise self.refuse("change the schema of", p1 or "")
        if op in _TABLE_DDL_P2:
            if p2 in self.targets:
                return apsw.SQLITE_OK
            raise self.refuse("change the schema of", p2 or "")
        if op in _REFUSED:
            raise SchemaError(f"reader {self.reader} tried an operation statekit's readers never need ({apsw.mapping_authorizer_function.get(op, op)})")
        if op == apsw.SQLITE_PRAGMA and (p1 or "").lower() == "writable_schema":
            raise SchemaError(f"reader {self.reader} tried PRAGMA writable_schema")
        return apsw.SQLITE_OK


@contextmanager
def unguarded(conn: Connection) -> Iterator[None]:
    """The apply loop's own query on a guarded connection (its receipts): the guard is lifted for it alone."""
    saved = conn.authorizer
    conn.authorizer = None
    try:
        yield
    finally:
        conn.authorizer = saved


# --- one database ----------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _upsert_sql(table: str, columns: tuple[str, ...], key: tuple[str, ...], update: bool | tuple[str, ...], where: str | None) -> str:
    """The text of :meth:`DatabaseWriter.upsert` (built once per shape: one prepared statement per shape too)."""
    sql = f"INSERT INTO {_quote(table)} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
    if update is False:
        return sql + f" ON CONFLICT({', '.join(key)}) DO NOTHING"
    names = [c for c in (columns if update is True else [u for u in update if u in columns]) if c not in key]
    if not names:
        return sql + f" ON CONFLICT({', '.join(key)}) DO NOTHING"
    sql += f" ON CONFLICT({', '.join(key)}) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in names)
    return sql + f" WHERE {where}" if where else sql


@lru_cache(maxsize=None)
def _later_columns(table: str) -> frozenset[str]:
    return frozenset(name for (t, name) in LATER_COLUMNS if t == table)



class DatabaseWriter:
    """Writes and look-ups in one database, for one source. Owns the facts of its connection."""

    def __init__(self, conn: Connection, label: str, tracker: _Tracker | None = None) -> None:
        self.conn = conn
        self.label = label  # "global" or "agent:<id>"
        self._tracker = tracker if tracker is not None else _Tracker()
        self._facts: SchemaFacts | None = None  # the schema as this source first saw it (one PRAGMA schema_version)

    # -- connection facts -------------------------------------------------------------

    def schema(self) -> SchemaFacts:
        if self._facts is None:
            self._facts = schema_facts(self.conn)
        return self._facts

    def forget_schema(self) -> None:
        """After DDL or a rollback: the next look-up reads the schema again."""
        self._facts = None
        forget_schema_facts(self.conn)

    def columns(self, table: str) -> dict[str, Column]:
        """The table's columns (empty when it does not exist); read once per table and schema version of the connection."""
        known = self.schema().columns
        found = known.get(table)
        if found is None:
            found = {
                row[1]: Column(row[1], str(row[2] or "").upper(), bool(row[3]), int(row[5]))
                for row in self.conn.execute(f"PRAGMA table_info({_quote(table)})")
            }
            known[table] = found
        return found

    def has_table(self, table: str) -> bool:
        return bool(self.columns(table))

    def has_column(self, table: str, column: str) -> bool:
        return column in self.columns(table)

    def is_text_column(self, table: str, column: str) -> bool:
        found = self.columns(table).get(column)
        return found is not None and found.is_text

    def primary_key(self, table: str) -> tuple[str, ...]:
        return tuple(c.name for c in sorted((c for c in self.columns(table).values() if c.pk), key=lambda c: c.pk))

    def require_columns(self, table: str, columns: Iterable[str]) -> None:
        """Refuse to write into an existing table that lacks a column statekit needs."""
        have = self.columns(table)
        if not have:
            raise SchemaError(f"table {table} does not exist")
        missing = [c for c in columns if c not in have]
        if missing:
            raise SchemaError(
                f"existing table {table} lacks column(s) {', '.join(missing)} that statekit writes; it was left unaltered"
            )

    def add_later_column(self, table: str, column: str) -> bool:
        """Add one column OpenClaw adds to a version-1 table on its own upgrade (``statekit.schema.LATER_COLUMNS``)."""
        declared = LATER_COLUMNS.get((table, column))
        if declared is None:
            raise KeyError(f"{table}.{column} is not a column OpenClaw adds to a version-1 table")
        if column in self.columns(table):
            return False
        self.conn.execute(f"ALTER TABLE {_quote(table)} ADD COLUMN {column} {declared}")
        self.forget_schema()
        return True

    def fit_later(self, table: str, row: Mapping[str, Any]) -> dict[str, Any]:
        """Only the later-column part of :meth:`fit`: such a column with a value is added, one without is left out."""
        later = _later_columns(table)
        if not later or later.isdisjoint(row):
            return dict(row)
        fitted: dict[str, Any] = {}
        for name, value in row.items():
            if name in later and name not in self.columns(table):
                if value is None:
                    continue
                self.add_later_column(table, name)
            fitted[name] = value
        return fitted

    def fit(self, table: str, row: Mapping[str, Any], *, optional: Iterable[str] = (), extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """``row`` ready for the table that is there: the one place rows meet foreign tables.

        * a later column (``LATER_COLUMNS``) with a value is added to the table;
          one without a value is left out when the table lacks it;
        * an ``optional`` column whose value is None is left out when the table lacks it;
        * an ``extra`` column is written only when the table happens to have it
          (the wider, stricter tables of OpenClaw 2026.6-2026.7);
        * any other column the table lacks refuses the row (SchemaError), the table unaltered.
        """
        if not self.columns(table):
            raise SchemaError(f"table {table} does not exist")
        fitted = self.fit_later(table, row)
        have = self.columns(table)
        skip = {name for name in optional if name not in have and fitted.get(name) is None}
        fitted = {name: value for name, value in fitted.items() if name not in skip}
        self.require_columns(table, fitted)
        for name, value in (extra or {}).items():
            if name in have and name not in fitted:
                fitted[name] = value
        return fitted

    def timestamp(self, table: str, column: str, ms: int | None, iso: str | None = None) -> Any:
        """A timestamp in the column's own convention: epoch ms (statekit's INTEGER) or ISO text (OpenClaw's TEXT)."""
        if ms is None and iso is None:
            return None
        if self.is_text_column(table, column):
            return iso if iso is not None else ms_to_iso(int(ms))  # type: ignore[arg-type]
        return ms if ms is not None else iso_to_ms(iso)

    # -- writes -------------------------------------------------------------------------

    def upsert(
        self,
        table: str,
        row: Mapping[str, Any],
        key: Sequence[str],
        *,
        update: bool | Sequence[str] = True,
        where: str | None = None,
        optional: Iterable[str] = (),
        extra: Mapping[str, Any] | None = None,
    ) -> int:
        """INSERT ... ON CONFLICT(key) DO UPDATE (never REPLACE: a REPLACE would cascade-delete children).

        ``update=False`` keeps an existing row; a sequence names the columns to
        update (those the fitted row lacks are skipped); ``where`` guards the
        update, written against ``excluded`` and the table's current row.
        Returns the number of rows changed (0 when the row was kept).
        """
        fitted = self.fit(table, row, optional=optional, extra=extra)
        columns = list(fitted)
        sql = _upsert_sql(table, tuple(columns), tuple(key), update if isinstance(update, bool) else tuple(update), where)
        params = list(fitted.values())
        plain = _plain(params)
        self._execute(table, columns, sql, [params if plain else [_bind(v) for v in params]])
        self._tracker.row(table, key, fitted, plain)
        return int(self.conn.changes())

    def newer_wins(self, table: str, row: Mapping[str, Any], key: Sequence[str], column: str, *, ties: bool = False, **kwargs: Any) -> int:
        """Upsert that updates an existing row only when ``row[column]`` is newer (or equal, with ``ties``)."""
        op = ">=" if ties else ">"
        return self.upsert(table, row, key, where=f"excluded.{column} {op} {_quote(table)}.{column}", **kwargs)

    def insert(self, table: str, row: Mapping[str, Any], *, key: Sequence[str] | None = None, optional: Iterable[str] = ()) -> None:
        """A plain INSERT (an existing row with the same key is an error)."""
        fitted = self.fit(table, row, optional=optional)
        columns = list(fitted)
        self._execute(table, columns, f"INSERT INTO {_quote(table)} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
                      [[_bind(fitted[c]) for c in columns]])
        if key is not None:
            self._tracker.row(table, key, fitted)
        else:
            self._tracker.rows(table, {}, 1)

    def insert_many(
        self,
        table: str,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        *,
        owner: Where | None = None,
        conflict: str | None = None,
        plain: bool = False,
    ) -> int:
        """Many rows of the same columns. ``owner`` (equality columns every row shares) makes the count checkable.

        ``conflict`` is an ``ON CONFLICT ...`` tail (e.g. ``"(a, b) DO UPDATE SET c = excluded.c"``).
        ``plain``: the caller's rows hold only SQL values (str, int, float, bytes, None), bound as they are.
        """
        self.require_columns(table, columns)
        sql = f"INSERT INTO {_quote(table)} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"
        if conflict:
            sql += f" ON CONFLICT{conflict if conflict.startswith('(') else ' ' + conflict}"
        batch: list[list[Any]] = cast(list[list[Any]], list(rows)) if plain else [[_bind(v) for v in r] for r in rows]
        if not batch:
            return 0
        self._execute(table, list(columns), sql, batch)
        if not conflict:  # an ON CONFLICT tail may fold rows together: only plain inserts are counted
            self._tracker.rows(table, owner or {}, len(batch))
        return len(batch)

    def delete(self, table: str, where: Where) -> int:
        """DELETE the rows matching the equality mapping (a mapping is required: no accidental whole-table delete)."""
        if not where:
            raise ValueError("delete needs a where mapping")
        clause, params = where_clause(where)
        self.conn.execute(f"DELETE FROM {_quote(table)}{clause}", params)
        self._tracker.deleted(table, where)
        return int(self.conn.changes())

    def delete_where(self, table: str, where: Where, condition: str, params: Sequence[Any] = ()) -> int:
        """DELETE with an extra SQL condition beside the equality mapping (``expires_at <= ?``)."""
        clause, base = where_clause(where)
        sql = f"DELETE FROM {_quote(table)}{clause}{' AND ' if clause else ' WHERE '}{condition}"
        self.conn.execute(sql, [*base, *params])
        return int(self.conn.changes())

    def replace_owned(self, table: str, owner: Where, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """The rows a source owns, replaced: delete ``owner``'s rows, insert ``rows`` (which carry the owner columns)."""
        self.delete(table, owner)
        return self.insert_many(table, columns, rows, owner=owner)

    def update(self, table: str, values: Mapping[str, Any], where: Where) -> int:
        """UPDATE the rows matching ``where`` (columns fitted like any row)."""
        if not where:
            raise ValueError("update needs a where mapping")
        fitted = self.fit(table, values)
        if not fitted:
            return 0
        clause, params = where_clause(where)
        sets = ", ".join(f"{_quote(c)} = ?" for c in fitted)
        self._execute(table, list(fitted), f"UPDATE {_quote(table)} SET {sets}{clause}", [[*(_bind(v) for v in fitted.values()), *params]])
        return int(self.conn.changes())

    def _execute(self, table: str, columns: Sequence[str], sql: str, rows: list[list[Any]]) -> None:
        """Run ``sql`` once per row; an integer beyond 64 bits is refused with one line naming the column, not a traceback."""
        try:
            if len(rows) == 1:
                self.conn.execute(sql, rows[0])
            else:
                self.conn.cursor().insert_rows(sql, rows)
        except OverflowError:
            raise ValueRangeError(int64_overflow_message(table, list(columns), rows)) from None

    # -- reads -------------------------------------------------------------------------

    def select(self, table: str, columns: Sequence[str] | str, where: Where | None = None, *, order_by: str | None = None,
               limit: int | None = None) -> list[tuple[Any, ...]]:
        names = columns if isinstance(columns, str) else ", ".join(_quote(c) for c in columns)
        clause, params = where_clause(where)
        sql = f"SELECT {names} FROM {_quote(table)}{clause}"
        if order_by:
            sql += f" ORDER BY {order_by}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [tuple(r) for r in self.conn.execute(sql, params)]

    def first(self, table: str, columns: Sequence[str] | str, where: Where | None = None, *, order_by: str | None = None) -> tuple[Any, ...] | None:
        rows = self.select(table, columns, where, order_by=order_by, limit=1)
        return rows[0] if rows else None

    def first_row(self, table: str, where: Where) -> dict[str, Any] | None:
        """The first matching row as ``{column: value}`` (all columns)."""
        clause, params = where_clause(where)
        cursor = self.conn.execute(f"SELECT * FROM {_quote(table)}{clause} LIMIT 1", params)
        row = cursor.fetchone()
        if row is None:
            return None
        return {d[0]: row[i] for i, d in enumerate(cursor.description)}

    def exists(self, table: str, where: Where | None = None) -> bool:
        return self.first(table, "1", where) is not None

    def count(self, table: str, where: Where | None = None) -> int:
        found = self.first(table, "count(*)", where)
        return int(found[0]) if found else 0

    def query(self, sql: str, params: Sequence[Any] = ()) -> Generator[tuple[Any, ...], None, None]:
        """A read-only query (a join or range a mapping cannot say); anything but SELECT is refused."""
        if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
            raise SchemaError(f"writer.query runs SELECT statements only, not: {sql.split()[0] if sql.split() else sql!r}")
        for row in self.conn.execute(sql, tuple(params)):
            yield tuple(row)

    @contextmanager
    def savepoint(self, name: str) -> Iterator[None]:
        """A nested transaction: rolled back alone on error (the source's transaction goes on)."""
        self.conn.execute(f"SAVEPOINT {name}")
        try:
            yield
        except BaseException:
            self.forget_schema()  # an ALTER inside it is undone
            self.conn.execute(f"ROLLBACK TO {name}")
            self.conn.execute(f"RELEASE {name}")
            raise
        self.conn.execute(f"RELEASE {name}")

    def expect_rows(self, table: str, where: Where, count: int) -> None:
        """After commit, at least ``count`` rows match ``where`` (rows this source relies on but did not write)."""
        self._tracker.rows(table, where, count)

    def expectations(self) -> list[Expectation]:
        return self._tracker.expectations(self.label)


def as_database_writer(db: DatabaseWriter | Connection, label: str = "global") -> DatabaseWriter:
    """``db`` itself, or a writer over the raw connection (callers outside a reader: the apply loop, tests)."""
    return db if isinstance(db, DatabaseWriter) else DatabaseWriter(db, label)


# --- the writer of one source ----------------------------------------------------------------


class Writer:
    """The databases one source writes: ``state`` (global) and the agents' (opened lazily through the apply loop)."""

    def __init__(self, global_conn: Connection, agent_conn: Callable[[str], Connection]) -> None:
        self.state = DatabaseWriter(global_conn, "global")
        self._agent_conn = agent_conn
        self._agents: dict[str, DatabaseWriter] = {}
        self._guard: Guard | None = None

    def agent(self, agent_id: str) -> DatabaseWriter:
        found = self._agents.get(agent_id)
        if found is None:
            conn = self._agent_conn(agent_id)
            found = DatabaseWriter(conn, f"agent:{agent_id}")
            self._agents[agent_id] = found
            if self._guard is not None:
                self._install(found, self._guard, "agent")
        return found

    def db(self, name: str) -> DatabaseWriter:
        """``"global"`` or ``"agent:<id>"``."""
        if name == "global":
            return self.state
        if name.startswith("agent:"):
            return self.agent(name.split(":", 1)[1])
        raise ValueError(f"unknown database {name!r}")

    def expectations(self) -> list[Expectation]:
        found = self.state.expectations()
        for w in self._agents.values():
            found.extend(w.expectations())
        return found

    @staticmethod
    def _install(db: DatabaseWriter, guard: Guard, level: str) -> None:
        facts = db.schema()
        current = db.conn.authorizer
        if (isinstance(current, Guard) and current.made_from is not None and current.made_from[0] == level
                and current.made_from[1] is facts and current.reader == guard.reader and current.declared == guard.declared):
            return  # left by the previous source of a batch, made for the same reader from the same schema facts (below)
        tables = tables_of(guard.targets, level)
        installed = Guard(guard.reader, tables, cascade_children(db.conn, tables, facts), declared=guard.declared)
        installed.made_from = (level, facts)
        if installed.same(current):
            # Left installed by the previous source of a batch (``keep``): every statement prepared since was
            # authorized by a guard that allows and refuses the same. Setting an authorizer makes SQLite prepare every
            # cached statement of the connection again, so it is not set again.
            assert isinstance(current, Guard)
            current.made_from = installed.made_from
            return
        db.conn.authorizer = installed

    @contextmanager
    def guarded(self, reader: str, targets: Iterable[str], *, keep: bool = False) -> Iterator[None]:
        """Install the authorizer on every connection of this source while the reader writes.

        ``keep``: the guards stay installed after (the apply loop's batch of small sources runs only its savepoints
        until it removes them, before it writes the batch's receipts), so the next source of the same reader finds
        the same guard and the connections' prepared statements stay prepared."""
        guard = Guard(reader, targets)
        self._guard = guard
        self._install(self.state, guard, "global")
        for w in self._agents.values():
            self._install(w, guard, "agent")
        try:
            yield
        finally:
            self._guard = None
            if not keep:
                for conn in [self.state.conn, *(w.conn for w in self._agents.values())]:
                    conn.authorizer = None


__all__ = ["as_database_writer", "unguarded", "BOOKKEEPING_TABLES", "Column", "DatabaseWriter", "Expectation", "Guard", "Json", "Writer", "js_json", "where_clause"]

