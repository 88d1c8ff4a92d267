"""Microsoft Teams plugin files -> plugin_state_entries (plugin ``msteams``)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from helpers import global_db, rows
from legacy_readers.base import fingerprint
from test_plugin_common import T, assert_imported, assert_rejected, fixture_state, read, run, state_rows

SSO_TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0.fake-sso-token"


@pytest.fixture()
def migrated(tmp_path: Path):
    state = fixture_state(tmp_path, "msteams")
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    return state, run(state), originals


def test_conversations(migrated) -> None:
    state, report, originals = migrated
    rel = "msteams-conversations.json"
    assert_imported(state, report, rel, originals[rel], records=2)
    conversations = state_rows(state, "msteams", "conversations")
    row = conversations[hashlib.sha256(b"19:abcDEF123@thread.tacv2").hexdigest()]
    assert row["value"]["conversationId"] == "19:abcDEF123@thread.tacv2"
    assert row["value"]["serviceUrl"] == "https://smba.trafficmanager.net/emea/"
    assert row["value"]["conversation"] == {"id": "19:abcDEF123@thread.tacv2", "conversationType": "channel", "tenantId": "tenant-1"}
    assert row["created_at"] == T


def test_polls_and_sso_tokens(migrated) -> None:
    state, report, originals = migrated
    assert_imported(state, report, "msteams-polls.json", originals["msteams-polls.json"], records=1)
    poll = state_rows(state, "msteams", "polls")["poll-1"]
    assert poll["value"]["question"] == "Ship on Friday?" and poll["created_at"] == T
    stored = assert_imported(state, report, "msteams-sso-tokens.json", originals["msteams-sso-tokens.json"], records=1)
    assert state_rows(state, "msteams", "sso-tokens")["aad-1"]["value"]["accessToken"] == SSO_TOKEN
    assert stored["secret_fingerprints"] == [fingerprint(SSO_TOKEN)]
    for text, in rows(global_db(state), "SELECT report_json FROM migration_sources UNION ALL SELECT report_json FROM migration_runs"):
        assert SSO_TOKEN not in text


def test_feedback_learnings(migrated) -> None:
    state, report, originals = migrated
    rel = "agents/main/sessions/agent-main-msteams-direct-29-1user.learnings.json"
    assert_imported(state, report, rel, originals[rel], records=1)
    row = state_rows(state, "msteams", "feedback-learnings")["agent-main-msteams-direct-29-1user"]
    assert row["value"]["learnings"][0]["text"] == "Prefers bullet points"


def test_pending_uploads_are_dropped(migrated) -> None:
    state, report, originals = migrated
    stored = assert_imported(state, report, "msteams-pending-uploads.json", originals["msteams-pending-uploads.json"], records=0)
    assert "upload cache" in stored["dropped"]


@pytest.mark.parametrize(
    ("rel", "content", "problem"),
    [
        ("msteams-conversations.json", '{"version": 2, "conversations": {}}', "$.version: must be 1"),
        ("msteams-polls.json", '{"version": 1, "polls": {"p": 3}}', "$.polls.p: expected object, found integer"),
        ("msteams-sso-tokens.json", '{"version": 1, "tokens": [', "invalid JSON"),
    ],
)
def test_malformed_stays_in_place(tmp_path: Path, rel: str, content: str, problem: str) -> None:
    state = fixture_state(tmp_path, extra={rel: content})
    original = read(state, rel)
    assert_rejected(state, run(state), rel, original, problem)
