"""I/O faults (ENOSPC, EIO, EFBIG, EXDEV) during migrate, backup create and restore.

Three layers, because SQLite writes from C where no Python patch reaches:

* ``faultkit.iofaults`` injector (installed in the forked child only: ``os.write``, ``fsync``,
  ``rename``, ``link``, ``open`` for writing, ``mkdir``, ``copy_file_range``,
  file-object writes...): the N-th call on a chosen path fails;
* ``RLIMIT_FSIZE``: every write past N bytes, SQLite's included, fails (EFBIG,
  which SQLite reports as a disk I/O error);
* a size-capped tmpfs (real ENOSPC, for SQLite, the archive and the staging dir
  alike; also an inode cap), when this host lets the tests mount one (root on the
  project VM; skipped elsewhere).

Every case: the contract's exit code (1 fatal, 3 some sources left in place
and named; backup and restore 1), no traceback and, when fatal, exactly one
``statekit: error:`` line; every legacy source in place or retired
byte-identical; no temp, partial or staged file left; no published archive
that fails verification; an in-place restore leaves the state dir exactly as
it was. Then the same command without the fault runs to the same outcome as
an uninterrupted run.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import rel_harness as h
from statekit.backup import verify_archive

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def record(group: str, fired: bool, problems: list[str]) -> None:
    figures = h.FIGURES[f"io-faults/{group}"]
    figures["runs"] += 1
    figures["injected"] += int(fired)
    figures["survived"] += int(fired and not problems)


# --------------------------------------------------------------------------- migrate


@pytest.fixture(scope="module")
def migrate_world(tmp_path_factory: pytest.TempPathFactory) -> h.MigrateWorld:
    return h.build_migrate_world(tmp_path_factory.mktemp("io-migrate"), "demo-install")


@pytest.fixture(scope="module")
def migrate_world_no_backup(tmp_path_factory: pytest.TempPathFactory) -> h.MigrateWorld:
    return h.build_migrate_world(tmp_path_factory.mktemp("io-migrate-nb"), "demo-install", backup=False)


# (spec, exit codes the contract allows for it). Paths: /backups/ is the pre-migration backup dir.
MIGRATE_SPECS = [
    ("write:ENOSPC:1:/backups/", (1,)),
    ("write:ENOSPC:4:/backups/", (1, 3)),
    ("write:ENOSPC:1+:/backups/", (1,)),
    ("write:EIO:2:/backups/", (1, 3)),
    ("fsync:EIO:1:/backups/", (1,)),
    ("open:ENOSPC:2:/backups/", (1,)),
    ("mkdir:ENOSPC:1:/backups/", (1,)),
    ("copy:ENOSPC:1:/backups/", (1,)),
    ("link:EIO:1:/backups/", (1,)),
    ("replace:EIO:1:/backups/", (3,)),  # the .verify.json sidecar: a warning, the archive stands
    ("unlink:EIO:1:/backups/", (1,)),
    ("rename:EIO:1:/.statekit/migrated/", (3,)),
    ("rename:EIO:6:/.statekit/migrated/", (3,)),
    ("rename:ENOSPC:1+:/sessions/", (3,)),
    ("rename:EXDEV:1+:/.statekit/migrated/", (3,)),  # another file system: copy, verify, unlink
    ("rename:EXDEV:1+:/sessions/,write:ENOSPC:2+:/.statekit/migrated/", (3,)),  # ... and the copy fails
    ("mkdir:ENOSPC:2:/.statekit/migrated", (3,)),
    ("chmod:EPERM:1+:/.statekit/migrated/", (0, 3)),
    ("open:EIO:1:/.statekit/lock", (1,)),
    ("*:ENOSPC:1+:/.statekit/", (1,)),
]


def migrate_fault_trial(world: h.MigrateWorld, *, io_faults: str | None = None, fsize: int | None = None,
                        codes: tuple[int, ...] = (1, 3)) -> tuple[bool, list[str]]:
    arena = world.arena
    state = arena.fresh()
    faulty = h.fork_cli(*world.args(), io_faults=io_faults, fsize=fsize)
    fired = faulty.faults_fired > 0 or (fsize is not None and faulty.returncode != world.exit_code)
    problems = h.clear_failure(faulty, codes) if fired else []
    problems += [f"after the fault: {p}" for p in h.lost_sources(state, world.originals, require_receipt=False)]
    problems += [f"after the fault, left behind: {p}" for p in h.leftovers(arena.output)]
    for archive in h.archives(arena.output):
        report = verify_archive(archive)
        if not report.ok:
            problems.append(f"after the fault: published archive {archive.name} does not verify")
    if faulty.returncode == 1 and not (state / "state").exists() and _without_lock(h.file_map(state)) != world.originals:
        problems.append("a fatal failure before any import changed the state dir")
    h.next_archive_second(arena.output)
    rerun = h.fork_cli(*world.args())
    if rerun.returncode not in (0, 3) or rerun.traceback:
        return fired, problems + [f"rerun: {rerun}"]
    problems += h.convergence_problems(world, arena.output)
    return fired, problems


def _without_lock(files: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in files.items() if k != ".statekit/lock"}


@pytest.mark.parametrize("spec,codes", MIGRATE_SPECS, ids=[s for s, _ in MIGRATE_SPECS])
def test_migrate_survives_an_injected_fault(migrate_world: h.MigrateWorld, spec: str, codes: tuple[int, ...]) -> None:
    fired, problems = migrate_fault_trial(migrate_world, io_faults=spec, codes=codes)
    record("migrate", fired, problems)
    assert fired, f"{spec} was never reached"
    assert not problems, f"{spec}:\n" + "\n".join(problems)


# RLIMIT_FSIZE: the databases themselves hit the limit (no backup, so SQLite is the first writer to fail).
FSIZE_CI = [8 << 10, 96 << 10, 200 << 10, 300 << 10, 420 << 10]


@pytest.mark.parametrize("limit", FSIZE_CI)
def test_migrate_survives_a_file_size_limit(migrate_world_no_backup: h.MigrateWorld, limit: int) -> None:
    fired, problems = migrate_fault_trial(migrate_world_no_backup, fsize=limit)
    record("migrate-efbig", fired, problems)
    assert not problems, f"RLIMIT_FSIZE={limit}:\n" + "\n".join(problems)


@pytest.mark.slow
def test_migrate_fault_matrix(migrate_world: h.MigrateWorld, migrate_world_no_backup: h.MigrateWorld) -> None:
    """Every op x errno x position on the backup dir and the retired dir, and file size limits every 8 KiB."""
    failures = []
    for op in ("write", "fsync", "open", "mkdir", "copy", "link", "rename", "replace", "unlink"):
        for errno_name in ("ENOSPC", "EIO"):
            for where in ("/backups/", "/.statekit/migrated"):
                for nth in ("1", "2", "3", "5", "8", "13", "1+"):
                    spec = f"{op}:{errno_name}:{nth}:{where}"
                    fired, problems = migrate_fault_trial(migrate_world, io_faults=spec)
                    record("migrate", fired, problems)
                    failures += [f"{spec}: {p}" for p in problems]
    for limit in range(8 << 10, 520 << 10, 8 << 10):
        fired, problems = migrate_fault_trial(migrate_world_no_backup, fsize=limit)
        record("migrate-efbig", fired, problems)
        failures += [f"RLIMIT_FSIZE={limit}: {p}" for p in problems]
    assert not failures, "\n".join(failures[:40])


# --------------------------------------------------------------------------- a real full disk


@pytest.fixture(scope="module")
def tmpfs_world(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("io-tmpfs")
    if not h.can_mount_tmpfs(base):
        pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN); the injected faults above still ran")
    mount = base / "fs"
    h.mount_tmpfs(mount, 64 << 10)
    try:
        yield h.build_migrate_world(mount, "demo-install"), mount
    finally:
        h.umount(mount)


def tmpfs_trial(world: h.MigrateWorld, mount: Path, size_kb: int, inodes: int | None = None) -> tuple[bool, list[str]]:
    h.empty_dir(mount)
    h.remount_tmpfs(mount, size_kb, inodes)
    try:
        state = world.arena.fresh()
    except OSError:
        h.empty_dir(mount)
        h.remount_tmpfs(mount, 64 << 10)
        return False, []  # not even the legacy files fit: nothing to test at this size
    faulty = h.fork_cli(*world.args())
    full = faulty.returncode != world.exit_code or "space" in faulty.stderr or "full" in faulty.stderr
    problems = h.clear_failure(faulty, (1, 3)) if full else []
    problems += [f"on the full disk: {p}" for p in h.lost_sources(state, world.originals, require_receipt=False)]
    for archive in h.archives(world.arena.output):
        if not verify_archive(archive).ok:
            problems.append(f"on the full disk: published archive {archive.name} does not verify")
    h.remount_tmpfs(mount, 64 << 10)
    h.next_archive_second(world.arena.output)
    rerun = h.fork_cli(*world.args())
    if rerun.returncode not in (0, 3) or rerun.traceback:
        return full, problems + [f"rerun with space again: {rerun}"]
    problems += h.convergence_problems(world, world.arena.output)
    return full, problems


TMPFS_CI = [256, 640, 1024, 1536, 2304]


@pytest.mark.parametrize("size_kb", TMPFS_CI)
def test_migrate_on_a_full_disk(tmpfs_world, size_kb: int) -> None:
    world, mount = tmpfs_world
    full, problems = tmpfs_trial(world, mount, size_kb)
    record("migrate-enospc-tmpfs", full, problems)
    assert not problems, f"tmpfs of {size_kb} KiB:\n" + "\n".join(problems)


@pytest.mark.parametrize("inodes", [48, 56, 60, 64])
def test_migrate_out_of_inodes(tmpfs_world, inodes: int) -> None:
    world, mount = tmpfs_world
    full, problems = tmpfs_trial(world, mount, 64 << 10, inodes)
    record("migrate-enospc-tmpfs", full, problems)
    assert not problems, f"tmpfs with {inodes} inodes:\n" + "\n".join(problems)


@pytest.mark.slow
def test_migrate_on_every_disk_size(tmpfs_world) -> None:
    world, mount = tmpfs_world
    failures = []
    for size_kb in range(160, 4096, 48):
        full, problems = tmpfs_trial(world, mount, size_kb)
        record("migrate-enospc-tmpfs", full, problems)
        failures += [f"{size_kb} KiB: {p}" for p in problems]
    for inodes in range(36, 120, 4):
        full, problems = tmpfs_trial(world, mount, 64 << 10, inodes)
        record("migrate-enospc-tmpfs", full, problems)
        failures += [f"{inodes} inodes: {p}" for p in problems]
    assert not failures, "\n".join(failures[:40])


# --------------------------------------------------------------------------- backup create


@pytest.fixture(scope="module")
def backup_world(tmp_path_factory: pytest.TempPathFactory) -> h.BackupWorld:
    return h.build_backup_world(tmp_path_factory.mktemp("io-create"))


CREATE_SPECS = [
    "write:ENOSPC:1:/backups/", "write:ENOSPC:3:/backups/", "write:ENOSPC:5:/backups/", "write:EIO:6:/backups/", "write:ENOSPC:1+:/backups/",
    "fsync:EIO:1:/backups/", "fsync:EIO:2:/backups/", "open:ENOSPC:1:/backups/", "open:EIO:3:/backups/", "mkdir:ENOSPC:1:/backups/",
    "copy:ENOSPC:1:/backups/", "copy:EIO:1+:/backups/", "link:EIO:1:/backups/", "link:EPERM:1:/backups/",
    "link:EPERM:1+:/backups/,rename:EIO:1:/backups/",
    "replace:ENOSPC:1:/backups/", "unlink:EIO:1:/backups/",
    "unlink:EIO:1+:.tar.zst.partial",  # removing the .partial name after the archive got its final one
]
# (Issue 16: create's verify pass no longer copies a database to a scratch file -- the archived bytes are the snapshot
# it integrity-checked -- so "write:ENOSPC:7" (that copy's write) and "unlink:EIO:1+:/.statekit-verify-" (removing it)
# have no I/O left to hit in create. `backup verify` of an archive still makes that copy, one database at a time.)


def create_fault_trial(world: h.BackupWorld, *, io_faults: str | None = None, fsize: int | None = None) -> tuple[bool, list[str]]:
    state = world.reset()
    output = world.arena.output
    faulty = h.fork_cli(*world.args(), io_faults=io_faults, fsize=fsize)
    fired = faulty.faults_fired > 0 or (fsize is not None and faulty.returncode != 0)
    # exit 3: published and verified, with a warning named (issue 12: create's warnings set the exit code)
    problems = h.clear_failure(faulty, (0, 1, 3)) if fired else []
    failed = faulty.returncode not in (0, 3)
    published = h.archives(output)
    if failed and published:
        problems.append(f"a failed create published {[p.name for p in published]}")
    for archive in published:
        if not verify_archive(archive).ok:
            problems.append(f"published archive {archive.name} does not verify")
    if failed:
        problems += [f"left behind by the failed run: {p}" for p in h.leftovers(output, state)]
    if h.tree_outcome(state) != world.tree:
        problems.append("the state dir changed (beyond backup_runs)")
    rows = h.backup_run_rows(state)
    if failed and rows and rows[-1][0] == "ok":
        problems.append(f"backup_runs records the failed run as ok: {rows}")
    h.next_archive_second(output)
    rerun = h.fork_cli(*world.args())
    if rerun.returncode != 0:
        return fired, problems + [f"rerun: {rerun}"]
    if not h.archives(output) or not verify_archive(h.archives(output)[-1]).ok:
        problems.append("the rerun's archive does not verify")
    problems += [f"left behind after the rerun: {p}" for p in h.leftovers(output, state)]
    return fired, problems


@pytest.mark.parametrize("spec", CREATE_SPECS)
def test_create_survives_an_injected_fault(backup_world: h.BackupWorld, spec: str) -> None:
    fired, problems = create_fault_trial(backup_world, io_faults=spec)
    record("backup-create", fired, problems)
    assert fired, f"{spec} was never reached"
    assert not problems, f"{spec}:\n" + "\n".join(problems)


@pytest.mark.parametrize("limit", [4 << 10, 64 << 10, 200 << 10, 600 << 10])
def test_create_survives_a_file_size_limit(backup_world: h.BackupWorld, limit: int) -> None:
    """EFBIG inside SQLite's VACUUM INTO and inside the archive writer."""
    fired, problems = create_fault_trial(backup_world, fsize=limit)
    record("backup-create-efbig", fired, problems)
    assert not problems, f"RLIMIT_FSIZE={limit}:\n" + "\n".join(problems)


@pytest.mark.slow
def test_create_fault_matrix(backup_world: h.BackupWorld) -> None:
    failures = []
    for op in ("write", "fsync", "open", "mkdir", "copy", "link", "rename", "replace", "unlink", "chmod"):
        for errno_name in ("ENOSPC", "EIO"):
            for nth in ("1", "2", "3", "4", "6", "9", "14", "20", "1+"):
                spec = f"{op}:{errno_name}:{nth}:/backups/"
                fired, problems = create_fault_trial(backup_world, io_faults=spec)
                record("backup-create", fired, problems)
                failures += [f"{spec}: {p}" for p in problems]
    for limit in range(4 << 10, 1200 << 10, 24 << 10):
        fired, problems = create_fault_trial(backup_world, fsize=limit)
        record("backup-create-efbig", fired, problems)
        failures += [f"RLIMIT_FSIZE={limit}: {p}" for p in problems]
    assert not failures, "\n".join(failures[:40])


# --------------------------------------------------------------------------- restore


@pytest.fixture(scope="module")
def restore_world(tmp_path_factory: pytest.TempPathFactory) -> h.RestoreWorld:
    return h.build_restore_world(tmp_path_factory.mktemp("io-restore"))


RESTORE_SPECS = [
    "write:ENOSPC:1", "write:ENOSPC:4", "write:EIO:5", "write:ENOSPC:1+", "fsync:EIO:1", "fsync:EIO:5", "open:ENOSPC:2",
    "open:EIO:5", "mkdir:ENOSPC:1", "rename:EIO:1", "rename:EIO:3", "rename:EIO:7", "rename:ENOSPC:10", "chmod:EPERM:2",
]


def restore_fault_trial(world: h.RestoreWorld, spec: str) -> tuple[bool, list[str]]:
    state = world.reset()
    faulty = h.fork_cli(*world.args(), io_faults=f"{spec}:{state}")
    fired = faulty.faults_fired > 0
    problems = h.clear_failure(faulty, (0, 1)) if fired else []
    if faulty.returncode == 0:  # a tolerated fault (a directory fsync): then the restore must be complete
        if h.tree_outcome(state) != world.expected_tree or h.db_dumps(state) != world.a_dumps:
            problems.append("exit 0 after a fault, but the archive is not fully restored")
    elif fired and h.exact_state(state) != world.b_tree_state:
        now = h.exact_state(state)
        problems.append(f"the state dir is not exactly as before: extra {sorted(set(now) - set(world.b_tree_state))[:4]}, "
                        f"missing {sorted(set(world.b_tree_state) - set(now))[:4]}, "
                        f"changed {[k for k in now if k in world.b_tree_state and now[k] != world.b_tree_state[k]][:4]}")
    rerun = h.fork_cli(*world.args())
    if rerun.returncode != 0:
        return fired, problems + [f"rerun: {rerun}"]
    if h.tree_outcome(state) != world.expected_tree or h.db_dumps(state) != world.a_dumps:
        problems.append("the rerun did not restore the archive fully")
    problems += [f"left behind: {p}" for p in h.leftovers(state)]
    return fired, problems


@pytest.mark.parametrize("spec", RESTORE_SPECS)
def test_in_place_restore_rolls_back_on_a_fault(restore_world: h.RestoreWorld, spec: str) -> None:
    fired, problems = restore_fault_trial(restore_world, spec)
    record("backup-restore", fired, problems)
    assert fired, f"{spec} was never reached"
    assert not problems, f"{spec}:\n" + "\n".join(problems)


@pytest.mark.parametrize("spec", ["write:ENOSPC:1", "write:ENOSPC:7", "fsync:EIO:3", "mkdir:ENOSPC:4", "chmod:EIO:2"])
def test_restore_into_a_fresh_target_leaves_nothing_on_a_fault(restore_world: h.RestoreWorld, tmp_path: Path, spec: str) -> None:
    target = tmp_path / "restored"
    run = h.fork_cli("backup", "restore", restore_world.archive, "--target", target, "--yes", io_faults=f"{spec}:{target}")
    problems = h.clear_failure(run, (1,))
    if target.exists():
        problems.append(f"the target was left behind: {sorted(p.name for p in target.rglob('*'))[:5]}")
    record("backup-restore-target", run.faults_fired > 0, problems)
    assert run.faults_fired, f"{spec} was never reached"
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_restore_fault_matrix(restore_world: h.RestoreWorld) -> None:
    failures = []
    rng = random.Random(h.SEED + 40)
    for op in ("write", "fsync", "open", "mkdir", "rename", "chmod", "unlink"):
        for errno_name in ("ENOSPC", "EIO"):
            for nth in sorted({1, 2, 3, 5, 8, 12, *rng.sample(range(1, 40), 4)}):
                spec = f"{op}:{errno_name}:{nth}"
                fired, problems = restore_fault_trial(restore_world, spec)
                record("backup-restore", fired, problems)
                failures += [f"{spec}: {p}" for p in problems]
    assert not failures, "\n".join(failures[:40])


DEPENDENT = [
    ("cron/jobs.json", "cron/jobs-state.json", "legacy_readers/cron.py:977"),
    ("devices/paired.json", "nodes/paired.json", "legacy_readers/nodes.py:52"),
]


@pytest.mark.parametrize("first,dependent,where", DEPENDENT, ids=[d[1] for d in DEPENDENT])
def test_a_failed_retirement_does_not_strand_a_dependent_source(tmp_path: Path, first: str, dependent: str, where: str) -> None:
    """Found here (was a strict xfail): the dependent readers took "the file is still in place" for "not imported";
    fixed in 000fd08 (ImportContext.dependency_pending asks for the dependency's completed receipt)."""
    every = h.FIXTURES / "every-family" / ".openclaw"
    state = tmp_path / "home" / ".openclaw"
    for rel in (first, dependent):
        (state / rel).parent.mkdir(parents=True, exist_ok=True)
        (state / rel).write_bytes((every / rel).read_bytes())
    args = ("migrate", "--state-dir", state, "--yes", "--no-backup")
    faulty = h.fork_cli(*args, io_faults=f"rename:EIO:1:{first}")
    assert faulty.faults_fired == 1 and faulty.returncode == 3, faulty
    assert (state / first).is_file()  # imported, not retired: "rerun to finish"
    rerun = h.fork_cli(*args)
    assert rerun.returncode in (0, 3), rerun
    receipts = dict(h._rows(state / "state" / "openclaw.sqlite", "SELECT source_path, status FROM migration_sources"))
    assert receipts == {first: "completed", dependent: "completed"}, (where, receipts, rerun.stderr)
