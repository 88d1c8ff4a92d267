"""Rendering for the CLI: one JSON document with --json, human text otherwise, nothing extra with --quiet.

Errors always go to stderr as one line. Progress is shown only on a TTY.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO


@dataclass
class Output:
    json_mode: bool = False
    quiet: bool = False
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    stderr: TextIO = field(default_factory=lambda: sys.stderr)

    @property
    def interactive(self) -> bool:
        return not self.json_mode and not self.quiet and _isatty(self.stderr)

    def result(self, data: Any, human: Callable[[Any], str] | None = None) -> None:
        """The command's result: JSON on stdout with --json, else human text unless --quiet."""
        if self.json_mode:
            self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
        elif not self.quiet and human is not None:
            text = human(data)
            if text:
                self.stdout.write(text if text.endswith("\n") else text + "\n")

    def note(self, line: str) -> None:
        """An informational line on stderr (repairs, skipped duplicates); hidden by --quiet and --json."""
        if not self.json_mode and not self.quiet:
            self.stdout.flush()
            self.stderr.write(f"statekit: note: {line}\n")

    def info(self, line: str) -> None:
        if not self.json_mode and not self.quiet:
            self.stdout.write(line + "\n")

    def warn(self, line: str) -> None:
        """A warning line on stderr (shown even with --quiet: cron must see what was left undone)."""
        self.stdout.flush()
        self.stderr.write(f"statekit: warning: {line}\n")

    def error(self, line: str) -> None:
        self.stdout.flush()
        self.stderr.write(f"statekit: error: {line}\n")

    @contextmanager
    def progress(self, label: str, total: int | None) -> Iterator[Callable[[int], None]]:
        """A rich progress bar on a TTY; a no-op elsewhere (cron, --json, --quiet)."""
        if not self.interactive:
            yield lambda _n: None
            return
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        with Progress(
            TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), transient=True
        ) as bar:
            task = bar.add_task(label, total=total)
            yield lambda n: bar.advance(task, n)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain aligned text table (no colour, safe for logs and pipes)."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for index, row in enumerate(cells):
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def human_size(size: int | None) -> str:
    if size is None:
        return "-"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
