"""``cron-state``: the runtime-state sidecar ``cron/jobs-state.json`` -> the state columns of existing ``cron_jobs`` rows."""

from __future__ import annotations

import json
from typing import Any, BinaryIO

from statekit.documents import validate
from statekit.errors import SourceError
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.legacy_readers.cron._repairs import schedule_identity
from statekit.legacy_readers.cron._store import (
    FAMILY,
    JOBS_TABLE,
    JOB_KEY,
    STATE_COLUMNS,
    _existing_rows,
    _expect_jobs,
    _parse_document,
    source_store_key,
    state_columns,
    store_rel,
)
from statekit.values import int64, js_json


# --- jobs-state.json ---------------------------------------------------------------


def parse_state(data: bytes, rel: str) -> tuple[dict[str, dict[str, Any]], list[str]]:
    document = _parse_document(data, rel)
    validate(document, "cron-state", rel)
    notices: list[str] = []
    version = document.get("version")
    if version is not None and version != 1:
        notices.append(f"{rel}: state version {version} (expected 1); read with the version 1 rules")
    return document["jobs"], notices


class CronStateReader(Reader):
    kind = "cron-state"
    family = FAMILY
    description = "Cron runtime state sidecar (cron/jobs-state.json) -> state columns of existing jobs"
    patterns = ("cron/jobs-state.json",)
    schema_name = "cron-state"
    target_tables = ("global.cron_jobs",)
    action = "import"
    depends_on = ("cron-jobs",)  # merges into the imported jobs

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        entries, notices = parse_state(handle.read(), source.rel)
        return Inspection(record_count=len(entries), warnings=notices, details={"store": store_rel(source.rel)})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        rel = source.rel
        entries, notices = parse_state(handle.read(), rel)
        jobs_rel = store_rel(rel)
        if ctx.dependency_pending(jobs_rel):
            # The definitions import runs first (order 30); if this version of jobs.json
            # has no completed receipt, that import failed or was skipped.
            raise SourceError(rel, f"left in place: {jobs_rel} has not been imported yet (its jobs must exist first)")
        store_key = source_store_key(source)
        db = ctx.writer.state
        result = WriteResult(records=0, notices=list(notices))
        columns = ("state_json", *STATE_COLUMNS, "runtime_updated_at_ms", "updated_at")
        db.require_columns(JOBS_TABLE, (*JOB_KEY, *columns, "job_json"))
        applied: list[str] = []
        orphans: list[str] = []
        kept_newer: list[str] = []
        stale: list[str] = []
        with db.savepoint("statekit_cron_state"):
            existing = _existing_rows(db, store_key, list(entries), ("runtime_updated_at_ms", "job_json"))
            for job_id, entry in entries.items():
                current = existing.get(job_id)
                if current is None:
                    orphans.append(job_id)
                    result.warnings.append(
                        f"{rel}: state for job {job_id} not imported: no such job in cron_jobs (the retired file keeps it)"
                    )
                    continue
                entry_updated = int64(entry.get("updatedAtMs"))
                current_runtime, job_json = current
                if entry_updated is not None and current_runtime is not None and entry_updated < current_runtime:
                    kept_newer.append(job_id)
                    result.notices.append(f"{rel}: job {job_id}: the database holds newer runtime state; kept it")
                    continue
                state = dict(entry["state"]) if isinstance(entry.get("state"), dict) else {}
                recorded = entry.get("scheduleIdentity")
                if isinstance(recorded, str) and "nextRunAtMs" in state and recorded != schedule_identity(_json_object(job_json)):
                    # As OpenClaw's merge of the sidecar: a next run computed for other scheduling
                    # inputs is dropped, so the scheduler computes it afresh.
                    del state["nextRunAtMs"]
                    stale.append(job_id)
                # updatedAtMs of the entry, else the job's own clock (already in the row), as resolveUpdatedAtMs.
                runtime = entry_updated if entry_updated is not None else current_runtime
                values = dict(zip(columns, (js_json(state), *state_columns(state).values(), runtime, runtime)))
                db.update(JOBS_TABLE, values, {"store_key": store_key, "job_id": job_id})
                applied.append(job_id)
        result.records = len(applied)
        if stale:
            result.notices.append(
                f"{rel}: {len(stale)} job(s) had a next run computed for an older schedule; dropped it (OpenClaw computes it again)"
            )
        _expect_jobs(result, store_key, applied + kept_newer)
        result.report = {
            "store": jobs_rel,
            "entries_in_file": len(entries),
            "applied": len(applied),
            "orphan_job_ids": orphans,
            "kept_newer_database_state": kept_newer,
            "stale_next_run_dropped": stale,
        }
        return result


def _json_object(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
