"""Matrix plugin files: kept in place for the plugin's own doctor (OpenClaw 2026.9.6 does not bundle it;
why and how: :class:`legacy_readers.plugins._state.RetainedPluginFile`).
"""

from __future__ import annotations

from statekit.legacy_readers.plugins._state import NotImportedReader, RetainedPluginFile, external_plugin_reason

PLUGIN = "matrix"
REASON = external_plugin_reason("matrix")


class MatrixStorageMetaReader(RetainedPluginFile):
    kind = "matrix-storage-meta"
    family = "matrix"
    description = "Matrix storage-root metadata (homeserver, user, device, token-hash claim)"
    patterns = ("matrix/**/storage-meta.json",)
    plugin_id = PLUGIN
    reason = REASON


class MatrixThreadBindingsReader(RetainedPluginFile):
    kind = "matrix-thread-bindings"
    family = "matrix"
    description = "Matrix thread bindings of one storage root"
    patterns = ("matrix/**/thread-bindings.json",)
    plugin_id = PLUGIN
    reason = REASON


class MatrixInboundDedupeReader(RetainedPluginFile):
    kind = "matrix-inbound-dedupe"
    family = "matrix"
    description = "Matrix inbound event dedupe markers of one storage root"
    patterns = ("matrix/**/inbound-dedupe.json",)
    plugin_id = PLUGIN
    reason = REASON


class MatrixStartupVerificationReader(RetainedPluginFile):
    kind = "matrix-startup-verification"
    family = "matrix"
    description = "Matrix startup self-verification backoff state"
    patterns = ("matrix/**/startup-verification.json",)
    plugin_id = PLUGIN
    reason = REASON


class MatrixRecoveryKeyReader(RetainedPluginFile):
    kind = "matrix-recovery-key"
    family = "matrix"
    description = "Matrix secret-storage recovery key (secret)"
    patterns = ("matrix/**/recovery-key.json",)
    plugin_id = PLUGIN
    reason = REASON


class MatrixSyncStoreReader(RetainedPluginFile):
    kind = "matrix-sync-store"
    family = "matrix"
    description = "Matrix /sync cache (bot-storage.json) of one storage root, stored as a blob"
    patterns = ("matrix/**/bot-storage.json", "matrix/**/sync-store.json")
    plugin_id = PLUGIN
    reason = REASON


class MatrixIdbSnapshotReader(RetainedPluginFile):
    kind = "matrix-idb-snapshot"
    family = "matrix"
    description = "Matrix Rust-crypto IndexedDB snapshot (secret key material), stored as a blob"
    patterns = ("matrix/**/crypto-idb-snapshot.json",)
    plugin_id = PLUGIN
    reason = REASON


class MatrixCredentialsReader(RetainedPluginFile):
    kind = "matrix-credentials"
    family = "matrix"
    description = "Matrix cached login per account (secret: access token)"
    patterns = ("credentials/matrix/credentials.json", "credentials/matrix/credentials-*.json", "credentials/matrix/*/credentials.json")
    plugin_id = PLUGIN
    reason = REASON


class MatrixLegacyCryptoMigration(NotImportedReader):
    kind = "matrix-legacy-crypto-migration"
    family = "matrix"
    description = "Matrix plugin's marker for its own legacy Rust-crypto store migration"
    patterns = ("matrix/**/legacy-crypto-migration.json",)
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
