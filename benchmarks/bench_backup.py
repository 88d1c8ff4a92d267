#!/usr/bin/env python3
"""Benchmark ``statekit backup create / verify / restore`` against their floors, and against an earlier statekit.

Floors (the work the format itself needs, done by the fastest stock tools):

* create  = an online backup of every database (``sqlite3 .backup``, or SQLite's backup API through statekit's
  engine when the CLI is missing) plus ``tar | zstd -T0 -3`` of the tree;
* verify  = ``zstd -dc ARCHIVE | tar -t`` (decompress and read every member);
* restore = ``zstd -dc ARCHIVE | tar -x -C TARGET``.

Each round runs every floor and every statekit variant interleaved (machine load hits all alike); the best of
``--rounds`` counts. ``--baseline DIR`` also times an earlier statekit source tree (for example
``git archive <commit> | tar -x -C DIR``) with the same interpreter (``PYTHONPATH=DIR``), on the same trees: the
"no slower than before" check. ``--state-dir`` (repeatable) benchmarks existing state dirs (copied first, so
the originals are never written) instead of, or with ``--generate`` besides, the generated one. ``--format
openclaw`` is timed once per tree for information (against ``tar | gzip -6``). Also reports archive sizes
against ``tar | gzip -6`` and the peak RSS of the statekit processes (``os.wait4`` rusage).

Usage:  .venv/bin/python benchmarks/bench_backup.py [--size-mb 300] [--rounds 3] [--baseline DIR]
            [--state-dir DIR ...] [--generate] [--json FILE] [--workdir DIR] [--keep]

CPU mode (``--before PYTHON``): CPU seconds (user+sys of the whole process tree, ``os.wait4``) instead of the best
wall time. Each round runs, rotated: the floors (create = ``sqlite3 .backup`` + ``tar | zstd -T0 -3``; verify =
``zstd -dc | tar -t``; restore = ``zstd -dc | tar -x`` + an fsync of every file and directory), then ``backup create``
(with its verify), ``backup verify``, ``backup restore --target`` and an in-place ``backup restore`` with the
``--before`` interpreter (e.g. ``/work/main/.venv/bin/python``: main's code) and the ``--after`` one (default: this
one), all on the same tree and the same archive. Children run with their bytecode cached (``PYTHONPYCACHEPREFIX``;
each build's create and restore run once unmeasured first), as an installed statekit has it. Prints the median (min-max) CPU and wall per row and the ratios
to the floor and to before:

        .venv/bin/python benchmarks/bench_backup.py --before /work/main/.venv/bin/python --rounds 3 [--size-mb 300]

Memory mode (``--memory-files N``): generates N transcripts of 5 KB in two agents' session dirs (the shape of an old
install of many small files; ``--state-dir`` instead measures copies of those trees), then runs ``backup create``
(with its verify), ``backup verify``, ``backup restore --dry-run`` and ``backup restore --target`` once per
interpreter (``--before`` when given, then ``--after``) and prints each one's peak RSS (``ru_maxrss`` of the fresh
child: this small process forks it, so the figure is the child's own), CPU and wall:

        .venv/bin/python benchmarks/bench_backup.py --memory-files 100000 --before /work/main/.venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from statekit.db import connect, online_backup

WORDS = (
    "session agent model tool call result assistant user message gateway cron job delivery channel token "
    "context window reasoning summary transcript workspace skill plugin provider openclaw error retry ok "
    "alpha beta gamma delta the a of to and in is for on with as by at from this that be are was"
).split()


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def generate(state: Path, size_mb: int, seed: int = 7) -> dict[str, int]:
    """~40% databases (3 agents + global, WAL), ~55% JSONL transcripts/logs, ~5% incompressible blobs."""
    rng = random.Random(seed)
    budget = size_mb << 20
    db_budget, blob_budget = int(budget * 0.40), int(budget * 0.05)
    counts = {"databases": 0, "files": 0}
    dbs = [state / "state" / "openclaw.sqlite"] + [state / "agents" / a / "agent" / "openclaw-agent.sqlite" for a in ("main", "work", "ops")]
    per_db = db_budget // len(dbs)
    for db in dbs:
        db.parent.mkdir(parents=True, exist_ok=True)
        conn = connect(db)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN")  # one transaction per database, committed below
        role, agent = ("global", None) if db.parent.name == "state" else ("agent", db.parent.parent.name)
        conn.execute("CREATE TABLE schema_meta (meta_key TEXT PRIMARY KEY, role TEXT NOT NULL, schema_version INTEGER NOT NULL,"
                     " agent_id TEXT, app_version TEXT, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)")
        conn.execute("INSERT INTO schema_meta VALUES ('primary', ?, 12, ?, 'bench', 0, 0)", (role, agent))  # as OpenClaw's own
        conn.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, session TEXT, ts INTEGER, body TEXT)")
        conn.execute("CREATE INDEX events_session ON events(session, ts)")
        written = 0
        batch = []
        while written < per_db:
            body = json.dumps({"role": rng.choice(("user", "assistant", "tool")), "text": _text(rng, rng.randint(20, 200))})
            batch.append((f"s{rng.randint(1, 500)}", rng.randint(1, 1 << 40), body))
            written += len(body) + 40
            if len(batch) == 2000:
                conn.executemany("INSERT INTO events(session, ts, body) VALUES (?, ?, ?)", batch)
                batch.clear()
        conn.executemany("INSERT INTO events(session, ts, body) VALUES (?, ?, ?)", batch)
        conn.execute("PRAGMA user_version = 12")
        conn.commit()
        conn.close()
        counts["databases"] += 1
    remaining = budget - db_budget - blob_budget
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    index = 0
    while remaining > 0:
        index += 1
        path = sessions / f"session-{index:04d}.jsonl"
        with open(path, "w", encoding="utf-8") as fh:
            size = 0
            target = rng.randint(256 << 10, 4 << 20)
            while size < target:
                line = json.dumps({"type": "message", "id": rng.getrandbits(64), "text": _text(rng, rng.randint(10, 120))}) + "\n"
                fh.write(line)
                size += len(line)
        remaining -= size
        counts["files"] += 1
    media = state / "media"
    media.mkdir()
    for i in range(max(1, blob_budget >> 20)):
        (media / f"blob-{i}.bin").write_bytes(os.urandom(1 << 20))
        counts["files"] += 1
    (state / "openclaw.json").write_text('{"agents": {"list": [{"id": "main"}]}}')
    return counts


def run_measured(cmd: list[str], env: dict[str, str] | None = None, **kwargs) -> tuple[float, int]:
    """Wall time and peak RSS (KiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, **kwargs)
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd[:6]))} exited {proc.returncode}")
    return elapsed, usage.ru_maxrss


def _zstd_decompress(archive: Path) -> subprocess.Popen:
    if shutil.which("zstd"):
        return subprocess.Popen(["zstd", "-dc", "-q", str(archive)], stdout=subprocess.PIPE)
    code = "import sys, zstandard; zstandard.ZstdDecompressor().copy_stream(open(sys.argv[1], 'rb'), sys.stdout.buffer, read_across_frames=True)"
    return subprocess.Popen([sys.executable, "-c", code, str(archive)], stdout=subprocess.PIPE)


def floor_create(state: Path, work: Path) -> tuple[float, int]:
    """Online backup of each DB + tar | zstd -T0 of the tree; returns (seconds, archive bytes)."""
    dbs = [p for p in state.rglob("*.sqlite") if p.is_file() and not p.is_symlink()]
    start = time.perf_counter()
    for i, db in enumerate(dbs):
        dest = work / f"floor-db-{i}.sqlite"
        dest.unlink(missing_ok=True)
        if shutil.which("sqlite3"):
            subprocess.run(["sqlite3", str(db), f".backup '{dest}'"], check=True)
        else:
            src, dst = connect(db, mode="ro"), connect(dest)
            online_backup(src, dst)
            src.close()
            dst.close()
    out = work / "floor.tar.zst"
    tar = subprocess.Popen(["tar", "-cf", "-", "-C", str(state), "."], stdout=subprocess.PIPE)
    if shutil.which("zstd"):
        with open(out, "wb") as fh:
            subprocess.run(["zstd", "-T0", "-3", "-q", "-c"], stdin=tar.stdout, stdout=fh, check=True)
    else:
        import zstandard

        with open(out, "wb") as fh:
            zstandard.ZstdCompressor(level=3, threads=-1).copy_stream(tar.stdout, fh)
    tar.stdout.close()
    tar.wait()
    return time.perf_counter() - start, out.stat().st_size


def floor_verify(archive: Path) -> float:
    start = time.perf_counter()
    source = _zstd_decompress(archive)
    subprocess.run(["tar", "-tf", "-"], stdin=source.stdout, stdout=subprocess.DEVNULL, check=True)
    source.stdout.close()
    source.wait()
    return time.perf_counter() - start


def floor_restore(archive: Path, target: Path) -> float:
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    start = time.perf_counter()
    source = _zstd_decompress(archive)
    subprocess.run(["tar", "-xf", "-", "-C", str(target)], stdin=source.stdout, check=True)
    source.stdout.close()
    source.wait()
    return time.perf_counter() - start


def gzip_size(state: Path) -> tuple[float, int]:
    start = time.perf_counter()
    tar = subprocess.Popen(["tar", "-cf", "-", "-C", str(state), "."], stdout=subprocess.PIPE)
    gz = subprocess.run(["gzip", "-6", "-c"], stdin=tar.stdout, stdout=subprocess.PIPE, check=True)
    tar.stdout.close()
    tar.wait()
    return time.perf_counter() - start, len(gz.stdout)


PYCACHE = Path(tempfile.gettempdir()) / "statekit-bench-backup-pycache"


def _env(source: Path | None) -> dict[str, str]:
    """The children's environment: no STATEKIT_* settings, bytecode cached under PYCACHE (as an installed statekit
    has it; a shell with PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module in every measured run)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STATEKIT_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def _statekit(*args: object) -> list[str]:
    return [sys.executable, "-m", "statekit", *map(str, args)]


def _best(table: dict[str, tuple[float, int]], key: str, seconds: float, rss: int = 0) -> None:
    if key not in table or seconds < table[key][0]:
        table[key] = (seconds, rss)


def bench_tree(state: Path, work: Path, rounds: int, baseline: Path | None) -> dict[str, object]:
    """create, verify, restore --target of ``state``: floors, statekit now and (optionally) the baseline."""
    versions = {"now": None} | ({"baseline": baseline} if baseline is not None else {})
    best: dict[str, tuple[float, int]] = {}
    sizes: dict[str, int] = {}
    for r in range(rounds):
        seconds, floor_bytes = floor_create(state, work)
        _best(best, "floor create", seconds)
        sizes["floor"] = floor_bytes
        floor_archive = work / "floor.tar.zst"
        _best(best, "floor verify", floor_verify(floor_archive))
        _best(best, "floor restore", floor_restore(floor_archive, work / "floor-restored"))
        shutil.rmtree(work / "floor-restored", ignore_errors=True)
        for name, source in versions.items():
            env = _env(source)
            out = work / f"out-{name}-{r}"
            seconds, rss = run_measured(_statekit("backup", "create", "--state-dir", state, "--output", out, "--quiet"), env=env)
            _best(best, f"{name} create", seconds, rss)
            archive = next(out.glob("*.tar.zst"))
            sizes[name] = archive.stat().st_size
            seconds, rss = run_measured(_statekit("backup", "verify", archive, "--quiet"), env=env)
            _best(best, f"{name} verify", seconds, rss)
            target = work / f"restored-{name}"
            shutil.rmtree(target, ignore_errors=True)
            seconds, rss = run_measured(_statekit("backup", "restore", archive, "--target", target, "--yes", "--quiet"), env=env)
            _best(best, f"{name} restore", seconds, rss)
            shutil.rmtree(target, ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
    out = work / "out-openclaw"
    seconds, rss = run_measured(_statekit("backup", "create", "--state-dir", state, "--output", out, "--quiet", "--format", "openclaw"),
                                env=_env(None))
    sizes["now --format openclaw"] = next(out.glob("*.tar.gz")).stat().st_size
    best["now create --format openclaw"] = (seconds, rss)
    shutil.rmtree(out, ignore_errors=True)
    gz_seconds, gz_bytes = gzip_size(state)
    best["tar | gzip -6"] = (gz_seconds, 0)
    sizes["tar | gzip -6"] = gz_bytes
    return {"best": best, "sizes": sizes}


def report(label: str, tree_bytes: int, result: dict[str, object]) -> list[str]:
    best: dict[str, tuple[float, int]] = result["best"]  # type: ignore[assignment]
    sizes: dict[str, int] = result["sizes"]  # type: ignore[assignment]
    lines = [f"== {label} ({tree_bytes / 1e6:.1f} MB)"]
    for op in ("create", "verify", "restore"):
        floor_s = best[f"floor {op}"][0]
        line = f"{op:<8} floor {floor_s:6.2f}s"
        for name in ("now", "baseline"):
            if f"{name} {op}" in best:
                seconds, rss = best[f"{name} {op}"]
                line += f" | {name} {seconds:6.2f}s = {seconds / floor_s:5.2f}x floor ({rss / 1024:.0f} MiB)"
        if f"baseline {op}" in best:
            line += f" | now/baseline {best[f'now {op}'][0] / best[f'baseline {op}'][0]:.2f}"
        lines.append(line)
    oc_s = best["now create --format openclaw"][0]
    gz_s = best["tar | gzip -6"][0]
    lines.append(f"create --format openclaw {oc_s:.2f}s = {oc_s / gz_s:.2f}x tar | gzip -6 ({gz_s:.2f}s)")
    gz = sizes["tar | gzip -6"]
    lines.append("archive bytes: " + ", ".join(f"{k} {v / 1e6:.2f} MB ({v / gz:.2f}x gzip -6)" for k, v in sizes.items()))
    return lines


# --------------------------------------------------------------------------- CPU mode


def _cpu_child(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(CPU user+sys, wall) of one child process and everything it waited for."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, cwd="/")  # never a checkout's statekit/ on sys.path
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(map(str, cmd[:7]))} exited {os.waitstatus_to_exitcode(status)}")
    return usage.ru_utime + usage.ru_stime, wall


def _cpu_pipeline(run: object) -> tuple[float, float]:
    """(CPU, wall) of ``run()``: its children's and this process's own (the fsync walk) CPU."""
    kids, me = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    run()  # type: ignore[operator]
    wall = time.perf_counter() - start
    kids2, me2 = resource.getrusage(resource.RUSAGE_CHILDREN), resource.getrusage(resource.RUSAGE_SELF)
    cpu = (kids2.ru_utime - kids.ru_utime) + (kids2.ru_stime - kids.ru_stime) + (me2.ru_utime - me.ru_utime) + (me2.ru_stime - me.ru_stime)
    return cpu, wall


def _fsync_tree(root: Path) -> None:
    for directory, _dirs, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_NOFOLLOW)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def bench_cpu(state: Path, work: Path, rounds: int, before: str, after: str) -> dict[str, list[tuple[float, float]]]:
    """Every floor and statekit row, rotated per round (see the module doc); returns row -> [(CPU, wall)]."""
    env = _env(None)
    rows: dict[str, object] = {}
    archives: dict[str, Path] = {}
    for name, python in (("before", before), ("after", after)):
        out = work / f"archive-{name}"
        subprocess.run([python, "-m", "statekit", "backup", "create", "--state-dir", str(state), "--output", str(out), "--quiet"],
                       env=env, check=True, cwd="/")
        archives[name] = next(out.glob("*.tar.zst"))
        warm = work / f"warm-{name}"  # one unmeasured restore: every module a measured row imports is compiled
        subprocess.run([python, "-m", "statekit", "backup", "restore", str(archives[name]), "--target", str(warm), "--yes", "--quiet"],
                       env=env, check=True, cwd="/")
        shutil.rmtree(warm, ignore_errors=True)
    floor_create(state, work)
    floor_archive = work / "floor.tar.zst"

    def restore_floor() -> None:
        target = work / "floor-restored"
        floor_restore(floor_archive, target)
        _fsync_tree(target)

    rows["floor create (sqlite3 .backup + tar | zstd -T0 -3)"] = lambda: _cpu_pipeline(lambda: floor_create(state, work))
    rows["floor verify (zstd -dc | tar -t)"] = lambda: _cpu_pipeline(lambda: floor_verify(floor_archive))
    rows["floor restore (zstd -dc | tar -x + fsync)"] = lambda: _cpu_pipeline(restore_floor)
    counter = iter(range(1 << 30))
    for name, python in (("before", before), ("after", after)):
        def create(python: str = python, name: str = name) -> tuple[float, float]:
            out = work / f"create-{name}-{next(counter)}"
            got = _cpu_child([python, "-m", "statekit", "backup", "create", "--state-dir", str(state), "--output", str(out), "--quiet"], env)
            shutil.rmtree(out, ignore_errors=True)
            return got

        def verify(python: str = python, name: str = name) -> tuple[float, float]:
            return _cpu_child([python, "-m", "statekit", "backup", "verify", str(archives[name]), "--quiet"], env)

        def restore(python: str = python, name: str = name) -> tuple[float, float]:
            target = work / f"restored-{name}"
            shutil.rmtree(target, ignore_errors=True)
            got = _cpu_child([python, "-m", "statekit", "backup", "restore", str(archives[name]), "--target", str(target), "--yes",
                              "--quiet"], env)
            shutil.rmtree(target, ignore_errors=True)
            return got

        def in_place(python: str = python, name: str = name) -> tuple[float, float]:
            live = work / f"live-{name}"
            shutil.rmtree(live, ignore_errors=True)
            live.mkdir()  # an empty state dir: every asset is written (staged, then swapped in)
            got = _cpu_child([python, "-m", "statekit", "backup", "restore", str(archives[name]), "--state-dir", str(live), "--yes",
                              "--quiet"], env)
            shutil.rmtree(live, ignore_errors=True)
            return got

        rows[f"{name} create (with verify)"] = create
        rows[f"{name} verify"] = verify
        rows[f"{name} restore --target"] = restore
        rows[f"{name} restore in place"] = in_place
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
    names = list(rows)
    for r in range(rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:
            results[name].append(rows[name]())  # type: ignore[operator]
        print(f"round {r + 1}/{rounds} done, load {os.getloadavg()[0]:.2f}", flush=True)
    return results


def report_cpu(results: dict[str, list[tuple[float, float]]]) -> list[str]:
    def med(name: str, index: int) -> float:
        return statistics.median(g[index] for g in results[name])

    def summary(name: str, index: int) -> str:
        values = [g[index] for g in results[name]]
        return f"{statistics.median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"

    floors = {op: next(n for n in results if n.startswith(f"floor {op}")) for op in ("create", "verify", "restore")}
    lines = [f"{'':52} {'CPU s median (min-max)':>24} {'wall s median (min-max)':>24}  CPU/floor  CPU after/before"]
    for name in results:
        op = next(op for op in floors if f" {op}" in f" {name.split(' ', 1)[1]}")
        ratio = "" if name.startswith("floor") else f"{med(name, 0) / med(floors[op], 0):8.2f}x"
        vs = ""
        if name.startswith("after"):
            vs = f"{med(name, 0) / med('before' + name[len('after'):], 0):8.2f}x"
        lines.append(f"{name:52} {summary(name, 0):>24} {summary(name, 1):>24}  {ratio:>9}  {vs:>9}")
    return lines


def generate_small(state: Path, files: int, size: int = 5 * 1024, seed: int = 7) -> None:
    """``files`` JSONL transcripts of ``size`` bytes, alternating between two agents' session dirs."""
    rng = random.Random(seed)
    for agent in ("main", "work"):
        (state / "agents" / agent / "sessions").mkdir(parents=True, exist_ok=True)
    for n in range(files):
        line = json.dumps({"type": "message", "id": f"m{n}", "message": {"role": "user", "content": _text(rng, 30)}}) + "\n"
        body = (line * (size // len(line) + 1))[:size - 1] + "\n"
        (state / "agents" / ("main", "work")[n % 2] / "sessions" / f"s-{n:06d}.jsonl").write_text(body, encoding="utf-8")


def _memory_child(cmd: list[str]) -> dict[str, float]:
    """Peak RSS (MB), CPU (user+sys, s) and wall (s) of one fresh child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=_env(None), stdout=subprocess.DEVNULL, cwd="/")
    _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(map(str, cmd[:7]))} exited {os.waitstatus_to_exitcode(status)}")
    return {"rss_mb": round(usage.ru_maxrss / 1024, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "wall_s": round(time.perf_counter() - start, 1)}


def bench_memory(state: Path, work: Path, interpreters: list[tuple[str, str]]) -> dict[str, dict[str, dict[str, float]]]:
    """create (with verify), verify, restore --dry-run, restore --target of ``state`` with each interpreter, once."""
    results: dict[str, dict[str, dict[str, float]]] = {}
    for name, python in interpreters:
        out, dry, restored = work / f"out-{name}", work / f"dry-{name}", work / f"restored-{name}"
        row = results[name] = {}
        row["create"] = _memory_child([python, "-m", "statekit", "backup", "create", "--state-dir", str(state), "--output", str(out),
                                       "--no-progress", "--quiet"])
        archive = max(out.glob("*.tar.zst"))
        row["verify"] = _memory_child([python, "-m", "statekit", "backup", "verify", str(archive), "--no-progress", "--quiet"])
        row["restore --dry-run"] = _memory_child([python, "-m", "statekit", "backup", "restore", str(archive), "--target", str(dry),
                                                  "--dry-run", "--no-progress", "--quiet"])
        row["restore --target"] = _memory_child([python, "-m", "statekit", "backup", "restore", str(archive), "--target",
                                                 str(restored), "--yes", "--no-progress", "--quiet"])
        shutil.rmtree(restored, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)
    return results


def report_memory(results: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    lines = [f"{'build':<8} {'command':<20} {'peak RSS MB':>12} {'CPU s':>8} {'wall s':>8}"]
    for name, rows in results.items():
        lines += [f"{name:<8} {op:<20} {m['rss_mb']:>12.1f} {m['cpu_s']:>8.2f} {m['wall_s']:>8.1f}" for op, m in rows.items()]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=300)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the generated tree and archives")
    parser.add_argument("--rounds", type=int, default=2, help="best of N for each timing")
    parser.add_argument("--state-dir", type=Path, action="append", default=[], help="benchmark (a copy of) this state dir; repeatable")
    parser.add_argument("--generate", action="store_true", help="also the generated tree when --state-dir is given")
    parser.add_argument("--baseline", type=Path, default=None, help="an earlier statekit source tree to time the same way")
    parser.add_argument("--json", type=Path, default=None, help="write the measurements here")
    parser.add_argument("--before", default=None, help="CPU mode: the interpreter of the statekit to compare with")
    parser.add_argument("--after", default=sys.executable, help="CPU mode: the interpreter of the statekit measured")
    parser.add_argument("--memory-files", type=int, default=None,
                        help="memory mode: peak RSS of create/verify/restore of N generated 5 KB files (or of --state-dir)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-backup-", dir=args.workdir))
    trees: list[tuple[str, Path]] = []
    try:
        if args.memory_files is not None and not args.state_dir:
            state = work / "small" / "home" / ".openclaw"
            t0 = time.perf_counter()
            generate_small(state, args.memory_files)
            print(f"generated {args.memory_files} files of 5 KB in {time.perf_counter() - t0:.1f}s", flush=True)
            trees.append((f"{args.memory_files} small files", state))
        elif not args.state_dir or args.generate:
            state = work / "generated" / "home" / ".openclaw"
            t0 = time.perf_counter()
            counts = generate(state, args.size_mb)
            print(f"generated {counts['databases']} databases, {counts['files']} files in {time.perf_counter() - t0:.1f}s")
            trees.append((f"generated {args.size_mb} MB", state))
        for index, given in enumerate(args.state_dir):
            copy = work / f"tree-{index}" / "home" / ".openclaw"
            shutil.copytree(given, copy, symlinks=True)
            trees.append((str(given), copy))
        results = {}
        for label, state in trees:
            tree_bytes = sum(p.stat().st_size for p in state.rglob("*") if p.is_file() and not p.is_symlink())
            scratch = state.parent.parent / "bench"
            scratch.mkdir()
            if args.memory_files is not None:
                print(f"cpus: {os.cpu_count()}, load average at the start: {os.getloadavg()[0]:.2f}", flush=True)
                interpreters = ([("before", args.before)] if args.before else []) + [("after", args.after)]
                memory = bench_memory(state, scratch, interpreters)
                print(f"== {label} ({tree_bytes / 1e6:.1f} MB)")
                print("\n".join(report_memory(memory)), flush=True)
                results[label] = {"tree_bytes": tree_bytes, "memory": memory}
                continue
            if args.before is not None:
                print(f"cpus: {os.cpu_count()}, load average at the start: {os.getloadavg()[0]:.2f}", flush=True)
                cpu = bench_cpu(state, scratch, args.rounds, args.before, args.after)
                print(f"== {label} ({tree_bytes / 1e6:.1f} MB)")
                print("\n".join(report_cpu(cpu)), flush=True)
                results[label] = {"tree_bytes": tree_bytes, "cpu": cpu}
                continue
            result = bench_tree(state, scratch, args.rounds, args.baseline)
            results[label] = {"tree_bytes": tree_bytes, **result}
            print("\n".join(report(label, tree_bytes, result)), flush=True)
        print(f"cpus: {os.cpu_count()}, load average at the end: {os.getloadavg()[0]:.1f}")
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
