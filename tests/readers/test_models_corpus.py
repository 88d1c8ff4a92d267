"""Model catalogs of the real corpus trees (skipped when ../shared/corpus is absent)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import extract_corpus_tree, global_db, rows
from migrate.apply import MigrateOptions, migrate

REDACTED = re.compile(r"^statekit-redacted:sha256:[0-9a-f]{16}$")


def test_hybrid_models_and_plugin_catalog_next_to_openclaw_rows(tmp_path: Path) -> None:
    state = extract_corpus_tree("legacy-2026.7.35-std", tmp_path)
    models = json.loads((state / "agents/main/agent/models.json").read_text())
    plugin = json.loads((state / "agents/main/agent/plugins/nvidia/catalog.json").read_text())
    foreign_before = rows(global_db(state), "SELECT * FROM agent_model_catalogs")
    assert len(foreign_before) == 1  # OpenClaw 2026.7 already keeps its own row (agent_dir NOT NULL there)
    migrate(state, MigrateOptions(backup=False))
    got = {r[0]: (r[1], json.loads(r[2])) for r in rows(global_db(state), "SELECT catalog_key, agent_dir, raw_json FROM agent_model_catalogs")}
    assert got["agent:main:plugin:nvidia"] == ("agents/main/agent", plugin)  # no secrets in it
    agent_dir, raw = got["agent:main"]
    assert agent_dir == "agents/main/agent"
    for provider_id, provider in models["providers"].items():
        stored = raw["providers"][provider_id]
        assert {k: v for k, v in stored.items() if k != "apiKey"} == {k: v for k, v in provider.items() if k != "apiKey"}
        if "apiKey" in provider:
            assert REDACTED.match(stored["apiKey"]) and provider["apiKey"] not in json.dumps(raw)
    assert foreign_before[0] in rows(global_db(state), "SELECT * FROM agent_model_catalogs")  # left untouched


def test_public_repo_catalogs_redact_every_api_key(tmp_path: Path) -> None:
    state = extract_corpus_tree("Linux2010__openclaw", tmp_path)
    originals = {agent: json.loads((state / f"agents/{agent}/agent/models.json").read_text()) for agent in ("main", "coding")}
    migrate(state, MigrateOptions(backup=False))
    db = global_db(state)
    for agent, document in originals.items():
        ((raw_json,),) = rows(db, "SELECT raw_json FROM agent_model_catalogs WHERE catalog_key = ?", (f"agent:{agent}",))
        raw = json.loads(raw_json)
        assert set(raw["providers"]) == set(document["providers"])
        for provider_id, provider in document["providers"].items():
            if isinstance(provider.get("apiKey"), str) and provider["apiKey"]:
                assert REDACTED.match(raw["providers"][provider_id]["apiKey"])
                assert provider["apiKey"] not in raw_json
        ((report_json,),) = rows(db, "SELECT report_json FROM migration_sources WHERE source_path = ?", (f"agents/{agent}/agent/models.json",))
        for provider in document["providers"].values():
            if isinstance(provider.get("apiKey"), str) and len(provider["apiKey"]) > 8:
                assert provider["apiKey"] not in report_json
