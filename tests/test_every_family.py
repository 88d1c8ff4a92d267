"""The "every family" proof.

``fixtures/every-family/.openclaw`` holds one small, realistic sample of every
legacy family statekit knows (real files from the 2026.5.28 and 2026.7.35
corpus releases where they exist, hand-made samples elsewhere; no real
secrets). These tests prove that

(a) every registered reader kind has at least one sample (a new reader without
    a sample fails here),
(b) ``statekit plan --json`` leaves nothing unrecognised, on that fixture and on
    every tree of ``../shared/corpus`` (skipped when the corpus is absent),
(c) ``statekit migrate`` on a copy of the fixture exits 0 and every source that
    is imported or dropped ends ``imported`` (or ``retired``), every retained
    one stays where it is.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from statekit import legacy_readers
from helpers import FIXTURES, corpus_tree_names, extract_corpus_tree, run_cli
from statekit.migrate.discover import discover

EVERY = FIXTURES / "every-family" / ".openclaw"
ACTIVE = ("import", "import+archive", "drop")


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "every-family" / ".openclaw"
    shutil.copytree(EVERY, dest, symlinks=True)
    # A pending delivery is replayed only while it is younger than 72 hours (as OpenClaw 2026.9.6 decides):
    # keep the fixture's queued delivery an hour old, whenever the suite runs.
    queued = dest / "delivery-queue" / "outbound-1.json"
    entry = json.loads(queued.read_text())
    entry["enqueuedAt"] = int(time.time() * 1000) - 3_600_000
    entry["lastAttemptAt"] = entry["enqueuedAt"] + 500_000
    queued.write_text(json.dumps(entry, indent=2))
    return dest


def _plan(state: Path) -> dict:
    proc = run_cli("plan", "--state-dir", state, "--json")
    assert proc.returncode in (0, 3), proc.stderr
    return json.loads(proc.stdout)


def test_every_registered_kind_has_a_sample(tmp_path: Path) -> None:
    state = _copy(tmp_path)
    found = discover(state)
    sampled = {reader.kind for _entry, reader in found.legacy}
    registered = {reader.kind for reader in legacy_readers.all_readers()}
    missing = sorted(registered - sampled)
    assert not missing, (
        f"reader kind(s) without a sample in fixtures/every-family/.openclaw: {missing}; "
        "add one small realistic file per kind"
    )


def test_fixture_plan_has_nothing_unrecognised_or_unreadable(tmp_path: Path) -> None:
    state = _copy(tmp_path)
    plan = _plan(state)
    assert plan["unrecognised"] == []
    problems = [(s["path"], s["action"], s["reason"]) for s in plan["sources"] if s["action"] in ("unreadable", "conflict")]
    assert problems == []
    warned = [(s["path"], s["warnings"]) for s in plan["sources"] if s["warnings"]]
    assert warned == []
    by_kind = {reader.kind: reader for reader in legacy_readers.all_readers()}
    for source in plan["sources"]:
        assert source["action"] == by_kind[source["kind"]].action, source["path"]


@pytest.mark.parametrize("tree", corpus_tree_names() or ["(no corpus)"])
def test_corpus_tree_plan_has_nothing_unrecognised(tmp_path: Path, tree: str) -> None:
    if tree == "(no corpus)":
        pytest.skip("../shared/corpus is not available in this checkout")
    state = extract_corpus_tree(tree, tmp_path)
    plan = _plan(state)
    assert [u["path"] for u in plan["unrecognised"]] == []


def test_fixture_migrates_cleanly(tmp_path: Path) -> None:
    state = _copy(tmp_path)
    proc = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--json")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    report = json.loads(proc.stdout)
    assert report["status"] == "completed" and report["warnings"] == []
    by_kind = {reader.kind: reader for reader in legacy_readers.all_readers()}
    seen_kinds = set()
    for source in report["sources"]:
        action = by_kind[source["kind"]].action
        seen_kinds.add(source["kind"])
        if action in ACTIVE:
            assert source["status"] in ("imported", "dropped", "retired"), (source["path"], source["status"], source["message"])
            assert not (state / source["path"]).exists(), source["path"]
            assert (state / source["retired_to"]).is_file(), source["path"]
        else:
            assert source["status"] == action, (source["path"], source["status"])
            assert (state / source["path"]).exists(), source["path"]
    assert seen_kinds == set(by_kind)
    # A second run has nothing left to do and changes nothing.
    again = run_cli("migrate", "--state-dir", state, "--yes", "--no-backup", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["status"] == "nothing-to-do"
