"""Ownership and modes survive (issue 11, item 8).

* ``recover`` recreates the directories a migration's retirement removed with the modes they had
  (recorded in the receipt when the source was retired), whatever the umask. On 308a7ed
  ``identity/`` (0700) came back 0755 under umask 022 and 0777 under umask 000, and ``devices/``
  (0750) came back 0700 under umask 077.
* A root run on another user's state dir leaves every file and directory it creates (databases
  and their -wal/-shm, the lock, retired copies and their folders, the pre-migration backup and
  its folder, archives and ``.verify.json``, recovered sources, an in-place restore's files,
  pre-restore copies and journal) owned by that user. On 308a7ed
  they were root's, and the user's own next run failed on them.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

import rel_harness as h

FIGURE = h.FIGURES["ownership"]
USER = 1000  # an ordinary uid; need not exist in /etc/passwd
GROUP = 1000


def _retired_dirs(state: Path) -> dict[str, int]:
    return {"identity": 0o700, "devices": 0o750, "cron": 0o711}


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o077])
def test_recover_recreates_directories_with_their_recorded_modes(tmp_path: Path, umask: int) -> None:
    """Fails on 308a7ed: identity/ came back 0777 (umask 000) / 0755 (umask 022); devices/ 0700 instead of 0750 (umask 077)."""
    state = h.copy_world("every-family", tmp_path)
    modes = _retired_dirs(state)
    for rel, mode in modes.items():
        os.chmod(state / rel, mode)
    run = h.fork_cli("migrate", "--yes", "--no-backup", "--state-dir", state, "--json", umask=umask)
    assert run.returncode in (0, 3), run
    run_id = json.loads(run.stdout)["run_id"]
    gone = [rel for rel in modes if not (state / rel).exists()]
    assert "identity" in gone, "the retirement should have removed identity/ (both its files are imported)"
    run = h.fork_cli("recover", run_id, "--state-dir", state, "--yes", umask=umask)
    assert run.returncode in (0, 3), run
    problems = []
    for rel in gone:
        got = stat.S_IMODE(os.lstat(state / rel).st_mode)
        FIGURE["recreated dirs checked"] += 1
        if got != modes[rel]:
            problems.append(f"{rel}: {got:04o}, recorded {modes[rel]:04o} (umask {umask:03o})")
    assert not problems, problems
    assert (state / "identity" / "device.json").is_file()
    FIGURE["held"] += 1


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    os.chown(root, uid, gid)
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            os.chown(os.path.join(directory, name), uid, gid, follow_symlinks=False)


def _not_owned(root: Path, uid: int) -> list[str]:
    found = []
    for directory, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(directory) / name
            st = os.lstat(path)
            FIGURE["created paths checked"] += 1
            if st.st_uid != uid:
                found.append(f"{path.relative_to(root)} (uid {st.st_uid})")
    return found


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root (the project VM runs tests as root)")
def test_a_root_run_on_a_users_state_dir_leaves_everything_to_that_user(tmp_path: Path) -> None:
    """Fails on 308a7ed: the databases, lock, retired copies, backups and restored files a root run made were root's."""
    state = h.copy_world("every-family", tmp_path)
    home = state.parent
    _chown_tree(home, USER, GROUP)
    env = {"HOME": str(home)}
    run = h.fork_cli("migrate", "--yes", "--state-dir", state, "--json", env=env)  # with its pre-migration backup
    assert run.returncode in (0, 3), run
    run_id = json.loads(run.stdout)["run_id"]
    h.next_archive_second(home / "openclaw-backups")
    run = h.fork_cli("backup", "create", "--state-dir", state, env=env)
    assert run.returncode == 0, run
    run = h.fork_cli("recover", run_id, "--state-dir", state, "--yes", env=env)
    assert run.returncode in (0, 3), run
    archive = sorted((home / "openclaw-backups").rglob("openclaw-backup-*.tar.zst"))[-1]  # in the install's own folder
    run = h.fork_cli("backup", "restore", archive, "--state-dir", state, "--yes", env=env)  # in place: staged, aside, journal
    assert run.returncode == 0, run
    assert (home / "openclaw-backups").is_dir() and (state / "state" / "openclaw.sqlite").is_file()
    problems = _not_owned(home, USER)
    assert not problems, problems
    FIGURE["held"] += 1
