"""Symlinks are never a way to lose or redirect data (issue 11, item 1).

Each placement below failed on 308a7ed (except the legacy relocation, a guard):

* a state dir that is a symlink (named by ``--state-dir``, ``OPENCLAW_STATE_DIR`` or the default
  ``~/.openclaw``) was backed up as an empty archive that still said "Verification: passed"
  (the pre-migration backup too), and an in-place restore through it moved the link aside and
  left an empty state dir; a symlinked legacy ``~/.clawdbot`` is relocated as the link;
* a symlink planted at ``.statekit/lock`` or at the backup output's ``.statekit-backup.lock``
  made a run truncate the file it points to (and a symlinked ``.statekit`` took the lock
  outside);
* a symlinked ``agents/<id>/agent`` got a database created outside the state dir, a symlinked
  ``.statekit/migrated`` received the retired sources outside, and a restore wrote through a
  symlinked directory of the live state;
* a symlinked credentials dir was archived as a bare link (its files left out).

What must hold: the state dir is the directory the link names; nothing statekit writes lands
outside the tree it belongs to; a refusal is one line naming the path; the file a planted link
points to is byte-identical afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest
import zstandard

import rel_harness as h

FIGURE = h.FIGURES["symlinks"]
VICTIM = b"precious bytes a planted link points to\n"


def _assets(archive: Path) -> int:
    run = h.fork_cli("backup", "verify", archive, "--json")
    assert run.returncode == 0, run
    return int(json.loads(run.stdout)["assets_verified"])


def _member_names(archive: Path) -> list[str]:
    """Every member name of a statekit archive (its payload is a tar inside the outer tar)."""
    names: list[str] = []
    with archive.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as stream:
        with tarfile.open(fileobj=stream, mode="r|") as outer:
            for member in outer:
                names.append(member.name)
                if member.name.endswith(".tar.zst") and member.isfile():
                    inner = outer.extractfile(member)
                    assert inner is not None
                    with zstandard.ZstdDecompressor().stream_reader(inner) as payload, tarfile.open(fileobj=payload, mode="r|") as tar:
                        names.extend(m.name for m in tar)
    return names


def _real_and_link(tmp_path: Path) -> tuple[Path, Path]:
    real = h.copy_world("demo-install", tmp_path)
    data = tmp_path / "data" / "oc-state"
    data.parent.mkdir()
    os.rename(real, data)
    link = tmp_path / "home" / ".openclaw"
    link.symlink_to(data)
    return data, link


@pytest.mark.parametrize("how", ["flag", "env", "default"])
def test_a_symlinked_state_dir_is_backed_up_migrated_and_restored_as_its_target(tmp_path: Path, how: str) -> None:
    """Fails on 308a7ed: 0 assets, "Verification: passed"; the in-place restore left an empty state dir."""
    data, link = _real_and_link(tmp_path)
    env = {"HOME": str(tmp_path / "home")}
    where: list[str] = []
    if how == "flag":
        where = ["--state-dir", str(link)]
    elif how == "env":
        env["OPENCLAW_STATE_DIR"] = str(link)
    direct = tmp_path / "direct"
    run = h.fork_cli("backup", "create", "--state-dir", data, "--output", direct, "--json", env=env)
    assert run.returncode == 0, run
    expected = json.loads(run.stdout)["assets"]
    assert expected > 10
    h.next_archive_second(direct)
    out = tmp_path / "out"
    run = h.fork_cli("backup", "create", *where, "--output", out, "--json", env=env)
    assert run.returncode == 0, run
    assert json.loads(run.stdout)["assets"] == expected
    archive = Path(json.loads(run.stdout)["archive"])
    assert _assets(archive) == expected

    run = h.fork_cli("migrate", "--yes", *where, "--json", env=env)
    assert run.returncode in (0, 3), run
    report = json.loads(run.stdout)
    assert _assets(Path(report["backup_path"])) >= expected  # the pre-migration backup holds the state (and .statekit/)
    assert (data / "state" / "openclaw.sqlite").is_file() and link.is_symlink()

    run = h.fork_cli("backup", "restore", archive, *where, "--yes", env=env)
    assert run.returncode == 0, run
    assert link.is_symlink() and os.path.realpath(link) == str(data)
    assert (data / "openclaw.json").is_file() and (data / "agents").is_dir()
    assert not list(link.parent.glob(".openclaw.*")), "the link was moved aside"
    FIGURE["symlinked state dir placements"] += 1
    FIGURE["held"] += 1


def test_a_symlinked_legacy_dir_is_relocated_as_the_link(tmp_path: Path) -> None:
    """A found ``~/.clawdbot -> /data/clawdbot`` becomes ``~/.openclaw -> /data/clawdbot``; the data is migrated where it is.

    Held on 308a7ed already (rename(2) moves the link); kept as the guard of the documented choice now
    that the state dir is resolved through links.
    """
    state = h.copy_world("demo-install", tmp_path)
    data = tmp_path / "data" / "clawdbot"
    data.parent.mkdir()
    os.rename(state, data)
    legacy = tmp_path / "home" / ".clawdbot"
    legacy.symlink_to(data)
    env = {"HOME": str(tmp_path / "home")}
    run = h.fork_cli("migrate", "--yes", "--no-backup", env=env)
    assert run.returncode in (0, 3), run
    canonical = tmp_path / "home" / ".openclaw"
    assert canonical.is_symlink() and os.path.realpath(canonical) == str(data)
    assert not os.path.lexists(legacy)
    assert (data / "state" / "openclaw.sqlite").is_file()
    assert not (tmp_path / "data" / ".openclaw").exists()
    FIGURE["symlinked state dir placements"] += 1
    FIGURE["held"] += 1


def _plant(link: Path, victim: Path) -> None:
    victim.write_bytes(VICTIM)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(victim)


@pytest.mark.parametrize("command", ["migrate", "recover", "restore"])
def test_a_link_planted_at_the_state_lock_is_refused_and_never_truncates(tmp_path: Path, command: str) -> None:
    """Fails on 308a7ed: the lock was opened through the link and the victim truncated to the holder's pid."""
    state = h.copy_world("demo-install", tmp_path)
    victim = tmp_path / "victim.txt"
    args: list[object] = ["migrate", "--yes", "--no-backup", "--state-dir", state]
    if command == "restore":
        run = h.fork_cli("backup", "create", "--state-dir", state, "--output", tmp_path / "out", "--json")
        assert run.returncode == 0, run
        args = ["backup", "restore", json.loads(run.stdout)["archive"], "--state-dir", state, "--yes"]
    if command == "recover":
        run = h.fork_cli("migrate", "--yes", "--no-backup", "--state-dir", state, "--json")
        assert run.returncode in (0, 3), run
        args = ["recover", json.loads(run.stdout)["run_id"], "--state-dir", state, "--yes"]
    (state / ".statekit" / "lock").unlink(missing_ok=True)  # an earlier run's own lock file
    _plant(state / ".statekit" / "lock", victim)
    run = h.fork_cli(*args)
    assert victim.read_bytes() == VICTIM
    assert run.returncode != 0 and not run.traceback, run
    assert "lock" in run.stderr and "symbolic link" in run.stderr, run
    FIGURE["planted lock links"] += 1
    FIGURE["held"] += 1


def test_a_link_planted_at_the_backup_output_lock_is_refused(tmp_path: Path) -> None:
    """Fails on 308a7ed: ``<output>/.statekit-backup.lock`` was opened through the link (victim truncated)."""
    state = h.copy_world("demo-install", tmp_path)
    out = tmp_path / "out"
    out.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    _plant(out / ".statekit-backup.lock", victim)
    run = h.fork_cli("backup", "create", "--state-dir", state, "--output", out)
    assert victim.read_bytes() == VICTIM
    assert run.returncode == 1 and len(h.error_lines(run)) == 1 and not run.traceback, run
    assert ".statekit-backup.lock" in run.stderr
    assert not h.archives(out)
    FIGURE["planted lock links"] += 1
    FIGURE["held"] += 1


def test_a_hard_link_or_foreign_file_at_the_lock_is_not_statekits(tmp_path: Path) -> None:
    """A hard link at the lock (``ln victim .statekit/lock``) is not statekit's own file: refused, victim untouched."""
    state = h.copy_world("demo-install", tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(VICTIM)
    shutil.rmtree(state / ".statekit", ignore_errors=True)  # the world's install id lives there
    (state / ".statekit").mkdir(mode=0o700)
    os.link(victim, state / ".statekit" / "lock")
    run = h.fork_cli("migrate", "--yes", "--no-backup", "--state-dir", state)
    assert victim.read_bytes() == VICTIM
    assert run.returncode == 1 and "hard links" in run.stderr and not run.traceback, run
    FIGURE["planted lock links"] += 1
    FIGURE["held"] += 1


def _outside_entries(outside: Path) -> list[str]:
    return sorted(str(p.relative_to(outside)) for p in outside.rglob("*"))


def test_a_symlinked_statekit_dir_takes_nothing_outside(tmp_path: Path) -> None:
    """Fails on 308a7ed: the lock, the pre-migration bookkeeping and the retired copies went through ``.statekit -> outside``."""
    state = h.copy_world("demo-install", tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(state / ".statekit", ignore_errors=True)  # the world's install id lives there
    (state / ".statekit").symlink_to(outside)
    run = h.fork_cli("migrate", "--yes", "--no-backup", "--state-dir", state)
    assert _outside_entries(outside) == []
    assert run.returncode == 1 and len(h.error_lines(run)) == 1 and not run.traceback, run
    assert "outside" in run.stderr
    FIGURE["symlinked directories written through"] += 1
    FIGURE["held"] += 1


def test_a_symlinked_agent_dir_gets_no_database_outside(tmp_path: Path) -> None:
    """Fails on 308a7ed: ``agents/work/agent -> outside`` received ``openclaw-agent.sqlite`` (and its -wal/-shm)."""
    state = h.copy_world("demo-install", tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (state / "agents" / "work" / "agent").symlink_to(outside)
    sessions = sorted(p.name for p in (state / "agents" / "work" / "sessions").iterdir())
    run = h.fork_cli("migrate", "--yes", "--no-backup", "--state-dir", state)
    assert _outside_entries(outside) == []
    assert run.returncode == 3 and not run.traceback, run
    assert "agents/work/agent/openclaw-agent.sqlite" in run.stderr and "outside" in run.stderr
    assert sorted(p.name for p in (state / "agents" / "work" / "sessions").iterdir()) == sessions  # left in place
    assert (state / "state" / "openclaw.sqlite").is_file()  # the other agents migrated
    FIGURE["symlinked directories written through"] += 1
    FIGURE["held"] += 1


def test_a_symlinked_retired_area_receives_no_retired_copy(tmp_path: Path) -> None:
    """Fails on 308a7ed: ``.statekit/migrated -> outside`` received every retired source."""
    state = h.copy_world("demo-install", tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(state / ".statekit", ignore_errors=True)  # the world's install id lives there
    (state / ".statekit").mkdir(mode=0o700)
    (state / ".statekit" / "migrated").symlink_to(outside)
    before = h.file_map(state)
    run = h.fork_cli("migrate", "--yes", "--no-backup", "--state-dir", state)
    assert _outside_entries(outside) == []
    assert not run.traceback, run
    assert "outside" in run.stderr
    after = h.file_map(state)
    assert all(after.get(rel) == data for rel, data in before.items()), "a source was lost instead of retired"
    FIGURE["symlinked directories written through"] += 1
    FIGURE["held"] += 1


def test_restore_never_writes_through_a_symlinked_directory_of_the_live_state(tmp_path: Path) -> None:
    """Fails on 308a7ed: ``cron -> outside`` in the live state dir received the restored cron files."""
    state = h.copy_world("demo-install", tmp_path)
    run = h.fork_cli("backup", "create", "--state-dir", state, "--output", tmp_path / "out", "--json")
    assert run.returncode == 0, run
    archive = json.loads(run.stdout)["archive"]
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(state / "cron")
    (state / "cron").symlink_to(outside)
    run = h.fork_cli("backup", "restore", archive, "--state-dir", state, "--yes")
    assert _outside_entries(outside) == []
    assert run.returncode == 1 and len(h.error_lines(run)) == 1 and not run.traceback, run
    assert "cron" in run.stderr and "outside" in run.stderr
    FIGURE["symlinked directories written through"] += 1
    FIGURE["held"] += 1


def test_a_symlinked_credentials_dir_is_backed_up_as_what_it_points_to(tmp_path: Path) -> None:
    """Fails on 308a7ed: the credentials root was a link, skipped as "not a regular file"; its files were in no archive."""
    state = h.copy_world("every-family", tmp_path)
    creds = tmp_path / "secrets" / "credentials"
    creds.parent.mkdir()
    os.rename(state / "credentials", creds)
    (state / "credentials").symlink_to(creds)
    names = sorted(p.relative_to(creds).as_posix() for p in creds.rglob("*") if p.is_file())
    run = h.fork_cli("backup", "create", "--state-dir", state, "--output", tmp_path / "out", "--json")
    assert run.returncode == 0, run
    archive = Path(json.loads(run.stdout)["archive"])
    assert _assets(archive) > 0
    members = _member_names(archive)
    for name in names:
        assert any(m.endswith("/" + name) and "credentials" in m for m in members), (name, members)
    FIGURE["symlinked credential dirs"] += 1
    FIGURE["held"] += 1
