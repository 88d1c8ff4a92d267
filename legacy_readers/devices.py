"""Device pairing: ``devices/pending.json``, ``devices/paired.json``, ``devices/bootstrap.json``.

Three readers, one family (``docs/readers/devices.md`` has the contract):

* ``devices-pending`` (order 40): map ``requestId -> request`` ->
  ``global.device_pairing_pending`` (one row per request, upsert by
  ``request_id``; the newer ``ts`` wins against a row already there).
* ``devices-paired`` (order 41): map ``deviceId -> device`` ->
  ``global.device_pairing_paired`` (upsert by ``device_id``; a database row
  with newer activity -- ``max(approvedAtMs, lastSeenAtMs)`` -- is kept).
  Role tokens stay verbatim in ``tokens_json``.
* ``devices-bootstrap`` (order 42): map ``tokenKey -> record`` ->
  ``global.device_bootstrap_tokens``. The map keys *are* setup tokens, so
  validation errors name entries by number (``entry #2``), never by key.

An empty map (``{}``, the 2-byte file every install has) imports zero rows
and is still retired.

Rows have the columns of the canonical version-1 tables (OpenClaw 2026.7.35)
and the values 2026.9.6's own import of these files writes
(``normalizeLegacyPairedDevice`` + ``toPairedRow``). Fields that version 1
has no column for (``operatorLabel``, ``approvedVia``, ``browserOrigin``,
``nodeSurface``, ``pendingNodeSurface``, ``refreshedAtMs``) go into the
columns 2026.9.6 adds to these tables itself; such a column is added only
when a file carries the field (``legacy_readers._later_columns``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, BinaryIO

from statekit.documents import load_json, load_object, unmapped_fields, validate_hiding_keys
from statekit.legacy_readers._rows import expect_keys
from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult
from statekit.values import file_mtime_ms, flag, int64, json_text, text

FAMILY = "devices"

# --- devices/pending.json ---------------------------------------------------------------

PENDING_TABLE = "device_pairing_pending"
PENDING_FIELDS = (
    "requestId", "deviceId", "publicKey", "displayName", "platform", "deviceFamily", "clientId", "clientMode",
    "role", "roles", "scopes", "remoteIp", "silent", "isRepair", "ts", "refreshedAtMs", "browserOrigin",
)


def pending_row(key: str, entry: Mapping[str, Any], fallback_ts: int) -> dict[str, Any]:
    ts = int64(entry.get("ts"))
    return {
        "request_id": text(entry.get("requestId")) or key,
        "device_id": entry["deviceId"],
        "public_key": entry["publicKey"],
        "display_name": text(entry.get("displayName")),
        "platform": text(entry.get("platform")),
        "device_family": text(entry.get("deviceFamily")),
        "client_id": text(entry.get("clientId")),
        "client_mode": text(entry.get("clientMode")),
        "role": text(entry.get("role")),
        "roles_json": json_text(entry.get("roles")),
        "scopes_json": json_text(entry.get("scopes")),
        "remote_ip": text(entry.get("remoteIp")),
        "silent": flag(entry.get("silent")),
        "is_repair": flag(entry.get("isRepair")),
        "ts": fallback_ts if ts is None else ts,
        # Columns 2026.9.6 adds to the v1 table (added here only when the file carries a value).
        "refreshed_at_ms": int64(entry.get("refreshedAtMs")),
        "browser_origin": text(entry.get("browserOrigin")),
    }


class DevicePairingPendingReader(Reader):
    kind = "devices-pending"
    family = FAMILY
    description = "Pending device pairing requests (devices/pending.json)"
    patterns = ("devices/pending.json",)
    schema_name = "devices-pending"
    target_tables = ("global.device_pairing_pending",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        store = load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=len(store))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        store = load_object(handle, source.rel, self.schema_name)
        db = ctx.writer.state
        mtime = file_mtime_ms(source, ctx.now_ms)
        written: list[str] = []
        kept = 0
        for key, entry in store.items():
            row = pending_row(key, entry, mtime)
            existing = db.first_row(PENDING_TABLE, {"request_id": row["request_id"]})
            if existing is not None and (existing.get("ts") or 0) > row["ts"]:
                kept += 1
            else:
                db.upsert(PENDING_TABLE, row, ("request_id",))
            written.append(row["request_id"])
        result = WriteResult(records=len(written))
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer pending request(s) already in the database")
        extra = unmapped_fields(store.values(), PENDING_FIELDS)
        if extra:
            result.notices.append(f"{source.rel}: field(s) without a column kept only in the retired copy: {', '.join(extra)}")
        expect_keys(result, PENDING_TABLE, "request_id", written)
        result.report.update({"requests": len(store), "kept_newer_database_rows": kept, "fields_without_column": extra})
        return result


# --- devices/paired.json ----------------------------------------------------------------

PAIRED_TABLE = "device_pairing_paired"
PAIRED_FIELDS = (
    "deviceId", "publicKey", "displayName", "operatorLabel", "platform", "deviceFamily", "clientId", "clientMode",
    "browserOrigin", "role", "roles", "scopes", "approvedScopes", "remoteIp", "tokens", "approvedVia", "nodeSurface",
    "pendingNodeSurface", "createdAtMs", "approvedAtMs", "lastSeenAtMs", "lastSeenReason",
)


def device_activity(approved: Any, last_seen: Any) -> int:
    return max(int64(approved) or 0, int64(last_seen) or 0)


def paired_row(key: str, entry: Mapping[str, Any], fallback_ms: int) -> tuple[dict[str, Any], bool]:
    """The row (2026.9.6's ``toPairedRow`` of the record) and whether a timestamp had to be filled in.

    The device id is the map key, trimmed, as 2026.9.6 imports it. Text fields
    that are not strings are left out, as its ``normalizeLegacyPairedDevice`` does.
    """
    created = int64(entry.get("createdAtMs"))
    approved = int64(entry.get("approvedAtMs"))
    filled = created is None or approved is None
    created_at = created if created is not None else approved if approved is not None else fallback_ms
    approved_at = approved if approved is not None else created_at
    row = {
        "device_id": key.strip() or entry["deviceId"].strip(),
        "public_key": entry["publicKey"],
        "display_name": text(entry.get("displayName")),
        "platform": text(entry.get("platform")),
        "device_family": text(entry.get("deviceFamily")),
        "client_id": text(entry.get("clientId")),
        "client_mode": text(entry.get("clientMode")),
        "role": text(entry.get("role")),
        "roles_json": json_text(entry.get("roles")),
        "scopes_json": json_text(entry.get("scopes")),
        "approved_scopes_json": json_text(entry.get("approvedScopes")),
        "remote_ip": text(entry.get("remoteIp")),
        "tokens_json": json_text(entry.get("tokens")),
        "created_at_ms": created_at,
        "approved_at_ms": approved_at,
        "last_seen_at_ms": int64(entry.get("lastSeenAtMs")),
        "last_seen_reason": text(entry.get("lastSeenReason")),
        # Columns 2026.9.6 adds to the v1 table (added here only when the file carries a value).
        "operator_label": text(entry.get("operatorLabel")),
        "browser_origin": text(entry.get("browserOrigin")),
        "approved_via": text(entry.get("approvedVia")),
    }
    # Node surfaces are written by the nodes readers; a paired.json that already
    # carries them (newer shape) brings its own, otherwise existing ones stay.
    for field, column in (("nodeSurface", "node_surface_json"), ("pendingNodeSurface", "pending_node_surface_json")):
        if entry.get(field) is not None:
            row[column] = json_text(entry[field])
    return row, filled


class DevicePairingPairedReader(Reader):
    kind = "devices-paired"
    family = FAMILY
    description = "Paired devices with their role tokens (devices/paired.json)"
    patterns = ("devices/paired.json",)
    schema_name = "devices-paired"
    target_tables = ("global.device_pairing_paired",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        store = load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=len(store))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        store = load_object(handle, source.rel, self.schema_name)
        db = ctx.writer.state
        mtime = file_mtime_ms(source, ctx.now_ms)
        written: list[str] = []
        notices: list[str] = []
        kept = filled = mismatched = tokens = 0
        for key, entry in store.items():
            row, was_filled = paired_row(key, entry, mtime)
            filled += was_filled
            if text(entry.get("deviceId")) is not None and entry["deviceId"] != row["device_id"]:
                mismatched += 1
            if isinstance(entry.get("tokens"), dict):
                tokens += len(entry["tokens"])
            existing = db.first_row(PAIRED_TABLE, {"device_id": row["device_id"]})
            if existing is not None and device_activity(existing.get("approved_at_ms"), existing.get("last_seen_at_ms")) > device_activity(
                row["approved_at_ms"], row["last_seen_at_ms"]
            ):
                kept += 1
            else:
                db.upsert(PAIRED_TABLE, row, ("device_id",))
            written.append(row["device_id"])
        if kept:
            notices.append(f"kept {kept} device(s) whose database row is newer than the file")
        if filled:
            notices.append(f"{filled} device(s) had no createdAtMs/approvedAtMs; filled from the other one or the file's mtime")
        if mismatched:
            notices.append(f"{mismatched} device(s) stored under a key different from their deviceId; imported under the key, as OpenClaw does")
        extra = unmapped_fields(store.values(), PAIRED_FIELDS)
        if extra:
            notices.append(f"field(s) without a column kept only in the retired copy: {', '.join(extra)}")
        result = WriteResult(records=len(written), notices=[f"{source.rel}: {n}" for n in notices])
        expect_keys(result, PAIRED_TABLE, "device_id", written)
        result.report.update({
            "devices": len(store),
            "role_tokens": tokens,
            "kept_newer_database_rows": kept,
            "timestamps_filled": filled,
            "fields_without_column": extra,
        })
        return result


# --- devices/bootstrap.json -------------------------------------------------------------

BOOTSTRAP_TABLE = "device_bootstrap_tokens"
BOOTSTRAP_FIELDS = (
    "token", "ts", "deviceId", "publicKey", "profile", "redeemedProfile", "pendingProfile", "roles", "scopes",
    "issuedAtMs", "lastUsedAtMs",
)


def bootstrap_row(key: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    issued = int64(entry.get("issuedAtMs"))
    ts = int64(entry.get("ts"))
    profile = entry.get("profile")
    if profile is None and ("roles" in entry or "scopes" in entry):
        # Oldest records carried roles/scopes at top level; OpenClaw reads them as the profile.
        profile = {"roles": entry.get("roles") or [], "scopes": entry.get("scopes") or []}
    token = entry.get("token")
    return {
        "token_key": key,
        "token": token if isinstance(token, str) and token.strip() else key,
        "ts": ts if ts is not None else issued if issued is not None else 0,
        "device_id": text(entry.get("deviceId")),
        "public_key": text(entry.get("publicKey")),
        "profile_json": json_text(profile),
        "redeemed_profile_json": json_text(entry.get("redeemedProfile")),
        "pending_profile_json": json_text(entry.get("pendingProfile")),
        "issued_at_ms": issued if issued is not None else ts if ts is not None else 0,
        "last_used_at_ms": int64(entry.get("lastUsedAtMs")),
    }


def bootstrap_activity(row: Mapping[str, Any]) -> int:
    return max(row.get("ts") or 0, row.get("issued_at_ms") or 0, row.get("last_used_at_ms") or 0)


class DeviceBootstrapReader(Reader):
    kind = "devices-bootstrap"
    family = FAMILY
    description = "Device bootstrap (setup-code) tokens (devices/bootstrap.json)"
    patterns = ("devices/bootstrap.json",)
    schema_name = "devices-bootstrap"
    target_tables = ("global.device_bootstrap_tokens",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def _load(self, source: Source, handle: BinaryIO) -> dict[str, Any]:
        document = load_json(handle, source.rel)
        validate_hiding_keys(document, self.schema_name or "", source.rel)
        return document

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        return Inspection(record_count=len(self._load(source, handle)))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        store = self._load(source, handle)
        db = ctx.writer.state
        written: list[str] = []
        kept = 0
        for key, entry in store.items():
            row = bootstrap_row(key, entry)
            existing = db.first_row(BOOTSTRAP_TABLE, {"token_key": key})
            if existing is not None and bootstrap_activity(existing) > bootstrap_activity(row):
                kept += 1
            else:
                db.upsert(BOOTSTRAP_TABLE, row, ("token_key",))
            written.append(key)
        result = WriteResult(records=len(written))
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} bootstrap token(s) whose database row is newer")
        extra = unmapped_fields(store.values(), BOOTSTRAP_FIELDS)
        if extra:
            result.notices.append(f"{source.rel}: field(s) without a column kept only in the retired copy: {', '.join(extra)}")
        expect_keys(result, BOOTSTRAP_TABLE, "token_key", written)
        result.report.update({"tokens": len(store), "kept_newer_database_rows": kept, "fields_without_column": extra})
        return result
