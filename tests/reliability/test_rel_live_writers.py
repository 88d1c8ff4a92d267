"""Backups taken while another process commits to every database as fast as it can.

``rel_writer.py`` runs as a separate process against every database of a
migrated install (the global one, three agent databases and a plugin
database in WAL mode), committing batches of 5 sequence numbers into two
tables per transaction, round robin. Meanwhile ``statekit backup create``
runs again and again. Every archive must verify (exit 0) and restore, and in
every restored database both tables must hold exactly ``1..n`` (a committed
prefix: no gap, no half transaction, ``n`` a multiple of the batch), with
``n`` at least what the writer had committed before that backup started and
never less than in the previous archive. The writer must never see an error.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import rel_harness as h
from helpers import open_db
from statekit.db import OperationalError

WRITER = Path(__file__).with_name("rel_writer.py")
BATCH = 5
CI_BACKUPS = 3
SLOW_BACKUPS = 20


def _committed(log: Path, databases: int) -> list[int]:
    counts = [0] * databases
    for line in log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit():
            counts[int(parts[0])] = int(parts[1])
    return counts


def _seqs(db: Path, table: str) -> list[int]:
    conn = open_db(db, "ro")
    try:
        return [r[0] for r in conn.execute(f"SELECT seq FROM {table} ORDER BY seq")]
    except OperationalError:
        return []
    finally:
        conn.close()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> h.BackupWorld:
    return h.build_backup_world(tmp_path_factory.mktemp("live"))


def backups_under_load(world: h.BackupWorld, count: int, scratch: Path) -> list[str]:
    state = world.reset()
    output = world.arena.output
    databases = h.live_databases(state)
    rels = [db.relative_to(state).as_posix() for db in databases]
    stop, log = scratch / "stop", scratch / "writer.log"
    stop.unlink(missing_ok=True)
    log.unlink(missing_ok=True)
    writer = subprocess.Popen([sys.executable, str(WRITER), str(stop), str(log), *map(str, databases)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    problems: list[str] = []
    previous = dict.fromkeys(rels, 0)
    figures = h.FIGURES["live-writers"]
    try:
        deadline = time.monotonic() + 30
        while (not log.exists() or sum(_committed(log, len(rels))) < 50) and time.monotonic() < deadline:
            time.sleep(0.02)
        for index in range(count):
            h.next_archive_second(output)
            before = _committed(log, len(rels))
            made = h.fork_cli(*world.args())
            if made.returncode != 0 or made.traceback:
                problems.append(f"backup {index}: {made}")
                continue
            archive = h.archives(output)[-1]
            verify = h.fork_cli("backup", "verify", archive)
            if verify.returncode != 0:
                problems.append(f"backup {index}: verify exit {verify.returncode}: {verify.stdout[-400:]}")
            target = scratch / f"restored-{index}"
            restored = h.fork_cli("backup", "restore", archive, "--target", target, "--yes")
            if restored.returncode != 0:
                problems.append(f"backup {index}: restore exit {restored.returncode}: {restored.stderr[-400:]}")
                continue
            figures["backups under load"] += 1
            for i, rel in enumerate(rels):
                a, b = _seqs(target / rel, "live_a"), _seqs(target / rel, "live_b")
                n = len(a)
                figures["database snapshots checked"] += 1
                if a != b:
                    problems.append(f"backup {index}: {rel}: live_a and live_b differ (a transaction split)")
                elif a != list(range(1, n + 1)) or n % BATCH:
                    problems.append(f"backup {index}: {rel}: not a committed prefix ({n} rows, gaps or a partial batch)")
                elif n < before[i]:
                    problems.append(f"backup {index}: {rel}: {n} rows, but {before[i]} were committed before the backup started")
                elif n < previous[rel]:
                    problems.append(f"backup {index}: {rel}: {n} rows, fewer than the previous archive ({previous[rel]})")
                else:
                    figures["committed rows captured"] += n
                previous[rel] = n
            h._force_rmtree(target)
    finally:
        stop.touch()
        out, err = writer.communicate(timeout=60)
    if writer.returncode != 0 or "errors=0" not in out:
        problems.append(f"writer: exit {writer.returncode}: {out[-300:]} {err[-600:]}")
    figures["writer commits"] += int(out.split("commits=")[1].split()[0]) if "commits=" in out else 0
    return problems


def test_backups_while_every_database_is_written(world: h.BackupWorld, tmp_path: Path) -> None:
    problems = backups_under_load(world, CI_BACKUPS, tmp_path)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_many_backups_while_every_database_is_written(world: h.BackupWorld, tmp_path: Path) -> None:
    problems = backups_under_load(world, SLOW_BACKUPS, tmp_path)
    assert not problems, "\n".join(problems)
