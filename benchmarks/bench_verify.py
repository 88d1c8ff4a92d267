#!/usr/bin/env python3
"""Benchmark ``statekit backup verify`` of one archive: two statekit installs against each other and the floor.

The tree is ``bench_backup.generate``'s (~40% WAL databases, ~55% JSONL transcripts, ~5% incompressible blobs);
one archive is created from it (plain, and age-encrypted), then each round runs, in rotated order:

* the floor: ``zstd -dc ARCHIVE | tar -t`` (decompress and read every member header; no hashing, no database check);
* ``backup verify`` with the ``--before`` interpreter (e.g. main's venv: another statekit checkout's code);
* ``backup verify`` with the ``--after`` interpreter (default: this one);
* the same two on the ``.tar.zst.age`` archive (``--identity``).

For each: wall seconds, CPU seconds (user + sys of the process, its children for the floor's pipeline) and
peak RSS (``os.wait4``); the median and min-max over ``--rounds``, with the ratios. The load average is printed
before and after (the machine is shared: read the ratios, not the absolute seconds). Every statekit child runs from
``/`` (``python -m statekit`` from a checkout would import that checkout's ``statekit/`` whatever the interpreter)
with its bytecode cached under the workdir (one unmeasured verify per interpreter first).

Usage:  .venv/bin/python benchmarks/bench_verify.py [--size-mb 300] [--rounds 3]
            [--before /work/main/.venv/bin/python] [--after .venv/bin/python] [--json FILE] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_backup import generate  # noqa: E402

from pyrage import x25519  # noqa: E402


def _measured(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall, CPU (user+sys) and peak RSS (KiB) of one child."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, cwd="/")  # never a checkout's statekit/ on sys.path
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd[:6])} exited {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def _floor(archive: Path) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    if shutil.which("zstd"):
        source = subprocess.Popen(["zstd", "-dc", "-q", str(archive)], stdout=subprocess.PIPE)
    else:
        code = "import sys, zstandard; zstandard.ZstdDecompressor().copy_stream(open(sys.argv[1], 'rb'), sys.stdout.buffer, read_across_frames=True)"
        source = subprocess.Popen([sys.executable, "-c", code, str(archive)], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-tf", "-"], stdin=source.stdout, stdout=subprocess.DEVNULL, check=True)
    assert source.stdout is not None
    source.stdout.close()
    source.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 0


def _summary(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default="/work/main/.venv/bin/python")
    parser.add_argument("--after", default=sys.executable)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-verify-", dir=args.workdir))
    # Bytecode cached (as an installed statekit has it), never in a source tree; the first round's creates write it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("STATEKIT_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    try:
        state = work / "home" / ".openclaw"
        t0 = time.perf_counter()
        counts = generate(state, args.size_mb)
        tree = sum(p.stat().st_size for p in state.rglob("*") if p.is_file())
        print(f"generated {tree / 1e6:.0f} MB: {counts['databases']} databases, {counts['files']} files "
              f"in {time.perf_counter() - t0:.0f}s", flush=True)
        identity = x25519.Identity.generate()
        key = work / "key.txt"
        key.write_text(f"{identity}\n")
        key.chmod(0o600)
        out = work / "out"
        for extra in ((), ("--recipient", str(identity.to_public()))):
            subprocess.run([args.after, "-m", "statekit", "backup", "create", "--state-dir", str(state), "--output", str(out),
                            "--quiet", *extra], env=env, check=True, cwd="/")
            time.sleep(1.1)  # archive names are per second
        plain = next(out.glob("*.tar.zst"))
        sealed = next(out.glob("*.tar.zst.age"))
        print(f"archive {plain.stat().st_size / 1e6:.0f} MB (age: {sealed.stat().st_size / 1e6:.0f} MB); "
              f"load average {os.getloadavg()[0]:.2f}; cpus {os.cpu_count()}", flush=True)
        runs = {
            "floor zstd -dc | tar -t": lambda: _floor(plain),
            "before verify": lambda: _measured([args.before, "-m", "statekit", "backup", "verify", str(plain), "--quiet"], env),
            "after verify": lambda: _measured([args.after, "-m", "statekit", "backup", "verify", str(plain), "--quiet"], env),
            "before verify .age": lambda: _measured([args.before, "-m", "statekit", "backup", "verify", str(sealed), "-i", str(key),
                                                     "--quiet"], env),
            "after verify .age": lambda: _measured([args.after, "-m", "statekit", "backup", "verify", str(sealed), "-i", str(key),
                                                    "--quiet"], env),
        }
        for warm in ("before verify", "after verify", "before verify .age", "after verify .age"):
            runs[warm]()  # unmeasured: writes each build's bytecode cache
        results: dict[str, list[tuple[float, float, int]]] = {name: [] for name in runs}
        names = list(runs)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[: r % len(names)]:
                results[name].append(runs[name]())
        print(f"{'':26} {'wall s median (min-max)':>26} {'CPU s median (min-max)':>26} {'peak RSS':>9}")
        for name, got in results.items():
            walls, cpus, rss = [g[0] for g in got], [g[1] for g in got], max(g[2] for g in got)
            print(f"{name:26} {_summary(walls):>26} {_summary(cpus):>26} {rss / 1024:7.0f} MB" if rss else
                  f"{name:26} {_summary(walls):>26} {_summary(cpus):>26} {'':>9}")

        def ratio(a: str, b: str, index: int) -> float:
            return statistics.median(g[index] for g in results[a]) / statistics.median(g[index] for g in results[b])

        floor = names[0]
        for a, b in (("after verify", "before verify"), ("after verify .age", "before verify .age"),
                     ("after verify", floor), ("before verify", floor)):
            print(f"{a} / {b}: wall {ratio(a, b, 0):.2f}x, CPU {ratio(a, b, 1):.2f}x")
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
        if args.json:
            args.json.write_text(json.dumps({"tree_bytes": tree, "archive_bytes": plain.stat().st_size, "runs": results}, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
