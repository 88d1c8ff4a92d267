#!/usr/bin/env python3
"""Run statekit end to end on a copy of the bundled demo install (fixtures/demo-install).

plan -> migrate --yes -> backup create -> backup verify -> backup restore --dry-run.
The copy lives in ./demo-run/ (recreated each time); fixtures/ is never modified.
The demo install holds one deliberately malformed transcript: migrate imports
its readable prefix (as OpenClaw does), names the bad line and exits 3; the
original stays byte-exact in the run's retired folder.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def step(title: str, *args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    print(f"\n$ statekit {' '.join(args)}")
    result = subprocess.run([sys.executable, "-m", "statekit", *args], text=True)
    if result.returncode not in ok:
        print(f"demo: '{title}' exited {result.returncode}", file=sys.stderr)
        raise SystemExit(result.returncode)
    return result


def main() -> int:
    run = REPO / "demo-run"
    if run.exists():
        shutil.rmtree(run)
    shutil.copytree(REPO / "fixtures" / "demo-install", run, symlinks=True)
    state = str(run / ".openclaw")
    backups = str(run / "backups")
    step("plan", "plan", "--state-dir", state, ok=(0, 3))
    step("migrate", "migrate", "--state-dir", state, "--yes", "--backup-output", backups, ok=(0, 3))
    step("backup create", "backup", "create", "--state-dir", state, "--output", backups)
    archives = sorted(Path(backups).glob("openclaw-backup-*.tar.zst"))
    step("backup verify", "backup", "verify", str(archives[-1]))
    step("restore dry-run", "backup", "restore", str(archives[-1]), "--target", str(run / "restored"), "--dry-run")
    print(f"\ndemo: done. State: {state}  Backups: {backups}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
