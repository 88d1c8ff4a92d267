"""Model catalogs of the real corpus trees (skipped when ../shared/corpus is absent)."""

from __future__ import annotations

from pathlib import Path

from helpers import agent_db, extract_corpus_tree, global_db, rows
from statekit.migrate.apply import MigrateOptions, migrate


def test_hybrid_models_json_kept_plugin_catalog_in_agent_cache(tmp_path: Path) -> None:
    state = extract_corpus_tree("legacy-2026.7.35-std", tmp_path)
    models = (state / "agents/main/agent/models.json").read_bytes()
    plugin = (state / "agents/main/agent/plugins/nvidia/catalog.json").read_bytes()
    migrate(state, MigrateOptions(backup=False))
    # models.json stays the file OpenClaw 2026.9.6 reads, byte-exact
    assert (state / "agents/main/agent/models.json").read_bytes() == models
    # the release's generated plugin catalog: the agent database's cache row, its text as written
    ((value_json, blob, expires_at),) = rows(
        agent_db(state, "main"), "SELECT value_json, blob, expires_at FROM cache_entries WHERE scope = 'plugin-model-catalog-v1' AND key = 'nvidia'"
    )
    assert (value_json, blob, expires_at) == (plugin.decode("utf-8"), None, None)
    assert not (state / "agents/main/agent/plugins/nvidia/catalog.json").exists()
    # statekit adds nothing to version 1's agent_model_catalogs (9.6's upgrade drops that table)
    assert all(r[0] != "agent:main:plugin:nvidia" for r in rows(global_db(state), "SELECT catalog_key FROM agent_model_catalogs"))


def test_public_repo_models_json_stay_in_place(tmp_path: Path) -> None:
    state = extract_corpus_tree("Linux2010__openclaw", tmp_path)
    originals = {agent: (state / f"agents/{agent}/agent/models.json").read_bytes() for agent in ("main", "coding")}
    migrate(state, MigrateOptions(backup=False))
    for agent, data in originals.items():
        assert (state / f"agents/{agent}/agent/models.json").read_bytes() == data
        assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE source_path = ?", (f"agents/{agent}/agent/models.json",)) == [(0,)]
