"""``statekit undo`` on every tree of ../shared/corpus: migrate, undo, and the tree is the original again.

Compared: every path's kind, mode and bytes, directories by name and mode. Allowed to remain: ``.statekit/``
with its run lock and install id (docs/upgrade.md, "go back"). A database that existed before the run (the
hybrid-era tree's OpenClaw databases) comes back as the pre-migration backup holds it: same schema,
``user_version`` and rows, compared by content. Fails on 308a7ed (no ``undo`` command). Skipped without the corpus.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import corpus_tree_names, extract_corpus_tree, run_cli
from statekit.migrate.undo_facts import existing_databases
from undo_snapshot import database_content, snapshot, undo_differences

TREES = corpus_tree_names()
pytestmark = pytest.mark.skipif(not TREES, reason="../shared/corpus is not available")


def _actions(state: Path) -> dict[str, str]:
    plan = run_cli("plan", "--state-dir", state, "--json")
    return {s["path"]: s["action"] for s in json.loads(plan.stdout)["sources"]}


@pytest.mark.parametrize("tree", TREES)
def test_undo_gives_back_the_original_tree(tree: str, tmp_path: Path) -> None:
    state = extract_corpus_tree(tree, tmp_path)
    before = snapshot(state)
    planned = _actions(state)
    contents = {rel: database_content(state / rel) for rel in existing_databases(state)}

    migrated = run_cli("migrate", "--state-dir", state, "--yes", "--json")
    assert migrated.returncode in (0, 3), migrated.stderr
    report = json.loads(migrated.stdout)
    assert report["run_id"] and Path(report["backup_path"]).is_file()
    assert snapshot(state) != before

    dry = run_cli("undo", report["run_id"], "--state-dir", state, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    done = run_cli("undo", report["run_id"], "--state-dir", state, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["differences"] == []

    assert undo_differences(before, snapshot(state), content_only=contents, root=state) == []
    assert _actions(state) == planned
