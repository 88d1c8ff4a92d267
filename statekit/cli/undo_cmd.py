"""``statekit undo RUN_ID``: put an install back exactly as it was before a migration run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from statekit.cli.common import DryRunOpt, JsonOpt, QuietOpt, StateDirOpt, YesOpt, confirm_or_refuse, existing_file, existing_state_dir, output, run_command
from statekit.errors import ExitCode, describe_exit_codes
from statekit.output import table

if TYPE_CHECKING:
    from statekit.maintenance.undo import UndoPlan

EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "done (or, with --dry-run, the run can be undone)",
    ExitCode.FATAL: "refused (each reason named) or failed",
    ExitCode.USAGE: None,
    ExitCode.WARNINGS: "done, but the result differs from the pre-migration backup (named)",
    ExitCode.BUSY: None,
    ExitCode.INTERRUPTED: None,
}

HELP = f"""Put the install back exactly as it was before migration run RUN_ID.

Retired sources and the original config go back byte-exact, databases that
existed before the run come back as its verified pre-migration backup holds
them, databases the run created are removed, and a relocated state dir
(~/.clawdbot -> ~/.openclaw) is renamed back. Refuses, naming why and
changing nothing, when a later run or a gateway write would be lost.
Afterwards `statekit plan` shows the sources as new again. Takes the state-dir
lock; refuses while a gateway runs.

Example:

\b
    statekit history
    statekit undo 0c6f3f0e-... --dry-run
    statekit undo 0c6f3f0e-... --yes

{describe_exit_codes(EXIT_CODES)}
"""


def render(plan: UndoPlan) -> str:
    if plan.refusals:
        return f"Run {plan.run_id} ({plan.run_status or '?'}) cannot be undone ({len(plan.refusals)} reason(s) on stderr); nothing was changed."
    head = "Would undo" if plan.dry_run else "Undid"
    lines = [f"{head} run {plan.run_id} ({plan.run_status or '?'}) in {plan.state_dir}"]
    if plan.backup is not None:
        lines.append(f"Pre-migration backup: {plan.backup}")
    if plan.actions:
        lines += ["", table(("ACTION", "PATH", "DETAIL"), [(a.action, a.path, a.detail or "") for a in plan.actions])]
    if plan.final_state_dir is not None:
        lines.append(f"State dir is back at {plan.final_state_dir}")
    if not plan.dry_run:
        lines.append("" if plan.differences else "The state dir matches the pre-migration backup.")
    if plan.dry_run:
        lines.append("Dry run only; nothing was written.")
    return "\n".join(line for line in lines if line is not None)


def register(app: typer.Typer) -> None:
    @app.command("undo", help=HELP)
    def undo_command(
        run_id: Annotated[str, typer.Argument(help="The migration run id (see `statekit history`).")],
        state_dir: StateDirOpt = None,
        backup: Annotated[Path | None, typer.Option("--backup", help="The run's pre-migration backup, when it has moved.", show_default=False)] = None,
        dry_run: DryRunOpt = False,
        yes: YesOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = output(json_out, quiet)

        def body() -> ExitCode:
            from statekit.maintenance.undo import UndoPlan, UndoRefused, plan_undo, undo

            state = existing_state_dir(state_dir).path
            if backup is not None:
                existing_file(backup, "--backup")
            if dry_run:
                plan = plan_undo(state, run_id, backup=backup)
            else:
                if not yes:
                    out.info(render(plan_undo(state, run_id, backup=backup)))
                confirm_or_refuse(out, f"Undo run {run_id}?", yes)
                try:
                    plan = undo(state, run_id, backup=backup)
                except UndoRefused as refused:
                    plan = UndoPlan(state, run_id, False, refusals=refused.reasons)
            out.result(plan.to_json(), lambda _d: render(plan))
            if not json_out:
                for line in plan.refusals:
                    out.error(line)
            for line in [*plan.warnings, *plan.differences]:
                out.warn(line)
            return plan.exit_code

        run_command(out, body)
