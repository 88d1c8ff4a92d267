#!/usr/bin/env python3
"""Start-up CPU of ``statekit --help`` and ``statekit plan`` of an empty state dir, against two floors.

Floors, in the same run and the same rounds:

* ``python -c pass``: the interpreter alone;
* a bare typer app (one command, ``rich_markup_mode=None``, no completion, as statekit builds its own):
  ``--help`` of it is what any typer CLI pays before doing anything.

Each round runs every row once, the order rotating between rounds (machine load hits all alike). CPU is
user + sys of the child (``os.wait4``). Children run with their bytecode cached under ``--workdir/pycache``
(``PYTHONPYCACHEPREFIX``; every command runs once first), as an installed statekit has it. ``--before
PYTHON`` also times another build (e.g. ``/work/main/.venv/bin/python``: main's code) in the same rounds.

    .venv/bin/python benchmarks/bench_start.py [--runs 10] [--before /work/main/.venv/bin/python] [--json FILE]

Prints min and median CPU per row (min of N is the figure: start-up has no useful variance to average).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BARE_TYPER = """
import typer
app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)
@app.command()
def hello(name: str = "x") -> None:
    "Say hello."
app()
"""


@dataclass(frozen=True)
class Row:
    name: str
    argv: tuple[str, ...]


def rows(python: str, label: str, empty: Path) -> list[Row]:
    return [
        Row(f"{label} statekit --help", (python, "-m", "statekit", "--help")),
        Row(f"{label} statekit plan (empty)", (python, "-m", "statekit", "plan", "--state-dir", str(empty), "--quiet")),
    ]


def floors(python: str) -> list[Row]:
    return [Row("floor python -c pass", (python, "-c", "pass")), Row("floor bare typer --help", (python, "-c", BARE_TYPER, "--help"))]


def cpu_of(argv: tuple[str, ...], env: dict[str, str], cwd: Path) -> float:
    """User + sys CPU seconds of one run (exit code checked: --help and plan both exit 0).

    ``cwd`` is outside every source tree: ``python -m statekit`` would import ``./statekit`` first.
    """
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}:\n{err.decode('utf-8', 'replace')[-2000:]}")
    return usage.ru_utime + usage.ru_stime


def measure(all_rows: list[Row], runs: int, env: dict[str, str], cwd: Path) -> dict[str, list[float]]:
    for row in all_rows:  # warm-up: write the bytecode cache
        cpu_of(row.argv, env, cwd)
    seen: dict[str, list[float]] = {row.name: [] for row in all_rows}
    for round_no in range(runs):
        shift = round_no % len(all_rows)
        for row in all_rows[shift:] + all_rows[:shift]:
            seen[row.name].append(cpu_of(row.argv, env, cwd))
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--before", help="another interpreter (another build of statekit) timed in the same rounds")
    parser.add_argument("--workdir", type=Path, help="where the bytecode cache and the empty state dir go (default: a temp dir)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="statekit-bench-start-"))
    empty = workdir / "empty-state"
    empty.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "OPENCLAW_STATE_DIR")}
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")

    all_rows = floors(sys.executable)
    if args.before:
        all_rows += rows(args.before, "before", empty)
    all_rows += rows(sys.executable, "after" if args.before else "this", empty)
    seen = measure(all_rows, args.runs, env, workdir)

    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.runs} runs each")
    floor = min(seen["floor bare typer --help"])
    print(f"{'row':34} {'min s':>7} {'median s':>9} {'min/bare typer':>15}")
    for name, values in seen.items():
        print(f"{name:34} {min(values):7.3f} {statistics.median(values):9.3f} {min(values) / floor:15.2f}")
    if args.json:
        args.json.write_text(json.dumps({"load": os.getloadavg(), "runs": args.runs, "cpu_s": seen}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
