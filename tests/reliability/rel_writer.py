"""A live writer for the reliability suite: commits to every database it is given, as fast as it can.

    python rel_writer.py STOP_FILE LOG_FILE DB [DB...]

Each transaction inserts BATCH consecutive sequence numbers into ``live_a`` and
the same numbers into ``live_b`` of one database (round robin over the
databases), so a consistent snapshot holds exactly ``1..n`` in both tables
with ``n`` a multiple of BATCH. After every commit the writer appends
``<db index> <n>`` to LOG_FILE. It stops when STOP_FILE exists and prints a
summary line (commits, errors, slowest commit in ms).
"""

from __future__ import annotations

import os
import sys
import time

from statekit.db import SQLiteError, connect

BATCH = 5


def main(argv: list[str]) -> int:
    stop, log, *paths = argv
    conns = []
    for path in paths:
        conn = connect(path, busy_timeout_ms=30_000)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("CREATE TABLE IF NOT EXISTS live_a (seq INTEGER PRIMARY KEY, payload TEXT NOT NULL)")
        conn.execute("CREATE TABLE IF NOT EXISTS live_b (seq INTEGER PRIMARY KEY, payload TEXT NOT NULL)")
        conns.append(conn)
    counts = [conn.execute("SELECT count(*) FROM live_a").fetchone()[0] for conn in conns]
    commits = errors = 0
    slowest = 0.0
    with open(log, "a", buffering=1) as out:
        out.write("ready\n")
        index = 0
        while not os.path.exists(stop):
            conn = conns[index]
            start = time.monotonic()
            try:
                conn.execute("BEGIN IMMEDIATE")
                rows = [(counts[index] + i + 1, f"{index}:{counts[index] + i + 1}:" + "x" * 200) for i in range(BATCH)]
                conn.executemany("INSERT INTO live_a(seq, payload) VALUES (?, ?)", rows)
                conn.executemany("INSERT INTO live_b(seq, payload) VALUES (?, ?)", rows)
                conn.execute("COMMIT")
            except SQLiteError as exc:
                errors += 1
                out.write(f"error {index} {exc}\n")
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            else:
                counts[index] += BATCH
                commits += 1
                out.write(f"{index} {counts[index]}\n")
            slowest = max(slowest, (time.monotonic() - start) * 1000)
            index = (index + 1) % len(conns)
    print(f"commits={commits} errors={errors} slowest_ms={slowest:.0f} counts={counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
