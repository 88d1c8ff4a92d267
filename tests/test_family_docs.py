"""docs/legacy-families.md is generated from the reader registry and must be fresh."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

from helpers import REPO

from statekit import legacy_readers

SCRIPT = REPO / "scripts" / "gen_family_docs.py"
DOC = REPO / "docs" / "legacy-families.md"


def _module():
    spec = importlib.util.spec_from_file_location("gen_family_docs", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_doc_is_fresh() -> None:
    expected = _module().render()
    current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    assert current == expected, "docs/legacy-families.md is stale: run `.venv/bin/python scripts/gen_family_docs.py` and commit it"


def test_every_reader_is_listed_with_its_facts() -> None:
    text = _module().render()
    for reader in legacy_readers.all_readers():
        rows = [line for line in text.splitlines() if line.startswith(f"| `{reader.kind}` |")]
        assert len(rows) == 1, reader.kind
        row = rows[0]
        assert f"| {reader.action} |" in row
        for table in reader.target_tables:
            assert f"`{table}`" in row
        if reader.reason:
            assert f"* `{reader.kind}` ({reader.action}): {reader.reason}" in text


def test_doc_links_resolve() -> None:
    text = _module().render()
    for target in set(re.findall(r"\]\((readers/[^)#]+)\)", text)):
        assert (REPO / "docs" / target).is_file(), target


def test_check_flag() -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=REPO)
    fresh = DOC.exists() and DOC.read_text(encoding="utf-8") == _module().render()
    assert proc.returncode == (0 if fresh else 1), proc.stderr
