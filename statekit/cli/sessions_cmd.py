"""``statekit sessions``: delete, reset, list and restore archived sessions (offline, per-agent SQLite)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from typing import TYPE_CHECKING

from statekit.values import ms_to_display
from statekit.cli.common import DryRunOpt, JsonOpt, QuietOpt, StateDirOpt, YesOpt, confirm_or_refuse, existing_file, existing_state_dir, run_command
from statekit.errors import ExitCode, describe_exit_codes
from statekit.output import Output, table

if TYPE_CHECKING:
    from statekit.maintenance.sessions import SessionChange

# The codes this command returns, and what each means here (None: the summary in statekit.errors).
EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "done",
    ExitCode.FATAL: "fatal error (no such key or database)",
    ExitCode.USAGE: None,
    ExitCode.BUSY: None,
    ExitCode.VERIFY_FAILED: "archive verification failed",
}

HELP = f"""Delete, reset, list and restore sessions in the per-agent SQLite store (gateway stopped).

A session's artifact family is its sessionId, the pre/post-compaction
session ids of its checkpoints and its usageFamilySessionIds. Deleting or
resetting archives every family member that no other entry still needs
(zstd archive under .statekit/session-archives/<agentId>/) and removes its
rows, in one transaction with the entry change.

Example:

\b
    statekit sessions list --agent main
    statekit sessions delete agent:main:telegram:group:-100:topic:5 --dry-run
    statekit sessions delete agent:main:telegram:group:-100:topic:5 --yes

{describe_exit_codes(EXIT_CODES)}
"""

AgentOpt = Annotated[str | None, typer.Option("--agent", help="Agent id (default: from an agent:<id>: key, else main).")]



def render_change(change: SessionChange) -> str:
    verb = {"delete": "Deleted", "reset": "Reset"}[change.action]
    if change.dry_run:
        verb = {"delete": "Would delete", "reset": "Would reset"}[change.action]
    lines = [f"{verb} {change.session_key} (agent {change.agent_id}, session {change.session_id})"]
    if change.new_session_id and not change.dry_run:
        lines.append(f"  routed to new session {change.new_session_id}")
    lines.append(f"  family: {', '.join(change.family) or '-'}")
    lines.append(f"  {'would archive' if change.dry_run else 'archived'} and removed: {', '.join(change.archived) or 'nothing'}")
    if change.kept:
        lines.append(f"  kept (still referenced by another entry): {', '.join(change.kept)}")
    if change.absent:
        lines.append(f"  no rows for: {', '.join(change.absent)}")
    if change.rows:
        lines.append("  rows: " + ", ".join(f"{t} {n}" for t, n in change.rows.items()))
    if change.archive_path:
        lines.append(f"  archive: {change.archive_path}")
    lines += [f"  note: {n}" for n in change.notices]
    return "\n".join(lines)


def _change_command(action: str, key: str, agent: str | None, state_dir: Path | None, dry_run: bool, yes: bool, out: Output) -> None:
    def body() -> ExitCode:
        from statekit.maintenance.sessions import change_session, preview_change

        state = existing_state_dir(state_dir).path
        if dry_run:
            change = preview_change(state, action, key, agent)
        else:
            if not yes:
                preview = preview_change(state, action, key, agent)
                out.info(render_change(preview))
            confirm_or_refuse(out, f"{action.capitalize()} {key} now?", yes)
            change = change_session(state, action, key, agent)
        out.result(change.to_json(state), lambda _d: render_change(change))
        return ExitCode.OK

    run_command(out, body)


def register(app: typer.Typer) -> None:
    sessions = typer.Typer(help=HELP, no_args_is_help=True, rich_markup_mode=None)
    app.add_typer(sessions, name="sessions")

    @sessions.command("delete", help="""Delete a session key and archive its unreferenced artifact family.

Removes the key's session_entries/session_routes rows; every family session
id no remaining entry references is archived (reason "deleted") and its rows
removed. Reads no legacy JSONL file.

Example:

\b
    statekit sessions delete agent:main:quick-q --dry-run
    statekit sessions delete agent:main:quick-q --yes --json
""")
    def delete_command(
        key: Annotated[str, typer.Argument(help="Session key, e.g. agent:main:telegram:direct:12345.")],
        agent: AgentOpt = None,
        state_dir: StateDirOpt = None,
        dry_run: DryRunOpt = False,
        yes: YesOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        _change_command("delete", key, agent, state_dir, dry_run, yes, Output(json_mode=json_out, quiet=quiet))

    @sessions.command("reset", help="""Reset a session key: route it to a fresh session id, archive the old family.

The key keeps its entry (delivery settings, preferences) with a new
sessionId; usage counters and compaction checkpoints start over. Family
members no other entry references are archived (reason "reset") and removed.

Example:

\b
    statekit sessions reset agent:main:main --yes
""")
    def reset_command(
        key: Annotated[str, typer.Argument(help="Session key to reset.")],
        agent: AgentOpt = None,
        state_dir: StateDirOpt = None,
        dry_run: DryRunOpt = False,
        yes: YesOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        _change_command("reset", key, agent, state_dir, dry_run, yes, Output(json_mode=json_out, quiet=quiet))

    @sessions.command("list", help="""List session entries (with family and transcript size), or archives with --archives. Read-only.

Example:

\b
    statekit sessions list
    statekit sessions list --agent work --json
    statekit sessions list --archives
""")
    def list_command(
        agent: AgentOpt = None,
        archives: Annotated[bool, typer.Option("--archives", help="List session archives instead of live sessions.")] = False,
        state_dir: StateDirOpt = None,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = Output(json_mode=json_out, quiet=quiet)

        def body() -> ExitCode:
            from statekit.maintenance.sessions import list_session_archives, list_sessions

            state = existing_state_dir(state_dir).path
            if archives:
                found = list_session_archives(state, agent)
                rows = [(a["status"], a["agent_id"], a["reason"], a["session_key"], sum((a["rows"] or {}).values()),
                         a["archive"] if a["present"] else f"{a['archive']} (missing)") for a in found]
                out.result({"archives": found}, lambda _d: table(("STATUS", "AGENT", "REASON", "KEY", "ROWS", "ARCHIVE"), rows)
                           if rows else "No session archives.")
                return ExitCode.OK
            agents = list_sessions(state, agent)
            rows = [(a["agent_id"], s["session_key"], s["session_id"], len(s["family"]), s["transcript_events"], ms_to_display(s["updated_at"]))
                    for a in agents for s in a["sessions"]]
            out.result({"agents": agents}, lambda _d: table(("AGENT", "KEY", "SESSION", "FAMILY", "EVENTS", "UPDATED"), rows, whole=("SESSION", "UPDATED"))
                       if rows else "No sessions.")
            return ExitCode.OK

        run_command(out, body)

    @sessions.command("restore-archive", help="""Bring an archive's rows back exactly (verified by its SHA-256).

Refuses, changing nothing, when any archived row is live again (same key).

Example:

\b
    statekit sessions restore-archive ~/.openclaw/.statekit/session-archives/main/<name>.json.zst --yes
""")
    def restore_command(
        archive: Annotated[Path, typer.Argument(help="The .json.zst archive file.")],
        state_dir: StateDirOpt = None,
        dry_run: DryRunOpt = False,
        yes: YesOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = Output(json_mode=json_out, quiet=quiet)

        def body() -> ExitCode:
            from statekit.maintenance.sessions import restore_session_archive

            state = existing_state_dir(state_dir).path
            existing_file(archive, "session archive")
            if not dry_run:
                confirm_or_refuse(out, f"Restore the rows of {archive}?", yes)
            result = restore_session_archive(state, archive, dry_run=dry_run)
            counts = ", ".join(f"{t} {n}" for t, n in result.rows.items() if n) or "no rows"
            verb = "Would restore" if dry_run else "Restored"
            out.result(result.to_json(), lambda _d: f"{verb} {result.session_key} (agent {result.agent_id}, {result.reason}): {counts}")
            return ExitCode.OK

        run_command(out, body)
