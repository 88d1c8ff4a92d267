"""Plugin-state reader machinery (``legacy_readers/plugins/_state.py``) and the shared test harness.

The harness functions below are imported by the other ``test_plugin_*`` modules:
they copy a family's fixture tree (``fixtures/readers/<family>/``, laid out like a
state dir) into ``tmp_path``, run the real apply loop with the clock frozen, and
read rows and receipts back.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from freezegun import freeze_time

from helpers import FIXTURES, global_db, make_state, open_db, rows, run_cli, write_files
from statekit.migrate.apply import MigrateOptions, MigrationReport, migrate
from statekit.errors import ExitCode

NOW_ISO = "2026-11-30T00:00:00Z"
NOW_MS = 1_795_996_800_000
T = 1_795_953_600_000  # 2026-11-29T12:00:00Z, the fixtures' reference time


# --- harness ---------------------------------------------------------------------------


def fixture_state(tmp_path: Path, *families: str, extra: dict[str, Any] | None = None) -> Path:
    state = make_state(tmp_path)
    for family in families:
        shutil.copytree(FIXTURES / "readers" / family, state, dirs_exist_ok=True)
    if extra:
        write_files(state, extra)
    return state


def run(state: Path) -> MigrationReport:
    with freeze_time(NOW_ISO):
        return migrate(state, MigrateOptions(backup=False))


def outcome(report: MigrationReport, rel: str):
    found = [o for o in report.outcomes if o.rel == rel]
    assert len(found) == 1, f"{rel}: {[o.rel for o in report.outcomes]}"
    return found[0]


def state_rows(state: Path, plugin: str, namespace: str) -> dict[str, dict[str, Any]]:
    result = {}
    for key, value, created, expires in rows(
        global_db(state),
        "SELECT entry_key, value_json, created_at, expires_at FROM plugin_state_entries WHERE plugin_id = ? AND namespace = ?",
        (plugin, namespace),
    ):
        result[key] = {"value": json.loads(value), "created_at": created, "expires_at": expires}
    return result


def blob_rows(state: Path, plugin: str, namespace: str) -> dict[str, dict[str, Any]]:
    result = {}
    for key, meta, blob, created, expires in rows(
        global_db(state),
        "SELECT entry_key, metadata_json, blob, created_at, expires_at FROM plugin_blob_entries WHERE plugin_id = ? AND namespace = ?",
        (plugin, namespace),
    ):
        result[key] = {"metadata": json.loads(meta), "blob": bytes(blob), "created_at": created, "expires_at": expires}
    return result


def receipt(state: Path, rel: str) -> dict[str, Any]:
    """The latest receipt of ``rel``."""
    found = rows(global_db(state), "SELECT status, removed_source, report_json, migration_kind FROM migration_sources"
                 " WHERE source_path = ? ORDER BY imported_at DESC, rowid DESC LIMIT 1", (rel,))
    assert found, f"no receipt for {rel}"
    status, removed, report, kind = found[0]
    return {"status": status, "removed": removed, "report": json.loads(report), "kind": kind}


def assert_imported(state: Path, report: MigrationReport, rel: str, original: bytes, records: int | None = None) -> dict[str, Any]:
    """Imported, gone from its place, byte-identical in the retired folder, completed receipt."""
    result = outcome(report, rel)
    assert result.status in ("imported", "dropped"), (result.status, result.message)
    if records is not None:
        assert result.records == records
    assert not (state / rel).exists()
    retired = state / ".statekit" / "migrated" / report.run_id / rel
    assert retired.read_bytes() == original
    stored = receipt(state, rel)
    assert stored["status"] == "completed" and stored["removed"] == 1
    return stored["report"]


def assert_rejected(state: Path, report: MigrationReport, rel: str, original: bytes, problem: str) -> str:
    """Failed source: warning exit, file in place byte-identical, exactly one warning line naming it."""
    assert report.exit_code == ExitCode.WARNINGS
    result = outcome(report, rel)
    assert result.status in ("unreadable", "failed"), result.status
    assert (state / rel).read_bytes() == original
    lines = [w for w in report.warnings if rel in w]
    assert len(lines) == 1, lines
    assert "\n" not in lines[0] and lines[0].startswith(rel) and problem in lines[0], lines[0]
    return lines[0]


def read(state: Path, rel: str) -> bytes:
    return (state / rel).read_bytes()


# --- machinery tests -----------------------------------------------------------------------


OFFSET = "telegram/update-offset-default.json"


def test_reimport_of_changed_file_converges(tmp_path: Path) -> None:
    state = fixture_state(tmp_path, "telegram")
    first = run(state)
    assert outcome(first, OFFSET).status == "imported"
    assert state_rows(state, "telegram", "telegram.update-offsets")["default"]["value"]["lastUpdateId"] == 734501122
    # OpenClaw (an older release still running) writes the file again with a newer offset:
    # it replaces the row, as 9.6's import does for a higher offset of the same bot.
    write_files(state, {OFFSET: {"version": 2, "lastUpdateId": 734509999, "botId": "6012345678"}})
    second = run(state)
    assert outcome(second, OFFSET).status == "imported"
    row = state_rows(state, "telegram", "telegram.update-offsets")["default"]
    assert row["value"] == {"version": 2, "lastUpdateId": 734509999, "botId": "6012345678", "tokenFingerprint": None}
    assert len(rows(global_db(state), "SELECT 1 FROM plugin_state_entries WHERE namespace = 'telegram.update-offsets'")) == 1
    # a lower offset (an older copy) never replaces it
    write_files(state, {OFFSET: {"version": 2, "lastUpdateId": 5, "botId": "6012345678"}})
    assert outcome(run(state), OFFSET).status == "imported"
    assert state_rows(state, "telegram", "telegram.update-offsets")["default"]["value"]["lastUpdateId"] == 734509999
    # A rerun on the migrated dir changes nothing.
    before = rows(global_db(state), "SELECT * FROM plugin_state_entries ORDER BY 1, 2, 3")
    third = run(state)
    assert third.status == "nothing-to-do"
    assert rows(global_db(state), "SELECT * FROM plugin_state_entries ORDER BY 1, 2, 3") == before


def test_existing_row_is_kept(tmp_path: Path) -> None:
    """A key the runtime already holds is not overwritten by a legacy file (9.6 registers only absent keys)."""
    import hashlib
    import os

    state = fixture_state(tmp_path, "telegram")
    run(state)  # creates the database
    db = global_db(state)
    store = os.path.join(os.path.abspath(state), "agents", "main", "sessions", "sessions.json")
    namespace = "telegram.topic-name-cache." + hashlib.sha256(store.encode()).hexdigest()[:16]
    conn = open_db(db)
    conn.execute(
        "INSERT INTO plugin_state_entries VALUES ('telegram', ?, '-1001234567890:12', '{\"name\":\"Renamed\",\"updatedAt\":1795999999999}', 1795999999999, NULL)"
        " ON CONFLICT DO UPDATE SET value_json = excluded.value_json, created_at = excluded.created_at", (namespace,)
    )
    conn.commit()
    conn.close()
    rel = "agents/main/sessions/sessions.json.telegram-topic-names.json"
    write_files(state, {rel: {"-1001234567890:12": {"name": "Deployments", "updatedAt": T}, "-1001234567890:99": {"name": "New", "updatedAt": T}}})
    report = run(state)
    result = outcome(report, rel)
    assert result.status in ("imported", "dropped")
    topics = state_rows(state, "telegram", namespace)
    assert topics["-1001234567890:12"]["value"]["name"] == "Renamed"
    assert topics["-1001234567890:99"]["value"]["name"] == "New"
    assert receipt(state, rel)["report"]["kept_newer_existing"] == 1
    assert any("already in SQLite" in n for n in result.notices)


def test_foreign_table_without_columns_is_refused_cleanly(tmp_path: Path) -> None:
    """An existing plugin_state_entries of another shape: SchemaError per source, file left in place."""

    state = fixture_state(tmp_path, "telegram")
    (state / "state").mkdir()
    conn = open_db(state / "state" / "openclaw.sqlite")
    conn.execute("CREATE TABLE plugin_state_entries (plugin_id TEXT, namespace TEXT, entry_key TEXT, value TEXT, PRIMARY KEY (plugin_id, namespace, entry_key))")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    rel = "telegram/sticker-cache.json"
    original = read(state, rel)
    report = run(state)
    line = assert_rejected(state, report, rel, original, "lacks column")
    assert "value_json" in line


def test_cli_exit_code_and_single_line(tmp_path: Path) -> None:
    state = make_state(tmp_path, {OFFSET: {"version": 2, "lastUpdateId": "734501122"}})
    original = read(state, OFFSET)
    proc = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert proc.returncode == 3
    assert read(state, OFFSET) == original
    lines = [ln for ln in proc.stderr.splitlines() if OFFSET in ln]
    assert lines == [f"statekit: warning: {OFFSET}: $.lastUpdateId: expected integer or null, found string"]


def test_describe_names_plugin_and_namespaces() -> None:
    from statekit import legacy_readers

    described = legacy_readers.by_kind("telegram-sticker-cache").describe()
    assert described["plugin_id"] == "telegram"
    assert described["namespaces"] == ["telegram.sticker-cache"]
    assert described["target_tables"] == ["global.plugin_state_entries"]
