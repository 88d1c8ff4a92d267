"""``statekit inspect``: read-only health report of the global and per-agent databases."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from statekit.cli.common import JsonOpt, QuietOpt, StateDirOpt, existing_state_dir, output, run_command
from statekit.errors import ExitCode, UsageError, describe_exit_codes
from statekit.output import table

if TYPE_CHECKING:
    from statekit.maintenance.inspect import InspectReport

# The codes this command returns, and what each means here (None: the summary in statekit.errors).
EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "healthy",
    ExitCode.FATAL: None,
    ExitCode.USAGE: None,
    ExitCode.WARNINGS: "findings (listed)",
    ExitCode.VERIFY_FAILED: "corruption (a database fails its checks)",
}

HELP = f"""Check every statekit database of a state dir. Read-only: no lock, no WAL/SHM file.

Per database: role, agent id, user_version, integrity_check,
foreign_key_check, row counts, orphans (events without a session,
identities without an event, routes/entries to missing sessions), sessions
without a transcript, and the legacy files still on disk with their plan
action.

Example:

\b
    statekit inspect --all-agents
    statekit inspect --agent work --json > inspect.json

{describe_exit_codes(EXIT_CODES)}
"""


def _integrity_word(integrity: str | None) -> str:
    """The header says ok or FAILED; the failing lines are printed once, as the database's finding below."""
    if not integrity:
        return "-"
    return "ok" if integrity == "ok" else "FAILED"


def inspect_warnings(report: InspectReport) -> list[str]:
    """Every line that makes inspect exit 3 or 5: corruption and findings, per database and overall."""
    return [line for db in report.databases for line in db.corruption + db.findings] + list(report.findings)


def render(report: InspectReport) -> str:
    lines = [f"State dir: {report.state_dir}  [{report.status}]"]
    for db in report.databases:
        data = db.to_json()
        lines += ["", f"{db.path}  role={data['role']}  agent={data['agent_id'] or '-'}  user_version={db.user_version}  "
                      f"integrity={_integrity_word(db.integrity)}  [{db.status}]"]
        fk = sum(db.foreign_key_violations.values())
        lines.append(f"  foreign_key_check: {'ok' if not fk else f'{fk} violation(s)'}")
        interesting = {t: n for t, n in db.row_counts.items() if n}
        if interesting:
            lines.append("  rows: " + ", ".join(f"{t} {n}" for t, n in interesting.items()))
        for name, orphan in db.orphans.items():
            lines.append(f"  orphans: {orphan['count']} {name.replace('_', ' ')} ({', '.join(orphan['session_ids'])})")
        missing = db.sessions_without_transcript
        if missing["count"]:
            lines.append(f"  sessions without transcript: {missing['count']} ({', '.join(missing['session_ids'])})")
        if db.legacy_files:
            lines.append("  legacy files still on disk:")
            lines += ["    " + row for row in table(("ACTION", "KIND", "PATH"), [(f["action"], f["kind"], f["path"]) for f in db.legacy_files]).splitlines()]
        lines += [f"  ! {line}" for line in db.corruption + db.findings]
    if report.legacy_unassigned:
        lines += ["", "Legacy files (no database yet):"]
        lines += ["  " + row for row in table(("ACTION", "KIND", "PATH"), [(f["action"], f["kind"], f["path"]) for f in report.legacy_unassigned]).splitlines()]
    lines += [f"! {line}" for line in report.findings]
    lines += [f"note: {line}" for line in report.notes]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    @app.command("inspect", help=HELP)
    def inspect_command(
        agent: Annotated[str | None, typer.Option("--agent", help="Inspect only this agent's database (plus the global one).")] = None,
        all_agents: Annotated[bool, typer.Option("--all-agents", help="Inspect every agent database (the default).")] = False,
        state_dir: StateDirOpt = None,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = output(json_out, quiet)

        def body() -> ExitCode:
            from statekit.maintenance.inspect import inspect_state

            if agent is not None and all_agents:
                raise UsageError("use either --agent ID or --all-agents, not both")
            report = inspect_state(existing_state_dir(state_dir), agent)
            out.result(report.to_json(), lambda _d: render(report))
            if out.quiet or out.json_mode:
                for line in inspect_warnings(report):
                    out.warn(line)
            return report.exit_code

        run_command(out, body)
