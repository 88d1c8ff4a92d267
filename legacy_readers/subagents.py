"""Sub-agent run registry ``subagents/runs.json`` -> ``global.subagent_runs``.

``{"version": 1|2|3, "runs": {"<runId>": {...}}}``. Each run becomes one row
keyed by its ``runId`` (upsert, so a changed file converges):
``child_session_key``, ``requester_session_key``, ``controller_session_key``,
``created_at``, ``ended_at``, ``cleanup_handled`` (0/1/NULL) and the whole
normalised record in ``payload_json``.

Normalisation follows OpenClaw's own loader: version 1 records get
``cleanupCompletedAt`` from ``announceCompletedAt``, ``cleanupHandled`` from
``announceHandled`` (or true when a cleanup time exists) and
``requesterOrigin`` from ``requesterChannel`` / ``requesterAccountId``; those
legacy fields are dropped. ``childKeys`` stays an array.

A run without a string ``runId``, ``childSessionKey`` or
``requesterSessionKey`` cannot be resumed by OpenClaw: it is skipped with a
warning (the original file is kept byte-exact in the retired folder).

OpenClaw 2026.6-2026.7 databases have a much wider ``subagent_runs`` with NOT
NULL ``requester_display_key``, ``task``, ``cleanup``, ``created_at``: those
columns (and the other typed ones the record provides) are filled when the
existing table has them. The newest OpenClaw doctor ignores this file as
transient; statekit imports it (issue 4) so an interrupted run is not lost.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from legacy_readers._jsjson import js_stringify
from legacy_readers._small_stores import file_mtime_ms, fit_row, integer, load_document, record, text
from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, upsert

TABLE = "subagent_runs"
LEGACY_V1_FIELDS = ("announceCompletedAt", "announceHandled", "requesterChannel", "requesterAccountId")


def normalize_run(entry: dict[str, Any], legacy: bool) -> dict[str, Any]:
    run = {k: v for k, v in entry.items() if k not in LEGACY_V1_FIELDS}
    cleanup_at = entry.get("cleanupCompletedAt")
    if not isinstance(cleanup_at, (int, float)) or isinstance(cleanup_at, bool):
        legacy_at = entry.get("announceCompletedAt") if legacy else None
        cleanup_at = legacy_at if isinstance(legacy_at, (int, float)) and not isinstance(legacy_at, bool) else None
    if cleanup_at is not None:
        run["cleanupCompletedAt"] = cleanup_at
    handled = entry.get("cleanupHandled")
    if not isinstance(handled, bool) and legacy:
        announced = entry.get("announceHandled")
        handled = announced if isinstance(announced, bool) else (True if cleanup_at is not None else None)
    if isinstance(handled, bool):
        run["cleanupHandled"] = handled
    if not isinstance(entry.get("requesterOrigin"), dict):
        origin = {
            key: value
            for key, value in (("channel", text(entry.get("requesterChannel"))), ("accountId", text(entry.get("requesterAccountId"))))
            if value
        }
        if origin:
            run["requesterOrigin"] = origin
    child_keys = entry.get("childKeys")
    run["childKeys"] = [k for k in child_keys if isinstance(k, str)] if isinstance(child_keys, list) else []
    return run


def _json_or_none(value: Any) -> str | None:
    return None if value is None else js_stringify(value)


def _flag(value: Any) -> int | None:
    return (1 if value else 0) if isinstance(value, bool) else None


def run_rows(run: dict[str, Any], fallback_created: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(statekit columns, extra columns of OpenClaw's wider table)."""
    created = integer(run.get("createdAt"))
    delivery = record(run.get("delivery"))
    completion = record(run.get("completion"))
    base = {
        "run_id": run["runId"],
        "child_session_key": run["childSessionKey"],
        "requester_session_key": run["requesterSessionKey"],
        "controller_session_key": text(run.get("controllerSessionKey")),
        "created_at": created if created is not None else fallback_created,
        "ended_at": integer(run.get("endedAt")),
        "cleanup_handled": _flag(run.get("cleanupHandled")),
        "payload_json": js_stringify(run),
    }
    extra = {
        "requester_display_key": text(run.get("requesterDisplayKey")) or run["requesterSessionKey"],
        "requester_origin_json": _json_or_none(run.get("requesterOrigin")),
        "task": run.get("task") if isinstance(run.get("task"), str) else "",
        "task_name": text(run.get("taskName")),
        "cleanup": "delete" if run.get("cleanup") == "delete" else "keep",
        "label": text(run.get("label")),
        "model": text(run.get("model")),
        "agent_dir": text(run.get("agentDir")),
        "workspace_dir": text(run.get("workspaceDir")),
        "run_timeout_seconds": integer(run.get("runTimeoutSeconds")),
        "spawn_mode": run.get("spawnMode") if run.get("spawnMode") in ("session", "run") else None,
        "started_at": integer(run.get("startedAt")),
        "session_started_at": integer(run.get("sessionStartedAt")),
        "accumulated_runtime_ms": integer(run.get("accumulatedRuntimeMs")),
        "outcome_json": _json_or_none(run.get("outcome")),
        "archive_at_ms": integer(run.get("archiveAtMs")),
        "cleanup_completed_at": integer(run.get("cleanupCompletedAt")),
        "suppress_announce_reason": text(run.get("suppressAnnounceReason")),
        "expects_completion_message": _flag(run.get("expectsCompletionMessage")),
        "announce_retry_count": integer(delivery.get("attemptCount")),
        "last_announce_retry_at": integer(delivery.get("lastAttemptAt")),
        "last_announce_delivery_error": text(delivery.get("lastError")),
        "ended_reason": text(run.get("endedReason")),
        "pause_reason": text(run.get("pauseReason")),
        "wake_on_descendant_settle": _flag(run.get("wakeOnDescendantSettle")),
        "frozen_result_text": completion.get("resultText") if isinstance(completion.get("resultText"), str) else None,
        "frozen_result_captured_at": integer(completion.get("capturedAt")),
        "fallback_frozen_result_text": completion.get("fallbackResultText") if isinstance(completion.get("fallbackResultText"), str) else None,
        "fallback_frozen_result_captured_at": integer(completion.get("fallbackCapturedAt")),
        "ended_hook_emitted_at": integer(run.get("endedHookEmittedAt")),
        "pending_final_delivery": 1 if delivery.get("status") == "pending" or delivery.get("payload") else (0 if delivery else None),
        "pending_final_delivery_created_at": integer(delivery.get("createdAt")),
        "pending_final_delivery_last_attempt_at": integer(delivery.get("lastAttemptAt")),
        "pending_final_delivery_attempt_count": integer(delivery.get("attemptCount")),
        "pending_final_delivery_last_error": text(delivery.get("lastError")),
        "pending_final_delivery_payload_json": _json_or_none(delivery.get("payload")),
        "completion_announced_at": integer(delivery.get("announcedAt")),
    }
    return base, extra


def select_runs(document: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    legacy = document.get("version") == 1
    runs: list[dict[str, Any]] = []
    skipped: list[str] = []
    for key, entry in document["runs"].items():
        if not (isinstance(entry.get("runId"), str) and entry["runId"].strip()):
            skipped.append(f"run {key!r} has no runId; skipped")
            continue
        if not (text(entry.get("childSessionKey")) and text(entry.get("requesterSessionKey"))):
            skipped.append(f"run {key!r} has no childSessionKey/requesterSessionKey; skipped")
            continue
        runs.append(normalize_run(entry, legacy))
    return runs, skipped


class SubagentRunsReader(Reader):
    kind = "subagent-runs"
    family = "subagents"
    description = "Sub-agent run registry subagents/runs.json"
    patterns = ("subagents/runs.json",)
    schema_name = "subagent-runs"
    target_tables = ("global.subagent_runs",)
    action = "import"
    order = 64

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        runs, skipped = select_runs(document)
        return Inspection(record_count=len(document["runs"]), warnings=[f"{source.rel}: {w}" for w in skipped])

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        runs, skipped = select_runs(document)
        fallback = file_mtime_ms(source, ctx.now_ms)
        conn = ctx.global_db
        for run in runs:
            base, extra = run_rows(run, fallback)
            upsert(conn, TABLE, fit_row(conn, TABLE, base, extra), ("run_id",))
        result = WriteResult(records=len(runs), warnings=[f"{source.rel}: {w}" for w in skipped])
        ids = js_stringify(sorted(run["runId"] for run in runs))
        result.expect("global", TABLE, "run_id IN (SELECT value FROM json_each(?))", (ids,), len(runs))
        result.report.update({"runs": len(document["runs"]), "imported": len(runs), "skipped": len(skipped), "version": document["version"]})
        return result
