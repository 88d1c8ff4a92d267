"""Device identity: ``identity/device.json`` and ``identity/device-auth.json``.

* ``device-identity`` (order 45): the gateway's Ed25519 key pair ->
  ``global.device_identities`` row ``identity_key = 'primary'`` (the key
  OpenClaw's runtime reads). Two shapes: the Node one
  ``{version: 1, deviceId, publicKeyPem, privateKeyPem, createdAtMs}`` and the
  macOS/Swift one ``{deviceId, publicKey, privateKey, createdAtMs?}`` with
  base64url raw 32-byte keys, converted to SPKI / PKCS#8 PEM exactly as
  Node exports them. Before anything is written the pair is verified: a
  probe payload is signed with the private key and the signature verified
  with the public key (Ed25519 and the PEM encodings come from the
  ``cryptography`` package; statekit has no signing code of its own). A pair that does not verify fails
  with one line and the file stays. An identity row already in the database
  with a different key pair is a conflict (the pairing identity is never
  replaced silently). Key material never reaches a message or a receipt:
  the receipt holds a fingerprint of the public key only.
* ``device-auth`` (order 46): ``{version: 1, deviceId, tokens: {role: {token,
  role, scopes, updatedAtMs}}}`` -> ``global.device_auth_tokens`` (one row per
  role, upsert by ``(device_id, role)``, the newer ``updatedAtMs`` wins), as
  OpenClaw 2026.9.6 imports the file: the role is the map key (trimmed), the
  scopes are normalised (trimmed, deduplicated, sorted, ``operator.admin``
  implying ``operator.read`` and ``operator.write``, ``operator.write``
  implying ``operator.read``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any, BinaryIO

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding, NoEncryption, PrivateFormat, PublicFormat, load_der_private_key, load_der_public_key,
)  # ~25 ms: this module loads only when the plan meets identity/device.json (readers load lazily)

from statekit.legacy_readers.base import ImportContext, Inspection, ReadContext, Reader, Source, WriteResult, fingerprint
from statekit.documents import load_object
from statekit.values import file_mtime_ms, int64 as ms, json_text as json_col
from statekit.errors import SourceError

FAMILY = "identity"
IDENTITY_TABLE = "device_identities"
IDENTITY_KEY = "primary"
AUTH_TABLE = "device_auth_tokens"

PROBE = b"statekit-device-identity-import-probe"

# --- Ed25519 and key encodings: the ``cryptography`` package (OpenSSL) ----------------------


class KeyFormatError(ValueError):
    """A key that does not decode; the message never contains key material."""


def ed25519_public_key(seed: bytes) -> bytes:
    """The raw 32-byte public key of a 32-byte private seed."""
    return _private(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def ed25519_sign(seed: bytes, message: bytes) -> bytes:
    return _private(seed).sign(message)


def ed25519_verify(public: bytes, message: bytes, signature: bytes) -> bool:
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


def _private(seed: bytes) -> Ed25519PrivateKey:
    try:
        return Ed25519PrivateKey.from_private_bytes(seed)
    except ValueError:
        raise KeyFormatError("is not a 32-byte Ed25519 private key") from None


def _pem_der(pem: str, label: str) -> bytes:
    """The DER inside one PEM block (its framing named in the error, so the message says what is wrong)."""
    lines = [line.strip() for line in pem.strip().splitlines() if line.strip()]
    if len(lines) < 3 or lines[0] != f"-----BEGIN {label}-----" or lines[-1] != f"-----END {label}-----":
        raise KeyFormatError(f"is not a PEM {label.lower()} block")
    try:
        return base64.b64decode("".join(lines[1:-1]), validate=True)
    except (binascii.Error, ValueError):
        raise KeyFormatError("PEM body is not valid base64") from None


def raw_public_from_pem(pem: str) -> bytes:
    der = _pem_der(pem, "PUBLIC KEY")
    try:
        key = load_der_public_key(der)
    except (ValueError, UnsupportedAlgorithm):
        raise KeyFormatError("is not an Ed25519 SPKI public key") from None
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFormatError("is not an Ed25519 SPKI public key")
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def seed_from_pem(pem: str) -> bytes:
    der = _pem_der(pem, "PRIVATE KEY")
    try:
        key = load_der_private_key(der, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise KeyFormatError("is not an Ed25519 PKCS#8 private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFormatError("is not an Ed25519 PKCS#8 private key")
    return key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())


def b64url_decode(value: str) -> bytes:
    normalized = value.strip().replace("-", "+").replace("_", "/")
    normalized += "=" * ((4 - len(normalized) % 4) % 4)
    try:
        return base64.b64decode(normalized, validate=True)
    except (binascii.Error, ValueError):
        raise KeyFormatError("is not valid base64url") from None


def public_pem_from_raw(raw: bytes) -> str:
    """SPKI PEM, as Node's ``crypto.KeyObject.export({type: "spki", format: "pem"})`` writes it."""
    try:
        key = Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:
        raise KeyFormatError("is not a 32-byte Ed25519 public key") from None
    return key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode("ascii")


def private_pem_from_seed(seed: bytes) -> str:
    """PKCS#8 PEM, as Node's ``export({type: "pkcs8", format: "pem"})`` writes it."""
    return _private(seed).private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode("ascii")


def pair_verifies(raw_public: bytes, seed: bytes) -> bool:
    """Sign a probe with the private key, verify with the public key."""
    try:
        return ed25519_verify(raw_public, PROBE, ed25519_sign(seed, PROBE))
    except KeyFormatError:
        return False


# --- identity/device.json -----------------------------------------------------------------


def parse_identity(document: dict[str, Any], rel: str) -> dict[str, Any]:
    """Normalise both shapes to ``{device_id, public_pem, private_pem, raw_public, created_at, shape}``."""
    device_id = document.get("deviceId")
    if not isinstance(device_id, str) or not device_id.strip():
        raise SourceError(rel, "missing required property 'deviceId'", json_path="$.deviceId")
    if isinstance(document.get("publicKeyPem"), str) or isinstance(document.get("privateKeyPem"), str):
        shape = "pem"
        version = document.get("version")
        if version is not None and version != 1:
            raise SourceError(rel, "must be 1", json_path="$.version")
        for name in ("publicKeyPem", "privateKeyPem"):
            if not isinstance(document.get(name), str):
                raise SourceError(rel, f"missing required property {name!r}", json_path=f"$.{name}")
        try:
            raw_public = raw_public_from_pem(document["publicKeyPem"])
        except KeyFormatError as exc:
            raise SourceError(rel, f"public key {exc}", json_path="$.publicKeyPem") from None
        try:
            seed = seed_from_pem(document["privateKeyPem"])
        except KeyFormatError as exc:
            raise SourceError(rel, f"private key {exc}", json_path="$.privateKeyPem") from None
        public_pem, private_pem = document["publicKeyPem"], document["privateKeyPem"]
    elif isinstance(document.get("publicKey"), str) and isinstance(document.get("privateKey"), str):
        shape = "raw"
        try:
            raw_public = b64url_decode(document["publicKey"])
        except KeyFormatError as exc:
            raise SourceError(rel, f"public key {exc}", json_path="$.publicKey") from None
        try:
            seed = b64url_decode(document["privateKey"])
        except KeyFormatError as exc:
            raise SourceError(rel, f"private key {exc}", json_path="$.privateKey") from None
        if len(raw_public) != 32:
            raise SourceError(rel, "public key is not a raw 32-byte Ed25519 key", json_path="$.publicKey")
        if len(seed) != 32:
            raise SourceError(rel, "private key is not a raw 32-byte Ed25519 seed", json_path="$.privateKey")
        public_pem, private_pem = public_pem_from_raw(raw_public), private_pem_from_seed(seed)
    else:
        raise SourceError(rel, "neither publicKeyPem/privateKeyPem nor raw publicKey/privateKey present")
    if not pair_verifies(raw_public, seed):
        raise SourceError(rel, "private and public key do not form a matching Ed25519 pair (probe signature did not verify); left in place")
    created = ms(document.get("createdAtMs"))
    return {
        "device_id": device_id.strip(),
        "public_pem": public_pem,
        "private_pem": private_pem,
        "raw_public": raw_public,
        "created_at": created,
        "shape": shape,
    }


class DeviceIdentityReader(Reader):
    kind = "device-identity"
    family = FAMILY
    description = "Gateway device identity key pair (identity/device.json), verified before import"
    patterns = ("identity/device.json",)
    schema_name = "device-identity"
    target_tables = ("global.device_identities",)
    action = "import"

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        parse_identity(load_object(handle, source.rel, self.schema_name), source.rel)
        return Inspection(record_count=1)

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        identity = parse_identity(load_object(handle, source.rel, self.schema_name), source.rel)
        db = ctx.writer.state
        mtime = file_mtime_ms(source, ctx.now_ms)
        created_at = identity["created_at"] if identity["created_at"] is not None else mtime
        notices: list[str] = []
        derived_id = hashlib.sha256(identity["raw_public"]).hexdigest()
        if derived_id != identity["device_id"]:
            notices.append("deviceId is not the sha256 of the public key; imported as recorded")
        existing = db.first_row(IDENTITY_TABLE, {"identity_key": IDENTITY_KEY})
        decision = "imported"
        if existing is not None:
            try:
                same = raw_public_from_pem(existing.get("public_key_pem") or "") == identity["raw_public"]
            except KeyFormatError:
                same = False
            if not same or existing.get("device_id") != identity["device_id"]:
                raise SourceError(
                    source.rel,
                    "the database already holds a different device identity (identity_key 'primary'); left in place, nothing replaced",
                )
            decision = "already-in-database"
        else:
            db.upsert(
                IDENTITY_TABLE,
                {
                    "identity_key": IDENTITY_KEY,
                    "device_id": identity["device_id"],
                    "public_key_pem": identity["public_pem"],
                    "private_key_pem": identity["private_pem"],
                    "created_at_ms": created_at,
                    "updated_at_ms": mtime,
                },
                ("identity_key",),
            )
        if identity["shape"] == "raw":
            notices.append("raw base64url keys (macOS shape) converted to SPKI/PKCS#8 PEM")
        result = WriteResult(records=1, notices=[f"{source.rel}: {n}" for n in notices])
        db.expect_rows(IDENTITY_TABLE, {"identity_key": IDENTITY_KEY, "device_id": identity["device_id"]}, 1)
        result.report.update({
            "device_id": identity["device_id"],
            "shape": identity["shape"],
            "key_pair_verified": True,
            "public_key_fingerprint": fingerprint(identity["raw_public"].hex()),
            "decision": decision,
        })
        return result


# --- identity/device-auth.json ------------------------------------------------------------


def normalize_scopes(scopes: Any) -> list[str]:
    """``normalizeDeviceAuthScopes`` (2026.9.6)."""
    found = {scope.strip() for scope in scopes if isinstance(scope, str) and scope.strip()} if isinstance(scopes, list) else set()
    if "operator.admin" in found:
        found |= {"operator.read", "operator.write"}
    elif "operator.write" in found:
        found.add("operator.read")
    return sorted(found)


class DeviceAuthReader(Reader):
    kind = "device-auth"
    family = FAMILY
    description = "Cached device auth tokens per role (identity/device-auth.json)"
    patterns = ("identity/device-auth.json",)
    schema_name = "device-auth"
    target_tables = ("global.device_auth_tokens",)
    action = "import"
    depends_on = ("device-identity",)  # reads the imported device identity

    def agent_for(self, rel: str) -> str | None:
        return None

    def inspect(self, source: Source, handle: BinaryIO, ctx: ReadContext | None = None) -> Inspection:
        document = load_object(handle, source.rel, self.schema_name)
        return Inspection(record_count=len(document.get("tokens") or {}))

    def write(self, source: Source, handle: BinaryIO, ctx: ImportContext) -> WriteResult:
        document = load_object(handle, source.rel, self.schema_name)
        db = ctx.writer.state
        mtime = file_mtime_ms(source, ctx.now_ms)
        device_id = document["deviceId"].strip()
        tokens: dict[str, Any] = document.get("tokens") or {}
        roles: list[str] = []
        kept = 0
        for key, entry in tokens.items():
            role = key.strip() or (entry.get("role") or "").strip()
            updated = ms(entry.get("updatedAtMs"))
            row = {
                "device_id": device_id,
                "role": role,
                "token": entry["token"],
                "scopes_json": json_col(normalize_scopes(entry.get("scopes"))),
                "updated_at_ms": mtime if updated is None else updated,
            }
            existing = db.first_row(AUTH_TABLE, {"device_id": device_id, "role": role})
            if existing is not None and (existing.get("updated_at_ms") or 0) > row["updated_at_ms"]:
                kept += 1
            else:
                db.upsert(AUTH_TABLE, row, ("device_id", "role"))
            roles.append(role)
        result = WriteResult(records=len(roles))
        identity = db.first_row(IDENTITY_TABLE, {"identity_key": IDENTITY_KEY})
        if identity is not None and identity.get("device_id") != device_id:
            result.notices.append(f"{source.rel}: tokens belong to a device id other than the primary identity's; imported as recorded")
        if kept:
            result.notices.append(f"{source.rel}: kept {kept} newer token row(s) already in the database")
        db.expect_rows(AUTH_TABLE, {"device_id": device_id, "role": sorted(set(roles))}, len(set(roles)))  # kept newer rows too
        result.report.update({
            "device_id": device_id,
            "roles": sorted(set(roles)),
            "token_fingerprints": {role: fingerprint(tokens[key]["token"]) for key, role in zip(tokens, roles)},
            "kept_newer_database_rows": kept,
        })
        return result
