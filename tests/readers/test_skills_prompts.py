"""Skill prompt blobs stay where OpenClaw 2026.9.6 reads them (skills-prompts/sha256/<xx>/<hash>.txt next to the session index)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from helpers import FIXTURES, agent_db, global_db, make_state, rows, run_cli
from statekit.legacy_readers.skills_prompts import REASON
from statekit.migrate.apply import MigrateOptions, migrate

FIX = FIXTURES / "readers" / "sessions-artifacts"


def test_prompt_blobs_are_retained_in_place_without_rows(tmp_path: Path) -> None:
    text = (FIX / "skills-prompt.txt").read_bytes()
    digest = hashlib.sha256(text).hexdigest()
    rel = f"agents/main/sessions/skills-prompts/sha256/{digest[:2]}/{digest}.txt"
    stray = f"agents/work/sessions/skills-prompts/sha256/00/{'0' * 64}.txt"  # not its hash: OpenClaw ignores it, statekit too
    other = (FIXTURES / "readers" / "tui" / "last-session.json").read_bytes()  # something to import: the run really happens
    state = make_state(tmp_path, {rel: text, stray: text, "tui/last-session.json": other})
    before = {r: os.stat(state / r).st_mtime_ns for r in (rel, stray)}

    plan = json.loads(run_cli("plan", "--state-dir", state, "--json").stdout)
    actions = {s["path"]: (s["kind"], s["action"]) for s in plan["sources"]}
    assert actions[rel] == ("skills-prompt", "retain") and actions[stray] == ("skills-prompt", "retain")
    assert not plan["unrecognised"]

    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 0, report.warnings
    assert {o.rel: o.status for o in report.outcomes if o.kind == "skills-prompt"} == {rel: "retain", stray: "retain"}
    for r in (rel, stray):
        assert (state / r).read_bytes() == text and os.stat(state / r).st_mtime_ns == before[r]
    assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE source_path LIKE '%skills-prompts%'") == [(0,)]
    assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE source_path = 'tui/last-session.json'") == [(1,)]
    for agent in ("main", "work"):
        db = agent_db(state, agent)
        if db.exists():
            assert rows(db, "SELECT count(*) FROM cache_entries") == [(0,)]
    assert "reads skill prompt blobs from these files" in REASON
