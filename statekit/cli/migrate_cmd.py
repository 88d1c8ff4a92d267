"""``statekit migrate``: the apply algorithm of the migration contract."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statekit.migrate.apply import MigrateOptions, MigrationReport, migrate
from statekit.migrate.plan import build_plan
from statekit.cli.common import JsonOpt, QuietOpt, StateDirOpt, YesOpt, confirm_or_refuse, run_command
from statekit.cli.plan_cmd import render_plan
from statekit.errors import ExitCode, describe_exit_codes
from statekit.layout import resolve_state_dir
from statekit.output import Output, table
from statekit.states import SourceOutcome

# The codes this command returns, and what each means here (None: the summary in statekit.errors).
EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "done",
    ExitCode.FATAL: None,
    ExitCode.USAGE: None,
    ExitCode.WARNINGS: "some sources could not be imported in this run (named)",
    ExitCode.BUSY: None,
    ExitCode.VERIFY_FAILED: "the pre-migration backup failed verification",
}

HELP = f"""Import legacy state files into SQLite (gateway stopped, offline).

Takes the state-dir lock, makes a verified pre-migration backup, imports
each source in one transaction with its receipt, validates the rows, then
moves the source byte-exact to .statekit/migrated/<run_id>/. Safe to rerun:
imported sources are skipped, an interrupted run converges.

Without --yes it shows the plan and asks on a terminal; elsewhere it refuses.

Example:

\b
    statekit migrate --state-dir ~/.openclaw --yes
    statekit migrate --yes --json > migrate-report.json

{describe_exit_codes(EXIT_CODES)} A source that failed before and has not changed
is not retried (it is named as a note; --retry-failed tries it again).
"""


def render_report(report: MigrationReport) -> str:
    if report.status == "nothing-to-do":
        left = sum(1 for o in report.outcomes if o.status == "left-in-place")
        lines = ["Nothing to migrate: every legacy source is already imported."
                 if not left else f"Nothing new to migrate; {left} source(s) that failed before are still left in place (see notes; --retry-failed tries them again)."]
    else:
        lines = [f"Run {report.run_id}: {report.status}"]
        if report.backup_path:
            lines.append(f"Pre-migration backup: {report.backup_path}")
        active = [o for o in report.outcomes if o.status not in (SourceOutcome.DEFERRED, SourceOutcome.RETAIN)]
        if active:
            lines += ["", table(("STATUS", "KIND", "PATH", "RECORDS"), [(o.status, o.kind, o.rel, "-" if o.records is None else o.records) for o in active])]
        lines += [f"Change: {change}" for change in report.changes]
        counts = ", ".join(f"{n} {s}" for s, n in report.counts().items())
        lines += ["", f"Summary: {counts or 'no sources'}."]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("migrate", help=HELP)
    def migrate_command(
        state_dir: StateDirOpt = None,
        yes: YesOpt = False,
        no_backup: Annotated[bool, typer.Option("--no-backup", help="Skip the pre-migration backup (not recommended).")] = False,
        backup_output: Annotated[Path | None, typer.Option("--backup-output", help="Directory for the pre-migration backup archive.")] = None,
        remove_sources: Annotated[bool, typer.Option("--remove-sources", help="Delete imported sources instead of keeping a byte-exact copy.")] = False,
        retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Try again sources whose unchanged file failed in an earlier run.")] = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = Output(json_mode=json_out, quiet=quiet)

        def body() -> ExitCode:
            resolved = resolve_state_dir(state_dir)
            if not yes:
                plan = build_plan(resolved, full=False)  # what it shows: sizes from stat; the run counts and hashes once
                out.info(render_plan(plan))
                confirm_or_refuse(out, "Migrate these sources now?", yes)
            options = MigrateOptions(backup=not no_backup, backup_output=backup_output, remove_sources=remove_sources, retry_failed=retry_failed)
            report = migrate(resolved, options)
            out.result(report.to_json(), lambda _d: render_report(report))
            for notice in report.notices:
                out.note(notice)
            for warning in report.warnings:
                out.warn(warning)
            return report.exit_code

        run_command(out, body)
