"""Gateway files: gateway-instance-id (plugin state), restart sentinel (imported), restart intent /
supervisor handoff / gateway.<hash>.lock (dropped with a reason, retired byte-exact)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from test_devices_harness import (
    MTIME,
    assert_left_in_place,
    assert_retired,
    fixture,
    one,
    outcome,
    place,
    place_fixture,
    receipt,
    rows,
    run,
    state,  # noqa: F401  (fixture)
)

INSTANCE = "gateway-instance-id"
SENTINEL = "restart-sentinel.json"
GW_ID = "gw-4b1f0e2c-9d3a-4c5b-8e7f-0a1b2c3d4e5f"


def test_gateway_instance_id_round_trip(state: Path) -> None:
    original = place_fixture(state, "gateway/gateway-instance-id", INSTANCE)
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, INSTANCE, original)
    assert row["target_table"] == "global.plugin_state_entries"
    assert row["report"] == {**row["report"], "instance_id": GW_ID, "decision": "imported"}
    got = one(state, "SELECT * FROM plugin_state_entries WHERE plugin_id = 'acpx'")
    assert got == {
        "plugin_id": "acpx",
        "namespace": "gateway-instance",
        "entry_key": "current",
        # The record ACPX reads back (normalizeAcpxGatewayInstanceRecord: instanceId, createdAt).
        "value_json": json.dumps({"instanceId": GW_ID, "createdAt": MTIME}, separators=(",", ":")),
        "created_at": MTIME,
        "expires_at": None,
    }


def test_gateway_instance_id_newer_row_kept_older_replaced(state: Path) -> None:
    place(state, INSTANCE, "gw-old\n", MTIME - 1000)
    run(state)
    original = place_fixture(state, "gateway/gateway-instance-id", INSTANCE)
    report = run(state)
    assert assert_retired(state, report, INSTANCE, original)["report"]["decision"] == "replaced older database row"
    assert json.loads(one(state, "SELECT value_json FROM plugin_state_entries")["value_json"])["instanceId"] == GW_ID
    stale = place(state, INSTANCE, "gw-stale", MTIME - 5000)
    report = run(state)
    assert assert_retired(state, report, INSTANCE, stale)["report"]["decision"] == "kept newer database row"
    assert json.loads(one(state, "SELECT value_json FROM plugin_state_entries")["value_json"])["instanceId"] == GW_ID


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "gateway-instance-id:2: expected a single line holding the instance id"),
        (b"   \n", "gateway-instance-id: file is empty"),
        (b"gw id with spaces", "gateway-instance-id: $: does not match pattern"),
        (b"\xff\xfe", "gateway-instance-id:1: invalid UTF-8 at byte 0"),
    ],
)
def test_gateway_instance_id_malformed(state: Path, content, needle: str) -> None:
    original = place_fixture(state, "gateway/gateway-instance-id-bad", INSTANCE) if content is None else place(state, INSTANCE, content)
    message = assert_left_in_place(state, run(state), INSTANCE, original)
    assert message.startswith(needle), message


def test_restart_sentinel_round_trip(state: Path) -> None:
    original = place_fixture(state, "gateway/restart-sentinel.json", SENTINEL)
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, SENTINEL, original)
    assert row["target_table"] == "global.gateway_restart_sentinel"
    payload = json.loads(original)["payload"]
    assert one(state, "SELECT * FROM gateway_restart_sentinel") == {
        "sentinel_key": "current",
        "version": 1,
        "kind": "config-apply",
        "status": "ok",
        "ts": 1790002000000,
        "session_key": "agent:main:telegram:default:direct:12345",
        "thread_id": "77",
        "delivery_channel": "telegram",
        "delivery_to": "12345",
        "delivery_account_id": "default",
        "message": "Config applied; gateway restarted.",
        "continuation_json": '{"kind":"agentTurn","message":"continue after restart"}',
        "doctor_hint": "Run: openclaw doctor --non-interactive",
        "stats_json": '{"mode":"config.patch","durationMs":1200}',
        # The payload as 2026.9.6 parses and stores it (its key order; the numeric threadId as text, which 9.6 reads back).
        "payload_json": json.dumps({k: payload[k] for k in ("kind", "status", "ts", "sessionKey", "deliveryContext")}
                                   | {"threadId": "77"} | {k: payload[k] for k in ("message", "continuation", "doctorHint", "stats")},
                                   separators=(",", ":"), ensure_ascii=False),
        "updated_at_ms": MTIME,
    }


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"kind": "reboot"}, "$.payload.kind: unsupported restart kind (expected one of config-apply"),
        ({"status": "done"}, "$.payload.status: unsupported restart status (expected one of ok, error, skipped)"),
        ({"continuation": {"kind": "agentTurn"}}, "$.payload.continuation: continuation is neither a systemEvent text nor an agentTurn message"),
    ],
)
def test_restart_sentinel_openclaw_could_not_read_back_stays(state: Path, change: dict, needle: str) -> None:
    """parseRestartSentinelPayload (2026.9.6) would read such a row as invalid and drop the notice: left in place instead."""
    document = json.loads(fixture("gateway/restart-sentinel.json"))
    document["payload"] |= change
    original = place(state, SENTINEL, document)
    assert_left_in_place(state, run(state), SENTINEL, original, needle)


def test_restart_sentinel_newer_row_kept(state: Path) -> None:
    place_fixture(state, "gateway/restart-sentinel.json", SENTINEL)
    run(state)
    document = json.loads(fixture("gateway/restart-sentinel.json"))
    document["payload"]["ts"] = 1780000000000
    document["payload"]["message"] = "older"
    original = place(state, SENTINEL, document, MTIME + 1)
    report = run(state)
    assert assert_retired(state, report, SENTINEL, original)["report"]["decision"] == "kept newer database row"
    assert one(state, "SELECT message FROM gateway_restart_sentinel")["message"] == "Config applied; gateway restarted."


def test_restart_sentinel_malformed(state: Path) -> None:
    original = place_fixture(state, "gateway/restart-sentinel-bad.json", SENTINEL)
    assert_left_in_place(state, run(state), SENTINEL, original, "$.payload: missing required property", "kind")


@pytest.mark.parametrize(
    ("name", "rel", "kind", "why"),
    [
        ("gateway/gateway-restart-intent.json", "gateway-restart-intent.json", "gateway-restart-intent", "runtime sidecar of a stopped gateway"),
        ("gateway/gateway-supervisor-restart-handoff.json", "gateway-supervisor-restart-handoff.json", "gateway-restart-handoff", "short-lived supervisor handoff"),
        ("gateway/gateway.3f2a9c1b.lock", "gateway.3f2a9c1b.lock", "gateway-lock", "stale lock of a gateway that is not running"),
    ],
)
def test_runtime_sidecars_are_dropped_with_a_reason_and_retired(state: Path, name: str, rel: str, kind: str, why: str) -> None:
    original = place_fixture(state, name, rel)
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, rel, original)
    assert outcome(report, rel).kind == kind
    assert why in row["report"]["dropped"]
    assert rows(state, "SELECT * FROM gateway_restart_sentinel") == []


def test_dropped_sidecar_even_when_unparseable(state: Path) -> None:
    original = place(state, "gateway-restart-intent.json", b"\x00not json at all")
    report = run(state)
    assert_retired(state, report, "gateway-restart-intent.json", original)
    assert receipt(state, "gateway-restart-intent.json")["status"] == "completed"
