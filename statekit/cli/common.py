"""Options shared by every command, and the one place errors become exit codes."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from statekit.errors import ExitCode, StatekitError
from statekit.output import Output

F = TypeVar("F", bound=Callable[..., Any])

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing on success (errors still go to stderr).")]
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


def run_command(out: Output, body: Callable[[], ExitCode | int | None]) -> None:
    """Run a command body; expected failures become one stderr line and their exit code."""
    try:
        code = body()
    except StatekitError as exc:
        if debug_enabled():
            raise
        out.error(str(exc))
        raise typer.Exit(int(exc.exit_code)) from None
    except KeyboardInterrupt:
        out.error("interrupted")
        raise typer.Exit(130) from None
    except OSError as exc:
        if debug_enabled():
            raise
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        out.error(f"{where}{exc.strerror or exc}")
        raise typer.Exit(int(ExitCode.FATAL)) from None
    raise typer.Exit(int(code or 0))


def confirm_or_refuse(out: Output, question: str, yes: bool) -> None:
    """Proceed with --yes; ask on a TTY; refuse (usage error) in a non-interactive run."""
    from statekit.errors import UsageError

    if yes:
        return
    if sys.stdin.isatty() and not out.json_mode:
        if typer.confirm(question, default=False):
            return
        raise UsageError("cancelled; nothing was written")
    raise UsageError("refusing to write without --yes in a non-interactive run (use --dry-run to preview)")
