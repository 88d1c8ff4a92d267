"""One current SQLite engine everywhere: statekit.db is the only door to SQLite.

* no product module imports Python's ``sqlite3`` (the OS library: 3.40 on
  Debian 12, too old for OpenClaw 2026.9.6's schema, and a second SQLite
  library in one process breaks the first one's POSIX locks);
* the engine's SQLite is one OpenClaw 2026.9.6 accepts (WAL-reset-safe) and
  has ``octet_length`` (3.43+);
* a database whose schema uses ``octet_length`` in a CHECK and a generated
  column, like 9.6's, is opened, snapshotted (``VACUUM INTO``), checked and
  backed up through statekit;
* the sqlite3 behaviours the code relies on hold through the engine.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
import re
from pathlib import Path

import pytest

from statekit.backup.snapshot import inspect_db, snapshot_db
from helpers import REPO, open_db, run_cli
from statekit import __version__, db

PRODUCT_PACKAGES = ("statekit", "migrate", "backup", "legacy_readers")
OPENCLAW_SQLITE_PROBE = Path("/root/.cache/statekit-interop/openclaw-2026.9.6/node_modules/openclaw/node-sqlite.mjs")


# --------------------------------------------------------------------------- no second engine


def _sqlite3_imports(path: Path) -> list[str]:
    """Every way ``path`` loads stdlib sqlite3: import statements and import_module/__import__ calls."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        found += [f"{path.relative_to(REPO)}:{node.lineno}: {name}" for name in names if name.split(".")[0] in ("sqlite3", "_sqlite3")]
    return found


def test_the_scan_finds_every_form_of_import(tmp_path: Path) -> None:
    sample = REPO / "tests" / "core" / f"_scan_sample_{tmp_path.name}.py"
    sample.write_text(
        "import os, sqlite3\nfrom sqlite3 import connect\nimport importlib\n"
        "def f():\n    import sqlite3.dbapi2\n    importlib.import_module('sqlite3')\n    return __import__('_sqlite3')\n",
        encoding="utf-8",
    )
    try:
        hits = _sqlite3_imports(sample)
    finally:
        sample.unlink()
    assert [h.split(": ")[1] for h in hits] == ["sqlite3", "sqlite3", "sqlite3.dbapi2", "sqlite3", "_sqlite3"]


def test_no_product_module_imports_stdlib_sqlite3() -> None:
    modules = [p for package in PRODUCT_PACKAGES for p in sorted((REPO / package).rglob("*.py"))]
    assert len(modules) > 50  # the scan really looked at the product
    offenders = [hit for path in modules for hit in _sqlite3_imports(path)]
    assert not offenders, "stdlib sqlite3 imported (use statekit.db):\n" + "\n".join(offenders)


def test_the_engine_is_the_one_statekit_db_names() -> None:
    conn = db.connect(":memory:")
    try:
        (version,) = conn.execute("SELECT sqlite_version()").fetchone()
    finally:
        conn.close()
    assert version == db.SQLITE_VERSION
    assert db.engine_description() == f"SQLite {db.SQLITE_VERSION}, apsw {db.ENGINE_VERSION}"


# --------------------------------------------------------------------------- a version OpenClaw 2026.9.6 accepts


def _version(text: str) -> tuple[int, int, int]:
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", text)
    assert match, f"not a SQLite version: {text!r}"
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def wal_reset_safe(text: str) -> bool:
    """OpenClaw 2026.9.6's rule (node-sqlite.mjs): 3.51.3+, or 3.50.7+ on 3.50.x, or 3.44.6+ on 3.44.x."""
    major, minor, patch = _version(text)
    if major != 3:
        return major > 3
    return minor > 51 or (minor == 51 and patch >= 3) or (minor == 50 and patch >= 7) or (minor == 44 and patch >= 6)


@pytest.mark.parametrize(
    ("version", "safe"),
    [("3.40.1", False), ("3.44.5", False), ("3.44.6", True), ("3.45.0", False), ("3.50.4", False), ("3.50.6", False),
     ("3.50.7", True), ("3.51.1", False), ("3.51.2", False), ("3.51.3", True), ("3.52.0", True), ("3.54.1", True), ("4.0.0", True)],
)
def test_the_wal_reset_rule(version: str, safe: bool) -> None:
    assert wal_reset_safe(version) is safe


def test_the_engine_sqlite_is_new_enough_for_openclaw_2026_9_6() -> None:
    assert wal_reset_safe(db.SQLITE_VERSION), f"SQLite {db.SQLITE_VERSION} is not WAL-reset-safe: OpenClaw 2026.9.6 refuses it"
    assert _version(db.SQLITE_VERSION) >= (3, 43, 0), f"SQLite {db.SQLITE_VERSION} lacks octet_length (3.43+)"


def test_the_rule_is_still_the_one_openclaw_states() -> None:
    if not OPENCLAW_SQLITE_PROBE.is_file():
        pytest.skip("OpenClaw 2026.9.6 is not installed here")
    text = OPENCLAW_SQLITE_PROBE.read_text(encoding="utf-8")
    assert "use SQLite 3.51.3+, 3.50.7+, or 3.44.6+" in text
    for clause in ("minor === 51 && patch >= 3", "minor === 50 && patch >= 7", "minor === 44 && patch >= 6"):
        assert clause in text


def test_version_option_prints_statekit_and_sqlite() -> None:
    for flag in ("--version", "-V"):
        done = run_cli(flag)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"statekit {__version__} (SQLite {db.SQLITE_VERSION}, apsw {db.ENGINE_VERSION})"
        assert done.stderr == ""


# --------------------------------------------------------------------------- a 9.6-style schema


NINE_SIX_LIKE = """
CREATE TABLE session_nodes (
  node_id TEXT PRIMARY KEY,
  navigation_json TEXT,
  navigation_bytes INTEGER GENERATED ALWAYS AS (octet_length(navigation_json)) STORED,
  CHECK (
    navigation_json IS NULL OR CASE WHEN json_valid(navigation_json) THEN coalesce(
      octet_length(navigation_json) <= 64
      AND json_type(navigation_json, '$.version') = 'integer', 0) ELSE 0 END
  )
);
CREATE INDEX idx_session_nodes_bytes ON session_nodes(navigation_bytes);
PRAGMA user_version = 7;
"""


def _nine_six_like(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = db.open_rw(path)
    try:
        conn.executescript(NINE_SIX_LIKE)
        with db.immediate(conn):
            conn.executemany(
                "INSERT INTO session_nodes(node_id, navigation_json) VALUES (?, ?)",
                [("n1", json.dumps({"version": 1, "note": "é"})), ("n2", None), ("n3", json.dumps({"version": 2}))],
            )
    finally:
        conn.close()
    return path


def test_octet_length_schema_is_enforced_snapshotted_and_checked(tmp_path: Path) -> None:
    source = _nine_six_like(tmp_path / "state" / "openclaw.sqlite")
    conn = db.open_rw(source)
    try:
        with pytest.raises(db.IntegrityError):  # the CHECK really runs octet_length: 65+ bytes refused
            conn.execute("INSERT INTO session_nodes(node_id, navigation_json) VALUES ('big', ?)", (json.dumps({"version": 1, "pad": "x" * 60}),))
    finally:
        conn.close()
    snap = snapshot_db(source, tmp_path / "snap.sqlite")
    assert snap.facts.ok and snap.facts.user_version == 7
    assert inspect_db(snap.path).integrity == "ok"
    with db.read_only_view(snap.path) as view:
        got = view.execute("SELECT node_id, navigation_bytes FROM session_nodes ORDER BY node_id").fetchall()
        assert view.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert got == [("n1", len(json.dumps({"version": 1, "note": "é"}).encode())), ("n2", None), ("n3", 14)]


def test_backup_create_and_verify_a_state_dir_with_octet_length(tmp_path: Path) -> None:
    state = tmp_path / ".openclaw"
    _nine_six_like(state / "state" / "openclaw.sqlite")
    (state / "openclaw.json").write_text("{}\n", encoding="utf-8")
    made = run_cli("backup", "create", "--state-dir", state, "--output", tmp_path / "out", "--json")
    assert made.returncode == 0, made.stderr
    archive = json.loads(made.stdout)["archive"]
    checked = run_cli("backup", "verify", archive)
    assert checked.returncode == 0, checked.stderr + checked.stdout


# --------------------------------------------------------------------------- sqlite3 behaviours kept


def test_paths_that_need_quoting_in_a_uri(tmp_path: Path) -> None:
    path = tmp_path / "we ird %41?#ü" / "x.sqlite"
    path.parent.mkdir()
    conn = db.connect(path)
    conn.execute("CREATE TABLE t (a)")
    conn.close()
    assert [p.name for p in path.parent.iterdir()] == ["x.sqlite"] and db.is_sqlite_file(path)
    ro = db.connect(path, mode="ro")
    assert ro.execute("SELECT count(*) FROM t").fetchone() == (0,)
    ro.close()
    with pytest.raises(db.OperationalError):
        db.connect(tmp_path / "missing.sqlite", mode="rw")
    assert not (tmp_path / "missing.sqlite").exists()


def test_one_statement_per_execute_and_nothing_runs_before_the_refusal() -> None:
    conn = db.connect(":memory:")
    conn.execute("CREATE TABLE t (a)")
    with pytest.raises(db.SQLiteError, match="one statement at a time"):
        conn.execute("INSERT INTO t VALUES (1); DROP TABLE t")
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    assert conn.execute("SELECT 1;  -- trailing comment\n").fetchall() == [(1,)]
    conn.executescript("INSERT INTO t VALUES (1); INSERT INTO t VALUES (2);")
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (2,)


def test_rowcount_counts_the_statement_not_its_triggers() -> None:
    conn = db.connect(":memory:")
    conn.executescript(
        "CREATE TABLE t (a INTEGER PRIMARY KEY); CREATE TABLE log (a);"
        "CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN INSERT INTO log VALUES (new.a); INSERT INTO log VALUES (new.a); END;"
    )
    assert conn.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(4)]).rowcount == 4
    assert conn.executemany("INSERT INTO t VALUES (?)", []).rowcount == 0
    assert conn.executemany("INSERT INTO t VALUES (?)", iter([(10,), (11,)])).rowcount == 2
    assert conn.total_changes == 18  # triggers included there, as sqlite3's total_changes
    assert conn.execute("DELETE FROM t WHERE a < 3").rowcount == 3
    assert conn.execute("UPDATE t SET a = a WHERE a = 99").rowcount == 0
    assert conn.execute("SELECT * FROM t").rowcount == -1


def test_bindings_and_errors_like_sqlite3(tmp_path: Path) -> None:
    conn = db.connect(":memory:")
    row = conn.execute(
        "SELECT ?, typeof(?), ?, ?, typeof(?)",
        (True, False, dt.datetime(2026, 1, 2, 3, 4, 5), dt.date(2026, 1, 2), memoryview(b"\x00b")),
    ).fetchone()
    assert row == (1, "integer", "2026-01-02 03:04:05", "2026-01-02", "blob")
    for bad in ({"a": 1}, [1], object()):
        with pytest.raises(db.SQLiteError, match="not supported"):
            conn.execute("SELECT ?", (bad,))
    with pytest.raises(OverflowError):
        conn.execute("SELECT ?", (2**63,))
    conn.execute("CREATE TABLE u (x TEXT)")
    conn.execute("INSERT INTO u VALUES (CAST(x'ff61' AS TEXT))")
    for read in (lambda c: c.fetchone(), lambda c: c.fetchall(), list):
        with pytest.raises(db.OperationalError, match="UTF-8"):
            read(conn.execute("SELECT x FROM u"))
    conn.execute("CREATE TABLE k (a PRIMARY KEY)")
    conn.execute("INSERT INTO k VALUES (1)")
    with pytest.raises(db.IntegrityError) as caught:
        conn.execute("INSERT INTO k VALUES (1)")
    assert db.error_name(caught.value) == "SQLITE_CONSTRAINT_PRIMARYKEY"
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 500)
    bad = db.connect(garbage, mode="ro")
    with pytest.raises(db.CorruptError):
        bad.execute("SELECT * FROM sqlite_master").fetchall()
    bad.close()


def test_named_rows_and_transactions() -> None:
    conn = open_db(":memory:", named_rows=True)
    conn.execute("CREATE TABLE t (Name TEXT, n INTEGER)")
    assert not conn.in_transaction
    with db.immediate(conn):
        assert conn.in_transaction
        conn.execute("INSERT INTO t VALUES ('a', 1)")
    assert not conn.in_transaction  # committed, and nothing began behind our back
    row = conn.execute("SELECT * FROM t").fetchone()
    assert row == ("a", 1) and row["name"] == "a" and row["N"] == 1 and dict(row) == {"Name": "a", "n": 1}
    with pytest.raises(IndexError):
        row["missing"]


def test_statekit_databases_keep_their_pragmas_and_modes(tmp_path: Path) -> None:
    path = tmp_path / "new" / "openclaw.sqlite"
    conn = db.open_rw(path)
    try:
        pragmas = {name: conn.execute(f"PRAGMA {name}").fetchone()[0] for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")}
    finally:
        conn.close()
    assert pragmas == {"journal_mode": "wal", "synchronous": 1, "foreign_keys": 1, "busy_timeout": db.BUSY_TIMEOUT_MS}
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    default = db.connect(path, mode="ro")
    assert default.execute("PRAGMA busy_timeout").fetchone() == (db.DEFAULT_BUSY_TIMEOUT_MS,)
    default.close()


def test_deleted_rows_leave_no_bytes_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "secrets.sqlite"
    conn = db.open_rw(path)
    conn.execute("CREATE TABLE t (v TEXT)")
    conn.execute("INSERT INTO t VALUES (?)", ("canary-" + "s3cr3t" * 20,))
    conn.execute("INSERT INTO t VALUES ('kept')")
    conn.execute("DELETE FROM t WHERE v LIKE 'canary-%'")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert b"s3cr3t" not in path.read_bytes() and b"kept" in path.read_bytes()


def test_read_only_view_writes_nothing_beside_the_database(tmp_path: Path) -> None:
    path = tmp_path / "live.sqlite"
    writer = db.open_rw(path)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("CREATE TABLE t (a)")
    writer.execute("INSERT INTO t VALUES (1)")  # committed, still only in the -wal
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with db.read_only_view(path) as view:
        assert view.execute("SELECT count(*) FROM t").fetchone() == (1,)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    writer.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live.sqlite"]
    with db.read_only_view(path) as view:  # no -wal: immutable, no sidecar created
        assert view.execute("SELECT count(*) FROM t").fetchone() == (1,)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live.sqlite"]
