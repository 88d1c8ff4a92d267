#!/usr/bin/env python3
"""statekit against the floor: CPU and wall ratios, MB/s, peak RSS, on generated installs.

    python benchmarks/run.py --quick          # the CI-sized shapes (56 MB, 20,000 small files, plan)
    python benchmarks/run.py                  # + 200 MB of transcripts
    python benchmarks/run.py --big            # + 2 GB, 100,000 small files, one 500 MB transcript
    python benchmarks/run.py --shapes small-20k,plan-20k --pairs 3
    python benchmarks/run.py --quick --before /work/main/.venv/bin/python   # + another build, in the same pairs

Each shape is generated once under --workdir (kept between runs). For every pair, a fresh
copy of the shape is made and statekit and the floor run one after the other, the
order alternating between pairs; the table gives the median (and min-max) of the per-pair
ratios statekit/floor, statekit's MB/s and the peak RSS of each child (``ru_maxrss`` from
``wait4``). CPU = user + sys of the child process tree; prefer it to wall time on a shared
machine (the load average seen is printed). Children run with their bytecode cached under
``--workdir/pycache`` (each build runs once on a tiny install first), as an installed statekit has it.
``--before PYTHON`` runs a second build of statekit
(another venv) in every pair too, the three in rotating order, and gives its ratios beside.

The floor (``benchmarks/floor.py``): read each line, ``json.loads``, ``executemany`` into one WAL
table, one transaction per file. For ``plan`` shapes the floor reads and parses every line
(plan's own work) without SQLite. Migrate shapes also run the **schema floor** (``floor.py schema``)
in every pair: the same, but into the rows OpenClaw 2026.9.6's agent schema needs (a session row,
one event row per line, one identity row per event with an id, the release's keys and indexes),
so the table tells how much of the ratio is the target layout's and how much is statekit's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SHAPE_VERSION = 3
MB = 1024 * 1024

WORDS = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua"
         " the quick brown fox jumps over the lazy dog function return const value await async import from").split()
UNICODE = ["héllo", "naïve", "日本語のテキスト", "中文字符", "emoji 🚀✨🔥", "Ελληνικά", "русский текст", "עברית", "tab\tand \"quotes\"", "line\nbreak", "back\\slash"]


# --------------------------------------------------------------------------- shapes


def _text(rng: random.Random, approx: int) -> str:
    parts: list[str] = []
    size = 0
    while size < approx:
        word = rng.choice(UNICODE) if rng.random() < 0.06 else rng.choice(WORDS)
        parts.append(word)
        size += len(word) + 1
    return " ".join(parts)


class TranscriptWriter:
    """Transcript lines shaped like OpenClaw's: text messages, tool calls, 20-200 KB tool outputs, unicode."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.texts = [_text(self.rng, self.rng.choice((20, 60, 120, 300, 900))) for _ in range(64)]
        self.tool_outputs = [_text(self.rng, self.rng.randint(20_000, 200_000)) for _ in range(8)]

    def lines(self, session_id: str, target_bytes: int) -> list[str]:
        rng = self.rng
        out = [json.dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/home/u/w"},
                          separators=(",", ":"), ensure_ascii=False)]
        size = len(out[0]) + 1
        parent: str | None = None
        n = 0
        while size < target_bytes:
            eid = f"{rng.getrandbits(32):08x}"
            stamp = f"2026-01-01T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}.{n % 1000:03d}Z"
            kind = rng.random()
            if kind < 0.002 and target_bytes > 60_000:
                call = f"call_{n}"
                message: dict[str, Any] = {"role": "toolResult", "toolCallId": call, "toolName": "exec",
                                           "content": [{"type": "text", "text": rng.choice(self.tool_outputs)}], "isError": False,
                                           "timestamp": 1767225600000 + n}
            elif kind < 0.15:
                message = {"role": "assistant", "content": [{"type": "toolCall", "id": f"call_{n}", "name": "exec",
                                                            "arguments": {"command": "ls -la", "cwd": "/home/u/w"}}],
                           "api": "openai-responses", "provider": "openai", "model": "gpt-5",
                           "usage": {"input": 1200 + n, "output": 40, "cacheRead": 0, "totalTokens": 1240 + n}, "stopReason": "toolUse",
                           "timestamp": 1767225600000 + n}
            else:
                role = "user" if n % 2 == 0 else "assistant"
                message = {"role": role, "content": [{"type": "text", "text": rng.choice(self.texts)}], "timestamp": 1767225600000 + n}
            line = json.dumps({"type": "message", "id": eid, "parentId": parent, "timestamp": stamp, "message": message},
                              separators=(",", ":"), ensure_ascii=rng.random() < 0.3)
            out.append(line)
            size += len(line.encode("utf-8")) + 1
            parent = eid
            n += 1
        return out


@dataclass(frozen=True)
class Shape:
    name: str
    command: str  # "migrate" | "plan"
    files: int
    file_bytes: int
    big_bytes: int = 0  # one extra transcript of this size

    @property
    def describe(self) -> str:
        parts = []
        if self.files:
            parts.append(f"{self.files:,} x {self._size(self.file_bytes)}")
        if self.big_bytes:
            parts.append(f"1 x {self._size(self.big_bytes)}")
        return " + ".join(parts)

    @staticmethod
    def _size(n: int) -> str:
        return f"{n // MB} MB" if n >= MB else f"{n // 1024} KB"


SHAPES = {
    "mixed-56m": Shape("mixed-56m", "migrate", 100, 512 * 1024, 6 * MB),
    "small-20k": Shape("small-20k", "migrate", 20_000, 5 * 1024),
    "plan-20k": Shape("plan-20k", "plan", 20_000, 5 * 1024),
    "mixed-200m": Shape("mixed-200m", "migrate", 360, 512 * 1024, 20 * MB),
    "mixed-2g": Shape("mixed-2g", "migrate", 3_600, 512 * 1024, 200 * MB),
    "small-100k": Shape("small-100k", "migrate", 100_000, 5 * 1024),
    "one-500m": Shape("one-500m", "migrate", 0, 0, 500 * MB),
}
QUICK = ("mixed-56m", "small-20k", "plan-20k")
DEFAULT = QUICK + ("mixed-200m",)
BIG = DEFAULT + ("mixed-2g", "small-100k", "one-500m")


def build_shape(shape: Shape, workdir: Path) -> Path:
    """The shape's state dir (generated once; ``.complete`` marks a finished one)."""
    data_name = shape.name.replace("plan-", "small-")  # plan runs on the migrate shape of the same files
    base = workdir / f"{data_name}-v{SHAPE_VERSION}"
    state = base / ".openclaw"
    if (base / ".complete").exists():
        return state
    if base.exists():
        shutil.rmtree(base)
    writer = TranscriptWriter(seed=len(shape.name))
    agents = ("main", "work")
    index: dict[str, dict[str, Any]] = {a: {} for a in agents}
    for agent in agents:
        (state / "agents" / agent / "sessions").mkdir(parents=True)
    jobs: list[tuple[str, str, int]] = []
    if shape.big_bytes:
        jobs.append(("main", "big-000000", shape.big_bytes))
    jobs += [(agents[n % 2], f"s-{n:06d}", shape.file_bytes) for n in range(shape.files)]
    cache: dict[int, list[str]] = {}
    for number, (agent, sid, size) in enumerate(jobs):
        if size <= 64 * 1024:  # small files: a few templates with their own ids (generation stays fast)
            template = cache.setdefault(number % 16, writer.lines("TEMPLATE", size))
            lines = [template[0].replace("TEMPLATE", sid), *template[1:]]
        else:
            lines = writer.lines(sid, size)
        path = state / "agents" / agent / "sessions" / f"{sid}.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            for line in lines:
                out.write(line + "\n")
        index[agent][f"agent:{agent}:s{number}"] = {"sessionId": sid, "updatedAt": 1767225600000 + number, "chatType": "direct",
                                                     "sessionFile": f"/home/u/.openclaw/agents/{agent}/sessions/{sid}.jsonl"}
    for agent, entries in index.items():
        (state / "agents" / agent / "sessions" / "sessions.json").write_text(json.dumps(entries, indent=2), encoding="utf-8")
    (base / ".complete").write_text("ok")
    return state


def generated_shape(shape: Shape, workdir: Path) -> Path:
    """``build_shape`` in a child process, so that this process stays small.

    On Linux a child's ``ru_maxrss`` starts at the peak RSS of the process it was forked from
    (``exec`` keeps the old memory's high-water mark): generating a 500 MB transcript here would
    make every child of this run report over 1 GB.
    """
    subprocess.run([sys.executable, str(Path(__file__).resolve()), "--generate", shape.name, "--workdir", str(workdir)], check=True)
    return build_shape(shape, workdir)  # complete now: only the path


def input_bytes(state: Path) -> int:
    return sum(p.stat().st_size for p in state.rglob("*.jsonl"))


# --------------------------------------------------------------------------- running


@dataclass
class Measure:
    cpu: float
    wall: float
    rss_mb: float
    code: int


def run_child(cmd: list[str], env: dict[str, str] | None = None) -> Measure:
    start = time.perf_counter()
    # From /: ``python -m statekit`` puts the current directory first on sys.path, so run from a checkout every
    # build would import that checkout's ``statekit/`` (the --before build measuring the other's code).
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd="/")
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        sys.stderr.write(err.decode("utf-8", "replace")[-2000:])
    return Measure(usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024, proc.returncode)


def child_env(workdir: Path) -> dict[str, str]:
    """The children's environment: bytecode cached (as an installed statekit has it) under the workdir, never in a source tree."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    return env


def warm_up(pythons: list[str], workdir: Path) -> None:
    """Run each build once on a one-transcript install so that no measured run compiles bytecode."""
    tiny = workdir / "warm-up" / ".openclaw"
    for python in pythons:
        if tiny.parent.exists():
            shutil.rmtree(tiny.parent)
        sessions = tiny / "agents" / "main" / "sessions"
        sessions.mkdir(parents=True)
        (sessions / "s-1.jsonl").write_text(TranscriptWriter(1).lines("s-1", 2000)[0] + "\n", encoding="utf-8")
        (sessions / "sessions.json").write_text(json.dumps({"agent:main:main": {"sessionId": "s-1", "updatedAt": 1}}), encoding="utf-8")
        for command in ("plan", "migrate"):
            run_child(statekit_cmd(Shape("warm", command, 1, 0), tiny, python), child_env(workdir))
    shutil.rmtree(tiny.parent, ignore_errors=True)


def fresh_copy(state: Path, scratch: Path) -> Path:
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    # A real copy, not hard links: statekit makes each retired file 0600 (a chmod of the inode), so a hard-linked copy
    # changed the shape itself after its first run (every later run then saw 0600 sources, and their undo facts
    # recorded no modes). Reflinks where the filesystem has them.
    subprocess.run(["cp", "-a", "--reflink=auto", str(state), str(scratch / ".openclaw")], check=True)
    return scratch / ".openclaw"


def statekit_cmd(shape: Shape, state: Path, python: str) -> list[str]:
    if shape.command == "plan":
        return [python, "-m", "statekit", "plan", "--state-dir", str(state), "--quiet"]
    return [python, "-m", "statekit", "migrate", "--state-dir", str(state), "--yes", "--no-backup", "--quiet"]


def floor_cmd(shape: Shape, state: Path, scratch: Path, schema: bool = False) -> list[str]:
    mode = "parse" if shape.command == "plan" else "schema" if schema else "insert"
    return [sys.executable, str(HERE / "floor.py"), mode, str(state), str(scratch / "floor.sqlite")]


def _spread(values: list[float]) -> list[float]:
    return [round(statistics.median(values), 2), round(min(values), 2), round(max(values), 2)] if values else []


def bench(shape: Shape, workdir: Path, pairs: int, python: str, before: str | None = None) -> dict[str, Any]:
    state = generated_shape(shape, workdir)
    size = input_bytes(state)
    ratios_cpu: list[float] = []
    ratios_wall: list[float] = []
    before_cpu: list[float] = []
    before_wall: list[float] = []
    ours: list[Measure] = []
    floors: list[Measure] = []
    befores: list[Measure] = []
    schema_floors: list[Measure] = []
    ratios_schema: list[float] = []
    who_all: tuple[str, ...] = ("statekit", "floor") + (("schema",) if shape.command == "migrate" else ()) + (("before",) if before else ())
    for pair in range(pairs):
        shift = pair % len(who_all)
        order = who_all[shift:] + who_all[:shift]
        got: dict[str, Measure] = {}
        for who in order:
            scratch = workdir / "scratch"
            copy = fresh_copy(state, scratch)
            if who in ("floor", "schema"):
                cmd = floor_cmd(shape, copy, scratch, schema=who == "schema")
            else:
                cmd = statekit_cmd(shape, copy, python if who == "statekit" else str(before))
            got[who] = run_child(cmd, child_env(workdir))
            if who in ("floor", "schema") and got[who].code != 0:
                raise SystemExit(f"benchmarks: the {who} floor failed on {shape.name} (exit {got[who].code}): its figures would be wrong")
        ours.append(got["statekit"])
        floors.append(got["floor"])
        ratios_cpu.append(got["statekit"].cpu / got["floor"].cpu)
        ratios_wall.append(got["statekit"].wall / got["floor"].wall)
        if "schema" in got:
            schema_floors.append(got["schema"])
            ratios_schema.append(got["statekit"].cpu / got["schema"].cpu)
        if before:
            befores.append(got["before"])
            before_cpu.append(got["before"].cpu / got["floor"].cpu)
            before_wall.append(got["before"].wall / got["floor"].wall)
        print(f"  {shape.name} pair {pair + 1}: " + ", ".join(f"{w} {got[w].cpu:.1f} s CPU {got[w].wall:.1f} s wall {got[w].rss_mb:.0f} MB"
                                                          for w in who_all), file=sys.stderr, flush=True)
    shutil.rmtree(workdir / "scratch", ignore_errors=True)
    return {
        "before_cpu_ratio": _spread(before_cpu),
        "before_wall_ratio": _spread(before_wall),
        "before_cpu_s": round(statistics.median(m.cpu for m in befores), 2) if befores else None,
        "before_rss_mb": round(max(m.rss_mb for m in befores), 1) if befores else None,
        "shape": shape.name,
        "command": shape.command,
        "input": shape.describe,
        "mb": round(size / MB, 1),
        "cpu_ratio": [round(statistics.median(ratios_cpu), 2), round(min(ratios_cpu), 2), round(max(ratios_cpu), 2)],
        "wall_ratio": [round(statistics.median(ratios_wall), 2), round(min(ratios_wall), 2), round(max(ratios_wall), 2)],
        "statekit_cpu_s": round(statistics.median(m.cpu for m in ours), 2),
        "floor_cpu_s": round(statistics.median(m.cpu for m in floors), 2),
        "schema_cpu_ratio": _spread(ratios_schema),
        "schema_floor_cpu_s": round(statistics.median(m.cpu for m in schema_floors), 2) if schema_floors else None,
        "statekit_mb_s": round(size / MB / statistics.median(m.wall for m in ours), 1),
        "statekit_rss_mb": round(max(m.rss_mb for m in ours), 1),
        "floor_rss_mb": round(max(m.rss_mb for m in floors), 1),
        "exit_codes": sorted({m.code for m in ours}),
    }


def machine() -> dict[str, Any]:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else platform.processor()
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(), "load": os.getloadavg()}


def table(results: list[dict[str, Any]]) -> str:
    head: tuple[str, ...] = ("shape", "command", "input", "MB", "CPU ratio median (min-max)", "wall ratio median (min-max)", "statekit CPU s", "floor CPU s",
            "CPU ratio to the schema floor", "schema floor CPU s", "MB/s", "peak RSS MB (statekit / floor)")
    with_before = any(r["before_cpu_ratio"] for r in results)
    if with_before:
        head = head[:4] + ("before: CPU ratio median (min-max)", "before: CPU s", "before: peak RSS MB") + head[4:]
    rows = [head, tuple("---" for _ in head)]
    for r in results:
        c, w = r["cpu_ratio"], r["wall_ratio"]
        row: tuple[str, ...] = (r["shape"], r["command"], r["input"], str(r["mb"]))
        failed = sorted(set(r["exit_codes"]) - {0, 3})
        if failed:  # the figures of a run that did not do the work mean nothing
            rows.append(row + (f"statekit FAILED (exit {', '.join(map(str, failed))}): see its error above",) + ("",) * (len(head) - 5))
            continue
        if with_before:
            b = r["before_cpu_ratio"]
            row += (f"{b[0]:.2f}x ({b[1]:.2f}-{b[2]:.2f})" if b else "-", str(r["before_cpu_s"]), str(r["before_rss_mb"]))
        k = r["schema_cpu_ratio"]
        rows.append(row + (f"{c[0]:.2f}x ({c[1]:.2f}-{c[2]:.2f})", f"{w[0]:.2f}x ({w[1]:.2f}-{w[2]:.2f})",
                           str(r["statekit_cpu_s"]), str(r["floor_cpu_s"]), f"{k[0]:.2f}x ({k[1]:.2f}-{k[2]:.2f})" if k else "-",
                           str(r["schema_floor_cpu_s"] or "-"), str(r["statekit_mb_s"]), f"{r['statekit_rss_mb']} / {r['floor_rss_mb']}"))
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="only " + ", ".join(QUICK))
    size.add_argument("--big", action="store_true", help="also the 2 GB, 100,000-file and 500 MB shapes (slow; several GB of disk)")
    size.add_argument("--shapes", help="comma-separated shape names: " + ", ".join(SHAPES))
    parser.add_argument("--pairs", type=int, default=3, help="interleaved statekit/floor pairs per shape (default 3)")
    parser.add_argument("--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "statekit-bench")
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs statekit (a venv's python)")
    parser.add_argument("--before", help="another build's interpreter (e.g. main's venv python), run in the same pairs")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    parser.add_argument("--generate", metavar="SHAPE", help=argparse.SUPPRESS)  # generated_shape's child
    args = parser.parse_args()
    args.workdir = args.workdir.resolve()  # the children run from /
    if args.generate:
        build_shape(SHAPES[args.generate], args.workdir)
        return 0
    names = args.shapes.split(",") if args.shapes else QUICK if args.quick else BIG if args.big else DEFAULT
    unknown = [n for n in names if n not in SHAPES]
    if unknown:
        parser.error(f"unknown shape(s): {', '.join(unknown)}")
    args.workdir.mkdir(parents=True, exist_ok=True)
    warm_up([args.python] + ([args.before] if args.before else []), args.workdir)
    before = machine()
    results = []
    for name in names:
        result = bench(SHAPES[name], args.workdir, args.pairs, args.python, args.before)
        results.append(result)
        print(f"{name}: cpu {result['cpu_ratio']} wall {result['wall_ratio']} rss {result['statekit_rss_mb']} MB", file=sys.stderr, flush=True)
    after = machine()
    print(f"machine: {before['nproc']} x {before['cpu']}, Python {before['python']}; load average {before['load'][0]:.2f} before, {after['load'][0]:.2f} after")
    print(table(results))
    if args.json:
        print(json.dumps({"machine": before, "load_after": after["load"], "results": results}, indent=1))
    return 0 if all(set(r["exit_codes"]) <= {0, 3} for r in results) else 1  # (the before build's codes are its own)


if __name__ == "__main__":
    raise SystemExit(main())
