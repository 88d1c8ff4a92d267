"""Which test files scripts/check.sh runs beside tests/interop, and which only after it.

``python scripts/test_phases.py beside`` prints the test files that may run while tests/interop runs;
``python scripts/test_phases.py after`` prints the ones that wait for it: every file that reaches the
shared corpus (and every file of a directory whose conftest does). The corpus trees store absolute
paths under the HOME they were written at (``/tmp/gen-<version>-<label>/home``), and tests/interop
puts a live copy of the tree exactly there while the real OpenClaw runs on it: a corpus test running
at that moment would see that copy's databases through the tree's own absolute paths.

Which files reach the corpus is read from their text (the helpers that open it), so a new corpus test
lands in the second phase without being listed; tests/test_check_phases.py checks the split.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
INTEROP = TESTS / "interop"
# The names through which a test reaches ../shared/corpus (tests/helpers.py, tests/backups/backup_helpers.py,
# tests/migration/same_rows.py), and the ``corpus`` fixture as a test's parameter.
OPENS_CORPUS = r"corpus_or_skip|extract_corpus_tree|corpus_tree_names|\bCORPUS\b|\bSHARED\b|\bfrom same_rows import|\bimport same_rows"
# a conftest that only passes the ``corpus`` fixture on does not reach it itself: the tests that take it do
CONFTEST_REACHES = re.compile(OPENS_CORPUS)
TEST_REACHES = re.compile(OPENS_CORPUS + r"|\bcorpus\s*(?::\s*Path|[,)])")


def reaches_corpus(path: Path) -> bool:
    pattern = CONFTEST_REACHES if path.name == "conftest.py" else TEST_REACHES
    return bool(pattern.search(path.read_text(encoding="utf-8")))


def test_files() -> list[Path]:
    """Every pytest file outside tests/interop, in path order."""
    return sorted(p for p in TESTS.rglob("test_*.py") if INTEROP not in p.parents)


def after_interop(path: Path) -> bool:
    """True when ``path`` (a test file) or a conftest above it reaches the corpus."""
    if reaches_corpus(path):
        return True
    for parent in path.parents:
        conftest = parent / "conftest.py"
        if conftest.is_file() and reaches_corpus(conftest):
            return True
        if parent == TESTS:
            break
    return False


def phases() -> tuple[list[Path], list[Path]]:
    beside: list[Path] = []
    after: list[Path] = []
    for path in test_files():
        (after if after_interop(path) else beside).append(path)
    return beside, after


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("beside", "after"):
        print("usage: test_phases.py beside|after", file=sys.stderr)
        return 2
    beside, after = phases()
    for path in beside if argv[0] == "beside" else after:
        print(path.relative_to(REPO).as_posix())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
