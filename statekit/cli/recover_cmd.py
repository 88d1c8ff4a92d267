"""``statekit recover RUN_ID``: put back the legacy sources a migration run retired."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from statekit.cli.common import DryRunOpt, JsonOpt, QuietOpt, StateDirOpt, YesOpt, confirm_or_refuse, existing_state_dir, output, run_command
from statekit.errors import ExitCode, describe_exit_codes
from statekit.output import table

if TYPE_CHECKING:
    from statekit.maintenance.recover import RecoverReport

# The codes this command returns, and what each means here (None: the summary in statekit.errors).
EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "done",
    ExitCode.FATAL: None,
    ExitCode.USAGE: None,
    ExitCode.WARNINGS: "some sources could not be put back (named)",
    ExitCode.BUSY: None,
    ExitCode.VERIFY_FAILED: "a retired copy fails its hash",
}

HELP = f"""Put the sources a migration run retired back at their original paths, byte-identical.

Each retired copy under .statekit/migrated/<run_id>/ is checked against the
SHA-256 in its receipt and moved back; a different file already at the
original path is never overwritten. Receipts become "recovered", so the next
`statekit migrate` imports those files again. Imported rows stay. Takes the
state-dir lock; refuses while a gateway runs.

Example:

\b
    statekit history
    statekit recover 0c6f3f0e-... --dry-run
    statekit recover 0c6f3f0e-... --yes --report recover-report.json

--report writes a sanitized JSON report for a bug report (relative paths,
counts, error lines; no secret, no message text).

{describe_exit_codes(EXIT_CODES)}
"""


def render(report: RecoverReport) -> str:
    head = "Would recover" if report.dry_run else "Recovered"
    lines = [f"{head} run {report.run_id} ({report.run_status or '?'})"]
    if report.items:
        lines += ["", table(("STATUS", "KIND", "PATH"), [(i.status, i.kind, i.path) for i in report.items])]
    else:
        lines.append("The run retired no source.")
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items()) or "nothing to do"
    lines += ["", f"Summary: {counts}."]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("recover", help=HELP)
    def recover_command(
        run_id: Annotated[str, typer.Argument(help="The migration run id (see `statekit history`).")],
        state_dir: StateDirOpt = None,
        dry_run: DryRunOpt = False,
        yes: YesOpt = False,
        report_file: Annotated[Path | None, typer.Option("--report", help="Write a sanitized JSON report to this file.")] = None,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = output(json_out, quiet)

        def body() -> ExitCode:
            from statekit.maintenance.recover import recover, write_report

            state = existing_state_dir(state_dir).path
            if not dry_run:
                if not yes:
                    out.info(render(recover(state, run_id, dry_run=True)))
                confirm_or_refuse(out, f"Put back the sources of run {run_id}?", yes)
            report = recover(state, run_id, dry_run=dry_run)
            if report_file is not None:
                write_report(report_file, report)
            out.result(report.to_json(), lambda _d: render(report))
            for line in report.errors:
                out.warn(line)
            return report.exit_code

        run_command(out, body)
