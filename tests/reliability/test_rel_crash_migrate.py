"""Crash injection for ``statekit migrate`` with its pre-migration backup (``--backup-output``).

Each trial copies a world into one fixed place, runs ``statekit migrate`` in
a child process and SIGKILLs it -- at a named checkpoint (``*:k``: the k-th
checkpoint of the run, whatever its name, so the sample covers the backup,
the per-source transaction, the commits, the retirement and the run record)
or after a seeded random delay -- then checks at the instant of the kill that
every legacy file is in place byte-identical or retired byte-identical and
that every published archive verifies. Then it reruns to the end (same
backup dir) and compares with an uninterrupted run: every data table of
every database (import-time timestamps masked), receipts and schema records
by outcome, the whole state tree (run ids masked), every source retired
byte-identical with a ``completed`` receipt naming that run, no temp,
staging or partial file left, no ``failed`` run and none left ``running``
(the killed run is closed as interrupted).

CI runs a sample on ``fixtures/demo-install`` (three agents, a malformed
transcript among good sources), and a second sample with every transcript parsed
by the forked parse process (``legacy_readers/transcript_worker.py``); ``-m slow``
walks every kill point of that world and a stratified sample of ``fixtures/every-family``.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

import rel_harness as h
import statekit.legacy_readers.transcript_worker as transcript_worker
import statekit.migrate.apply as apply
from statekit.backup import verify_archive

CI_NAMED = 24
CI_DELAYS = 10
SLOW_EVERY_FAMILY_NAMED = 80
SLOW_DELAYS = 30
PARSE_PROCESS_NAMED = 10
PARSE_PROCESS_DELAYS = 4


World = h.MigrateWorld


def build_world(base: Path, fixture: str) -> World:
    return h.build_migrate_world(base, fixture)


def archives(*dirs: Path) -> list[Path]:
    return sorted(p for d in dirs if d.is_dir() for p in d.glob("openclaw-backup-*.tar.zst"))


def trial(world: World, *, point: str | None = None, delay: float | None = None) -> tuple[bool, list[str]]:
    """Kill one migrate run, rerun it, compare. Returns (killed, problems)."""
    arena = world.arena
    state = arena.fresh()
    env = {"STATEKIT_CRASHPOINT": point} if point else {}
    first = h.fork_cli(*world.args(), env=env, kill_after=delay)
    problems: list[str] = []
    if point and not first.killed:
        problems.append(f"{point}: the run was not killed ({first.returncode})")
    if first.traceback:
        problems.append(f"traceback before the kill: {first.stderr[-800:]}")
    problems += [f"after the kill: {p}" for p in h.lost_sources(state, world.originals, require_receipt=False)]
    for archive in archives(arena.output):
        report = verify_archive(archive)
        if not report.ok:
            problems.append(f"after the kill: published archive {archive.name} does not verify: {report.problems[:2]}")
    h.next_archive_second(arena.output)
    rerun = h.fork_cli(*world.args())
    if rerun.returncode not in (0, 3) or rerun.traceback:
        problems.append(f"rerun: {rerun}")
        return first.killed, problems
    problems += h.convergence_problems(world, arena.output)
    if {"failed", "running"} & set(h.run_statuses(state)):
        problems.append(f"run records: {h.run_statuses(state)}")
    for archive in archives(arena.output)[-1:]:
        report = verify_archive(archive)
        if not report.ok:
            problems.append(f"the rerun's archive does not verify: {report.problems[:2]}")
    return first.killed, problems


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build_world(tmp_path_factory.mktemp("crash-migrate"), "demo-install")


@pytest.fixture(scope="module")
def demo_points(demo: World) -> list[int]:
    return h.named_sample(demo.names, CI_NAMED, random.Random(h.SEED))


def test_reference_run_passes_every_kind_of_checkpoint(demo: World) -> None:
    expected = {"backup-staging", "backup-member-added", "backup-partial-written", "backup-verified", "backup-linked",
                "backup-published", "backup-sidecar-written", "migrate-backup-done", "run-opened", "before-write",
                "before-commit", "between-commits", "after-commit", "retire-moved", "after-retire", "before-close-run"}
    assert expected <= set(demo.names), sorted(expected - set(demo.names))
    assert demo.exit_code == 3  # the malformed transcript is named and left in place, the rest imported
    assert len(demo.names) >= 100


@pytest.mark.parametrize("index", range(CI_NAMED))
def test_kill_at_a_checkpoint_converges(demo: World, demo_points: list[int], index: int) -> None:
    k = demo_points[index]
    killed, problems = trial(demo, point=f"*:{k}")
    h.record_crash("migrate", killed, problems)
    assert not problems, f"kill point {k} ({demo.names[k - 1]}):\n" + "\n".join(problems)


@pytest.mark.parametrize("index", range(CI_DELAYS))
def test_kill_after_a_random_delay_converges(demo: World, index: int) -> None:
    delay = random.Random(h.SEED * 1000 + index).uniform(0.01, 0.95) * demo.elapsed
    killed, problems = trial(demo, delay=delay)
    h.record_crash("migrate", killed, problems)
    assert not problems, f"kill after {delay:.3f}s:\n" + "\n".join(problems)


def test_real_interpreter_killed_by_env_converges(demo: World) -> None:
    """The same through ``python -m statekit``: the env var alone arms the checkpoint and the delay timer."""
    arena = demo.arena
    state = arena.fresh()
    first = h.real_cli(*demo.args(), env={"STATEKIT_CRASHPOINT": "between-commits:4"})
    assert first.killed, first
    assert not h.lost_sources(state, demo.originals, require_receipt=False)
    h.next_archive_second(arena.output)
    timed = h.real_cli(*demo.args(), env={"STATEKIT_KILL_AFTER_MS": "150"})
    assert timed.killed or timed.returncode in (0, 3), timed
    h.next_archive_second(arena.output)
    rerun = h.real_cli(*demo.args())
    assert rerun.returncode in (0, 3), rerun
    assert h.mask_times(h.data_dump(state), demo.since) == demo.data
    assert h.bookkeeping(state) == demo.books
    assert h.tree_outcome(state) == demo.tree
    assert not h.leftovers(state, arena.output)
    h.record_crash("migrate", True, [])


def _tiny_state(tmp_path: Path) -> Path:
    state = tmp_path / "home" / ".openclaw"
    (state / "cron").mkdir(parents=True)
    shutil.copy(h.FIXTURES / "readers" / "cron" / "jobs.json", state / "cron" / "jobs.json")
    return state


@pytest.mark.parametrize("point", ["retire-moved", "after-retire"])
def test_interrupted_retirement_of_the_last_source_is_finished(tmp_path: Path, point: str) -> None:
    """Killed after the last source moved but before its receipt says so: the rerun has nothing to import,
    yet must still finish the bookkeeping (``removed_source = 1``), not report "nothing to migrate"."""
    state = _tiny_state(tmp_path)
    assert h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup", env={"STATEKIT_CRASHPOINT": point}).killed
    rerun = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert rerun.returncode == 0, rerun
    receipts = h._rows(state / "state" / "openclaw.sqlite", "SELECT source_path, status, removed_source FROM migration_sources")
    assert receipts == [("cron/jobs.json", "completed", 1)]
    assert not h.lost_sources(state, {"cron/jobs.json": (h.FIXTURES / "readers" / "cron" / "jobs.json").read_bytes()}, require_receipt=True)
    again = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert again.returncode == 0 and "Nothing to migrate" in again.stdout, again


CONFIG_POINTS = ("config-retired", "config-written", "config-recorded")


def _config_world(base: Path) -> Path:
    """A source and a config the run rewrites for OpenClaw 2026.9.6 (every-family's: a retired key, the default marker)."""
    state = _tiny_state(base)
    shutil.copy(h.FIXTURES / "every-family" / ".openclaw" / "openclaw.json", state / "openclaw.json")
    return state


@pytest.mark.parametrize("point", CONFIG_POINTS)
def test_a_run_killed_in_the_config_rewrite_converges(tmp_path: Path, point: str) -> None:
    """Killed inside the config step (its old bytes kept, the new file written, its receipt recorded, in whatever
    order the step does them): the rerun ends as an uninterrupted run, with one retired copy of the old config and
    its ``completed`` receipt. (A kill between the new file and its receipt once left the receipt missing: the rerun
    found the config already rewritten and had nothing to do.)"""
    reference = _config_world(tmp_path / "reference")
    assert h.fork_cli("migrate", "--state-dir", reference, "--yes", "--no-backup").returncode == 0
    state = _config_world(tmp_path / "killed")
    first = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup", env={"STATEKIT_CRASHPOINT": point})
    assert first.killed, first
    rerun = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert rerun.returncode == 0 and not rerun.traceback, rerun
    assert h.bookkeeping(state) == h.bookkeeping(reference)
    assert ("openclaw.json", "completed", 1) in h._rows(state / "state" / "openclaw.sqlite",
                                                          "SELECT source_path, status, removed_source FROM migration_sources")
    assert h.tree_outcome(state) == h.tree_outcome(reference)  # one retired copy of the old config, the same new one
    originals = {rel: (h.FIXTURES / src).read_bytes() for rel, src in
                 (("cron/jobs.json", "readers/cron/jobs.json"), ("openclaw.json", "every-family/.openclaw/openclaw.json"))}
    assert not h.lost_sources(state, originals, require_receipt=True)
    assert not h.leftovers(state)
    assert "interrupted" in h.run_statuses(state)
    h.record_crash("migrate", True, [])


def _legacy_named_config_world(base: Path) -> tuple[Path, dict[str, str]]:
    """The default state dir (found through HOME, not named by a flag) holding a source and a config under a legacy
    name: the run renames ``clawdbot.json`` to ``openclaw.json`` (rewritten for 9.6) and keeps the old bytes."""
    state = _tiny_state(base)
    shutil.copy(h.FIXTURES / "every-family" / ".openclaw" / "openclaw.json", state / "clawdbot.json")
    home = state.parent
    return state, {"HOME": str(home), "OPENCLAW_HOME": str(home), "OPENCLAW_STATE_DIR": "", "CLAWDBOT_STATE_DIR": "",
                   "OPENCLAW_CONFIG_PATH": "", "CLAWDBOT_CONFIG_PATH": ""}


@pytest.mark.parametrize("point", CONFIG_POINTS)
def test_a_run_killed_renaming_a_legacy_named_config_converges(tmp_path: Path, point: str) -> None:
    """Killed inside the config step of a legacy name (``config-written``: ``openclaw.json`` written, ``clawdbot.json``
    not yet removed): the rerun ends as an uninterrupted run, with the old name gone, one retired copy of its bytes
    and its receipt. (Before, the rerun found ``openclaw.json`` already rewritten, planned nothing, and both names
    stayed for good.)"""
    reference, ref_env = _legacy_named_config_world(tmp_path / "reference")
    assert h.fork_cli("migrate", "--yes", "--no-backup", env=ref_env).returncode == 0
    assert not (reference / "clawdbot.json").exists() and (reference / "openclaw.json").is_file()
    state, env = _legacy_named_config_world(tmp_path / "killed")
    first = h.fork_cli("migrate", "--yes", "--no-backup", env={**env, "STATEKIT_CRASHPOINT": point})
    assert first.killed, first
    rerun = h.fork_cli("migrate", "--yes", "--no-backup", env=env)
    assert rerun.returncode == 0 and not rerun.traceback, rerun
    assert not (state / "clawdbot.json").exists(), "the legacy name outlived the rerun"
    assert h.bookkeeping(state) == h.bookkeeping(reference)
    assert h.tree_outcome(state) == h.tree_outcome(reference)
    originals = {"cron/jobs.json": (h.FIXTURES / "readers" / "cron" / "jobs.json").read_bytes(),
                 "clawdbot.json": (h.FIXTURES / "every-family" / ".openclaw" / "openclaw.json").read_bytes()}
    assert not h.lost_sources(state, originals, require_receipt=True)
    assert not h.leftovers(state)
    again = h.fork_cli("migrate", "--yes", "--no-backup", env=env)
    assert again.returncode == 0 and "Nothing to migrate" in again.stdout, again
    h.record_crash("migrate", True, [])


# --------------------------------------------------------------------------- the full set (-m slow)


def _walk(world: World, points: list[int], delays: list[float], group: str) -> list[str]:
    failures = []
    for k in points:
        killed, problems = trial(world, point=f"*:{k}")
        h.record_crash(group, killed, problems)
        if problems:
            failures.append(f"*:{k} ({world.names[k - 1]}): " + " | ".join(problems))
    for delay in delays:
        killed, problems = trial(world, delay=delay)
        h.record_crash(group, killed, problems)
        if problems:
            failures.append(f"delay {delay:.3f}s: " + " | ".join(problems))
    return failures


def test_kills_while_the_parse_process_parses_converge(tmp_path_factory: pytest.TempPathFactory,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Every transcript of the demo install parsed by the forked parse process (threshold 0, inherited by the forked
    CLI): a kill at a sample of checkpoints (mid-file ones among them) or after a random delay still converges."""
    monkeypatch.setattr(apply, "OFFLOAD_BYTES", 0)
    base = tmp_path_factory.mktemp("crash-parse-process")
    forks = base / "forks.txt"
    fork = transcript_worker._fork_child

    def noted() -> Any:  # each forked CLI notes the parse processes it forks
        child = fork()
        with forks.open("a", encoding="utf-8") as out:
            out.write(f"{child.pid}\n")
        return child

    monkeypatch.setattr(transcript_worker, "_fork_child", noted)
    world = build_world(base, "demo-install")
    assert forks.read_text(encoding="utf-8").split(), "the reference run forked no parse process"
    rng = random.Random(h.SEED + 3)
    points = sorted(set(h.named_sample(world.names, PARSE_PROCESS_NAMED, rng))
                    | {k for k, name in enumerate(world.names, 1) if name == "before-commit"})
    delays = [rng.uniform(0.01, 0.95) * world.elapsed for _ in range(PARSE_PROCESS_DELAYS)]
    failures = _walk(world, points, delays, "migrate-parse-process")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_every_kill_point_of_the_demo_install_converges(demo: World) -> None:
    rng = random.Random(h.SEED + 1)
    delays = [rng.uniform(0.01, 0.98) * demo.elapsed for _ in range(SLOW_DELAYS)]
    failures = _walk(demo, list(range(1, len(demo.names) + 1)), delays, "migrate")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_every_family_kill_points_converge(tmp_path_factory: pytest.TempPathFactory) -> None:
    world = build_world(tmp_path_factory.mktemp("crash-every-family"), "every-family")
    rng = random.Random(h.SEED + 2)
    delays = [rng.uniform(0.01, 0.98) * world.elapsed for _ in range(SLOW_DELAYS)]
    failures = _walk(world, h.named_sample(world.names, SLOW_EVERY_FAMILY_NAMED, rng), delays, "migrate-every-family")
    assert not failures, "\n".join(failures)
