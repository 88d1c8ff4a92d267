"""Options shared by every command, and the one place errors become exit codes.

Every command body runs through :func:`run_command`: an expected failure becomes one stderr line
(and, with ``--json``, the document ``{"ok": false, "error": ..., "exit_code": ...}`` on stdout);
SIGINT and SIGTERM alike become :class:`~statekit.errors.Interrupted` (exit 130, one line);
a closed stdout ends quietly. Paths given on the command line that must exist are checked with
:func:`existing_dir` / :func:`existing_file` (one line, exit 2).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from statekit.errors import ExitCode, Interrupted, NotFoundError, StatekitError, UsageError
from statekit.output import Output, silence_stdout

if TYPE_CHECKING:
    from statekit.layout import ResolvedStateDir

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout (also on failure).")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success; warnings and errors still go to stderr.")]
NoProgressOpt = Annotated[bool, typer.Option("--no-progress", help="No progress bar (it is shown only on a terminal anyway).")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="List every entry, not a summary.")]
StateDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--state-dir",
        help="OpenClaw state dir (default: $OPENCLAW_STATE_DIR, ~/.openclaw, then ~/.clawdbot, ~/.moldbot, ~/.moltbot).",
        show_default=False,
    ),
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do it without asking.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would happen; write nothing.")]


def debug_enabled() -> bool:
    return os.environ.get("STATEKIT_DEBUG", "") not in ("", "0")


def output(json_out: bool, quiet: bool, no_progress: bool = False) -> Output:
    """The renderer every command builds from its --json/--quiet/--no-progress options."""
    return Output(json_mode=json_out, quiet=quiet, show_progress=not no_progress)


def _raise_interrupted(signum: int, _frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(signum).name)


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread while a command runs.

    So a ``kill`` from systemd or an operator unwinds like Ctrl-C: transactions roll back, the
    run row is closed as interrupted with the signal's name, and the command exits 130.
    """
    installed: list[tuple[int, object]] = []
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            installed.append((signum, signal.signal(signum, _raise_interrupted)))
    except ValueError:  # not the main thread (a library caller): keep Python's defaults
        pass
    try:
        yield
    finally:
        for number, previous in installed:
            signal.signal(number, previous)  # type: ignore[arg-type]


def run_command(out: Output, body: Callable[[], ExitCode | int | None]) -> None:
    """Run a command body; expected failures become one stderr line (and a JSON document) and their exit code."""
    try:
        with interruptible():
            code = body()
    except StatekitError as exc:
        if debug_enabled():
            raise
        out.failure(str(exc), int(exc.exit_code))
        raise typer.Exit(int(exc.exit_code)) from None
    except KeyboardInterrupt as exc:
        reason = str(exc) or "SIGINT"
        out.failure(f"interrupted by {reason}; work in progress was rolled back (a rerun carries on)", int(ExitCode.INTERRUPTED))
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    except BrokenPipeError:
        silence_stdout()
        raise typer.Exit(0) from None
    except OSError as exc:
        if debug_enabled():
            raise
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        out.failure(f"{where}{exc.strerror or exc}", int(ExitCode.FATAL))
        raise typer.Exit(int(ExitCode.FATAL)) from None
    raise typer.Exit(int(code or 0))


def existing_state_dir(flag: Path | None) -> ResolvedStateDir:
    """The state dir (flag, env, default); a missing one is one line and exit 2 for every command."""
    from statekit.layout import resolve_state_dir

    resolved = resolve_state_dir(flag)
    if not resolved.path.exists():
        raise NotFoundError(f"{resolved.path}: state dir not found (set --state-dir or OPENCLAW_STATE_DIR)")
    if not resolved.path.is_dir():
        raise NotFoundError(f"{resolved.path}: not a directory (--state-dir must name a state dir)")
    return resolved


def existing_dir(path: Path, what: str) -> Path:
    if not path.exists():
        raise NotFoundError(f"{path}: {what} not found")
    if not path.is_dir():
        raise NotFoundError(f"{path}: {what} is not a directory")
    return path


def existing_file(path: Path, what: str) -> Path:
    if not path.exists() and not path.is_symlink():
        raise NotFoundError(f"{path}: {what} not found")
    if path.is_dir():
        raise NotFoundError(f"{path}: {what} is a directory, not a file")
    return path


def confirm_or_refuse(out: Output, question: str, yes: bool) -> None:
    """Proceed with --yes; ask on a TTY; refuse (usage error) in a non-interactive run."""
    if yes:
        return
    if sys.stdin.isatty() and not out.json_mode:
        if typer.confirm(question, default=False):
            return
        raise UsageError("cancelled; nothing was written")
    raise UsageError("refusing to write without --yes in a non-interactive run (--dry-run shows what it would do)")
