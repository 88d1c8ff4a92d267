"""``statekit backup create|verify|restore|list|prune``: parse, call :mod:`backup`, render."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from statekit.backup import create_backup, default_output_dir, restore_archive, verify_archive
from statekit.backup.create import BackupResult
from statekit.backup.journal import JournalError, Recovery, describe_pending, journal_path, settle_locked
from statekit.backup.manifest import iso_utc
from statekit.backup.restore import RestoreResult, abort_restore, resume_restore
from statekit.backup.create import BACKUP_DIR_ENV, resolve_output_dir
from statekit.backup.retention import (
    ArchiveInfo,
    Duration,
    InstallScope,
    RetentionPolicy,
    install_dirs,
    list_archives,
    prune_archives,
    record_verify_result,
)
from statekit.backup.verify import VerifyReport
from statekit.cli.common import DryRunOpt, JsonOpt, QuietOpt, StateDirOpt, YesOpt, confirm_or_refuse, run_command
from statekit.errors import BusyError, ExitCode, StatekitError, UsageError, describe_exit_codes
from statekit.install import is_install_id, read_install_id
from statekit.layout import resolve_state_dir
from statekit.output import Output, human_size, table

EXIT_CODES = describe_exit_codes(dict.fromkeys((ExitCode.OK, ExitCode.FATAL, ExitCode.USAGE, ExitCode.BUSY, ExitCode.VERIFY_FAILED)))

OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help=f"Archive directory (default: ${BACKUP_DIR_ENV}, else openclaw-backups/<install id>/ beside the state dir).",
                 show_default=False),
]
AllInstallsOpt = Annotated[bool, typer.Option("--all-installs", help="Every install's archives, not only this state dir's.")]
InstallOpt = Annotated[str | None, typer.Option("--install", help="The archives of install ID (32 hex digits) instead of this state dir's.",
                                                show_default=False)]

CREATE_HELP = f"""Back up the state dir into one verified openclaw-backup-<UTC>.tar.zst.

Every SQLite database is snapshotted with VACUUM INTO and must pass
integrity_check; other files are hashed; the archive is verified before it
gets its final name. Works while OpenClaw runs. --format openclaw writes a
<UTC>-openclaw-backup.tar.gz that `openclaw backup verify|restore` accept
(with statekit's per-file digests inside).

Examples:

\b
    statekit backup create --state-dir ~/.openclaw --output ~/openclaw-backups --quiet
    statekit backup create --format openclaw --output ~/openclaw-backups

{EXIT_CODES}
"""

VERIFY_HELP = f"""Check an archive in one streaming pass (statekit .tar.zst or OpenClaw .tar.gz).

Prints one line per problem and exits 5 when anything fails.

Example:

\b
    statekit backup verify ~/openclaw-backups/openclaw-backup-20260102T030000Z.tar.zst

{EXIT_CODES}
"""

RESTORE_HELP = f"""Restore an archive (verified first) into a fresh --target dir, or in place.

statekit .tar.zst and OpenClaw .tar.gz archives both restore as a state dir.
In place, the current files are moved to <state>/.statekit/pre-restore/<UTC>/
and any error rolls everything back; a restore that was killed is finished
(or undone) by the next statekit command on that state dir, or by --resume /
--abort. Writing needs --yes (or a TTY answer).

Examples:

\b
    statekit backup restore ARCHIVE --target /tmp/openclaw-restored --dry-run
    statekit backup restore ARCHIVE --state-dir ~/.openclaw --yes
    statekit backup restore --resume --state-dir ~/.openclaw --yes

{EXIT_CODES}
"""

LIST_HELP = f"""List this install's archives with time, size, asset count, install and last verify result.

Archives that record no install id (made before archives did) are listed
too, marked "(none)". --all-installs lists every install's; --install ID one
other install's.

Example:

\b
    statekit backup list --output ~/openclaw-backups --all-installs

{EXIT_CODES}
"""

PRUNE_HELP = f"""Delete this install's old archives, keeping the union of the --keep-* rules (UTC buckets).

Only this state dir's install is pruned (--install ID another one,
--all-installs each install separately); archives without an install id only
with --include-unscoped. The newest archive that verified with real content
is never deleted. Prints what it keeps and why.

Example:

\b
    statekit backup prune --keep-last 3 --keep-daily 7 --keep-monthly 6 --dry-run
    statekit backup prune --keep-within 30d --keep-monthly 12 --keep-yearly 5

{EXIT_CODES}
"""


def _scope(output: Path | None, state_dir: Path | None, all_installs: bool, install: str | None,
           include_unscoped: bool) -> tuple[InstallScope, list[Path]]:
    """Which archives ``list``/``prune`` act on, and the dirs they are in (flag > $STATEKIT_BACKUP_DIR > default).

    A state dir without an install id (never backed up) owns no scoped archive: only unscoped ones, and only when
    ``include_unscoped`` (``list`` always passes it)."""
    if all_installs and install is not None:
        raise UsageError("use either --all-installs or --install, not both")
    if install is not None and not is_install_id(install):
        raise UsageError(f"--install {install!r}: an install id is 32 lowercase hex digits (see `statekit backup list --all-installs`)")
    state = resolve_state_dir(state_dir).path
    current = install or read_install_id(state)
    scope = InstallScope(None) if all_installs else InstallScope(current or "", include_unscoped=include_unscoped)
    directory = resolve_output_dir(output, state, current)
    base = default_output_dir(state)
    if directory.parent == base or directory == base:  # the default: this install's folder, and archives from before it
        return scope, install_dirs(base) if all_installs else [directory, base]
    return scope, [directory]


def _install_text(archive: ArchiveInfo) -> str:
    return archive.install_id[:12] if archive.install_id else "(none)"


# --------------------------------------------------------------------------- rendering


def render_create(result: BackupResult) -> str:
    data = result.to_json()
    if result.dry_run:
        assets = result.manifest.get("assets", [])
        lines = [f"Dry run: would write {result.planned_path}", f"Assets: {len(assets)} ({human_size(data['bytes'])})"]
        lines += [f"  {a['kind']:<8} {a['role']:<11} {a['source_path']}" for a in assets if a["kind"] != "dir"]
        lines += [f"  skip     {s['source_path']} ({s['reason']})" for s in data["skipped"]]
        lines.append("Dry run only; nothing was written.")
        return "\n".join(lines)
    dbs = ", ".join(f"{d['role']}{'/' + d['agent_id'] if d['agent_id'] else ''} v{d['schema_version']}" for d in data["databases"])
    lines = [
        f"Backup archive: {result.archive_path} ({human_size(result.archive_bytes)})",
        f"Assets: {data['assets']} ({human_size(data['bytes'])}); databases: {len(data['databases'])}{' (' + dbs + ')' if dbs else ''}",
        f"Skipped: {len(data['skipped'])} entries (sidecars, locks, sockets, temp files)" if data["skipped"] else "Skipped: none",
        "Verification: passed" if result.verified else "Verification: skipped (--no-verify)",
    ]
    return "\n".join(lines)


def render_verify(report: VerifyReport) -> str:
    data = report.to_json()
    lines = [
        f"Backup archive {'OK' if report.ok else 'FAILED'}: {report.path} ({report.format})",
        f"Created at: {data['created_at'] or '-'}",
        f"Assets verified: {report.assets_verified} of {data['assets']}; members scanned: {report.entries}",
    ]
    lines += [f"note: {n}" for n in report.notes]
    return "\n".join(lines)


def render_restore(result: RestoreResult) -> str:
    counts = result.counts()
    head = "Dry run: restore plan" if result.dry_run else "Restored"
    lines = [f"{head} ({result.mode}) from {result.archive} into {result.destination}"]
    if result.recovered is not None:
        lines.append(f"First {result.recovered.summary()}")
    if result.dry_run:
        lines += [f"  {s.action:<9} {s.archive_path} -> {s.destination}" for s in result.steps]
    lines.append(f"{counts['create']} create, {counts['replace']} replace, {counts['unchanged']} unchanged")
    if result.pre_restore_dir:
        lines.append(f"Previous files moved to {result.pre_restore_dir}")
    if result.removed_sidecars:
        lines.append(f"Removed {len(result.removed_sidecars)} stale -wal/-shm/-journal sidecars")
    lines += [f"note: {n}" for n in result.notes if not (result.recovered and n == result.recovered.summary())]
    if result.dry_run:
        lines.append("Dry run only; nothing was written.")
    return "\n".join(lines)


def render_recovery(state: Path, recovery: Recovery | None, restored: RestoreResult | None) -> str:
    if recovery is None:
        return f"No interrupted restore is pending in {state}"
    lines = [recovery.summary()[0].upper() + recovery.summary()[1:]]
    if restored is not None:
        lines.append(render_restore(restored))
    return "\n".join(lines)


def _verified_text(value: bool | None) -> str:
    return "unknown" if value is None else ("ok" if value else "FAILED")


# --------------------------------------------------------------------------- commands


def register(app: typer.Typer) -> None:
    sub = typer.Typer(
        name="backup",
        help="Back up, verify, restore, list and prune OpenClaw state archives.",
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode=None,
        context_settings={"help_option_names": ["-h", "--help"]},
    )

    @sub.command("create", help=CREATE_HELP)
    def create_cmd(
        state_dir: StateDirOpt = None,
        output: OutputOpt = None,
        include_workspaces: Annotated[bool, typer.Option("--include-workspaces", help="Also archive workspaces outside the state dir.")] = False,
        level: Annotated[int | None, typer.Option("--level", min=1, max=22, help="Compression level: zstd 1-22 (default 3); gzip 1-9 with --format openclaw (default 6).", show_default=False)] = None,
        fmt: Annotated[str, typer.Option("--format", help="statekit (.tar.zst, the default) or openclaw (.tar.gz that OpenClaw 2026.9.6 restores).")] = "statekit",
        no_verify: Annotated[bool, typer.Option("--no-verify", help="Skip the verify pass (snapshot checks still run).")] = False,
        dry_run: DryRunOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = Output(json_mode=json_out, quiet=quiet)

        def body() -> ExitCode:
            resolved = resolve_state_dir(state_dir)
            with out.progress("backup", None) as advance:
                if fmt not in ("statekit", "openclaw"):
                    raise UsageError(f"--format must be statekit or openclaw, not {fmt!r}")
                result = create_backup(
                    resolved.path, output, include_workspaces=include_workspaces,
                    level=level if level is not None else (6 if fmt == "openclaw" else 3),
                    verify=not no_verify, dry_run=dry_run, progress=advance, fmt=fmt,
                )
            out.result(result.to_json(), lambda _d: render_create(result))
            if not quiet and not json_out:
                for warning in result.warnings:
                    out.warn(warning)
            return ExitCode.OK

        run_command(out, body)

    @sub.command("verify", help=VERIFY_HELP)
    def verify_cmd(
        archive: Annotated[Path, typer.Argument(help="The archive to check.")],
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = Output(json_mode=json_out, quiet=quiet)

        def body() -> ExitCode:
            report = verify_archive(archive)
            try:
                record_verify_result(archive, report.ok, report.problems, iso_utc(datetime.now(timezone.utc)))
            except OSError:
                pass
            out.result(report.to_json(), lambda _d: render_verify(report))
            if not report.ok:
                if not json_out:
                    for problem in report.problems:
                        out.error(problem)
                return ExitCode.VERIFY_FAILED
            return ExitCode.OK

        run_command(out, body)

    @sub.command("restore", help=RESTORE_HELP)
    def restore_cmd(
        archive: Annotated[Path | None, typer.Argument(help="The archive to restore (not with --resume/--abort).", show_default=False)] = None,
        target: Annotated[Path | None, typer.Option("--target", help="A missing or empty dir to rebuild the state dir in.", show_default=False)] = None,
        state_dir: StateDirOpt = None,
        resume: Annotated[bool, typer.Option("--resume", help="Finish the interrupted in-place restore of the state dir.")] = False,
        abort: Annotated[bool, typer.Option("--abort", help="Undo the interrupted in-place restore of the state dir.")] = False,
        dry_run: DryRunOpt = False,
        yes: YesOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = Output(json_mode=json_out, quiet=quiet)

        def settle_body() -> ExitCode:
            if resume and abort:
                raise UsageError("use either --resume or --abort, not both")
            if archive is not None or target is not None or dry_run:
                raise UsageError("--resume/--abort take no ARCHIVE, --target or --dry-run: the restore journal names them")
            state = resolve_state_dir(state_dir).path
            if journal_path(state).exists():
                confirm_or_refuse(out, f"{'Finish' if resume else 'Undo'} the interrupted restore in {state}?", yes)
            restored = None
            if resume:
                with out.progress("restore", None) as advance:
                    recovery, restored = resume_restore(state, progress=advance)
            else:
                recovery = abort_restore(state)
            data = {"ok": True, "state_dir": str(state), "pending": recovery is not None,
                    "recovered": recovery.to_json() if recovery else None, "restore": restored.to_json() if restored else None}
            out.result(data, lambda _d: render_recovery(state, recovery, restored))
            return ExitCode.OK

        def body() -> ExitCode:
            if resume or abort:
                return settle_body()
            if archive is None:
                raise UsageError("missing ARCHIVE (or --resume / --abort for an interrupted restore)")
            if not dry_run:
                where = target if target is not None else (state_dir or "the recorded state dir")
                confirm_or_refuse(out, f"Restore {archive} into {where}?", yes)
            with out.progress("restore", None) as advance:
                result = restore_archive(archive, target=target, state_dir=state_dir, dry_run=dry_run, progress=advance)
            out.result(result.to_json(), lambda _d: render_restore(result))
            return ExitCode.OK

        run_command(out, body)

    @sub.command("list", help=LIST_HELP)
    def list_cmd(state_dir: StateDirOpt = None, output: OutputOpt = None, all_installs: AllInstallsOpt = False, install: InstallOpt = None,
                 json_out: JsonOpt = False, quiet: QuietOpt = False) -> None:
        out = Output(json_mode=json_out, quiet=quiet)

        def body() -> ExitCode:
            scope, dirs = _scope(output, state_dir, all_installs, install, True)
            directory = dirs[0]
            archives = [a for a in list_archives(*dirs) if scope.covers(a)]
            rows = [(iso_utc(a.created), human_size(a.size), a.assets if a.assets is not None else "-", _install_text(a),
                     _verified_text(a.verified), a.path.name) for a in archives]

            def human(_d: Any) -> str:
                if not archives:
                    return f"No archives in {directory}"
                return table(("CREATED (UTC)", "SIZE", "ASSETS", "INSTALL", "VERIFIED", "ARCHIVE"), rows)

            out.result({"output_dir": str(directory), "output_dirs": [str(d) for d in dirs], "install_id": scope.install_id or None,
                        "archives": [a.to_json() for a in archives]}, human)
            return ExitCode.OK

        run_command(out, body)

    @sub.command("prune", help=PRUNE_HELP)
    def prune_cmd(
        state_dir: StateDirOpt = None,
        output: OutputOpt = None,
        all_installs: AllInstallsOpt = False,
        install: InstallOpt = None,
        include_unscoped: Annotated[bool, typer.Option("--include-unscoped", help="Also prune archives that record no install id.")] = False,
        keep_last: Annotated[int, typer.Option("--keep-last", min=0, help="Keep the N newest archives.")] = 0,
        keep_hourly: Annotated[int, typer.Option("--keep-hourly", min=0, help="Keep the newest archive of each of the N newest hours.")] = 0,
        keep_daily: Annotated[int, typer.Option("--keep-daily", min=0, help="Keep the newest archive of each of the N newest days.")] = 0,
        keep_weekly: Annotated[int, typer.Option("--keep-weekly", min=0, help="... of the N newest ISO weeks.")] = 0,
        keep_monthly: Annotated[int, typer.Option("--keep-monthly", min=0, help="... of the N newest months.")] = 0,
        keep_yearly: Annotated[int, typer.Option("--keep-yearly", min=0, help="... of the N newest years.")] = 0,
        keep_within: Annotated[str | None, typer.Option("--keep-within", help="Keep every archive newer than DURATION (2d, 1y5m7d2h) before the newest.",
                                                        show_default=False)] = None,
        dry_run: DryRunOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
    ) -> None:
        out = Output(json_mode=json_out, quiet=quiet)

        def body() -> ExitCode:
            policy = RetentionPolicy(keep_last, keep_hourly, keep_daily, keep_weekly, keep_monthly, keep_yearly,
                                     Duration.parse(keep_within) if keep_within is not None else None)
            policy.check()
            scope, dirs = _scope(output, state_dir, all_installs, install, include_unscoped)
            directory = dirs[0]
            decisions = prune_archives(directory, dry_run=dry_run, scope=scope, policy=policy, also=tuple(dirs[1:]))
            others = [d for d in decisions if not d.in_scope]
            mine = [d for d in decisions if d.in_scope]

            def human(_d: Any) -> str:
                verb = "would delete" if dry_run else "deleted"
                lines = [
                    f"keep   {d.archive.path.name}  ({', '.join(d.reasons)})" if d.keep else f"{verb}  {d.archive.path.name}"
                    for d in mine
                ]
                kept = sum(d.keep for d in mine)
                lines.append(f"{kept} kept, {len(mine) - kept} {verb}" + (" (dry run; nothing was deleted)" if dry_run else ""))
                if others:
                    lines.append(f"{len(others)} archive(s) of other installs or without an install id left alone")
                return "\n".join(lines)

            out.result({"output_dir": str(directory), "output_dirs": [str(d) for d in dirs], "install_id": scope.install_id or None,
                        "dry_run": dry_run, "archives": [d.to_json() for d in decisions]}, human)
            return ExitCode.OK

        run_command(out, body)

    app.add_typer(sub, name="backup")


# --------------------------------------------------------------------------- an interrupted restore, before any command

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
    out = Output(json_mode="--json" in args, quiet="--quiet" in args or "-q" in args)
    try:
        state = resolve_state_dir(_option_value(args, "--state-dir")).path
    except (OSError, ValueError):
        return
    if not journal_path(state).exists():
        return
    if path in READ_ONLY or "--dry-run" in args:
        line = describe_pending(state) if path != ("inspect",) else None  # inspect reports it as a finding
        if line:
            out.warn(line)
        return
    try:
        recovery = settle_locked(state)
    except BusyError as exc:
        out.error(f"an in-place restore is running on {state} ({exc}); wait for it to finish")
        raise typer.Exit(int(ExitCode.BUSY)) from None
    except (JournalError, StatekitError) as exc:
        out.error(f"{exc}; nothing else was done")
        raise typer.Exit(int(getattr(exc, "exit_code", ExitCode.FATAL))) from None
    except OSError as exc:
        out.error(f"finishing the interrupted restore of {state} failed at {exc.filename or state}: {exc.strerror or exc}; "
                  f"run `statekit backup restore --resume` or `--abort` once the cause is fixed")
        raise typer.Exit(int(ExitCode.FATAL)) from None
    if recovery is not None:
        out.warn(recovery.summary())


class PendingRestoreGroup(TyperGroup):
    """The root command group: settles an interrupted in-place restore (see above) before the command runs."""

    def invoke(self, ctx: Any) -> Any:
        args = [*getattr(ctx, "_protected_args", []), *ctx.args]
        settle_pending_restore(list(args))
        return super().invoke(ctx)
