#!/usr/bin/env python3
"""How close to the floor a migration that keeps statekit's contract can get in Python: one tight loop, no layers.

    bulk_bound.py STATE_DIR [--rounds N]

Does, for an install of agents' transcripts and session indexes, the least of what ``statekit migrate``
promises, written the shortest way (no readers, no writer layer, no checks beyond the ones named):

* each agent's session index: parsed, and its entries as ``sessions``, ``session_entries`` and
  ``session_routes`` rows (one ``executemany`` a table) into the release's agent schema;
* each transcript, 64 to a transaction (as statekit batches small ones): opened without following a
  link, read once, SHA-256 of its bytes, every line parsed (msgspec, as statekit), its event row, its
  identity row when it has an ``id`` and its ``sessions`` row when the index has none; a receipt row
  (key, path, digest, size, a small JSON report) in a state database, committed after the agent's;
* retirement, per batch: each file renamed into a retired folder, its moved bytes hashed again and
  compared, both directories fsynced once, the receipts marked retired in one transaction.

No plan shown, no undo facts, no run report, no per-source savepoint, no fallback, no validation of
the rows, no merge of a file that came back. So its ratio to the floor (``floor.py insert``, in the same
rounds) is a bound from below on any import built this way: where it lands above a goal, a leaner
shape of statekit's import cannot meet that goal in Python either. Run with statekit's interpreter
(msgspec); STATE_DIR is copied each round, never touched.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sqlite3
import statistics
import sys
from pathlib import Path
from typing import Any

import floor
from measure import child_cpu, fresh_copies
from statekit.fsutil import sha256_file
from statekit.values import ms

HERE = Path(__file__).resolve().parent
BATCH = 64


def import_index(conn: sqlite3.Connection, index: Path) -> set[str]:
    """The index's entries as rows; the session ids it gave a ``sessions`` row."""
    entries = json.loads(index.read_bytes())
    sessions, routes, stored = [], [], []
    for key, entry in sorted(entries.items()):
        session_id, updated = entry["sessionId"], int(entry.get("updatedAt") or 0)
        sessions.append((session_id, key, updated, updated, entry.get("chatType")))
        stored.append((key, session_id, json.dumps({k: v for k, v in entry.items() if k != "sessionFile"}), updated))
        routes.append((key, session_id, updated))
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO sessions (session_id, session_key, created_at, updated_at, chat_type) VALUES (?, ?, ?, ?, ?)"
                     " ON CONFLICT (session_id) DO UPDATE SET updated_at = excluded.updated_at WHERE excluded.updated_at > sessions.updated_at",
                     sessions)
    conn.executemany("INSERT INTO session_entries (session_key, session_id, entry_json, updated_at) VALUES (?, ?, ?, ?)", stored)
    conn.executemany("INSERT INTO session_routes (session_key, session_id, updated_at) VALUES (?, ?, ?)", routes)
    conn.execute("COMMIT")
    return {row[0] for row in sessions}


def transcript_rows(path: Path, decode: Any) -> tuple[str, int, str, list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(session id, size, digest, event rows, identity rows) of one transcript, read once through a no-follow open."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        data = handle.read()
    digest = hashlib.sha256(data).hexdigest()
    session = path.stem
    events, identities, seen = [], [], set()
    previous = 0
    for seq, line in enumerate(data.splitlines()):
        event = decode(line)
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise ValueError(f"{path}:{seq + 1}: not a transcript event")
        found = ms(event.get("timestamp"))
        previous = found if found is not None else previous
        events.append((session, seq, line.decode("utf-8"), previous))
        event_id = event.get("id")
        if isinstance(event_id, str) and event_id:
            message = event.get("message")
            key = message.get("idempotencyKey") if isinstance(message, dict) else None
            key = key if isinstance(key, str) and key and key not in seen else None
            seen.add(key)
            parent = event.get("parentId")
            identities.append((session, event_id, seq, event["type"], parent if isinstance(parent, str) else None, key, previous))
    return session, len(data), digest, events, identities


def migrate(state: Path) -> None:
    import msgspec

    decode = msgspec.json.Decoder().decode
    receipts = sqlite3.connect(state / "receipts.sqlite", isolation_level=None)
    receipts.execute("PRAGMA journal_mode = WAL")
    receipts.execute("PRAGMA synchronous = NORMAL")
    receipts.execute("CREATE TABLE migration_sources (source_key TEXT PRIMARY KEY, source_path TEXT NOT NULL, source_sha256 TEXT NOT NULL,"
                     " source_size INTEGER NOT NULL, report_json TEXT NOT NULL, removed_source INTEGER NOT NULL DEFAULT 0)")
    retired_root = state / ".retired"
    for agent in sorted((state / "agents").iterdir()):
        sessions_dir = agent / "sessions"
        conn = floor.open_schema_db(agent / "agent.sqlite")
        indexed = import_index(conn, sessions_dir / "sessions.json") if (sessions_dir / "sessions.json").exists() else set()
        retired = retired_root / agent.name / "sessions"
        retired.mkdir(parents=True, mode=0o700)
        files = sorted(p for p in sessions_dir.iterdir() if p.suffix == ".jsonl")
        for start in range(0, len(files), BATCH):
            batch = files[start:start + BATCH]
            conn.execute("BEGIN")
            receipts.execute("BEGIN")
            done = []
            for path in batch:
                session, size, digest, events, identities = transcript_rows(path, decode)
                if session not in indexed:
                    conn.execute("INSERT INTO sessions (session_id, session_key, created_at, updated_at) VALUES (?, ?, 0, 0)",
                                 (session, f"agent:{agent.name}:recovered:{session}"))
                conn.executemany("INSERT INTO transcript_events VALUES (?, ?, ?, ?)", events)
                conn.executemany("INSERT INTO transcript_event_identities VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, event_id)"
                                 " DO UPDATE SET seq = excluded.seq", identities)
                rel = path.relative_to(state).as_posix()
                report = {"kind": "transcript-jsonl", "path": rel, "size": size, "sha256": digest, "events": len(events)}
                receipts.execute("INSERT INTO migration_sources VALUES (?, ?, ?, ?, ?, 0)", (f"sessions:{rel}", rel, digest, size, json.dumps(report)))
                done.append((path, rel, digest))
            conn.execute("COMMIT")
            receipts.execute("COMMIT")
            for path, _rel, digest in done:
                moved = retired / path.name
                os.rename(path, moved)
                if sha256_file(moved, follow_symlinks=False) != digest:
                    raise RuntimeError(f"{moved}: changed after its import")
            for directory in (retired, sessions_dir):
                fd = os.open(directory, os.O_RDONLY)
                os.fsync(fd)
                os.close(fd)
            receipts.execute("BEGIN")
            receipts.executemany("UPDATE migration_sources SET removed_source = 1 WHERE source_key = ?", [(f"sessions:{rel}",) for _p, rel, _d in done])
            receipts.execute("COMMIT")
        conn.close()
    receipts.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("state_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--run", action="store_true", help=argparse.SUPPRESS)  # the measured child: migrate STATE_DIR in place
    args = parser.parse_args()
    if args.run:
        migrate(args.state_dir)
        return 0
    bulk: list[float] = []
    floors: list[float] = []
    for round_, copy, scratch in fresh_copies(args.state_dir, args.rounds):
        measured = [("bulk", [sys.executable, str(Path(__file__).resolve()), str(copy), "--run"]),
                    ("floor", [sys.executable, str(HERE / "floor.py"), "insert", str(args.state_dir), str(scratch / f"floor-{round_}.sqlite")])]
        for name, command in measured[:: 1 if round_ % 2 == 0 else -1]:
            (bulk if name == "bulk" else floors).append(child_cpu(command))
    ratios = [b / f for b, f in zip(bulk, floors)]
    print(f"bulk import: CPU {statistics.median(bulk):.2f} s; floor {statistics.median(floors):.2f} s; "
          f"ratio {statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}); "
          f"median of {args.rounds} rounds; load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
