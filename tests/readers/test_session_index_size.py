"""A 300 MB sessions.json stays under the 200 MB memory bound: refused in one line, left in place (issue 11 item 7).

308a7ed read and parsed the whole index (about 3.6 times its size in memory: over 1 GB here). Fails on 308a7ed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import global_db, make_state, rows
from statekit.legacy_readers.session_index import MAX_INDEX_BYTES

INDEX = "agents/main/sessions/sessions.json"
PEAK_RSS_RUNNER = (
    "import runpy, sys\n"
    "sys.argv = ['statekit', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('statekit', run_name='__main__', alter_sys=True)\n"
    "finally:\n"
    "    hwm = next(l for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
    "    sys.stderr.write('VmHWM ' + hwm.split()[1] + '\\n')\n"
)


def sparse_index(state: Path, size: int) -> None:
    """A file of ``size`` bytes (sparse on disk): refused on its size, whatever it holds."""
    with open(state / INDEX, "wb") as out:
        out.write(b"{")
        out.truncate(size)


def padded_index(state: Path, size: int) -> None:
    """A valid index of exactly ``size`` bytes: one entry, padded with spaces."""
    body = json.dumps({"agent:main:main": {"sessionId": "s1", "updatedAt": 1767225600000}}).encode()
    (state / INDEX).write_bytes(body[:-1] + b" " * (size - len(body)) + b"}")


def test_a_300_mb_index_is_refused_in_one_line_and_left_in_place(tmp_path: Path) -> None:
    state = make_state(tmp_path, {INDEX: "{}"})
    sparse_index(state, 300 << 20)
    before = (state / INDEX).stat().st_size
    proc = subprocess.run([sys.executable, "-c", PEAK_RSS_RUNNER, "migrate", "--state-dir", str(state), "--yes", "--no-backup"],
                          capture_output=True, text=True)
    err = proc.stderr
    assert proc.returncode == 3, err
    peak_kb = int(err.rsplit("VmHWM ", 1)[1].split()[0])  # the child's own high-water mark (ru_maxrss counts the forking parent's pages)
    assert peak_kb / 1024 < 200, f"peak RSS {peak_kb / 1024:.0f} MB"
    lines = [line for line in err.splitlines() if "sessions.json" in line]
    assert lines and all("Traceback" not in line for line in err.splitlines())
    assert "session index is 300 MiB" in lines[0] and "left in place" in lines[0]
    assert (state / INDEX).stat().st_size == before  # nothing lost: the file is where it was
    assert rows(global_db(state), "SELECT status FROM migration_sources WHERE source_path = ?", (INDEX,)) == [("failed",)]


def test_an_index_at_the_limit_is_imported(tmp_path: Path) -> None:
    state = make_state(tmp_path, {INDEX: "{}"})
    padded_index(state, MAX_INDEX_BYTES)
    proc = subprocess.run([sys.executable, "-m", "statekit", "migrate", "--state-dir", str(state), "--yes", "--no-backup", "--json"],
                          capture_output=True, text=True)
    report = json.loads(proc.stdout)
    assert [(s["path"], s["status"]) for s in report["sources"] if s["path"] == INDEX] == [(INDEX, "imported")], proc.stderr
