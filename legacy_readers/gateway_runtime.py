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

from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.documents import load_object
from statekit.values import file_mtime_ms, int64 as ms, json_text as json_col, record, text
from statekit.errors import SourceError

FAMILY = "gateway"
SENTINEL_TABLE = "gateway_restart_sentinel"
SENTINEL_KEY = "current"
PAYLOAD_FIELDS = (
    "kind", "status", "ts", "sessionKey", "deliveryContext", "threadId", "message", "doctorHint", "stats", "continuation",
)


KINDS = ("config-apply", "config-auto-recovery", "config-patch", "update", "restart")  # RESTART_SENTINEL_KINDS
STATUSES = ("ok", "error", "skipped")


def _thread_id(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return text(value)


def _continuation(value: Any) -> dict[str, Any] | None:
    """``parseRestartSentinelContinuation``: a systemEvent text or an agentTurn message, nothing else."""
    if isinstance(value, dict) and value.get("kind") == "systemEvent" and isinstance(value.get("text"), str):
        return {"kind": "systemEvent", "text": value["text"]}
    if isinstance(value, dict) and value.get("kind") == "agentTurn" and isinstance(value.get("message"), str):
        return {"kind": "agentTurn", "message": value["message"]}
    return None


def canonical_payload(payload: dict[str, Any], ts: int, rel: str) -> dict[str, Any]:
    """The payload as OpenClaw 2026.9.6 parses and stores it (``parseRestartSentinelPayload``, its key order).

    A row it could not parse back would be "invalid" and the notice lost, so a
    kind, status or continuation it does not know is a clear error instead. A
    numeric ``threadId`` (which 9.6 would discard the file for) becomes its text.
    """
    if payload["kind"] not in KINDS:
        raise SourceError(rel, f"unsupported restart kind (expected one of {', '.join(KINDS)})", json_path="$.payload.kind")
    if payload["status"] not in STATUSES:
        raise SourceError(rel, f"unsupported restart status (expected one of {', '.join(STATUSES)})", json_path="$.payload.status")
    result: dict[str, Any] = {"kind": payload["kind"], "status": payload["status"], "ts": ts}
    if text(payload.get("sessionKey")) is not None:
        result["sessionKey"] = payload["sessionKey"]
    delivery = record(payload.get("deliveryContext"))
    context = {name: delivery[name] for name in ("channel", "to", "accountId") if isinstance(delivery.get(name), str)}
    if context:
        result["deliveryContext"] = context
    thread = _thread_id(payload.get("threadId"))
    if thread is not None:
        result["threadId"] = thread
    if isinstance(payload.get("message"), str):
        result["message"] = payload["message"]
    if payload.get("continuation") is not None:
        continuation = _continuation(payload["continuation"])
        if continuation is None:
            raise SourceError(rel, "continuation is neither a systemEvent text nor an agentTurn message", json_path="$.payload.continuation")
        result["continuation"] = continuation
    if isinstance(payload.get("doctorHint"), str):
        result["doctorHint"] = payload["doctorHint"]
    if isinstance(payload.get("stats"), dict):
        result["stats"] = payload["stats"]
    return result


def sentinel_row(document: dict[str, Any], fallback_ms: int, rel: str = "restart-sentinel.json") -> dict[str, Any]:
    """``buildRestartSentinelRow`` of the canonical payload (2026.9.6)."""
    ts = ms(document["payload"].get("ts"))
    payload = canonical_payload(document["payload"], fallback_ms if ts is None else ts, rel)
    delivery = payload.get("deliveryContext", {})
    return {
        "sentinel_key": SENTINEL_KEY,
        "version": 1,
        "kind": payload["kind"],
        "status": payload["status"],
        "ts": payload["ts"],
        "session_key": payload.get("sessionKey"),
        "thread_id": payload.get("threadId"),
        "delivery_channel": delivery.get("channel"),
        "delivery_to": delivery.get("to"),
        "delivery_account_id": delivery.get("accountId"),
        "message": payload.get("message"),
        "continuation_json": json_col(payload.get("continuation")),
        "doctor_hint": payload.get("doctorHint"),
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

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        db = ctx.writer.state
        if document.get("version", 1) != 1:
            raise SourceError(source.rel, "unsupported version (expected 1)", json_path="$.version")
        row = sentinel_row(document, file_mtime_ms(source, ctx.now_ms), source.rel)
        existing = db.first_row(SENTINEL_TABLE, {"sentinel_key": SENTINEL_KEY})
        result = WriteResult(records=1)
        if existing is not None and (existing.get("ts") or 0) > row["ts"]:
            decision = "kept newer database row"
            result.notices.append(f"{source.rel}: the database holds a newer restart sentinel; kept it, file retired")
        else:
            db.upsert(SENTINEL_TABLE, row, ("sentinel_key",))
            decision = "imported"
        extra = sorted(set(document["payload"]) - set(PAYLOAD_FIELDS))
        if extra:
            result.notices.append(f"{source.rel}: payload field(s) OpenClaw does not keep, kept only in the retired copy: {', '.join(extra)}")
        db.expect_rows(SENTINEL_TABLE, {"sentinel_key": SENTINEL_KEY}, 1)
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

    def agent_for(self, rel: str) -> str | None:
        return None
