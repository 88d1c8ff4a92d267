"""Issue 11 item 3: backups and migrations exclude each other.

``backup create`` while a ``migrate`` or an in-place restore holds the state dir's lock refuses at once
(exit 4, nothing published) or, with ``--wait``, waits for it within the bound. A real migrate is held at a
seam in a forked child (a checkpoint hook installed by the test, after the first source was retired: the
moment a backup used to archive a state dir with sessions neither in the legacy files, the retired copies
nor the databases). Each test fails on 308a7ed (the backup published a "verified" archive, exit 0).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rel_harness import FIGURES, archives, copy_world, fork_cli


@contextmanager
def held_at(args: list[str], seam: str) -> Iterator[Callable[[], None]]:
    """Run ``statekit ARGS`` in a forked child that stops at checkpoint ``seam`` until released (on leaving the
    block, or earlier by calling the function it yields); its exit code is then ``held_at.last_status``."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.close(ready_r)
            os.close(go_w)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            from statekit.cli import main
            from statekit.seams import install_checkpoint_hook

            def hook(name: str) -> None:
                if name == seam:
                    install_checkpoint_hook(None)
                    os.write(ready_w, b"1")
                    os.read(go_r, 1)

            install_checkpoint_hook(hook)
            code = main(args)
        finally:
            os._exit(code)
    os.close(ready_w)
    os.close(go_r)
    released = threading.Lock()

    def release() -> None:
        if released.acquire(blocking=False):
            os.write(go_w, b"1")
            os.close(go_w)

    try:
        got = os.read(ready_r, 1)
        assert got == b"1", f"statekit {' '.join(args)} ended before reaching {seam}"
        yield release
    finally:
        release()
        os.close(ready_r)
        _, status = os.waitpid(pid, 0)
        held_at.last_status = os.waitstatus_to_exitcode(status)  # type: ignore[attr-defined]


def _sessions(state: Path) -> list[str]:
    return sorted(str(p.relative_to(state)) for p in state.rglob("*.jsonl") if p.is_file())


def test_backup_during_migrate_refuses_with_exit_4(tmp_path: Path) -> None:
    """Fails on 308a7ed: the backup taken while migrate had retired its first source was published (exit 0)."""
    state = copy_world("demo-install", tmp_path)
    before = _sessions(state)
    assert before, "the fixture has session transcripts"
    out = tmp_path / "cron-backups"
    migrate = ["migrate", "--state-dir", str(state), "--yes", "--backup-output", str(tmp_path / "pre")]
    with held_at(migrate, "after-retire"):
        run = fork_cli("backup", "create", "--state-dir", state, "--output", out)
        assert run.returncode == 4, run
        assert "migrate" in run.stderr and "nothing was archived" in run.stderr, run
        assert not archives(out)
    assert held_at.last_status in (0, 3)  # type: ignore[attr-defined]
    after = fork_cli("backup", "create", "--state-dir", state, "--output", out)
    assert after.returncode in (0, 3), after
    assert len(archives(out)) == 1
    FIGURES["exclusion"]["backups refused during migrate"] += 1


def test_backup_waits_for_a_migrate_within_the_bound(tmp_path: Path) -> None:
    """Fails on 308a7ed (no ``--wait``; the backup ran through the migrate). ``--wait`` gives up after its bound
    (exit 4, nothing published); a migrate that finishes within the bound is waited for, and the backup then
    archives the finished state."""
    state = copy_world("demo-install", tmp_path)
    out = tmp_path / "cron-backups"
    migrate = ["migrate", "--state-dir", str(state), "--yes", "--backup-output", str(tmp_path / "pre")]
    with held_at(migrate, "after-retire") as release:
        started = time.monotonic()
        run = fork_cli("backup", "create", "--state-dir", state, "--output", out, "--wait", "1")
        assert run.returncode == 4 and time.monotonic() - started >= 1.0, run
        assert "waited 1 s" in run.stderr and not archives(out)
        timer = threading.Timer(1.0, release)
        timer.start()
        started = time.monotonic()
        run = fork_cli("backup", "create", "--state-dir", state, "--output", out, "--wait", "60")
        timer.join()
        assert run.returncode in (0, 3) and 0.9 <= time.monotonic() - started < 60, run
    assert held_at.last_status in (0, 3)  # type: ignore[attr-defined]
    assert len(archives(out)) == 1
    FIGURES["exclusion"]["bounded waits"] += 2


def test_backup_during_in_place_restore_refuses(tmp_path: Path) -> None:
    """A backup during an in-place restore is refused (exit 4). On 308a7ed this already held while the restore
    journal existed (the pending-restore settle before the command); now the state dir lock says so for the
    restore's whole span."""
    state = copy_world("demo-install", tmp_path)
    first = tmp_path / "first"
    assert fork_cli("backup", "create", "--state-dir", state, "--output", first).returncode in (0, 3)
    [archive] = archives(first)
    (state / "openclaw.json").write_text('{"changed": true}')
    out = tmp_path / "cron-backups"
    with held_at(["backup", "restore", str(archive), "--state-dir", str(state), "--yes"], "restore-staged"):
        run = fork_cli("backup", "create", "--state-dir", state, "--output", out)
        assert run.returncode == 4, run
        assert not archives(out)
    assert held_at.last_status == 0  # type: ignore[attr-defined]
    FIGURES["exclusion"]["backups refused during restore"] += 1


def test_migrate_refuses_while_a_backup_holds_the_state_dir(tmp_path: Path) -> None:
    """The other direction: a migrate started during a backup is refused (exit 4) and changes nothing. Fails on
    308a7ed (the migrate ran while the backup was archiving)."""
    state = copy_world("demo-install", tmp_path)
    before = sorted(str(p.relative_to(state)) for p in state.rglob("*"))
    with held_at(["backup", "create", "--state-dir", str(state), "--output", str(tmp_path / "out")], "backup-staging"):
        run = fork_cli("migrate", "--state-dir", state, "--yes", "--backup-output", tmp_path / "pre")
        assert run.returncode == 4, run
    assert held_at.last_status in (0, 3)  # type: ignore[attr-defined]
    after = sorted(str(p.relative_to(state)) for p in state.rglob("*") if ".statekit" not in p.parts)
    assert after == [p for p in before if ".statekit" not in Path(p).parts]
    FIGURES["exclusion"]["migrates refused during backup"] += 1


def test_backup_refuses_while_another_process_holds_the_state_dir_lock(tmp_path: Path) -> None:
    """Any exclusive holder of ``.statekit/lock`` (recover, session maintenance, a migrate between its steps) keeps
    a backup out. Fails on 308a7ed (the lock was never looked at: exit 0, archive published)."""
    from statekit.layout import lock_path
    from statekit.locking import exclusive_lock

    state = copy_world("demo-install", tmp_path)
    out = tmp_path / "out"
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    holder = os.fork()
    if holder == 0:  # pragma: no cover - the second process
        try:
            with exclusive_lock(lock_path(state), "test holder"):
                os.write(ready_w, b"1")
                os.read(go_r, 1)
        finally:
            os._exit(0)
    try:
        assert os.read(ready_r, 1) == b"1"
        run = fork_cli("backup", "create", "--state-dir", state, "--output", out)
        assert run.returncode == 4, run
        assert f"pid {holder}" in run.stderr and not archives(out)
    finally:
        os.write(go_w, b"1")
        os.waitpid(holder, 0)
    run = fork_cli("backup", "create", "--state-dir", state, "--output", out)
    assert run.returncode in (0, 3), run
    FIGURES["exclusion"]["backups refused while a lock is held"] += 1
