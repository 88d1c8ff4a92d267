"""``statekit history``: migration, recover and backup runs with their outcomes (read-only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from statekit.values import ms_to_display
from statekit.cli.common import JsonOpt, QuietOpt, StateDirOpt, existing_state_dir, output, run_command
from statekit.errors import ExitCode, describe_exit_codes
from statekit.output import table

if TYPE_CHECKING:
    from statekit.maintenance.history import History

# The codes this command returns, and what each means here (None: the summary in statekit.errors).
EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "shown (also when there is no history yet)",
    ExitCode.FATAL: None,
    ExitCode.USAGE: "usage error (a bad option, or the state dir does not exist)",
    ExitCode.VERIFY_FAILED: "the global database is unreadable",
}

HELP = f"""Show the migration runs (migrate, recover) and backup runs recorded in state/openclaw.sqlite. Read-only.

Example:

\b
    statekit history
    statekit history --limit 5 --json

{describe_exit_codes(EXIT_CODES)}
"""



def render(history: History) -> str:
    if not history.present:
        return f"No history: {history.database} does not exist yet."
    lines = ["Migration runs:"]
    if history.migration_runs:
        rows = [(ms_to_display(r["started_at"]), r["kind"], r["status"], r["id"],
                 ", ".join(f"{n} {s}" for s, n in r["counts"].items()) or "-", r["warnings"]) for r in history.migration_runs]
        lines += ["  " + line for line in table(("STARTED", "KIND", "STATUS", "RUN", "SOURCES", "WARNINGS"), rows, whole=("STARTED", "RUN")).splitlines()]
    else:
        lines.append("  none")
    lines += ["", "Backup runs:"]
    if history.backup_runs:
        backup_rows = [(ms_to_display(r["created_at"]), r["status"], r["id"], r["archive_path"]) for r in history.backup_runs]
        lines += ["  " + line for line in table(("CREATED", "STATUS", "RUN", "ARCHIVE"), backup_rows, whole=("CREATED", "RUN")).splitlines()]
    else:
        lines.append("  none")
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("history", help=HELP)
    def history_command(
        limit: Annotated[int | None, typer.Option("--limit", min=1, help="Show at most N runs of each kind (newest first).")] = None,
        state_dir: StateDirOpt = None,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = output(json_out, quiet)

        def body() -> ExitCode:
            from statekit.maintenance.history import read_history

            history = read_history(existing_state_dir(state_dir).path, limit)
            out.result(history.to_json(), lambda _d: render(history))
            return ExitCode.OK

        run_command(out, body)
