"""The writer readers go through (legacy_readers.writer): operations, fitting, derived checks, the guard."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from statekit.db import Connection
from statekit.errors import SchemaError
from statekit.legacy_readers import all_readers
from statekit.legacy_readers.base import ImportContext, Source
from statekit.legacy_readers.writer import DatabaseWriter, Guard, Json, Writer, js_json, tables_of
from statekit.migrate.apply import MigrateOptions, migrate
from statekit.schema import open_global
from helpers import make_state, rows, agent_db

READERS_DIR = Path(__file__).resolve().parents[2] / "legacy_readers"
SCHEMA_DIR = Path(__file__).resolve().parents[2] / "statekit" / "schema"


@pytest.fixture()
def conn(tmp_path: Path) -> Iterator[Connection]:
    opened, _ = open_global(tmp_path)
    try:
        yield opened
    finally:
        opened.close()


def _count(db: DatabaseWriter, table: str, where: str, params: tuple[object, ...]) -> int:
    return int(db.conn.execute(f'SELECT count(*) FROM "{table}" WHERE {where}', params).fetchone()[0])


def test_upsert_update_columns_and_newer_wins(conn: Connection) -> None:
    db = DatabaseWriter(conn, "global")
    row = {"plugin_id": "p", "namespace": "n", "entry_key": "k", "value_json": {"a": 1}, "created_at": 10, "expires_at": None}
    key = ("plugin_id", "namespace", "entry_key")
    db.upsert("plugin_state_entries", row, key)
    db.newer_wins("plugin_state_entries", {**row, "value_json": {"a": 2}, "created_at": 5}, key, "created_at")
    assert db.first("plugin_state_entries", ("value_json", "created_at"), {"entry_key": "k"}) == ('{"a":1}', 10)
    db.newer_wins("plugin_state_entries", {**row, "value_json": {"a": 3}, "created_at": 11}, key, "created_at")
    assert db.first("plugin_state_entries", ("value_json", "created_at"), {"entry_key": "k"}) == ('{"a":3}', 11)
    db.upsert("plugin_state_entries", {**row, "value_json": {"a": 4}, "created_at": 1}, key, update=False)
    assert db.first("plugin_state_entries", "value_json", {"entry_key": "k"}) == ('{"a":3}',)


def test_json_values_are_written_as_javascript_writes_them(conn: Connection) -> None:
    db = DatabaseWriter(conn, "global")
    value = {"b": 1.0, "1": 1e-07, "0": [2.0, None]}
    db.upsert("plugin_state_entries", {"plugin_id": "p", "namespace": "n", "entry_key": "k", "value_json": Json(value),
                                       "created_at": 1, "expires_at": None}, ("plugin_id", "namespace", "entry_key"))
    stored = db.first("plugin_state_entries", "value_json", {"entry_key": "k"})
    assert stored == ('{"0":[2,null],"1":1e-7,"b":1}',) == (js_json(value),)
    assert js_json(Json(None).value) == "null"


def test_fit_refuses_a_missing_column_and_leaves_out_optional_ones(conn: Connection) -> None:
    db = DatabaseWriter(conn, "global")
    with pytest.raises(SchemaError, match="lacks column"):
        db.fit("plugin_state_entries", {"plugin_id": "p", "no_such_column": 1})
    assert db.fit("plugin_state_entries", {"plugin_id": "p", "no_such_column": None}, optional=("no_such_column",)) == {"plugin_id": "p"}
    assert db.fit("plugin_state_entries", {"plugin_id": "p"}, extra={"namespace": "n", "other": 1}) == {"plugin_id": "p", "namespace": "n"}
    with pytest.raises(SchemaError, match="does not exist"):
        db.fit("no_such_table", {"a": 1})


def test_later_columns_are_added_only_for_a_value(conn: Connection) -> None:
    db = DatabaseWriter(conn, "global")
    assert not db.has_column("apns_registrations", "relay_origin")
    assert "relay_origin" not in db.fit("apns_registrations", {"relay_origin": None})
    assert not db.has_column("apns_registrations", "relay_origin")
    assert db.fit("apns_registrations", {"relay_origin": "https://relay"}) == {"relay_origin": "https://relay"}
    assert db.has_column("apns_registrations", "relay_origin")


def test_expectations_follow_what_was_written(conn: Connection) -> None:
    db = DatabaseWriter(conn, "global")
    key = ("plugin_id", "namespace", "entry_key")
    for name in ("a", "b", "c"):
        db.upsert("plugin_state_entries", {"plugin_id": "p", "namespace": "n", "entry_key": name, "value_json": "1",
                                           "created_at": 1, "expires_at": None}, key)
    db.delete("plugin_state_entries", {"entry_key": "c"})
    [expectation] = db.expectations()
    assert (expectation.db, expectation.table, expectation.count) == ("global", "plugin_state_entries", 2)
    assert _count(db, expectation.table, expectation.where, expectation.params) == 2
    conn.execute("DELETE FROM plugin_state_entries WHERE entry_key = 'a'")  # rows gone after commit: the check sees it
    assert _count(db, expectation.table, expectation.where, expectation.params) == 1


class _Document(dict):  # type: ignore[type-arg]
    """A dict subclass: a JSON value all the same."""


def test_rows_with_and_without_json_values_are_bound_and_tracked_alike(conn: Connection) -> None:
    db = DatabaseWriter(conn, "global")
    key = ("plugin_id", "namespace", "entry_key")
    values: dict[str, object] = {"plain": "1", "json": Json({"a": 1}), "dict": _Document(a=[1.0]), "list": [True, None], "float": 2.5}
    for name, value in values.items():
        db.upsert("plugin_state_entries", {"plugin_id": "p", "namespace": "n", "entry_key": name, "value_json": value,
                                           "created_at": 1, "expires_at": None}, key)
    stored = dict(db.select("plugin_state_entries", ("entry_key", "value_json")))
    assert stored == {"plain": "1", "json": '{"a":1}', "dict": '{"a":[1]}', "list": "[true,null]", "float": "2.5"}
    db.delete("plugin_state_entries", {"value_json": '{"a":1}'})  # a JSON value is matched by no delete (the row is gone in SQL)
    db.delete("plugin_state_entries", {"value_json": "1"})  # a plain value is
    db.delete("plugin_state_entries", {"created_at": True, "entry_key": "float"})  # True == 1: the tracker compares as Python does
    [expectation] = db.expectations()
    assert expectation.count == 3
    assert json.loads(expectation.params[0]) == [["p", "n", name] for name in ("dict", "json", "list")]


def test_replace_owned_counts_the_owner_rows(conn: Connection) -> None:
    db = DatabaseWriter(conn, "global")
    db.upsert("acp_replay_sessions", _acp_session("s1"), ("session_id",))
    db.replace_owned("acp_replay_events", {"session_id": "s1"}, ACP_EVENT_COLUMNS, [("s1", i, 1, "k", "{}") for i in range(3)])
    db.replace_owned("acp_replay_events", {"session_id": "s1"}, ACP_EVENT_COLUMNS, [("s1", i, 1, "k", "{}") for i in range(2)])
    owned = [e for e in db.expectations() if e.table == "acp_replay_events"]
    assert [(e.where, e.params, e.count) for e in owned] == [('"session_id" = ?', ("s1",), 2)]
    assert db.count("acp_replay_events", {"session_id": "s1"}) == 2


ACP_SESSION = {"session_key": "k", "cwd": "/", "complete": 1, "created_at": 1, "updated_at": 1, "next_seq": 1}
ACP_EVENT_COLUMNS = ("session_id", "seq", "at", "session_key", "update_json")


def _acp_session(session_id: str) -> dict[str, object]:
    return {"session_id": session_id, **ACP_SESSION}


def test_query_is_read_only(conn: Connection) -> None:
    db = DatabaseWriter(conn, "global")
    assert list(db.query("SELECT 1")) == [(1,)]
    with pytest.raises(SchemaError):
        list(db.query("DELETE FROM plugin_state_entries"))


# --- the guard -------------------------------------------------------------------------------


def _writer(conn: Connection) -> Writer:
    return Writer(conn, lambda agent: pytest.fail(f"agent db {agent}"))


def test_guard_refuses_a_table_outside_the_targets_naming_reader_and_table(conn: Connection) -> None:
    writer = _writer(conn)
    with writer.guarded("demo-reader", ("global.plugin_state_entries",)):
        writer.state.upsert("plugin_state_entries", {"plugin_id": "p", "namespace": "n", "entry_key": "k", "value_json": "1",
                                                      "created_at": 1, "expires_at": None}, ("plugin_id", "namespace", "entry_key"))
        with pytest.raises(SchemaError, match=r"reader demo-reader tried to insert into table plugin_blob_entries"):
            writer.state.insert("plugin_blob_entries", {"plugin_id": "p"})
        with pytest.raises(SchemaError, match=r"reader demo-reader tried to delete from table cron_jobs"):
            conn.execute("DELETE FROM cron_jobs")  # a raw connection is guarded too
        with pytest.raises(SchemaError, match="change the schema of table cron_jobs"):
            conn.execute("ALTER TABLE cron_jobs ADD COLUMN x TEXT")
        with pytest.raises(SchemaError, match="bookkeeping table migration_sources"):
            writer.state.count("migration_sources")
    assert writer.state.count("migration_sources") == 0  # the guard is gone after the write
    conn.execute("DELETE FROM cron_jobs")


def test_guard_allows_cascades_of_a_target(conn: Connection) -> None:
    writer = _writer(conn)
    writer.state.upsert("acp_replay_sessions", _acp_session("s1"), ("session_id",))
    writer.state.insert_many("acp_replay_events", ACP_EVENT_COLUMNS, [("s1", 0, 1, "k", "{}")])
    with writer.guarded("demo-reader", ("global.acp_replay_sessions",)):
        assert writer.state.delete("acp_replay_sessions", {"session_id": "s1"}) == 1
    assert writer.state.count("acp_replay_events") == 0


def test_target_levels() -> None:
    assert tables_of(("global.a", "agent.b", "c"), "global") == {"a", "c"}
    assert tables_of(("global.a", "agent.b", "c"), "agent") == {"b", "c"}


def _schema_tables() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for level in ("global", "agent"):
        text = (SCHEMA_DIR / f"{level}.sql").read_text(encoding="utf-8")
        found[level] = set(re.findall(r"CREATE TABLE IF NOT EXISTS ([a-z_0-9]+)", text))
    return found


def test_every_declared_target_exists_in_the_schema() -> None:
    tables = _schema_tables()
    for reader in all_readers():
        for target in reader.target_tables:
            level, _, table = target.partition(".")
            assert level in tables, f"{reader.kind}: target {target!r} names no database level (global./agent.)"
            assert table in tables[level], f"{reader.kind}: target {target!r} is no table of statekit/schema/{level}.sql"


def test_a_write_outside_the_targets_fails_the_source_in_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from statekit.legacy_readers.transcripts import TranscriptReader

    state = make_state(tmp_path, {"agents/main/sessions/s-1.jsonl": '{"type":"session","version":3,"id":"s-1"}\n'})
    monkeypatch.setattr(TranscriptReader, "target_tables", ("agent.transcript_events", "agent.transcript_event_identities"))
    report = migrate(state, MigrateOptions(backup=False))
    [outcome] = [o for o in report.outcomes if o.rel.endswith("s-1.jsonl")]
    assert outcome.status == "failed"
    assert "reader transcript-jsonl tried to insert into table sessions" in (outcome.message or "")
    assert rows(agent_db(state), "SELECT count(*) FROM sessions") == [(0,)]  # rolled back


# --- no raw SQL in readers ---------------------------------------------------------------------

# Modules still writing through raw connections (they go as they are converted to ctx.writer).
NOT_YET_CONVERTED: set[str] = set()
# Modules that still hand a raw connection (``ctx.global_db`` / ``ctx.agent_db``) to a helper.
STILL_HOLDING_A_CONNECTION: set[str] = set() | NOT_YET_CONVERTED
# Modules that query a legacy SQLite *source* (a private copy), never statekit's databases.
SOURCE_DATABASE_READERS = {"_sqlite_source"}
RAW_DELETE = re.compile(r"\bDELETE\s+FROM\b", re.IGNORECASE)


def _module_name(path: Path) -> str:
    """``devices`` or, inside a family package, ``cron/jobs``."""
    return path.relative_to(READERS_DIR).with_suffix("").as_posix()


def raw_sql_calls(path: Path) -> list[str]:
    """``.execute(`` / ``.executemany(`` calls and ``DELETE FROM`` strings in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("execute", "executemany", "executescript"):
            found.append(f"{path.name}:{node.lineno}: .{node.func.attr}(")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and RAW_DELETE.search(node.value):
            found.append(f"{path.name}:{node.lineno}: DELETE FROM")
    return found


def test_readers_write_no_raw_sql() -> None:
    offenders: list[str] = []
    clean_but_listed: list[str] = []
    for path in sorted(READERS_DIR.rglob("*.py")):  # family packages too (cron/...)
        name = _module_name(path)
        if name in ("writer", "base") or name in SOURCE_DATABASE_READERS:
            continue
        found = raw_sql_calls(path)
        if name in NOT_YET_CONVERTED:
            if not found:
                clean_but_listed.append(name)
        else:
            offenders.extend(found)
    assert not offenders, "readers write through ctx.writer, not raw SQL:\n" + "\n".join(offenders)
    assert not clean_but_listed, f"converted: take these off NOT_YET_CONVERTED: {clean_but_listed}"


def test_readers_hold_no_raw_connection() -> None:
    pattern = re.compile(r"\bctx\.(global_db|agent_db|db)\b")
    offenders = []
    clean_but_listed = []
    for path in sorted(READERS_DIR.rglob("*.py")):
        name = _module_name(path)
        if name in ("writer", "base"):
            continue
        found = [f"{name}.py:{n}: {line.strip()}" for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
        if name in STILL_HOLDING_A_CONNECTION:
            if not found and name not in NOT_YET_CONVERTED:
                clean_but_listed.append(name)
        else:
            offenders.extend(found)
    assert not offenders, "\n".join(offenders)
    assert not clean_but_listed, f"converted: take these off STILL_HOLDING_A_CONNECTION: {clean_but_listed}"


def test_a_context_outside_the_apply_loop_still_answers_receipt_questions(conn: Connection, tmp_path: Path) -> None:
    ctx = ImportContext(tmp_path, "run", 1, conn, lambda agent: pytest.fail(agent))
    assert ctx.imported_report("auth-profiles.json") is None
    assert ctx.dependency_pending("missing.json") is False
    assert Source(tmp_path, "x").path == tmp_path / "x"


def test_the_transition_paths_stay_gone() -> None:
    """No raw connection on the context, no SQL helpers beside the writer, one inspect signature, no moved-helper modules."""
    import inspect as _inspect

    from statekit.legacy_readers import all_readers, base

    for name in ("global_db", "agent_db", "db", "touched_agents"):
        assert not hasattr(ImportContext, name), name
    assert not hasattr(Writer, "touched_agents")  # the apply loop keeps its own agent connections
    for name in ("upsert", "insert_many", "require_columns", "forget_columns", "compact_json", "inspect_with"):
        assert not hasattr(base, name) and not hasattr(base.Reader, name), name
    for gone in ("_jsjson.py", "_rows.py"):
        assert not (READERS_DIR / gone).exists(), gone
    two_argument = [r.kind for r in all_readers() if "ctx" not in _inspect.signature(type(r).inspect).parameters]
    assert two_argument == [], "every inspect takes the run's ReadContext"


# --- reader contexts: plan and apply give readers the same config and clock ------------------------


def test_plan_gives_inspect_the_run_config_and_clock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from freezegun import freeze_time

    from statekit.legacy_readers.base import ReadContext
    from statekit.legacy_readers.channel_pairing import ChannelAllowFromReader
    from statekit.migrate.plan import build_plan

    config = tmp_path / "elsewhere" / "openclaw.json"
    config.parent.mkdir()
    config.write_text('{ channels: { mychan: {} } }', encoding="utf-8")  # JSON5, outside the state dir
    state = make_state(tmp_path, {"credentials/mychan-work-allowFrom.json": '{"version": 1, "allowFrom": ["a"]}'})
    seen: list[ReadContext] = []
    original = ChannelAllowFromReader.inspect

    def spy(self: ChannelAllowFromReader, source: Source, handle: object, ctx: ReadContext | None = None) -> object:
        assert ctx is not None
        seen.append(ctx)
        return original(self, source, handle, ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(ChannelAllowFromReader, "inspect", spy)
    with freeze_time("2026-06-01T12:00:00Z"):
        build_plan(state, env={"OPENCLAW_CONFIG_PATH": str(config)})
    [ctx] = seen
    assert ctx.config == {"channels": {"mychan": {}}}  # the one loader, honouring OPENCLAW_CONFIG_PATH
    assert ctx.now_ms == 1_780_315_200_000


def test_reopen_is_verified_against_the_planned_hash(tmp_path: Path) -> None:
    import hashlib

    from statekit.legacy_readers.base import ReadContext, SourceChanged

    (tmp_path / "a.json").write_bytes(b"{}")
    digest = hashlib.sha256(b"{}").hexdigest()
    ctx = ReadContext(tmp_path, 1, planned_hashes={"a.json": digest})
    assert ctx.read("a.json") == b"{}"
    assert ctx.reopened == {"a.json": digest}
    (tmp_path / "a.json").write_bytes(b"{ }")
    with pytest.raises(SourceChanged):
        ctx.read("a.json")


def test_no_reader_reopens_files_or_reads_the_clock_itself() -> None:
    """Readers re-read files through ctx.reopen/ctx.read and take time from ctx.now_ms (plan and apply agree)."""
    pattern = re.compile(r"\bopen_regular_file\(|\bread_regular_file\(|\btime\.time\(|\bload_config\(|\bdatetime\.now\(")
    # base and writer are the context itself; _sqlite_source copies a source database; sqlite_sidecars reads
    # debug-proxy capture blobs by path (they may sit outside the state dir).
    allowed = {"_sqlite_source", "sqlite_sidecars", "base", "writer"}
    offenders = []
    for path in sorted(READERS_DIR.rglob("*.py")):  # family packages too (cron/, plugins/)
        if _module_name(path) in allowed:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line) and "def " not in line:
                offenders.append(f"{path.name}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
