#!/usr/bin/env python3
"""Where a migration's CPU goes, per phase and per source file: the budget issue 16's goals leave, made visible.

    python benchmarks/phases.py STATE_DIR [--rounds N]

Each round copies STATE_DIR to a scratch directory and runs ``statekit migrate --yes --no-backup
--quiet`` on the copy in this process, with the apply loop's phases wrapped by CPU timers
(``time.process_time``). Each phase is counted *self*: a wrapped phase nested in another (the event
rows' SQL inside the transcript write, the transcript write inside the import) is taken out of its
caller's figure. Beside it, in the same round, the floor (``floor.py insert``) runs as a child.
The table gives each phase's median CPU, its share of the floor's CPU and its cost per source
file, so a goal such as "<= 1.5x the floor" reads as a per-file budget.

Run from outside the checkout under test with that checkout's interpreter (its ``statekit`` is the
one imported), bytecode cached (``PYTHONPYCACHEPREFIX``) as an installed statekit has it. The timers
add ~1 us per wrapped call: a few per file.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import io
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from measure import child_cpu, children_cpu, fresh_copies

HERE = Path(__file__).resolve().parent


class PhaseClock:
    """Self CPU seconds per phase label, nested phases taken out of the phase that called them."""

    def __init__(self) -> None:
        self.seconds: collections.defaultdict[str, float] = collections.defaultdict(float)
        self._inner: list[float] = []

    def wrap(self, owner: Any, name: str, label: str) -> Callable[[], None]:
        """Time ``owner.name`` as ``label``; returns the undo."""
        original = getattr(owner, name)
        inner, seconds = self._inner, self.seconds

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            inner.append(0.0)
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.process_time() - started
                seconds[label] += spent - inner.pop()
                if inner:
                    inner[-1] += spent

        setattr(owner, name, timed)
        return lambda: setattr(owner, name, original)


def _phases() -> list[tuple[Any, str, str]]:
    """(owner, attribute, label) of every timed phase: the apply loop's steps, as ``migrate.apply`` calls them."""
    from statekit.legacy_readers import session_index, transcripts
    from statekit.migrate import apply

    return [
        (apply, "build_plan", "plan (discovery, each file's header)"),
        (apply.Migration, "run", "the run's own loop"),
        (apply.Migration, "_import", "a source alone: open, context, receipt, COMMIT"),
        (apply.Migration, "_import_batched", "a batched source: open, savepoint, context"),
        (apply.Migration, "_write_opened", "hash check, receipt row, report"),
        (transcripts.TranscriptReader, "write", "transcript: read, hash, parse, build rows"),
        (transcripts.TranscriptPass, "__init__", "transcript: open the pass, the header"),
        (transcripts, "ensure_session_row", "transcript: its sessions row (look-up or insert)"),
        (transcripts, "session_events_merge", "transcript: delete what the session owned"),
        (transcripts, "write_event_rows", "transcript: event and identity rows (SQL)"),
        (session_index.SessionIndexReader, "write", "session index: parse, check, rows"),
        (apply.Migration, "_commit_batch", "commit: receipts, COMMIT of both databases"),
        (apply.Migration, "_validate", "validation: the row counts after commit"),
        (apply.Migration, "_retire", "retirement: move, re-hash, fsync, receipt marked"),
    ]


@contextlib.contextmanager
def timed_phases(clock: PhaseClock) -> Iterator[None]:
    undo = [clock.wrap(owner, name, label) for owner, name, label in _phases()]
    try:
        yield
    finally:
        for step in reversed(undo):
            step()


def migrate_in_process(state_dir: Path) -> tuple[dict[str, float], float, float]:
    """(self CPU per phase, whole CPU of the command, CPU of its parse process) of one ``statekit migrate``."""
    from statekit.cli import main

    clock = PhaseClock()
    children = children_cpu()
    started = time.process_time()
    with timed_phases(clock), contextlib.redirect_stdout(io.StringIO()):
        code = main(["migrate", "--state-dir", str(state_dir), "--yes", "--no-backup", "--quiet"])
    if code not in (0, None):
        raise SystemExit(f"statekit migrate exited {code} on {state_dir}")
    return dict(clock.seconds), time.process_time() - started, children_cpu() - children


def source_files(state_dir: Path) -> int:
    return sum(len(files) for _root, _dirs, files in os.walk(state_dir))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("state_dir", type=Path, help="an install to migrate (copied each round, never touched)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    files = source_files(args.state_dir)
    phases: dict[str, list[float]] = collections.defaultdict(list)
    whole: list[float] = []
    parse_process: list[float] = []
    floors: list[float] = []
    for round_, copy, scratch in fresh_copies(args.state_dir, args.rounds):
        floors.append(child_cpu([sys.executable, str(HERE / "floor.py"), "insert", str(args.state_dir), str(scratch / f"floor-{round_}.sqlite")]))
        seconds, total, child = migrate_in_process(copy)
        whole.append(total)
        parse_process.append(child)
        for label in {label for _owner, _name, label in _phases()}:
            phases[label].append(seconds.get(label, 0.0))
    floor = statistics.median(floors)
    print(f"{files:,} files in the install; floor (floor.py insert) {floor:.2f} s CPU; median of {args.rounds} rounds; load {os.getloadavg()[0]:.2f}")
    print(f"{'phase (self CPU)':<58} {'CPU s':>7} {'x floor':>8} {'us/file':>8}")
    rows = sorted(((statistics.median(values), label) for label, values in phases.items()), reverse=True)
    rows.append((statistics.median(whole), "the whole command in this process (no interpreter start)"))
    rows.append((statistics.median(parse_process), "its parse process (not in the line above)"))
    for spent, label in rows:
        print(f"{label:<58} {spent:7.3f} {spent / floor:7.2f}x {spent / files * 1e6:8.0f}")
    print(f"{'the floor':<58} {floor:7.3f} {1:7.2f}x {floor / files * 1e6:8.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
