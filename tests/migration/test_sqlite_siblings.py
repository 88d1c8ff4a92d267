"""SQLite's own -wal/-shm beside a legacy database: left by a process killed while it held the database open.

The pre-migration backup opens the database read-write and closes it, and SQLite then folds the WAL into the
database and removes both files: they were planned, but are gone when their turn comes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from helpers import FIXTURES, global_db, make_state, rows, run_cli

TASKS = "tasks/runs.sqlite"
KILLED_HOLDER = "import apsw, os, signal, sys; c = apsw.Connection(sys.argv[1]); c.execute('SELECT count(*) FROM sqlite_master').fetchall(); os.kill(os.getpid(), signal.SIGKILL)"


def _state_with_leftover_siblings(tmp_path: Path) -> Path:
    state = make_state(tmp_path)
    (state / "tasks").mkdir()
    shutil.copyfile(FIXTURES / "every-family" / ".openclaw" / TASKS, state / TASKS)
    subprocess.run([sys.executable, "-c", KILLED_HOLDER, str(state / TASKS)], check=False)
    assert (state / f"{TASKS}-wal").exists() and (state / f"{TASKS}-shm").exists()
    return state


def test_siblings_sqlite_removed_after_the_plan_leave_no_failed_receipt(tmp_path: Path) -> None:
    """Fails before the fix: ``tasks/runs.sqlite-wal`` and ``-shm`` got ``failed`` receipts (the every-family crash
    walk saw it at kill points 178 and 227, as a run killed during its backup's snapshot leaves them)."""
    state = _state_with_leftover_siblings(tmp_path)
    run = run_cli("migrate", "--state-dir", state, "--yes", "--backup-output", tmp_path / "backups")
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert not (state / f"{TASKS}-wal").exists() and not (state / f"{TASKS}-shm").exists()
    receipts = rows(global_db(state), "SELECT source_path, status FROM migration_sources WHERE source_path LIKE 'tasks/%'")
    assert receipts == [(TASKS, "completed")]
    assert rows(global_db(state), "SELECT count(*) FROM task_runs")[0][0] > 0
    again = run_cli("migrate", "--state-dir", state, "--yes", "--backup-output", tmp_path / "backups")
    assert again.returncode == 0 and "Nothing to migrate" in again.stdout + again.stderr, again.stdout + again.stderr


def test_siblings_still_there_are_read_with_their_database_and_retired(tmp_path: Path) -> None:
    state = _state_with_leftover_siblings(tmp_path)
    run = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert run.returncode == 0, run.stderr
    receipts = dict(rows(global_db(state), "SELECT source_path, status FROM migration_sources WHERE source_path LIKE 'tasks/%'"))
    assert receipts == {TASKS: "completed", f"{TASKS}-wal": "completed", f"{TASKS}-shm": "completed"}
    assert not (state / "tasks").exists() or not any((state / "tasks").iterdir())
