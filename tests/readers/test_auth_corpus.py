"""Auth stores of the real corpus trees (skipped when ../shared/corpus is absent). Values are never printed."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import agent_db, extract_corpus_tree, global_db, rows
from statekit.legacy_readers.base import fingerprint
from statekit.migrate.apply import MigrateOptions, migrate


def test_smoke_auth_profiles_and_state(tmp_path: Path) -> None:
    state = extract_corpus_tree("legacy-2026.5.28-smoke", tmp_path)
    expected = {}
    for agent in ("main", "work"):
        profiles = json.loads((state / f"agents/{agent}/agent/auth-profiles.json").read_text())
        runtime = json.loads((state / f"agents/{agent}/agent/auth-state.json").read_text())
        expected[agent] = (profiles, runtime)
    report = migrate(state, MigrateOptions(backup=False))
    assert not [o for o in report.outcomes if o.kind.startswith("auth") and o.status != "imported"]
    db = global_db(state)
    # where OpenClaw 2026.9.6 keeps them: main's (the shared-main owner) in the shared store of the state database,
    # the work agent's (its token included) in the work agent's own database, as 2026.7.35 kept every agent's
    assert rows(db, "SELECT count(*) FROM auth_profile_stores") == [(0,)]
    assert rows(db, "SELECT value_json FROM config_machine_state WHERE state_key = 'auth.sharedStore'") == [('{"location":"state-db"}',)]
    assert rows(agent_db(state, "main"), "SELECT count(*) FROM auth_profile_store") == [(0,)]
    for agent, (profiles, runtime) in expected.items():
        if agent == "main":
            ((store_json,),) = rows(db, "SELECT value_json FROM config_machine_state WHERE state_key = 'authProfiles.store'")
            ((state_json,),) = rows(db, "SELECT value_json FROM config_machine_state WHERE state_key = 'authProfiles.state'")
        else:
            ((store_json,),) = rows(agent_db(state, agent), "SELECT store_json FROM auth_profile_store WHERE store_key = 'primary'")
            ((state_json,),) = rows(agent_db(state, agent), "SELECT state_json FROM auth_profile_state WHERE state_key = 'primary'")
        assert json.loads(store_json) == profiles
        assert json.loads(state_json) == runtime
        ((report_json,),) = rows(db, "SELECT report_json FROM migration_sources WHERE source_path = ?", (f"agents/{agent}/agent/auth-profiles.json",))
        fingerprints = json.loads(report_json)["credential_fingerprints"]
        assert fingerprints == {pid: {"token": fingerprint(p["token"])} for pid, p in profiles["profiles"].items()}
        for profile in profiles["profiles"].values():
            assert profile["token"] not in report_json


def test_moltbot_tmp_leftover_with_the_same_credentials_is_retired(tmp_path: Path) -> None:
    state = extract_corpus_tree("42naodia__moltbot-config", tmp_path)
    tmp_rel = "agents/main/agent/auth-profiles.json.tmp"
    original = (state / tmp_rel).read_bytes()
    report = migrate(state, MigrateOptions(backup=False))
    statuses = {o.rel: o.status for o in report.outcomes}
    assert statuses[tmp_rel] == "imported" and statuses["agents/main/agent/auth-profiles.json"] == "imported"
    ((run_id, report_json),) = rows(global_db(state), "SELECT last_run_id, report_json FROM migration_sources WHERE source_path = ?", (tmp_rel,))
    assert json.loads(report_json)["disposition"].startswith("stale temp copy")
    assert (state / ".statekit/migrated" / run_id / tmp_rel).read_bytes() == original
    assert rows(global_db(state), "SELECT count(*) FROM config_machine_state WHERE state_key = 'authProfiles.store'") == [(1,)]
    assert rows(global_db(state), "SELECT count(*) FROM auth_profile_stores") == [(0,)]
