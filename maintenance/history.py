"""``statekit history``: migration runs and backup runs recorded in the global database (read-only).

``migration_runs`` rows hold ``migrate`` runs (report kind ``legacy-state``)
and ``recover`` runs (kind ``recover``); ``backup_runs`` rows hold backups
(``statekit backup create`` and the pre-migration backup). Outcomes are
summarised from each row's report; nothing is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statekit.db import SQLiteError, is_sqlite_file, read_only_view, table_names
from statekit.errors import ExitCode, StatekitError
from statekit.layout import global_db_path


@dataclass
class History:
    state_dir: Path
    database: Path
    present: bool
    migration_runs: list[dict[str, Any]] = field(default_factory=list)
    backup_runs: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "statekit-history",
            "version": 1,
            "state_dir": str(self.state_dir),
            "database": str(self.database),
            "database_present": self.present,
            "migration_runs": self.migration_runs,
            "backup_runs": self.backup_runs,
        }


def _json(text: Any) -> dict[str, Any]:
    try:
        data = json.loads(text) if isinstance(text, str) and text else {}
    except (ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _migration_row(row: tuple[Any, ...]) -> dict[str, Any]:
    run_id, started, finished, status, report_json = row
    report = _json(report_json)
    counts: dict[str, Any] = report["counts"] if isinstance(report.get("counts"), dict) else {}
    sources: list[Any] = report["sources"] if isinstance(report.get("sources"), list) else []
    if not counts and sources:
        for source in sources:
            if isinstance(source, dict):
                key = str(source.get("status") or source.get("action") or "?")
                counts[key] = counts.get(key, 0) + 1
    warnings: list[Any] = report["warnings"] if isinstance(report.get("warnings"), list) else []
    errors: list[Any] = report["errors"] if isinstance(report.get("errors"), list) else []
    return {
        "id": run_id,
        "kind": report.get("kind") or "legacy-state",
        "started_at": started,
        "finished_at": finished,
        "status": status,
        "counts": counts,
        "sources": len(sources),
        "warnings": len(warnings) + len(errors),
        "changes": len(report.get("changes") or []) if isinstance(report.get("changes"), list) else 0,
        "backup_path": report.get("backup_path") or report.get("backupPath"),
        "recovers_run_id": report.get("recovers_run_id"),
        "error": report.get("error") if isinstance(report.get("error"), str) else None,
    }


def _backup_row(row: tuple[Any, ...]) -> dict[str, Any]:
    run_id, created, archive, status, manifest_json = row
    summary = _json(manifest_json)
    return {
        "id": run_id,
        "created_at": created,
        "archive_path": archive,
        "status": status,
        "tool": summary.get("tool"),
        "assets": summary.get("assets"),
        "bytes": summary.get("bytes"),
        "archive_bytes": summary.get("archive_bytes"),
        "verified": summary.get("verified"),
        "error": summary.get("error") if isinstance(summary.get("error"), str) else None,
    }


def read_history(state_dir: Path, limit: int | None = None) -> History:
    """Runs, newest first (``limit`` per table)."""
    path = global_db_path(state_dir)
    history = History(state_dir, path, path.is_file())
    if not history.present:
        return history
    if not is_sqlite_file(path):
        raise StatekitError(f"{path}: not a SQLite database", exit_code=ExitCode.VERIFY_FAILED)
    clause = f" LIMIT {int(limit)}" if limit else ""
    try:
        with read_only_view(path) as conn:
            tables = table_names(conn)
            if "migration_runs" in tables:
                history.migration_runs = [
                    _migration_row(r)
                    for r in conn.execute(
                        "SELECT id, started_at, finished_at, status, report_json FROM migration_runs ORDER BY started_at DESC, id" + clause
                    )
                ]
            if "backup_runs" in tables:
                history.backup_runs = [
                    _backup_row(r)
                    for r in conn.execute(
                        "SELECT id, created_at, archive_path, status, manifest_json FROM backup_runs ORDER BY created_at DESC, id" + clause
                    )
                ]
    except SQLiteError as exc:
        raise StatekitError(f"{path}: cannot read: {exc}", exit_code=ExitCode.VERIFY_FAILED) from None
    return history


__all__ = ["History", "read_history"]
