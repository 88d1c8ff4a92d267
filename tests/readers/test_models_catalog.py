"""Model catalogs through the real apply loop: models.json and plugin catalog.json into agent_model_catalogs."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from helpers import FIXTURES, global_db, make_state, rows, run_cli
from legacy_readers.base import compact_json, fingerprint
from migrate.apply import MigrateOptions, migrate

FIX = FIXTURES / "readers" / "models"
MTIME_MS = 1_780_000_000_000


def build(tmp_path: Path, files: dict[str, Any], mtime_ms: int = MTIME_MS) -> Path:
    state = make_state(tmp_path, files)
    for rel in files:
        os.utime(state / rel, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return state


def catalog_rows(state: Path) -> dict[str, tuple[Any, ...]]:
    return {r[0]: r[1:] for r in rows(global_db(state), "SELECT catalog_key, agent_dir, raw_json, updated_at FROM agent_model_catalogs")}


def retired(state: Path, rel: str, original: bytes) -> dict[str, Any]:
    ((status, removed, run_id, report),) = rows(
        global_db(state), "SELECT status, removed_source, last_run_id, report_json FROM migration_sources WHERE source_path = ?", (rel,)
    )
    assert (status, removed) == ("completed", 1)
    assert not (state / rel).exists()
    assert (state / ".statekit" / "migrated" / run_id / rel).read_bytes() == original
    return json.loads(report)


def test_models_json_round_trip_with_secrets_redacted(tmp_path: Path) -> None:
    rel = "agents/main/agent/models.json"
    data = (FIX / "models.json").read_bytes()
    state = build(tmp_path, {rel: data})
    report = migrate(state, MigrateOptions(backup=False))
    assert report.status == "completed", report.warnings

    source = json.loads(data)
    expected = copy.deepcopy(source)
    api_key = source["providers"]["fakellm"]["apiKey"]
    header = source["providers"]["proxy"]["headers"]["Authorization"]
    expected["providers"]["fakellm"]["apiKey"] = "statekit-redacted:" + fingerprint(api_key)
    expected["providers"]["proxy"]["headers"]["Authorization"] = "statekit-redacted:" + fingerprint(header)
    assert catalog_rows(state) == {"agent:main": ("agents/main/agent", compact_json(expected), MTIME_MS)}
    assert expected["providers"]["proxy"]["apiKey"] == "${PROXY_API_KEY}"  # env references are kept
    got = retired(state, rel, data)
    assert got["catalog_key"] == "agent:main" and (got["providers"], got["models"]) == (2, 2)
    assert got["redacted_fields"] == [
        {"path": "$.providers.fakellm.apiKey", "fingerprint": fingerprint(api_key)},
        {"path": "$.providers.proxy.headers.Authorization", "fingerprint": fingerprint(header)},
    ]
    assert "CANARY" not in json.dumps(rows(global_db(state), "SELECT * FROM agent_model_catalogs"))


def test_plugin_catalog_and_flat_catalog(tmp_path: Path) -> None:
    plugin = "agents/work/agent/plugins/nvidia/catalog.json"
    flat = "agent/models.json"
    own = "agents/main/agent/models.json"
    own_doc = {"providers": {"own": {"models": [{"id": "m1"}]}}}
    files = {plugin: (FIX / "catalog.json").read_bytes(), flat: (FIX / "models.json").read_bytes(), own: json.dumps(own_doc).encode()}
    state = build(tmp_path, files)
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    got = catalog_rows(state)
    assert got["agent:work:plugin:nvidia"] == ("agents/work/agent", compact_json(json.loads(files[plugin])), MTIME_MS)
    # the pre-multi-agent catalog never replaces the agent's own one (whichever is imported first)
    assert got["agent:main"] == ("agents/main/agent", compact_json(own_doc), MTIME_MS)
    retired(state, flat, files[flat])
    retired(state, plugin, files[plugin])


def test_changed_catalog_is_reimported(tmp_path: Path) -> None:
    rel = "agents/main/agent/models.json"
    state = build(tmp_path, {rel: (FIX / "models.json").read_bytes()})
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    newer = {"providers": {"fakellm": {"models": []}}}
    build(tmp_path, {rel: json.dumps(newer)}, mtime_ms=MTIME_MS + 1000)
    assert migrate(state, MigrateOptions(backup=False)).status == "completed"
    assert catalog_rows(state)["agent:main"] == ("agents/main/agent", compact_json(newer), MTIME_MS + 1000)


def test_malformed_catalogs_stay_in_place(tmp_path: Path) -> None:
    bad_json = "agents/main/agent/models.json"
    bad_shape = "agents/work/agent/models.json"
    files = {
        bad_json: b'{"providers": {"x": {"apiKey": "sk-CANARY-in-broken-file"',
        bad_shape: json.dumps({"providers": {"x": {"apiKey": 1234567, "models": []}}}).encode(),
    }
    state = build(tmp_path, files)
    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert result.returncode == 3
    assert "CANARY" not in result.stdout + result.stderr and "1234567" not in result.stderr
    lines = result.stderr.splitlines()
    assert any(bad_json in line and "invalid JSON5" in line for line in lines)
    assert any(f"{bad_shape}: $.providers.x.apiKey: expected string or null, found integer" in line for line in lines)
    for rel, data in files.items():
        assert (state / rel).read_bytes() == data
    assert rows(global_db(state), "SELECT count(*) FROM agent_model_catalogs") == [(0,)]


def test_redact_keeps_environment_references_only() -> None:
    from legacy_readers.models_catalog import redact

    found: list[dict[str, str]] = []
    doc = {"p": {"apiKey": "NVIDIA_API_KEY", "token": "${TOKEN_VAR}", "key": "plainsecret", "headers": {"x-api-key": "abc123", "Accept": "json"}, "n": [1, 2]}}
    out = redact(doc, "$", found)
    assert out["p"]["apiKey"] == "NVIDIA_API_KEY" and out["p"]["token"] == "${TOKEN_VAR}"
    assert out["p"]["key"] == "statekit-redacted:" + fingerprint("plainsecret")
    assert out["p"]["headers"] == {"x-api-key": "statekit-redacted:" + fingerprint("abc123"), "Accept": "json"}
    assert out["p"]["n"] == [1, 2]
    assert [f["path"] for f in found] == ["$.p.key", "$.p.headers.x-api-key"]
