"""``backup_runs`` rows in the global database: one per real create, failures included.

A row is written only when ``<state>/state/openclaw.sqlite`` already exists
and holds a ``backup_runs`` table: recording never creates a database (a
failed backup on a fresh host must not leave a blank DB behind). The row's
``manifest_json`` is a small outcome summary (counts, sizes, options, error
text) — no file contents, hashes or secret values.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from statekit.db import BUSY_TIMEOUT_MS, Connection, SQLiteError, connect, immediate
from statekit.layout import global_db_path
from statekit.states import BackupRunStatus

if TYPE_CHECKING:
    from statekit.backup.create import BackupResult

RUN_WINDOW = 200  # rows kept, newest first (OpenClaw keeps the same window)
ERROR_LIMIT = 1200


def run_summary(result: BackupResult, status: BackupRunStatus, error: str | None = None) -> dict[str, Any]:
    manifest = result.manifest or {}
    totals = manifest.get("totals") or {}
    summary: dict[str, Any] = {
        "kind": "archive",
        "tool": "statekit",
        "format": manifest.get("format", "statekit-backup"),
        "status": status,
        "created_at": manifest.get("created_at"),
        "options": manifest.get("options"),
        "assets": totals.get("assets"),
        "sqlite": totals.get("sqlite"),
        "bytes": totals.get("bytes"),
        "verified": result.verified,
    }
    if error:
        summary["error"] = error[:ERROR_LIMIT]
    return summary


def record_backup_run(
    conn: Connection, result: BackupResult, status: BackupRunStatus, *, error: str | None = None, now_ms: int | None = None
) -> None:
    """Insert the run's row (``status`` ``ok`` or ``failed``) and keep the newest 200 rows."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    archive = str(result.archive_path) if result.archive_path else str(result.planned_path or "")
    payload = json.dumps(run_summary(result, status, error), separators=(",", ":"), ensure_ascii=False)
    with immediate(conn):
        conn.execute(
            "INSERT OR REPLACE INTO backup_runs(id, created_at, archive_path, status, manifest_json) VALUES (?, ?, ?, ?, ?)",
            (result.run_id, now_ms, archive, status, payload),
        )
        conn.execute(
            "DELETE FROM backup_runs WHERE id NOT IN (SELECT id FROM backup_runs ORDER BY created_at DESC, id DESC LIMIT ?)",
            (RUN_WINDOW,),
        )


def record_in_state_dir(state_dir: Path, result: BackupResult, status: BackupRunStatus, *, error: str | None = None) -> str | None:
    """Record into the state dir's global DB when it (and its table) exist; returns a warning or None.

    Best effort: a recording failure never turns a good backup into a failed command.
    """
    path = global_db_path(state_dir)
    if not path.is_file():
        return None
    try:
        conn = connect(path, mode="rw")
    except SQLiteError as exc:
        return f"{path}: backup run not recorded ({exc})"
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'backup_runs'").fetchone() is None:
            return None
        record_backup_run(conn, result, status, error=error)
    except SQLiteError as exc:
        return f"{path}: backup run not recorded ({exc})"
    finally:
        conn.close()
    return None


def mark_interrupted(state_dir: Path, run_ids: list[str]) -> None:
    """Runs killed before their archive was published: their ``ok`` row (written before the
    snapshots) becomes ``failed``. Best effort, like every recording."""
    path = global_db_path(state_dir)
    if not path.is_file() or not run_ids:
        return
    try:
        conn = connect(path, mode="rw")
    except SQLiteError:
        return
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'backup_runs'").fetchone() is None:
            return
        marks = ",".join("?" * len(run_ids))
        rows = conn.execute(f"SELECT id, archive_path, manifest_json FROM backup_runs WHERE status = ? AND id IN ({marks})",
                            [BackupRunStatus.OK, *run_ids]).fetchall()
        for run_id, archive, manifest in rows:
            if archive and Path(archive).is_file():
                continue  # published after all (killed while cleaning up)
            try:
                summary = json.loads(manifest) if manifest else {}
            except (ValueError, RecursionError):
                summary = {}
            summary = summary if isinstance(summary, dict) else {}
            summary.update(status=BackupRunStatus.FAILED, verified=False, error="interrupted before the archive was published")
            conn.execute(
                "UPDATE backup_runs SET status = ?, manifest_json = ? WHERE id = ?",
                (BackupRunStatus.FAILED, json.dumps(summary, separators=(",", ":"), ensure_ascii=False), run_id),
            )
    except SQLiteError:
        return
    finally:
        conn.close()
