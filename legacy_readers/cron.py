"""Cron: ``cron/jobs.json``, ``cron/jobs-state.json``, ``cron/runs/<jobId>.jsonl``.

Four readers, one family (``docs/readers/cron.md`` has the full contract):

* ``cron-jobs`` (order 30): the job definitions -> ``global.cron_jobs``,
  after the legacy shape repairs OpenClaw's own doctor applies (``jobId``,
  numeric ids, string / ``schedule.cron`` schedules, enum case, top-level
  payload and delivery fields, ``notify: true``). Duplicate ids: the newest
  copy wins, the others are reported.
* ``cron-state`` (order 31): the runtime-state sidecar -> the state columns of
  existing ``cron_jobs`` rows. It never invents a job.
* ``cron-runs`` (order 32): one run log per job -> ``global.cron_run_logs``,
  streamed line by line; a re-import replaces that job's rows.
* ``cron-jobs-backup`` (order 33): OpenClaw's own ``jobs.json.bak`` copies,
  retained in place.

Rows are keyed by ``store_key`` = the absolute path of the store's
``jobs.json`` (``<state dir>/cron/jobs.json``): what every release with a
SQLite cron store uses (``cronStoreKey(storePath) = path.resolve(storePath)``
in 2026.7.35 and 2026.9.6), so OpenClaw finds the imported jobs where it
looks for them. Columns and value formats are those of 2026.7.35's
``bindCronJobRow`` / ``bindCronRunLogRow`` (see docs/readers/cron.md).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from statekit.documents import parse_json5_document, parse_json_line, validate
from statekit.legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, insert_many, require_columns, upsert
from statekit.values import (
    INT64_MAX,
    datetime_ms,
    file_mtime_ms,
    finite_number,
    flag,
    int64,
    js_json,
    js_number,
    js_string,
    json_text,
    ms_to_iso,
    text,
    trimmed,
)
from statekit.errors import SchemaError, SourceError
from statekit.fsutil import iter_lines
from statekit.db import Connection, IntegrityError

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


@contextmanager
def _savepoint(conn: Connection, name: str) -> Iterator[None]:
    """All of one reader's rows or none, even if the caller forgot to roll back."""
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        conn.execute(f"ROLLBACK TO {name}")
        conn.execute(f"RELEASE {name}")
        raise
    conn.execute(f"RELEASE {name}")


def _explain_integrity(exc: IntegrityError, table: str) -> Exception:
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


def _expect_jobs(result: WriteResult, store_key: str, job_ids: Sequence[str], table: str = JOBS_TABLE) -> None:
    if not job_ids:
        return
    if len(job_ids) <= IN_CHUNK:
        marks = ", ".join("?" for _ in job_ids)
        result.expect("global", table, f"store_key = ? AND job_id IN ({marks})", (store_key, *job_ids), len(job_ids))
    else:
        result.expect("global", table, "store_key = ?", (store_key,), len(job_ids))


def _existing_rows(conn: Connection, store_key: str, job_ids: Sequence[str], columns: Sequence[str]) -> dict[str, tuple[Any, ...]]:
    found: dict[str, tuple[Any, ...]] = {}
    select = ", ".join(("job_id", *columns))
    for chunk in _chunks(list(job_ids)):
        marks = ", ".join("?" for _ in chunk)
        sql = f"SELECT {select} FROM {JOBS_TABLE} WHERE store_key = ? AND job_id IN ({marks})"
        for row in conn.execute(sql, (store_key, *chunk)):
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


# --- jobs.json: legacy shape repairs ---------------------------------------------


@dataclass
class RepairedJob:
    index: int  # position in the file's jobs array
    job_id: str
    job: dict[str, Any]  # repaired definition, runtime fields stripped (state = {})
    state: dict[str, Any]  # inline runtime state (pre-split files), {} when none
    updated_at_ms: int | None
    created_at_ms: int
    repairs: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


class _JobRepair:
    """Repairs one legacy job the way OpenClaw's doctor normaliser does, without its runtime-only defaults."""

    def __init__(self, raw: dict[str, Any], index: int, rel: str, fallback_ms: int, webhook: str | None) -> None:
        self.raw = raw
        self.job = copy.deepcopy(raw)
        self.index = index
        self.rel = rel
        self.path = f"$.jobs[{index}]"
        self.fallback_ms = fallback_ms
        self.webhook = webhook
        self.repairs: list[str] = []
        self.notices: list[str] = []

    def fail(self, where: str, problem: str) -> SourceError:
        return SourceError(self.rel, problem, json_path=f"{self.path}{where}")

    def note(self, key: str) -> None:
        if key not in self.repairs:
            self.repairs.append(key)

    def run(self) -> RepairedJob:
        job = self.job
        job_id = self._identity()
        state = job.pop("state", None)
        state = state if isinstance(state, dict) else {}
        updated = int64(job.pop("updatedAtMs", None))
        created = int64(job.get("createdAtMs"))
        if created is None:
            created = updated if updated is not None else self.fallback_ms
            job["createdAtMs"] = created
            self.note("createdAtMs")
        elif job["createdAtMs"] != created:
            job["createdAtMs"] = created
        job["schedule"] = self._schedule(created)
        payload = self._payload()
        job["payload"] = payload
        self._delivery(payload)
        self._notify()
        self._scalars(payload)
        job["state"] = {}
        return RepairedJob(self.index, job_id, job, state, updated, created, self.repairs, self.notices)

    def _identity(self) -> str:
        job = self.job
        raw_id = job.get("id")
        job_id = _id_text(raw_id)
        if raw_id is not None and not isinstance(raw_id, str):
            self.note("nonStringId")
        if job_id is None:
            job_id = _id_text(job.get("jobId"))
            if job_id is not None and not isinstance(job.get("jobId"), str):
                self.note("nonStringId")
        if "jobId" in job:
            del job["jobId"]
            self.note("jobId")
        if job_id is None:
            digest = hashlib.sha256(js_json(self.raw).encode("utf-8")).hexdigest()  # JSON.stringify, as 2026.9.6 hashes it
            job_id = f"cron-migrated-{self.index}-{digest}"
            self.note("missingId")
            self.notices.append(f"{self.path} has no id; imported as {job_id}")
        job["id"] = job_id
        return job_id

    def _schedule(self, created: int) -> dict[str, Any]:
        raw = self.job.get("schedule")
        if isinstance(raw, str):
            expr = raw.strip()
            if not expr:
                raise self.fail(".schedule", "schedule is an empty string")
            self.note("scheduleString")
            return {"kind": "cron", "expr": expr}
        if not isinstance(raw, dict):
            raise self.fail(".schedule", "expected a schedule object or cron string")
        schedule = dict(raw)
        kind_raw = schedule.get("kind")
        kind = kind_raw.strip().lower() if isinstance(kind_raw, str) else ""
        if kind and kind not in SCHEDULE_KINDS:
            raise self.fail(".schedule.kind", "unsupported schedule kind (expected at, every or cron)")
        if not kind:
            if "at" in schedule or "atMs" in schedule:
                kind = "at"
            elif "everyMs" in schedule:
                kind = "every"
            elif trimmed(schedule.get("expr")) or trimmed(schedule.get("cron")):
                kind = "cron"
            else:
                raise self.fail(".schedule", "schedule has no kind and none of at, everyMs or expr")
            self.note("scheduleKindInferred")
        elif kind != kind_raw:
            self.note("scheduleKind")
        schedule["kind"] = kind
        if kind == "cron":
            expr = trimmed(schedule.get("expr"))
            legacy = trimmed(schedule.get("cron"))
            if expr is None and legacy is not None:
                expr = legacy
                self.note("scheduleCron")
            if "cron" in schedule:
                del schedule["cron"]
                self.note("scheduleCron")
            if expr is None:
                raise self.fail(".schedule.expr", "cron schedule needs a non-empty expr")
            schedule["expr"] = expr
            if "tz" in schedule:
                tz = trimmed(schedule["tz"])
                if tz is None:
                    del schedule["tz"]
                else:
                    schedule["tz"] = tz
            if schedule.get("staggerMs") is not None:
                stagger = int64(schedule["staggerMs"])
                if stagger is None or stagger < 0:
                    raise self.fail(".schedule.staggerMs", "must be a non-negative number")
                schedule["staggerMs"] = stagger
        elif kind == "every":
            every = _coerce_number(schedule.get("everyMs"))
            if every is None or math.floor(every) <= 0 or every > INT64_MAX:
                raise self.fail(".schedule.everyMs", "every schedule needs a positive everyMs")
            schedule["everyMs"] = int(math.floor(every))
            anchor = _coerce_number(schedule.get("anchorMs"))
            if anchor is not None:
                if anchor > INT64_MAX:
                    raise self.fail(".schedule.anchorMs", "out of range")
                schedule["anchorMs"] = max(0, int(math.floor(anchor)))
            elif schedule.get("anchorMs") is not None:
                raise self.fail(".schedule.anchorMs", "must be a number")
            else:
                schedule["anchorMs"] = max(0, created)
                self.note("scheduleAnchor")
        else:
            schedule["at"] = self._at(schedule)
            schedule.pop("atMs", None)
        return schedule

    def _at(self, schedule: dict[str, Any]) -> str:
        at_ms = schedule.get("atMs")
        at = schedule.get("at")
        where = ".schedule.atMs" if at_ms is not None else ".schedule.at"
        try:
            if at_ms is not None:
                millis = _coerce_number(at_ms)
                if millis is None:
                    raise self.fail(where, "must be a number of milliseconds")
                self.note("scheduleAt")
                return ms_to_iso(int(millis))
            if finite_number(at) is not None:
                self.note("scheduleAt")
                return ms_to_iso(int(at))
            text = trimmed(at)
            if text is None:
                raise self.fail(where, "at schedule needs an ISO 8601 time")
            if text.isdigit():
                self.note("scheduleAt")
                return ms_to_iso(int(text))
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                raise self.fail(where, "not an ISO 8601 time") from None
            if moment.tzinfo is None:
                return text  # no UTC offset: kept exactly as written; OpenClaw interprets it
            normalised = ms_to_iso(datetime_ms(moment))
        except OverflowError:
            raise self.fail(where, "time is out of range") from None
        if normalised != at:
            self.note("scheduleAt")
        return normalised

    def _payload(self) -> dict[str, Any]:
        job = self.job
        payload = job.get("payload")
        if not isinstance(payload, dict):
            message = trimmed(job.get("message"))
            text = trimmed(job.get("text"))
            command = trimmed(job.get("command"))
            if message:
                payload = {"kind": "agentTurn", "message": message}
            elif text:
                payload = {"kind": "systemEvent", "text": text}
            elif command:
                payload = {"kind": "systemEvent", "text": command}
            else:
                raise self.fail("", "job has no payload (and no top-level message, text or command)")
            self.note("topLevelPayload")
        else:
            payload = dict(payload)
        kind_raw = payload.get("kind")
        kind = PAYLOAD_KINDS.get(kind_raw.strip().lower()) if isinstance(kind_raw, str) else None
        if isinstance(kind_raw, str) and kind_raw.strip() and kind is None:
            raise self.fail(".payload.kind", "unsupported payload kind (expected agentTurn or systemEvent)")
        if kind is None:
            if trimmed(payload.get("message")):
                kind = "agentTurn"
            elif trimmed(payload.get("text")):
                kind = "systemEvent"
            else:
                raise self.fail(".payload", "payload has no kind and no message or text")
        if kind != kind_raw:
            self.note("payloadKind")
        payload["kind"] = kind
        if kind == "agentTurn":
            self._copy_top_level_agent_fields(payload)
            if not isinstance(payload.get("message"), str) and isinstance(payload.get("text"), str):
                payload["message"] = payload.pop("text")
                self.note("payloadKind")
            if not isinstance(payload.get("message"), str):
                raise self.fail(".payload.message", "agentTurn payload needs a message")
        else:
            if not trimmed(payload.get("text")) and trimmed(payload.get("message")):
                payload["text"] = payload.pop("message")
                self.note("payloadKind")
            if not isinstance(payload.get("text"), str):
                raise self.fail(".payload.text", "systemEvent payload needs a text")
        present = [name for name in TOP_LEVEL_PAYLOAD_FIELDS if name in job]
        for name in present:
            del job[name]
        if present:
            self.note("topLevelPayload")
        return payload

    def _copy_top_level_agent_fields(self, payload: dict[str, Any]) -> None:
        job = self.job
        for name in ("model", "thinking"):
            if not trimmed(payload.get(name)) and trimmed(job.get(name)):
                payload[name] = trimmed(job.get(name))
        seconds = finite_number(job.get("timeoutSeconds"))
        if finite_number(payload.get("timeoutSeconds")) is None and seconds is not None:
            payload["timeoutSeconds"] = max(0, int(math.floor(seconds)))
        if not isinstance(payload.get("allowUnsafeExternalContent"), bool) and isinstance(job.get("allowUnsafeExternalContent"), bool):
            payload["allowUnsafeExternalContent"] = job["allowUnsafeExternalContent"]

    def _delivery(self, payload: dict[str, Any]) -> None:
        """Top-level and payload-level delivery hints -> ``delivery`` (payload hints win, as upstream)."""
        job = self.job
        hints: dict[str, Any] = {}
        for name in DELIVERY_HINT_FIELDS:
            if name in payload:
                hints[name] = payload.pop(name)
                self.note("payloadDelivery")
        for name in DELIVERY_HINT_FIELDS:
            if name in job:
                hints.setdefault(name, job[name])
                del job[name]
                self.note("topLevelDelivery")
        patch = _delivery_patch(hints)
        delivery = job.get("delivery")
        if delivery is not None and not isinstance(delivery, dict):
            raise self.fail(".delivery", "expected an object")
        if patch:
            merged = dict(delivery or {})
            if delivery is None and "mode" not in patch:
                patch["mode"] = "announce"
            merged.update(patch)
            delivery = merged
        if isinstance(delivery, dict):
            delivery = dict(delivery)
            mode = delivery.get("mode")
            if isinstance(mode, str):
                canonical = mode.strip().lower()
                if canonical == "deliver":
                    canonical = "announce"
                if canonical and canonical != mode:
                    delivery["mode"] = canonical
                    self.note("deliveryMode")
            elif mode is None:
                delivery["mode"] = "announce"
                self.note("deliveryMode")
            job["delivery"] = delivery

    def _notify(self) -> None:
        job = self.job
        if "notify" not in job:
            return
        if job["notify"] is not True:
            del job["notify"]
            self.note("notifyDropped")
            return
        delivery = job.get("delivery") if isinstance(job.get("delivery"), dict) else None
        mode = trimmed((delivery or {}).get("mode"))
        mode = mode.lower() if mode else None
        target = trimmed((delivery or {}).get("to"))
        if mode == "webhook" and target:
            del job["notify"]
            self.note("notifyWebhook")
        elif mode in (None, "none", "webhook") and self.webhook:
            job["delivery"] = {**(delivery or {}), "mode": "webhook", "to": self.webhook if mode == "none" else (target or self.webhook)}
            del job["notify"]
            self.note("notifyWebhook")
        elif not self.webhook:
            self.notices.append(f"{self.path} (job {job['id']}) keeps legacy notify:true: cron.webhook is not set in the config")
        else:
            self.notices.append(f"{self.path} (job {job['id']}) keeps legacy notify:true next to delivery mode {mode!r}: migrate it by hand")

    def _scalars(self, payload: dict[str, Any]) -> None:
        job = self.job
        name = trimmed(job.get("name"))
        if name is None:
            job["name"] = _infer_name(job["schedule"], payload)
            self.note("name")
        elif name != job["name"]:
            job["name"] = name
        if "description" in job:
            description = trimmed(job["description"])
            if description is None:
                del job["description"]
            else:
                job["description"] = description
        if "sessionKey" in job:
            session_key = trimmed(job["sessionKey"])
            if session_key is None:
                del job["sessionKey"]
            else:
                job["sessionKey"] = session_key
        if not isinstance(job.get("enabled"), bool):
            job["enabled"] = True
            self.note("enabled")
        wake = trimmed(job.get("wakeMode"))
        wake_canonical = wake.lower() if wake and wake.lower() in ("now", "next-heartbeat") else "now"
        if job.get("wakeMode") != wake_canonical:
            job["wakeMode"] = wake_canonical
            self.note("wakeMode")
        target = _session_target(job.get("sessionTarget"), payload["kind"])
        if job.get("sessionTarget") != target:
            job["sessionTarget"] = target
            self.note("sessionTarget")


def _delivery_patch(hints: Mapping[str, Any]) -> dict[str, Any]:
    deliver = hints.get("deliver") if isinstance(hints.get("deliver"), bool) else None
    best_effort = hints.get("bestEffortDeliver") if isinstance(hints.get("bestEffortDeliver"), bool) else None
    channel = trimmed(hints.get("channel")) or trimmed(hints.get("provider"))
    channel = channel.lower() if channel else None
    target = trimmed(hints.get("to"))
    thread = hints.get("threadId")
    thread_text = trimmed(thread) if isinstance(thread, str) else (js_number(thread) if finite_number(thread) is not None else None)
    patch: dict[str, Any] = {}
    if deliver is False:
        patch["mode"] = "none"
    elif deliver is True or channel or target or thread_text or best_effort is not None:
        patch["mode"] = "announce"
    if channel:
        patch["channel"] = channel
    if target:
        patch["to"] = target
    if thread_text:
        patch["threadId"] = thread_text
    if best_effort is not None:
        patch["bestEffort"] = best_effort
    return patch


def _session_target(value: Any, payload_kind: str) -> str:
    raw = trimmed(value) or ""
    lowered = raw.lower()
    if lowered in ("main", "isolated"):
        return lowered
    if lowered.startswith("session:") and raw[8:].strip():
        return f"session:{raw[8:].strip()}"
    if lowered == "current":
        return "isolated"
    return "isolated" if payload_kind == "agentTurn" else "main"


def _infer_name(schedule: Mapping[str, Any], payload: Mapping[str, Any]) -> str:
    text = payload.get("message") if payload.get("kind") == "agentTurn" else payload.get("text")
    words = " ".join(str(text or "").split())
    if words:
        return words if len(words) <= 60 else words[:59].rstrip() + "…"
    kind = schedule.get("kind")
    detail = schedule.get("expr") or schedule.get("at") or (f"every {schedule.get('everyMs')}ms" if kind == "every" else "")
    return f"cron {kind} {detail}".strip()


def _schedule_number(value: Any) -> float | int | None:
    """``coerceFiniteScheduleNumber``: a finite number, or a string that is one (JS ``Number()`` rules, roughly)."""
    number = finite_number(value)
    if number is not None:
        return number
    if isinstance(value, str) and value.strip():
        try:
            parsed = float(value.strip())
        except ValueError:
            return None
        return int(parsed) if math.isfinite(parsed) and parsed.is_integer() else (parsed if math.isfinite(parsed) else None)
    return None


def _stagger(value: Any) -> int | None:
    """``normalizeCronStaggerMs``: max(0, floor(n)) of a number or a non-negative integer string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return max(0, math.floor(value)) if math.isfinite(value) else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def schedule_identity(job: Mapping[str, Any]) -> str | None:
    """``tryCronScheduleIdentity`` of OpenClaw 2026.7.35 (schema version 1): the scheduling inputs as JSON.

    ``{"version":1,"enabled":..,"schedule":{kind, expr, tz, staggerMs | everyMs, anchorMs | at}}``;
    absent values are left out, as ``JSON.stringify`` leaves out ``undefined``.
    """
    raw = job.get("schedule")
    if not isinstance(raw, dict):
        return None
    kind_raw = trimmed(raw.get("kind"))
    kind = kind_raw.lower() if kind_raw else None
    expr, at = trimmed(raw.get("expr")), trimmed(raw.get("at"))
    every, anchor = _schedule_number(raw.get("everyMs")), _schedule_number(raw.get("anchorMs"))
    if kind not in SCHEDULE_KINDS:
        kind = "at" if at else "every" if every is not None else "cron" if expr else None
    schedule: dict[str, Any]
    if kind == "at" and at:
        schedule = {"kind": "at", "at": at}
    elif kind == "every" and every is not None:
        schedule = {"kind": "every", "everyMs": every}
        if anchor is not None:
            schedule["anchorMs"] = anchor
    elif kind == "cron" and expr:
        schedule = {"kind": "cron", "expr": expr}
        tz, stagger = trimmed(raw.get("tz")), _stagger(raw.get("staggerMs"))
        if tz:
            schedule["tz"] = tz
        if stagger is not None:
            schedule["staggerMs"] = stagger
    else:
        return None
    enabled = job.get("enabled") if isinstance(job.get("enabled"), bool) else True
    return js_json({"version": 1, "enabled": enabled, "schedule": schedule})


def _thread_id(value: Any) -> tuple[str | None, str | None]:
    """``String(threadId)`` and ``typeof threadId`` (``delivery_thread_id`` / ``delivery_thread_id_type``)."""
    if isinstance(value, str):
        return value, "string"
    if finite_number(value) is not None:
        return js_number(value), "number"
    return None, None


def _destination_field(destination: Any, name: str) -> str | None:
    """``bindFailureDestinationField``: NULL when the key is absent, ``""`` for an explicit null (a cleared override)."""
    if not isinstance(destination, dict) or name not in destination:
        return None
    value = destination[name]
    return "" if value is None else text(value)


def _job_row(store_key: str, repaired: RepairedJob) -> dict[str, Any]:
    """One ``cron_jobs`` row as 2026.7.35's ``bindCronJobRow`` writes it (every column of the v1 table)."""
    job = repaired.job
    schedule = job["schedule"]
    payload = job["payload"]
    delivery = job.get("delivery") if isinstance(job.get("delivery"), dict) else {}
    failure_destination = delivery.get("failureDestination")
    completion = delivery.get("completionDestination") if isinstance(delivery.get("completionDestination"), dict) else {}
    alert = job.get("failureAlert")
    owner = job.get("owner") if isinstance(job.get("owner"), dict) else {}
    trigger = job.get("trigger") if isinstance(job.get("trigger"), dict) else {}
    agent_turn = payload["kind"] == "agentTurn"
    tools_allow = payload.get("toolsAllow") if agent_turn else None
    thread, thread_type = _thread_id(delivery.get("threadId"))
    kind = schedule["kind"]
    updated = repaired.updated_at_ms if repaired.updated_at_ms is not None else repaired.created_at_ms
    row: dict[str, Any] = {
        "store_key": store_key,
        "job_id": repaired.job_id,
        "declaration_key": text(job.get("declarationKey")),
        "display_name": text(job.get("displayName")),
        "owner_agent_id": text(owner.get("agentId")),
        "owner_session_key": text(owner.get("sessionKey")),
        "name": job["name"],
        "description": text(job.get("description")),
        "enabled": 1 if job["enabled"] else 0,
        "delete_after_run": flag(job.get("deleteAfterRun")),
        "created_at_ms": repaired.created_at_ms,
        "agent_id": text(job.get("agentId")),
        "session_key": text(job.get("sessionKey")),
        "schedule_kind": kind,
        "schedule_expr": schedule.get("expr") if kind == "cron" else None,
        "schedule_tz": text(schedule.get("tz")) if kind == "cron" else None,
        "every_ms": schedule.get("everyMs") if kind == "every" else None,
        "anchor_ms": int64(schedule.get("anchorMs")) if kind == "every" else None,
        "at": schedule.get("at") if kind == "at" else None,
        "stagger_ms": int64(schedule.get("staggerMs")) if kind == "cron" else None,
        "session_target": job["sessionTarget"],
        "wake_mode": job["wakeMode"],
        "trigger_script": text(trigger.get("script")),
        "trigger_once": flag(trigger.get("once")),
        "payload_kind": payload["kind"],
        "payload_message": payload["message"] if agent_turn else payload["text"],
        "payload_model": text(payload.get("model")) if agent_turn else None,
        "payload_fallbacks_json": json_text(payload.get("fallbacks")) if agent_turn else None,
        "payload_thinking": text(payload.get("thinking")) if agent_turn else None,
        "payload_timeout_seconds": int64(payload.get("timeoutSeconds")) if agent_turn else None,
        "payload_allow_unsafe_external_content": flag(payload.get("allowUnsafeExternalContent")) if agent_turn else None,
        "payload_external_content_source_json": json_text(payload.get("externalContentSource")) if agent_turn else None,
        "payload_light_context": flag(payload.get("lightContext")) if agent_turn else None,
        "payload_tools_allow_json": json_text(tools_allow),
        "payload_tools_allow_is_default": flag(payload.get("toolsAllowIsDefault")) if tools_allow else None,
        "delivery_mode": text(delivery.get("mode")),
        "delivery_channel": text(delivery.get("channel")),
        "delivery_to": text(delivery.get("to")),
        "delivery_thread_id": thread,
        "delivery_thread_id_type": thread_type,
        "delivery_account_id": text(delivery.get("accountId")),
        "delivery_best_effort": flag(delivery.get("bestEffort")),
        "delivery_completion_mode": text(completion.get("mode")),
        "delivery_completion_to": text(completion.get("to")),
        "failure_delivery_mode": _destination_field(failure_destination, "mode"),
        "failure_delivery_channel": _destination_field(failure_destination, "channel"),
        "failure_delivery_to": _destination_field(failure_destination, "to"),
        "failure_delivery_account_id": _destination_field(failure_destination, "accountId"),
    }
    if alert is False:
        row.update(failure_alert_disabled=1, failure_alert_after=None, failure_alert_channel=None, failure_alert_to=None,
                   failure_alert_cooldown_ms=None, failure_alert_include_skipped=None, failure_alert_mode=None,
                   failure_alert_account_id=None)  # fmt: skip
    else:
        alert = alert if isinstance(alert, dict) else None
        row.update(
            failure_alert_disabled=0 if alert is not None else None,
            failure_alert_after=int64(alert.get("after")) if alert else None,
            failure_alert_channel=text(alert.get("channel")) if alert else None,
            failure_alert_to=text(alert.get("to")) if alert else None,
            failure_alert_cooldown_ms=int64(alert.get("cooldownMs")) if alert else None,
            failure_alert_include_skipped=flag(alert.get("includeSkipped")) if alert else None,
            failure_alert_mode=text(alert.get("mode")) if alert else None,
            failure_alert_account_id=text(alert.get("accountId")) if alert else None,
        )
    row.update(state_columns(repaired.state))
    row.update(
        job_json=js_json(job),
        state_json=js_json(repaired.state),
        # The release backfills a missing updatedAtMs with createdAtMs and writes it to both clocks.
        runtime_updated_at_ms=updated,
        schedule_identity=schedule_identity(job),
        sort_order=repaired.index,
        updated_at=updated,
    )
    return row


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

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
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
        conn = ctx.global_db
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
            require_columns(conn, JOBS_TABLE, rows[0])
            with _savepoint(conn, "statekit_cron_jobs"):
                others = conn.execute(f"SELECT count(*) FROM {JOBS_TABLE} WHERE store_key <> ?", (store_key,)).fetchone()[0]
                if others:
                    result.notices.append(
                        f"{rel}: global cron_jobs already holds {others} row(s) under other store keys (another jobs.json path); "
                        "they were left as they are"
                    )
                existing = _existing_rows(conn, store_key, [r["job_id"] for r in rows], ("updated_at",))
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
                        upsert(conn, JOBS_TABLE, row, JOB_KEY, update=update)
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

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
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
        conn = ctx.global_db
        result = WriteResult(records=0, notices=list(notices))
        columns = ("state_json", *STATE_COLUMNS, "runtime_updated_at_ms", "updated_at")
        require_columns(conn, JOBS_TABLE, (*JOB_KEY, *columns, "job_json"))
        applied: list[str] = []
        orphans: list[str] = []
        kept_newer: list[str] = []
        stale: list[str] = []
        with _savepoint(conn, "statekit_cron_state"):
            existing = _existing_rows(conn, store_key, list(entries), ("runtime_updated_at_ms", "job_json"))
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
                sets = ", ".join(f"{c} = ?" for c in columns)
                params = (js_json(state), *state_columns(state).values(), runtime, runtime, store_key, job_id)
                conn.execute(f"UPDATE {JOBS_TABLE} SET {sets} WHERE store_key = ? AND job_id = ?", params)
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
    ts = entry.get("ts")
    if finite_number(ts) is None or not float(ts).is_integer() or not 0 <= ts <= MAX_DATE_MS:
        return "ts"
    return None


def _run_row(store_key: str, job_id: str, seq: int, line_text: str, entry: Mapping[str, Any]) -> tuple[Any, ...]:
    """One ``cron_run_logs`` row as 2026.7.35's ``bindCronRunLogRow`` projects an entry; ``entry_json`` is the line itself."""
    usage = entry.get("usage") if isinstance(entry.get("usage"), dict) else {}
    diagnostics = entry.get("diagnostics") if isinstance(entry.get("diagnostics"), dict) else {}
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

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
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
        conn = ctx.global_db
        require_columns(conn, RUNS_TABLE, RUN_COLUMNS)
        counts = {"rows": 0}
        skipped: Counter[str] = Counter()

        def rows() -> Iterator[tuple[Any, ...]]:
            for _, line_text, entry in _run_entries(handle, rel):
                reason = skip_reason(entry, job_id)
                if reason is not None:
                    skipped[reason] += 1
                    continue
                counts["rows"] += 1
                # seq starts at 1, as OpenClaw numbers run-log rows (MAX(seq) + 1).
                yield _run_row(store_key, job_id, counts["rows"], line_text, entry)

        with _savepoint(conn, "statekit_cron_runs"):
            replaced = conn.execute(f"DELETE FROM {RUNS_TABLE} WHERE store_key = ? AND job_id = ?", (store_key, job_id)).rowcount
            try:
                insert_many(conn, RUNS_TABLE, RUN_COLUMNS, rows())
            except IntegrityError as exc:
                raise _explain_integrity(exc, RUNS_TABLE) from None
        result = WriteResult(records=counts["rows"])
        if skipped:
            result.notices.append(_skip_notice(rel, skipped))
        known = conn.execute(f"SELECT 1 FROM {JOBS_TABLE} WHERE store_key = ? AND job_id = ?", (store_key, job_id)).fetchone()
        if counts["rows"]:
            result.expect("global", RUNS_TABLE, "store_key = ? AND job_id = ?", (store_key, job_id), counts["rows"])
        result.report = {
            "store": store_rel(rel),
            "job_id": job_id,
            "rows": counts["rows"],
            "skipped_lines": dict(skipped),
            "replaced_rows": replaced,
            "job_known": known is not None,
        }
        return result


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

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
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
