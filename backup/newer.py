"""An in-place restore of an older archive over newer state: say what it replaces, keep the newer runs findable.

Before anything is written, :func:`newer_data` names the migration runs the live global database records
after the archive was made and the databases changed since. After the swap, :func:`keep_newer_runs` copies
those runs' ``migration_runs`` rows and the receipts of the sources they retired (``removed_source = 1``,
a ``source_key`` the restored database does not know) from the replaced database (now under
``.statekit/pre-restore/``) into the restored one, so ``statekit recover RUN_ID`` still finds them: their
retired copies under ``.statekit/migrated/<run>/`` are never touched by a restore.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from statekit.backup.checks import OPENCLAW, VerifyReport
from statekit.errors import display_path
from statekit.backup.restore_steps import RestoreStep
from statekit.db import SQLiteError, connect, immediate, read_only_view, table_columns, table_names
from statekit.layout import global_db_path
from statekit.states import RestoreStepAction
from statekit.values import datetime_ms, datetime_to_iso, ms_to_iso, mtime_ms, parse_iso

SIDECARS = ("-wal", "-shm", "-journal")


def newer_data(report: VerifyReport, steps: list[RestoreStep], live_state: Path) -> list[str]:
    """What newer data an in-place restore replaces: migration runs recorded after the archive was made, and
    databases changed since (one line each; recover keeps finding the runs: see :func:`keep_newer_runs`)."""
    created = archive_time(report)
    if created is None:
        return []
    lines = []
    runs = runs_after(live_state, created)
    if runs:
        lines.append(f"newer data will be replaced: {len(runs)} migration run(s) after this archive ({', '.join(runs[:5])}"
                     f"{', ...' if len(runs) > 5 else ''}); their retired sources stay in .statekit/migrated/<run>/ and "
                     "their receipts are kept, so `statekit recover RUN_ID` still finds them")
    for step in steps:
        if step.kind != "sqlite" or step.action != RestoreStepAction.REPLACE:
            continue
        try:
            changed = max([mtime_ms(os.stat(step.destination))] +
                          [mtime_ms(os.stat(f"{step.destination}{s}")) for s in SIDECARS if os.path.exists(f"{step.destination}{s}")])
        except OSError:
            continue
        if changed > datetime_ms(created) + 1000:
            when = ms_to_iso(changed)
            lines.append(f"newer data will be replaced: {display_path(str(step.destination))} changed at {when}, after the archive "
                         f"({datetime_to_iso(created)}); the current copy goes to .statekit/pre-restore/")
    return lines


def archive_time(report: VerifyReport) -> datetime | None:
    if report.format != OPENCLAW and report.manifest is not None:
        return report.manifest.created_at
    parsed = parse_iso((report.openclaw_manifest or {}).get("createdAt"))
    if parsed is None:
        return None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed.astimezone(timezone.utc)


def runs_after(live_state: Path, created: datetime) -> list[str]:
    """Ids of the migration runs the live global database records as started after ``created``."""
    db = global_db_path(live_state)
    if not db.is_file():
        return []
    try:
        with read_only_view(db) as conn:
            if "migration_runs" not in table_names(conn):
                return []
            rows = conn.execute("SELECT id FROM migration_runs WHERE started_at > ? ORDER BY started_at, id",
                                (datetime_ms(created),)).fetchall()
    except SQLiteError:
        return []
    return [str(r[0]) for r in rows]


def keep_newer_runs(restored_db: Path, replaced_db: Path, run_ids: list[str]) -> tuple[int, int]:
    """Copy the runs ``run_ids`` and the receipts of the sources they retired from ``replaced_db`` into
    ``restored_db`` (rows the restored database already has stay as they are). Returns (runs, receipts) copied."""
    if not run_ids or not restored_db.is_file() or not replaced_db.is_file():
        return 0, 0
    marks = ", ".join("?" for _ in run_ids)
    with read_only_view(replaced_db) as old:
        if not {"migration_runs", "migration_sources"} <= table_names(old):
            return 0, 0
        found = [
            (table, table_columns(old, table), old.execute(sql, run_ids).fetchall())
            for table, sql in (
                ("migration_runs", f"SELECT * FROM migration_runs WHERE id IN ({marks})"),
                ("migration_sources", f"SELECT * FROM migration_sources WHERE last_run_id IN ({marks}) AND removed_source = 1"),
            )
        ]
    conn = connect(restored_db, mode="rw")
    copied = [0, 0]
    try:
        if not {"migration_runs", "migration_sources"} <= table_names(conn):
            return 0, 0
        with immediate(conn):
            for index, (table, cols, rows) in enumerate(found):
                present = set(table_columns(conn, table))
                common = [c for c in cols if c in present]
                names = ", ".join(f'"{c}"' for c in common)
                marks_row = ", ".join("?" for _ in common)
                for row in rows:
                    before = conn.total_changes
                    conn.execute(f'INSERT OR IGNORE INTO "{table}" ({names}) VALUES ({marks_row})', [row[cols.index(c)] for c in common])
                    copied[index] += conn.total_changes - before
    finally:
        conn.close()
    return copied[0], copied[1]
