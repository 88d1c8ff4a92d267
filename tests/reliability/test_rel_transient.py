"""Transient errors are transient (issue 11 item 6): a lock, too many open files, no memory.

``SQLITE_BUSY``/``SQLITE_LOCKED``, ``EMFILE``/``ENFILE`` and ``ENOMEM`` are conditions of the machine, not of
a legacy file. They stop ``statekit migrate`` the way a full disk does: one ``statekit: error:`` line that
names the cause, exit 1 (4 for a lock), no traceback, the sources imported before it committed with
their receipts, the others in place with **no** ``failed`` receipt. The rerun without the fault imports
them (never "Nothing new to migrate") and converges on the same rows as an uninterrupted run.

Three ways in: the faultkit I/O fault layer (``read:EMFILE:N:path`` makes the N-th open of a legacy
file for reading fail, in the apply step or in the plan); a real ``RLIMIT_NOFILE`` (``ulimit -n``) in a
real interpreter, swept over the limits where the run starts but runs out part-way; a real second
SQLite connection holding an exclusive lock on an agent database (slow: statekit waits out its 30 s
busy timeout first).

On 308a7ed each of these marked the source ``failed`` for good: the rerun left it in place.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import rel_harness as h
from statekit.db import connect

FIXTURE = "demo-install"
INDEX = "agents/main/sessions/sessions.json"
TRANSCRIPT = "agents/main/sessions/3f0c2b7e-1111-4a5b-8c9d-000000000004.jsonl"


def _receipts(state: Path) -> dict[str, set[str]]:
    db = state / "state" / "openclaw.sqlite"
    found: dict[str, set[str]] = {}
    if db.is_file():
        for path, status in h._rows(db, "SELECT source_path, status FROM migration_sources"):
            found.setdefault(path, set()).add(status)
    return found


def _legacy(state: Path) -> set[str]:
    from statekit.migrate.discover import discover

    return {entry.rel for entry, reader in discover(state).legacy if reader.action in ("import", "import+archive")}


def _figure(group: str, problems: list[str]) -> None:
    figures = h.FIGURES[f"transient/{group}"]
    figures["runs"] += 1
    figures["converged"] += int(not problems)


def _stopped_then_converges(state: Path, run: h.Run, reference: dict, codes: tuple[int, ...] = (1,), cause: str = "") -> list[str]:
    """The stopped run's contract, then a clean rerun that imports everything the reference run imported."""
    problems = []
    if run.returncode == 0 or run.returncode == 3:  # the fault missed (or hit nothing that matters): still must converge
        pass
    else:
        problems += h.clear_failure(run, codes)
        if cause and cause not in run.stderr:
            problems.append(f"the error line does not name {cause}: {run.stderr[-400:]!r}")
    failed = sorted(rel for rel, statuses in _receipts(state).items() if "failed" in statuses)
    if failed:
        problems.append(f"a transient error marked sources failed for good: {failed}")
    rerun = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    if rerun.returncode not in (0, 3) or rerun.traceback:
        problems.append(f"rerun: {rerun}")
    if "Nothing new to migrate" in rerun.stdout and run.returncode not in (0, 3):
        problems.append("rerun says nothing new to migrate")
    data = h.mask_times(h.data_dump(state), 0)
    if data != reference:
        diff = sorted({f"{db}:{t}" for db in set(data) | set(reference) for t in set(data.get(db, {})) | set(reference.get(db, {}))
                       if data.get(db, {}).get(t) != reference.get(db, {}).get(t)})
        problems.append(f"rows differ from an uninterrupted run: {diff[:6]}")
    left = sorted(rel for rel in _legacy(state))
    if left:
        problems.append(f"legacy files still in place after the rerun: {left[:6]}")
    return problems


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The rows of an uninterrupted run in the same place the trials run (absolute paths in rows stay equal)."""
    arena = h.Arena(tmp_path_factory.mktemp("transient"), FIXTURE)
    state = arena.fresh()
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert run.returncode in (0, 3) and not run.traceback, run
    return {"arena": arena, "data": h.mask_times(h.data_dump(state), 0)}


# (fault spec, the cause the error line must name). ``2+``: the plan's open passes, the apply step's fails.
FAULTS = [
    (f"read:EMFILE:2+:{INDEX}", "EMFILE"),
    (f"read:ENFILE:2+:{TRANSCRIPT}", "ENFILE"),
    (f"read:ENOMEM:2+:{TRANSCRIPT}", "ENOMEM"),
    (f"read:EMFILE:1+:{INDEX}", "EMFILE"),  # already while planning: nothing is written
]


@pytest.mark.parametrize(("spec", "cause"), FAULTS, ids=[f[0].split(":")[1] + "-" + f[0].split(":")[2] for f in FAULTS])
def test_resource_exhaustion_stops_the_run_and_the_rerun_imports(reference: dict, spec: str, cause: str) -> None:
    """Fails on 308a7ed: the source got a ``failed`` receipt and the rerun left it in place."""
    state = reference["arena"].fresh()
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup", io_faults=spec)
    assert run.faults_fired, f"the fault {spec} never fired"
    assert run.returncode == 1, run
    problems = _stopped_then_converges(state, run, reference["data"], (1,), cause)
    _figure("io-fault", problems)
    assert not problems, problems


def _ulimit_run(state: Path, limit: int) -> h.Run:
    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    env = {k: v for k, v in os.environ.items() if not k.startswith("STATEKIT_")}
    proc = subprocess.run([sys.executable, "-m", "statekit", "migrate", "--state-dir", str(state), "--yes", "--no-backup"],
                          capture_output=True, text=True, env=env, preexec_fn=lower, timeout=300, cwd=h.REPO)
    return h.Run(("migrate",), proc.returncode, proc.stdout, proc.stderr, 0.0)


def test_real_open_file_limit_never_fails_a_source_for_good(reference: dict) -> None:
    """``ulimit -n`` swept from where statekit cannot start to where it runs through: every stop is clean, every rerun converges.

    Fails on 308a7ed: at some limits a source (or a database open) failed part-way and the rerun left it.
    """
    outcomes: dict[str, int] = {}
    problems: list[str] = []
    for limit in range(12, 22):
        state = reference["arena"].fresh()
        run = _ulimit_run(state, limit)
        key = "completed" if run.returncode in (0, 3) else ("stopped" if run.returncode == 1 and "EMFILE" in run.stderr else f"exit {run.returncode}")
        outcomes[key] = outcomes.get(key, 0) + 1
        if run.returncode not in (0, 3) and "EMFILE" not in run.stderr and "open files" not in run.stderr:
            problems.append(f"ulimit -n {limit}: the failure does not name the open-file limit: {run.stderr[-500:]!r}")
        problems += [f"ulimit -n {limit}: {p}" for p in _stopped_then_converges(state, run, reference["data"], (1,))]
    h.FIGURES["transient/ulimit"].update(outcomes)
    assert outcomes.get("stopped"), f"no limit stopped the run part-way: {outcomes}"
    assert not problems, problems


@pytest.mark.slow
def test_a_locked_agent_database_stops_the_run_busy_and_the_rerun_imports(reference: dict) -> None:
    """A second connection holds an exclusive lock on an agent database while migrate needs it: exit 4, lock named.

    Fails on 308a7ed: the sources of that agent got ``failed`` receipts and the rerun left them in place.
    """
    arena = reference["arena"]
    state = arena.fresh()
    # First import everything but the ops agent's transcripts (its session index creates its database); then lock it.
    ops = state / "agents" / "ops" / "sessions"
    parked = arena.base / "parked"
    if parked.exists():
        h._force_rmtree(parked)
    parked.mkdir()
    transcripts = sorted(ops.glob("*.jsonl"))
    assert transcripts
    for transcript in transcripts:
        transcript.rename(parked / transcript.name)
    first = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert first.returncode in (0, 3) and not first.traceback, first
    ops.mkdir(parents=True, exist_ok=True)  # the retired index's emptied folder was removed
    for transcript in transcripts:
        (parked / transcript.name).rename(transcript)
    db = state / "agents" / "ops" / "agent" / "openclaw-agent.sqlite"
    holder = connect(db, busy_timeout_ms=0)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup", timeout=120)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert run.returncode == 4, run
    problems = _stopped_then_converges(state, run, reference["data"], (4,), "SQLITE_BUSY")
    _figure("locked-database", problems)
    assert not problems, problems
