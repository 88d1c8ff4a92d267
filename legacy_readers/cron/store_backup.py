"""``cron-jobs-backup``: OpenClaw's own ``jobs.json.bak`` copies, retained in place."""

from __future__ import annotations

from typing import BinaryIO

from statekit.errors import SourceError
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.legacy_readers.cron._store import FAMILY, _parse_document


# --- jobs.json.bak ---------------------------------------------------------------------


class CronJobsBackupReader(Reader):
    kind = "cron-jobs-backup"
    family = FAMILY
    description = "OpenClaw's backup copy of cron/jobs.json"
    patterns = ("cron/jobs.json.bak", "cron/jobs.json.bak.*")
    target_tables = ()
    action = "retain"
    reason = "OpenClaw's own backup copy of jobs.json; the live file is imported"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        """Count the jobs when the copy parses; never fail the plan over a backup."""
        try:
            document = _parse_document(handle.read(), source.rel)
            jobs = document if isinstance(document, list) else document.get("jobs") if isinstance(document, dict) else None
            if not isinstance(jobs, list):
                return Inspection(record_count=0, warnings=[f"{source.rel}: backup copy has no jobs array; retained as is"])
            return Inspection(record_count=sum(1 for job in jobs if isinstance(job, dict)))
        except (SourceError, ValueError, RecursionError, MemoryError) as exc:
            return Inspection(record_count=0, warnings=[f"backup copy not parseable ({exc}); retained as is"])

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:  # pragma: no cover
        raise AssertionError("retain sources are never written")
