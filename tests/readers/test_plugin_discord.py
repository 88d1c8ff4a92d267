"""Discord plugin files -> plugin_state_entries (plugin ``discord``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from test_plugin_common import T, assert_imported, assert_rejected, fixture_state, read, run, state_rows


def _key(scope: str, ref: str) -> str:
    return f"v1:{hashlib.sha256(scope.encode()).hexdigest()[:32]}:{hashlib.sha256(ref.encode()).hexdigest()[:24]}"


@pytest.fixture()
def migrated(tmp_path: Path):
    state = fixture_state(tmp_path, "discord")
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    return state, run(state), originals


def test_model_picker_preferences(migrated) -> None:
    state, report, originals = migrated
    rel = "discord/model-picker-preferences.json"
    assert_imported(state, report, rel, originals[rel], records=3)
    prefs = state_rows(state, "discord", "model-picker-preferences")
    scope = "guild:111:channel:222:user:333"
    newest = prefs[_key(scope, "openai/gpt-5.1")]
    assert newest["value"] == {"scopeKey": scope, "modelRef": "openai/gpt-5.1", "updatedAt": "2026-11-29T12:00:00.002Z"}
    assert newest["created_at"] == T + 2
    older = prefs[_key(scope, "anthropic/claude-sonnet-4.5")]
    assert older["value"]["updatedAt"] == "2026-11-29T12:00:00.001Z"  # the second most recent model
    assert _key("dm:444", "fakellm/fake-model") in prefs
    assert not any(row["value"]["modelRef"] == "bad-ref" for row in prefs.values())


def test_thread_bindings(migrated) -> None:
    state, report, originals = migrated
    rel = "discord/thread-bindings.json"
    assert_imported(state, report, rel, originals[rel], records=2)
    bindings = state_rows(state, "discord", "thread-bindings")
    current = bindings["default:1300000000000000001"]
    assert current["value"]["targetSessionKey"] == "agent:main:subagent:ab12cd34"
    assert current["value"]["idleTimeoutMs"] == 86_400_000 and current["created_at"] == T
    upgraded = bindings["default:1300000000000000009"]["value"]
    assert upgraded["targetSessionKey"] == "agent:main:acp:legacy"
    assert "sessionKey" not in upgraded and "expiresAt" not in upgraded
    assert upgraded["idleTimeoutMs"] == 0 and upgraded["maxAgeMs"] == 7_200_000


def test_command_deploy_cache_is_dropped(migrated) -> None:
    state, report, originals = migrated
    rel = "discord/command-deploy-cache.json"
    stored = assert_imported(state, report, rel, originals[rel], records=0)
    assert "re-deploys" in stored["dropped"]
    assert state_rows(state, "discord", "command-deploy-hashes") == {}


@pytest.mark.parametrize(
    ("rel", "content", "problem"),
    [
        ("discord/model-picker-preferences.json", '{"entries": {"dm:1": {"recent": "openai/gpt"}}}', "$.entries['dm:1'].recent: expected array"),
        ("discord/thread-bindings.json", '{"version": 1, "bindings": []}', "$.bindings: expected object, found array"),
        ("discord/thread-bindings.json", '{"version": 1, "bindings": {}', "invalid JSON"),
    ],
)
def test_malformed_stays_in_place(tmp_path: Path, rel: str, content: str, problem: str) -> None:
    state = fixture_state(tmp_path, extra={rel: content})
    original = read(state, rel)
    assert_rejected(state, run(state), rel, original, problem)
