#!/usr/bin/env python3
"""The floor statekit is measured against: the least a migration of these transcripts must do.

    floor.py insert STATE_DIR DB   # read each line, json.loads, executemany into one WAL table, one transaction per file
    floor.py parse STATE_DIR DB    # read and json.loads every line (what a plan must at least do); DB unused
    floor.py schema STATE_DIR DB   # insert, but the rows OpenClaw 2026.9.6's agent schema needs (below)

``schema`` is the least the target layout itself asks for: the agent database's tables as the
release defines them (``statekit/schema/agent.sql``: foreign keys on, the identity table's primary
key and its two indexes, which 9.6 checks), and per transcript one ``sessions`` row, one
``transcript_events`` row per line and one ``transcript_event_identities`` row per event with an
``id`` (its type, parent and message idempotency key), one transaction per file. Like ``insert`` it
does none of statekit's own work: no hash, no receipt, no session index, no retirement, no checks.

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


AGENT_SCHEMA = Path(__file__).resolve().parent.parent / "statekit" / "schema" / "agent.sql"


def identity(session: str, seq: int, event: object) -> tuple[object, ...] | None:
    """The identity row OpenClaw keys an event by, or None for an event without an ``id``."""
    if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not event["id"]:
        return None
    message = event.get("message")
    key = message.get("idempotencyKey") if isinstance(message, dict) else None
    parent = event.get("parentId")
    return (session, event["id"], seq, event.get("type"), parent if isinstance(parent, str) else None,
            key if isinstance(key, str) and key else None, 0)


def insert_schema(state: Path, db: Path) -> None:
    conn = open_schema_db(db)
    for path in transcripts(state):
        write_schema_rows(conn, *schema_rows(path))
    conn.close()


def open_schema_db(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA cache_size = -65536")  # 64 MiB, as statekit gives a big source: the random event ids thrash 2 MiB
    conn.executescript(AGENT_SCHEMA.read_text(encoding="utf-8"))
    return conn


def schema_rows(path: Path) -> tuple[str, list[tuple[object, ...]], list[tuple[object, ...]]]:
    """(session, event rows, identity rows) of one transcript: each line read, decoded and parsed."""
    session = path.stem
    events: list[tuple[object, ...]] = []
    identities = []
    seen_keys: set[object] = set()
    with open(path, "rb") as handle:
        for seq, line in enumerate(handle):
            text = line.decode("utf-8").rstrip("\n")
            row = identity(session, seq, json.loads(text))
            events.append((session, seq, text, 0))
            if row is not None:
                if row[5] is not None and row[5] in seen_keys:  # the key is unique per session
                    row = row[:5] + (None, 0)
                seen_keys.add(row[5])
                identities.append(row)
    return session, events, identities


def write_schema_rows(conn: sqlite3.Connection, session: str, events: list[tuple[object, ...]],
                      identities: list[tuple[object, ...]]) -> None:
    """One transcript's rows in one transaction: its session, its events, its identities."""
    conn.execute("BEGIN")
    insert_schema_rows(conn, session, events, identities)
    conn.execute("COMMIT")


def insert_schema_rows(conn: sqlite3.Connection, session: str, events: list[tuple[object, ...]],
                       identities: list[tuple[object, ...]]) -> None:
    """One transcript's rows, in the transaction the caller holds."""
    conn.execute("INSERT INTO sessions (session_id, session_key, created_at, updated_at) VALUES (?, ?, 0, 0)",
                 (session, f"agent:bench:{session}"))
    conn.executemany("INSERT INTO transcript_events VALUES (?, ?, ?, ?)", events)
    conn.executemany("INSERT INTO transcript_event_identities VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, event_id)"
                     " DO UPDATE SET seq = excluded.seq", identities)  # random ids repeat in a big session: the later wins


def parse(state: Path) -> None:
    for path in transcripts(state):
        with open(path, "rb") as handle:
            for line in handle:
                json.loads(line.decode("utf-8"))


def main() -> int:
    mode, state, db = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    if mode == "insert":
        insert(state, db)
    elif mode == "schema":
        insert_schema(state, db)
    else:
        parse(state)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
