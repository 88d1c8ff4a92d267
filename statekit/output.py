"""Rendering for the CLI: one JSON document with --json, human text otherwise, nothing extra with --quiet.

* The result goes to stdout: one JSON document with ``--json`` (also on failure:
  ``{"error": ..., "exit_code": ...}``), human text otherwise, nothing with ``--quiet``.
* Errors go to stderr as one line; warnings too, and they are shown under ``--quiet``
  (cron must see what was left undone) and ``--json`` (the document carries them as well).
* Progress (rich) is shown only on a TTY, never with ``--json``, ``--quiet`` or ``--no-progress``.
* A closed stdout (``statekit plan | head``) ends the output quietly: the rest is dropped.

rich is imported only when a table or a bar is drawn (a fast ``--help``).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TextIO

from statekit.progress import ProgressFn, Unit, null_progress

if TYPE_CHECKING:
    from rich.progress import Progress


@dataclass
class Output:
    json_mode: bool = False
    quiet: bool = False
    show_progress: bool = True
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)
    emitted: bool = False  # a JSON document (or the human result) was written

    @property
    def interactive(self) -> bool:
        return not self.json_mode and not self.quiet and _isatty(self.stderr)

    def _write(self, text: str) -> None:
        try:
            self.stdout.write(text)
            self.stdout.flush()
        except BrokenPipeError:
            self.stdout = silence_stdout()

    def result(self, data: Any, human: Callable[[Any], str] | None = None) -> None:
        """The command's result: JSON on stdout with --json, else human text unless --quiet."""
        if self.json_mode:
            if self.emitted:
                return  # exactly one document
            self.emitted = True
            self._write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
        elif not self.quiet and human is not None:
            text = human(data)
            self.emitted = True
            if text:
                self._write(text if text.endswith("\n") else text + "\n")

    def failure(self, message: str, exit_code: int) -> None:
        """An expected failure: one stderr line; with --json also the failure document on stdout."""
        self.error(message)
        if self.json_mode and not self.emitted:
            self.emitted = True
            self._write(json.dumps({"ok": False, "error": message, "exit_code": int(exit_code)}, indent=2, ensure_ascii=False) + "\n")

    def note(self, line: str) -> None:
        """An informational line on stderr (repairs, skipped duplicates); hidden by --quiet and --json."""
        if not self.json_mode and not self.quiet:
            self._flush_stdout()
            self.stderr.write(f"statekit: note: {line}\n")

    def info(self, line: str) -> None:
        if not self.json_mode and not self.quiet:
            self._write(line + "\n")

    def warn(self, line: str) -> None:
        """A warning line on stderr (shown even with --quiet and --json: cron must see what was left undone)."""
        self._flush_stdout()
        self.stderr.write(f"statekit: warning: {line}\n")

    def error(self, line: str) -> None:
        self._flush_stdout()
        self.stderr.write(f"statekit: error: {line}\n")

    def _flush_stdout(self) -> None:
        try:
            self.stdout.flush()
        except BrokenPipeError:
            self.stdout = silence_stdout()

    @contextmanager
    def progress(self, label: str = "", total: int | None = None) -> Iterator[ProgressFn]:
        """A progress sink: a rich bar on a TTY (phase, done of total, rate, ETA); a no-op elsewhere.

        The sink is a :class:`statekit.progress.PhasedProgress`: the library announces each phase
        (``start_phase``) and reports units done.
        """
        if not (self.interactive and self.show_progress):
            yield null_progress
            return
        bar = RichProgress(self.stderr)
        try:
            if label:
                bar.phase(label, total)
            yield bar
        finally:
            bar.close()


class RichProgress:
    """The TTY bar: one line per phase, ``phase ━━━━ 120.0/600.0 MB 80.1 MB/s ETA 0:00:06`` (SI units, as rich labels them)."""

    def __init__(self, stream: TextIO) -> None:
        from rich.console import Console

        self._console = Console(file=stream, stderr=True)
        self._bar: Progress | None = None
        self._task: Any = None
        self._unit: Unit = "bytes"

    def _progress(self, unit: Unit) -> Progress:
        from rich.progress import (
            BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn,
            TimeRemainingColumn, TransferSpeedColumn,
        )

        amount: Any = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
        rate: Any = TransferSpeedColumn() if unit == "bytes" else TextColumn(unit)
        return Progress(
            TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(), amount, rate,
            TextColumn("ETA"), TimeRemainingColumn(), console=self._console, transient=True,
        )

    def phase(self, name: str, total: int | None, unit: Unit = "bytes") -> None:
        if self._bar is not None and unit != self._unit:
            self._bar.stop()
            self._bar = None
        if self._bar is None:
            self._unit = unit
            self._bar = self._progress(unit)
            self._bar.start()
        if self._task is not None:
            self._bar.update(self._task, visible=False)
        self._task = self._bar.add_task(name, total=total)

    def __call__(self, done: int) -> None:
        if self._bar is None:
            self.phase("working", None)
        assert self._bar is not None
        self._bar.advance(self._task, done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def silence_stdout() -> TextIO:
    """stdout was closed by the reader (``| head``): point fd 1 and ``sys.stdout`` at /dev/null, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)
    sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    return sys.stdout


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def terminal_width(default: int = 100) -> int:
    """The width tables are fitted to: ``COLUMNS``, else the terminal's, else ``default`` (pipes, cron)."""
    return max(40, shutil.get_terminal_size((default, 24)).columns)


def _head_rule() -> Any:
    from rich.box import Box

    return Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], width: int | None = None, whole: Sequence[str] = ()) -> str:
    """An aligned text table (no colour, no box: safe for logs and pipes) that fits ``width`` columns.

    Long cells (paths) wrap inside their column instead of widening the line; the columns named in
    ``whole`` (run ids, times: what an operator copies) are never wrapped.
    """
    from rich.console import Console
    from rich.table import Table

    grid = Table(box=_head_rule(), show_edge=False, pad_edge=False, highlight=False, collapse_padding=True)
    for header in headers:
        grid.add_column(str(header), overflow="fold", no_wrap=header in whole)
    for row in rows:
        grid.add_row(*("" if cell is None else str(cell) for cell in row))
    buffer = io.StringIO()
    console = Console(file=buffer, width=width or terminal_width(), color_system=None, force_terminal=False,
                      highlight=False, markup=False, emoji=False, soft_wrap=False)
    console.print(grid)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines() if line.strip())


def human_size(size: int | None) -> str:
    """A byte count for people, in IEC units (1024-based, labelled KiB, MiB, GiB, TiB)."""
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
