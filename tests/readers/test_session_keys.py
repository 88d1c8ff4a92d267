from __future__ import annotations

import pytest

from statekit.legacy_readers.session_index import canonicalize_key, normalise_entry, select_entries


@pytest.mark.parametrize(
    ("raw", "agent", "expected"),
    [
        ("main", "main", "agent:main:main"),
        (" MAIN ", "work", "agent:work:main"),
        ("GLOBAL", "main", "global"),
        ("unknown", "work", "unknown"),
        ("agent:main:main", "work", "agent:work:main"),
        ("agent:main:cron:123", "work", "agent:main:cron:123"),
        ("agent:Work:Telegram:Direct:1", "work", "agent:work:telegram:direct:1"),
        ("subagent:ABC", "ops", "agent:ops:subagent:abc"),
        ("group:42", "main", "agent:main:unknown:group:42"),
        ("channel:x", "main", "agent:main:unknown:channel:x"),
        ("telegram:group:-100", "main", "agent:main:telegram:group:-100"),
        ("openresponses-user:7", "main", "agent:main:openresponses-user:7"),
    ],
)
def test_canonicalize(raw: str, agent: str, expected: str) -> None:
    assert canonicalize_key(raw, agent) == expected


def test_configured_main_key() -> None:
    assert canonicalize_key("home", "main", "home") == "agent:main:home"
    assert canonicalize_key("agent:main:home", "work", "home") == "agent:work:home"


def test_collisions_keep_newer_then_canonical() -> None:
    store = {
        "main": {"sessionId": "a", "updatedAt": 5},
        "agent:main:main": {"sessionId": "b", "updatedAt": 5},
        "subagent:x": {"sessionId": "c", "updatedAt": 1},
        "agent:main:subagent:x": {"sessionId": "d", "updatedAt": 9},
    }
    chosen, notices, warnings = select_entries(store, "main", "main")
    assert chosen["agent:main:main"][1]["sessionId"] == "b"
    assert chosen["agent:main:subagent:x"][1]["sessionId"] == "d"
    assert len(notices) == 2 and warnings == []


def test_latest_direct_chat_becomes_main_when_missing() -> None:
    store = {"+15550001": {"sessionId": "old", "updatedAt": 1}, "+15550002": {"sessionId": "new", "updatedAt": 2},
             "group:1": {"sessionId": "g", "updatedAt": 9}}
    chosen, notices, _ = select_entries(store, "main", "main")
    assert chosen["agent:main:main"][1]["sessionId"] == "new"
    assert "agent:main:+15550002" not in chosen and "agent:main:+15550001" in chosen


def test_normalise_strips_file_era_fields() -> None:
    entry = {"sessionId": "s", "updatedAt": 1, "sessionFile": "/home/x/.clawdbot/agents/main/sessions/s.jsonl",
             "room": "#r", "skillsSnapshot": {"prompt": "p", "resolvedSkills": [1]}, "lastProvider": "telegram",
             "compactionCheckpoints": [{"preCompaction": {"sessionId": "p", "sessionFile": "/x/p.jsonl"}, "postCompaction": {"sessionId": "q", "sessionFile": "q.jsonl"}}]}
    out = normalise_entry(entry)
    assert "sessionFile" not in out and out["groupChannel"] == "#r" and "room" not in out
    assert out["skillsSnapshot"] == {"prompt": "p"} and out["lastChannel"] == "telegram" and "lastProvider" not in out
    assert out["compactionCheckpoints"][0]["preCompaction"] == {"sessionId": "p"}
    assert out["compactionCheckpoints"][0]["postCompaction"] == {"sessionId": "q"}
    assert entry["sessionFile"]  # the input is not mutated
