"""Shared harness for the small-store reader tests (queues, media, audit logs, settings, registries, plugin state).

Every round trip goes through the real apply loop (``migrate.apply.migrate``)
under a frozen clock, then checks rows, retirement and receipts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from freezegun import freeze_time

from helpers import global_db, make_state, named_row, open_db, write_files
from statekit.migrate.apply import MigrateOptions, MigrationReport, migrate

NOW_ISO = "2026-06-01T12:00:00Z"
NOW = 1_780_315_200_000  # NOW_ISO in epoch ms
MTIME = 1_775_000_000_000  # pinned mtime of legacy files (ms)


def place(state: Path, rel: str, content: Any, mtime_ms: int = MTIME) -> bytes:
    """Write one legacy file (str/bytes as-is, anything else as JSON) with a pinned mtime; return its bytes."""
    write_files(state, {rel: content})
    path = state / rel
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path.read_bytes()


def new_state(tmp_path: Path, files: dict[str, Any] | None = None, mtime_ms: int = MTIME) -> tuple[Path, dict[str, bytes]]:
    state = make_state(tmp_path)
    originals = {rel: place(state, rel, content, mtime_ms) for rel, content in (files or {}).items()}
    return state, originals


def run(state: Path) -> MigrationReport:
    with freeze_time(NOW_ISO):
        return migrate(state, MigrateOptions(backup=False))


def outcome(report: MigrationReport, rel: str):
    found = [o for o in report.outcomes if o.rel == rel]
    assert found, f"{rel} not in the run: {[o.rel for o in report.outcomes]}"
    return found[0]


def query(state: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    conn = open_db(global_db(state), "ro")
    conn.row_trace = named_row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def assert_imported(state: Path, report: MigrationReport, rel: str, original: bytes, records: int | None = None) -> None:
    """Source gone from its place, byte-identical under .statekit/migrated/<run>/, completed receipt."""
    result = outcome(report, rel)
    assert result.status in ("imported", "dropped"), (result.status, result.message)
    if records is not None:
        assert result.records == records
    assert not (state / rel).exists()
    retired = state / ".statekit" / "migrated" / str(report.run_id) / rel
    assert retired.read_bytes() == original
    assert result.retired_to == f".statekit/migrated/{report.run_id}/{rel}"
    receipts = query(state, "SELECT status, removed_source FROM migration_sources WHERE source_path = ?", (rel,))
    assert receipts == [{"status": "completed", "removed_source": 1}]


def assert_failed_in_place(state: Path, report: MigrationReport, rel: str, original: bytes, *needles: str) -> str:
    """Exit 3, the file untouched, one message naming the file (and the needles)."""
    assert report.exit_code == 3
    result = outcome(report, rel)
    assert result.status in ("failed", "unreadable"), result.status
    assert (state / rel).read_bytes() == original
    message = result.message or ""
    assert message.startswith(rel + ":") or message.startswith(rel), message
    assert "\n" not in message
    for needle in needles:
        assert needle in message, (needle, message)
    assert any(w == message for w in report.warnings)
    return message


def report_json(report: MigrationReport) -> str:
    return json.dumps(report.to_json())
