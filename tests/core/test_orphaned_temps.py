"""Temp files of a killed atomic write: recognised by name, removed only when their writer is dead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from statekit.backup import create_backup
from helpers import FIXTURES, make_state
from statekit.migrate.apply import MigrateOptions, migrate
from statekit.migrate.plan import build_plan
from statekit.fsutil import atomic_write_bytes, remove_orphaned_temps, temp_writer_pid


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def orphan(directory: Path, name: str, pid: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f".{name}.statekit-tmp-{pid}-0badc0de"
    path.write_bytes(b"half a file")
    return path


def test_temp_names_are_recognised_exactly() -> None:
    assert temp_writer_pid(".openclaw.json.statekit-tmp-31937-312ec6df") == 31937
    for name in ("openclaw.json.statekit-tmp-1-312ec6df", ".a.statekit-tmp-x-312ec6df", ".a.statekit-tmp-1-312ec6d", ".a.json"):
        assert temp_writer_pid(name) is None, name


def test_only_dead_writers_temps_are_removed(tmp_path: Path) -> None:
    dead = orphan(tmp_path, "a.json", dead_pid())
    live = orphan(tmp_path, "b.json", os.getpid())
    nested = orphan(tmp_path / "sub", "c.json", dead_pid())
    atomic_write_bytes(tmp_path / "d.json", b"{}")
    assert remove_orphaned_temps(tmp_path) == [dead]
    assert live.exists() and nested.exists() and (tmp_path / "d.json").read_bytes() == b"{}"
    assert remove_orphaned_temps(tmp_path, recursive=True) == [nested]


def test_migrate_plans_and_removes_a_killed_writes_temp_files(tmp_path: Path) -> None:
    state = make_state(tmp_path, {"cron/jobs.json": (FIXTURES / "readers" / "cron" / "jobs.json").read_text()})
    config_temp = orphan(state, "openclaw.json", dead_pid())
    retired_temp = orphan(state / ".statekit" / "migrated" / "run1", "openclaw.json", dead_pid())
    assert build_plan(state).unrecognised == []  # ours, not an unknown file
    report = migrate(state, MigrateOptions(backup=False))
    assert report.exit_code == 0
    assert not config_temp.exists() and not retired_temp.exists()


def test_backup_create_removes_a_killed_runs_sidecar_temp(tmp_path: Path) -> None:
    state = make_state(tmp_path, {"openclaw.json": "{}"})
    out = tmp_path / "out"
    sidecar_temp = orphan(out, "openclaw-backup-20260101T000000Z.tar.zst.verify.json", dead_pid())
    writing_now = orphan(out, "openclaw-backup-20260101T000001Z.tar.zst.verify.json", os.getpid())
    result = create_backup(state, out)
    assert result.verified and not sidecar_temp.exists() and writing_now.exists()
