"""Push: ``push/web-push-subscriptions.json``, ``push/vapid-keys.json``, ``push/apns-registrations.json``.

* ``push-web-subscriptions`` (order 48): ``{subscriptionsByEndpointHash:
  {<hash>: {subscriptionId, endpoint, keys: {p256dh, auth}, createdAtMs,
  updatedAtMs}}}`` -> ``global.web_push_subscriptions`` keyed by
  ``endpoint_hash`` = first 32 hex of sha256(endpoint) (recomputed when the
  map key disagrees); the newer ``updatedAtMs`` wins.
* ``push-vapid-keys`` (order 49): ``{publicKey, privateKey, subject?}`` ->
  ``global.web_push_vapid_keys`` row ``key_id = 'default'`` (OpenClaw's key);
  subject defaults to ``https://openclaw.ai``. A different key pair already
  in the database is a conflict (the file stays): the signing identity is
  never swapped silently. The same pair is a no-op.
* ``push-apns`` (order 50): ``{registrationsByNodeId: {<nodeId>: {transport?,
  token | relayHandle+sendGrant+installationId, topic, environment,
  distribution?, tokenDebugSuffix?, updatedAtMs}}}`` ->
  ``global.apns_registrations``; direct tokens normalised as OpenClaw does
  (trim, drop ``<>`` and spaces, lower case); the newer ``updatedAtMs`` wins.

Endpoints (capability URLs), push keys, APNs tokens and send grants are
secrets: messages and receipts carry counts and fingerprints only.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, BinaryIO

from legacy_readers.base import ImportContext, Inspection, Reader, Source, WriteResult, fingerprint
from legacy_readers.devices import expect_keys, fetch_row, file_mtime_ms, load_object, ms, text, unmapped_fields, write_row
from statekit.errors import SourceError

FAMILY = "push"
SUBSCRIPTIONS_TABLE = "web_push_subscriptions"
VAPID_TABLE = "web_push_vapid_keys"
VAPID_KEY_ID = "default"
DEFAULT_VAPID_SUBJECT = "https://openclaw.ai"
APNS_TABLE = "apns_registrations"
APNS_FIELDS = (
    "nodeId", "transport", "token", "relayHandle", "sendGrant", "installationId", "topic", "environment",
    "distribution", "tokenDebugSuffix", "updatedAtMs",
)


def endpoint_hash(endpoint: str) -> str:
    return hashlib.sha256(endpoint.encode("utf-8")).hexdigest()[:32]


class WebPushSubscriptionsReader(Reader):
    kind = "push-web-subscriptions"
    family = FAMILY
    description = "Web Push browser subscriptions (push/web-push-subscriptions.json)"
    patterns = ("push/web-push-subscriptions.json",)
    schema_name = "push-web-subscriptions"
    target_tables = ("global.web_push_subscriptions",)
    action = "import"
    order = 48

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=len(document.get("subscriptionsByEndpointHash") or {}))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        subscriptions: dict[str, Any] = document.get("subscriptionsByEndpointHash") or {}
        conn = ctx.global_db
        mtime = file_mtime_ms(source, ctx.now_ms)
        written: list[str] = []
        rekeyed = kept = 0
        for key, entry in subscriptions.items():
            endpoint = entry["endpoint"]
            digest = endpoint_hash(endpoint)
            rekeyed += digest != key
            created = ms(entry.get("createdAtMs"))
            updated = ms(entry.get("updatedAtMs"))
            row = {
                "endpoint_hash": digest,
                "subscription_id": entry["subscriptionId"],
                "endpoint": endpoint,
                "p256dh": entry["keys"]["p256dh"],
                "auth": entry["keys"]["auth"],
                "created_at_ms": created if created is not None else updated if updated is not None else mtime,
                "updated_at_ms": updated if updated is not None else created if created is not None else mtime,
            }
            existing = fetch_row(conn, SUBSCRIPTIONS_TABLE, "endpoint_hash = ?", (digest,))
            if existing is not None and (existing.get("updated_at_ms") or 0) > row["updated_at_ms"]:
                kept += 1
            else:
                write_row(conn, SUBSCRIPTIONS_TABLE, row, ("endpoint_hash",))
            written.append(digest)
        result = WriteResult(records=len(written))
        if rekeyed:
            result.notices.append(f"{source.rel}: {rekeyed} subscription(s) stored under a key that is not their endpoint hash; re-keyed")
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer subscription(s) already in the database")
        expect_keys(result, SUBSCRIPTIONS_TABLE, "endpoint_hash", written)
        result.report.update({"subscriptions": len(subscriptions), "rekeyed": rekeyed, "kept_newer_database_rows": kept})
        return result


class VapidKeysReader(Reader):
    kind = "push-vapid-keys"
    family = FAMILY
    description = "Web Push VAPID key pair (push/vapid-keys.json)"
    patterns = ("push/vapid-keys.json",)
    schema_name = "push-vapid-keys"
    target_tables = ("global.web_push_vapid_keys",)
    action = "import"
    order = 49

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        conn = ctx.global_db
        public_key, private_key = document["publicKey"].strip(), document["privateKey"].strip()
        subject = document.get("subject") if isinstance(document.get("subject"), str) and document["subject"].strip() else DEFAULT_VAPID_SUBJECT
        existing = fetch_row(conn, VAPID_TABLE, "key_id = ?", (VAPID_KEY_ID,))
        result = WriteResult(records=1)
        if existing is not None:
            if existing.get("public_key") != public_key or existing.get("private_key") != private_key:
                raise SourceError(
                    source.rel, "the database already holds a different VAPID key pair (key_id 'default'); left in place, nothing replaced"
                )
            decision = "same key pair already in the database"
        else:
            write_row(
                conn,
                VAPID_TABLE,
                {
                    "key_id": VAPID_KEY_ID,
                    "public_key": public_key,
                    "private_key": private_key,
                    "subject": subject,
                    "updated_at_ms": file_mtime_ms(source, ctx.now_ms),
                },
                ("key_id",),
            )
            decision = "imported"
        result.expect("global", VAPID_TABLE, "key_id = ?", (VAPID_KEY_ID,), 1)
        result.report.update({"decision": decision, "public_key_fingerprint": fingerprint(public_key), "subject_defaulted": "subject" not in document})
        return result


def normalise_apns_token(value: str) -> str:
    return re.sub(r"[<>\s]", "", value.strip()).lower()


def apns_row(key: str, entry: dict[str, Any], fallback_ms: int) -> dict[str, Any]:
    transport = entry.get("transport") or "direct"
    environment = text(entry.get("environment"))
    environment = environment.strip().lower() if environment else None
    if transport == "direct" and environment not in ("sandbox", "production"):
        environment = "sandbox"  # OpenClaw's default for direct registrations
    updated = ms(entry.get("updatedAtMs"))
    token = text(entry.get("token"))
    suffix = text(entry.get("tokenDebugSuffix"))
    return {
        "node_id": (text(entry.get("nodeId")) or key).strip(),
        "transport": transport,
        "token": normalise_apns_token(token) if token is not None else None,
        "relay_handle": text(entry.get("relayHandle")),
        "send_grant": text(entry.get("sendGrant")),
        "installation_id": text(entry.get("installationId")),
        "topic": entry["topic"].strip(),
        "environment": environment,
        "distribution": text(entry.get("distribution")),
        "token_debug_suffix": re.sub(r"[^0-9A-Za-z]", "", suffix) if suffix is not None else None,
        "updated_at_ms": updated if updated is not None else fallback_ms,
    }


class ApnsRegistrationsReader(Reader):
    kind = "push-apns"
    family = FAMILY
    description = "APNs registrations per node, direct or relay (push/apns-registrations.json)"
    patterns = ("push/apns-registrations.json",)
    schema_name = "push-apns"
    target_tables = ("global.apns_registrations",)
    action = "import"
    order = 50

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO) -> Inspection:
        document = load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=len(document.get("registrationsByNodeId") or {}))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        registrations: dict[str, Any] = document.get("registrationsByNodeId") or {}
        conn = ctx.global_db
        mtime = file_mtime_ms(source, ctx.now_ms)
        written: list[str] = []
        kept = 0
        for key, entry in registrations.items():
            row = apns_row(key, entry, mtime)
            if row["node_id"] in written:
                raise SourceError(source.rel, "two registrations normalise to the same node id", json_path=f"$.registrationsByNodeId[{key!r}]")
            existing = fetch_row(conn, APNS_TABLE, "node_id = ?", (row["node_id"],))
            if existing is not None and (existing.get("updated_at_ms") or 0) > row["updated_at_ms"]:
                kept += 1
            else:
                write_row(conn, APNS_TABLE, row, ("node_id",))
            written.append(row["node_id"])
        result = WriteResult(records=len(written))
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer registration(s) already in the database")
        extra = unmapped_fields(registrations.values(), APNS_FIELDS)
        if extra:
            result.notices.append(f"{source.rel}: field(s) without a column kept only in the retired copy: {', '.join(extra)}")
        expect_keys(result, APNS_TABLE, "node_id", written)
        transports: dict[str, int] = {}
        for entry in registrations.values():
            name = entry.get("transport") or "direct"
            transports[name] = transports.get(name, 0) + 1
        result.report.update({"registrations": len(registrations), "transports": transports, "kept_newer_database_rows": kept, "fields_without_column": extra})
        return result
