"""plugins/installs.json -> installed_plugin_index (singleton row 'current')."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from b2_harness import assert_failed_in_place, assert_imported, new_state, query, run
from helpers import FIXTURES, global_db, open_db
from legacy_readers import reader_for

FIX = FIXTURES / "readers" / "plugin-installs"
REL = "plugins/installs.json"


def test_claims():
    assert reader_for(REL).kind == "installed-plugin-index"


def test_round_trip(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "installs.json").read_bytes()})
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, REL, originals[REL], records=1)
    row = query(state, "SELECT * FROM installed_plugin_index")[0]
    doc = json.loads(originals[REL])
    assert (row["index_key"], row["version"], row["updated_at_ms"]) == ("current", 1, 1777118400000)
    assert json.loads(row["install_records_json"]) == doc["installRecords"]
    assert json.loads(row["plugins_json"]) == doc["plugins"]
    assert json.loads(row["raw_json"]) == doc


def test_openclaw_table_without_raw_json_is_refused(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "installs.json").read_bytes()})
    db = global_db(state)
    db.parent.mkdir(parents=True)
    conn = open_db(db)
    conn.execute(
        "CREATE TABLE installed_plugin_index (index_key TEXT NOT NULL PRIMARY KEY, version INTEGER NOT NULL, host_contract_version TEXT NOT NULL,"
        " compat_registry_version TEXT NOT NULL, migration_version INTEGER NOT NULL, policy_hash TEXT NOT NULL, generated_at_ms INTEGER NOT NULL,"
        " refresh_reason TEXT, install_records_json TEXT NOT NULL, plugins_json TEXT NOT NULL, diagnostics_json TEXT NOT NULL, warning TEXT,"
        " updated_at_ms INTEGER NOT NULL)"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    report = run(state)
    assert_failed_in_place(state, report, REL, originals[REL], "lacks column(s) raw_json")


@pytest.mark.parametrize(("content", "needle"), [({"version": 1}, "matches none of the allowed shapes"), ({"installRecords": []}, "$.installRecords")])
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    assert_failed_in_place(state, run(state), REL, originals[REL], needle)


@pytest.mark.corpus
def test_b2_families_into_real_openclaw_2026_7_database(tmp_path: Path):
    """Every B2 family against OpenClaw 2026.7.35's real global database (wider tables, NOT NULLs, other keys):
    all import except the plugin index, refused with a clear schema error."""
    import tarfile

    from b2_harness import outcome, place
    from helpers import corpus_or_skip

    corpus = corpus_or_skip()
    fix = FIXTURES / "readers"

    def sub(name: str, key: str, count: int) -> str:
        doc = json.loads((fix / name).read_text())
        return json.dumps({**doc, key: doc[key][:count]})

    files = {
        "delivery-queue/outbound-1.json": (fix / "delivery-queue/outbound-1.json").read_bytes(),
        "session-delivery-queue/session-1.json": (fix / "delivery-queue/session-1.json").read_bytes(),
        "media/inbound/pixel.png": (fix / "media/pixel.png").read_bytes(),
        "audit/file-transfer.jsonl": (fix / "audit-logs/file-transfer.jsonl").read_bytes(),
        "subagents/runs.json": (fix / "subagents/runs-v1.json").read_bytes(),
        "bindings/current-conversations.json": sub("bindings/current-conversations.json", "bindings", 2),
        "plugin-binding-approvals.json": sub("plugin-binding-approvals/plugin-binding-approvals.json", "approvals", 2),
        "commitments/commitments.json": sub("commitments/commitments.json", "commitments", 1),
        "sandbox/containers.json": (fix / "sandbox/containers.json").read_bytes(),
        "sandbox/browsers/0f.json": (fix / "sandbox/browser-shard.json").read_bytes(),
        "acp/event-ledger.json": json.dumps({"version": 1, "sessions": {"s": {"sessionId": "s", "sessionKey": "agent:main:x", "cwd": "/", "complete": True,
                                                                              "createdAt": 1, "updatedAt": 2, "nextSeq": 2,
                                                                              "events": [{"seq": 1, "at": 1, "update": {"sessionUpdate": "x"}}]}}}),
        REL: (FIX / "installs.json").read_bytes(),
        "settings/voicewake.json": (fix / "settings/voicewake.json").read_bytes(),
        "settings/voicewake-routing.json": json.dumps({"routes": [{"trigger": "hey", "target": {"agentId": "main"}}]}),
        "settings/tts.json": (fix / "settings/tts.json").read_bytes(),
        "crestodian/rescue-pending/k.json": (fix / "crestodian/3b1f0c9a.json").read_bytes(),
        "plugins/phone-control/armed.json": (fix / "phone-control/armed-v2.json").read_bytes(),
        "workspace/openclaw-workspace-state.json": (fix / "workspace-state/workspace-state.json").read_bytes(),
        "workspace/.clawhub/lock.json": (fix / "clawhub/lock.json").read_bytes(),
        "mcp-oauth/linear.json": (fix / "mcp-oauth/linear.json").read_bytes(),
        "credentials/telegram-pairing.json": sub("channel-pairing/telegram-pairing.json", "requests", 2),
        "credentials/telegram-allowFrom.json": json.dumps({"version": 1, "allowFrom": ["1", "2"]}),
    }  # fmt: skip
    state, originals = new_state(tmp_path, files)
    (state / "state").mkdir()
    with tarfile.open(corpus / "generated" / "legacy-2026.7.35-std.tar") as archive:
        (state / "state" / "openclaw.sqlite").write_bytes(archive.extractfile("home/.openclaw/state/openclaw.sqlite").read())
    place(state, "logs/stability/bundle.json", {"reason": "test"})
    report = run(state)
    assert report.warnings == [f"{REL}: existing table installed_plugin_index lacks column(s) raw_json that statekit writes; it was left unaltered"]
    for rel in files:
        if rel != REL:
            assert_imported(state, report, rel, originals[rel])
    assert outcome(report, REL).status == "failed" and (state / REL).read_bytes() == originals[REL]
    assert query(state, "SELECT bootstrap_seeded_at FROM workspace_setup_state") == [{"bootstrap_seeded_at": "2026-03-01T08:00:00.000Z"}]
    assert query(state, "SELECT created_at FROM channel_pairing_requests WHERE request_id = '111'") == [{"created_at": "2026-03-06T11:00:00.000Z"}]
    assert query(state, "SELECT session_id, session_key FROM acp_replay_events") == [{"session_id": "s", "session_key": "agent:main:x"}]
