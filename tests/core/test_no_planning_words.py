"""Internal planning words stay out of what statekit ships and out of test module names.

Reasons, messages and docstrings say what they mean ("caches are not migrated"), not which planning note
asked for them ("design seed", "issue 4 part B2"); a test helper is named for what it is, not for a batch.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from helpers import REPO
from product_source import PACKAGES

TICKET_WORDS = re.compile(
    r"design[ -](seed|card)"
    r"|\bissues?\s*#?\d+\b"
    r"|\bpart [A-Z]\d+\b"
    r"|\bstop \d+\b"
    r"|\b[AB]\d+ (readers?|famil(y|ies)|harness|tests?)\b",
    re.IGNORECASE,
)
TICKET_MODULE_NAME = re.compile(r"(^|_)([ab]\d+|issue_?\d+|ticket_?\d+|stop_?\d+|part_?[a-z]?\d+)(_|$)", re.IGNORECASE)


def _package_files() -> list[Path]:
    files: set[Path] = set()
    for name in PACKAGES:
        for root in importlib.import_module(name).__path__:
            files |= {p for p in Path(root).rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    return sorted(files)


def _hits(text: str) -> list[str]:
    return [m.group(0) for m in TICKET_WORDS.finditer(text)]


def test_no_ticket_words_in_the_product() -> None:
    files = _package_files()
    assert len(files) > 100  # .py, .sql and .json schemas of all five packages
    found = {str(p): hits for p in files if (hits := _hits(p.read_text(encoding="utf-8", errors="replace")))}
    assert found == {}


def test_no_ticket_words_in_test_module_names() -> None:
    named = [str(p.relative_to(REPO)) for p in sorted((REPO / "tests").rglob("*.py")) if TICKET_MODULE_NAME.search(p.stem)]
    assert named == []


@pytest.mark.parametrize("text", ["(design seed: caches, not migrated)", "readers of issue 4 part B2", "see issue #13",
                                  "stop 7 of the plan", "the B2 reader tests", "Issue 15's done-when"])
def test_the_scan_sees_ticket_words(text: str) -> None:
    assert _hits(text)


@pytest.mark.parametrize("text", ["schema version 1. Part 1: exactly what OpenClaw", "V1 transcript ids", "state B",
                                  "the issue is", "stop the gateway", "part of the plan", "sha256 B2 digest"])
def test_the_scan_leaves_ordinary_words(text: str) -> None:
    assert not _hits(text)


@pytest.mark.parametrize(("stem", "ticket"), [("b2_harness", True), ("test_issue13", True), ("stop3_checks", True),
                                              ("small_store_harness", False), ("test_config_96", False),
                                              ("test_openclaw96_state", False), ("test_v1_transcripts", False),
                                              ("test_part_b2", True), ("test_issue_13_hooks", True)])
def test_the_module_name_scan(stem: str, ticket: bool) -> None:
    assert bool(TICKET_MODULE_NAME.search(stem)) is ticket
