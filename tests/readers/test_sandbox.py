"""Sandbox registries (monolithic and sharded) -> sandbox_registry_entries; lock files dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, outcome, place, query, run
from helpers import FIXTURES
from statekit.legacy_readers import reader_for

FIX = FIXTURES / "readers" / "sandbox"
SHARD = "sandbox/browsers/0f3c9d1e2a.json"


def test_claims():
    assert reader_for("sandbox/containers.json").kind == "sandbox-registry"
    assert reader_for("sandbox/browsers.json").kind == "sandbox-registry"
    assert reader_for("sandbox/containers/ab.json").kind == "sandbox-registry-shard"
    assert reader_for("sandbox/containers.json.lock").kind == "sandbox-registry-lock"


def test_round_trip(tmp_path: Path):
    files = {
        "sandbox/containers.json": (FIX / "containers.json").read_bytes(),
        SHARD: (FIX / "browser-shard.json").read_bytes(),
        "sandbox/containers.json.lock": b"",
    }
    state, originals = new_state(tmp_path, files)
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, "sandbox/containers.json", originals["sandbox/containers.json"], records=2)
    assert_imported(state, report, SHARD, originals[SHARD], records=1)
    assert outcome(report, "sandbox/containers.json.lock").records == 0 and not (state / "sandbox").exists()
    rows = {r["container_name"]: r for r in query(state, "SELECT * FROM sandbox_registry_entries")}
    main = rows["openclaw-sbx-agent-main-1a2b"]
    entry = json.loads(main.pop("entry_json"))
    assert main == {
        "registry_kind": "container",
        "container_name": "openclaw-sbx-agent-main-1a2b",
        "session_key": "agent:main:main",
        # As 2026.7.35's import writes it: no defaults in the row (OpenClaw fills docker / the name / Image on read).
        "backend_id": None,
        "runtime_label": None,
        "image": "openclaw-sandbox:bookworm-slim",
        "created_at_ms": 1774000000000,
        "last_used_at_ms": 1774000900000,
        "config_label_kind": None,
        "config_hash": "c0ffee",
        "cdp_port": None,
        "no_vnc_port": None,
        "updated_at": MTIME,
    }
    assert "backendId" not in entry and "configLabelKind" not in entry and entry["sessionKey"] == "agent:main:main"
    work = rows["openclaw-sbx-agent-work-3c4d"]
    assert (work["backend_id"], work["runtime_label"], work["config_label_kind"]) == ("podman", "work-box", "Dockerfile")
    browser = rows["openclaw-sbx-browser-main-5e6f"]
    assert (browser["registry_kind"], browser["cdp_port"], browser["no_vnc_port"], browser["backend_id"], browser["config_label_kind"]) == (
        "browser", 9222, 6080, None, None)  # fmt: skip


def test_missing_fields_get_the_release_defaults(tmp_path: Path):
    """writeLegacyEntryIfMissing: sessionKey/image "" and times 0 when absent; a browser's cdpPort 0."""
    files = {"sandbox/containers.json": {"entries": [{"containerName": "bare"}]}, SHARD: {"containerName": "bare-browser"}}
    state, _ = new_state(tmp_path, files)
    run(state)
    rows = {r["container_name"]: r for r in query(state, "SELECT * FROM sandbox_registry_entries")}
    bare, browser = rows["bare"], rows["bare-browser"]
    assert (bare["session_key"], bare["image"], bare["created_at_ms"], bare["last_used_at_ms"], bare["cdp_port"]) == ("", "", 0, 0, None)
    assert bare["entry_json"] == '{"containerName":"bare","sessionKey":"","createdAtMs":0,"lastUsedAtMs":0,"image":""}'
    assert (browser["cdp_port"], browser["no_vnc_port"]) == (0, None)
    assert browser["entry_json"] == '{"containerName":"bare-browser","sessionKey":"","createdAtMs":0,"lastUsedAtMs":0,"image":"","cdpPort":0}'


def test_reimport_upserts(tmp_path: Path):
    shard = json.loads((FIX / "browser-shard.json").read_text())
    state, _ = new_state(tmp_path, {SHARD: shard})
    run(state)
    shard["lastUsedAtMs"] = 1774009999999
    place(state, SHARD, shard, MTIME + 1)
    assert run(state).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    assert query(state, "SELECT last_used_at_ms, updated_at FROM sandbox_registry_entries") == [{"last_used_at_ms": 1774009999999, "updated_at": MTIME + 1}]


@pytest.mark.parametrize(
    ("rel", "content", "needle"),
    [
        ("sandbox/containers.json", {"entries": [{"image": "x"}]}, "$.entries[0]: missing required property"),
        ("sandbox/browsers.json", {"entries": {}}, "$.entries: expected array"),
        ("sandbox/containers/aa.json", {"containerName": ""}, "$.containerName: violates minLength 1"),
    ],
)
def test_malformed_file_stays_in_place(tmp_path: Path, rel: str, content, needle: str):
    state, originals = new_state(tmp_path, {rel: content})
    assert_failed_in_place(state, run(state), rel, originals[rel], needle)
