#!/usr/bin/env python3
"""Migration throughput and peak memory on a generated install.

Generates a legacy install with at least --mb megabytes of JSONL transcripts
(many ordinary files plus one very large file), runs `statekit migrate --yes`
in a subprocess, and prints MB/s and the child's peak RSS. Target: peak RSS
under 200 MB whatever the input size (transcripts are streamed).

Usage: python benchmarks/bench_migrate.py [--mb 200] [--big-mb 60] [--keep DIR] [--with-backup]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def write_transcript(path: Path, session_id: str, target_bytes: int) -> int:
    text = "lorem ipsum dolor sit amet " * 30
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        header = json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}, separators=(",", ":"))
        out.write(header + "\n")
        written += len(header) + 1
        parent = None
        n = 0
        while written < target_bytes:
            eid = f"{n:08x}"
            role = "user" if n % 2 == 0 else "assistant"
            line = json.dumps({"type": "message", "id": eid, "parentId": parent, "timestamp": f"2026-01-01T00:{(n // 60) % 60:02d}:{n % 60:02d}.000Z",
                               "message": {"role": role, "content": [{"type": "text", "text": f"{n} {text}"}], "timestamp": 1767225600000 + n}},
                              separators=(",", ":"))
            out.write(line + "\n")
            written += len(line) + 1
            parent = eid
            n += 1
    return written


def generate(state: Path, total_mb: int, big_mb: int) -> int:
    total = 0
    per_file = 512 * 1024
    agents = ["main", "work"]
    index: dict[str, dict[str, dict]] = {a: {} for a in agents}
    big_id = "big-0000"
    sessions = state / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    total += write_transcript(sessions / f"{big_id}.jsonl", big_id, big_mb * 1024 * 1024)
    index["main"][f"agent:main:{big_id}"] = {"sessionId": big_id, "updatedAt": 1767225600000}
    n = 0
    while total < total_mb * 1024 * 1024:
        agent = agents[n % 2]
        sid = f"s-{n:06d}"
        directory = state / "agents" / agent / "sessions"
        directory.mkdir(parents=True, exist_ok=True)
        total += write_transcript(directory / f"{sid}.jsonl", sid, per_file)
        index[agent][f"agent:{agent}:s{n}"] = {"sessionId": sid, "updatedAt": 1767225600000 + n, "chatType": "direct"}
        n += 1
    for agent, entries in index.items():
        (state / "agents" / agent / "sessions" / "sessions.json").write_text(json.dumps(entries))
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--big-mb", type=int, default=60)
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--with-backup", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="statekit-bench-"))
    try:
        state = root / ".openclaw"
        state.mkdir()
        size = generate(state, args.mb, args.big_mb)
        cmd = [sys.executable, "-m", "statekit", "migrate", "--state-dir", str(state), "--yes", "--quiet"]
        if not args.with_backup:
            cmd.append("--no-backup")
        else:
            cmd += ["--backup-output", str(root / "backups")]
        start = time.perf_counter()
        result = subprocess.run(cmd, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        mb = size / (1024 * 1024)
        print(json.dumps({
            "input_mb": round(mb, 1),
            "largest_transcript_mb": args.big_mb,
            "seconds": round(elapsed, 2),
            "mb_per_s": round(mb / elapsed, 1),
            "peak_rss_mb": round(peak_kb / 1024, 1),
            "exit_code": result.returncode,
            "with_backup": args.with_backup,
        }))
        if result.returncode != 0:
            print(result.stderr[-2000:], file=sys.stderr)
            return 1
        return 0 if peak_kb / 1024 < 200 else 2
    finally:
        if args.keep:
            shutil.move(str(root), args.keep)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
