"""Bad inputs at scale: seeded mutants of every reader's valid fixtures, many per migrate run.

Seeds: every legacy source of ``fixtures/every-family`` (one sample per reader
kind), the ``ops`` and ``work`` agents of ``fixtures/demo-install``, and every
``fixtures/readers/**`` file that stands in for one of them (same file name) --
each kept only when an unmutated migrate imports it (sources a reader retains
or defers on purpose are never read, so mutating them proves nothing).

Each round copies that world into one place and, for about two thirds of
the sources, swaps in a mutant (``rel_mutate``: truncation at every JSON
depth, bit flips, invalid UTF-8, wrong types, 3 MiB strings and lines, 100k
levels of nesting, duplicate keys, NaN/Infinity, huge numbers, BOMs, UTF-16,
CRLF, empty and whitespace-only files, NUL and control characters, torn and
bad JSONL lines...) or a hostile entry (a symlink loop, a symlink leaving the
state dir, a FIFO, a file the reader may not open). Then ``statekit plan``
(which must write nothing) and ``statekit migrate`` run once over the lot.

For each mutant: no traceback anywhere; either it is still valid and was
imported and retired byte-exact with a ``completed`` receipt, or it is in
place untouched (bytes, or the same link / FIFO) and a line of at most 1000
characters names it. Every unmutated source of the round is imported and
retired (unless a source it depends on was mutated).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import rel_harness as h
import rel_mutate as m
from statekit.migrate.discover import discover

EVERY = h.FIXTURES / "every-family" / ".openclaw"
DEMO = h.FIXTURES / "demo-install" / ".openclaw"
CI_ROUNDS = 8
SLOW_ROUNDS = 40
MUTATE_SHARE = 0.67
FS_SHARE = 0.07
HUGE_PER_ROUND = 4
MAX_LINE = 1000
# A source whose import needs another one imported first (the reader says so and leaves it in place).
DEPENDS = {
    "cron/jobs-state.json": ("cron/jobs.json",),
    "nodes/paired.json": ("devices/paired.json",),
    "nodes/pending.json": ("devices/paired.json",),
    "agents/main/agent/auth-profiles.json.tmp": ("agents/main/agent/auth-profiles.json",),  # compared with the live file
    "agents/main/sessions/local-cli-session-1.trajectory.jsonl": ("agents/main/sessions/local-cli-session-1.trajectory-path.json",),
    "debug-proxy/blobs/38b0e917d5f33cfc8befdb41.bin.gz": ("debug-proxy/capture.sqlite",),  # its capture's events use it
    "debug-proxy/capture.sqlite": ("debug-proxy/blobs/38b0e917d5f33cfc8befdb41.bin.gz",),  # its events' blobs are checked first
}


@dataclass
class Seeds:
    base: Path  # the merged, unmutated world (a state dir)
    variants: dict[str, list[bytes]]  # legacy path -> valid contents (the fixture first)
    origin: dict[tuple[str, int], str] = field(default_factory=dict)


def _merged_world(dest: Path) -> Path:
    state = dest / "seed" / ".openclaw"
    shutil.copytree(EVERY, state, symlinks=True)
    for agent in ("ops", "work"):
        shutil.copytree(DEMO / "agents" / agent, state / "agents" / agent, symlinks=True)
    return state


@pytest.fixture(scope="module")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> Seeds:
    base = tmp_path_factory.mktemp("bad-inputs-seeds")
    state = _merged_world(base)
    baseline = h.Arena(base / "baseline", "every-family").state
    shutil.copytree(state, baseline, symlinks=True)
    run = h.fork_cli("migrate", "--state-dir", baseline, "--yes", "--no-backup")
    assert not run.traceback, run
    imported = {rel for rel, outcome in _receipts(baseline).items() if outcome == ("completed", 1)}
    legacy = sorted(entry.rel for entry, _reader in discover(state).legacy if entry.rel in imported)
    variants = {rel: [(state / rel).read_bytes()] for rel in legacy if (state / rel).is_file() and not (state / rel).is_symlink()}
    found = Seeds(state, variants)
    for rel in variants:
        found.origin[(rel, 0)] = f"fixtures/every-family/.openclaw/{rel}" if (EVERY / rel).exists() else f"fixtures/demo-install/.openclaw/{rel}"
    by_name: dict[str, list[str]] = {}
    for rel in variants:
        by_name.setdefault(Path(rel).name, []).append(rel)
    candidates = {}
    for path in sorted((h.FIXTURES / "readers").rglob("*")):
        owners = by_name.get(path.name, [])
        if path.is_file() and len(owners) == 1 and path.read_bytes() != variants[owners[0]][0]:
            candidates[owners[0]] = path
    # Keep a stand-in only when an unmutated migrate imports it.
    arena = h.Arena(base / "check", "every-family")
    trial = arena.state
    shutil.copytree(state, trial, symlinks=True)
    for rel, path in candidates.items():
        (trial / rel).write_bytes(path.read_bytes())
    run = h.fork_cli("migrate", "--state-dir", trial, "--yes", "--no-backup")
    assert not run.traceback, run
    done = _receipts(trial)
    for rel, path in candidates.items():
        if done.get(rel) == ("completed", 1):
            variants[rel].append(path.read_bytes())
            found.origin[(rel, 1)] = path.relative_to(h.REPO).as_posix()
    return found


def _receipts(state: Path) -> dict[str, tuple[str, int]]:
    return {r[0]: (r[1], r[2]) for r in h._rows(state / "state" / "openclaw.sqlite", "SELECT source_path, status, removed_source FROM migration_sources")}


@dataclass
class Mutant:
    rel: str
    mutator: str
    data: bytes | None  # None for the file-system mutants
    link: str | None = None


def build_round(seeds: Seeds, state: Path, outside: Path, round_no: int) -> tuple[list[Mutant], dict[str, bytes], list[str], set[str]]:
    """Write one round's world: mutants for ~2/3 of the sources, valid contents for the rest.

    Returns the mutants, the controls, the files made unreadable and every path that differs from the
    fixture (mutated, or a stand-in from fixtures/readers)."""
    if state.parent.exists():
        h._force_rmtree(state.parent)
    if outside.exists():
        h._force_rmtree(outside)
    shutil.copytree(seeds.base, state, symlinks=True)
    mutants: list[Mutant] = []
    controls: dict[str, bytes] = {}
    unreadable: list[str] = []
    changed: set[str] = set()
    huge = 0
    for index, rel in enumerate(sorted(seeds.variants)):
        rng = random.Random(f"{h.SEED}:{round_no}:{rel}")
        variants = seeds.variants[rel]
        original = variants[round_no % len(variants)]
        if round_no % len(variants):
            changed.add(rel)
        path = state / rel
        path.write_bytes(original)
        if rng.random() >= MUTATE_SHARE:
            controls[rel] = original
            continue
        changed.add(rel)
        if rng.random() < FS_SHARE:
            kind = m.FS_MUTATORS[(zlib.crc32(rel.encode()) + round_no) % len(m.FS_MUTATORS)]
            mutants.append(_fs_mutant(path, rel, kind, original, outside))
            if kind == "unreadable":
                unreadable.append(str(path))
            continue
        kinds = m.mutators_for(original)
        start = (zlib.crc32(rel.encode()) + round_no * 7 + index) % len(kinds)
        for step in range(len(kinds)):
            mutator = kinds[(start + step) % len(kinds)]
            if m.name_of(mutator) in ("huge_string", "jsonl_huge_line") and huge >= HUGE_PER_ROUND:
                continue
            data = mutator(original, rng)
            if data is not None and data != original:
                break
        else:
            controls[rel] = original
            continue
        huge += m.name_of(mutator) in ("huge_string", "jsonl_huge_line")
        path.write_bytes(data)
        mutants.append(Mutant(rel, m.name_of(mutator), data))
    return mutants, controls, unreadable, changed


def _fs_mutant(path: Path, rel: str, kind: str, original: bytes, outside: Path) -> Mutant:
    if kind == "unreadable":
        return Mutant(rel, kind, original)
    path.unlink()
    if kind == "symlink_loop":
        os.symlink(path.name, path)
        return Mutant(rel, kind, None, path.name)
    if kind == "symlink_outside":
        target = outside / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(original)
        os.symlink(target, path)
        return Mutant(rel, kind, None, str(target))
    os.mkfifo(path, 0o600)
    return Mutant(rel, kind, None)


def _in_place(state: Path, mutant: Mutant) -> bool:
    path = state / mutant.rel
    if mutant.mutator in ("symlink_loop", "symlink_outside"):
        return path.is_symlink() and os.readlink(path) == mutant.link
    if mutant.mutator == "fifo":
        return path.exists() and not path.is_symlink() and path.stat().st_mode & 0o170000 == 0o010000
    return path.is_file() and not path.is_symlink() and path.read_bytes() == mutant.data


def _retired_exact(state: Path, rel: str, data: bytes | None) -> bool:
    return data is not None and any(c.read_bytes() == data for c in (state / ".statekit" / "migrated").glob(f"*/{rel}"))


def run_round(seeds: Seeds, base: Path, round_no: int) -> tuple[Counter, list[str]]:
    state = base / "home" / ".openclaw"
    mutants, controls, unreadable, changed = build_round(seeds, state, base / "outside", round_no)
    faults = ",".join(f"read:EACCES:1+:={p}" for p in unreadable) or None
    problems: list[str] = []
    before = h.exact_state(state)
    plan = h.fork_cli("plan", "--state-dir", state, io_faults=faults)
    if plan.returncode not in (0, 3) or plan.traceback:
        problems.append(f"plan: {plan}")
    if h.exact_state(state) != before:
        problems.append("plan wrote to the state dir")
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup", io_faults=faults)
    if run.returncode not in (0, 3) or run.traceback:
        problems.append(f"migrate: {run}")
    for output in (plan, run):
        long = [line[:120] + "..." for line in output.stderr.splitlines() + output.stdout.splitlines() if len(line) > MAX_LINE]
        problems += [f"line longer than {MAX_LINE} characters: {line}" for line in long[:3]]
    receipts = _receipts(state) if (state / "state" / "openclaw.sqlite").exists() else {}
    lines = run.stderr.splitlines()
    counts: Counter = Counter()
    for mu in mutants:
        counts["mutants"] += 1
        counts[f"mutator:{mu.mutator}"] += 1
        if receipts.get(mu.rel) == ("completed", 1) and _retired_exact(state, mu.rel, mu.data) and not (state / mu.rel).exists():
            counts["still valid: imported, retired byte-exact"] += 1
            continue
        named = [line for line in lines if mu.rel in line]
        if not _in_place(state, mu):
            problems.append(f"{mu.rel} ({mu.mutator}): neither in place untouched nor imported and retired byte-exact")
        elif not named:
            problems.append(f"{mu.rel} ({mu.mutator}): left in place but no line names it")
        else:
            counts["rejected: in place, named"] += 1
    for rel, data in controls.items():
        counts["controls"] += 1
        if receipts.get(rel) == ("completed", 1) and _retired_exact(state, rel, data):
            counts["controls imported"] += 1
        elif any(dep in changed for dep in DEPENDS.get(rel, ())) and (state / rel).read_bytes() == data:
            counts["controls waiting for a mutated dependency"] += 1
        else:
            problems.append(f"{rel}: unmutated but not imported ({receipts.get(rel)}); {[l for l in lines if rel in l][:2]}")
    return counts, problems


def record(counts: Counter, problems: list[str]) -> None:
    figures = h.FIGURES["bad-inputs"]
    figures["rounds (plan + migrate runs)"] += 1
    figures["mutants tried"] += counts["mutants"]
    figures["mutants handled"] += counts["still valid: imported, retired byte-exact"] + counts["rejected: in place, named"]
    figures["mutants still valid (imported byte-exact)"] += counts["still valid: imported, retired byte-exact"]
    figures["controls imported"] += counts["controls imported"]
    figures["problems"] += len(problems)
    kinds = h.FIGURES["bad-inputs/mutators"]
    for key, value in counts.items():
        if key.startswith("mutator:"):
            kinds[key[len("mutator:") :]] += value


def test_every_reader_kind_is_seeded(seeds: Seeds) -> None:
    from statekit import legacy_readers

    kinds = {reader.kind for entry, reader in discover(seeds.base).legacy if entry.rel in seeds.variants}
    active = {reader.kind for reader in legacy_readers.all_readers() if reader.action in ("import", "import+archive", "drop")}
    assert active - kinds == set()
    # several variants per kind that reads its file (the kinds kept in place for OpenClaw read nothing)
    assert sum(len(v) for v in seeds.variants.values()) > 1.2 * len(active)


@pytest.mark.parametrize("round_no", range(CI_ROUNDS))
def test_mutants_round(seeds: Seeds, tmp_path: Path, round_no: int) -> None:
    from statekit import legacy_readers

    counts, problems = run_round(seeds, tmp_path, round_no)
    record(counts, problems)
    active = [r for r in legacy_readers.all_readers() if r.action in ("import", "import+archive", "drop")]
    assert counts["mutants"] >= 0.7 * len(active)
    assert not problems, f"round {round_no}:\n" + "\n".join(problems[:30])


@pytest.mark.slow
def test_many_more_mutant_rounds(seeds: Seeds, tmp_path: Path) -> None:
    failures = []
    for round_no in range(CI_ROUNDS, CI_ROUNDS + SLOW_ROUNDS):
        counts, problems = run_round(seeds, tmp_path, round_no)
        record(counts, problems)
        failures += [f"round {round_no}: {p}" for p in problems]
    assert not failures, "\n".join(failures[:40])


@pytest.mark.parametrize("provider", ['open\\"ai', "open\\u0000ai", "open]ai[0]"])
def test_a_key_that_breaks_a_json_path_does_not_stop_the_run(tmp_path: Path, provider: str) -> None:
    """Found by the mutator: a provider name with a quote or NUL made the post-commit validation query
    (``json_type(store_json, '$.profiles."<id>"')``) raise, which stopped the whole migration."""
    state = tmp_path / "home" / ".openclaw"
    (state / "credentials").mkdir(parents=True)
    (state / "cron").mkdir()
    oauth = ('{"%s": {"access": "sk-x-access", "refresh": "sk-x-refresh", "expires": 1800000000000}}' % provider).encode()
    (state / "credentials" / "oauth.json").write_bytes(oauth)
    jobs = (h.FIXTURES / "readers" / "cron" / "jobs.json").read_bytes()
    (state / "cron" / "jobs.json").write_bytes(jobs)
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert run.returncode in (0, 3) and not run.traceback, run
    receipts = _receipts(state)
    assert receipts.get("cron/jobs.json") == ("completed", 1), (receipts, run.stderr)
    if receipts.get("credentials/oauth.json") != ("completed", 1):
        assert (state / "credentials" / "oauth.json").read_bytes() == oauth
        assert any("credentials/oauth.json" in line for line in run.stderr.splitlines())


def test_a_symlink_loop_inside_a_workspace_is_named(tmp_path: Path) -> None:
    """Found here (was a strict xfail): a dangling link inside a workspace was in no plan bucket; fixed in d03adec."""
    state = h.copy_world("every-family", tmp_path)
    rel = "workspace/skills/pdf-summary/.clawhub/origin.json"
    (state / rel).unlink()
    os.symlink("origin.json", state / rel)
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert run.returncode in (0, 3) and not run.traceback, run
    assert os.readlink(state / rel) == "origin.json"
    assert any(rel in line for line in run.stderr.splitlines()), run.stderr


@pytest.mark.parametrize("content", [b'{"pid": Infinity}', b'{"pid": 1e999}', b'{"pid": 123456789012345678901234567890}',
                                     b"[" * 100_000 + b"]" * 100_000, b'{"pid": NaN}', b"99999999999999999999 gateway"])
def test_a_malformed_gateway_lock_never_crashes_the_gateway_check(tmp_path: Path, content: bytes) -> None:
    """Found by the mutator: a gateway lock whose pid is Infinity (or too big for a pid) made every command that
    checks for a running gateway (migrate, restore) die with a traceback before doing anything."""
    state = h.copy_world("demo-install", tmp_path)
    (state / "gateway.3f2a9c1b.lock").write_bytes(content)
    run = h.fork_cli("migrate", "--state-dir", state, "--yes", "--no-backup")
    assert run.returncode in (0, 3, 4) and not run.traceback, run


def test_an_infinite_timestamp_does_not_crash_the_plan(tmp_path: Path) -> None:
    """Found by the mutator: ``1e999`` (a float infinity) where a reader expects a number raised OverflowError in ``inspect``,
    which the plan did not catch: plan and migrate died with a traceback (then in legacy_readers/plugin_imessage.py:84,
    whose file statekit now keeps in place for the plugin's own doctor; the same input in cron/jobs.json)."""
    state = h.copy_world("every-family", tmp_path)
    rel = "cron/jobs.json"
    data = re.sub(rb'"createdAtMs":\s*[0-9]+', b'"createdAtMs": 1e999', (state / rel).read_bytes(), count=1)  # parses as float("inf")
    assert b"1e999" in data
    (state / rel).write_bytes(data)
    for args in (("plan", "--state-dir", state), ("migrate", "--state-dir", state, "--yes", "--no-backup")):
        run = h.fork_cli(*args)
        assert run.returncode == 3 and not run.traceback, run
        assert any(rel in line for line in (run.stdout + run.stderr).splitlines()), run
    assert (state / rel).read_bytes() == data


def _hangs(args: tuple, seconds: float = 3.0) -> bool:
    try:
        run = h.fork_cli(*args, timeout=seconds)
    except TimeoutError:
        return True
    assert not run.traceback, run
    return False


@pytest.mark.parametrize("dependency,dependent", [("cron/jobs.json", "cron/jobs-state.json"), ("devices/paired.json", "nodes/paired.json")])
def test_a_fifo_where_a_dependency_should_be_does_not_hang_migrate(tmp_path: Path, dependency: str, dependent: str) -> None:
    """Found by seed 7 (was a strict xfail): dependency_pending hashed a FIFO and blocked for ever; fixed in 6e1a1c9."""
    state = tmp_path / "home" / ".openclaw"
    (state / dependent).parent.mkdir(parents=True)
    (state / dependency).parent.mkdir(parents=True, exist_ok=True)
    (state / dependent).write_bytes((EVERY / dependent).read_bytes())
    os.mkfifo(state / dependency)
    assert not _hangs(("migrate", "--state-dir", state, "--yes", "--no-backup"))


def test_a_fifo_at_the_config_does_not_hang_plan(tmp_path: Path) -> None:
    """Found here (was a strict xfail): a FIFO openclaw.json blocked plan and migrate; fixed in 6e1a1c9."""
    state = h.copy_world("every-family", tmp_path)
    (state / "openclaw.json").unlink()
    os.mkfifo(state / "openclaw.json")
    assert not _hangs(("plan", "--state-dir", state))
