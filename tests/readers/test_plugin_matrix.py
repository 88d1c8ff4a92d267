"""Matrix plugin files -> plugin_state_entries / plugin_blob_entries (plugin ``matrix``); secrets stay out of reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import global_db, rows, run_cli
from legacy_readers.base import fingerprint
from test_plugin_common import T, assert_imported, assert_rejected, blob_rows, fixture_state, outcome, read, run, state_rows

ROOT_KEY = "accounts/ops/matrix.example.org__bot/0123456789abcdef"
ROOT = "matrix/" + ROOT_KEY + "/"
CREDS = "credentials/matrix/credentials-ops.json"
TOKEN = "syt_Ym90_fakeMatrixAccessToken_0abc12"


@pytest.fixture()
def migrated(tmp_path: Path):
    state = fixture_state(tmp_path, "matrix")
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    return state, run(state), originals


def test_credentials_are_imported_with_fingerprint_only(migrated) -> None:
    state, report, originals = migrated
    stored = assert_imported(state, report, CREDS, originals[CREDS], records=1)
    row = state_rows(state, "matrix", "credentials")["ops"]
    assert row["value"] == {
        "accountId": "ops",
        "homeserver": "https://matrix.example.org",
        "userId": "@bot:example.org",
        "accessToken": TOKEN,
        "deviceId": "OPSDEVICE01",
        "createdAt": "2026-11-01T08:00:00.000Z",
        "lastUsedAt": "2026-11-29T12:00:00.000Z",
    }
    assert row["created_at"] == T
    assert stored["secret_fingerprints"] == [fingerprint(TOKEN)]
    for text, in rows(global_db(state), "SELECT report_json FROM migration_sources UNION ALL SELECT report_json FROM migration_runs"):
        assert TOKEN not in text and "EsTc LW2K" not in text


def test_root_json_files(migrated) -> None:
    state, report, originals = migrated
    for name, namespace in [
        ("storage-meta.json", "storage-meta"),
        ("thread-bindings.json", "thread-bindings"),
        ("startup-verification.json", "startup-verification"),
        ("inbound-dedupe.json", "inbound-dedupe"),
        ("recovery-key.json", "recovery-key"),
    ]:
        rel = ROOT + name
        stored = assert_imported(state, report, rel, originals[rel], records=1)
        assert stored["storage_root"] == ROOT_KEY and stored["account_id"] == "ops"
        row = state_rows(state, "matrix", namespace)[ROOT_KEY]
        assert row["value"] == json.loads(originals[rel])
    recovery = assert_imported(state, report, ROOT + "recovery-key.json", originals[ROOT + "recovery-key.json"])
    assert recovery["secret_fingerprints"][0].startswith("sha256:")


def test_sync_store_and_idb_snapshot_are_blobs(migrated) -> None:
    state, report, originals = migrated
    rel = ROOT + "bot-storage.json"
    assert_imported(state, report, rel, originals[rel], records=1)
    blob = blob_rows(state, "matrix", "sync-store")[ROOT_KEY]
    assert blob["blob"] == originals[rel]
    assert blob["metadata"] == {"storageRoot": ROOT_KEY, "accountId": "ops", "source": "bot-storage.json", "encoding": "json",
                                "sizeBytes": len(originals[rel]), "version": 1, "cleanShutdown": True}
    snap = ROOT + "crypto-idb-snapshot.json"
    assert_imported(state, report, snap, originals[snap], records=1)
    snapshot = blob_rows(state, "matrix", "idb-snapshots")[ROOT_KEY]
    assert snapshot["blob"] == originals[snap] and snapshot["metadata"]["databaseCount"] == 1


def test_legacy_crypto_migration_marker_is_retained(migrated) -> None:
    state, report, originals = migrated
    rel = ROOT + "legacy-crypto-migration.json"
    assert outcome(report, rel).status == "retain"
    assert read(state, rel) == originals[rel]


def test_flat_layout_and_default_credentials(tmp_path: Path) -> None:
    state = fixture_state(tmp_path, extra={
        "matrix/bot-storage.json": '{"next_batch": "s1"}',
        "matrix/crypto/store.db": b"SQLite format 3\x00" + b"\x00" * 84,
        "credentials/matrix/credentials.json": {"homeserver": "https://m.org", "userId": "@a:m.org", "accessToken": "tok-a"},
        "openclaw.json": {"channels": {"matrix": {"accounts": {"Home": {}}}}},
    })
    report = run(state)
    assert outcome(report, "matrix/crypto/store.db").status == "retain"
    assert "." in blob_rows(state, "matrix", "sync-store")
    assert state_rows(state, "matrix", "credentials")["home"]["value"]["accountId"] == "home"


def test_ambiguous_default_credentials_stay(tmp_path: Path) -> None:
    rel = "credentials/matrix/credentials.json"
    state = fixture_state(tmp_path, extra={
        rel: {"homeserver": "https://m.org", "userId": "@a:m.org", "accessToken": "tok-secret-ambiguous"},
        "openclaw.json": {"channels": {"matrix": {"accounts": {"ops": {}, "alerts": {}}}}},
    })
    original = read(state, rel)
    line = assert_rejected(state, run(state), rel, original, "several Matrix accounts are configured")
    assert "tok-secret-ambiguous" not in line


def test_malformed_secret_file_never_echoes_the_secret(tmp_path: Path) -> None:
    secret = "syt_SECRET_never_printed_42"
    state = fixture_state(tmp_path, extra={CREDS: json.dumps({"homeserver": "https://m.org", "userId": 7, "accessToken": secret})})
    original = read(state, CREDS)
    proc = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert proc.returncode == 3
    assert secret not in proc.stdout + proc.stderr
    assert f"{CREDS}: $.userId: expected string, found integer" in proc.stderr
    assert read(state, CREDS) == original


@pytest.mark.parametrize(
    ("rel", "content", "problem"),
    [
        (ROOT + "storage-meta.json", "[1, 2]", "$: expected object, found array"),
        (ROOT + "crypto-idb-snapshot.json", '{"name": "x"}', "$: expected array, found object"),
        (ROOT + "bot-storage.json", '{"version": 1,', "invalid JSON"),
        (CREDS, '{"homeserver": "https://m.org", "userId": "@a:m.org"}', "missing required property"),
    ],
)
def test_malformed_stays_in_place(tmp_path: Path, rel: str, content: str, problem: str) -> None:
    state = fixture_state(tmp_path, extra={rel: content})
    original = read(state, rel)
    assert_rejected(state, run(state), rel, original, problem)
