#!/usr/bin/env python3
"""Benchmark ``statekit backup create`` against the floor on one generated state dir.

Floor = an online backup of every database (``sqlite3 .backup``, or SQLite's
backup API through statekit's engine when the CLI is missing) plus ``tar | zstd -T0 -3`` of
the tree (the ``zstandard`` module through a pipe when ``zstd`` is missing).
Also reports the archive size against ``tar | gzip -6`` of the same tree and
the peak RSS of the statekit process (``os.wait4`` rusage).

Usage:  .venv/bin/python benchmarks/bench_backup.py [--size-mb 300] [--workdir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
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


def run_measured(cmd: list[str], **kwargs) -> tuple[float, int]:
    """Wall time and peak RSS (KiB) of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, **kwargs)
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} exited {proc.returncode}")
    return elapsed, usage.ru_maxrss


def floor(state: Path, work: Path) -> tuple[float, int]:
    """Online backup of each DB + tar | zstd -T0 of the tree; returns (seconds, archive bytes)."""
    dbs = [p for p in state.rglob("*.sqlite")]
    start = time.perf_counter()
    for i, db in enumerate(dbs):
        dest = work / f"floor-db-{i}.sqlite"
        if shutil.which("sqlite3"):
            subprocess.run(["sqlite3", str(db), f".backup '{dest}'"], check=True)
        else:
            src, dst = connect(db), connect(dest)
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


def gzip_size(state: Path) -> tuple[float, int]:
    start = time.perf_counter()
    tar = subprocess.Popen(["tar", "-cf", "-", "-C", str(state), "."], stdout=subprocess.PIPE)
    gz = subprocess.run(["gzip", "-6", "-c"], stdin=tar.stdout, stdout=subprocess.PIPE, check=True)
    tar.stdout.close()
    tar.wait()
    return time.perf_counter() - start, len(gz.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=300)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the generated tree and archives")
    parser.add_argument("--rounds", type=int, default=2, help="best of N for each timing")
    parser.add_argument("--state-dir", type=Path, default=None, help="benchmark this existing state dir instead of generating one")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-backup-", dir=args.workdir))
    state = args.state_dir or work / "home" / ".openclaw"
    try:
        if args.state_dir is None:
            t0 = time.perf_counter()
            counts = generate(state, args.size_mb)
            print(f"generated {counts['databases']} databases, {counts['files']} files in {time.perf_counter() - t0:.1f}s")
        tree_bytes = sum(p.stat().st_size for p in state.rglob("*") if p.is_file())
        print(f"state dir {state}: {tree_bytes / 1e6:.0f} MB")
        statekit = [sys.executable, "-m", "statekit", "backup", "create", "--state-dir", str(state), "--quiet"]
        variants = {"create": [], "create --no-verify": ["--no-verify"]}
        results: dict[str, tuple[float, int, int]] = {}
        floor_best: tuple[float, int] | None = None
        for r in range(args.rounds):  # interleaved, so machine load hits every variant alike
            measured = floor(state, work)
            floor_best = measured if floor_best is None or measured[0] < floor_best[0] else floor_best
            for label, extra in variants.items():
                out = work / f"out-{r}-{len(extra)}"
                seconds, rss = run_measured(statekit + ["--output", str(out)] + extra)
                size = next(out.glob("*.tar.zst")).stat().st_size
                if label not in results or seconds < results[label][0]:
                    results[label] = (seconds, rss, size)
                shutil.rmtree(out)
        assert floor_best is not None
        gz_seconds, gz_bytes = gzip_size(state)
        ours = results["create"][2]
        print(f"floor (sqlite3 .backup + tar | zstd -T0 -3): {floor_best[0]:.2f}s, {floor_best[1] / 1e6:.1f} MB")
        for label, (seconds, rss, size) in results.items():
            print(f"statekit backup {label}: {seconds:.2f}s = {seconds / floor_best[0]:.2f}x floor, archive {size / 1e6:.1f} MB, peak RSS {rss / 1024:.0f} MiB")
        print(f"tar | gzip -6: {gz_bytes / 1e6:.1f} MB in {gz_seconds:.2f}s; statekit archive is {ours / gz_bytes:.2f}x the gzip size")
        print(f"cpus: {os.cpu_count()}, load average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
