"""Memory Wiki metadata, memory-core workspace dreaming files and Active Memory toggles -> plugin state."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from migrate.plan import build_plan
from test_plugin_common import T, assert_imported, assert_rejected, blob_rows, fixture_state, read, run, state_rows

WIKI = "wiki/main/.openclaw-wiki/"
DREAMS = "workspace/memory/.dreams/"


@pytest.fixture()
def migrated(tmp_path: Path):
    state = fixture_state(tmp_path, "memory-wiki", "memory-core", "active-memory")
    originals = {p.relative_to(state).as_posix(): p.read_bytes() for p in state.rglob("*") if p.is_file()}
    return state, run(state), originals


def test_memory_wiki(migrated) -> None:
    state, report, originals = migrated
    rel = WIKI + "log.jsonl"
    assert_imported(state, report, rel, originals[rel], records=2)
    first_line = originals[rel].split(b"\n")[0]
    key = f"main:legacy:1:{hashlib.sha256(first_line).hexdigest()[:16]}"
    row = state_rows(state, "memory-wiki", "activity-log")[key]
    assert row["value"] == {"ts": "2026-11-29T12:00:00.000Z", "action": "page.create", "page": "Projects/Alpha.md"}
    assert row["created_at"] == T
    assert_imported(state, report, WIKI + "source-sync.json", originals[WIKI + "source-sync.json"], records=1)
    assert state_rows(state, "memory-wiki", "source-sync")["main:chatgpt:export-2026-11"]["value"]["pages"] == 12
    rel = WIKI + "import-runs/run-20261129.json"
    assert_imported(state, report, rel, originals[rel], records=1)
    assert state_rows(state, "memory-wiki", "import-runs")["main:run-20261129"]["value"]["status"] == "completed"
    for dropped in (WIKI + "cache/agent-digest.json", WIKI + "state.json"):
        assert assert_imported(state, report, dropped, originals[dropped], records=0)["dropped"]


def test_memory_core_workspace_files(migrated) -> None:
    state, report, originals = migrated
    for name, namespace in [("short-term-recall.json", "short-term-recall"), ("phase-signals.json", "phase-signals"),
                            ("daily-ingestion.json", "daily-ingestion"), ("session-ingestion.json", "session-ingestion")]:
        assert_imported(state, report, DREAMS + name, originals[DREAMS + name], records=1)
        assert "workspace" in state_rows(state, "memory-core", namespace)
    assert state_rows(state, "memory-core", "short-term-recall")["workspace"]["created_at"] == T
    assert_imported(state, report, DREAMS + "events.jsonl", originals[DREAMS + "events.jsonl"], records=2)
    events = state_rows(state, "memory-core", "host-events")
    assert sorted(v["value"]["type"] for v in events.values()) == ["dream.finished", "dream.started"]
    rel = DREAMS + "session-corpus/2026-11-29.txt"
    assert_imported(state, report, rel, originals[rel], records=1)
    corpus = blob_rows(state, "memory-core", "session-corpus")["workspace:2026-11-29.txt"]
    assert corpus["blob"] == originals[rel]
    assert corpus["metadata"] == {"workspace": "workspace", "name": "2026-11-29.txt", "sizeBytes": len(originals[rel])}
    assert assert_imported(state, report, DREAMS + "short-term-promotion.lock", originals[DREAMS + "short-term-promotion.lock"])["dropped"]
    # The rest of the workspace is the user's and stays.
    assert not (state / DREAMS).exists()


def test_memory_core_in_agent_workspaces_is_probed(tmp_path: Path) -> None:
    state = fixture_state(tmp_path, extra={
        "workspace-work/memory/.dreams/phase-signals.json": '{"signals": {}}',
        "workspace-work/AGENTS.md": "# work\n",
        "agents/ops/workspace/memory/.dreams/phase-signals.json": '{"signals": {"deep": 1}}',
    })
    plan = build_plan(state)
    kinds = {s.rel: s.kind for s in plan.sources}
    assert kinds == {
        "workspace-work/memory/.dreams/phase-signals.json": "memory-core-dreams-state",
        "agents/ops/workspace/memory/.dreams/phase-signals.json": "memory-core-dreams-state",
    }
    run(state)
    signals = state_rows(state, "memory-core", "phase-signals")
    assert set(signals) == {"workspace-work", "agents/ops/workspace"}
    assert (state / "workspace-work/AGENTS.md").exists()


def test_active_memory_toggles(migrated) -> None:
    state, report, originals = migrated
    rel = "plugins/active-memory/session-toggles.json"
    assert_imported(state, report, rel, originals[rel], records=2)
    toggles = state_rows(state, "active-memory", "session-toggles")
    assert toggles["agent:main:main"] == {"value": {"enabled": False, "updatedAt": T}, "created_at": T, "expires_at": None}


@pytest.mark.parametrize(
    ("rel", "content", "problem"),
    [
        (WIKI + "log.jsonl", '{"ts": 1}\n[1, 2]\n', ":2: expected a JSON object"),
        (WIKI + "source-sync.json", '"sources"', "$: expected object, found string"),
        (DREAMS + "phase-signals.json", "{oops}", "invalid JSON"),
        ("plugins/active-memory/session-toggles.json", "[true]", "$: expected object, found array"),
    ],
)
def test_malformed_stays_in_place(tmp_path: Path, rel: str, content: str, problem: str) -> None:
    state = fixture_state(tmp_path, extra={rel: content})
    original = read(state, rel)
    assert_rejected(state, run(state), rel, original, problem)
