"""Retired SQLite sidecars (retain / drop with a reason) and workspace attestations (retain)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers import corpus_or_skip, extract_corpus_tree, make_state, open_db, run_cli, tree_digest, write_files
from migrate.plan import build_plan
from test_plugin_common import assert_imported, outcome, receipt, run


def _sqlite(path: Path, table: str = "t") -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = open_db(path)
    conn.execute(f"CREATE TABLE {table} (id TEXT PRIMARY KEY, payload TEXT)")
    conn.execute(f"INSERT INTO {table} VALUES ('a', 'x')")
    conn.commit()
    conn.close()
    return path.read_bytes()


def _state(tmp_path: Path) -> Path:
    state = make_state(tmp_path, {
        "debug-proxy/ca/openclaw-debug-proxy-ca.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        "debug-proxy/blobs/ab/abcdef.gz": b"\x1f\x8b\x08\x00",
        "workspace-attestations/738dd14d.attested": "openclaw-workspace-attestation:v1\n2026-11-30T00:19:00.932Z\ngenerated:AGENTS.md:c9a6\n",
    })
    _sqlite(state / "tasks" / "runs.sqlite", "task_runs")
    _sqlite(state / "tasks" / "flows" / "registry.sqlite", "flow_runs")
    _sqlite(state / "flows" / "registry.sqlite", "flow_runs")
    _sqlite(state / "plugin-state" / "state.sqlite", "plugin_state_entries")
    _sqlite(state / "memory" / "main.sqlite", "chunks")
    _sqlite(state / "debug-proxy" / "capture.sqlite", "capture_sessions")
    # Sidecars left by a crash (written after the databases were closed).
    write_files(state, {
        "tasks/runs.sqlite-wal": b"\x37\x7f\x06\x82" + b"\x00" * 28,
        "tasks/runs.sqlite-shm": b"\x00" * 64,
        "memory/main.sqlite-wal": b"\x37\x7f\x06\x82" + b"\x00" * 28,
    })
    return state


EXPECTED = {
    "tasks/runs.sqlite": ("tasks-runs-sqlite", "retain"),
    "tasks/runs.sqlite-wal": ("tasks-runs-sqlite", "retain"),
    "tasks/runs.sqlite-shm": ("tasks-runs-sqlite", "retain"),
    "tasks/flows/registry.sqlite": ("task-flows-sqlite", "retain"),
    "flows/registry.sqlite": ("task-flows-sqlite", "retain"),
    "plugin-state/state.sqlite": ("plugin-state-sqlite", "retain"),
    "memory/main.sqlite": ("memory-index-sqlite", "drop"),
    "memory/main.sqlite-wal": ("memory-index-sqlite", "drop"),
    "debug-proxy/capture.sqlite": ("debug-proxy-capture-sqlite", "retain"),
    "debug-proxy/blobs/ab/abcdef.gz": ("debug-proxy-capture-sqlite", "retain"),
    "debug-proxy/ca/openclaw-debug-proxy-ca.pem": ("debug-proxy-files", "retain"),
    "workspace-attestations/738dd14d.attested": ("workspace-attestation", "retain"),
}


def test_plan_claims_sidecars_out_of_the_database_bucket(tmp_path: Path) -> None:
    state = _state(tmp_path)
    before = tree_digest(state)
    plan = build_plan(state)
    assert {s.rel: (s.kind, s.action) for s in plan.sources} == EXPECTED
    assert plan.databases == [] and plan.unrecognised == [] and plan.user_content == []
    for source in plan.sources:
        assert source.reason, source.rel
    assert tree_digest(state) == before


def test_migrate_retains_and_drops(tmp_path: Path) -> None:
    state = _state(tmp_path)
    originals = {rel: (state / rel).read_bytes() for rel in EXPECTED}
    report = run(state)
    assert report.status == "completed" and report.warnings == []
    for rel, (_kind, action) in EXPECTED.items():
        if action == "retain":
            assert outcome(report, rel).status == "retain"
            assert (state / rel).read_bytes() == originals[rel]
        else:
            stored = assert_imported(state, report, rel, originals[rel], records=0)
            assert "regenerable memory-search index" in stored["dropped"]
            assert receipt(state, rel)["report"]["kind"] == "memory-index-sqlite"
    # The retired index is still a readable database (moved byte for byte with its WAL).
    retired = state / ".statekit" / "migrated" / report.run_id / "memory" / "main.sqlite"
    assert open_db(retired).execute("SELECT payload FROM chunks").fetchone() == ("x",)


def test_cli_plan_json_lists_reasons(tmp_path: Path) -> None:
    state = _state(tmp_path)
    proc = run_cli("plan", "--state-dir", state, "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    by_path = {s["path"]: s for s in plan["sources"]}
    assert "never shipped an importer" in by_path["tasks/runs.sqlite"]["reason"]
    assert plan["summary"]["unrecognised"] == 0 and plan["databases"] == []


def test_real_task_registry_sidecar(tmp_path: Path) -> None:
    corpus_or_skip()
    state = extract_corpus_tree("legacy-2026.5.28-smoke", tmp_path)
    plan = build_plan(state)
    runs = [s for s in plan.sources if s.rel == "tasks/runs.sqlite"]
    assert len(runs) == 1 and runs[0].kind == "tasks-runs-sqlite" and runs[0].action == "retain"
    assert "tasks/runs.sqlite" not in [d.rel for d in plan.databases]


def test_real_workspace_attestations(tmp_path: Path) -> None:
    corpus_or_skip()
    state = extract_corpus_tree("legacy-2026.7.35-std", tmp_path)
    plan = build_plan(state)
    attested = [s for s in plan.sources if s.kind == "workspace-attestation"]
    assert len(attested) == 2 and all(s.action == "retain" for s in attested)
    assert not any(rel.startswith("workspace-attestations") for rel, _why, _n in plan.user_content)
