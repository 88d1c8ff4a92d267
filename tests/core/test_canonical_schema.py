"""statekit's schema data against what real OpenClaw releases wrote (docs/schema.md).

The release parts of statekit/schema/global.sql and agent.sql must create
exactly the tables, indexes and triggers OpenClaw 2026.7.35 (the last release
writing schema version 1) left in the databases of the corpus tree it wrote;
the session part must hold only unique indexes OpenClaw 2026.9.6 knows
(9.6 refuses any other). Skipped without ../shared/corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import extract_corpus_tree, open_db
from scripts.canonical_schema import release_statements
from statekit.schema import _split_sql, declared_tables
from importlib import resources
from statekit.db import Connection

HYBRID = "legacy-2026.7.35-std"


def _objects(conn: Connection) -> dict[tuple[str, str], tuple[str, str]]:
    """(type, name) -> (table, sql) of every user schema object."""
    return {
        (kind, name): (table, sql)
        for kind, name, table, sql in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'")
    }


def _created(role: str) -> Connection:
    conn = open_db(":memory:")
    conn.executescript(resources.files("statekit.schema").joinpath(f"{role}.sql").read_text(encoding="utf-8"))
    return conn


@pytest.fixture(scope="module")
def release_dbs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    state = extract_corpus_tree(HYBRID, tmp_path_factory.mktemp("release"))
    return {"global": state / "state/openclaw.sqlite", "agent": state / "agents/main/agent/openclaw-agent.sqlite"}


@pytest.mark.parametrize("role", ["global", "agent"])
def test_release_part_is_exactly_what_the_release_wrote(release_dbs: dict[str, Path], role: str) -> None:
    release = open_db(release_dbs[role], "ro", immutable=True)
    written = _objects(release)
    ours = _objects(_created(role))
    ours_release = {k: v for k, v in ours.items() if v[0] in {t for _, (t, _) in written.items()}}
    assert ours_release == written
    # statekit's file holds the release's statements verbatim, in the release's order
    text = resources.files("statekit.schema").joinpath(f"{role}.sql").read_text(encoding="utf-8")
    statements = [s + ";" for s in _split_sql(text)]
    release_text = release_statements(release_dbs[role])
    assert [s for s in statements if s in release_text] == release_text


# Beyond version 1, exactly 9.6's definition (docs/schema.md, "Part 2"): its upgrade keeps the table and its rows.
OPENCLAW_96_GLOBAL_TABLES = {
    "config_machine_state": "CREATE TABLE config_machine_state ( state_key TEXT NOT NULL PRIMARY KEY, value_json TEXT NOT NULL,"
    " updated_at_ms INTEGER NOT NULL ) STRICT",
    "agent_deletion_journal": "CREATE TABLE agent_deletion_journal ( agent_id TEXT PRIMARY KEY, operation_id TEXT NOT NULL DEFAULT '',"
    " agent_dir TEXT NOT NULL, workspace_dir TEXT NOT NULL, sessions_dir TEXT NOT NULL, database_paths_json TEXT NOT NULL DEFAULT '[]',"
    " cleanup_paths_json TEXT NOT NULL DEFAULT '[]', created_at INTEGER NOT NULL, cleanup_completed INTEGER NOT NULL DEFAULT 0,"
    " delete_files INTEGER NOT NULL DEFAULT 1 ) STRICT",
    "workspace_path_aliases": "CREATE TABLE workspace_path_aliases ( alias_key TEXT NOT NULL PRIMARY KEY, alias_path TEXT NOT NULL,"
    " workspace_key TEXT NOT NULL, workspace_path TEXT NOT NULL, updated_at_ms INTEGER NOT NULL ) STRICT",
}


def test_global_schema_is_the_release_plus_the_tables_96_keeps(release_dbs: dict[str, Path]) -> None:
    release = open_db(release_dbs['global'], "ro", immutable=True)
    tables = {r[0] for r in release.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    assert set(declared_tables("global")) == tables | set(OPENCLAW_96_GLOBAL_TABLES)
    created = _created("global")
    for name, sql in OPENCLAW_96_GLOBAL_TABLES.items():
        (got,) = created.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
        assert " ".join(got.split()) == sql


# Unique indexes OpenClaw 2026.9.6's canonical agent schema declares on the tables statekit's session
# part creates (name and columns as 9.6 writes them; any other unique index is refused by its preflight).
OPENCLAW_96_UNIQUE_INDEXES = {
    "idx_agent_conversations_identity": ("conversations", ["channel", "account_id", "kind", "peer_id", None, None]),
    "idx_agent_transcript_message_idempotency": ("transcript_event_identities", ["session_id", "message_idempotency_key"]),
}


def test_session_part_has_only_unique_indexes_openclaw_knows() -> None:
    conn = _created("agent")
    found = {}
    for (kind, name), (table, _sql) in _objects(conn).items():
        if kind != "index":
            continue
        unique = conn.execute(f"SELECT \"unique\" FROM pragma_index_list('{table}') WHERE name = ?", (name,)).fetchone()[0]
        if unique:
            found[name] = (table, [r[2] for r in conn.execute(f"PRAGMA index_info('{name}')")])
    assert found == OPENCLAW_96_UNIQUE_INDEXES
    # and no column OpenClaw 2026.9.6 does not know on the tables it rebuilds as STRICT
    assert "has_parent" not in [r[1] for r in conn.execute("PRAGMA table_info(transcript_event_identities)")]
    pk = [r[1] for r in sorted(conn.execute("PRAGMA table_info(trajectory_runtime_events)"), key=lambda r: r[5]) if r[5]]
    assert pk == ["session_id", "seq"]
