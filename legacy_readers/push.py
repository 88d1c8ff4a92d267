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
  distribution?, relayOrigin?, tokenDebugSuffix?, updatedAtMs}}}`` ->
  ``global.apns_registrations``, each row the canonical one OpenClaw 2026.9.6
  reads back (``apnsRegistrationFromRow`` refuses any other): direct tokens
  normalised (trim, drop ``<>`` and spaces, lower case; hex, 32+ digits),
  direct rows without relay fields, relay rows with ``distribution =
  'official'``, ``tokenDebugSuffix`` lower-case alphanumerics, last 8.
  ``relayOrigin`` (a relay registration's origin, normalised as OpenClaw
  normalises it) goes into ``relay_origin``, the column 2026.9.6 adds to the v1
  table, added when a registration has one. The newer ``updatedAtMs`` wins.

Endpoints (capability URLs), push keys, APNs tokens and send grants are
secrets: messages and receipts carry counts and fingerprints only.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, fingerprint
from statekit.documents import load_object, unmapped_fields
from statekit.values import file_mtime_ms, int64, text
from statekit.errors import SourceError

FAMILY = "push"
SUBSCRIPTIONS_TABLE = "web_push_subscriptions"
VAPID_TABLE = "web_push_vapid_keys"
VAPID_KEY_ID = "default"
DEFAULT_VAPID_SUBJECT = "https://openclaw.ai"
APNS_TABLE = "apns_registrations"
APNS_FIELDS = (
    "nodeId", "transport", "token", "relayHandle", "sendGrant", "installationId", "topic", "environment",
    "distribution", "relayOrigin", "tokenDebugSuffix", "updatedAtMs",
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

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=len(document.get("subscriptionsByEndpointHash") or {}))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        subscriptions: dict[str, Any] = document.get("subscriptionsByEndpointHash") or {}
        db = ctx.writer.state
        mtime = file_mtime_ms(source, ctx.now_ms)
        written: list[str] = []
        rekeyed = kept = 0
        for key, entry in subscriptions.items():
            endpoint = entry["endpoint"]
            digest = endpoint_hash(endpoint)
            rekeyed += digest != key
            created = int64(entry.get("createdAtMs"))
            updated = int64(entry.get("updatedAtMs"))
            row = {
                "endpoint_hash": digest,
                "subscription_id": entry["subscriptionId"],
                "endpoint": endpoint,
                "p256dh": entry["keys"]["p256dh"],
                "auth": entry["keys"]["auth"],
                "created_at_ms": created if created is not None else updated if updated is not None else mtime,
                "updated_at_ms": updated if updated is not None else created if created is not None else mtime,
            }
            existing = db.first_row(SUBSCRIPTIONS_TABLE, {"endpoint_hash": digest})
            if existing is not None and (existing.get("updated_at_ms") or 0) > row["updated_at_ms"]:
                kept += 1
            else:
                db.upsert(SUBSCRIPTIONS_TABLE, row, ("endpoint_hash",))
            written.append(digest)
        result = WriteResult(records=len(written))
        if rekeyed:
            result.notices.append(f"{source.rel}: {rekeyed} subscription(s) stored under a key that is not their endpoint hash; re-keyed")
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer subscription(s) already in the database")
        db.expect_rows(SUBSCRIPTIONS_TABLE, {"endpoint_hash": sorted(set(written))}, len(set(written)))
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

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        db = ctx.writer.state
        public_key, private_key = document["publicKey"].strip(), document["privateKey"].strip()
        subject = document.get("subject") if isinstance(document.get("subject"), str) and document["subject"].strip() else DEFAULT_VAPID_SUBJECT
        existing = db.first_row(VAPID_TABLE, {"key_id": VAPID_KEY_ID})
        result = WriteResult(records=1)
        if existing is not None:
            if existing.get("public_key") != public_key or existing.get("private_key") != private_key:
                raise SourceError(
                    source.rel, "the database already holds a different VAPID key pair (key_id 'default'); left in place, nothing replaced"
                )
            decision = "same key pair already in the database"
        else:
            db.upsert(
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
        db.expect_rows(VAPID_TABLE, {"key_id": VAPID_KEY_ID}, 1)  # written, or the same pair already there
        result.report.update({"decision": decision, "public_key_fingerprint": fingerprint(public_key), "subject_defaulted": "subject" not in document})
        return result


def normalise_apns_token(value: str) -> str:
    return re.sub(r"[<>\s]", "", value.strip()).lower()


def normalise_debug_suffix(value: Any) -> str | None:
    """``normalizeTokenDebugSuffix``: lower-case alphanumerics, the last 8; None when nothing is left."""
    if not isinstance(value, str):
        return None
    cleaned = re.sub(r"[^0-9a-z]", "", value.strip().lower())
    return cleaned[-8:] if cleaned else None


def normalise_relay_origin(value: str) -> str | None:
    """OpenClaw's relay base URL rule: https (http only for a loopback host), no userinfo, query or fragment;
    written as ``new URL(value).toString()`` without trailing slashes. None when it is not such a URL."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "")
    if scheme not in ("https", "http") or not host or parts.username or parts.password or parts.query or parts.fragment:
        return None
    if scheme == "http" and not (host in ("localhost", "::1") or re.fullmatch(r"127(?:\.\d{1,3}){3}", host)):
        return None
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != {"https": 443, "http": 80}[scheme]:
        netloc += f":{port}"
    return f"{scheme}://{netloc}{parts.path or '/'}".rstrip("/")


def _stripped(value: Any) -> str | None:
    """A non-empty string stripped (possibly to ""); anything else None."""
    string = text(value)
    return string.strip() if string else None


def apns_row(key: str, entry: dict[str, Any], fallback_ms: int, rel: str = "push/apns-registrations.json") -> dict[str, Any]:
    """The canonical 2026.9.6 row (``apnsRegistrationToRow`` of a normalised registration)."""
    where = f"$.registrationsByNodeId[{key!r}]"
    transport = entry.get("transport") or "direct"
    environment = text(entry.get("environment"))
    environment = environment.strip().lower() if environment else None
    if transport == "direct" and environment not in ("sandbox", "production"):
        environment = "sandbox"  # OpenClaw's default for direct registrations
    updated = int64(entry.get("updatedAtMs"))
    row: dict[str, Any] = {
        "node_id": (text(entry.get("nodeId")) or key).strip(),
        "transport": transport,
        "token": None,
        "relay_handle": None,
        "send_grant": None,
        "installation_id": None,
        "topic": entry["topic"].strip(),
        "environment": environment,
        "distribution": None,
        "token_debug_suffix": None,
        "updated_at_ms": updated if updated is not None else fallback_ms,
        "relay_origin": None,
    }
    if transport == "direct":
        token = normalise_apns_token(text(entry.get("token")) or "")
        if not re.fullmatch(r"[0-9a-f]{32,512}", token):
            raise SourceError(rel, "direct registration token is not an APNs device token (hex, 32+ digits)", json_path=f"{where}.token")
        row["token"] = token
        return row
    if environment not in ("sandbox", "production"):
        raise SourceError(rel, "relay registration needs environment sandbox or production", json_path=f"{where}.environment")
    distribution = text(entry.get("distribution"))
    if distribution is None or distribution.strip().lower() != "official":
        raise SourceError(rel, "relay registration needs distribution official", json_path=f"{where}.distribution")
    row.update(
        relay_handle=_stripped(entry.get("relayHandle")),
        send_grant=_stripped(entry.get("sendGrant")),
        installation_id=_stripped(entry.get("installationId")),
        distribution="official",
        token_debug_suffix=normalise_debug_suffix(entry.get("tokenDebugSuffix")),
    )
    if entry.get("relayOrigin") is not None:
        origin = normalise_relay_origin(entry["relayOrigin"]) if isinstance(entry["relayOrigin"], str) else None
        if origin is None:
            raise SourceError(rel, "relayOrigin is not an https relay URL", json_path=f"{where}.relayOrigin")
        row["relay_origin"] = origin
    return row


class ApnsRegistrationsReader(Reader):
    kind = "push-apns"
    family = FAMILY
    description = "APNs registrations per node, direct or relay (push/apns-registrations.json)"
    patterns = ("push/apns-registrations.json",)
    schema_name = "push-apns"
    target_tables = ("global.apns_registrations",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=len(document.get("registrationsByNodeId") or {}))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        registrations: dict[str, Any] = document.get("registrationsByNodeId") or {}
        db = ctx.writer.state
        mtime = file_mtime_ms(source, ctx.now_ms)
        written: list[str] = []
        kept = 0
        for key, entry in registrations.items():
            row = apns_row(key, entry, mtime, source.rel)
            if row["node_id"] in written:
                raise SourceError(source.rel, "two registrations normalise to the same node id", json_path=f"$.registrationsByNodeId[{key!r}]")
            existing = db.first_row(APNS_TABLE, {"node_id": row["node_id"]})
            if existing is not None and (existing.get("updated_at_ms") or 0) > row["updated_at_ms"]:
                kept += 1
            else:
                db.upsert(APNS_TABLE, row, ("node_id",))
            written.append(row["node_id"])
        result = WriteResult(records=len(written))
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer registration(s) already in the database")
        extra = unmapped_fields(registrations.values(), APNS_FIELDS)
        if extra:
            result.notices.append(f"{source.rel}: field(s) without a column kept only in the retired copy: {', '.join(extra)}")
        db.expect_rows(APNS_TABLE, {"node_id": sorted(set(written))}, len(set(written)))
        transports: dict[str, int] = {}
        for entry in registrations.values():
            name = entry.get("transport") or "direct"
            transports[name] = transports.get(name, 0) + 1
        result.report.update({"registrations": len(registrations), "transports": transports, "kept_newer_database_rows": kept, "fields_without_column": extra})
        return result
