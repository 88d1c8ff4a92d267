"""Issue 12 (4): progress on a real terminal for the long commands (phase, done of total, rate, ETA); none when piped.

Runs statekit under a real pseudo-terminal (``pty.fork``): what an operator sees. Fails on 308a7ed:
``migrate`` drew nothing, ``backup create`` / ``restore`` bars had no total and no ETA, verification
drew nothing at all.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from cli_helpers import clean_env, run_in_pty, statekit_argv, transcript
from helpers import make_state

ETA = re.compile(r"ETA\s+\d+:\d\d:\d\d")  # a computed time, not rich's "-:--:--"
BYTES_OF_TOTAL = re.compile(r"\d+(?:\.\d+)?/(?P<total>\d+(?:\.\d+)?) (?P<unit>[kMG]?B)\b")
ANSI = re.compile(r"\x1b\[")
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def big_state(tmp_path: Path, mb: int = 48) -> Path:
    state = make_state(tmp_path, {"openclaw.json": {"agents": {}}})
    (state / "media").mkdir()
    (state / "media" / "blob.bin").write_bytes(os.urandom(mb << 20))  # incompressible: seconds of work on 2 cores
    return state


def phase_lines(drawn: str, phase: str) -> list[str]:
    text = CONTROL.sub(lambda m: "" if m.group().endswith("m") else "\n", drawn)  # colours go, cursor moves split the frames
    return [line.strip() for line in re.split(r"[\r\n]", text) if line.lstrip().startswith(phase + " ")]


def test_backup_create_draws_archive_and_verify_bars_with_total_and_eta(tmp_path: Path) -> None:
    state = big_state(tmp_path)
    code, drawn = run_in_pty(statekit_argv("backup", "create", "--state-dir", state, "--output", tmp_path / "out"), clean_env(), tmp_path)
    assert code == 0, drawn
    archive = phase_lines(drawn, "archive")
    verify = phase_lines(drawn, "verify")
    assert archive and verify, drawn[-2000:]
    totals = {m.group("total", "unit") for line in archive for m in BYTES_OF_TOTAL.finditer(line)}
    assert ("50.3", "MB") in totals, totals  # 48 MiB, labelled in SI units as rich renders them
    assert any(ETA.search(line) for line in archive), archive[-5:]
    assert any(BYTES_OF_TOTAL.search(line) for line in verify), verify[-5:]  # verification advances: it has a total


def test_migrate_and_restore_draw_bars_on_a_terminal(tmp_path: Path) -> None:
    state = make_state(tmp_path, {f"agents/main/sessions/s{i}.jsonl": transcript(f"s{i}", 400, pad=2000) for i in range(12)})
    code, drawn = run_in_pty(statekit_argv("migrate", "--state-dir", state, "--yes", "--backup-output", tmp_path / "bk"),
                             clean_env(), tmp_path)
    assert code == 0, drawn[-2000:]
    assert phase_lines(drawn, "archive") and phase_lines(drawn, "verify"), drawn[-2000:]  # the pre-migration backup
    migrate = phase_lines(drawn, "migrate")
    assert any(BYTES_OF_TOTAL.search(line) for line in migrate), drawn[-2000:]
    assert phase_lines(drawn, "plan"), drawn[-2000:]  # the plan migrate makes first (it hashes every source)
    (archive,) = (tmp_path / "bk").glob("*.tar.zst")
    code, drawn = run_in_pty(statekit_argv("backup", "verify", archive), clean_env(), tmp_path)
    assert code == 0, drawn[-2000:]
    assert any(BYTES_OF_TOTAL.search(line) for line in phase_lines(drawn, "checksum") + phase_lines(drawn, "verify")), drawn[-2000:]
    code, drawn = run_in_pty(statekit_argv("backup", "restore", archive, "--target", tmp_path / "t", "--yes"), clean_env(), tmp_path)
    assert code == 0, drawn[-2000:]
    # issue 16: a statekit archive is verified in the one pass that writes it: one "restore" bar (it was "verify", then "restore")
    assert phase_lines(drawn, "restore") and not phase_lines(drawn, "verify"), drawn[-2000:]
    code, drawn = run_in_pty(statekit_argv("plan", "--state-dir", tmp_path / "t"), clean_env(), tmp_path)
    assert code == 0 and "Summary:" in drawn


@pytest.mark.parametrize("flag", [None, "--quiet", "--json", "--no-progress"])
def test_no_bar_when_piped_or_asked(tmp_path: Path, flag: str | None) -> None:
    """Piped (cron, `| tee`): no bar, no escape codes. On a terminal, --quiet/--json/--no-progress draw none either."""
    state = big_state(tmp_path, mb=8)
    args = ["backup", "create", "--state-dir", state, "--output", tmp_path / "out", *([flag] if flag else [])]
    piped = subprocess.run(statekit_argv(*args), capture_output=True, text=True, env=clean_env(), cwd=tmp_path, timeout=600)
    assert piped.returncode == 0, piped.stderr
    assert not ANSI.search(piped.stderr + piped.stdout) and "ETA" not in piped.stderr + piped.stdout
    if flag is not None:
        code, drawn = run_in_pty(statekit_argv(*args), clean_env(), tmp_path)
        assert code == 0, drawn
        assert "ETA" not in drawn and not phase_lines(drawn, "archive"), drawn[-2000:]
