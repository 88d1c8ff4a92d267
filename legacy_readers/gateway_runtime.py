"""Gateway runtime sidecars: restart sentinel, restart intent, supervisor handoff, gateway locks.

* ``gateway-restart-sentinel`` (order 56, import): ``restart-sentinel.json``
  ``{version: 1, payload: {kind, status, ts, sessionKey?, deliveryContext?:
  {channel, to, accountId}, threadId?, message?, doctorHint?, stats?,
  continuation?}}`` -> ``global.gateway_restart_sentinel`` row
  ``sentinel_key = 'current'``. It carries the "restart finished" message
  still owed to a chat, so it is imported, not dropped: typed columns plus
  ``payload_json`` (the whole payload). A database row with a newer ``ts`` is
  kept.
* ``gateway-restart-intent`` (order 57, drop): ``gateway-restart-intent.json``
  -- the pid/kind of a restart the previous gateway process requested. The
  target schema has no table for it and it only means something to that
  (now stopped) process: dropped with that reason, retired byte-exact.
* ``gateway-restart-handoff`` (order 58, drop):
  ``gateway-supervisor-restart-handoff.json`` -- a supervisor handoff with its
  own short expiry for a process that is gone; same treatment.
* ``gateway-lock`` (order 59, drop): ``gateway.<hash>.lock`` /
  ``gateway.lock`` left in the state dir. ``migrate`` refuses to run while a
  lock names a live gateway, so any lock seen here is stale; OpenClaw now
  coordinates through ``state_leases`` rows instead.
"""

from __future__ import annotations

from typing import Any, BinaryIO

from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult
from legacy_readers.devices import fetch_row, file_mtime_ms, json_col, load_object, ms, text, write_row

FAMILY = "gateway"
SENTINEL_TABLE = "gateway_restart_sentinel"
SENTINEL_KEY = "current"
PAYLOAD_FIELDS = (
    "kind", "status", "ts", "sessionKey", "deliveryContext", "threadId", "message", "doctorHint", "stats", "continuation",
)


def _thread_id(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return text(value)


def sentinel_row(document: dict[str, Any], fallback_ms: int) -> dict[str, Any]:
    payload = document["payload"]
    delivery = payload.get("deliveryContext") if isinstance(payload.get("deliveryContext"), dict) else {}
    ts = ms(payload.get("ts"))
    return {
        "sentinel_key": SENTINEL_KEY,
        "version": document.get("version", 1),
        "kind": payload["kind"],
        "status": payload["status"],
        "ts": fallback_ms if ts is None else ts,
        "session_key": text(payload.get("sessionKey")),
        "thread_id": _thread_id(payload.get("threadId")),
        "delivery_channel": text(delivery.get("channel")),
        "delivery_to": text(delivery.get("to")),
        "delivery_account_id": text(delivery.get("accountId")),
        "message": text(payload.get("message")),
        "continuation_json": json_col(payload.get("continuation")),
        "doctor_hint": text(payload.get("doctorHint")),
        "stats_json": json_col(payload.get("stats")),
        "payload_json": json_col(payload),
        "updated_at_ms": fallback_ms,
    }


class RestartSentinelReader(Reader):
    kind = "gateway-restart-sentinel"
    family = FAMILY
    description = "Gateway restart sentinel: the post-restart notice still owed (restart-sentinel.json)"
    patterns = ("restart-sentinel.json",)
    schema_name = "gateway-restart-sentinel"
    target_tables = ("global.gateway_restart_sentinel",)
    action = "import"
    order = 56

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        conn = ctx.global_db
        row = sentinel_row(document, file_mtime_ms(source, ctx.now_ms))
        existing = fetch_row(conn, SENTINEL_TABLE, "sentinel_key = ?", (SENTINEL_KEY,))
        result = WriteResult(records=1)
        if existing is not None and (existing.get("ts") or 0) > row["ts"]:
            decision = "kept newer database row"
            result.notices.append(f"{source.rel}: the database holds a newer restart sentinel; kept it, file retired")
        else:
            write_row(conn, SENTINEL_TABLE, row, ("sentinel_key",))
            decision = "imported"
        extra = sorted(set(document["payload"]) - set(PAYLOAD_FIELDS))
        if extra:
            result.notices.append(f"{source.rel}: payload field(s) without a column, kept in payload_json: {', '.join(extra)}")
        result.expect("global", SENTINEL_TABLE, "sentinel_key = ?", (SENTINEL_KEY,), 1)
        result.report.update({"kind": row["kind"], "status": row["status"], "ts": row["ts"], "decision": decision})
        return result


class RestartIntentReader(Reader):
    kind = "gateway-restart-intent"
    family = FAMILY
    description = "Gateway restart intent sidecar (gateway-restart-intent.json)"
    patterns = ("gateway-restart-intent.json",)
    target_tables = ()
    action = "drop"
    reason = "runtime sidecar of a stopped gateway process (restart request by pid); no target table, meaningless after the process is gone"
    order = 57

    def agent_for(self, rel: str) -> str | None:
        return None


class RestartHandoffReader(Reader):
    kind = "gateway-restart-handoff"
    family = FAMILY
    description = "Gateway supervisor restart handoff sidecar (gateway-supervisor-restart-handoff.json)"
    patterns = ("gateway-supervisor-restart-handoff.json",)
    target_tables = ()
    action = "drop"
    reason = "short-lived supervisor handoff for a gateway process that is gone; no target table, it expires on its own"
    order = 58

    def agent_for(self, rel: str) -> str | None:
        return None


class GatewayLockReader(Reader):
    kind = "gateway-lock"
    family = FAMILY
    description = "Stale gateway singleton lock files (gateway.<hash>.lock)"
    patterns = ("gateway.*.lock", "gateway.lock")
    target_tables = ()
    action = "drop"
    reason = "stale lock of a gateway that is not running (migrate refuses live ones); OpenClaw now uses state_leases rows"
    order = 59

    def agent_for(self, rel: str) -> str | None:
        return None
