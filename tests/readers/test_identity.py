"""Identity readers: identity/device.json (PEM and macOS raw-key shapes, verified pair) and identity/device-auth.json."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from helpers import global_db, open_db, run_cli
from statekit.legacy_readers.identity import (
    normalize_scopes,
    ed25519_public_key,
    ed25519_sign,
    ed25519_verify,
    pair_verifies,
    raw_public_from_pem,
    seed_from_pem,
)
from test_devices_harness import (
    MTIME,
    assert_left_in_place,
    assert_retired,
    assert_secrets_absent,
    corpus_files,
    fixture,
    one,
    place,
    place_fixture,
    receipt,
    rows,
    run,
    state,  # noqa: F401  (fixture)
)

DEV1 = "21fe31dfa154a261626bf854046fd2271b7bed4b6abe45aa58877ef47f9721b9"
DEV2 = "39f713d0a644253f04529421b9f51b9b08979d08295959c4f3990ee617f5139f"
SEED2 = bytes.fromhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")


def _key_material(name: str) -> list[str]:
    """Private key material in every form that could leak: the field value and the bare PEM body."""
    document = json.loads(fixture(name))
    found = [document[k] for k in ("privateKeyPem", "privateKey") if k in document]
    if "privateKeyPem" in document:
        found.append("".join(document["privateKeyPem"].splitlines()[1:-1]))
    return found


def test_rfc8032_vectors() -> None:
    seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    public = ed25519_public_key(seed)
    assert public.hex() == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    signature = ed25519_sign(seed, b"")
    assert signature.hex() == (
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
    )
    assert ed25519_verify(public, b"", signature)
    assert not ed25519_verify(public, b"tampered", signature)
    assert not ed25519_verify(ed25519_public_key(SEED2), b"", signature)
    assert pair_verifies(public, seed) and not pair_verifies(public, SEED2)


def test_pem_identity_round_trip(state: Path) -> None:
    original = place_fixture(state, "identity/device-pem.json", "identity/device.json")
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, "identity/device.json", original)
    assert row["target_table"] == "global.device_identities"
    assert row["report"]["key_pair_verified"] is True and row["report"]["shape"] == "pem"
    assert row["report"]["public_key_fingerprint"].startswith("sha256:")
    source = json.loads(original)
    assert one(state, "SELECT * FROM device_identities") == {
        "identity_key": "primary",
        "device_id": DEV1,
        "public_key_pem": source["publicKeyPem"],
        "private_key_pem": source["privateKeyPem"],
        "created_at_ms": 1789999999000,
        "updated_at_ms": MTIME,
    }
    assert_secrets_absent(state, report, _key_material("identity/device-pem.json"))


def test_macos_raw_keys_are_converted_to_pem_and_verified(state: Path) -> None:
    original = place_fixture(state, "identity/device-raw.json", "identity/device.json")
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, "identity/device.json", original)
    assert row["report"]["shape"] == "raw"
    got = one(state, "SELECT * FROM device_identities")
    public = ed25519_public_key(SEED2)
    spki = base64.b64encode(bytes.fromhex("302a300506032b6570032100") + public).decode()
    pkcs8 = base64.b64encode(bytes.fromhex("302e020100300506032b657004220420") + SEED2).decode()
    assert got["public_key_pem"] == f"-----BEGIN PUBLIC KEY-----\n{spki}\n-----END PUBLIC KEY-----\n"
    assert got["private_key_pem"] == f"-----BEGIN PRIVATE KEY-----\n{pkcs8}\n-----END PRIVATE KEY-----\n"
    assert got["device_id"] == DEV2 and got["created_at_ms"] == 1789999998000
    assert pair_verifies(raw_public_from_pem(got["public_key_pem"]), seed_from_pem(got["private_key_pem"]))
    assert any("raw base64url keys (macOS shape) converted" in n for n in report.notices)
    assert_secrets_absent(state, report, _key_material("identity/device-raw.json") + [pkcs8])


def test_mismatched_pair_fails_with_one_line_and_no_key_material(state: Path) -> None:
    original = place_fixture(state, "identity/device-mismatch.json", "identity/device.json")
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert result.returncode == 3
    assert (state / "identity/device.json").read_bytes() == original
    lines = [line for line in result.stderr.splitlines() if "identity/device.json" in line]
    assert len(lines) == 1 and "do not form a matching Ed25519 pair" in lines[0], result.stderr
    for secret in _key_material("identity/device-mismatch.json"):
        assert secret not in result.stdout + result.stderr
    assert receipt(state, "identity/device.json")["status"] == "failed"
    assert rows(state, "SELECT * FROM device_identities") == []


@pytest.mark.parametrize(
    ("patch", "needle"),
    [
        ({"privateKeyPem": "-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----\n"}, "$.privateKeyPem: private key PEM body is not valid base64"),
        ({"publicKeyPem": "ssh-ed25519 AAAA"}, "$.publicKeyPem: public key is not a PEM public key block"),
        ({"deviceId": ""}, "deviceId"),
        ({"version": 2}, "$.version: must be 1"),
    ],
)
def test_malformed_identity_variants(state: Path, patch: dict, needle: str) -> None:
    document = json.loads(fixture("identity/device-pem.json"))
    document.update(patch)
    original = place(state, "identity/device.json", document)
    report = run(state)
    assert_left_in_place(state, report, "identity/device.json", original, needle)


def test_raw_key_of_the_wrong_length_fails(state: Path) -> None:
    document = json.loads(fixture("identity/device-raw.json"))
    document["privateKey"] = document["privateKey"][:20]
    original = place(state, "identity/device.json", document)
    report = run(state)
    assert_left_in_place(state, report, "identity/device.json", original, "$.privateKey: private key is not a raw 32-byte Ed25519 seed")


def test_a_different_identity_in_the_database_is_never_replaced(state: Path) -> None:
    place_fixture(state, "identity/device-raw.json", "identity/device.json")
    run(state)
    before = one(state, "SELECT * FROM device_identities")
    original = place_fixture(state, "identity/device-pem.json", "identity/device.json")
    report = run(state)
    assert_left_in_place(state, report, "identity/device.json", original, "already holds a different device identity")
    assert one(state, "SELECT * FROM device_identities") == before


def test_device_auth_round_trip(state: Path) -> None:
    place_fixture(state, "identity/device-pem.json", "identity/device.json")
    original = place_fixture(state, "identity/device-auth.json", "identity/device-auth.json")
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, "identity/device-auth.json", original)
    assert row["target_table"] == "global.device_auth_tokens"
    assert row["report"]["roles"] == ["node", "operator"]
    assert rows(state, "SELECT * FROM device_auth_tokens ORDER BY role") == [
        {"device_id": DEV1, "role": "node", "token": "test-device-auth-node-0001", "scopes_json": "[]", "updated_at_ms": 1790000000600},
        {
            "device_id": DEV1,
            "role": "operator",
            "token": "test-device-auth-operator-0001",
            "scopes_json": '["operator.admin","operator.read","operator.write"]',
            "updated_at_ms": 1790000000500,
        },
    ]
    assert_secrets_absent(state, report, ["test-device-auth-node-0001", "test-device-auth-operator-0001"])


def test_device_auth_roles_and_scopes_as_openclaw_imports_them(state: Path) -> None:
    """2026.9.6: role = the map key (trimmed); scopes trimmed, deduplicated, sorted, with the implied operator scopes."""
    document = json.loads(fixture("identity/device-auth.json"))
    document["tokens"] = {" operator ": document["tokens"]["operator"] | {"role": "ignored", "scopes": [" operator.write ", "x.y", "x.y", ""]}}
    place(state, "identity/device-auth.json", document)
    run(state)
    assert rows(state, "SELECT role, scopes_json FROM device_auth_tokens") == [
        {"role": "operator", "scopes_json": '["operator.read","operator.write","x.y"]'}
    ]
    assert normalize_scopes(["operator.admin"]) == ["operator.admin", "operator.read", "operator.write"] and normalize_scopes(None) == []


def test_device_auth_newer_database_row_is_kept(state: Path) -> None:
    place_fixture(state, "identity/device-auth.json", "identity/device-auth.json")
    run(state)
    conn = open_db(global_db(state))
    conn.execute("UPDATE device_auth_tokens SET token = 'rotated-later', updated_at_ms = 1890000000000 WHERE role = 'operator'")
    conn.commit()
    conn.close()
    document = json.loads(fixture("identity/device-auth.json"))
    document["tokens"]["node"]["token"] = "test-device-auth-node-0002"
    document["tokens"]["node"]["updatedAtMs"] = 1790000009999
    original = place(state, "identity/device-auth.json", document)
    report = run(state)
    assert assert_retired(state, report, "identity/device-auth.json", original)["report"]["kept_newer_database_rows"] == 1
    assert {r["role"]: r["token"] for r in rows(state, "SELECT role, token FROM device_auth_tokens")} == {
        "operator": "rotated-later",
        "node": "test-device-auth-node-0002",
    }


def test_device_auth_without_token_is_left_in_place(state: Path) -> None:
    original = place_fixture(state, "identity/device-auth-bad.json", "identity/device-auth.json")
    report = run(state)
    assert_left_in_place(state, report, "identity/device-auth.json", original, "$.tokens.operator", "missing required property")


@pytest.mark.corpus
def test_corpus_smoke_identity(tmp_path: Path) -> None:
    """Real 2026.5.28 identity (Node PEM shape) and its device-auth tokens."""
    state = corpus_files("legacy-2026.5.28-smoke", ["identity/device.json", "identity/device-auth.json"], tmp_path)
    device = (state / "identity/device.json").read_bytes()
    auth = (state / "identity/device-auth.json").read_bytes()
    report = run(state)
    assert_retired(state, report, "identity/device.json", device)
    assert_retired(state, report, "identity/device-auth.json", auth)
    source = json.loads(device)
    got = one(state, "SELECT * FROM device_identities")
    assert (got["device_id"], got["public_key_pem"], got["private_key_pem"], got["created_at_ms"]) == (
        source["deviceId"], source["publicKeyPem"], source["privateKeyPem"], source["createdAtMs"]
    )
    assert one(state, "SELECT role, updated_at_ms FROM device_auth_tokens") == {"role": "operator", "updated_at_ms": 1795996944347}
    token = json.loads(auth)["tokens"]["operator"]["token"]
    assert_secrets_absent(state, report, [source["privateKeyPem"], token])


@pytest.mark.corpus
def test_corpus_scrubbed_private_key_is_refused(tmp_path: Path) -> None:
    """42naodia/moltbot-config: the scrubbed private key no longer decodes to a PKCS#8 Ed25519 key."""
    state = corpus_files("42naodia__moltbot-config", ["identity/device.json", "identity/device-auth.json"], tmp_path)
    original = (state / "identity/device.json").read_bytes()
    report = run(state)
    assert_left_in_place(state, report, "identity/device.json", original, "$.privateKeyPem: private key is not an Ed25519 PKCS#8 private key")
    auth = (state / "identity/device-auth.json")
    assert not auth.exists()  # device-auth.json does not depend on the identity and is imported
    assert one(state, "SELECT role FROM device_auth_tokens")["role"] == "operator"


@pytest.mark.corpus
def test_corpus_2026_7_identity_into_its_own_table(tmp_path: Path) -> None:
    """2026.7.35 still has identity/device.json next to an empty (foreign, NOT NULL) device_identities table."""
    state = corpus_files("legacy-2026.7.35-std", ["identity/device.json", "state/openclaw.sqlite"], tmp_path)
    original = (state / "identity/device.json").read_bytes()
    report = run(state)
    row = assert_retired(state, report, "identity/device.json", original)
    assert row["report"]["key_pair_verified"] is True
    source = json.loads(original)
    got = one(state, "SELECT identity_key, device_id, private_key_pem FROM device_identities")
    assert got == {"identity_key": "primary", "device_id": source["deviceId"], "private_key_pem": source["privateKeyPem"]}
    assert_secrets_absent(state, report, [source["privateKeyPem"]])
