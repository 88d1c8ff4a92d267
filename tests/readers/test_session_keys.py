from __future__ import annotations

import copy
from pathlib import PurePosixPath

import pytest

from statekit.legacy_readers.session_index import _posix_name, canonicalize_key, normalise_entry, select_entries, transcript_name


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


@pytest.mark.parametrize("raw", [
    "/home/u/.openclaw/agents/main/sessions/s-1.jsonl", "s-1.jsonl", "a/b/", "a/b/.", "a/./b", "//x", "/", "//", "///", ".",
    "..", "a/..", "./", "a//b//", "/.", "x/ /", "a\x00b/c", "é/ü.jsonl", "", "...", "a/.../.",
])
def test_the_posix_name_of_a_session_file_is_what_pathlib_says(raw: str) -> None:
    assert _posix_name(raw) == PurePosixPath(raw).name


def test_a_session_file_name_from_posix_and_windows_paths() -> None:
    assert transcript_name({"sessionFile": " /home/u/s/s-1.jsonl ", "sessionId": "x"}) == "s-1.jsonl"
    assert transcript_name({"sessionFile": "C:\\u\\s\\s-2.jsonl", "sessionId": "x"}) == "s-2.jsonl"
    assert transcript_name({"sessionFile": "/home/u/..", "sessionId": " s-3 "}) == "s-3.jsonl"
    assert transcript_name({"sessionFile": "/", "sessionId": "s-4"}) == "s-4.jsonl"


class _Tagged(dict):  # type: ignore[type-arg]
    pass


def test_normalise_entry_copies_the_whole_document() -> None:
    entry = {"sessionId": "s", "skillsSnapshot": {"resolvedSkills": [1], "kept": [{"a": [1.5, None, True]}]},
             "compactionCheckpoints": [{"sessionFile": "f", "preCompaction": {"sessionFile": "g", "n": 1}}],
             "other": _Tagged(x=[1]), "room": "r"}
    before = copy.deepcopy(entry)
    out = normalise_entry(entry)
    assert entry == before  # the parsed entry is not changed
    assert out["skillsSnapshot"] == {"kept": [{"a": [1.5, None, True]}]}
    assert out["compactionCheckpoints"] == [{"preCompaction": {"n": 1}}]
    assert out["groupChannel"] == "r" and "room" not in out
    out["skillsSnapshot"]["kept"][0]["a"].append(2)
    out["other"]["x"].append(2)
    assert entry == before  # nothing is shared with it
    assert type(out["other"]) is _Tagged
