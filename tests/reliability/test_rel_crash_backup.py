"""Crash injection for ``statekit backup create`` and in-place ``statekit backup restore``.

create: SIGKILL at every kind of checkpoint (recorded, staging, each member
streamed, partial written, verified, hard-linked, published, sidecar) and
after seeded random delays. At the instant of the kill, any archive under its
final name must verify *and* restore to exactly the backed-up state (no
archive that verifies may be incomplete). The next ``backup create`` into the
same directory must succeed and leave no ``.partial`` and no staging dir, and
every ``ok`` row in ``backup_runs`` must name an archive that exists.

restore (in place): the state dir holds a newer state B; the archive holds A.
Killed at every kind of checkpoint (member staged, all staged, moved aside,
placed, done) or after a random delay: at the instant of the kill every file
of B is in place or in ``.statekit/pre-restore/`` byte-identical and every
destination holds either its old or its new content; the rerun leaves the
state dir fully A (files and every table of every database, entries the
archive does not know left alone), B kept in ``pre-restore/``, and no staged
file behind.

The restore journal: after a kill at any restore checkpoint the
journal is there, ``statekit inspect`` names the pending restore (exit 3) and
changes nothing, and the next command of another kind (``backup prune``,
``backup create``, ``backup restore --resume`` or ``--abort``) finishes it:
interrupted while swapping it is rolled forward (fully A, B kept in
``pre-restore/``), while staging it is rolled back (exactly B, nothing of the
restore left), ``--resume`` always ends fully A and ``--abort`` exactly B. The
same holds for an in-place restore of an OpenClaw-format archive.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import rel_harness as h
from statekit.backup import restore_archive, verify_archive

CI_CREATE_NAMED = 10
CI_CREATE_DELAYS = 4
CI_RESTORE_NAMED = 9
CI_RESTORE_DELAYS = 3
CI_SETTLE_POINTS = 8
SLOW_DELAYS = 20
SETTLERS = ("prune", "create", "resume", "abort")


archives = h.archives
db_dumps = h.db_dumps


def traced(args: tuple, trace: Path) -> tuple[h.Run, list[str]]:
    run = h.fork_cli(*args, env={"STATEKIT_CRASHPOINT": f"trace={trace}"})
    names = trace.read_text().split() if trace.exists() else []
    trace.unlink(missing_ok=True)
    return run, names


# --------------------------------------------------------------------------- create


CreateWorld = h.BackupWorld


@pytest.fixture(scope="module")
def create_world(tmp_path_factory: pytest.TempPathFactory) -> CreateWorld:
    world = h.build_backup_world(tmp_path_factory.mktemp("crash-create"))
    run, world.names = traced(world.args(), world.base / "trace.txt")
    assert run.returncode == 0, run
    world.elapsed = run.elapsed
    world.reset()
    return world


def archive_problems(archive: Path, world: CreateWorld, scratch: Path) -> list[str]:
    """An archive under its final name must verify and hold exactly the backed-up state."""
    report = verify_archive(archive)
    if not report.ok:
        return [f"{archive.name} is published but does not verify: {report.problems[:2]}"]
    target = scratch / f"restored-{archive.stem}"
    if target.exists():
        h._force_rmtree(target)
    restore_archive(archive, target=target)
    problems = []
    tree = h.tree_outcome(target)
    state = world.arena.state
    skipped = {h.normalise(Path(s.source_path).relative_to(state).as_posix())
               for s in (report.manifest.skipped if report.manifest else []) if Path(s.source_path).is_relative_to(state)}
    expected = {k: v for k, v in world.tree.items() if k not in skipped}
    if tree != expected:
        problems.append(f"{archive.name} restores to a different tree: extra {sorted(set(tree) - set(expected))[:4]}, "
                        f"missing {sorted(set(expected) - set(tree))[:4]}")
    dumps = db_dumps(target)
    for rel, tables in world.dumps.items():
        mine = {t: rows for t, rows in dumps.get(rel, {}).items() if t != "backup_runs"}
        theirs = {t: rows for t, rows in tables.items() if t != "backup_runs"}
        if mine != theirs:
            problems.append(f"{archive.name}: database {rel} differs from the backed-up one")
    h._force_rmtree(target)
    return problems


def create_trial(world: CreateWorld, *, point: str | None = None, delay: float | None = None) -> tuple[bool, list[str]]:
    state = world.reset()
    output = world.arena.output
    env = {"STATEKIT_CRASHPOINT": point} if point else {}
    first = h.fork_cli(*world.args(), env=env, kill_after=delay)
    problems = []
    if point and not first.killed:
        problems.append(f"not killed: {first}")
    if first.traceback:
        problems.append(f"traceback: {first.stderr[-800:]}")
    for archive in archives(output):
        problems += [f"after the kill: {p}" for p in archive_problems(archive, world, world.base)]
    h.next_archive_second(output)
    rerun = h.fork_cli(*world.args())
    if rerun.returncode != 0:
        return first.killed, problems + [f"rerun: {rerun}"]
    problems += [f"left behind after the next run: {p}" for p in h.leftovers(output, state)]
    for archive in archives(output)[-1:]:
        problems += [f"rerun: {p}" for p in archive_problems(archive, world, world.base)]
    if h.tree_outcome(state) != world.tree:
        problems.append("the state dir changed (beyond backup_runs)")
    for status, path in h.backup_run_rows(state):
        if status == "ok" and not Path(path).is_file():
            problems.append(f"backup_runs says ok for {Path(path).name}, which was never published")
    return first.killed, problems


@pytest.fixture(scope="module")
def create_points(create_world: CreateWorld) -> list[int]:
    return h.named_sample(create_world.names, CI_CREATE_NAMED, random.Random(h.SEED + 10))


def test_create_passes_every_kind_of_checkpoint(create_world: CreateWorld) -> None:
    expected = {"backup-recorded", "backup-staging", "backup-member-added", "backup-partial-written", "backup-verified",
                "backup-linked", "backup-published", "backup-sidecar-written"}
    assert set(create_world.names) == expected


@pytest.mark.parametrize("index", range(CI_CREATE_NAMED))
def test_create_killed_at_a_checkpoint(create_world: CreateWorld, create_points: list[int], index: int) -> None:
    k = create_points[index]
    killed, problems = create_trial(create_world, point=f"*:{k}")
    h.record_crash("backup-create", killed, problems)
    assert not problems, f"kill point {k} ({create_world.names[k - 1]}):\n" + "\n".join(problems)


@pytest.mark.parametrize("index", range(CI_CREATE_DELAYS))
def test_create_killed_after_a_random_delay(create_world: CreateWorld, index: int) -> None:
    delay = random.Random(h.SEED * 1000 + 100 + index).uniform(0.01, 0.95) * create_world.elapsed
    killed, problems = create_trial(create_world, delay=delay)
    h.record_crash("backup-create", killed, problems)
    assert not problems, f"kill after {delay:.3f}s:\n" + "\n".join(problems)


# --------------------------------------------------------------------------- restore in place

RestoreWorld = h.RestoreWorld


@pytest.fixture(scope="module")
def restore_world(tmp_path_factory: pytest.TempPathFactory) -> RestoreWorld:
    world = h.build_restore_world(tmp_path_factory.mktemp("crash-restore"))
    run, world.names = traced(world.args(), world.base / "trace.txt")
    assert run.returncode == 0, run
    world.elapsed = run.elapsed
    state = world.arena.state
    assert h.tree_outcome(state) == world.expected_tree and db_dumps(state) == world.a_dumps
    return world


def _b_lost(world: RestoreWorld, state: Path) -> list[str]:
    """Files of B neither in place nor kept byte-identical under pre-restore/."""
    pre = state / ".statekit" / "pre-restore"
    lost = []
    for rel, data in world.b_files.items():
        place = state / rel
        if place.is_file() and place.read_bytes() == data:
            continue
        if not any(c.read_bytes() == data for c in pre.glob(f"*/state/{rel}")):
            lost.append(rel)
    return lost


def _mixed(world: RestoreWorld, state: Path) -> list[str]:
    """Destinations holding neither their old (B) nor their new (A) content (a missing file counts if B had it)."""
    odd = []
    for rel, digest in world.expected_tree.items():
        place = state / rel
        if not place.exists() or place.is_symlink():
            continue
        if digest == "db":
            dump = h.table_dump(place)
            if dump not in (world.a_dumps.get(rel), world.b_dumps.get(rel)):
                odd.append(rel)
            continue
        now = h.sha(place.read_bytes())
        if now != digest and (rel not in world.b_files or now != h.sha(world.b_files[rel])):
            odd.append(rel)
    return odd


def restore_trial(world: RestoreWorld, *, point: str | None = None, delay: float | None = None) -> tuple[bool, list[str]]:
    state = world.reset()
    env = {"STATEKIT_CRASHPOINT": point} if point else {}
    first = h.fork_cli(*world.args(), env=env, kill_after=delay)
    problems = []
    if point and not first.killed:
        problems.append(f"not killed: {first}")
    if first.traceback:
        problems.append(f"traceback: {first.stderr[-800:]}")
    problems += [f"after the kill, lost: {p}" for p in _b_lost(world, state)]
    problems += [f"after the kill, half-written: {p}" for p in _mixed(world, state)]
    rerun = h.fork_cli(*world.args())
    if rerun.returncode != 0:
        return first.killed, problems + [f"rerun: {rerun}"]
    problems += [f"left behind after the rerun: {p}" for p in h.leftovers(state)]
    tree = h.tree_outcome(state)
    if tree != world.expected_tree:
        problems.append(f"not fully restored: extra {sorted(set(tree) - set(world.expected_tree))[:4]}, "
                        f"missing {sorted(set(world.expected_tree) - set(tree))[:4]}, "
                        f"changed {[k for k in tree if k in world.expected_tree and tree[k] != world.expected_tree[k]][:4]}")
    if db_dumps(state) != world.a_dumps:
        problems.append("a database differs from the archived one")
    problems += [f"after the rerun, lost: {p}" for p in _b_lost(world, state)]
    return first.killed, problems


@pytest.fixture(scope="module")
def restore_points(restore_world: RestoreWorld) -> list[int]:
    return h.named_sample(restore_world.names, CI_RESTORE_NAMED, random.Random(h.SEED + 20))


def test_restore_passes_every_kind_of_checkpoint(restore_world: RestoreWorld) -> None:
    assert set(restore_world.names) == {"restore-member-written", "restore-staged", "restore-moved-aside", "restore-placed", "restore-done"}


@pytest.mark.parametrize("index", range(CI_RESTORE_NAMED))
def test_restore_killed_at_a_checkpoint(restore_world: RestoreWorld, restore_points: list[int], index: int) -> None:
    k = restore_points[index]
    killed, problems = restore_trial(restore_world, point=f"*:{k}")
    h.record_crash("backup-restore", killed, problems)
    assert not problems, f"kill point {k} ({restore_world.names[k - 1]}):\n" + "\n".join(problems)


@pytest.mark.parametrize("index", range(CI_RESTORE_DELAYS))
def test_restore_killed_after_a_random_delay(restore_world: RestoreWorld, index: int) -> None:
    delay = random.Random(h.SEED * 1000 + 200 + index).uniform(0.01, 0.95) * restore_world.elapsed
    killed, problems = restore_trial(restore_world, delay=delay)
    h.record_crash("backup-restore", killed, problems)
    assert not problems, f"kill after {delay:.3f}s:\n" + "\n".join(problems)


def test_two_in_place_restores_within_one_second_keep_both_undo_copies(restore_world: RestoreWorld, tmp_path: Path) -> None:
    """pre-restore/<UTC second>/ must not be shared: the second restore would rename over the first one's undo copy."""
    state = restore_world.reset()
    before = (state / "workspace" / "AGENTS.md").read_bytes()
    for _ in range(2):
        (state / "workspace" / "AGENTS.md").write_bytes(before)
        run = h.fork_cli(*restore_world.args())
        assert run.returncode == 0, run
        before = b"changed again between the two restores\n"
    pre = state / ".statekit" / "pre-restore"
    kept = sorted(p.read_bytes() for p in pre.glob("*/state/workspace/AGENTS.md"))
    assert kept == sorted([b"changed after the backup\n", b"changed again between the two restores\n"])


# --------------------------------------------------------------------------- the full set (-m slow)


@pytest.mark.slow
def test_every_create_and_restore_kill_point(create_world: CreateWorld, restore_world: RestoreWorld) -> None:
    failures = []
    rng = random.Random(h.SEED + 30)
    for world, run_trial, group in ((create_world, create_trial, "backup-create"), (restore_world, restore_trial, "backup-restore")):
        for k in range(1, len(world.names) + 1):
            killed, problems = run_trial(world, point=f"*:{k}")
            h.record_crash(group, killed, problems)
            failures += [f"{group} *:{k} ({world.names[k - 1]}): {p}" for p in problems]
        for _ in range(SLOW_DELAYS):
            delay = rng.uniform(0.01, 0.98) * world.elapsed
            killed, problems = run_trial(world, delay=delay)
            h.record_crash(group, killed, problems)
            failures += [f"{group} delay {delay:.3f}s: {p}" for p in problems]
    assert not failures, "\n".join(failures[:40])



@pytest.mark.parametrize("point", ["backup-recorded", "backup-member-added:3", "backup-partial-written", "backup-verified"])
def test_a_killed_create_is_not_left_recorded_as_ok(create_world: CreateWorld, point: str) -> None:
    """``backup_runs`` gets its ``ok`` row before the snapshots (so the archive holds it); a run killed before
    publishing must not stay ``ok`` in ``statekit history``: the next run marks it ``failed``."""
    state = create_world.reset()
    killed = h.fork_cli(*create_world.args(), env={"STATEKIT_CRASHPOINT": point})
    assert killed.killed, killed
    ids = [r[0] for r in h._rows(state / "state" / "openclaw.sqlite", "SELECT id FROM backup_runs WHERE status = 'ok'")]
    assert len(ids) == 1
    h.next_archive_second(create_world.arena.output)
    rerun = h.fork_cli(*create_world.args())
    assert rerun.returncode == 0, rerun
    rows = dict(h._rows(state / "state" / "openclaw.sqlite", "SELECT id, status FROM backup_runs"))
    assert rows[ids[0]] == "failed"
    assert [s for i, s in rows.items() if i != ids[0]] == ["ok"]
    h.record_crash("backup-create", True, [])


# --------------------------------------------------------------------------- the restore journal


def _journal(state: Path) -> dict | None:
    path = state / ".statekit" / "restore-journal.json"
    return json.loads(path.read_text()) if path.exists() else None


def _settle_command(world: RestoreWorld, how: str) -> tuple:
    state = world.arena.state
    if how == "prune":  # prune needs an existing --output (issue 12: a missing path is exit 2)
        (world.base / "settle-out").mkdir(exist_ok=True)
        return ("backup", "prune", "--keep-last", "5", "--state-dir", state, "--output", world.base / "settle-out")
    if how == "create":
        return ("backup", "create", "--state-dir", state, "--output", world.base / "settle-out")
    return ("backup", "restore", f"--{how}", "--state-dir", state, "--yes")


def _fully_a(world: RestoreWorld, state: Path, *, skip_backup_runs: bool) -> list[str]:
    problems = []
    tree = h.tree_outcome(state)
    if tree != world.expected_tree:
        problems.append(f"not fully A: extra {sorted(set(tree) - set(world.expected_tree))[:4]}, "
                        f"missing {sorted(set(world.expected_tree) - set(tree))[:4]}, "
                        f"changed {[k for k in tree if k in world.expected_tree and tree[k] != world.expected_tree[k]][:4]}")
    dumps = db_dumps(state)
    if skip_backup_runs:
        dumps = {db: {t: r for t, r in tables.items() if t != "backup_runs"} for db, tables in dumps.items()}
        want = {db: {t: r for t, r in tables.items() if t != "backup_runs"} for db, tables in world.a_dumps.items()}
    else:
        want = world.a_dumps
    if dumps != want:
        problems.append("a database differs from the archived one")
    problems += [f"B lost: {p}" for p in _b_lost(world, state)]
    return problems


def _exactly_b(world: RestoreWorld, state: Path) -> list[str]:
    now = h.exact_state(state)
    if now == world.b_tree_state:
        return []
    return [f"not exactly B: extra {sorted(set(now) - set(world.b_tree_state))[:4]}, "
            f"missing {sorted(set(world.b_tree_state) - set(now))[:4]}, "
            f"changed {[k for k in now if k in world.b_tree_state and now[k] != world.b_tree_state[k]][:4]}"]


def settle_trial(world: RestoreWorld, point: str, how: str) -> tuple[bool, list[str]]:
    """Kill an in-place restore at ``point``; inspect must name it; ``how`` must settle it the right way."""
    state = world.reset()
    first = h.fork_cli(*world.args(), env={"STATEKIT_CRASHPOINT": point})
    problems = [] if first.killed else [f"not killed: {first}"]
    journal = _journal(state)
    if journal is None:
        return first.killed, problems + ["no restore journal after the kill"]
    before = h.exact_state(state)
    inspect = h.fork_cli("inspect", "--state-dir", state, "--json")
    findings = json.loads(inspect.stdout).get("findings", []) if inspect.stdout.strip().startswith("{") else []
    if inspect.returncode != 3 or not any("interrupted" in f and "restore" in f for f in findings):
        problems.append(f"inspect does not say a restore is pending: {inspect}")
    if h.exact_state(state) != before:
        problems.append("inspect changed the state dir")
    settle = h.fork_cli(*_settle_command(world, how))
    if settle.returncode != 0 or settle.traceback:
        return first.killed, problems + [f"{how}: {settle}"]
    if _journal(state) is not None:
        problems.append(f"{how} left the journal behind")
    problems += [f"left behind by {how}: {p}" for p in h.leftovers(state)]
    forward = how == "resume" or (how != "abort" and journal["phase"] == "swapping")
    if forward:
        problems += _fully_a(world, state, skip_backup_runs=how == "create")
    elif how == "create":  # rolled back, then archived: B, plus its own backup_runs row
        problems += _fully_b_but_backup_runs(world, state)
    else:
        problems += _exactly_b(world, state)
    return first.killed, problems


def _fully_b_but_backup_runs(world: RestoreWorld, state: Path) -> list[str]:
    now = {k: v for k, v in h.exact_state(state).items() if not k.endswith("state/openclaw.sqlite")}
    want = {k: v for k, v in world.b_tree_state.items() if not k.endswith("state/openclaw.sqlite")}
    problems = [] if now == want else [f"not B: extra {sorted(set(now) - set(want))[:4]}, missing {sorted(set(want) - set(now))[:4]}"]
    strip = lambda d: {db: {t: r for t, r in tables.items() if t != "backup_runs"} for db, tables in d.items()}  # noqa: E731
    if strip(db_dumps(state)) != strip(world.b_dumps):
        problems.append("a database differs from B")
    return problems


@pytest.fixture(scope="module")
def settle_points(restore_world: RestoreWorld) -> list[int]:
    return h.named_sample(restore_world.names, CI_SETTLE_POINTS, random.Random(h.SEED + 50))


@pytest.mark.parametrize("index", range(CI_SETTLE_POINTS))
def test_a_killed_restore_is_pending_in_inspect_and_settled_by_the_next_command(restore_world: RestoreWorld,
                                                                               settle_points: list[int], index: int) -> None:
    k = settle_points[index]
    how = SETTLERS[index % len(SETTLERS)]
    killed, problems = settle_trial(restore_world, f"*:{k}", how)
    h.record_crash("backup-restore-journal", killed, problems)
    assert not problems, f"kill point {k} ({restore_world.names[k - 1]}), then {how}:\n" + "\n".join(problems)


@pytest.mark.parametrize("how", SETTLERS)
def test_every_settler_at_both_phases(restore_world: RestoreWorld, how: str) -> None:
    """The first staged member (phase staging) and the last placement (phase swapping), for each way to settle."""
    names = restore_world.names
    staging = names.index("restore-member-written") + 1
    swapping = len(names) - names[::-1].index("restore-placed")
    failures = []
    for k in (staging, swapping):
        killed, problems = settle_trial(restore_world, f"*:{k}", how)
        h.record_crash("backup-restore-journal", killed, problems)
        failures += [f"*:{k} ({names[k - 1]}): {p}" for p in problems]
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_every_restore_kill_point_is_settled_by_every_command(restore_world: RestoreWorld) -> None:
    failures = []
    for k in range(1, len(restore_world.names) + 1):
        for how in SETTLERS:
            killed, problems = settle_trial(restore_world, f"*:{k}", how)
            h.record_crash("backup-restore-journal", killed, problems)
            failures += [f"*:{k} ({restore_world.names[k - 1]}) then {how}: {p}" for p in problems]
    assert not failures, "\n".join(failures[:40])


# --------------------------------------------------------------------------- the same for an OpenClaw-format archive


@pytest.fixture(scope="module")
def oc_restore_world(tmp_path_factory: pytest.TempPathFactory) -> RestoreWorld:
    world = h.build_restore_world(tmp_path_factory.mktemp("crash-restore-oc"), fmt="openclaw")
    run, world.names = traced(world.args(), world.base / "trace.txt")
    assert run.returncode == 0, run
    world.elapsed = run.elapsed
    state = world.arena.state
    assert h.tree_outcome(state) == world.expected_tree and db_dumps(state) == world.a_dumps
    return world


def test_openclaw_restore_passes_every_kind_of_checkpoint(oc_restore_world: RestoreWorld) -> None:
    assert set(oc_restore_world.names) == {"restore-member-written", "restore-staged", "restore-moved-aside", "restore-placed",
                                           "restore-done"}


@pytest.mark.parametrize("index", range(CI_SETTLE_POINTS))
def test_a_killed_openclaw_restore_is_settled_by_the_next_command(oc_restore_world: RestoreWorld, index: int) -> None:
    k = h.named_sample(oc_restore_world.names, CI_SETTLE_POINTS, random.Random(h.SEED + 60))[index]
    how = SETTLERS[(index + 1) % len(SETTLERS)]
    killed, problems = settle_trial(oc_restore_world, f"*:{k}", how)
    h.record_crash("backup-restore-journal-openclaw", killed, problems)
    assert not problems, f"kill point {k} ({oc_restore_world.names[k - 1]}), then {how}:\n" + "\n".join(problems)


@pytest.mark.parametrize("index", range(3))
def test_a_killed_openclaw_restore_rerun_converges(oc_restore_world: RestoreWorld, index: int) -> None:
    k = h.named_sample(oc_restore_world.names, 3, random.Random(h.SEED + 70))[index]
    killed, problems = restore_trial(oc_restore_world, point=f"*:{k}")
    h.record_crash("backup-restore-openclaw", killed, problems)
    assert not problems, f"kill point {k} ({oc_restore_world.names[k - 1]}):\n" + "\n".join(problems)


@pytest.mark.slow
def test_every_openclaw_restore_kill_point_is_settled(oc_restore_world: RestoreWorld) -> None:
    failures = []
    for k in range(1, len(oc_restore_world.names) + 1):
        for how in SETTLERS:
            killed, problems = settle_trial(oc_restore_world, f"*:{k}", how)
            h.record_crash("backup-restore-journal-openclaw", killed, problems)
            failures += [f"*:{k} ({oc_restore_world.names[k - 1]}) then {how}: {p}" for p in problems]
    assert not failures, "\n".join(failures[:40])
