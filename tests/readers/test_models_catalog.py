"""Model catalogs as OpenClaw 2026.9.6 keeps them: models.json stays a file; a generated plugin catalog.json
becomes the agent database's cache_entries row (scope plugin-model-catalog-v1, key = plugin id, the file's text)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from freezegun import freeze_time

from helpers import FIXTURES, agent_db, global_db, make_state, rows, run_cli
from statekit.legacy_readers.models_catalog import MODELS_JSON_REASON, NOT_GENERATED_REASON, plugin_id_of
from statekit.migrate.apply import MigrateOptions, migrate

FIX = FIXTURES / "readers" / "models"
MTIME_MS = 1_780_000_000_000
NOW = "2026-11-30T12:00:00Z"
NOW_MS = 1_796_040_000_000


def build(tmp_path: Path, files: dict[str, Any], mtime_ms: int = MTIME_MS) -> Path:
    state = make_state(tmp_path, files)
    for rel in files:
        os.utime(state / rel, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return state


def cache_rows(state: Path, agent: str) -> list[tuple[Any, ...]]:
    return rows(agent_db(state, agent), "SELECT scope, key, value_json, blob, expires_at, updated_at FROM cache_entries ORDER BY scope, key")


def retired(state: Path, rel: str, original: bytes) -> dict[str, Any]:
    ((status, removed, run_id, report),) = rows(
        global_db(state), "SELECT status, removed_source, last_run_id, report_json FROM migration_sources WHERE source_path = ?", (rel,)
    )
    assert (status, removed) == ("completed", 1)
    assert not (state / rel).exists()
    assert (state / ".statekit" / "migrated" / run_id / rel).read_bytes() == original
    return json.loads(report)


@freeze_time(NOW)
def test_plugin_catalog_into_the_agent_cache_models_json_kept(tmp_path: Path) -> None:
    plugin = "agents/work/agent/plugins/nvidia/catalog.json"
    models = "agents/main/agent/models.json"
    flat = "agent/models.json"
    files = {plugin: (FIX / "catalog.json").read_bytes(), models: (FIX / "models.json").read_bytes(), flat: b'{"providers": {}}'}
    state = build(tmp_path, files)
    plan = json.loads(run_cli("plan", "--state-dir", state, "--json").stdout)
    actions = {s["path"]: (s["action"], s.get("reason")) for s in plan["sources"]}
    assert actions[models] == ("retain", MODELS_JSON_REASON) and actions[flat] == ("retain", MODELS_JSON_REASON)
    assert actions[plugin][0] == "import"

    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 0, report.warnings
    # exactly the row 9.6's doctor writes: the file's text byte for byte, no blob, no expiry, the import time
    assert cache_rows(state, "work") == [("plugin-model-catalog-v1", "nvidia", files[plugin].decode("utf-8"), None, None, NOW_MS)]
    assert retired(state, plugin, files[plugin])["key"] == "nvidia"
    for rel in (models, flat):
        assert (state / rel).read_bytes() == files[rel]
    assert rows(global_db(state), "SELECT count(*) FROM agent_model_catalogs") == [(0,)]


def test_catalog_without_the_generated_marker_stays_in_place(tmp_path: Path) -> None:
    hand = "agents/main/agent/plugins/custom/catalog.json"
    broken = "agents/main/agent/plugins/other/catalog.json"
    good = "agents/main/agent/plugins/nvidia/catalog.json"
    files = {
        hand: json.dumps({"generatedBy": "someone", "providers": {}}).encode(),
        broken: b'{"generatedBy": "openclaw-plugin-model-catalog-v1",',
        good: (FIX / "catalog.json").read_bytes(),
    }
    state = build(tmp_path, files)
    plan = json.loads(run_cli("plan", "--state-dir", state, "--json").stdout)
    actions = {s["path"]: (s["action"], s.get("reason")) for s in plan["sources"]}
    assert actions[hand] == ("retain", NOT_GENERATED_REASON) and actions[broken] == ("retain", NOT_GENERATED_REASON)
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 0, report.warnings
    for rel in (hand, broken):
        assert (state / rel).read_bytes() == files[rel]
    assert [r[1] for r in cache_rows(state, "main")] == ["nvidia"]


def test_existing_row_is_replaced_and_encoded_plugin_dir_decoded(tmp_path: Path) -> None:
    rel = "agents/main/agent/plugins/%40acme%2Fmodels/catalog.json"
    first = (FIX / "catalog.json").read_bytes()
    state = build(tmp_path, {rel: first})
    with freeze_time(NOW):
        assert migrate(state, MigrateOptions(backup=False)).exit_code == 0
    newer = b'{"generatedBy":"openclaw-plugin-model-catalog-v1","providers":{}}\n'
    build(tmp_path, {rel: newer}, mtime_ms=MTIME_MS + 1000)
    with freeze_time("2026-11-30T12:00:05Z"):
        assert migrate(state, MigrateOptions(backup=False)).exit_code == 3  # the file came back after its migration: warned (issue 11 item 5)
    assert cache_rows(state, "main") == [("plugin-model-catalog-v1", "@acme/models", newer.decode(), None, None, NOW_MS + 5000)]


def test_plugin_id_decoding_follows_decode_uri_component() -> None:
    assert plugin_id_of("agents/a/agent/plugins/nvidia/catalog.json") == "nvidia"
    assert plugin_id_of("agents/a/agent/plugins/%40x%2Fy/catalog.json") == "@x/y"
    assert plugin_id_of("agents/a/agent/plugins/bad%zz/catalog.json") is None
    assert plugin_id_of("agents/a/agent/plugins/%ff/catalog.json") is None
