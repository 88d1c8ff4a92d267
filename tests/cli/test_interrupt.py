"""Issue 12 (8): SIGTERM and SIGINT mid-migrate: one exit code (130), one line, the run recorded as interrupted with the signal.

A real subprocess, a real signal: the run is held mid-source at the ``before-write`` seam (tests/cli/hold_statekit.py),
then signalled. Fails on 308a7ed: SIGTERM killed the process (exit 143, nothing printed) and left the run row
``running``; Ctrl-C recorded an empty reason.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import clean_env, transcript
from helpers import global_db, make_state, rows

HOLD = Path(__file__).resolve().parent / "hold_statekit.py"


def interrupted_run(tmp_path: Path, signum: signal.Signals, *extra: str) -> tuple[subprocess.Popen[str], str, str, Path]:
    state = make_state(tmp_path, {"agents/main/sessions/a.jsonl": transcript("a", 3), "agents/main/sessions/b.jsonl": transcript("b", 3)})
    fifo = tmp_path / "hold.fifo"
    os.mkfifo(fifo)
    child = subprocess.Popen(
        [sys.executable, str(HOLD), str(fifo), "before-write", "migrate", "--state-dir", str(state), "--yes", "--no-backup", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(), cwd=tmp_path,
    )
    with open(fifo, "wb"):  # returns once the child holds at the seam
        child.send_signal(signum)
        out, err = child.communicate(timeout=120)
    return child, out, err, state


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_mid_migrate_is_one_line_exit_130_and_recorded(tmp_path: Path, signum: signal.Signals) -> None:
    child, out, err, state = interrupted_run(tmp_path, signum)
    assert child.returncode == 130, (child.returncode, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("statekit: error: interrupted by " + signum.name), err
    [(status, report)] = rows(global_db(state), "SELECT status, report_json FROM migration_runs")
    assert status == "failed"  # never left "running"
    data = json.loads(report)
    assert data["interrupted"] is True and data["interrupted_by"] == signum.name
    assert f"run interrupted by {signum.name}" in data["warnings"]
    # the source being written when the signal came was rolled back: still in place, no receipt
    assert (state / "agents/main/sessions/a.jsonl").exists()
    assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE status = 'completed'") == [(0,)]


def test_interrupted_with_json_writes_the_failure_document(tmp_path: Path) -> None:
    child, out, err, _ = interrupted_run(tmp_path, signal.SIGTERM, "--json")
    assert child.returncode == 130
    assert json.loads(out) == {"ok": False, "error": err.splitlines()[0].removeprefix("statekit: error: "), "exit_code": 130}


def test_rerun_after_interrupt_converges(tmp_path: Path) -> None:
    child, _, _, state = interrupted_run(tmp_path, signal.SIGTERM)
    assert child.returncode == 130
    rerun = subprocess.run([sys.executable, "-m", "statekit", "migrate", "--state-dir", str(state), "--yes", "--no-backup"],
                           capture_output=True, text=True, env=clean_env(), cwd=tmp_path, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert not (state / "agents/main/sessions/a.jsonl").exists()
    assert rows(global_db(state), "SELECT count(*) FROM migration_sources WHERE status = 'completed'") == [(2,)]
