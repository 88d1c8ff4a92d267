"""Plugin files statekit leaves in place, and the two small stores it imports exactly as OpenClaw 2026.9.6 does.

* Plugins 9.6 does not bundle (Discord, Matrix, Teams, Feishu, QQ Bot, Nostr, BlueBubbles, iMessage,
  Voice Call, ACPX): every file they own stays byte-exact for the installed plugin's own doctor.
* Memory Core, Memory Wiki, Skill Workshop: 9.6 handles these files itself (its doctor imports Memory
  Core's, keeps the wiki vault's and Skill Workshop's): left in place; compiled caches and locks dropped.
* Device Pair and Active Memory: the rows 9.6's doctor writes (key hashes recomputed here independently).
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

import pytest

from test_plugin_common import NOW_ISO, assert_imported, fixture_state, read, run, state_rows
from helpers import global_db, rows

RETAINED_FAMILIES = ("discord", "matrix", "msteams", "feishu", "qqbot", "nostr", "bluebubbles", "imessage",
                     "voice-call", "acpx", "memory-core", "memory-wiki", "skill-workshop")
DROPPED = {
    "discord/command-deploy-cache.json", "msteams-pending-uploads.json", "feishu/dedup/default.json",
    "qqbot/sessions/session-default.json", "qqbot/data/known-users.json", "qqbot/data/ref-index.jsonl",
    "workspace/memory/.dreams/short-term-promotion.lock", "wiki/main/.openclaw-wiki/cache/agent-digest.json",
}
NOW_MS = int(datetime.fromisoformat(NOW_ISO.replace("Z", "+00:00")).timestamp() * 1000)


def outcome(report, rel: str):
    found = [o for o in report.outcomes if o.rel == rel]
    return found[0] if found else None


def test_plugin_files_are_left_for_their_owner(tmp_path: Path) -> None:
    state = fixture_state(tmp_path, *RETAINED_FAMILIES)
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    assert len(originals) > 25
    report = run(state)
    assert report.exit_code == 0, report.warnings
    retained = 0
    for rel, data in originals.items():
        result = outcome(report, rel)
        if result is not None and result.status == "dropped":
            assert any(rel.endswith(d) for d in DROPPED), rel
            continue
        assert read(state, rel) == data, rel  # byte-exact, in place
        if result is not None:
            assert result.status == "retain", (rel, result.status)
            assert "OpenClaw" in (result.message or ""), rel
            retained += 1
    assert retained > 20
    assert rows(global_db(state), "SELECT count(*) FROM plugin_state_entries") == [(0,)]
    assert rows(global_db(state), "SELECT count(*) FROM plugin_blob_entries") == [(0,)]


def test_device_pair_subscribers_as_openclaw_keys_them(tmp_path: Path) -> None:
    rel = "device-pair-notify.json"
    document = {
        "subscribers": [
            {"to": " 555000111 ", "accountId": "default", "mode": "persistent", "addedAtMs": 1795953600000.9},
            {"to": "-1001234567890", "messageThreadId": "0012", "mode": "once"},
            {"to": "555000111", "accountId": "default", "mode": "once", "addedAtMs": 1},  # same key: the first stays
            {"to": "  "},
        ],
        "notifiedRequestIds": {"req-aaaa": 1795953601000},
    }
    state = fixture_state(tmp_path, extra={rel: json.dumps(document)})
    original = read(state, rel)
    report = run(state)
    stored = assert_imported(state, report, rel, original, records=2)
    assert stored["skipped_invalid"] == 1

    def key(to: str, account: str, thread: str) -> str:
        return hashlib.sha256(json.dumps([to, account, thread], separators=(",", ":")).encode()).hexdigest()

    got = state_rows(state, "device-pair", "notify-subscribers")
    assert {k: (v["value"], v["created_at"], v["expires_at"]) for k, v in got.items()} == {
        key("555000111", "default", ""): ({"to": "555000111", "accountId": "default", "mode": "persistent", "addedAtMs": 1795953600000}, NOW_MS, None),
        key("-1001234567890", "", "12"): ({"to": "-1001234567890", "messageThreadId": "0012", "mode": "once", "addedAtMs": NOW_MS}, NOW_MS, None),
    }


def test_active_memory_only_disabled_sessions(tmp_path: Path) -> None:
    rel = "plugins/active-memory/session-toggles.json"
    document = {"sessions": {"agent:main:main": {"disabled": True, "updatedAt": 1795953600000},
                             "agent:main:x": {"disabled": False, "updatedAt": 2},
                             "agent:main:y": {"disabled": True}}}
    state = fixture_state(tmp_path, extra={rel: json.dumps(document)})
    original = read(state, rel)
    assert_imported(state, run(state), rel, original, records=2)
    got = state_rows(state, "active-memory", "session-toggles")
    sha = lambda text: hashlib.sha256(text.encode()).hexdigest()  # noqa: E731
    assert {k: (v["value"], v["created_at"]) for k, v in got.items()} == {
        sha("agent:main:main"): ({"sessionKey": "agent:main:main", "disabled": True, "updatedAt": 1795953600000}, NOW_MS),
        sha("agent:main:y"): ({"sessionKey": "agent:main:y", "disabled": True, "updatedAt": NOW_MS}, NOW_MS),
    }


@pytest.mark.parametrize("content", [{"toggles": {"agent:main:main": {"enabled": False}}}, {"sessions": {"a": {"disabled": False}}}])
def test_active_memory_file_openclaw_imports_nothing_from_stays(tmp_path: Path, content) -> None:
    rel = "plugins/active-memory/session-toggles.json"
    state = fixture_state(tmp_path, extra={rel: json.dumps(content), "tui/last-session.json": json.dumps({"s": {"sessionKey": "agent:main:main", "updatedAt": 1}})})
    original = read(state, rel)
    report = run(state)
    assert outcome(report, rel).status == "retain" and read(state, rel) == original  # type: ignore[union-attr]
