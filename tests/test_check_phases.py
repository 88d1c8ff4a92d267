"""scripts/check.sh's split of the suite: every test file runs once, corpus tests only after tests/interop.

tests/interop puts live copies of the corpus trees at the absolute paths those trees name; a corpus
test running beside it saw one of those copies' databases through its tree's config and failed
(``test_undo_gives_back_the_original_tree[legacy-2026.7.35-std]``: "database exists but is not in the
archive"). The split is read from the files' text, so these pin that it still sees what it must.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _phases_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("test_phases_script", REPO / "scripts" / "test_phases.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


PHASES = _phases_module()


def _rel(paths: list[Path]) -> set[str]:
    return {p.relative_to(REPO).as_posix() for p in paths}


def test_every_test_file_outside_interop_runs_in_exactly_one_phase() -> None:
    beside, after = PHASES.phases()
    every = _rel([p for p in (REPO / "tests").rglob("test_*.py") if "interop" not in p.relative_to(REPO).parts])
    assert _rel(beside) | _rel(after) == every
    assert not _rel(beside) & _rel(after)
    assert "tests/test_check_phases.py" in every


def test_tests_that_open_corpus_trees_wait_for_interop() -> None:
    _, after = PHASES.phases()
    waiting = _rel(after)
    for name in ("tests/corpus/test_corpus_undo.py", "tests/corpus/test_corpus_migrate.py",
                 "tests/migration/test_same_rows.py",   # through tests/migration/same_rows.py
                 "tests/backups/test_roundtrip.py",     # through the ``corpus`` fixture
                 "tests/maintenance/test_undo.py"):     # through tests/maintenance/conftest.py
        assert name in waiting, name


def test_tests_that_never_touch_the_corpus_run_beside_interop() -> None:
    beside, _ = PHASES.phases()
    running = _rel(beside)
    for name in ("tests/reliability/test_rel_crash_migrate.py", "tests/backups/test_restore.py",
                 "tests/test_check_phases.py"):
        assert name in running, name
