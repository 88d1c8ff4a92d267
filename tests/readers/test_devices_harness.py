"""Shared harness for the small global-store reader tests (devices, nodes, identity, exec
approvals, push, node host, update check, config health, TUI, gateway files), plus tests of
the helpers those readers share (``legacy_readers.devices``).

Every round trip goes through the real apply loop: ``migrate.apply.migrate`` on a state dir
built in ``tmp_path``, then rows, retirement (byte-exact copy under
``.statekit/migrated/<run_id>/<rel>``) and the ``migration_sources`` receipt are checked.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from helpers import FIXTURES, corpus_or_skip, global_db, make_state, open_db, write_files, named_row
from statekit.documents import validate_hiding_keys
from statekit.legacy_readers.writer import DatabaseWriter
from statekit.values import iso_to_ms
from statekit.migrate.apply import MigrateOptions, MigrationReport, migrate
from statekit.errors import SchemaError, SourceError
from statekit.schema import open_global

READER_FIXTURES = FIXTURES / "readers"
MTIME = 1_790_000_050_000  # pinned mtime (ms) of placed files


def fixture(name: str) -> bytes:
    return (READER_FIXTURES / name).read_bytes()


def place(state: Path, rel: str, content: Any, mtime_ms: int = MTIME) -> bytes:
    """Write ``content`` (bytes, str, or JSON-able) at ``rel``; pin its mtime; return the bytes."""
    if not isinstance(content, (bytes, str)):
        content = json.dumps(content, indent=2)
    write_files(state, {rel: content})
    path = state / rel
    os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return path.read_bytes()


def place_fixture(state: Path, name: str, rel: str, mtime_ms: int = MTIME) -> bytes:
    return place(state, rel, fixture(name), mtime_ms)


def corpus_files(tree: str, rels: list[str], dest: Path) -> Path:
    """Only ``rels`` of one corpus tree, copied byte-exact (mtimes kept) into a fresh state dir."""
    corpus = corpus_or_skip()
    state = make_state(dest)
    tar = corpus / "generated" / f"{tree}.tar"
    if tar.exists():
        with tarfile.open(tar) as archive:
            for rel in rels:
                member = archive.getmember(f"home/.openclaw/{rel}")
                target = state / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.extractfile(member).read())  # type: ignore[union-attr]
                os.utime(target, (member.mtime, member.mtime))
        return state
    source = corpus / "public-repos" / tree
    if not source.is_dir():
        pytest.skip(f"corpus tree {tree} not found")
    for rel in rels:
        target = state / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / rel, target)
    return state


def run(state: Path) -> MigrationReport:
    return migrate(state, MigrateOptions(backup=False))


def rows(state: Path, sql: str, params: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    conn = open_db(global_db(state), "ro")
    conn.row_trace = named_row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def one(state: Path, sql: str, params: tuple[Any, ...] = ()) -> dict[str, Any]:
    found = rows(state, sql, params)
    assert len(found) == 1, (sql, params, found)
    return found[0]


def receipt(state: Path, rel: str) -> dict[str, Any]:
    found = rows(state, "SELECT * FROM migration_sources WHERE source_path = ? ORDER BY imported_at DESC", (rel,))
    assert found, f"no receipt for {rel}"
    row = found[0]
    row["report"] = json.loads(row["report_json"])
    return row


def outcome(report: MigrationReport, rel: str):
    matches = [o for o in report.outcomes if o.rel == rel]
    assert len(matches) == 1, [o.to_json() for o in report.outcomes]
    return matches[0]


def assert_retired(state: Path, report: MigrationReport, rel: str, original: bytes) -> dict[str, Any]:
    """Imported, gone from its place, byte-identical under .statekit/migrated/<run_id>/, completed receipt."""
    result = outcome(report, rel)
    assert result.status in ("imported", "dropped"), result.to_json()
    assert not (state / rel).exists()
    retired = state / ".statekit" / "migrated" / str(report.run_id) / rel
    assert retired.read_bytes() == original
    assert result.retired_to == f".statekit/migrated/{report.run_id}/{rel}"
    row = receipt(state, rel)
    assert row["status"] == "completed" and row["removed_source"] == 1
    return row


def assert_left_in_place(state: Path, report: MigrationReport, rel: str, original: bytes, *needles: str) -> str:
    """Exit 3, the file untouched, one line that names the file (and the needles)."""
    assert report.exit_code == 3, report.to_json()
    assert (state / rel).read_bytes() == original
    result = outcome(report, rel)
    assert result.status in ("unreadable", "failed"), result.to_json()
    message = result.message or ""
    assert "\n" not in message and message.startswith(rel), message
    for needle in needles:
        assert needle in message, message
    assert any(w == message for w in report.warnings), report.warnings
    return message


def assert_secrets_absent(state: Path, report: MigrationReport, secrets: list[str], streams: str = "") -> None:
    """No secret in the run report, the receipts, the run row or captured output."""
    texts = [json.dumps(report.to_json()), streams]
    texts += [r["report_json"] for r in rows(state, "SELECT report_json FROM migration_sources")]
    texts += [r["report_json"] for r in rows(state, "SELECT report_json FROM migration_runs")]
    for secret in secrets:
        for text in texts:
            assert secret not in text


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return make_state(tmp_path)


# --- the shared helpers -------------------------------------------------------------------


def test_iso_to_ms() -> None:
    assert iso_to_ms("2026-11-29T23:57:36.884Z") == 1795996656884
    assert iso_to_ms("2026-11-29T23:57:36+00:00") == 1795996656000
    assert iso_to_ms("2026-11-29T23:57:36") == 1795996656000  # no zone: UTC
    assert iso_to_ms("last tuesday") is None


def test_validate_hiding_keys_numbers_entries_and_never_names_a_key() -> None:
    secret = "test-secret-token-as-key-0001"
    document = {"a-fine-key": {"profile": {"roles": []}}, secret: {"profile": {"roles": "node"}}}
    with pytest.raises(SourceError) as exc:
        validate_hiding_keys(document, "devices-bootstrap", "devices/bootstrap.json")
    message = str(exc.value)
    assert message == "devices/bootstrap.json: entry #2.profile.roles: expected array, found string"
    assert secret not in message


def test_upsert_skips_absent_optional_columns_of_a_foreign_table() -> None:
    conn = open_db(":memory:")
    conn.execute("CREATE TABLE t (k TEXT PRIMARY KEY, a TEXT, b TEXT)")
    db = DatabaseWriter(conn, "global")
    db.upsert("t", {"k": "1", "a": "x", "extra": None}, ("k",), optional=("extra",))
    assert conn.execute("SELECT * FROM t").fetchall() == [("1", "x", None)]
    # With a value the column is kept, and upsert refuses the table rather than drop data.
    with pytest.raises(SchemaError, match="lacks column"):
        db.upsert("t", {"k": "2", "extra": "value"}, ("k",), optional=("extra",))
    with pytest.raises(SchemaError, match="does not exist"):
        db.upsert("missing", {"k": "1"}, ("k",))
    db.upsert("t", {"k": "1", "a": "y"}, ("k",))
    assert conn.execute("SELECT a FROM t").fetchone() == ("y",)


def test_upsert_adds_a_later_column_only_for_a_value(tmp_path: Path) -> None:
    """A column 2026.9.6 adds to a v1 table on its upgrade: added (as it adds it) when a value needs it, else left out."""
    conn, _ = open_global(tmp_path)
    before = [r[1] for r in conn.execute("PRAGMA table_info(device_pairing_pending)")]
    db = DatabaseWriter(conn, "global")
    row = {"request_id": "r1", "device_id": "d", "public_key": "k", "ts": 1, "refreshed_at_ms": None, "browser_origin": None}
    db.upsert("device_pairing_pending", row, ("request_id",))
    assert [r[1] for r in conn.execute("PRAGMA table_info(device_pairing_pending)")] == before  # still the exact v1 table
    db.upsert("device_pairing_pending", row | {"request_id": "r2", "refreshed_at_ms": 5}, ("request_id",), update=["ts", "refreshed_at_ms"])
    info = list(conn.execute("PRAGMA table_info(device_pairing_pending)"))
    assert [r[1] for r in info] == before + ["refreshed_at_ms"]
    assert (info[-1][2], info[-1][3], info[-1][4]) == ("INTEGER", 0, None)  # 2026.9.6's definition: nullable, no default
    assert conn.execute("SELECT request_id, refreshed_at_ms FROM device_pairing_pending ORDER BY request_id").fetchall() == [("r1", None), ("r2", 5)]
    conn.close()


# --- every family into an OpenClaw 2026.7 global database (foreign, NOT NULL-heavy tables) --------

FOREIGN_CASES = [
    ("devices/pending.json", "devices/pending.json", "device_pairing_pending", 2),
    ("devices/paired.json", "devices/paired.json", "device_pairing_paired", 2),
    ("devices/bootstrap.json", "devices/bootstrap.json", "device_bootstrap_tokens", 2),
    ("identity/device-raw.json", "identity/device.json", "device_identities", 1),
    ("identity/device-auth.json", "identity/device-auth.json", "device_auth_tokens", 2),
    ("exec-approvals/exec-approvals.json", "exec-approvals.json", "exec_approvals_config", 1),
    ("push/web-push-subscriptions.json", "push/web-push-subscriptions.json", "web_push_subscriptions", 2),
    ("push/vapid-keys.json", "push/vapid-keys.json", "web_push_vapid_keys", 1),
    ("push/apns-registrations.json", "push/apns-registrations.json", "apns_registrations", 3),
    ("node-host/node.json", "node.json", "node_host_config", 1),
    ("tui/last-session.json", "tui/last-session.json", "config_machine_state", 2),
    ("gateway/gateway-instance-id", "gateway-instance-id", "plugin_state_entries", 1),
    ("gateway/restart-sentinel.json", "restart-sentinel.json", "gateway_restart_sentinel", 1),
]


@pytest.mark.corpus
def test_corpus_2026_7_foreign_tables_accept_every_family(tmp_path: Path) -> None:
    """A hybrid-era database written by 2026.7.35 (the canonical v1 tables, NOT NULL columns): every family fills them,
    and a node surface gets the column 2026.9.6 would add to that table itself."""
    state = corpus_files("legacy-2026.7.35-std", ["state/openclaw.sqlite"], tmp_path)
    originals = {rel: place_fixture(state, name, rel) for name, rel, _, _ in FOREIGN_CASES}
    nodes = place_fixture(state, "nodes/paired.json", "nodes/paired.json")
    report = run(state)
    assert report.exit_code == 0, report.to_json()
    for _, rel, table, count in FOREIGN_CASES:
        assert_retired(state, report, rel, originals[rel])
        assert len(rows(state, f'SELECT * FROM "{table}"')) >= count, table
    assert_retired(state, report, "nodes/paired.json", nodes)
    surfaces = rows(state, "SELECT device_id FROM device_pairing_paired WHERE node_surface_json IS NOT NULL")
    assert surfaces == [{"device_id": "39f713d0a644253f04529421b9f51b9b08979d08295959c4f3990ee617f5139f"}]
