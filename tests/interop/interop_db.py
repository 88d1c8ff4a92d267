"""Dump the databases of a state dir and compare two dumps (statekit's result against OpenClaw's own).

A dump holds, per live database (path relative to the state dir): ``user_version``; per table its row
count and, for tables with a non-rowid primary key, the sorted primary-key ids; the key -> session id
map (and sessions without a key); per session the sequence of transcript event ids. The intended
differences come from ``allowed_differences.toml`` beside this file (:class:`AllowList`); the rules that
are not entries are in :func:`compare`.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import zstandard
from helpers import open_db
from statekit.db import Connection, SQLiteError

ALLOW_FILE = Path(__file__).with_name("allowed_differences.toml")
# directories of a state dir whose *.sqlite files are archives, scratch or statekit's own, not live databases
NOT_LIVE_DIRS = frozenset({"session-sqlite-import-archive", ".statekit", "tmp", "backups", "openclaw-backups", "logs"})
SESSION_KEY_TABLES = ("session_windows", "sessions", "session_entries", "session_routes", "session_nodes")
EVENT_TABLES = frozenset({"transcript_events", "transcript_event_identities"})  # compared as event id sequences
MAX_ID_ROWS = 20000
ERROR_WORDS = re.compile(r"error|fail|refus|invalid|noncanonical|incomplete|constraint|unsupported", re.I)


# ------------------------------------------------------------------------------------------ allow-list
@dataclass(frozen=True)
class NotCompared:
    reason: str
    tables: tuple[str, ...] = ()
    pattern: str | None = None
    databases: tuple[str, ...] = ()

    def covers(self, database: str, table: str) -> bool:
        if self.databases and not any(fnmatch.fnmatch(database, g) for g in self.databases):
            return False
        return table in self.tables or bool(self.pattern and re.search(self.pattern, table))


@dataclass(frozen=True)
class ByName:
    reason: str
    table: str
    id_column: str
    name_column: str
    name_prefix: str


@dataclass(frozen=True)
class KnownDifference:
    reason: str
    table: str
    databases: tuple[str, ...] = ()
    ids: tuple[str, ...] | None = None  # None: any id

    def covers(self, diff: Difference) -> bool:
        if diff.table != self.table:
            return False
        if self.databases and not any(fnmatch.fnmatch(diff.database, g) for g in self.databases):
            return False
        return self.ids is None or (bool(diff.ids) and set(diff.ids) <= set(self.ids))


@dataclass(frozen=True)
class NotAnImport:
    reason: str
    pattern: str


@dataclass(frozen=True)
class AllowList:
    not_compared: tuple[NotCompared, ...] = ()
    by_name: tuple[ByName, ...] = ()
    differences: tuple[KnownDifference, ...] = ()
    not_imports: tuple[NotAnImport, ...] = ()

    @property
    def not_import_patterns(self) -> tuple[str, ...]:
        return tuple(e.pattern for e in self.not_imports)

    def ignored(self, database: str, table: str) -> NotCompared | None:
        return next((e for e in self.not_compared if e.covers(database, table)), None)

    def known(self, diff: Difference) -> KnownDifference | None:
        return next((e for e in self.differences if e.covers(diff)), None)


class AllowListError(ValueError):
    pass


def load_allow_list(path: Path = ALLOW_FILE) -> AllowList:
    """The allow-list file, checked: every entry has a reason and only the fields its kind knows."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise AllowListError(f"{path}: {exc}") from exc
    kinds = {"not_compared": (NotCompared, {"tables", "pattern", "databases"}),
             "by_name": (ByName, {"table", "id_column", "name_column", "name_prefix"}),
             "difference": (KnownDifference, {"table", "databases", "ids"}),
             "not_an_import": (NotAnImport, {"pattern"})}
    unknown = set(data) - set(kinds)
    if unknown:
        raise AllowListError(f"{path}: unknown kind of entry {sorted(unknown)} (known: {sorted(kinds)})")
    parsed: dict[str, list[Any]] = {}
    for kind, (cls, fields) in kinds.items():
        for n, entry in enumerate(data.get(kind, []), 1):
            where = f"{path}: [[{kind}]] entry {n}"
            if not isinstance(entry.get("reason"), str) or not entry["reason"].strip():
                raise AllowListError(f"{where} has no reason")
            extra = set(entry) - fields - {"reason"}
            if extra:
                raise AllowListError(f"{where}: unknown field(s) {sorted(extra)}")
            values = {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}
            if kind == "not_compared" and not (values.get("tables") or values.get("pattern")):
                raise AllowListError(f"{where} names no tables and no pattern")
            if values.get("pattern"):
                try:
                    re.compile(values["pattern"])
                except re.error as exc:
                    raise AllowListError(f"{where}: bad pattern: {exc}") from exc
            try:
                parsed.setdefault(kind, []).append(cls(**values))
            except TypeError as exc:
                raise AllowListError(f"{where}: {exc}") from exc
    return AllowList(tuple(parsed.get("not_compared", [])), tuple(parsed.get("by_name", [])),
                     tuple(parsed.get("difference", [])), tuple(parsed.get("not_an_import", [])))


# ------------------------------------------------------------------------------------------ dumps
@dataclass
class TableDump:
    count: int | None
    error: str | None = None
    key: list[str] | None = None   # primary-key columns, when ids are kept
    ids: list[str] | None = None   # sorted "a|b" primary-key values


@dataclass
class DatabaseDump:
    user_version: int | None = None
    error: str | None = None
    tables: dict[str, TableDump] = field(default_factory=dict)
    session_keys: dict[str, str] = field(default_factory=dict)
    keyless_sessions: list[str] = field(default_factory=list)
    events: dict[str, list[str]] = field(default_factory=dict)


StateDump = dict[str, DatabaseDump]


def live_databases(state: Path) -> list[Path]:
    found = []
    for directory, dirs, files in os.walk(state):
        dirs[:] = sorted(d for d in dirs if d not in NOT_LIVE_DIRS)
        found += [Path(directory) / f for f in files if f.endswith(".sqlite") and not f.endswith(".lock.sqlite")]
    return sorted(found)


def dump_state(state: Path, allow: AllowList) -> StateDump:
    return {db.relative_to(state).as_posix(): dump_database(db, allow) for db in live_databases(state)}


def write_dump(dump: StateDump, path: Path) -> None:
    path.write_text(json.dumps({k: asdict(v) for k, v in dump.items()}, indent=1, sort_keys=True), encoding="utf-8")


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def dump_database(path: Path, allow: AllowList) -> DatabaseDump:
    dump = DatabaseDump()
    try:
        con = open_db(path, "ro", busy_timeout_ms=30_000)
    except SQLiteError as exc:
        return DatabaseDump(error=str(exc))
    try:
        dump.user_version = con.execute("PRAGMA user_version").fetchone()[0]
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        renames = _random_id_renames(con, tables, allow)
        for table in tables:
            dump.tables[table] = _dump_table(con, table, renames)
        _dump_sessions(con, tables, dump)
        if "transcript_events" in tables:
            dump.events = _event_ids(con, tables)
    except SQLiteError as exc:
        dump.error = str(exc)
    finally:
        con.close()
    return dump


def _random_id_renames(con: Connection, tables: list[str], allow: AllowList) -> dict[str, dict[str, str]]:
    """id column -> {random id: "name:<name>"} for the [[by_name]] rules that apply to this database."""
    renames: dict[str, dict[str, str]] = {}
    for rule in allow.by_name:
        if rule.table not in tables:
            continue
        try:
            rows = con.execute(f"SELECT {_q(rule.id_column)}, {_q(rule.name_column)} FROM {_q(rule.table)}").fetchall()
        except SQLiteError:
            continue
        renames.setdefault(rule.id_column, {}).update(
            {str(i): f"name:{n}" for i, n in rows if isinstance(n, str) and n.startswith(rule.name_prefix)})
    return renames


def _dump_table(con: Connection, table: str, renames: dict[str, dict[str, str]]) -> TableDump:
    try:
        count = con.execute(f"SELECT count(*) FROM {_q(table)}").fetchone()[0]
        info = con.execute(f"PRAGMA table_info({_q(table)})").fetchall()
    except SQLiteError as exc:
        return TableDump(count=None, error=str(exc))
    key = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5]]
    rowid_key = len(key) == 1 and next(r[2] for r in info if r[1] == key[0]).upper() == "INTEGER"
    if not key or rowid_key or table in EVENT_TABLES or count > MAX_ID_ROWS:
        return TableDump(count=count)
    ids = []
    for row in con.execute(f"SELECT {', '.join(_q(c) for c in key)} FROM {_q(table)}"):
        parts = [renames.get(col, {}).get(str(v), _text(v)) for col, v in zip(key, row)]
        ids.append("|".join(parts))
    return TableDump(count=count, key=key, ids=sorted(ids))


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return f"<blob {len(value)} bytes>"
    return str(value)


def _dump_sessions(con: Connection, tables: list[str], dump: DatabaseDump) -> None:
    """key -> session id from the first table that maps it; session ids stored without a key."""
    for table in SESSION_KEY_TABLES:
        if table not in tables:
            continue
        cols = {r[1] for r in con.execute(f"PRAGMA table_info({_q(table)})")}
        if not {"session_key", "session_id"} <= cols:
            continue
        for key, session_id in con.execute(f"SELECT session_key, session_id FROM {_q(table)}"):
            if session_id is None:
                continue
            if key is None:
                if session_id not in dump.keyless_sessions:
                    dump.keyless_sessions.append(session_id)
            else:
                dump.session_keys.setdefault(str(key), str(session_id))


def _event_ids(con: Connection, tables: list[str]) -> dict[str, list[str]]:
    """Per session, in seq order: each event's id (``HEADER:<id>`` for the session header)."""
    identities: dict[tuple[str, int], str] = {}
    if "transcript_event_identities" in tables:
        identities = {(s, q): e for s, q, e in
                      con.execute("SELECT session_id, seq, event_id FROM transcript_event_identities")}
    cols = {r[1] for r in con.execute("PRAGMA table_info(transcript_events)")}
    zstd_col = "event_zstd" if "event_zstd" in cols else "NULL"
    events: dict[str, list[str]] = {}
    rows = con.execute(f"SELECT session_id, seq, event_json, {zstd_col} FROM transcript_events ORDER BY session_id, seq")
    for session_id, seq, text, packed in rows:
        events.setdefault(session_id, []).append(_event_id(text, packed) or identities.get((session_id, seq), f"NOID@{seq}"))
    return events


def _event_id(text: str | None, packed: bytes | None) -> str | None:
    if text is None and packed is not None:
        try:
            text = zstandard.ZstdDecompressor().decompress(packed).decode("utf-8")
        except (zstandard.ZstdError, UnicodeDecodeError):
            return None
    if text is None:
        return None
    try:
        event = json.loads(text)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    if event.get("type") == "session":
        return f"HEADER:{event.get('id')}"
    return str(event["id"]) if event.get("id") is not None else None


def sessions_by_agent(dump: StateDump) -> tuple[dict[str, dict[str, str]], dict[str, list[str]]]:
    """({agent: {key: session id}}, {agent: [session ids without a key]}) from the agent databases."""
    keys: dict[str, dict[str, str]] = {}
    keyless: dict[str, list[str]] = {}
    for rel, db in dump.items():
        parts = rel.split("/")
        if len(parts) >= 2 and parts[0] == "agents":
            if db.session_keys:
                keys.setdefault(parts[1], {}).update(db.session_keys)
            if db.keyless_sessions:
                keyless.setdefault(parts[1], []).extend(db.keyless_sessions)
    return keys, keyless


# ------------------------------------------------------------------------------------------ comparison
@dataclass(frozen=True)
class Difference:
    database: str
    table: str
    detail: str
    ids: tuple[str, ...] = ()  # the ids involved (primary keys, session ids or keys); () when only counts differ

    def line(self) -> str:
        return f"{self.database} {self.table}: {self.detail}"


@dataclass
class Comparison:
    failures: list[Difference] = field(default_factory=list)
    allowed: list[tuple[Difference, str]] = field(default_factory=list)   # (difference, reason)
    extras: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def report(self) -> str:
        lines = [f"FAIL {d.line()}" for d in self.failures]
        lines += [f"ALLOWED {d.line()} -- {reason}" for d, reason in self.allowed]
        lines += [f"EXTRA {x}" for x in self.extras] + [f"INFO {x}" for x in self.notes]
        return "\n".join(lines) + "\n"


def _ids_diff(a: list[str] | None, b: list[str] | None, limit: int = 4) -> tuple[str, tuple[str, ...]]:
    if a is None or b is None:
        return "", ()
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    return (f"; only in A: {only_a[:limit] or '-'}; only in B: {only_b[:limit] or '-'}",
            tuple(only_a + only_b))


def compare(reference: StateDump, candidate: StateDump, allow: AllowList, doctor_output: str = "") -> Comparison:
    """``candidate`` (B) against ``reference`` (A): every table, event id sequence and session key."""
    result = Comparison()
    error_lines = [line for line in doctor_output.splitlines() if ERROR_WORDS.search(line)]

    def doctor_errored_on(table: str) -> bool:
        name = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(table)}(?![A-Za-z0-9_])")
        return any(name.search(line) for line in error_lines)

    def differ(diff: Difference) -> None:
        known = allow.known(diff)
        if known:
            result.allowed.append((diff, known.reason))
        else:
            result.failures.append(diff)

    for rel in sorted(set(reference) | set(candidate)):
        a, b = reference.get(rel, DatabaseDump()), candidate.get(rel, DatabaseDump())
        if a.error or b.error:
            result.failures.append(Difference(rel, "(database)", f"cannot read: A {a.error or 'ok'}, B {b.error or 'ok'}"))
            continue
        for table in sorted(set(a.tables) | set(b.tables)):
            ta, tb = a.tables.get(table, TableDump(count=0)), b.tables.get(table, TableDump(count=0))
            if ta.count is None or tb.count is None:
                result.failures.append(Difference(rel, table, f"cannot count rows: A {ta.error}, B {tb.error}"))
                continue
            skip = allow.ignored(rel, table)
            if skip:
                if ta.count != tb.count:
                    result.notes.append(f"{rel} {table}: A={ta.count} B={tb.count} (not compared: {skip.reason})")
                continue
            if ta.count == 0 and tb.count > 0:
                if doctor_errored_on(table):
                    differ(Difference(rel, table, f"{tb.count} rows only in B, and 9.6's doctor reported an error naming it"))
                else:
                    result.extras.append(f"{rel} {table} ({tb.count} rows only in B)")
                continue
            ids_text, ids = _ids_diff(ta.ids, tb.ids)
            if ta.count != tb.count:
                differ(Difference(rel, table, f"rows A={ta.count} B={tb.count}{ids_text}", ids))
            elif ids:
                differ(Difference(rel, table, f"same count {ta.count}, ids differ{ids_text}", ids))
        for session_id in sorted(set(a.events) | set(b.events)):
            ea, eb = a.events.get(session_id, []), b.events.get(session_id, [])
            if ea != eb:
                at = next((i for i, (x, y) in enumerate(zip(ea, eb)) if x != y), min(len(ea), len(eb)))
                differ(Difference(rel, "transcript_events",
                                  f"session {session_id}: A {len(ea)} events, B {len(eb)}; first difference at #{at}: "
                                  f"A {ea[at] if at < len(ea) else '-'} B {eb[at] if at < len(eb) else '-'}",
                                  (session_id,)))
        for key in sorted(set(a.session_keys) | set(b.session_keys)):
            if a.session_keys.get(key) != b.session_keys.get(key):
                differ(Difference(rel, "session_keys", f"{key}: A session {a.session_keys.get(key)}, "
                                                       f"B session {b.session_keys.get(key)}", (key,)))
        if b.keyless_sessions:
            differ(Difference(rel, "session_keys", f"sessions without a session key in B: {b.keyless_sessions[:4]}",
                              tuple(b.keyless_sessions)))
    return result
