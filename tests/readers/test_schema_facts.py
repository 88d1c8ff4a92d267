"""The writer reads a table's columns once per schema version of the connection, and never trusts a rolled-back schema."""

from __future__ import annotations

from pathlib import Path

from statekit.db import open_rw
from statekit.legacy_readers.writer import DatabaseWriter


def test_columns_are_read_once_per_schema_version(tmp_path: Path) -> None:
    conn = open_rw(tmp_path / "a.sqlite")
    conn.execute("CREATE TABLE t(a TEXT)")
    assert set(DatabaseWriter(conn, "global").columns("t")) == {"a"}
    seen: list[str] = []
    conn.exec_trace = lambda _cursor, sql, _bindings: seen.append(sql) or True
    assert set(DatabaseWriter(conn, "global").columns("t")) == {"a"}  # a later source: the version is checked, no table_info
    assert not any("table_info" in sql for sql in seen) and any("schema_version" in sql for sql in seen)
    conn.exec_trace = None
    conn.execute("ALTER TABLE t ADD COLUMN b TEXT")
    assert set(DatabaseWriter(conn, "global").columns("t")) == {"a", "b"}
    conn.close()


def test_a_rolled_back_alter_is_not_remembered_under_its_version_number(tmp_path: Path) -> None:
    conn = open_rw(tmp_path / "a.sqlite")
    conn.execute("CREATE TABLE t(a TEXT)")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ALTER TABLE t ADD COLUMN b TEXT")
    assert set(DatabaseWriter(conn, "global").columns("t")) == {"a", "b"}
    conn.execute("ROLLBACK")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("ALTER TABLE t ADD COLUMN c TEXT")  # the same schema_version number as the rolled-back one
    assert set(DatabaseWriter(conn, "global").columns("t")) == {"a", "c"}
    conn.execute("ROLLBACK")
    conn.close()


def test_a_savepoint_rolled_back_forgets_the_columns_it_added(tmp_path: Path) -> None:
    conn = open_rw(tmp_path / "a.sqlite")
    conn.execute("CREATE TABLE t(a TEXT)")
    conn.execute("BEGIN IMMEDIATE")
    writer = DatabaseWriter(conn, "global")
    try:
        with writer.savepoint("s"):
            conn.execute("ALTER TABLE t ADD COLUMN b TEXT")
            assert set(DatabaseWriter(conn, "global").columns("t")) == {"a", "b"}
            raise RuntimeError
    except RuntimeError:
        pass
    conn.execute("ALTER TABLE t ADD COLUMN c TEXT")
    assert set(DatabaseWriter(conn, "global").columns("t")) == {"a", "c"}
    conn.execute("COMMIT")
    conn.close()
