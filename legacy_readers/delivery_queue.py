"""Durable delivery queues: ``delivery-queue/`` and ``session-delivery-queue/`` (plus their ``failed/`` dirs).

One JSON file per queued delivery becomes one ``global.delivery_queue_entries``
row, exactly as OpenClaw 2026.7.35's own import writes it
(``migrateLegacyDeliveryQueues`` / ``buildLegacyDeliveryQueueRow``; 2026.9.6's
upgrade then compacts and back-fills such rows itself):

* ``queue_name`` is ``outbound`` for ``delivery-queue/`` and ``session`` for
  ``session-delivery-queue/`` (the queue names OpenClaw reads);
* ``id`` is the entry's ``id`` (else the file's basename without ``.json``);
  ``status`` is ``failed`` for files under ``failed/``, else ``pending``;
* ``entry_json`` is ``{...file, id, enqueuedAt, retryCount}`` (OpenClaw's
  spread: these three last); ``enqueued_at`` the entry's ``enqueuedAt``
  (else the file's mtime); ``failed_at`` ``failedAt``, else ``lastAttemptAt``,
  else ``enqueued_at`` for failed entries; ``updated_at`` the import time;
* the typed columns: ``entry_kind`` = ``kind`` (``outbound`` by default),
  ``session_key`` = ``sessionKey`` | ``session.key``, ``channel`` /
  ``target`` / ``account_id`` from the top level (``to`` is the target), then
  ``route``, then ``deliveryContext`` -- string values only --;
  ``retry_count``, ``last_attempt_at``, ``last_error``, ``recovery_state``,
  ``platform_send_started_at`` when they have the right type.

A pending delivery OpenClaw 2026.9.6 would not replay is not queued again
either (never re-sending a stale message): one with a ``.delivered`` marker,
without a valid past ``enqueuedAt``, or enqueued at least 72 hours before the
migration. Its file is retired (the retired copy keeps it) with a warning, as
9.6's doctor archives it with one.

The same id pending and failed at once is a plan ``conflict``: the failed
copy wins (OpenClaw imported failed rows last), the pending one stays in
place with a warning.

``*.delivered`` markers (a delivery that already happened) are dropped: the
apply loop moves them to the run's retired folder, nothing is written.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from statekit.values import js_json as js_stringify
from statekit.documents import load_document
from statekit.values import file_mtime_ms
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.values import finite_number

TABLE = "delivery_queue_entries"
QUEUES = {"delivery-queue": "outbound", "session-delivery-queue": "session"}  # LEGACY_DELIVERY_QUEUE_DIRS
MAX_REPLAY_AGE_MS = 72 * 3600 * 1000  # LEGACY_DELIVERY_QUEUE_MAX_AGE_MS (2026.9.6)


def queue_of(rel: str) -> tuple[str, str, bool]:
    """(queue_name, file id, failed?) for a queue file path."""
    parts = PurePosixPath(rel).parts
    queue = QUEUES[parts[0]]
    failed = len(parts) == 3 and parts[1] == "failed"
    name = parts[-1]
    return queue, name[: -len(".json")] if name.endswith(".json") else name, failed


def entry_id(document: dict[str, Any], file_id: str) -> str:
    return document["id"] if isinstance(document.get("id"), str) and document["id"] else file_id


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: Any) -> Any:
    number = finite_number(value)
    if number is None or abs(number) >= 2**63:
        return None
    return int(number) if float(number).is_integer() else number


def _nested(document: dict[str, Any], key: str, field: str) -> str | None:
    value = document.get(key)
    return _string(value.get(field)) if isinstance(value, dict) else None


def _first(document: dict[str, Any], field: str) -> str | None:
    return _string(document.get(field)) or _nested(document, "route", field) or _nested(document, "deliveryContext", field)


def queue_row(queue: str, row_id: str, failed: bool, document: dict[str, Any], fallback_ms: int, now_ms: int) -> dict[str, Any]:
    enqueued = _number(document.get("enqueuedAt"))
    enqueued_at = enqueued if enqueued is not None else fallback_ms
    retry = _number(document.get("retryCount"))
    retry_count = retry if retry is not None else 0
    last_attempt = _number(document.get("lastAttemptAt"))
    failed_at = None
    if failed:
        failed_at = next((v for v in (_number(document.get("failedAt")), last_attempt) if v is not None), enqueued_at)
    target = _string(document.get("to")) or _nested(document, "route", "to") or _nested(document, "deliveryContext", "to")
    return {
        "queue_name": queue,
        "id": row_id,
        "status": "failed" if failed else "pending",
        "entry_kind": _string(document.get("kind")) or "outbound",
        "session_key": _string(document.get("sessionKey")) or _nested(document, "session", "key"),
        "channel": _first(document, "channel"),
        "target": target,
        "account_id": _first(document, "accountId"),
        "retry_count": retry_count,
        "last_attempt_at": last_attempt,
        "last_error": _string(document.get("lastError")),
        "recovery_state": _string(document.get("recoveryState")),
        "platform_send_started_at": _number(document.get("platformSendStartedAt")),
        "entry_json": js_stringify({**document, "id": row_id, "enqueuedAt": enqueued_at, "retryCount": retry_count}),
        "enqueued_at": enqueued_at,
        "updated_at": now_ms,
        "failed_at": failed_at,
    }


def not_replayed(source: Source, document: dict[str, Any], row_id: str, file_id: str, now_ms: int) -> str | None:
    """Why 2026.9.6 would not replay this pending delivery (its doctor's rules), else None."""
    queue_dir = source.path.parent
    if any(os.path.lexists(queue_dir / f"{name}.delivered") for name in {file_id, row_id}):
        return "already delivered (a .delivered marker exists)"
    enqueued = finite_number(document.get("enqueuedAt"))
    if enqueued is None or not float(enqueued).is_integer() or enqueued < 0 or enqueued > now_ms:
        return "unverified enqueue time"
    if now_ms - enqueued >= MAX_REPLAY_AGE_MS:
        return "at least 72 hours old"
    return None


class DeliveryQueueReader(Reader):
    kind = "delivery-queue"
    family = "delivery-queues"
    description = "Queued outbound/session deliveries (delivery-queue/, session-delivery-queue/, failed/)"
    patterns = (
        "delivery-queue/*.json",
        "delivery-queue/failed/*.json",
        "session-delivery-queue/*.json",
        "session-delivery-queue/failed/*.json",
    )
    schema_name = "delivery-queue-entry"
    target_tables = ("global.delivery_queue_entries",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_document(source, handle, self.schema_name or "")
        queue, file_id, failed = queue_of(source.rel)
        return Inspection(
            record_count=1,
            details={"identity": (queue, entry_id(document, file_id)), "identity_label": "queue entry id", "preferred": failed},
        )

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        queue, file_id, failed = queue_of(source.rel)
        row_id = entry_id(document, file_id)
        status = "failed" if failed else "pending"
        reason = None if failed else not_replayed(source, document, row_id, file_id, ctx.now_ms)
        if reason is not None:
            result = WriteResult(records=0)
            result.warnings.append(
                f"{source.rel}: not queued again: {reason}, as OpenClaw does not replay it; "
                "the retired copy keeps it -- review it before sending the message again"
            )
            result.report.update({"queue_name": queue, "entry_id": row_id, "status": status, "not_replayed": reason})
            return result
        row = queue_row(queue, row_id, failed, document, file_mtime_ms(source, ctx.now_ms), ctx.now_ms)
        ctx.writer.state.upsert(TABLE, row, ("queue_name", "id"))
        ctx.writer.state.expect_rows(TABLE, {"queue_name": queue, "id": row_id, "status": status}, 1)
        result = WriteResult(records=1)
        result.report.update({"queue_name": queue, "entry_id": row_id, "status": status})
        return result


class DeliveredMarkerReader(Reader):
    kind = "delivery-queue-delivered"
    family = "delivery-queues"
    description = "Delivered markers (*.delivered) left in the delivery queue dirs"
    patterns = (
        "delivery-queue/*.delivered",
        "delivery-queue/failed/*.delivered",
        "session-delivery-queue/*.delivered",
        "session-delivery-queue/failed/*.delivered",
    )
    target_tables = ()
    action = "drop"
    reason = "stale delivered marker: that delivery already happened and OpenClaw keeps no row for it"

    def agent_for(self, rel: str) -> str | None:
        return None
