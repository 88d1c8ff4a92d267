"""Follow-up commitments ``commitments/commitments.json`` (older: ``commitments.json``) -> ``global.commitments``.

``{"version": 1, "commitments": [...]}``. A record is imported only when it is
complete the way OpenClaw's loader requires (non-empty ``id``, ``agentId``,
``sessionKey``, ``channel``, ``kind``, ``sensitivity``, ``source``,
``status``, ``reason``, ``suggestedText``, ``dedupeKey``; numeric
``confidence``, ``createdAtMs``, ``updatedAtMs``, ``attempts``; a
``dueWindow`` with numeric ``earliestMs`` / ``latestMs`` and a string
``timezone``); others are skipped with a warning.

Typed columns: scope (``agent_id``, ``session_key``, ``channel``,
``account_id``, ``recipient_id`` = ``to``, ``thread_id``, ``sender_id``), kind,
sensitivity, source, status, texts, ``dedupe_key``, ``confidence``, the due
window, source message/run, timestamps and attempts. ``record_json`` is the
record without the legacy raw-conversation fields ``sourceUserText`` /
``sourceAssistantText`` (OpenClaw strips them so they are never replayed).
Rows upsert by ``id``.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from statekit.values import integer, js_json, record
from statekit.documents import load_document
from statekit.values import trimmed as text  # the trimmed non-empty string
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, finite_number

TABLE = "commitments"
REQUIRED_TEXT = ("id", "agentId", "sessionKey", "channel", "kind", "sensitivity", "source", "status", "reason", "suggestedText", "dedupeKey")
REQUIRED_NUMBERS = ("confidence", "createdAtMs", "updatedAtMs", "attempts")
LEGACY_TEXT_FIELDS = ("sourceUserText", "sourceAssistantText")


def _is_number(value: Any) -> bool:
    return finite_number(value) is not None


def problem_of(raw: dict[str, Any]) -> str | None:
    missing = [name for name in REQUIRED_TEXT if not text(raw.get(name))]
    missing += [name for name in REQUIRED_NUMBERS if not _is_number(raw.get(name))]
    due = record(raw.get("dueWindow"))
    if not (_is_number(due.get("earliestMs")) and _is_number(due.get("latestMs")) and isinstance(due.get("timezone"), str)):
        missing.append("dueWindow")
    return f"missing or invalid {', '.join(missing)}" if missing else None


def commitment_row(raw: dict[str, Any]) -> dict[str, Any]:
    cleaned = {k: v for k, v in raw.items() if k not in LEGACY_TEXT_FIELDS}
    due = record(raw.get("dueWindow"))
    return {
        "id": raw["id"],
        "agent_id": raw["agentId"],
        "session_key": raw["sessionKey"],
        "channel": raw["channel"],
        "account_id": text(raw.get("accountId")),
        "recipient_id": text(raw.get("to")),
        "thread_id": text(raw.get("threadId")),
        "sender_id": text(raw.get("senderId")),
        "kind": raw["kind"],
        "sensitivity": raw["sensitivity"],
        "source": raw["source"],
        "status": raw["status"],
        "reason": raw["reason"],
        "suggested_text": raw["suggestedText"],
        "dedupe_key": raw["dedupeKey"],
        "confidence": float(raw["confidence"]),
        "due_earliest_ms": integer(due.get("earliestMs")),
        "due_latest_ms": integer(due.get("latestMs")),
        "due_timezone": due.get("timezone"),
        "source_message_id": text(raw.get("sourceMessageId")),
        "source_run_id": text(raw.get("sourceRunId")),
        "created_at_ms": integer(raw.get("createdAtMs")),
        "updated_at_ms": integer(raw.get("updatedAtMs")),
        "attempts": integer(raw.get("attempts")),
        "last_attempt_at_ms": integer(raw.get("lastAttemptAtMs")),
        "sent_at_ms": integer(raw.get("sentAtMs")),
        "dismissed_at_ms": integer(raw.get("dismissedAtMs")),
        "snoozed_until_ms": integer(raw.get("snoozedUntilMs")),
        "expired_at_ms": integer(raw.get("expiredAtMs")),
        "record_json": js_json(cleaned),
    }


def select_commitments(document: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str], int]:
    chosen: dict[str, dict[str, Any]] = {}
    warnings: list[str] = []
    stripped = 0
    for index, raw in enumerate(document["commitments"]):
        problem = problem_of(raw)
        if problem:
            warnings.append(f"commitments[{index}]: {problem}; skipped")
            continue
        if any(name in raw for name in LEGACY_TEXT_FIELDS):
            stripped += 1
        chosen[raw["id"]] = raw
    return chosen, warnings, stripped


class CommitmentsReader(Reader):
    kind = "commitments"
    family = "commitments"
    description = "Follow-up commitments store commitments/commitments.json (older commitments.json)"
    patterns = ("commitments/commitments.json", "commitments.json")
    schema_name = "commitments"
    target_tables = ("global.commitments",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        _chosen, warnings, _stripped = select_commitments(document)
        return Inspection(record_count=len(document["commitments"]), warnings=[f"{source.rel}: {w}" for w in warnings])

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        chosen, warnings, stripped = select_commitments(document)
        for raw in chosen.values():
            ctx.writer.state.upsert(TABLE, commitment_row(raw), ("id",))
        result = WriteResult(records=len(chosen), warnings=[f"{source.rel}: {w}" for w in warnings])
        if stripped:
            result.notices.append(f"{source.rel}: dropped the legacy raw conversation text of {stripped} commitment(s)")
        result.report.update({"commitments": len(document["commitments"]), "imported": len(chosen), "skipped": len(warnings)})
        return result
