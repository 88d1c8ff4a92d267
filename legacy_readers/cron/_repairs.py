"""``jobs.json``: the legacy shape repairs OpenClaw's own doctor applies, and the ``cron_jobs`` row of a repaired job."""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from statekit.errors import SourceError
from statekit.legacy_readers.cron._store import (
    DELIVERY_HINT_FIELDS,
    PAYLOAD_KINDS,
    SCHEDULE_KINDS,
    TOP_LEVEL_PAYLOAD_FIELDS,
    _coerce_number,
    _id_text,
    state_columns,
)
from statekit.values import (
    INT64_MAX,
    datetime_ms,
    finite_number,
    flag,
    int64,
    js_json,
    js_number,
    json_text,
    ms_to_iso,
    parse_iso,
    record,
    text,
    trimmed,
)


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
            expr: str | None = raw.strip()
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
            if (at_number := finite_number(at)) is not None:
                self.note("scheduleAt")
                return ms_to_iso(int(at_number))
            text = trimmed(at)
            if text is None:
                raise self.fail(where, "at schedule needs an ISO 8601 time")
            if text.isdigit():
                self.note("scheduleAt")
                return ms_to_iso(int(text))
            moment = parse_iso(text)
            if moment is None:
                raise self.fail(where, "not an ISO 8601 time")
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
    thread_text = trimmed(thread) if isinstance(thread, str) else (js_number(thread_number) if (thread_number := finite_number(thread)) is not None else None)
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
    delivery = record(job.get("delivery"))
    failure_destination = delivery.get("failureDestination")
    completion = record(delivery.get("completionDestination"))
    alert = job.get("failureAlert")
    owner = record(job.get("owner"))
    trigger = record(job.get("trigger"))
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
