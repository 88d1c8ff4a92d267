"""Before any command: an in-place restore killed half-way on that state dir is finished or undone.

The root command group (:class:`PendingRestoreGroup`) runs :func:`settle_pending_restore` first. It
loads ``statekit.backup.journal`` alone (not the archive code: ``statekit.backup`` resolves its names
lazily), so ``--help`` and small commands stay fast. (Moved here from ``backup_cmd.py``, unchanged otherwise.)
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from statekit.errors import BusyError, ExitCode, StatekitError


GROUPS = ("backup", "sessions")
# commands that promise to write nothing: they only say that a restore is pending
READ_ONLY = {("inspect",), ("plan",), ("history",), ("sessions", "list"), ("backup", "verify"), ("backup", "list")}
SELF_SETTLING = {("backup", "restore")}  # settles its own destination (and --resume / --abort)


def _command_path(args: list[str]) -> tuple[str, ...]:
    if not args or args[0].startswith("-"):
        return ()
    if args[0] in GROUPS and len(args) > 1 and not args[1].startswith("-"):
        return (args[0], args[1])
    return (args[0],)


def _option_value(args: list[str], name: str) -> str | None:
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg == name and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return None


def settle_pending_restore(args: list[str]) -> None:
    """Before any command: an in-place restore killed half-way on that state dir is finished or undone.

    Commands that write first roll it forward (interrupted while swapping) or back (while staging), under
    the state-dir lock; read-only ones (``inspect``, ``plan``, ``history``, ``sessions list``, ``backup
    verify|list``, any ``--dry-run``) only say it is pending. ``backup restore`` handles its own destination.
    """
    path = _command_path(args)
    if not path or "--help" in args or "-h" in args or path in SELF_SETTLING:
        return
    from statekit.backup.journal_file import journal_path  # the journal code loads only when there is one
    from statekit.layout import resolve_state_dir

    try:
        state = resolve_state_dir(_option_value(args, "--state-dir")).path
    except (OSError, ValueError):
        return
    if not journal_path(state).exists():
        return
    from statekit.backup.journal import JournalError, describe_pending, settle_locked
    from statekit.output import Output

    out = Output(json_mode="--json" in args, quiet="--quiet" in args or "-q" in args)
    if path in READ_ONLY or "--dry-run" in args:
        line = describe_pending(state) if path != ("inspect",) else None  # inspect reports it as a finding
        if line:
            out.warn(line)
        return
    try:
        recovery = settle_locked(state)
    except BusyError as exc:
        out.failure(f"an in-place restore is running on {state} ({exc}); wait for it to finish", int(ExitCode.BUSY))
        raise typer.Exit(int(ExitCode.BUSY)) from None
    except (JournalError, StatekitError) as exc:
        out.failure(f"{exc}; nothing else was done", int(getattr(exc, "exit_code", ExitCode.FATAL)))
        raise typer.Exit(int(getattr(exc, "exit_code", ExitCode.FATAL))) from None
    except OSError as exc:
        out.failure(f"finishing the interrupted restore of {state} failed at {exc.filename or state}: {exc.strerror or exc}; "
                    f"run `statekit backup restore --resume` or `--abort` once the cause is fixed", int(ExitCode.FATAL))
        raise typer.Exit(int(ExitCode.FATAL)) from None
    if recovery is not None:
        out.warn(recovery.summary())


class PendingRestoreGroup(TyperGroup):
    """The root command group: settles an interrupted in-place restore (see above) before the command runs."""

    def invoke(self, ctx: Any) -> Any:
        args = [*getattr(ctx, "_protected_args", []), *ctx.args]
        settle_pending_restore(list(args))
        return super().invoke(ctx)
