"""credentials/<channel>[-<account>]-allowFrom.json and credentials/<channel>-pairing.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from small_store_harness import MTIME, assert_failed_in_place, assert_imported, new_state, place, query, report_json, run
from helpers import CORPUS, FIXTURES, corpus_or_skip, global_db, open_db
from statekit.legacy_readers import reader_for
from statekit.legacy_readers.channel_pairing import split_allow_name

FIX = FIXTURES / "readers" / "channel-pairing"
PAIRING = "credentials/telegram-pairing.json"


def test_claims():
    assert reader_for("credentials/telegram-allowFrom.json").kind == "channel-allow-from"
    assert reader_for("credentials/feishu-main-allowFrom.json").kind == "channel-allow-from"
    assert reader_for(PAIRING).kind == "channel-pairing-requests"


def test_file_name_split():
    assert split_allow_name("telegram") == ("telegram", "default")
    assert split_allow_name("feishu-main") == ("feishu", "main")
    assert split_allow_name("nextcloud-talk") == ("nextcloud-talk", "default")
    assert split_allow_name("nextcloud-talk-Work") == ("nextcloud-talk", "work")
    assert split_allow_name("mychan-acct-2") == ("mychan", "acct-2")
    assert split_allow_name("my-chan-acct", {"my-chan"}) == ("my-chan", "acct")


def test_allow_lists_merge_into_the_account(tmp_path: Path):
    files = {
        "credentials/telegram-allowFrom.json": {"version": 1, "allowFrom": [" 123 ", "*", "456", "123", ""]},
        "credentials/telegram-default-allowFrom.json": {"version": 1, "allowFrom": ["789", "456"]},
        "credentials/telegram-ops-allowFrom.json": [111, "222"],
        "credentials/oauth-unrelated.txt": "not ours",
    }
    state, originals = new_state(tmp_path, files)
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, "credentials/telegram-allowFrom.json", originals["credentials/telegram-allowFrom.json"], records=2)
    assert_imported(state, report, "credentials/telegram-default-allowFrom.json", originals["credentials/telegram-default-allowFrom.json"], records=2)
    assert_imported(state, report, "credentials/telegram-ops-allowFrom.json", originals["credentials/telegram-ops-allowFrom.json"], records=2)
    assert query(state, "SELECT * FROM channel_pairing_allow_entries ORDER BY account_id, sort_order") == [
        {"channel_key": "telegram", "account_id": "default", "entry": "123", "sort_order": 0, "updated_at": MTIME},
        {"channel_key": "telegram", "account_id": "default", "entry": "456", "sort_order": 1, "updated_at": MTIME},
        {"channel_key": "telegram", "account_id": "default", "entry": "789", "sort_order": 2, "updated_at": MTIME},
        {"channel_key": "telegram", "account_id": "ops", "entry": "111", "sort_order": 0, "updated_at": MTIME},
        {"channel_key": "telegram", "account_id": "ops", "entry": "222", "sort_order": 1, "updated_at": MTIME},
    ]
    assert (state / "credentials" / "oauth-unrelated.txt").exists()
    # the entry as a value of its own: a run id or digest of the report may hold the digits "789" by chance
    assert re.search(r"(?<![0-9A-Za-z])789(?![0-9A-Za-z])", report_json(report)) is None


def test_reimport_is_idempotent(tmp_path: Path):
    state, _ = new_state(tmp_path, {"credentials/slack-allowFrom.json": {"allowFrom": ["U1", "U2"]}})
    run(state)
    place(state, "credentials/slack-allowFrom.json", {"allowFrom": ["U2", "U1", "U3"]}, MTIME + 1)
    assert run(state).status == "warning"  # the file came back after its migration: warned (issue 11 item 5)
    assert [(r["entry"], r["sort_order"]) for r in query(state, "SELECT entry, sort_order FROM channel_pairing_allow_entries ORDER BY sort_order")] == [
        ("U1", 0), ("U2", 1), ("U3", 2)]  # fmt: skip


def test_pairing_requests_round_trip(tmp_path: Path):
    state, originals = new_state(tmp_path, {PAIRING: (FIX / "telegram-pairing.json").read_bytes()})
    report = run(state)
    assert report.exit_code == 3 and any("requests[2] lacks an id, a code or valid ISO times; skipped" in w for w in report.warnings)
    assert_imported(state, report, PAIRING, originals[PAIRING], records=2)
    assert query(state, "SELECT * FROM channel_pairing_requests ORDER BY request_id") == [
        # ISO-8601 text, as OpenClaw 2026.9.6 stores these TEXT columns; lastSeenAt defaults to createdAt.
        {"channel_key": "telegram", "account_id": "default", "request_id": "111", "code": "WXYZ6789", "created_at": "2026-03-06T11:00:00.000Z",
         "last_seen_at": "2026-03-06T11:00:00.000Z", "meta_json": None},
        {"channel_key": "telegram", "account_id": "ops", "request_id": "987654321", "code": "ABCD2345", "created_at": "2026-03-06T10:00:00.000Z",
         "last_seen_at": "2026-03-06T10:05:00.000Z",
         "meta_json": '{"username":"alice","accountId":"Ops"}'},
    ]  # fmt: skip
    printed = report_json(report) + json.dumps(query(state, "SELECT report_json FROM migration_sources"))
    assert "ABCD2345" not in printed and "WXYZ6789" not in printed


def test_pairing_requests_replace_and_openclaw_text_times(tmp_path: Path):
    state, originals = new_state(tmp_path, {PAIRING: {"version": 1, "requests": [{"id": "1", "code": "C1", "createdAt": "2026-03-06T10:00:00.000Z"}]}})
    db = global_db(state)
    db.parent.mkdir(parents=True)
    conn = open_db(db)
    conn.execute(
        "CREATE TABLE channel_pairing_requests (channel_key TEXT NOT NULL, account_id TEXT NOT NULL, request_id TEXT NOT NULL, code TEXT NOT NULL,"
        " created_at TEXT NOT NULL, last_seen_at TEXT NOT NULL, meta_json TEXT, PRIMARY KEY (channel_key, account_id, request_id))"
    )
    conn.execute("INSERT INTO channel_pairing_requests VALUES ('telegram','default','old','C0','2026-01-01T00:00:00.000Z','2026-01-01T00:00:00.000Z',NULL)")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    report = run(state)
    assert_imported(state, report, PAIRING, originals[PAIRING])
    assert query(state, "SELECT request_id, created_at, last_seen_at FROM channel_pairing_requests") == [
        {"request_id": "1", "created_at": "2026-03-06T10:00:00.000Z", "last_seen_at": "2026-03-06T10:00:00.000Z"}
    ]


@pytest.mark.parametrize(
    ("rel", "content", "needle"),
    [
        ("credentials/telegram-allowFrom.json", {"allowFrom": [{"id": 1}]}, "matches none of the allowed shapes"),
        ("credentials/telegram-allowFrom.json", {"version": 1}, "matches none of the allowed shapes"),
        (PAIRING, {"version": 1, "requests": {}}, "$.requests: expected array"),
        (PAIRING, b'{"requests": [{"code": "SECRETCODE"', "invalid JSON"),
    ],
)
def test_malformed_file_stays_in_place(tmp_path: Path, rel: str, content, needle: str):
    state, originals = new_state(tmp_path, {rel: content})
    report = run(state)
    message = assert_failed_in_place(state, report, rel, originals[rel], needle)
    assert "SECRETCODE" not in message


@pytest.mark.corpus
def test_real_feishu_allow_list(tmp_path: Path):
    corpus = corpus_or_skip()
    src = corpus / "public-repos" / "Jeremy-J-J__.openclaw" / "credentials" / "feishu-main-allowFrom.json"
    if not src.exists():
        pytest.skip("Jeremy-J-J__.openclaw allow-list not in this corpus")
    rel = "credentials/feishu-main-allowFrom.json"
    state, originals = new_state(tmp_path, {rel: src.read_bytes()})
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, rel, originals[rel], records=1)
    doc = json.loads(src.read_text())
    assert query(state, "SELECT channel_key, account_id, entry, sort_order FROM channel_pairing_allow_entries") == [
        {"channel_key": "feishu", "account_id": "main", "entry": doc["allowFrom"][0].strip(), "sort_order": 0}
    ]
    assert CORPUS.is_dir()


@pytest.mark.parametrize("rel", ["credentials/-allowFrom.json", "credentials/-pairing.json"])
def test_file_name_without_channel_stays_in_place(tmp_path: Path, rel: str):
    content = {"allowFrom": ["1"]} if rel.endswith("allowFrom.json") else {"requests": []}
    state, originals = new_state(tmp_path, {rel: content})
    assert_failed_in_place(state, run(state), rel, originals[rel], "the file name names no channel")
