"""``statekit plan``: discover and classify every file; print the plan. Writes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from statekit.cli.common import JsonOpt, NoProgressOpt, QuietOpt, StateDirOpt, existing_state_dir, output, run_command
from statekit.errors import ExitCode, describe_exit_codes
from statekit.output import Output, human_size, table
from statekit.states import PlanProblem

if TYPE_CHECKING:
    from statekit.migrate.plan import Plan

# The codes this command returns, and what each means here (None: the summary in statekit.errors).
EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "plan made",
    ExitCode.FATAL: None,
    ExitCode.USAGE: None,
    ExitCode.WARNINGS: "some sources are unreadable or conflict",
}

HELP = f"""Show what `statekit migrate` would do. Read-only: writes nothing, not even a lock.

Every file under the state dir is classified: a legacy source (with its
reader, record count, target tables and action), a current SQLite
database, user content that stays, or unrecognised.

Example:

\b
    statekit plan --state-dir ~/.openclaw
    statekit plan --json > plan.json

{describe_exit_codes(EXIT_CODES)}
"""


def _target(tables: tuple[str, ...]) -> str:
    if not tables:
        return "-"
    first = tables[0].split(".", 1)[-1]
    return first if len(tables) == 1 else f"{first} +{len(tables) - 1}"


def render_plan(plan: Plan) -> str:
    lines = [f"State dir: {plan.state_dir} ({plan.origin}{', legacy root' if plan.legacy_root else ''})"]
    if plan.config_path:
        lines.append(f"Config: {plan.config_path}")
    for step in plan.steps:
        lines.append(f"Step: {step.get('description')}")
    if plan.sources:
        rows = [
            (s.action, s.kind, s.rel, human_size(s.size), "-" if s.record_count is None else s.record_count, _target(s.target_tables))
            for s in plan.sources
        ]
        lines += ["", table(("ACTION", "KIND", "PATH", "SIZE", "RECORDS", "TARGET"), rows, whole=("ACTION", "SIZE", "RECORDS"))]
    problems = [s for s in plan.sources if s.action in tuple(PlanProblem)]
    for s in problems:
        lines.append(f"  ! {s.reason}")
    lines += [f"  ! {warning}" for warning in plan.name_warnings()]
    for s in plan.sources:
        for warning in s.warnings:
            lines.append(f"  note: {warning}")
    if plan.databases:
        lines += ["", table(("DATABASE", "ROLE", "AGENT", "VERSION", "STATUS"), [
            (d.rel, d.role or "-", d.agent_id or "-", "-" if d.user_version is None else d.user_version, d.status if not d.problem else f"{d.status}: {d.problem}")
            for d in plan.databases
        ])]
    if plan.user_content:
        lines += ["", "User content (stays where it is):"]
        lines += [f"  {rel}  ({reason}{f', {n} files' if n > 1 else ''})" for rel, reason, n in plan.user_content]
    if plan.unrecognised:
        lines += ["", "Unrecognised (listed, never touched):"]
        lines += [f"  {e.rel}" for e in plan.unrecognised]
    counts = ", ".join(f"{n} {a}" for a, n in plan.counts().items()) or "no legacy sources"
    lines += ["", f"Summary: {len(plan.sources)} legacy sources ({counts}); {len(plan.databases)} databases; {len(plan.unrecognised)} unrecognised."]
    return "\n".join(lines)


def plan_warnings(plan: Plan) -> list[str]:
    """What makes the plan exit 3: unreadable or conflicting sources, refused or unparseable steps (one line each)."""
    lines = [s.reason or f"{s.rel}: {s.action}" for s in plan.sources if s.action in tuple(PlanProblem)]
    lines += [f"step refused: {step.get('description')}" for step in plan.steps if step.get("status") in ("refused", "unparseable")]
    return lines + plan.name_warnings()


def plan_exit_code(plan: Plan) -> ExitCode:
    return ExitCode.WARNINGS if plan_warnings(plan) else ExitCode.OK


def show_plan(out: Output, plan: Plan) -> ExitCode:
    """The plan as the result (JSON or text); under --quiet its warnings still show, one line each."""
    data: dict[str, Any] = plan.to_json()
    out.result(data, lambda _d: render_plan(plan))
    if out.quiet or out.json_mode:
        for line in plan_warnings(plan):
            out.warn(line)
    return plan_exit_code(plan)


def register(app: typer.Typer) -> None:
    @app.command("plan", help=HELP)
    def plan_command(
        state_dir: StateDirOpt = None, json_out: JsonOpt = False, quiet: QuietOpt = False, no_progress: NoProgressOpt = False
    ) -> None:
        out = output(json_out, quiet, no_progress)

        def body() -> ExitCode:
            from statekit.migrate.plan import build_plan

            resolved = existing_state_dir(state_dir)
            with out.progress() as progress:
                plan = build_plan(resolved, progress=progress)
            return show_plan(out, plan)

        run_command(out, body)
