"""Sub-agent run registry ``subagents/runs.json`` -> ``global.subagent_runs``.

``{"version": 1|2|3, "runs": {"<runId>": {...}}}``. Each run becomes one row of
the release's table, keyed by ``runId`` (upsert, so a changed file converges),
built the way OpenClaw 2026.7.35 imported this file into SQLite:

1. The JSON loader: a version 1 record gets ``cleanupCompletedAt`` from
   ``announceCompletedAt``, ``cleanupHandled`` from ``announceHandled`` (else
   whether a cleanup time exists) and ``requesterOrigin`` from
   ``requesterChannel`` / ``requesterAccountId`` (those four fields are
   dropped); the session keys are trimmed, ``controllerSessionKey`` defaults
   to the requester, ``requesterOrigin`` becomes ``{channel, to, accountId,
   threadId?}`` (account id normalised, left out when empty) and
   ``spawnMode`` is ``session`` or ``run``.
2. The release's run-state normaliser, applied twice as the release does
   (once by the loader, once by the SQLite writer): nested ``execution``,
   ``completion`` and ``delivery`` objects built from the flat legacy fields
   (``frozenResultText``, ``pendingFinalDelivery*``, ``completionAnnouncedAt``,
   ...), which are then removed.
3. The typed columns are projections of that record and ``payload_json`` is
   the whole record as ``JSON.stringify`` writes it (keys in JavaScript's
   order, ``undefined`` members left out). 9.6's upgrade keeps
   ``payload_json`` as the canonical row.

The release's table has NOT NULL ``requester_display_key``, ``task``,
``cleanup`` and ``created_at``; a record lacking them would make the
release's own insert fail, so statekit fills them (requester session key, the
empty task, ``keep``, the file's mtime) in the columns only — the payload
stays what the record says. A run without ``runId``, ``childSessionKey`` or
``requesterSessionKey`` cannot be resumed: it is skipped with a warning (the
original file is kept byte-exact in the retired folder).

OpenClaw 9.6 no longer imports this file (its doctor discards it);
statekit imports it so an interrupted run is not lost.
"""

from __future__ import annotations

import copy
import math
from typing import Any, BinaryIO

from statekit.values import file_mtime_ms, js_json
from statekit.legacy_readers._small_stores import normalize_account_id
from statekit.documents import load_document
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult

TABLE = "subagent_runs"
LEGACY_V1_FIELDS = ("announceCompletedAt", "announceHandled", "requesterChannel", "requesterAccountId")
# Flat fields the release's normaliser folds into completion/delivery and then removes.
FOLDED_FIELDS = (
    "announceRetryCount", "lastAnnounceRetryAt", "lastAnnounceDeliveryError", "frozenResultText",
    "frozenResultCapturedAt", "fallbackFrozenResultText", "fallbackFrozenResultCapturedAt", "pendingFinalDelivery",
    "pendingFinalDeliveryCreatedAt", "pendingFinalDeliveryLastAttemptAt", "pendingFinalDeliveryAttemptCount",
    "pendingFinalDeliveryLastError", "pendingFinalDeliveryPayload", "deliverySuspendedAt", "deliverySuspendedReason",
    "deliveryDiscardedAt", "deliveryDiscardReason", "deliveryDiscardedPayloadSummary", "completionEnqueuedAt",
    "completionDeliveredAt", "completionAnnouncedAt", "lastAnnounceDropReason",
)  # fmt: skip


class _Undefined:
    """JavaScript's ``undefined``: a member that exists (keeps its place) but ``JSON.stringify`` leaves out."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __deepcopy__(self, memo: dict[int, Any]) -> _Undefined:
        return self

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "undefined"


UNDEF = _Undefined()


def _get(obj: Any, key: str) -> Any:
    return obj.get(key, UNDEF) if isinstance(obj, dict) else UNDEF


def _nullish(value: Any) -> bool:
    return value is None or value is UNDEF


def _coalesce(*values: Any) -> Any:
    """JavaScript's ``a ?? b ?? c``."""
    for value in values[:-1]:
        if not _nullish(value):
            return value
    return values[-1]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_finite(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value)


def _truthy(value: Any) -> bool:
    if _nullish(value) or value is False or value == "":
        return False
    if _is_number(value):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    return True


def _defined(value: Any) -> Any:
    """Drop ``undefined`` members (recursively) the way ``JSON.stringify`` does; in arrays it writes null."""
    if isinstance(value, dict):
        return {k: _defined(v) for k, v in value.items() if v is not UNDEF}
    if isinstance(value, list):
        return [None if v is UNDEF else _defined(v) for v in value]
    return value


def _stringify(value: Any) -> str:
    return js_json(_defined(value))


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# --- the JSON loader ------------------------------------------------------------------


def _thread_id(value: Any) -> Any:
    if _is_finite(value):
        return value
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def normalize_origin(context: Any) -> Any:
    """``{channel, to, accountId, threadId?}`` as the release normalises a delivery context; undefined when empty."""
    if not isinstance(context, dict):
        return UNDEF
    raw_channel = context.get("channel")
    channel = raw_channel.strip().lower() if isinstance(raw_channel, str) else ""
    account = context.get("accountId")
    account_id = normalize_account_id(account) if isinstance(account, str) and account.strip() else None
    raw_to = context.get("to")
    to = raw_to.strip() if isinstance(raw_to, str) and raw_to.strip() else None
    thread = _thread_id(context.get("threadId"))
    if not channel and not to and not account_id and thread is None:
        return UNDEF
    normalized: dict[str, Any] = {
        "channel": channel or UNDEF,
        "to": to if to is not None else UNDEF,
        "accountId": account_id or UNDEF,
    }
    if thread is not None:
        normalized["threadId"] = thread
    return normalized


def load_run(typed: dict[str, Any], legacy: bool) -> dict[str, Any] | None:
    """One entry as the release's JSON loader returns it (before the run-state normaliser); None when skipped."""
    legacy_completed = typed.get("announceCompletedAt") if legacy and _is_number(typed.get("announceCompletedAt")) else UNDEF
    cleanup_completed = typed["cleanupCompletedAt"] if _is_number(typed.get("cleanupCompletedAt")) else legacy_completed
    if isinstance(typed.get("cleanupHandled"), bool):
        cleanup_handled: Any = typed["cleanupHandled"]
    elif legacy:
        cleanup_handled = _truthy(_coalesce(_get(typed, "announceHandled"), cleanup_completed))
    else:
        cleanup_handled = UNDEF
    origin_source = _get(typed, "requesterOrigin")
    if _nullish(origin_source):
        origin_source = {"channel": _string(typed.get("requesterChannel")), "accountId": _string(typed.get("requesterAccountId"))}
    child = (_string(typed.get("childSessionKey")) or "").strip()
    requester = (_string(typed.get("requesterSessionKey")) or "").strip()
    controller = (_string(typed.get("controllerSessionKey")) or "").strip() or requester
    if not child or not requester:
        return None
    run = {k: v for k, v in typed.items() if k not in LEGACY_V1_FIELDS}
    run.update(
        {
            "childSessionKey": child,
            "requesterSessionKey": requester,
            "controllerSessionKey": controller,
            "requesterOrigin": normalize_origin(origin_source),
            "cleanupCompletedAt": cleanup_completed,
            "cleanupHandled": cleanup_handled,
            "spawnMode": "session" if typed.get("spawnMode") == "session" else "run",
        }
    )
    return run


# --- the run-state normaliser ------------------------------------------------------------


def _build_execution(entry: dict[str, Any]) -> dict[str, Any]:
    if _is_number(entry.get("endedAt")):
        return {"status": "terminal", "startedAt": _get(entry, "startedAt"), "endedAt": entry["endedAt"], "outcome": _get(entry, "outcome")}
    return {"status": "running", "startedAt": _get(entry, "startedAt")}


def _build_completion(entry: dict[str, Any]) -> dict[str, Any]:
    completion: dict[str, Any] = {"required": entry.get("expectsCompletionMessage") is True}
    if _get(entry, "frozenResultText") is not UNDEF:
        completion["resultText"] = entry["frozenResultText"]
    if _is_number(entry.get("frozenResultCapturedAt")):
        completion["capturedAt"] = entry["frozenResultCapturedAt"]
    if _get(entry, "fallbackFrozenResultText") is not UNDEF:
        completion["fallbackResultText"] = entry["fallbackFrozenResultText"]
    if _is_number(entry.get("fallbackFrozenResultCapturedAt")):
        completion["fallbackCapturedAt"] = entry["fallbackFrozenResultCapturedAt"]
    return completion


def _build_delivery(entry: dict[str, Any]) -> dict[str, Any]:
    g = lambda key: _get(entry, key)  # noqa: E731
    last_attempt = _coalesce(g("pendingFinalDeliveryLastAttemptAt"), g("lastAnnounceRetryAt"))
    attempts = _coalesce(g("pendingFinalDeliveryAttemptCount"), g("announceRetryCount"))
    last_error = _coalesce(g("pendingFinalDeliveryLastError"), g("lastAnnounceDeliveryError"), None)
    if entry.get("expectsCompletionMessage") is False:
        return {"status": "not_required"}
    if _is_number(entry.get("deliveryDiscardedAt")):
        return {"status": "discarded", "discardedAt": entry["deliveryDiscardedAt"], "discardReason": g("deliveryDiscardReason"),
                "discardedPayloadSummary": g("deliveryDiscardedPayloadSummary")}  # fmt: skip
    if _is_number(entry.get("deliverySuspendedAt")):
        return {"status": "suspended", "payload": g("pendingFinalDeliveryPayload"), "createdAt": g("pendingFinalDeliveryCreatedAt"),
                "lastAttemptAt": last_attempt, "attemptCount": attempts, "lastError": last_error, "suspendedAt": entry["deliverySuspendedAt"],
                "suspendedReason": g("deliverySuspendedReason"), "lastDropReason": g("lastAnnounceDropReason")}  # fmt: skip
    if _is_number(entry.get("completionAnnouncedAt")):
        return {"status": "delivered", "enqueuedAt": g("completionEnqueuedAt"),
                "deliveredAt": _coalesce(g("completionDeliveredAt"), entry["completionAnnouncedAt"]),
                "announcedAt": entry["completionAnnouncedAt"], "lastDropReason": g("lastAnnounceDropReason")}  # fmt: skip
    if entry.get("pendingFinalDelivery") is True or _truthy(g("pendingFinalDeliveryPayload")):
        return {"status": "pending", "payload": g("pendingFinalDeliveryPayload"), "createdAt": g("pendingFinalDeliveryCreatedAt"),
                "lastAttemptAt": last_attempt, "attemptCount": attempts, "lastError": last_error,
                "enqueuedAt": g("completionEnqueuedAt"), "deliveredAt": g("completionDeliveredAt"), "lastDropReason": g("lastAnnounceDropReason")}  # fmt: skip
    return {"status": "pending" if _is_number(entry.get("endedAt")) else "not_required", "enqueuedAt": g("completionEnqueuedAt"),
            "deliveredAt": g("completionDeliveredAt"), "lastAttemptAt": g("lastAnnounceRetryAt"), "attemptCount": g("announceRetryCount"),
            "lastError": _coalesce(g("lastAnnounceDeliveryError"), None), "lastDropReason": g("lastAnnounceDropReason")}  # fmt: skip


def _spread(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def _merge_delivery(entry: dict[str, Any], current: Any, restored: dict[str, Any]) -> dict[str, Any]:
    if not _truthy(current):
        return restored
    cur = _spread(current)
    c = lambda key: _get(cur, key)  # noqa: E731
    r = lambda key: _get(restored, key)  # noqa: E731
    not_required = c("status") == "not_required" and entry.get("expectsCompletionMessage") is not False and r("status") != "not_required"
    merged = {**restored, **cur}
    merged.update(
        {
            "status": r("status") if not_required else c("status"),
            "payload": _coalesce(c("payload"), r("payload")),
            "createdAt": _coalesce(c("createdAt"), r("createdAt")),
            "enqueuedAt": _coalesce(c("enqueuedAt"), r("enqueuedAt")),
            "deliveredAt": _coalesce(c("deliveredAt"), r("deliveredAt")),
            "announcedAt": _coalesce(c("announcedAt"), r("announcedAt")),
            "lastAttemptAt": _coalesce(c("lastAttemptAt"), r("lastAttemptAt")),
            "attemptCount": _coalesce(c("attemptCount"), r("attemptCount")),
            "lastError": _coalesce(c("lastError"), r("lastError")),
            "steeringLeaseId": _coalesce(c("steeringLeaseId"), c("handoffLeaseId"), r("steeringLeaseId")),
            "steeringLeasedAt": _coalesce(c("steeringLeasedAt"), c("handoffLeasedAt"), r("steeringLeasedAt")),
            "steeringInjectedAt": _coalesce(c("steeringInjectedAt"), c("handoffInjectedAt"), r("steeringInjectedAt")),
            "suspendedAt": _coalesce(c("suspendedAt"), r("suspendedAt")),
            "suspendedReason": _coalesce(c("suspendedReason"), r("suspendedReason")),
            "discardedAt": _coalesce(c("discardedAt"), r("discardedAt")),
            "discardReason": _coalesce(c("discardReason"), r("discardReason")),
            "discardedPayloadSummary": _coalesce(c("discardedPayloadSummary"), r("discardedPayloadSummary")),
            "lastDropReason": _coalesce(c("lastDropReason"), r("lastDropReason")),
        }
    )
    return merged


def normalize_state(entry: dict[str, Any]) -> dict[str, Any]:
    """The release's run-state normaliser (mutates and returns ``entry``)."""
    task_run = entry.get("taskRunId")
    entry["taskRunId"] = (task_run.strip() if isinstance(task_run, str) else "") or UNDEF
    generation = entry.get("generation")
    entry["generation"] = generation if isinstance(generation, int) and not isinstance(generation, bool) and 0 < generation < 2**53 else UNDEF
    entry["deleteCleanupDispatchedAt"] = entry["deleteCleanupDispatchedAt"] if _is_finite(entry.get("deleteCleanupDispatchedAt")) else UNDEF
    entry["suppressCompletionDelivery"] = True if entry.get("suppressCompletionDelivery") is True else UNDEF
    kill = entry.get("killReconciliation")
    if not isinstance(kill, dict) or not _is_finite(kill.get("killedAt")):
        entry.pop("killReconciliation", None)
    else:
        entry["killReconciliation"] = {
            "killedAt": kill["killedAt"],
            "suppressTaskDelivery": True if kill.get("suppressTaskDelivery") is True else UNDEF,
            "supersededAt": kill["supersededAt"] if _is_finite(kill.get("supersededAt")) else UNDEF,
        }
    execution = _get(entry, "execution")
    restored_execution = _build_execution(entry)
    entry["execution"] = {**restored_execution, **_spread(execution)} if _truthy(execution) else restored_execution
    completion = _get(entry, "completion")
    restored_completion = _build_completion(entry)
    if _truthy(completion):
        merged = {**restored_completion, **_spread(completion)}
        merged["required"] = _coalesce(_get(completion, "required"), restored_completion["required"])
        entry["completion"] = merged
    else:
        entry["completion"] = restored_completion
    entry["delivery"] = _merge_delivery(entry, _get(entry, "delivery"), _build_delivery(entry))
    for key in ("handoffLeaseId", "handoffLeasedAt", "handoffInjectedAt"):
        entry["delivery"].pop(key, None)
    if entry.get("cleanupHandled") is True and not _is_number(entry.get("cleanupCompletedAt")) and entry["delivery"].get("status") != "discarded":
        entry["cleanupHandled"] = False
    for key in FOLDED_FIELDS:
        entry.pop(key, None)
    return entry


# --- the SQLite row ------------------------------------------------------------------------


def _value(value: Any) -> Any:
    """``x ?? null`` for a column: scalars as they are, anything else NULL."""
    if _nullish(value) or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return 1 if value else 0
    return value


def _json_or_null(value: Any) -> str | None:
    return None if value is UNDEF else _stringify(value)


def _sqlite_bool(value: Any) -> int | None:
    return None if value is UNDEF else (1 if _truthy(value) else 0)


def run_row(loaded: dict[str, Any], fallback_created: int) -> dict[str, Any]:
    normalized = normalize_state(copy.deepcopy(normalize_state(loaded)))
    delivery = normalized["delivery"]
    completion = normalized["completion"]
    d = lambda key: _get(delivery, key)  # noqa: E731
    n = lambda key: _get(normalized, key)  # noqa: E731
    created = n("createdAt")
    task = n("task")
    display = n("requesterDisplayKey")
    return {
        "run_id": normalized["runId"],
        "child_session_key": normalized["childSessionKey"],
        "controller_session_key": _value(n("controllerSessionKey")),
        "requester_session_key": normalized["requesterSessionKey"],
        "requester_display_key": display if isinstance(display, str) else normalized["requesterSessionKey"],
        "requester_origin_json": _json_or_null(n("requesterOrigin")),
        "task": task if isinstance(task, str) else "",
        "task_name": _value(n("taskName")),
        "cleanup": n("cleanup") if isinstance(n("cleanup"), str) else "keep",
        "label": _value(n("label")),
        "model": _value(n("model")),
        "agent_dir": _value(n("agentDir")),
        "workspace_dir": _value(n("workspaceDir")),
        "run_timeout_seconds": _value(n("runTimeoutSeconds")),
        "spawn_mode": _value(n("spawnMode")),
        "created_at": created if _is_finite(created) else fallback_created,
        "started_at": _value(n("startedAt")),
        "session_started_at": _value(n("sessionStartedAt")),
        "accumulated_runtime_ms": _value(n("accumulatedRuntimeMs")),
        "ended_at": _value(n("endedAt")),
        "outcome_json": _json_or_null(n("outcome")),
        "archive_at_ms": _value(n("archiveAtMs")),
        "cleanup_completed_at": _value(n("cleanupCompletedAt")),
        "cleanup_handled": _sqlite_bool(n("cleanupHandled")),
        "suppress_announce_reason": _value(n("suppressAnnounceReason")),
        "expects_completion_message": _sqlite_bool(n("expectsCompletionMessage")),
        "announce_retry_count": _value(d("attemptCount")),
        "last_announce_retry_at": _value(d("lastAttemptAt")),
        "last_announce_delivery_error": _value(d("lastError")),
        "ended_reason": _value(n("endedReason")),
        "pause_reason": _value(n("pauseReason")),
        "wake_on_descendant_settle": _sqlite_bool(n("wakeOnDescendantSettle")),
        "frozen_result_text": _value(_get(completion, "resultText")),
        "frozen_result_captured_at": _value(_get(completion, "capturedAt")),
        "fallback_frozen_result_text": _value(_get(completion, "fallbackResultText")),
        "fallback_frozen_result_captured_at": _value(_get(completion, "fallbackCapturedAt")),
        "ended_hook_emitted_at": _value(n("endedHookEmittedAt")),
        "pending_final_delivery": 1 if d("status") == "pending" or _truthy(d("payload")) else 0,
        "pending_final_delivery_created_at": _value(d("createdAt")),
        "pending_final_delivery_last_attempt_at": _value(d("lastAttemptAt")),
        "pending_final_delivery_attempt_count": _value(d("attemptCount")),
        "pending_final_delivery_last_error": _value(d("lastError")),
        "pending_final_delivery_payload_json": _json_or_null(d("payload")),
        "completion_announced_at": _value(d("announcedAt")),
        "payload_json": _stringify(normalized),
    }


def select_runs(document: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    legacy = document.get("version") == 1
    runs: list[dict[str, Any]] = []
    skipped: list[str] = []
    for key, entry in document["runs"].items():
        if not (isinstance(entry.get("runId"), str) and entry["runId"].strip()):
            skipped.append(f"run {key!r} has no runId; skipped")
            continue
        loaded = load_run(entry, legacy)
        if loaded is None:
            skipped.append(f"run {key!r} has no childSessionKey/requesterSessionKey; skipped")
            continue
        runs.append(loaded)
    return runs, skipped


class SubagentRunsReader(Reader):
    kind = "subagent-runs"
    family = "subagents"
    description = "Sub-agent run registry subagents/runs.json"
    patterns = ("subagents/runs.json",)
    schema_name = "subagent-runs"
    target_tables = ("global.subagent_runs",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        runs, skipped = select_runs(document)
        return Inspection(record_count=len(document["runs"]), warnings=[f"{source.rel}: {w}" for w in skipped])

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        runs, skipped = select_runs(document)
        fallback = file_mtime_ms(source, ctx.now_ms)
        for loaded in runs:
            ctx.writer.state.upsert(TABLE, run_row(loaded, fallback), ("run_id",))
        result = WriteResult(records=len(runs), warnings=[f"{source.rel}: {w}" for w in skipped])
        result.report.update({"runs": len(document["runs"]), "imported": len(runs), "skipped": len(skipped), "version": document["version"]})
        return result
