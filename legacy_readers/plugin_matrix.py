"""Matrix channel plugin files -> ``plugin_state_entries`` / ``plugin_blob_entries`` (plugin ``matrix``).

Matrix keeps its runtime state in per-account storage roots
``matrix/accounts/<account>/<homeserver>__<user>/<token-hash>/`` (older
installs: flat ``matrix/``). Every file of a root becomes one row keyed by the
root's path below ``matrix/`` (``accounts/ops/matrix.example.org__bot/0123…``,
or ``.`` for the flat layout):

* ``bot-storage.json`` / ``sync-store.json`` -> blob ``sync-store`` (can be large);
* ``storage-meta.json`` -> ``storage-meta``; ``thread-bindings.json`` -> ``thread-bindings``;
  ``inbound-dedupe.json`` -> ``inbound-dedupe``; ``startup-verification.json`` ->
  ``startup-verification``; ``recovery-key.json`` -> ``recovery-key`` (secret);
* ``crypto-idb-snapshot.json`` -> blob ``idb-snapshots`` (secret key material);
* ``credentials/matrix/credentials.json`` (default account), ``credentials-<account>.json``
  and ``credentials/matrix/<account>/credentials.json`` -> ``credentials``, key = account id,
  value ``{accountId, homeserver, userId, accessToken, ...}`` (secret).

Secrets (access tokens, recovery keys, crypto snapshots) are written to the
database only; receipts carry ``sha256:`` fingerprints, never values.

Kept in place (``retain``): ``legacy-crypto-migration.json`` (the Matrix
plugin's own crypto-migration marker), the Rust crypto store ``crypto/``, and
the July per-root ``state/openclaw.sqlite`` database, which OpenClaw's Matrix
doctor migrates itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from legacy_readers._plugin_state import (
    BlobEntry,
    EntryContext,
    NotImportedReader,
    PluginStateReader,
    StateEntry,
    as_ms,
    load_document,
)
from legacy_readers.base import Source, compact_json, parse_json_document, validate
from statekit.errors import SourceError

PLUGIN = "matrix"


def storage_root(rel: str) -> tuple[str, str]:
    """(root key below ``matrix/``, account id) of a file in a Matrix storage root."""
    parts = PurePosixPath(rel).parts[1:-1]  # drop "matrix" and the file name
    root = "/".join(parts) or "."
    account = parts[1] if len(parts) >= 2 and parts[0] == "accounts" else "default"
    return root, account


def _in_roots(*names: str) -> tuple[str, ...]:
    return tuple(f"matrix/**/{name}" for name in names)


class _MatrixRootJson(PluginStateReader):
    plugin_id = PLUGIN
    family = "matrix"
    schema_name = "plugin-matrix-root-object"
    namespace = ""

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        root, account = storage_root(source.rel)
        ectx.report["storage_root"] = root
        ectx.report["account_id"] = account
        yield StateEntry(self.namespace, root, document)


class MatrixStorageMetaReader(_MatrixRootJson):
    kind = "matrix-storage-meta"
    description = "Matrix storage-root metadata (homeserver, user, device, token-hash claim)"
    patterns = _in_roots("storage-meta.json")
    namespaces = ("storage-meta",)
    namespace = "storage-meta"


class MatrixThreadBindingsReader(_MatrixRootJson):
    kind = "matrix-thread-bindings"
    description = "Matrix thread bindings of one storage root"
    patterns = _in_roots("thread-bindings.json")
    namespaces = ("thread-bindings",)
    namespace = "thread-bindings"


class MatrixInboundDedupeReader(_MatrixRootJson):
    kind = "matrix-inbound-dedupe"
    description = "Matrix inbound event dedupe markers of one storage root"
    patterns = _in_roots("inbound-dedupe.json")
    namespaces = ("inbound-dedupe",)
    namespace = "inbound-dedupe"


class MatrixStartupVerificationReader(_MatrixRootJson):
    kind = "matrix-startup-verification"
    description = "Matrix startup self-verification backoff state"
    patterns = _in_roots("startup-verification.json")
    namespaces = ("startup-verification",)
    namespace = "startup-verification"


class MatrixRecoveryKeyReader(_MatrixRootJson):
    kind = "matrix-recovery-key"
    description = "Matrix secret-storage recovery key (secret)"
    patterns = _in_roots("recovery-key.json")
    namespaces = ("recovery-key",)
    namespace = "recovery-key"
    secret = True

    def secret_values(self, entry: StateEntry | BlobEntry) -> list[str]:
        return [compact_json(entry.value)] if isinstance(entry, StateEntry) else []


class MatrixSyncStoreReader(PluginStateReader):
    kind = "matrix-sync-store"
    family = "matrix"
    description = "Matrix /sync cache (bot-storage.json) of one storage root, stored as a blob"
    patterns = _in_roots("bot-storage.json", "sync-store.json")
    schema_name = "plugin-matrix-root-object"
    target_tables = ("global.plugin_blob_entries",)
    plugin_id = PLUGIN
    namespaces = ("sync-store",)

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[BlobEntry]:
        data = handle.read()
        document = parse_json_document(data, source.rel)
        validate(document, self.schema_name or "", source.rel)
        root, account = storage_root(source.rel)
        metadata: dict[str, Any] = {
            "storageRoot": root,
            "accountId": account,
            "source": PurePosixPath(source.rel).name,
            "encoding": "json",
            "sizeBytes": len(data),
        }
        if isinstance(document.get("version"), int):
            metadata["version"] = document["version"]
        if isinstance(document.get("cleanShutdown"), bool):
            metadata["cleanShutdown"] = document["cleanShutdown"]
        yield BlobEntry("sync-store", root, data, metadata)


class MatrixIdbSnapshotReader(PluginStateReader):
    kind = "matrix-idb-snapshot"
    family = "matrix"
    description = "Matrix Rust-crypto IndexedDB snapshot (secret key material), stored as a blob"
    patterns = _in_roots("crypto-idb-snapshot.json")
    schema_name = "plugin-matrix-idb-snapshot"
    target_tables = ("global.plugin_blob_entries",)
    plugin_id = PLUGIN
    namespaces = ("idb-snapshots",)
    secret = True

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[BlobEntry]:
        data = handle.read()
        document = parse_json_document(data, source.rel)
        validate(document, self.schema_name or "", source.rel)
        root, account = storage_root(source.rel)
        metadata = {"storageRoot": root, "accountId": account, "encoding": "json", "databaseCount": len(document), "sizeBytes": len(data)}
        yield BlobEntry("idb-snapshots", root, data, metadata)

    def secret_values(self, entry: StateEntry | BlobEntry) -> list[str]:
        return [entry.blob.decode("utf-8", "replace")] if isinstance(entry, BlobEntry) else []


def _configured_accounts(config: dict[str, Any]) -> tuple[list[str], str | None]:
    channels = config.get("channels") if isinstance(config.get("channels"), dict) else {}
    matrix = channels.get("matrix") if isinstance(channels.get("matrix"), dict) else {}
    accounts = matrix.get("accounts") if isinstance(matrix.get("accounts"), dict) else {}
    default = matrix.get("defaultAccount")
    return sorted(str(a).strip().lower() for a in accounts), default.strip().lower() if isinstance(default, str) and default.strip() else None


class MatrixCredentialsReader(PluginStateReader):
    kind = "matrix-credentials"
    family = "matrix"
    description = "Matrix cached login per account (secret: access token)"
    patterns = (
        "credentials/matrix/credentials.json",
        "credentials/matrix/credentials-*.json",
        "credentials/matrix/*/credentials.json",
    )
    schema_name = "plugin-matrix-credentials"
    plugin_id = PLUGIN
    namespaces = ("credentials",)
    secret = True

    def _account(self, source: Source, ectx: EntryContext) -> str:
        parts = PurePosixPath(source.rel).parts
        name = parts[-1]
        if name.startswith("credentials-") and name.endswith(".json"):
            return name[len("credentials-"):-len(".json")].strip().lower() or "default"
        if len(parts) == 4:
            return parts[2].strip().lower()
        accounts, default = _configured_accounts(ectx.config)
        if default:
            return default
        if len(accounts) == 1:
            return accounts[0]
        if len(accounts) > 1:
            raise SourceError(source.rel, "several Matrix accounts are configured and none is channels.matrix.defaultAccount;"
                              " cannot tell which account this login belongs to (left in place)")
        return "default"

    def entries(self, source: Source, handle: BinaryIO, ectx: EntryContext) -> Iterator[StateEntry]:
        document = load_document(source, handle, self.schema_name)
        account = self._account(source, ectx)
        value = {"accountId": account, **{k: v for k, v in document.items() if k != "accountId"}}
        ectx.report["account_id"] = account
        created = as_ms(document.get("createdAt"))
        yield StateEntry("credentials", account, value, created_at=as_ms(document.get("lastUsedAt")) or created)

    def secret_values(self, entry: StateEntry | BlobEntry) -> list[str]:
        if isinstance(entry, StateEntry) and isinstance(entry.value, dict):
            return [entry.value.get("accessToken") or ""] + ([entry.value["password"]] if isinstance(entry.value.get("password"), str) else [])
        return []


class MatrixLegacyCryptoMigration(NotImportedReader):
    kind = "matrix-legacy-crypto-migration"
    family = "matrix"
    description = "Matrix plugin's marker for its own legacy Rust-crypto store migration"
    patterns = _in_roots("legacy-crypto-migration.json")
    plugin_id = PLUGIN
    action = "retain"
    reason = "the Matrix plugin's own crypto-store migration marker, read by OpenClaw's Matrix doctor; not part of the file-to-SQLite move"


class MatrixCryptoStore(NotImportedReader):
    kind = "matrix-crypto-store"
    family = "matrix"
    description = "Matrix Rust-crypto store directory (crypto/) of a storage root"
    patterns = ("matrix/crypto/**", "matrix/**/crypto/**")
    plugin_id = PLUGIN
    action = "retain"
    reason = "encrypted device keys owned by the Matrix SDK's crypto store; they stay on disk (losing them loses encrypted history)"


class MatrixRootDatabase(NotImportedReader):
    kind = "matrix-root-database"
    family = "matrix"
    description = "Per-storage-root Matrix SQLite database (OpenClaw 2026.7) and its -wal/-shm"
    patterns = ("matrix/accounts/**/state/openclaw.sqlite", "matrix/accounts/**/state/openclaw.sqlite-*")
    plugin_id = PLUGIN
    action = "retain"
    reason = "shipped per-account Matrix database; OpenClaw's Matrix doctor moves its inbound-dedupe rows itself"
