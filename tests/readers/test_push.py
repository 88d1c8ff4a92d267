"""Push readers: web push subscriptions, VAPID keys, APNs registrations."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from helpers import global_db, open_db
from statekit.legacy_readers.base import fingerprint
from statekit.legacy_readers.push import normalise_debug_suffix, normalise_relay_origin
from test_devices_harness import (
    MTIME,
    assert_left_in_place,
    assert_retired,
    assert_secrets_absent,
    fixture,
    one,
    place,
    place_fixture,
    rows,
    run,
    state,  # noqa: F401  (fixture)
)

SUBS = "push/web-push-subscriptions.json"
VAPID = "push/vapid-keys.json"
APNS = "push/apns-registrations.json"
EP1 = "https://push.example.net/send/test-endpoint-capability-0001"
EP2 = "https://updates.push.example.org/wpush/v2/test-endpoint-capability-0002"
SECRETS = [EP1, EP2, "test-auth-secret-0001", "test-auth-secret-0002", "test-vapid-private-key-0001", "test-send-grant-secret-0001",
           "abcd1234abcd1234abcd1234abcd1234", "test-relay-handle-0001"]


def h(endpoint: str) -> str:
    return hashlib.sha256(endpoint.encode()).hexdigest()[:32]


def test_web_push_subscriptions_round_trip(state: Path) -> None:
    original = place_fixture(state, SUBS, SUBS)
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, SUBS, original)
    assert row["target_table"] == "global.web_push_subscriptions"
    assert row["report"]["rekeyed"] == 1
    assert rows(state, "SELECT * FROM web_push_subscriptions ORDER BY created_at_ms") == [
        {"endpoint_hash": h(EP1), "subscription_id": "9b9b9b9b-0000-4000-8000-000000000001", "endpoint": EP1,
         "p256dh": "BTestP256dhKeyMaterial0001", "auth": "test-auth-secret-0001", "created_at_ms": 1790000700000, "updated_at_ms": 1790000700500},
        {"endpoint_hash": h(EP2), "subscription_id": "9b9b9b9b-0000-4000-8000-000000000002", "endpoint": EP2,
         "p256dh": "BTestP256dhKeyMaterial0002", "auth": "test-auth-secret-0002", "created_at_ms": 1790000800000, "updated_at_ms": 1790000800000},
    ]
    assert_secrets_absent(state, report, SECRETS)


def test_web_push_newer_database_row_wins(state: Path) -> None:
    place_fixture(state, SUBS, SUBS)
    run(state)
    conn = open_db(global_db(state))
    conn.execute("UPDATE web_push_subscriptions SET auth = 'rotated', updated_at_ms = 1890000000000 WHERE endpoint_hash = ?", (h(EP1),))
    conn.commit()
    conn.close()
    document = json.loads(fixture(SUBS))
    document["subscriptionsByEndpointHash"][h(EP1)]["keys"]["auth"] = "test-auth-secret-0001-b"
    original = place(state, SUBS, document, MTIME + 1)
    report = run(state)
    assert assert_retired(state, report, SUBS, original)["report"]["kept_newer_database_rows"] == 1
    assert one(state, "SELECT auth FROM web_push_subscriptions WHERE endpoint_hash = ?", (h(EP1),))["auth"] == "rotated"


def test_web_push_malformed(state: Path) -> None:
    original = place_fixture(state, "push/web-push-subscriptions-bad.json", SUBS)
    report = run(state)
    message = assert_left_in_place(state, report, SUBS, original, "keys", "missing required property", "auth")
    assert EP1 not in message


def test_vapid_keys_round_trip_and_conflict(state: Path) -> None:
    original = place_fixture(state, VAPID, VAPID)
    report = run(state)
    row = assert_retired(state, report, VAPID, original)
    assert row["report"]["decision"] == "imported"
    assert row["report"]["public_key_fingerprint"] == fingerprint("BTestVapidPublicKey0001")
    assert one(state, "SELECT * FROM web_push_vapid_keys") == {
        "key_id": "default", "public_key": "BTestVapidPublicKey0001", "private_key": "test-vapid-private-key-0001",
        "subject": "mailto:ops@example.com", "updated_at_ms": MTIME,
    }
    assert_secrets_absent(state, report, SECRETS)
    # Same pair again (a changed subject only): no-op, retired.
    same = place(state, VAPID, {"publicKey": "BTestVapidPublicKey0001", "privateKey": "test-vapid-private-key-0001"}, MTIME + 1)
    report = run(state)
    assert assert_retired(state, report, VAPID, same)["report"]["decision"] == "same key pair already in the database"
    # A different pair: conflict, file stays, the database keeps its pair.
    other = place(state, VAPID, {"publicKey": "BOtherPublic", "privateKey": "test-vapid-private-key-other"}, MTIME + 2)
    report = run(state)
    message = assert_left_in_place(state, report, VAPID, other, "different VAPID key pair")
    assert "test-vapid-private-key-other" not in message
    assert one(state, "SELECT public_key FROM web_push_vapid_keys")["public_key"] == "BTestVapidPublicKey0001"


def test_vapid_without_subject_gets_openclaw_default(state: Path) -> None:
    original = place(state, VAPID, {"publicKey": "BPub", "privateKey": "priv"})
    report = run(state)
    assert assert_retired(state, report, VAPID, original)["report"]["subject_defaulted"] is True
    assert one(state, "SELECT subject FROM web_push_vapid_keys")["subject"] == "https://openclaw.ai"


def test_vapid_malformed(state: Path) -> None:
    original = place_fixture(state, "push/vapid-keys-bad.json", VAPID)
    assert_left_in_place(state, run(state), VAPID, original, "missing required property", "privateKey")


def test_apns_round_trip(state: Path) -> None:
    original = place_fixture(state, APNS, APNS)
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, APNS, original)
    assert row["report"]["transports"] == {"direct": 2, "relay": 1}
    assert row["report"]["fields_without_column"] == []
    # relayOrigin has no v1 column: relay_origin TEXT, the column 2026.9.6 adds to the table, is added for it.
    assert rows(state, "SELECT * FROM apns_registrations ORDER BY node_id") == [
        {"node_id": "ios-node-direct", "transport": "direct", "token": "abcd1234abcd1234abcd1234abcd1234", "relay_handle": None,
         "send_grant": None, "installation_id": None, "topic": "ai.openclaw.ios", "environment": "production", "distribution": None,
         "token_debug_suffix": None, "updated_at_ms": 1790000900000, "relay_origin": None},
        {"node_id": "ios-node-legacy", "transport": "direct", "token": "abcdef0123456789abcdef0123456789", "relay_handle": None,
         "send_grant": None, "installation_id": None, "topic": "ai.openclaw.ios", "environment": "sandbox", "distribution": None,
         "token_debug_suffix": None, "updated_at_ms": 1790000900100, "relay_origin": None},
        {"node_id": "ios-node-relay", "transport": "relay", "token": None, "relay_handle": "test-relay-handle-0001",
         "send_grant": "test-send-grant-secret-0001", "installation_id": "install-0001", "topic": "ai.openclaw.ios",
         "environment": "production", "distribution": "official", "token_debug_suffix": "abcd1234", "updated_at_ms": 1790000900200,
         "relay_origin": "https://relay.example"},
    ]
    assert_secrets_absent(state, report, SECRETS)


@pytest.mark.parametrize(
    ("change", "json_path", "problem"),
    [
        ({"ios-node-legacy": {"token": "not-hex-at-all"}}, "['ios-node-legacy'].token", "is not an APNs device token"),
        ({"ios-node-relay": {"distribution": "adhoc"}}, "['ios-node-relay'].distribution", "needs distribution official"),
        ({"ios-node-relay": {"relayOrigin": "http://relay.example"}}, "['ios-node-relay'].relayOrigin", "is not an https relay URL"),
        ({"ios-node-relay": {"relayOrigin": "https://u:p@relay.example"}}, "['ios-node-relay'].relayOrigin", "is not an https relay URL"),
    ],
)
def test_apns_rows_openclaw_would_refuse_are_left_in_place(state: Path, change: dict, json_path: str, problem: str) -> None:
    """apnsRegistrationFromRow (2026.9.6) throws on a non-canonical row: such a registration is a clear error, never written."""
    document = json.loads(fixture(APNS))
    for node, fields in change.items():
        document["registrationsByNodeId"][node] |= fields
    original = place(state, APNS, document)
    assert_left_in_place(state, run(state), APNS, original, f"$.registrationsByNodeId{json_path}", problem)
    assert rows(state, "SELECT * FROM apns_registrations") == []


def test_apns_relay_origin_and_suffix_are_normalised_as_openclaw_does() -> None:
    assert normalise_relay_origin("HTTPS://Relay.Example:443/") == "https://relay.example"
    assert normalise_relay_origin("https://relay.example:8443/base//") == "https://relay.example:8443/base"
    assert normalise_relay_origin("http://127.0.0.1:9000") == "http://127.0.0.1:9000"
    assert normalise_relay_origin("https://relay.example/?x=1") is None
    assert normalise_debug_suffix(" AB-cd:1234:ef99 ") == "1234ef99" and normalise_debug_suffix("--") is None


def test_apns_relay_without_send_grant_is_left_in_place(state: Path) -> None:
    original = place_fixture(state, "push/apns-registrations-bad.json", APNS)
    assert_left_in_place(state, run(state), APNS, original, "$.registrationsByNodeId['ios-node-relay']", "sendGrant")
