"""bindings/current-conversations.json -> current_conversation_bindings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, place, query, run
from helpers import FIXTURES
from statekit.legacy_readers import reader_for

FIX = FIXTURES / "readers" / "bindings"
REL = "bindings/current-conversations.json"
SEP = "\u241f"


def test_claims():
    assert reader_for(REL).kind == "current-conversation-bindings"


def test_round_trip(tmp_path: Path):
    state, originals = new_state(tmp_path, {REL: (FIX / "current-conversations.json").read_bytes()})
    report = run(state)
    assert report.exit_code == 3 and any("bindings[2]" in w and "skipped" in w for w in report.warnings)
    assert_imported(state, report, REL, originals[REL], records=2)
    rows = {r["binding_key"]: r for r in query(state, "SELECT * FROM current_conversation_bindings")}
    key1 = f"workspace{SEP}default{SEP}{SEP}user:U123"
    first = rows[key1]
    record = json.loads(first.pop("record_json"))
    assert first == {
        "binding_key": key1,
        "binding_id": f"generic:{key1}",
        "target_agent_id": "codex",
        "target_session_id": None,  # as OpenClaw writes it (metadata keeps targetSessionId)
        "target_session_key": "agent:codex:acp:workspace-dm",
        "channel": "workspace",
        "account_id": "default",
        "conversation_kind": "current",  # CURRENT_BINDING_CONVERSATION_KIND: the kind of binding
        "parent_conversation_id": None,
        "conversation_id": "user:U123",
        "target_kind": "session",
        "status": "active",
        "bound_at": 1234,
        "expires_at": None,
        "metadata_json": '{"label":"workspace-dm","targetSessionId":"sess-42"}',
        "updated_at": MTIME,
    }
    assert record["bindingId"] == f"generic:{key1}" and record["targetSessionKey"] == "agent:codex:acp:workspace-dm"
    assert record["conversation"] == {"channel": "workspace", "accountId": "default", "conversationId": "user:U123"}
    key2 = f"discord{SEP}bot2{SEP}guild-1{SEP}thread-9"
    second = rows[key2]
    assert (second["target_agent_id"], second["conversation_kind"], second["parent_conversation_id"], second["expires_at"]) == ("main", "current", "guild-1", 9999)
    # Byte for byte the record_json OpenClaw 2026.9.6's doctor wrote for this binding of the every-family fixture.
    assert second["record_json"] == (
        f'{{"bindingId":"generic:{key2}","targetSessionKey":"main-thread","targetKind":"session","conversation":{{"channel":"discord",'
        '"accountId":"bot2","conversationId":"thread-9","conversationKind":"channel","parentConversationId":"guild-1"},'
        '"status":"active","boundAt":5678,"expiresAt":9999}'
    )
    assert list(record) == ["bindingId", "targetSessionKey", "targetKind", "conversation", "status", "boundAt", "metadata"]


def test_reimport_upserts(tmp_path: Path):
    doc = json.loads((FIX / "current-conversations.json").read_text())
    doc["bindings"] = doc["bindings"][:1]
    state, _ = new_state(tmp_path, {REL: doc})
    run(state)
    doc["bindings"][0]["status"] = "ended"
    place(state, REL, doc, MTIME + 1)
    assert run(state).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    assert query(state, "SELECT status, updated_at FROM current_conversation_bindings") == [{"status": "ended", "updated_at": MTIME + 1}]


@pytest.mark.parametrize(
    ("content", "needle"),
    [({"version": 2, "bindings": []}, "$.version: must be 1"), ({"version": 1}, "missing required property"), ("{", "invalid JSON")],
)
def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {REL: content})
    assert_failed_in_place(state, run(state), REL, originals[REL], needle)
