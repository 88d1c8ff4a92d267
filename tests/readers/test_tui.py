"""tui/last-session.json -> config_machine_state 'tui.lastSession.<scope>' rows (where OpenClaw 2026.9.6 keeps them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from statekit.errors import shown_key

from helpers import global_db, open_db
from test_devices_harness import (
    assert_left_in_place,
    assert_retired,
    one,
    place,
    place_fixture,
    rows,
    run,
    state,  # noqa: F401  (fixture)
)

REL = "tui/last-session.json"


def test_round_trip(state: Path) -> None:
    original = place_fixture(state, "tui/last-session.json", REL)
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    row = assert_retired(state, report, REL, original)
    assert row["target_table"] == "global.config_machine_state" and row["report"]["scopes"] == 2
    assert rows(state, "SELECT * FROM config_machine_state WHERE state_key LIKE 'tui.%' ORDER BY state_key") == [
        {"state_key": "tui.lastSession.0f3c5e7a9b1d2f4a6c8e0a2b4d6f8a0c", "value_json": '"agent:main:main"', "updated_at_ms": 1790001000000},
        {"state_key": "tui.lastSession.1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d", "value_json": '"agent:work:ops-incident-42"', "updated_at_ms": 1790001000500},
    ]
    # version 1's table is not used: 9.6's upgrade drops it without its rows
    assert rows(state, "SELECT * FROM tui_last_sessions") == []


def test_newer_database_pointer_kept_heartbeat_discarded(state: Path) -> None:
    place_fixture(state, "tui/last-session.json", REL)
    run(state)
    conn = open_db(global_db(state))
    conn.execute("UPDATE config_machine_state SET value_json = '\"agent:main:newer\"', updated_at_ms = 1890000000000 WHERE state_key LIKE 'tui.lastSession.0f3c%'")
    conn.commit()
    conn.close()
    original = place(state, REL, {
        "0f3c5e7a9b1d2f4a6c8e0a2b4d6f8a0c": {"sessionKey": "agent:main:older", "updatedAt": 1790001000001},
        "ffff": {"sessionKey": "agent:main:x\u00e9", "updatedAt": 5.0},
        "beat": {"sessionKey": "agent:main:main:HEARTBEAT", "updatedAt": 7},
    })
    report = run(state)
    retired = assert_retired(state, report, REL, original)["report"]
    assert retired["kept_newer_database_rows"] == 1 and retired["discarded_heartbeat"] == 1
    assert one(state, "SELECT value_json FROM config_machine_state WHERE state_key LIKE 'tui.lastSession.0f3c%'")["value_json"] == '"agent:main:newer"'
    assert one(state, "SELECT * FROM config_machine_state WHERE state_key = 'tui.lastSession.ffff'") == {
        "state_key": "tui.lastSession.ffff", "value_json": '"agent:main:x\u00e9"', "updated_at_ms": 5}
    assert rows(state, "SELECT * FROM config_machine_state WHERE state_key = 'tui.lastSession.beat'") == []


def test_same_timestamp_conflict_leaves_file(state: Path) -> None:
    place_fixture(state, "tui/last-session.json", REL)
    run(state)
    original = place(state, REL, {"0f3c5e7a9b1d2f4a6c8e0a2b4d6f8a0c": {"sessionKey": "agent:main:other", "updatedAt": 1790001000000}})
    assert_left_in_place(state, run(state), REL, original, "points elsewhere in the database at the same timestamp")


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        # a 32-hex key is indistinguishable from a token: the path shows it as a fingerprint (issue 11 item 9)
        (None, f"$[{shown_key('0f3c5e7a9b1d2f4a6c8e0a2b4d6f8a0c')}]: missing required property 'sessionKey'"),
        ({"k": {"sessionKey": "a"}}, "missing required property 'updatedAt'"),
        ({"k": {"sessionKey": "a", "updatedAt": 1.5}}, "$.k.updatedAt: expected integer"),
        ({"k": {"sessionKey": "a", "updatedAt": -1}}, "$.k.updatedAt: must satisfy minimum"),
        ({"k": {"sessionKey": "a", "updatedAt": 1, "label": "x"}}, "has properties that are not allowed"),
        ({"k": {"sessionKey": " a", "updatedAt": 1}}, "sessionKey is not a trimmed non-empty session key"),
        ({"k": {"sessionKey": "unknown", "updatedAt": 1}}, "sessionKey is not a trimmed non-empty session key"),
        ({" k": {"sessionKey": "a", "updatedAt": 1}}, "scope key is empty or has surrounding whitespace"),
        ('{"k": {"sessionKey": "a",}}', "invalid JSON"),
    ],
)
def test_files_openclaw_refuses_stay_in_place(state: Path, content, needle: str) -> None:
    original = place_fixture(state, "tui/last-session-bad.json", REL) if content is None else place(state, REL, content)
    assert_left_in_place(state, run(state), REL, original, needle)
