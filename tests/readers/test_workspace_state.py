"""<workspace>/.openclaw/workspace-state.json and <workspace>/openclaw-workspace-state.json -> workspace_setup_state."""

from __future__ import annotations

import hashlib
import json
import os
import tarfile
from pathlib import Path

import pytest

from small_store_harness import NOW, assert_failed_in_place, assert_imported, new_state, query, run
from helpers import FIXTURES, corpus_or_skip
from statekit.legacy_readers import reader_for
from statekit.migrate.discover import discover

FIX = FIXTURES / "readers" / "workspace-state"
NEW = "workspace/openclaw-workspace-state.json"
OLD = "workspace/.openclaw/workspace-state.json"


def _key(state: Path, ws: str) -> tuple[str, str]:
    path = os.path.realpath(state / ws)
    return hashlib.sha256(path.encode()).hexdigest(), path


def test_claims_and_discovery_probe(tmp_path: Path):
    for rel in (NEW, OLD, "workspace-work/openclaw-workspace-state.json", "agents/ops/workspace/.openclaw/workspace-state.json"):
        assert reader_for(rel).kind == "workspace-setup-state"
    state, _ = new_state(tmp_path, {NEW: "{}", "workspace-work/.openclaw/workspace-state.json": "{}", "workspace/AGENTS.md": "# agents"})
    found = {entry.rel: reader.kind for entry, reader in discover(state).legacy}
    assert found == {NEW: "workspace-setup-state", "workspace-work/.openclaw/workspace-state.json": "workspace-setup-state"}


def test_round_trip(tmp_path: Path):
    state, originals = new_state(tmp_path, {NEW: (FIX / "workspace-state.json").read_bytes(), "workspace/AGENTS.md": "# keep me"})
    report = run(state)
    assert report.status == "completed", report.warnings
    assert_imported(state, report, NEW, originals[NEW], records=1)
    key, path = _key(state, "workspace")
    assert query(state, "SELECT * FROM workspace_setup_state") == [
        {"workspace_key": key, "workspace_path": path, "version": 1, "bootstrap_seeded_at": "2026-03-01T08:00:00.000Z",
         "setup_completed_at": "2026-03-01T09:30:00.000Z", "updated_at": NOW}
    ]
    # the workspace's path identity, as 9.6 registers it with the setup state
    assert query(state, "SELECT * FROM workspace_path_aliases") == [
        {"alias_key": key, "alias_path": path, "workspace_key": key, "workspace_path": path, "updated_at_ms": NOW}
    ]
    assert (state / "workspace" / "AGENTS.md").read_text() == "# keep me"


def test_two_legacy_files_of_one_workspace_merge_later_wins(tmp_path: Path):
    state, _ = new_state(
        tmp_path,
        {
            OLD: {"version": 1, "bootstrapSeededAt": "2026-03-01T08:00:00Z", "setupCompletedAt": "2026-03-02T00:00:00Z"},
            NEW: {"version": 1, "bootstrapSeededAt": "2026-03-03T08:00:00Z"},
        },
    )
    assert run(state).status == "completed"
    row = query(state, "SELECT bootstrap_seeded_at, setup_completed_at FROM workspace_setup_state")[0]
    assert row == {"bootstrap_seeded_at": "2026-03-03T08:00:00.000Z", "setup_completed_at": "2026-03-02T00:00:00.000Z"}


def test_times_are_stored_in_the_canonical_iso_form_9_6_requires(tmp_path: Path):
    """An offset or a missing millisecond part is stored as Date#toISOString writes it (9.6 refuses anything else)."""
    state, _ = new_state(tmp_path, {NEW: {"version": 1, "bootstrapSeededAt": "2026-03-01T10:00:00+02:00", "setupCompletedAt": "2026-03-01T09:30:00.5Z"}})
    assert run(state).status == "completed"
    assert query(state, "SELECT bootstrap_seeded_at, setup_completed_at FROM workspace_setup_state") == [
        {"bootstrap_seeded_at": "2026-03-01T08:00:00.000Z", "setup_completed_at": "2026-03-01T09:30:00.500Z"}
    ]


def test_state_dir_reached_through_a_symlink_is_keyed_by_the_real_path(tmp_path: Path):
    state, _ = new_state(tmp_path, {NEW: {"version": 1, "bootstrapSeededAt": "2026-03-01T08:00:00.000Z"}})
    link = tmp_path / "link-to-state"
    link.symlink_to(state)
    report = run(link)
    assert report.status == "completed", report.warnings
    key, path = _key(state, "workspace")
    assert path != os.path.abspath(link / "workspace")
    assert query(state, "SELECT workspace_key, workspace_path FROM workspace_setup_state") == [{"workspace_key": key, "workspace_path": path}]
    # statekit resolves a symlinked state dir once (issue 11, item 1): the reader sees the real directory, so the
    # lexical alias is the canonical path itself and the link's name is not recorded as a second alias
    assert query(state, "SELECT alias_path, workspace_key FROM workspace_path_aliases ORDER BY alias_path") == [
        {"alias_path": path, "workspace_key": key}
    ]


@pytest.mark.parametrize(
    ("content", "needle"),
    [({"bootstrapSeededAt": "2026-01-01T00:00:00Z"}, "missing required property"), ({"version": 1, "setupCompletedAt": "tuesday"}, "$.setupCompletedAt: not an ISO-8601 time")],
)

def test_malformed_file_stays_in_place(tmp_path: Path, content, needle: str):
    state, originals = new_state(tmp_path, {OLD: content})
    assert_failed_in_place(state, run(state), OLD, originals[OLD], needle)


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("tarball", "name"),
    [("legacy-2026.5.28-smoke", ".openclaw/workspace-state.json"), ("legacy-2026.7.35-std", "openclaw-workspace-state.json")],
)
def test_real_workspace_state_files(tmp_path: Path, tarball: str, name: str):
    corpus = corpus_or_skip()
    files = {}
    with tarfile.open(corpus / "generated" / f"{tarball}.tar") as archive:
        for ws in ("workspace", "workspace-work"):
            files[f"{ws}/{name}"] = archive.extractfile(f"home/.openclaw/{ws}/{name}").read()
    state, originals = new_state(tmp_path, files)
    report = run(state)
    assert report.status == "completed", report.warnings
    for rel in files:
        assert_imported(state, report, rel, originals[rel], records=1)
    rows = {r["workspace_path"]: r for r in query(state, "SELECT * FROM workspace_setup_state")}
    for rel, data in files.items():
        key, path = _key(state, rel.split("/")[0])
        doc = json.loads(data)
        assert rows[path]["workspace_key"] == key
        assert rows[path]["bootstrap_seeded_at"] is not None and rows[path]["setup_completed_at"] is None
        assert doc["version"] == rows[path]["version"] == 1
