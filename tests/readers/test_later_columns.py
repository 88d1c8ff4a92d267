"""Columns statekit adds to a v1 table only for a value: exactly the ones OpenClaw 2026.9.6's upgrade adds or reads.

The registry (``legacy_readers._later_columns``) is checked against the real
release's compiled schema-migration code when OpenClaw 2026.9.6 is installed
(``$OPENCLAW_INTEROP_CACHE``, default ``~/.cache/statekit-interop``); without
it those checks skip with one reason.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from statekit.legacy_readers._later_columns import later_columns_of
from statekit.legacy_readers.writer import DatabaseWriter
from statekit.schema import LATER_COLUMNS, open_global
from helpers import open_db


def _release_dist() -> Path:
    cache = Path(os.environ.get("OPENCLAW_INTEROP_CACHE", Path.home() / ".cache" / "statekit-interop"))
    dist = cache / "openclaw-2026.9.6" / "node_modules" / "openclaw" / "dist"
    if not dist.is_dir():
        pytest.skip(f"OpenClaw 2026.9.6 is not installed under {cache}")
    return dist


def _release_source(dist: Path, needle: str) -> str:
    for path in sorted(dist.glob("openclaw-state-db-read-connection-*.mjs")):
        text = path.read_text(encoding="utf-8")
        if needle in text:
            return text
    pytest.skip(f"no schema-migration module of 2026.9.6 holds {needle!r}")


def test_each_later_column_is_one_the_release_adds_or_reads() -> None:
    dist = _release_dist()
    source = _release_source(dist, "ORDERED_STARTUP_ADDITIVE_STATE_COLUMNS")
    block = source[source.index("cronRunLogs: ["): source.index("acpReplay: [")]
    additive = set(re.findall(r'\["([a-z_]+)", "([a-z_]+) ([A-Z]+)"\]', block))
    fold_in = source[source.index("function migrateSingletonStateFoldInV12"):]
    for (table, column), declared in LATER_COLUMNS.items():
        if table == "node_host_config":
            assert f"nodeHost.{column}" in fold_in, column  # read by the v12 fold-in when the column exists
        else:
            assert (table, column, declared) in additive, (table, column)
    # The v1 node-pairing tables are dropped unread: they are no home for node data.
    assert "DROP TABLE IF EXISTS node_pairing_pending; DROP TABLE IF EXISTS node_pairing_paired;" in source


def test_no_later_column_exists_in_the_canonical_v1_tables(tmp_path: Path) -> None:
    conn, _ = open_global(tmp_path)
    try:
        for table, column in LATER_COLUMNS:
            assert column not in {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}, (table, column)
    finally:
        conn.close()


def test_added_as_the_release_adds_it_and_only_for_a_value(tmp_path: Path) -> None:
    conn, _ = open_global(tmp_path)
    try:
        db = DatabaseWriter(conn, "global")
        before = [r[1] for r in conn.execute("PRAGMA table_info(apns_registrations)")]
        assert db.fit_later("apns_registrations", {"node_id": "n", "relay_origin": None}) == {"node_id": "n"}
        assert [r[1] for r in conn.execute("PRAGMA table_info(apns_registrations)")] == before
        assert db.fit_later("apns_registrations", {"node_id": "n", "relay_origin": "https://r"}) == {
            "node_id": "n", "relay_origin": "https://r"}  # fmt: skip
        added = list(conn.execute("PRAGMA table_info(apns_registrations)"))[-1]
        assert (added[1], added[2], added[3], added[4]) == ("relay_origin", "TEXT", 0, None)
        assert db.add_later_column("apns_registrations", "relay_origin") is False  # already there: left as it is
        with pytest.raises(KeyError):
            db.add_later_column("apns_registrations", "invented_column")
        assert later_columns_of("device_pairing_pending") == ["refreshed_at_ms", "browser_origin"]
    finally:
        conn.close()
    assert open_db(tmp_path / "state" / "openclaw.sqlite").execute("PRAGMA integrity_check").fetchone() == ("ok",)
