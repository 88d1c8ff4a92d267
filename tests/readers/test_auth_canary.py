"""Canary: planted secrets in auth and model files never reach stdout, stderr or any receipt/run report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import FIXTURES, global_db, make_state, rows, run_cli

CANARY = re.compile(r"sk-CANARY-[A-Za-z0-9-]*")


def planted_state(tmp_path: Path) -> Path:
    auth = FIXTURES / "readers" / "auth"
    models = FIXTURES / "readers" / "models"
    differing_tmp = json.loads((auth / "auth-profiles.json").read_text())
    differing_tmp["profiles"]["openai:default"]["key"] = "sk-CANARY-tmp-differs-eeeeeeee"
    files = {
        "agents/main/agent/auth-profiles.json": (auth / "auth-profiles.json").read_bytes(),
        "agents/main/agent/auth-profiles.json.tmp": json.dumps(differing_tmp).encode(),
        "agents/main/agent/auth-state.json": (auth / "auth-state.json").read_bytes(),
        "agents/main/agent/auth.json": (auth / "auth.json").read_bytes(),
        "agent/auth-profiles.json": (auth / "auth-profiles-flat.json").read_bytes(),
        "credentials/oauth.json": (auth / "oauth.json").read_bytes(),
        "agents/main/agent/models.json": (models / "models.json").read_bytes(),
        "agents/main/agent/plugins/nvidia/catalog.json": (models / "catalog.json").read_bytes(),
        # broken files holding a canary: the error path must not echo them either
        "agents/work/agent/auth-profiles.json": b'{"profiles": {"x:y": {"type": "api_key", "key": "sk-CANARY-broken-ffff", }}, ',
        "agents/work/agent/auth.json": json.dumps({"openai": {"apiKey": ["sk-CANARY-wrong-type-gggg"]}}).encode(),
        "agents/work/agent/models.json": b'{"providers": {"p": {"apiKey": "sk-CANARY-models-broken-hhhh"',
    }
    return make_state(tmp_path, files)


def assert_clean(text: str, where: str) -> None:
    found = CANARY.findall(text)
    assert not found, f"canary leaked into {where}: {len(found)} occurrence(s)"


@pytest.mark.parametrize("as_json", [False, True], ids=["human", "json"])
def test_canary_never_leaks(tmp_path: Path, as_json: bool) -> None:
    state = planted_state(tmp_path)
    extra = ["--json"] if as_json else []
    plan = run_cli("plan", "--state-dir", state, *extra)
    assert plan.returncode in (0, 3), plan.stderr
    assert_clean(plan.stdout + plan.stderr, "plan output")

    result = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", *extra)
    assert result.returncode == 3, result.stderr  # the broken files and the differing .tmp stay in place
    assert_clean(result.stdout + result.stderr, "migrate output")
    if as_json:
        report = json.loads(result.stdout)
        assert {s["path"] for s in report["sources"] if s["status"] == "failed" or s["status"] == "unreadable"} >= {
            "agents/work/agent/auth-profiles.json",
            "agents/work/agent/auth.json",
            "agents/main/agent/auth-profiles.json.tmp",
        }

    db = global_db(state)
    for (report_json,) in rows(db, "SELECT report_json FROM migration_sources"):
        assert_clean(report_json, "migration_sources.report_json")
    for (report_json,) in rows(db, "SELECT report_json FROM migration_runs"):
        assert_clean(report_json, "migration_runs.report_json")
    for (raw_json,) in rows(db, "SELECT raw_json FROM agent_model_catalogs"):
        assert_clean(raw_json, "agent_model_catalogs.raw_json")
    # the credentials themselves were imported where they belong
    stores = " ".join(r[0] for r in rows(db, "SELECT value_json FROM config_machine_state WHERE state_key = 'authProfiles.store'"))
    assert "sk-CANARY-openai-0000000000000000" in stores and "sk-CANARY-oauth-access-aaaa" in stores
    assert "sk-CANARY-tmp-differs" not in stores

    # a rerun (nothing new to import, the broken files still listed) stays clean too
    again = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", *extra)
    assert_clean(again.stdout + again.stderr, "rerun output")
