"""Nothing hangs or balloons (issue 11, item 7: foreign file kinds and hostile SQLite schemas).

Every file statekit did not create is opened non-blocking and ``fstat``-ed before a byte is read,
and whole-file reads are bounded. On 308a7ed a FIFO at a gateway lock file hung ``migrate`` and
``backup restore`` (forever: the run is killed here after the deadline), and a gateway lock that
links to ``/dev/zero`` read until memory ran out; a FIFO at the global database path hung
``inspect``/``backup create``/``migrate``. (A FIFO or device at the config or at the ``-wal`` held
already on 308a7ed: those placements stay as guards.) A database in the state dir (or restored
from an archive) with a trigger that never ends hung ``backup create``; a view that never ends
hung whoever read it (in-process, for ever). Now each run ends within the deadline with a clear
outcome.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import rel_harness as h
from helpers import open_db, run_cli_peak_rss
from statekit.db import FOREIGN_STEP_BUDGET, SQLiteError, WorkLimitError, connect, open_rw

FIGURE = h.FIGURES["hangs"]
DEADLINE = 90.0  # seconds; the runs below take 1-15 s on the shared CI machine
INFINITE = "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r"


def _finished(run: h.Run) -> list[str]:
    problems = []
    if run.killed:
        problems.append(f"hung: killed after {DEADLINE:.0f} s")
    if run.traceback:
        problems.append(f"traceback: {run.stderr[-800:]}")
    return problems


def _plant(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if os.path.lexists(path):
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "dev-urandom":
        path.symlink_to("/dev/urandom")
    else:
        raise ValueError(kind)


KINDS = ["fifo", "dev-zero", "dev-urandom"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("lock", ["gateway.lock", "gateway.3f2a9c1b.lock"])
def test_a_gateway_lock_that_is_not_a_file_never_hangs_migrate_or_restore(tmp_path: Path, kind: str, lock: str) -> None:
    """Fails on 308a7ed: migrate and restore blocked on the FIFO / read /dev/zero without end."""
    state = h.copy_world("demo-install", tmp_path)
    run = h.fork_cli("backup", "create", "--state-dir", state, "--output", tmp_path / "out", "--json")
    assert run.returncode == 0, run
    archive = json.loads(run.stdout)["archive"]
    _plant(state / lock, kind)
    run = h.fork_cli("migrate", "--yes", "--no-backup", "--state-dir", state, kill_after=DEADLINE)
    assert not _finished(run), run
    assert run.returncode in (0, 3), run
    run = h.fork_cli("backup", "restore", archive, "--state-dir", state, "--yes", kill_after=DEADLINE)
    assert not _finished(run), run
    assert run.returncode == 0, run
    FIGURE["foreign file kinds x places"] += 1
    FIGURE["held"] += 1


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
@pytest.mark.parametrize("place", ["openclaw.json", "state/openclaw.sqlite", "state/openclaw.sqlite-wal"])
def test_a_config_or_database_that_is_not_a_file_never_hangs(tmp_path: Path, kind: str, place: str) -> None:
    """Fails on 308a7ed for the FIFO at ``state/openclaw.sqlite`` (inspect, backup create and migrate blocked on it)."""
    state = h.copy_world("demo-install", tmp_path)
    if place.startswith("state/"):
        run = h.fork_cli("migrate", "--yes", "--no-backup", "--state-dir", state)
        assert run.returncode in (0, 3), run
        if place.endswith("-wal"):
            (state / place).unlink(missing_ok=True)
    _plant(state / place, kind)
    for args in (["backup", "create", "--state-dir", state, "--output", tmp_path / "out"],
                 ["inspect", "--state-dir", state],
                 ["plan", "--state-dir", state],
                 ["migrate", "--yes", "--no-backup", "--state-dir", state]):
        run = h.fork_cli(*args, kill_after=DEADLINE)
        assert not _finished(run), run
        assert run.returncode in (0, 1, 3, 5), run
        if run.returncode == 1:
            assert len(h.error_lines(run)) == 1, run
        FIGURE["foreign file kinds x places"] += 1
    FIGURE["held"] += 1


def test_reading_a_device_link_is_bounded_in_memory(tmp_path: Path) -> None:
    """Fails on 308a7ed (GBs read): a gateway lock linking to /dev/zero is refused before a byte is read.

    Peak RSS is each child's own VmHWM (a fresh interpreter): ru_maxrss of forked children counts pytest's pages."""
    state = h.copy_world("demo-install", tmp_path)
    _plant(state / "gateway.lock", "dev-zero")
    for args in (("plan", "--state-dir", state), ("migrate", "--yes", "--no-backup", "--state-dir", state)):
        proc, peak_mb = run_cli_peak_rss(*args, timeout=DEADLINE)  # TimeoutExpired: it hung
        assert "Traceback" not in proc.stderr, proc.stderr
        assert peak_mb < 400, f"{args[0]}: peak RSS {peak_mb:.0f} MB"
    FIGURE["held"] += 1


# --------------------------------------------------------------------------- hostile SQLite


def test_a_view_is_never_evaluated_on_a_read_only_open(tmp_path: Path) -> None:
    """Hangs on 308a7ed (for ever, in-process): a view that never ends, named like a table, is now refused at once."""
    db = tmp_path / "hostile.sqlite"
    conn = open_db(db)
    conn.execute(f"CREATE VIEW sessions AS {INFINITE}")
    conn.close()
    start = time.monotonic()
    ro = connect(db, mode="ro")
    with pytest.raises(SQLiteError):  # views are off on read-only opens: the query is refused before it runs
        ro.execute("SELECT count(*) FROM sessions").fetchall()
    ro.close()
    assert time.monotonic() - start < 5
    FIGURE["hostile schemas"] += 1
    FIGURE["held"] += 1


def test_a_recursive_query_on_a_foreign_database_stops_at_the_budget(tmp_path: Path) -> None:
    """Hangs on 308a7ed: the work budget stops a statement that returns nothing for too long, naming the cause."""
    db = tmp_path / "plain.sqlite"
    open_db(db).close()
    ro = connect(db, mode="ro")
    start = time.monotonic()
    with pytest.raises(WorkLimitError, match="work budget"):
        ro.execute(f"SELECT count(*) FROM ({INFINITE})").fetchall()
    ro.close()
    assert ro is not None and FOREIGN_STEP_BUDGET <= 200_000_000
    assert time.monotonic() - start < DEADLINE
    FIGURE["hostile schemas"] += 1
    FIGURE["held"] += 1


def test_a_trigger_that_never_ends_stops_at_the_budget_and_changes_nothing(tmp_path: Path) -> None:
    """Hangs on 308a7ed: a trigger on a table statekit writes runs out of budget; the write and its rows roll back."""
    db = tmp_path / "trigger.sqlite"
    conn = open_db(db)
    conn.execute("CREATE TABLE t(x)")
    conn.execute("CREATE TABLE sink(x)")
    conn.execute(f"CREATE TRIGGER evil AFTER INSERT ON t BEGIN INSERT INTO sink {INFINITE}; END")
    conn.close()
    rw = open_rw(db)
    with pytest.raises(WorkLimitError):
        rw.execute("INSERT INTO t VALUES (1)")
    rw.close()
    assert open_db(db, "ro").execute("SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM sink)").fetchone() == (0, 0)
    FIGURE["hostile schemas"] += 1
    FIGURE["held"] += 1


def test_backup_create_on_a_state_db_with_an_endless_trigger_finishes(tmp_path: Path) -> None:
    """Fails on 308a7ed (killed at the deadline): the trigger on ``backup_runs`` looped for ever inside backup create."""
    state = h.copy_world("demo-install", tmp_path)
    run = h.fork_cli("migrate", "--yes", "--no-backup", "--state-dir", state)
    assert run.returncode in (0, 3), run
    conn = open_db(state / "state" / "openclaw.sqlite")
    conn.execute("CREATE TABLE IF NOT EXISTS backup_runs(id TEXT PRIMARY KEY, started_at INTEGER, finished_at INTEGER,"
                 " status TEXT, archive_path TEXT, report_json TEXT)")
    conn.execute("CREATE TABLE sink(x)")
    conn.execute(f"CREATE TRIGGER evil AFTER INSERT ON backup_runs BEGIN INSERT INTO sink {INFINITE}; END")
    conn.close()
    run = h.fork_cli("backup", "create", "--state-dir", state, "--output", tmp_path / "out", kill_after=DEADLINE)
    assert not _finished(run), run
    assert "work budget" in run.stderr, run
    assert open_db(state / "state" / "openclaw.sqlite", "ro").execute("SELECT count(*) FROM sink").fetchone() == (0,)
    FIGURE["hostile schemas"] += 1
    FIGURE["held"] += 1


def test_trusted_schema_is_off_and_limits_are_set(tmp_path: Path) -> None:
    """Fails on 308a7ed: every connection has no side-effect function or virtual table from the schema, bounded programs."""
    conn = open_rw(tmp_path / "x.sqlite")
    assert conn.execute("PRAGMA trusted_schema").fetchone() == (0,)
    import apsw

    assert conn.limit(apsw.SQLITE_LIMIT_TRIGGER_DEPTH, -1) <= 100
    assert conn.limit(apsw.SQLITE_LIMIT_VDBE_OP, -1) <= 10_000_000
    conn.close()
    FIGURE["held"] += 1
