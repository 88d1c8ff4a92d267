#!/usr/bin/env python3
"""The floor statekit is measured against: the least a migration of these transcripts must do.

    floor.py insert STATE_DIR DB   # read each line, json.loads, executemany into one WAL table, one transaction per file
    floor.py parse STATE_DIR DB    # read and json.loads every line (what a plan must at least do); DB unused

Uses the standard library's sqlite3 and json only.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path


def transcripts(state: Path) -> list[Path]:
    return sorted(p for p in state.glob("agents/*/sessions/*.jsonl"))


def insert(state: Path, db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE IF NOT EXISTS events(session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT NOT NULL,"
                 " PRIMARY KEY(session_id, seq))")
    for path in transcripts(state):
        session = path.stem
        rows = []
        with open(path, "rb") as handle:
            for seq, line in enumerate(handle):
                text = line.decode("utf-8").rstrip("\n")
                json.loads(text)
                rows.append((session, seq, text))
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO events VALUES (?, ?, ?)", rows)
        conn.execute("COMMIT")
    conn.close()


def parse(state: Path) -> None:
    for path in transcripts(state):
        with open(path, "rb") as handle:
            for line in handle:
                json.loads(line.decode("utf-8"))


def main() -> int:
    mode, state, db = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if mode == "insert":
        insert(state, db)
    else:
        parse(state)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
