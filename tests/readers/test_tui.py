"""tui/last-session.json -> tui_last_sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import global_db, open_db
from test_devices_harness import (
    MTIME,
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
    assert row["target_table"] == "global.tui_last_sessions" and row["report"]["scopes"] == 2
    assert rows(state, "SELECT * FROM tui_last_sessions ORDER BY scope_key") == [
        {"scope_key": "0f3c5e7a9b1d2f4a6c8e0a2b4d6f8a0c", "session_key": "agent:main:main", "updated_at": 1790001000000},
        {"scope_key": "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d", "session_key": "agent:work:ops-incident-42", "updated_at": 1790001000500},
    ]


def test_newer_pointer_kept_missing_updated_at_takes_mtime(state: Path) -> None:
    place_fixture(state, "tui/last-session.json", REL)
    run(state)
    conn = open_db(global_db(state))
    conn.execute("UPDATE tui_last_sessions SET session_key = 'agent:main:newer', updated_at = 1890000000000 WHERE scope_key LIKE '0f3c%'")
    conn.commit()
    conn.close()
    original = place(state, REL, {"0f3c5e7a9b1d2f4a6c8e0a2b4d6f8a0c": {"sessionKey": "agent:main:older", "updatedAt": 1790001000001},
                                   "ffff": {"sessionKey": " agent:main:x "}})
    report = run(state)
    assert assert_retired(state, report, REL, original)["report"]["kept_newer_database_rows"] == 1
    assert one(state, "SELECT session_key FROM tui_last_sessions WHERE scope_key LIKE '0f3c%'")["session_key"] == "agent:main:newer"
    assert one(state, "SELECT * FROM tui_last_sessions WHERE scope_key = 'ffff'") == {"scope_key": "ffff", "session_key": "agent:main:x", "updated_at": MTIME}


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "$['0f3c5e7a9b1d2f4a6c8e0a2b4d6f8a0c']: missing required property"),
        ({"k": {"sessionKey": "  "}}, "$.k.sessionKey: does not match pattern"),
        ('{"k": {"sessionKey": "a",}}', "invalid JSON"),
    ],
)
def test_malformed_variants(state: Path, content, needle: str) -> None:
    original = place_fixture(state, "tui/last-session-bad.json", REL) if content is None else place(state, REL, content)
    assert_left_in_place(state, run(state), REL, original, needle)
