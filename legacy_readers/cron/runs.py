"""``cron-runs``: one run log per job ``cron/runs/<jobId>.jsonl`` -> ``global.cron_run_logs``, streamed line by line."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from itertools import islice
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from statekit.db import IntegrityError
from statekit.documents import parse_json_line, validate
from statekit.errors import SourceError
from statekit.fsutil import iter_lines
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.legacy_readers.writer import DatabaseWriter
from statekit.legacy_readers.cron._store import (
    FAMILY,
    JOBS_TABLE,
    RUNS_TABLE,
    RUN_COLUMNS,
    _explain_integrity,
    source_store_key,
    store_rel,
)
from statekit.values import finite_number, flag, int64, record, text, trimmed


# --- runs/<jobId>.jsonl --------------------------------------------------------------


def run_log_job_id(rel: str) -> str:
    name = PurePosixPath(rel).name
    job_id = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    if not job_id.strip():
        raise SourceError(rel, "run log file name has no job id")
    return job_id


def _run_entries(handle: BinaryIO, rel: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line number, raw line text, entry) for every non-blank line; SourceError on the first bad one."""
    for number, raw in enumerate(iter_lines(handle), start=1):
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if not raw.strip():
            continue
        entry = parse_json_line(raw, rel, number)
        validate(entry, "cron-run-entry", rel, line=number)
        yield number, raw.decode("utf-8"), entry


INSERT_BATCH = 1000  # run-log rows per INSERT batch
MAX_DATE_MS = 8_640_000_000_000_000  # the largest instant a JavaScript Date holds

# Why OpenClaw's run-log parser (parseCronRunLogEntryObject, 2026.7.35 and 2026.9.6) skips a line.
SKIP_REASONS = {
    "action": "not a finished run (action is not \"finished\")",
    "jobId": "no jobId",
    "otherJob": "names another jobId",
    "ts": "no integer ts (epoch ms)",
}


def skip_reason(entry: Mapping[str, Any], job_id: str) -> str | None:
    """The key of ``SKIP_REASONS`` when OpenClaw would not keep this line, else None."""
    if entry.get("action") != "finished":
        return "action"
    named = entry.get("jobId")
    if not isinstance(named, str) or not named.strip():
        return "jobId"
    if named != job_id:
        return "otherJob"
    ts = finite_number(entry.get("ts"))
    if ts is None or not float(ts).is_integer() or not 0 <= ts <= MAX_DATE_MS:
        return "ts"
    return None


def _run_row(store_key: str, job_id: str, seq: int, line_text: str, entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """One ``cron_run_logs`` row as 2026.7.35's ``bindCronRunLogRow`` projects an entry; ``entry_json`` is the line itself."""
    usage = record(entry.get("usage"))
    diagnostics = record(entry.get("diagnostics"))
    ts = int(entry["ts"])
    row = {
        "store_key": store_key,
        "job_id": job_id,
        "seq": seq,
        "ts": ts,
        "status": text(entry.get("status")),
        "error": text(entry.get("error")),
        "summary": text(entry.get("summary")),
        "diagnostics_summary": text(diagnostics.get("summary")),
        "delivery_status": text(entry.get("deliveryStatus")),
        "delivery_error": text(entry.get("deliveryError")),
        "delivered": flag(entry.get("delivered")),
        "session_id": trimmed(entry.get("sessionId")) and text(entry.get("sessionId")),
        "session_key": trimmed(entry.get("sessionKey")) and text(entry.get("sessionKey")),
        "run_id": trimmed(entry.get("runId")) and text(entry.get("runId")),
        "run_at_ms": int64(entry.get("runAtMs")),
        "duration_ms": int64(entry.get("durationMs")),
        "next_run_at_ms": int64(entry.get("nextRunAtMs")),
        "model": trimmed(entry.get("model")) and text(entry.get("model")),
        "provider": trimmed(entry.get("provider")) and text(entry.get("provider")),
        "total_tokens": int64(usage.get("total_tokens")),
        "entry_json": line_text,
        "created_at": ts,
    }
    return tuple(row[c] for c in RUN_COLUMNS)


def _merge_base(db: DatabaseWriter, owner: Mapping[str, Any]) -> tuple[int, set[str]]:
    """For a run log that came back after its import: the last seq imported and the lines already there."""
    last = db.first(RUNS_TABLE, "max(seq)", owner)
    lines = {str(row[0]) for row in db.select(RUNS_TABLE, ("entry_json",), owner)}
    return (int(last[0]) if last and last[0] is not None else 0), lines


def _skip_notice(rel: str, skipped: Counter[str]) -> str:
    parts = ", ".join(f"{count} {SKIP_REASONS[key]}" for key, count in sorted(skipped.items()))
    return f"{rel}: {sum(skipped.values())} line(s) not imported, as OpenClaw skips them ({parts}); the retired copy keeps them"


class CronRunsReader(Reader):
    kind = "cron-runs"
    family = FAMILY
    description = "Cron run history (cron/runs/<jobId>.jsonl), one row per finished run"
    patterns = ("cron/runs/*.jsonl",)
    schema_name = "cron-run-entry"
    target_tables = ("global.cron_run_logs",)
    action = "import"
    depends_on = ("cron-jobs",)  # its jobs must exist first

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        job_id = run_log_job_id(source.rel)
        count = 0
        skipped: Counter[str] = Counter()
        for _, _, entry in _run_entries(handle, source.rel):
            reason = skip_reason(entry, job_id)
            if reason is None:
                count += 1
            else:
                skipped[reason] += 1
        warnings = [_skip_notice(source.rel, skipped)] if skipped else []
        return Inspection(record_count=count, warnings=warnings, details={"store": store_rel(source.rel), "job_id": job_id})

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        rel = source.rel
        job_id = run_log_job_id(rel)
        store_key = source_store_key(source)
        db = ctx.writer.state
        db.require_columns(RUNS_TABLE, RUN_COLUMNS)
        owner = {"store_key": store_key, "job_id": job_id}
        counts = {"rows": 0}
        skipped: Counter[str] = Counter()
        first, imported_lines = _merge_base(db, owner) if ctx.merging else (0, set())  # a log that came back: keep the imported rows

        def rows() -> Iterator[tuple[Any, ...]]:
            for _, line_text, entry in _run_entries(handle, rel):
                reason = skip_reason(entry, job_id)
                if reason is not None:
                    skipped[reason] += 1
                    continue
                if line_text in imported_lines:
                    continue
                counts["rows"] += 1
                # seq starts at 1, as OpenClaw numbers run-log rows (MAX(seq) + 1).
                yield _run_row(store_key, job_id, first + counts["rows"], line_text, entry)

        with db.savepoint("statekit_cron_runs"):
            replaced = 0 if ctx.merging else db.delete(RUNS_TABLE, owner)
            try:
                pending = rows()
                while batch := list(islice(pending, INSERT_BATCH)):  # streamed: a run log can be large
                    db.insert_many(RUNS_TABLE, RUN_COLUMNS, batch, owner=owner)
            except IntegrityError as exc:
                raise _explain_integrity(exc, RUNS_TABLE) from None
        result = WriteResult(records=counts["rows"])
        if skipped:
            result.notices.append(_skip_notice(rel, skipped))
        known = db.exists(JOBS_TABLE, owner)
        result.report = {
            "store": store_rel(rel),
            "job_id": job_id,
            "rows": counts["rows"],
            "skipped_lines": dict(skipped),
            "replaced_rows": replaced,
            "job_known": known,
        }
        return result
