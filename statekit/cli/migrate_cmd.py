"""``statekit migrate``: the apply algorithm of the migration contract."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from statekit.cli.common import (
    DryRunOpt, JsonOpt, NoProgressOpt, QuietOpt, StateDirOpt, YesOpt, confirm_or_refuse, existing_dir, existing_state_dir, output,
    run_command,
)
from statekit.cli.plan_cmd import render_plan, show_plan
from statekit.errors import ExitCode, describe_exit_codes
from statekit.output import table
from statekit.states import SourceOutcome

if TYPE_CHECKING:
    from statekit.migrate.apply import MigrationReport

# The codes this command returns, and what each means here (None: the summary in statekit.errors).
EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "done",
    ExitCode.FATAL: None,
    ExitCode.USAGE: None,
    ExitCode.WARNINGS: "some sources could not be imported in this run (named)",
    ExitCode.BUSY: None,
    ExitCode.VERIFY_FAILED: "the pre-migration backup failed verification",
    ExitCode.INTERRUPTED: "interrupted by SIGINT or SIGTERM (the run is recorded as interrupted; a rerun carries on)",
}

HELP = f"""Import legacy state files into SQLite (gateway stopped, offline).

Takes the state-dir lock, makes a verified pre-migration backup, imports
each source in one transaction with its receipt, validates the rows, then
moves the source byte-exact to .statekit/migrated/<run_id>/. Safe to rerun:
imported sources are skipped, an interrupted run converges.

--dry-run shows the plan (the same as `statekit plan`) and writes nothing.
Without --yes it shows the plan and asks on a terminal; elsewhere it refuses.

Example:

\b
    statekit migrate --state-dir ~/.openclaw --dry-run
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
        backup_to: Annotated[str | None, typer.Option("--backup-to", help="Also copy the pre-migration backup to s3://bucket/prefix.", show_default=False)] = None,
        remove_sources: Annotated[bool, typer.Option("--remove-sources", help="Delete imported sources instead of keeping a byte-exact copy.")] = False,
        retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Try again sources whose unchanged file failed in an earlier run.")] = False,
        dry_run: DryRunOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        no_progress: NoProgressOpt = False,
    ) -> None:
        out = output(json_out, quiet, no_progress)

        def body() -> ExitCode:
            from statekit.migrate.apply import MigrateOptions, migrate
            from statekit.migrate.plan import build_plan

            resolved = existing_state_dir(state_dir)
            if dry_run:  # the plan: read-only, what `statekit plan` prints
                with out.progress() as progress:
                    return show_plan(out, build_plan(resolved, retry_failed=retry_failed, progress=progress))
            if backup_output is not None and backup_output.exists():
                existing_dir(backup_output, "--backup-output")
            if not yes:
                with out.progress() as progress:  # what it shows: sizes from stat; the run counts and hashes once
                    plan = build_plan(resolved, retry_failed=retry_failed, progress=progress, full=False)
                out.info(render_plan(plan))
                confirm_or_refuse(out, "Migrate these sources now?", yes)
            options = MigrateOptions(backup=not no_backup, backup_output=backup_output, backup_to=backup_to, remove_sources=remove_sources, retry_failed=retry_failed)
            with out.progress() as progress:
                report = migrate(resolved, options, progress)
            # The JSON document only with --json: a dict per source (100,000 of them) is not built for nothing.
            out.result(report.to_json() if out.json_mode else None, lambda _d: render_report(report))
            for notice in report.notices:
                out.note(notice)
            for warning in report.warnings:
                out.warn(warning)
            return report.exit_code

        run_command(out, body)
