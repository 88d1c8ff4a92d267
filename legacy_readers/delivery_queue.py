"""Durable delivery queues: ``delivery-queue/`` and ``session-delivery-queue/`` (plus their ``failed/`` dirs).

One JSON file per queued delivery becomes one ``global.delivery_queue_entries``
row (upstream-legacy-formats.md §2.7; OpenClaw's doctor ``legacy-state`` step):

* ``queue_name`` is ``outbound-delivery`` for ``delivery-queue/`` and
  ``session-delivery`` for ``session-delivery-queue/``;
* ``id`` is the file's basename without ``.json``; ``status`` is ``failed``
  for files under ``failed/``, else ``pending``;
* ``enqueued_at`` is the file's mtime (ms); ``failed_at`` equals it for failed
  entries; ``updated_at`` is the import time;
* ``entry_json`` is ``{id, enqueuedAt, retryCount: 0, ...file}`` (the file's
  own fields win, exactly as OpenClaw's importer spreads them);
* the typed columns come from the file the way OpenClaw's newest importer
  derives them: ``entry_kind`` = ``kind`` (``outbound`` by default for the
  outbound queue), ``session_key`` = ``sessionKey`` | ``session.key`` |
  ``mirror.sessionKey``, ``channel`` / ``target`` / ``account_id`` from the
  top level, then ``route``, then ``deliveryContext`` (``target`` is ``to``;
  ``account_id`` also looks at ``session.requesterAccountId``),
  ``retry_count``, ``last_attempt_at``, ``last_error``, ``recovery_state``,
  ``platform_send_started_at``.

The same id pending and failed at once is a plan ``conflict``: the failed
copy wins (OpenClaw imported failed rows last), the pending one stays in
place with a warning.

``*.delivered`` markers (a delivery that already happened) are dropped: the
apply loop moves them to the run's retired folder, nothing is written.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, BinaryIO

from legacy_readers._small_stores import file_mtime_ms, integer, load_document, nested_text, text
from legacy_readers._jsjson import js_stringify
from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, upsert

TABLE = "delivery_queue_entries"
QUEUES = {"delivery-queue": "outbound-delivery", "session-delivery-queue": "session-delivery"}


def queue_of(rel: str) -> tuple[str, str, bool]:
    """(queue_name, entry id, failed?) for a queue file path."""
    parts = PurePosixPath(rel).parts
    queue = QUEUES[parts[0]]
    failed = len(parts) == 3 and parts[1] == "failed"
    name = parts[-1]
    return queue, name[: -len(".json")] if name.endswith(".json") else name, failed


def _target(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(int(value)) if float(value).is_integer() else str(value)
    return text(value)


def queue_row(queue: str, entry_id: str, failed: bool, document: dict[str, Any], enqueued_at: int, now_ms: int) -> dict[str, Any]:
    entry = {"id": entry_id, "enqueuedAt": enqueued_at, "retryCount": 0, **document}
    session_key = text(document.get("sessionKey")) or nested_text(document, "session", "key") or nested_text(document, "mirror", "sessionKey")
    channel = text(document.get("channel")) or nested_text(document, "route", "channel") or nested_text(document, "deliveryContext", "channel")
    target = (
        _target(document.get("to"))
        or _target((document.get("route") or {}).get("to") if isinstance(document.get("route"), dict) else None)
        or _target((document.get("deliveryContext") or {}).get("to") if isinstance(document.get("deliveryContext"), dict) else None)
    )
    account = (
        text(document.get("accountId"))
        or nested_text(document, "session", "requesterAccountId")
        or nested_text(document, "route", "accountId")
        or nested_text(document, "deliveryContext", "accountId")
    )
    retry = integer(document.get("retryCount"))
    return {
        "queue_name": queue,
        "id": entry_id,
        "status": "failed" if failed else "pending",
        "entry_kind": text(document.get("kind")) or ("outbound" if queue == "outbound-delivery" else None),
        "session_key": session_key,
        "channel": channel,
        "target": target,
        "account_id": account,
        "retry_count": retry if retry is not None and retry >= 0 else 0,
        "last_attempt_at": integer(document.get("lastAttemptAt")),
        "last_error": text(document.get("lastError")),
        "recovery_state": text(document.get("recoveryState")),
        "platform_send_started_at": integer(document.get("platformSendStartedAt")),
        "entry_json": js_stringify(entry),
        "enqueued_at": enqueued_at,
        "updated_at": now_ms,
        "failed_at": enqueued_at if failed else None,
    }


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
    order = 60

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        load_document(source, handle, self.schema_name or "")
        queue, entry_id, failed = queue_of(source.rel)
        return Inspection(
            record_count=1,
            details={"identity": (queue, entry_id), "identity_label": "queue entry id", "preferred": failed},
        )

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_document(source, handle, self.schema_name or "")
        queue, entry_id, failed = queue_of(source.rel)
        enqueued_at = file_mtime_ms(source, ctx.now_ms)
        upsert(ctx.global_db, TABLE, queue_row(queue, entry_id, failed, document, enqueued_at, ctx.now_ms), ("queue_name", "id"))
        result = WriteResult(records=1)
        result.expect("global", TABLE, "queue_name = ? AND id = ? AND status = ?", (queue, entry_id, "failed" if failed else "pending"), 1)
        result.report.update({"queue_name": queue, "entry_id": entry_id, "status": "failed" if failed else "pending"})
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
    order = 61

    def agent_for(self, rel: str) -> str | None:
        return None
