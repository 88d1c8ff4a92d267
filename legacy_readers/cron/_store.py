"""Cron store plumbing shared by the cron readers: store keys, table constants, JSON5 loading, row helpers."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from statekit.db import IntegrityError
from statekit.documents import parse_json5_document
from statekit.errors import SchemaError, SourceError
from statekit.legacy_readers.base import Source
from statekit.legacy_readers.writer import DatabaseWriter
from statekit.values import finite_number, flag, int64, js_number, js_string, text


FAMILY = "cron"
STORE_FILE = "jobs.json"
JOBS_TABLE = "cron_jobs"
RUNS_TABLE = "cron_run_logs"
JOB_KEY = ("store_key", "job_id")
IN_CHUNK = 500  # ids per "IN (...)" list, far below SQLite's variable limit

SCHEDULE_KINDS = ("at", "every", "cron")
PAYLOAD_KINDS = {"agentturn": "agentTurn", "systemevent": "systemEvent"}
DELIVERY_HINT_FIELDS = ("deliver", "bestEffortDeliver", "channel", "provider", "to", "threadId")
TOP_LEVEL_PAYLOAD_FIELDS = ("model", "thinking", "timeoutSeconds", "allowUnsafeExternalContent", "message", "text", "command", "timeout")

STATE_COLUMNS = (
    "next_run_at_ms",
    "running_at_ms",
    "last_run_at_ms",
    "last_run_status",
    "last_error",
    "last_duration_ms",
    "consecutive_errors",
    "consecutive_skipped",
    "schedule_error_count",
    "last_delivery_status",
    "last_delivery_error",
    "last_delivered",
    "last_failure_alert_at_ms",
)

RUN_COLUMNS = (
    "store_key",
    "job_id",
    "seq",
    "ts",
    "status",
    "error",
    "summary",
    "diagnostics_summary",
    "delivery_status",
    "delivery_error",
    "delivered",
    "session_id",
    "session_key",
    "run_id",
    "run_at_ms",
    "duration_ms",
    "next_run_at_ms",
    "model",
    "provider",
    "total_tokens",
    "entry_json",
    "created_at",
)

# Human labels for the repair tallies reported per file.
REPAIR_LABELS = {
    "jobId": "legacy jobId renamed to id",
    "nonStringId": "numeric id stored as text",
    "missingId": "missing id given a deterministic one",
    "nullJob": "null entry skipped",
    "scheduleString": "string schedule converted",
    "scheduleCron": "schedule.cron renamed to expr",
    "scheduleKind": "schedule kind canonicalised",
    "scheduleKindInferred": "schedule kind inferred",
    "scheduleAt": "at time normalised to ISO",
    "scheduleAnchor": "every anchor filled from createdAtMs",
    "payloadKind": "payload kind canonicalised",
    "topLevelPayload": "top-level payload fields moved into payload",
    "topLevelDelivery": "top-level delivery fields moved into delivery",
    "payloadDelivery": "payload delivery hints moved into delivery",
    "deliveryMode": "delivery mode canonicalised",
    "sessionTarget": "sessionTarget canonicalised",
    "wakeMode": "wakeMode canonicalised",
    "enabled": "missing enabled set to true",
    "name": "missing name inferred",
    "createdAtMs": "missing createdAtMs filled",
    "notifyWebhook": "notify:true moved to a webhook delivery",
    "notifyDropped": "notify:false removed",
}


# --- small value helpers ---------------------------------------------------------


def _id_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    number = finite_number(value)
    return None if number is None else js_number(number)


def _coerce_number(value: Any) -> float | None:
    """A finite number, or a numeric string (as OpenClaw's schedule coercion accepts)."""
    number = finite_number(value)
    if number is not None:
        return number
    if isinstance(value, str) and value.strip():
        try:
            parsed = float(value.strip())
        except ValueError:
            return None
        return parsed if math.isfinite(parsed) else None
    return None


def _first_non_finite(value: Any, path: str = "$") -> str | None:
    """JSON path of the first NaN/Infinity (JSON5 and Python's json accept them; we refuse them)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return where
        if isinstance(item, dict):
            stack.extend((v, f"{where}.{k}" if _plain_key(k) else f"{where}[{js_string(k)}]") for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))
    return None


def _plain_key(key: str) -> bool:
    return key.isidentifier()


def _parse_document(data: bytes, rel: str) -> Any:
    document = parse_json5_document(data, rel)
    bad = _first_non_finite(document)
    if bad:
        raise SourceError(rel, "non-finite number (NaN or Infinity) is not allowed", json_path=bad)
    return document


def store_dir_of(rel: str) -> str:
    """The cron store directory a claimed file belongs to (``cron`` for the default store)."""
    parts = PurePosixPath(rel).parts
    if len(parts) >= 2 and parts[-2] == "runs":
        return "/".join(parts[:-2])
    return "/".join(parts[:-1])


def store_key_for(rel: str, state_dir: Path | str) -> str:
    """The store key of the store a claimed file belongs to: the absolute path of its ``jobs.json``.

    OpenClaw keys every cron row by ``path.resolve(storePath)``; the state dir is
    made absolute the way ``path.resolve`` does it (no symlink resolution), so a
    state dir reached through a symlink keeps the path OpenClaw is given.
    """
    directory = store_dir_of(rel)
    parts = [p for p in PurePosixPath(directory).parts if p]
    return os.path.join(os.path.abspath(os.fspath(state_dir)), *parts, STORE_FILE)


def source_store_key(source: Source) -> str:
    return store_key_for(source.rel, source.state_dir)


def store_rel(rel: str) -> str:
    """The store's ``jobs.json`` relative to the state dir (receipts carry this, never an absolute path)."""
    directory = store_dir_of(rel)
    return f"{directory}/{STORE_FILE}" if directory else STORE_FILE


def _explain_integrity(exc: Exception, table: str) -> Exception:  # exc: one of db.IntegrityError
    message = str(exc)
    if message.startswith("NOT NULL constraint failed"):
        column = message.rsplit(".", 1)[-1]
        return SchemaError(
            f"existing table {table} requires column {column} (NOT NULL) that statekit does not fill; it was left unaltered"
        )
    return SchemaError(f"existing table {table} refused a row ({message}); it was left unaltered")


def _chunks(items: Sequence[str], size: int = IN_CHUNK) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _expect_jobs(db: DatabaseWriter, store_key: str, job_ids: Sequence[str], table: str = JOBS_TABLE) -> None:
    """After commit, the store holds these jobs (the ones written and the newer ones kept)."""
    if not job_ids:
        return
    where: dict[str, Any] = {"store_key": store_key}
    if len(job_ids) <= IN_CHUNK:
        where["job_id"] = list(job_ids)
    db.expect_rows(table, where, len(job_ids))


def _existing_rows(db: DatabaseWriter, store_key: str, job_ids: Sequence[str], columns: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    found: dict[str, tuple[Any, ...]] = {}
    for chunk in _chunks(list(job_ids)):
        for row in db.select(JOBS_TABLE, ("job_id", *columns), {"store_key": store_key, "job_id": list(chunk)}):
            found[row[0]] = tuple(row[1:])
    return found


# --- state projection ------------------------------------------------------------


def state_columns(state: Mapping[str, Any]) -> dict[str, Any]:
    """The typed runtime-state columns of ``cron_jobs`` (as OpenClaw's ``bindStateColumns``)."""
    return {
        "next_run_at_ms": int64(state.get("nextRunAtMs")),
        "running_at_ms": int64(state.get("runningAtMs")),
        "last_run_at_ms": int64(state.get("lastRunAtMs")),
        "last_run_status": text(state.get("lastRunStatus")) or text(state.get("lastStatus")),
        "last_error": text(state.get("lastError")),
        "last_duration_ms": int64(state.get("lastDurationMs")),
        "consecutive_errors": int64(state.get("consecutiveErrors")),
        "consecutive_skipped": int64(state.get("consecutiveSkipped")),
        "schedule_error_count": int64(state.get("scheduleErrorCount")),
        "last_delivery_status": text(state.get("lastDeliveryStatus")),
        "last_delivery_error": text(state.get("lastDeliveryError")),
        "last_delivered": flag(state.get("lastDelivered")),
        "last_failure_alert_at_ms": int64(state.get("lastFailureAlertAtMs")),
    }
