"""Issue 12 problem 1: a corrupt database makes ``backup create`` fail as an integrity failure (exit 5) naming the
database, never "database or disk is full" / "check that disk" (exit 1). Fails on 308a7ed (exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from backup_helpers import make_db
from helpers import run_cli


def _corrupt(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "page-count":  # the header's in-file page count (offset 28) far past the end of the file
        data[28:32] = (0x7FFFFFFF).to_bytes(4, "big")
    else:  # the page size field (offset 16) set to an impossible value
        data[16:18] = b"\x00\x03"
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["page-count", "page-size"])
def test_corrupt_database_is_an_integrity_failure_naming_it(tmp_path: Path, how: str) -> None:
    state = tmp_path / ".openclaw"
    db = make_db(state / "state" / "openclaw.sqlite", role="global", rows=300, wal=False)
    (state / "openclaw.json").write_text("{}")
    _corrupt(db, how)
    out = tmp_path / "out"
    proc = run_cli("backup", "create", "--state-dir", state, "--output", out)
    assert proc.returncode == 5, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(db) in lines[0] and "corrupt" in lines[0], proc.stderr
    assert "disk is full" not in proc.stderr and "check that disk" not in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(out.glob("openclaw-backup-*"))
