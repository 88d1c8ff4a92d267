"""settings/voicewake.json, settings/voicewake-routing.json, settings/tts.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from small_store_harness import MTIME, NOW, assert_failed_in_place, assert_imported, new_state, place, query, run
from helpers import FIXTURES
from statekit.legacy_readers import reader_for
from statekit.legacy_readers.settings import normalize_trigger_word

FIX = FIXTURES / "readers" / "settings"
TRIGGERS, ROUTING, TTS = "settings/voicewake.json", "settings/voicewake-routing.json", "settings/tts.json"


def test_claims():
    assert reader_for(TRIGGERS).kind == "voicewake-triggers"
    assert reader_for(ROUTING).kind == "voicewake-routing"
    assert reader_for(TTS).kind == "tts-prefs"


def test_trigger_word_normalisation():
    assert normalize_trigger_word("  Robot   Wake! ") == "robot wake"
    assert normalize_trigger_word("¡Hola, «claw»!") == "hola claw"
    assert normalize_trigger_word("!!!") == ""


def test_round_trip(tmp_path: Path):
    files = {name: (FIX / Path(name).name).read_bytes() for name in (TRIGGERS, ROUTING, TTS)}
    state, originals = new_state(tmp_path, files)
    report = run(state)
    assert report.exit_code == 3 and any("routes[4] target is not" in w for w in report.warnings)
    assert any("routes[1] has no usable trigger; dropped" in n for n in report.notices)
    assert_imported(state, report, TRIGGERS, originals[TRIGGERS], records=2)
    assert_imported(state, report, ROUTING, originals[ROUTING], records=4)
    assert_imported(state, report, TTS, originals[TTS], records=1)
    assert query(state, "SELECT * FROM voicewake_triggers ORDER BY position") == [
        {"config_key": "default", "position": 0, "trigger": "wake", "updated_at_ms": NOW},
        {"config_key": "default", "position": 1, "trigger": "there", "updated_at_ms": NOW},
    ]
    assert query(state, "SELECT * FROM voicewake_routing_config") == [
        {"config_key": "default", "version": 1, "default_target_mode": "agent", "default_target_agent_id": "main-agent",
         "default_target_session_key": None, "updated_at_ms": NOW}
    ]  # fmt: skip
    assert query(state, "SELECT position, trigger, target_mode, target_agent_id, target_session_key FROM voicewake_routing_routes ORDER BY position") == [
        {"position": 0, "trigger": "robot wake", "target_mode": "agent", "target_agent_id": "ops-bot", "target_session_key": None},
        {"position": 1, "trigger": "hey claw", "target_mode": "session", "target_agent_id": None, "target_session_key": "agent:main:voice"},
        {"position": 2, "trigger": "current please", "target_mode": "current", "target_agent_id": None, "target_session_key": None},
    ]
    tts = query(state, "SELECT * FROM plugin_state_entries WHERE plugin_id = 'speech-core'")
    assert len(tts) == 1
    assert (tts[0]["namespace"], tts[0]["entry_key"], tts[0]["created_at"], tts[0]["expires_at"]) == ("tts-prefs", "default", MTIME, None)
    assert json.loads(tts[0]["value_json"]) == json.loads(originals[TTS])


def test_reimport_replaces_triggers_and_routes(tmp_path: Path):
    state, _ = new_state(tmp_path, {TRIGGERS: {"triggers": ["a", "b", "c"]}, ROUTING: {"routes": [{"trigger": "x", "target": {"mode": "current"}}] * 2}})
    run(state)
    place(state, TRIGGERS, {"triggers": ["z"]}, MTIME + 1)
    place(state, ROUTING, {"defaultTarget": {"sessionKey": "agent:main:main"}, "routes": []}, MTIME + 1)
    assert run(state).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    assert query(state, "SELECT trigger, updated_at_ms FROM voicewake_triggers") == [{"trigger": "z", "updated_at_ms": NOW}]
    assert query(state, "SELECT count(*) AS n FROM voicewake_routing_routes") == [{"n": 0}]
    assert query(state, "SELECT default_target_mode, default_target_session_key FROM voicewake_routing_config") == [
        {"default_target_mode": "session", "default_target_session_key": "agent:main:main"}
    ]


def test_empty_triggers_and_null_tts(tmp_path: Path):
    state, originals = new_state(tmp_path, {TRIGGERS: {"triggers": ["", "  "]}, TTS: "null"})
    report = run(state)
    assert report.status == "completed"
    assert_imported(state, report, TRIGGERS, originals[TRIGGERS], records=0)
    assert any("OpenClaw will use its built-in defaults" in n for n in report.notices)
    assert query(state, "SELECT value_json FROM plugin_state_entries") == [{"value_json": "{}"}]


@pytest.mark.parametrize(
    ("rel", "content", "needle"),
    [
        (TRIGGERS, {"triggers": "wake"}, "$.triggers: expected array"),
        (TRIGGERS, {}, "missing required property"),
        (ROUTING, {"routes": {}}, "$.routes: expected array or null"),
        (TTS, {"tts": "on"}, "$.tts: expected object or null"),
        (TTS, "[]", "expected object or null"),
    ],
)
def test_malformed_file_stays_in_place(tmp_path: Path, rel: str, content, needle: str):
    state, originals = new_state(tmp_path, {rel: content})
    assert_failed_in_place(state, run(state), rel, originals[rel], needle)
