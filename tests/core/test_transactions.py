"""Write transactions begin in one place: ``statekit.db.immediate()`` (commit, or roll back on any error)."""

from __future__ import annotations

import re

import pytest

from product_source import product_files
from statekit import db

# A transaction-control statement written out by hand.
BEGIN_RE = re.compile(r"^\s*BEGIN(\s+(DEFERRED|IMMEDIATE|EXCLUSIVE))?(\s+TRANSACTION)?\s*;?\s*$", re.IGNORECASE)
CORE = "statekit.db"
# Modules still beginning their own transactions (the apply loop and the reader base, where the writer is being
# built): empty this list as they move to db.immediate() or to the writer. An entry that no longer needs it fails the test below.
ALLOWED = {"statekit.migrate.apply"}  # the apply loop holds one transaction per database across a source (see migrate/apply.py)


def _hand_written_begins() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for source in product_files():
        lines = [line for line, text in source.strings(docstrings=False) if BEGIN_RE.match(text)]
        if lines:
            found[source.module] = lines
    return found


def test_only_db_immediate_begins_a_transaction() -> None:
    found = _hand_written_begins()
    assert set(found) - ALLOWED - {CORE} == set(), {m: found[m] for m in set(found) - ALLOWED - {CORE}}
    assert found.get(CORE) == [next(line for line, text in _source(CORE).strings() if text == "BEGIN IMMEDIATE")]
    assert ALLOWED - set(found) == set(), "no longer begins a transaction by hand: remove it from ALLOWED"


def _source(module: str):
    return next(s for s in product_files() if s.module == module)


def test_the_scan_sees_a_hand_written_begin() -> None:
    for text in ("BEGIN IMMEDIATE", "begin", "BEGIN EXCLUSIVE TRANSACTION;", " BEGIN DEFERRED "):
        assert BEGIN_RE.match(text), text
    for text in ("-----BEGIN PUBLIC KEY-----", "A ``BEGIN IMMEDIATE`` write transaction", "BEGIN ... END;", "beginning"):
        assert not BEGIN_RE.match(text), text


def _table(conn: db.Connection) -> list[tuple[int]]:
    return conn.execute("SELECT n FROM t ORDER BY n").fetchall()


def test_immediate_commits_the_block() -> None:
    conn = db.connect(":memory:")
    conn.execute("CREATE TABLE t (n INTEGER)")
    with db.immediate(conn) as inside:
        assert inside is conn and conn.in_transaction
        conn.execute("INSERT INTO t VALUES (1)")
    assert not conn.in_transaction and _table(conn) == [(1,)]


@pytest.mark.parametrize("error", [ValueError("boom"), KeyboardInterrupt(), SystemExit(3)])
def test_immediate_rolls_back_on_any_error_and_re_raises_it(error: BaseException) -> None:
    conn = db.connect(":memory:")
    conn.execute("CREATE TABLE t (n INTEGER)")
    with pytest.raises(type(error)) as raised:
        with db.immediate(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            raise error
    assert raised.value is error
    assert not conn.in_transaction and _table(conn) == []


def test_a_failed_commit_is_rolled_back_and_raised() -> None:
    conn = db.connect(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("CREATE TABLE p (id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TABLE c (p INTEGER REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)")
    with pytest.raises(db.SQLiteError):  # the deferred foreign key fails at COMMIT, not in the block
        with db.immediate(conn):
            conn.execute("INSERT INTO c VALUES (7)")
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM c").fetchone() == (0,)


def test_an_error_after_sqlite_rolled_back_by_itself_is_the_one_raised() -> None:
    conn = db.connect(":memory:")
    conn.execute("CREATE TABLE t (n INTEGER)")
    with pytest.raises(LookupError, match="the real error"):
        with db.immediate(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            conn.execute("ROLLBACK")  # as SQLite does by itself on a full disk
            raise LookupError("the real error")
    assert _table(conn) == []
