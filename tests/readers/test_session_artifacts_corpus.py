"""Session artifacts of the real corpus trees (skipped when ../shared/corpus is absent)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from helpers import agent_db, corpus_or_skip, extract_corpus_tree, global_db, rows
from statekit.migrate.apply import MigrateOptions, MigrationReport, migrate


def migrated_tree(tmp_path_factory: pytest.TempPathFactory, name: str) -> tuple[Path, dict[str, bytes], MigrationReport]:
    corpus_or_skip()
    state = extract_corpus_tree(name, tmp_path_factory.mktemp(name.replace(".", "_")))
    originals = {
        p.relative_to(state).as_posix(): p.read_bytes()
        for pattern in ("agents/*/sessions/*.trajectory*", "agents/*/sessions/*.jsonl.*", "agents/*/sessions/skills-prompts/**/*.txt")
        for p in state.glob(pattern)
    }
    return state, originals, migrate(state, MigrateOptions(backup=False))


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory):
    return migrated_tree(tmp_path_factory, "legacy-2026.5.28-smoke")


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory: pytest.TempPathFactory):
    return migrated_tree(tmp_path_factory, "legacy-2026.7.35-std")


def check_trajectories(state: Path, originals: dict[str, bytes]) -> int:
    sidecars = {rel: data for rel, data in originals.items() if rel.endswith(".trajectory.jsonl")}
    assert sidecars
    for rel, data in sidecars.items():
        agent = rel.split("/")[1]
        session_id = rel.rsplit("/", 1)[-1][: -len(".trajectory.jsonl")]
        lines = [json.loads(line) for line in data.splitlines() if line.strip()]
        got = rows(agent_db(state, agent), "SELECT run_id, seq, event_json FROM trajectory_runtime_events WHERE session_id = ? ORDER BY seq", (session_id,))
        # one row per line in file order (seq = position); the line's own runId and per-run seq are kept
        assert [r[1] for r in got] == list(range(1, len(lines) + 1)), rel
        assert [(r[0], json.loads(r[2]).get("seq")) for r in got] == [(line.get("runId") or None, line.get("seq")) for line in lines], rel
        assert all("sessionFile" not in r[2] for r in got), rel
        ((status, removed, run_id),) = rows(global_db(state), "SELECT status, removed_source, last_run_id FROM migration_sources WHERE source_path = ?", (rel,))
        assert (status, removed) == ("completed", 1)
        assert hashlib.sha256((state / ".statekit/migrated" / run_id / rel).read_bytes()).hexdigest() == hashlib.sha256(data).hexdigest()
    pointers = [rel for rel in originals if rel.endswith(".trajectory-path.json")]
    assert len(pointers) == len(sidecars)
    for rel in pointers:
        assert not (state / rel).exists()
        (report,) = rows(global_db(state), "SELECT report_json FROM migration_sources WHERE source_path = ?", (rel,))
        assert json.loads(report[0])["dropped"].startswith("file-era path pointer")
    return len(sidecars)


def test_smoke_trajectories_pointers_and_prompts(smoke) -> None:
    state, originals, report = smoke
    assert check_trajectories(state, originals) == 9
    prompts = {rel: data for rel, data in originals.items() if "/skills-prompts/" in rel}
    assert len(prompts) == 2
    for rel, data in prompts.items():
        digest = hashlib.sha256(data).hexdigest()
        # kept in place, byte-exact, where OpenClaw 2026.9.6 resolves skillsSnapshot.promptRef
        assert (state / rel).read_bytes() == data
        assert rows(agent_db(state, rel.split("/")[1]), "SELECT count(*) FROM cache_entries WHERE scope = 'skills-prompts'") == [(0,)]
        # the session index still points at it through skillsSnapshot.promptRef
        refs = rows(agent_db(state, rel.split("/")[1]), "SELECT count(*) FROM session_entries WHERE json_extract(entry_json, '$.skillsSnapshot.promptRef.hash') = ?", (digest,))
        assert refs[0][0] >= 1
    assert not any(o.kind.startswith("trajectory") and o.status == "failed" for o in report.outcomes)


def test_hybrid_trajectory_with_truncated_run_keeps_its_seq(hybrid) -> None:
    state, originals, _report = hybrid
    assert check_trajectories(state, originals) == 9
    # this sidecar starts in the middle of a run (seq 4..7): the file's own seq numbers are kept in the events
    got = rows(agent_db(state), "SELECT json_extract(event_json, '$.seq') FROM trajectory_runtime_events WHERE session_id = 'f4c0901d-2801-4e08-9928-92b6f7ac5b1c' AND run_id = 'chatcmpl_e3942d13-a6a7-4e42-86c0-b988547f574a' ORDER BY seq")
    assert [r[0] for r in got] == [4, 5, 6, 7]


def test_public_repo_archives_are_kept_and_locks_dropped(tmp_path: Path) -> None:
    state = extract_corpus_tree("Linux2010__openclaw", tmp_path)
    archives = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.glob("agents/*/sessions/*.jsonl.*") if not p.name.endswith(".lock")}
    locks = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.glob("agents/*/sessions/*.lock")}
    assert len(archives) == 4 and len(locks) == 1
    report = migrate(state, MigrateOptions(backup=False))
    statuses = {o.rel: o.status for o in report.outcomes}
    for rel, data in archives.items():
        assert statuses[rel] == "retain"
        assert (state / rel).read_bytes() == data
    for rel, data in locks.items():
        ((status, removed, run_id),) = rows(global_db(state), "SELECT status, removed_source, last_run_id FROM migration_sources WHERE source_path = ?", (rel,))
        assert (status, removed) == ("completed", 1)
        assert (state / ".statekit/migrated" / run_id / rel).read_bytes() == data
