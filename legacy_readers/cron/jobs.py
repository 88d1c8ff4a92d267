"""``cron-jobs``: the job definitions of ``cron/jobs.json`` -> ``global.cron_jobs`` (duplicate ids: the newest copy wins)."""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from statekit.db import IntegrityError
from statekit.documents import validate
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.legacy_readers.cron._repairs import RepairedJob, _JobRepair, _job_row
from statekit.legacy_readers.cron._store import (
    FAMILY,
    JOBS_TABLE,
    JOB_KEY,
    REPAIR_LABELS,
    STATE_COLUMNS,
    _existing_rows,
    _expect_jobs,
    _explain_integrity,
    _parse_document,
    source_store_key,
    store_rel,
)
from statekit.values import file_mtime_ms, trimmed


# --- jobs.json: reading ----------------------------------------------------------


@dataclass
class ParsedStore:
    jobs: list[RepairedJob]  # unique ids, file order
    dropped: list[tuple[RepairedJob, RepairedJob]]  # (dropped duplicate, kept copy)
    total: int  # entries in the file's jobs array
    repairs: Counter[str]
    notices: list[str]
    bare_array: bool


def _store_jobs(document: Any, rel: str, schema_name: str) -> tuple[list[Any], bool, list[str]]:
    notices: list[str] = []
    bare = isinstance(document, list)
    wrapped = {"jobs": document} if bare else document
    validate(wrapped, schema_name, rel)
    if bare:
        notices.append(f"{rel}: bare jobs array (no {{version, jobs}} wrapper); read as version 1")
    else:
        version = wrapped.get("version")
        if version is not None and version != 1:
            notices.append(f"{rel}: store version {version} (expected 1); read with the version 1 rules")
    return wrapped["jobs"], bare, notices


def parse_store(data: bytes, rel: str, fallback_ms: int, webhook: str | None = None) -> ParsedStore:
    """Parse, validate and repair a ``jobs.json``; raise SourceError on the first unusable job."""
    document = _parse_document(data, rel)
    raw_jobs, bare, notices = _store_jobs(document, rel, "cron-jobs")
    repairs: Counter[str] = Counter()
    repaired: list[RepairedJob] = []
    for index, raw in enumerate(raw_jobs):
        if raw is None:
            repairs["nullJob"] += 1
            continue
        job = _JobRepair(raw, index, rel, fallback_ms, webhook).run()
        repairs.update(job.repairs)
        notices.extend(f"{rel}: {line}" for line in job.notices)
        repaired.append(job)
    winners: dict[str, RepairedJob] = {}
    for job in repaired:
        best = winners.get(job.job_id)
        if best is None or _newness(job) >= _newness(best):
            winners[job.job_id] = job
    kept = [job for job in repaired if winners[job.job_id] is job]
    dropped = [(job, winners[job.job_id]) for job in repaired if winners[job.job_id] is not job]
    for loser, winner in dropped:
        notices.append(
            f"{rel}: duplicate job id {loser.job_id} at $.jobs[{loser.index}] not imported; "
            f"kept the newer copy at $.jobs[{winner.index}]"
        )
    if repairs:
        summary = ", ".join(f"{count} {REPAIR_LABELS[key]}" for key, count in sorted(repairs.items()))
        notices.insert(0, f"{rel}: repaired legacy job shapes: {summary}")
    return ParsedStore(kept, dropped, len(raw_jobs), repairs, notices, bare)


def _newness(job: RepairedJob) -> tuple[float, int]:
    return (job.updated_at_ms if job.updated_at_ms is not None else -math.inf, job.index)


def _webhook(config: Mapping[str, Any]) -> str | None:
    cron = config.get("cron") if isinstance(config, Mapping) else None
    return trimmed(cron.get("webhook")) if isinstance(cron, Mapping) else None


class CronJobsReader(Reader):
    kind = "cron-jobs"
    family = FAMILY
    description = "Cron job definitions (cron/jobs.json), with legacy shape repairs"
    patterns = ("cron/jobs.json",)
    schema_name = "cron-jobs"
    target_tables = ("global.cron_jobs",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        store = parse_store(handle.read(), source.rel, file_mtime_ms(source, 0))
        return Inspection(
            record_count=store.total,
            warnings=store.notices,
            details={
                "store": store_rel(source.rel),
                "jobs": len(store.jobs),
                "duplicates": [loser.job_id for loser, _ in store.dropped],
            },
        )

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        rel = source.rel
        fallback_ms = file_mtime_ms(source, ctx.now_ms)
        store = parse_store(handle.read(), rel, fallback_ms, _webhook(ctx.config))
        store_key = source_store_key(source)
        db = ctx.writer.state
        result = WriteResult(records=0, notices=list(store.notices))
        configured = _configured_store(ctx.config)
        if configured is not None and configured != store_key:
            result.notices.append(
                f"{rel}: the config sets cron.store to another file; OpenClaw reads that store, "
                "these jobs are imported under this file's own store key"
            )
        rows = [_job_row(store_key, job) for job in store.jobs]
        written: list[str] = []
        kept_newer: list[str] = []
        if rows:
            db.require_columns(JOBS_TABLE, rows[0])
            with db.savepoint("statekit_cron_jobs"):
                others = next(db.query(f"SELECT count(*) FROM {JOBS_TABLE} WHERE store_key <> ?", (store_key,)))[0]
                if others:
                    result.notices.append(
                        f"{rel}: global cron_jobs already holds {others} row(s) under other store keys (another jobs.json path); "
                        "they were left as they are"
                    )
                existing = _existing_rows(db, store_key, [r["job_id"] for r in rows], ("updated_at",))
                for row, job in zip(rows, store.jobs):
                    current = existing.get(row["job_id"])
                    if current is not None and current[0] is not None and current[0] > row["updated_at"]:
                        kept_newer.append(row["job_id"])
                        result.notices.append(f"{rel}: job {row['job_id']}: the database row is newer; kept it")
                        continue
                    update = [c for c in row if c not in JOB_KEY]
                    if not job.state:
                        # Split-era files carry "state": {}; the runtime state lives in the
                        # sidecar or the database and must not be wiped by a definition import.
                        update = [c for c in update if c not in STATE_COLUMNS and c != "state_json"]
                    if job.updated_at_ms is None:
                        update = [c for c in update if c not in ("runtime_updated_at_ms", "updated_at")]
                    try:
                        db.upsert(JOBS_TABLE, row, JOB_KEY, update=update)
                    except IntegrityError as exc:
                        raise _explain_integrity(exc, JOBS_TABLE) from None
                    written.append(row["job_id"])
        result.records = len(written)
        _expect_jobs(result, store_key, [r["job_id"] for r in rows])
        result.report = {
            "store": store_rel(rel),
            "jobs_in_file": store.total,
            "jobs_written": len(written),
            "kept_newer_database_rows": kept_newer,
            "duplicates_dropped": [
                {"job_id": loser.job_id, "index": loser.index, "kept_index": winner.index} for loser, winner in store.dropped
            ],
            "repairs": dict(store.repairs),
            "bare_array": store.bare_array,
        }
        return result


def _configured_store(config: Mapping[str, Any]) -> str | None:
    """``cron.store`` from the config as OpenClaw resolves it (``~`` expanded, made absolute), if set."""
    cron = config.get("cron") if isinstance(config, Mapping) else None
    raw = trimmed(cron.get("store")) if isinstance(cron, Mapping) else None
    return os.path.abspath(os.path.expanduser(raw)) if raw else None
