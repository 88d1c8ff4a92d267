#!/usr/bin/env python3
"""How long the release's schema inserts take on their own, against the whole floor (issue 16's wall goal).

    schema_sql.py STATE_DIR [--rounds N]

The rows ``floor.py schema`` writes are prepared first (every line read and parsed), then only their
inserts are timed: per transcript its ``sessions`` row, its ``transcript_events`` and its
``transcript_event_identities`` into OpenClaw 2026.9.6's agent schema, once with one transaction per
transcript (as the floor commits) and once with statekit's batches of small transcripts. Beside it, in the same
round, the whole floor (``floor.py insert``: read, parse and insert into one plain table) runs as a
child process. SQLite has one writer per database, so with every other piece of work moved to another
core, a migration's wall time is still at least these inserts: their ratio to the floor's wall time
bounds what two cores can give (``docs/performance.md``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import floor
from measure import child_cpu

HERE = Path(__file__).resolve().parent


# statekit commits small transcripts 64 at a time (migrate/apply.py BATCH_SOURCES, within BATCH_BYTES): an
# import of many small files pays a commit per batch, not per file. A commit writes every page the transaction
# touched to the WAL, so with 5 KB transcripts the per-file commit is most of the inserts' cost.
STATEKIT_BATCH = 64


def inserts_only(state: Path, db: Path, per_commit: int = 1) -> tuple[float, float]:
    """(CPU s, wall s) of the schema's inserts of every transcript, ``per_commit`` transcripts per transaction,
    the rows prepared before the clock starts."""
    prepared = [floor.schema_rows(path) for path in floor.transcripts(state)]
    conn = floor.open_schema_db(db)
    cpu, wall = time.process_time(), time.perf_counter()
    for start in range(0, len(prepared), per_commit):
        conn.execute("BEGIN")
        for rows in prepared[start:start + per_commit]:
            floor.insert_schema_rows(conn, *rows)
        conn.execute("COMMIT")
    result = time.process_time() - cpu, time.perf_counter() - wall
    conn.close()
    return result


def inserts_batched(state: Path, db: Path) -> tuple[float, float]:
    """``inserts_only`` with statekit's batches of small transcripts."""
    return inserts_only(state, db, STATEKIT_BATCH)


def whole_floor(state: Path, db: Path) -> tuple[float, float]:
    """(CPU s, wall s) of ``floor.py insert`` in a child process."""
    wall = time.perf_counter()
    cpu = child_cpu([sys.executable, str(HERE / "floor.py"), "insert", str(state), str(db)])
    return cpu, time.perf_counter() - wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("state_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    measures = (("inserts", inserts_only), ("batched", inserts_batched), ("floor", whole_floor))
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in measures}
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            for name, measure in measures[:: 1 if round_ % 2 == 0 else -1]:
                db = Path(scratch) / f"{name}-{round_}.sqlite"
                rows[name].append(measure(args.state_dir, db))
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{db}{suffix}").unlink(missing_ok=True)
    cpu = {name: statistics.median(c for c, _ in measured) for name, measured in rows.items()}
    wall = {name: statistics.median(w for _, w in measured) for name, measured in rows.items()}
    labels = {"inserts": "schema inserts alone, a commit per file", "batched": f"the same, {STATEKIT_BATCH} files per commit",
              "floor": "whole floor"}
    for name, label in labels.items():
        ratios = "" if name == "floor" else f"  ({cpu[name] / cpu['floor']:.2f}x CPU, {wall[name] / wall['floor']:.2f}x wall)"
        print(f"{label + ':':<44} CPU {cpu[name]:.2f} s, wall {wall[name]:.2f} s{ratios}")
    print(f"median of {args.rounds} rounds; load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
