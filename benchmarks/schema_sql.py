#!/usr/bin/env python3
"""How long the release's schema inserts take on their own, against the whole floor (issue 16's wall goal).

    schema_sql.py STATE_DIR [--rounds N]

The rows ``floor.py schema`` writes are prepared first (every line read and parsed), then only their
inserts are timed: per transcript one transaction with its ``sessions`` row, its ``transcript_events``
and its ``transcript_event_identities`` into OpenClaw 2026.9.6's agent schema. Beside it, in the same
round, the whole floor (``floor.py insert``: read, parse and insert into one plain table) runs as a
child process. SQLite has one writer per database, so with every other piece of work moved to another
core, a migration's wall time is still at least these inserts: their ratio to the floor's wall time
bounds what two cores can give (``docs/performance.md``).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import floor

HERE = Path(__file__).resolve().parent


def inserts_only(state: Path, db: Path) -> tuple[float, float]:
    """(CPU s, wall s) of the schema's inserts of every transcript, the rows prepared before the clock starts."""
    prepared = [floor.schema_rows(path) for path in floor.transcripts(state)]
    conn = floor.open_schema_db(db)
    cpu, wall = time.process_time(), time.perf_counter()
    for rows in prepared:
        floor.write_schema_rows(conn, *rows)
    result = time.process_time() - cpu, time.perf_counter() - wall
    conn.close()
    return result


def whole_floor(state: Path, db: Path) -> tuple[float, float]:
    """(CPU s, wall s) of ``floor.py insert`` in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    subprocess.run([sys.executable, str(HERE / "floor.py"), "insert", str(state), str(db)], check=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("state_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rows: dict[str, list[tuple[float, float]]] = {"inserts": [], "floor": []}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for name, measure in (("inserts", inserts_only), ("floor", whole_floor))[:: 1 if round_ % 2 == 0 else -1]:
                db = Path(scratch) / f"{name}-{round_}.sqlite"
                rows[name].append(measure(args.state_dir, db))
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{db}{suffix}").unlink(missing_ok=True)
    inserts_wall = statistics.median(w for _, w in rows["inserts"])
    floor_wall = statistics.median(w for _, w in rows["floor"])
    print(f"schema inserts alone: CPU {statistics.median(c for c, _ in rows['inserts']):.2f} s, wall {inserts_wall:.2f} s")
    print(f"whole floor:          CPU {statistics.median(c for c, _ in rows['floor']):.2f} s, wall {floor_wall:.2f} s")
    print(f"inserts / floor wall: {inserts_wall / floor_wall:.2f} (median of {args.rounds}; load {os.getloadavg()[0]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
