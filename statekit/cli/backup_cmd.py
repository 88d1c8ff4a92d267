"""``statekit backup create|verify|restore|list|prune``: parse, call :mod:`backup`, render."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any

import typer

from statekit.cli.common import (
    DryRunOpt, JsonOpt, NoProgressOpt, QuietOpt, StateDirOpt, VerboseOpt, YesOpt, confirm_or_refuse, existing_dir, existing_file,
    existing_state_dir, output, run_command,
)
from statekit.errors import ExitCode, UsageError, describe_exit_codes, display_path
from statekit.layout import BACKUP_DIR_ENV, resolve_state_dir
from statekit.output import Output, human_size, table
from statekit.values import datetime_to_iso as iso_utc

if TYPE_CHECKING:
    from statekit.backup.create import BackupResult
    from statekit.backup.encryption import Identities, Recipients
    from statekit.backup.journal import Recovery
    from statekit.backup.restore import RestoreResult
    from statekit.backup.retention import ArchiveInfo, InstallScope
    from statekit.backup.verify import VerifyReport

# The codes each subcommand returns, and what each means there (None: the summary in statekit.errors).
# Each *_HELP below renders its own; EXIT_CODES is their union (what `backup` as a whole can return).
CREATE_EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "archive written and verified",
    ExitCode.FATAL: None,
    ExitCode.USAGE: None,
    ExitCode.WARNINGS: "the archive is written; what was skipped or unreadable is named",
    ExitCode.BUSY: "another backup of that output dir is running",
    ExitCode.VERIFY_FAILED: "a database fails integrity_check or the new archive fails its verify pass; nothing is published",
    ExitCode.INTERRUPTED: None,
}
VERIFY_EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "the archive is intact",
    ExitCode.FATAL: None,
    ExitCode.USAGE: "usage error (or the archive does not exist)",
    ExitCode.VERIFY_FAILED: "the archive is damaged (one line per problem)",
    ExitCode.INTERRUPTED: None,
}
RESTORE_EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "restored (or planned, with --dry-run)",
    ExitCode.FATAL: None,
    ExitCode.USAGE: "usage error (or the archive does not exist)",
    ExitCode.BUSY: None,
    ExitCode.VERIFY_FAILED: "the archive failed verification (nothing was restored)",
    ExitCode.INTERRUPTED: "interrupted (the next command finishes or undoes it)",
}
LIST_EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "listed (also when there is no archive yet)",
    ExitCode.FATAL: None,
    ExitCode.USAGE: "usage error (or --output / the state dir does not exist)",
}
PRUNE_EXIT_CODES: dict[ExitCode, str | None] = {
    ExitCode.OK: "pruned (or planned, with --dry-run)",
    ExitCode.FATAL: None,
    ExitCode.USAGE: "usage error (no --keep-* rule, or --output / the state dir does not exist)",
    ExitCode.BUSY: None,
}
EXIT_CODES: dict[ExitCode, str | None] = {
    code: None for codes in (CREATE_EXIT_CODES, VERIFY_EXIT_CODES, RESTORE_EXIT_CODES, LIST_EXIT_CODES, PRUNE_EXIT_CODES) for code in codes
}

OutputOpt = Annotated[
    Path | None,
    typer.Option("--output", "-o", help=f"Archive directory (default: ${BACKUP_DIR_ENV}, else openclaw-backups/<install id>/ beside the state dir).",
                 show_default=False),
]
LocationOpt = Annotated[
    str | None,
    typer.Option("--output", "-o", help="Archive directory, or s3://bucket/prefix (default: openclaw-backups/ beside the state dir).", show_default=False),
]
AllInstallsOpt = Annotated[bool, typer.Option("--all-installs", help="Every install's archives (in the folder or the bucket prefix), not only this state dir's.")]
InstallOpt = Annotated[str | None, typer.Option("--install", help="The archives of install ID (32 hex digits) instead of this state dir's.",
                                                show_default=False)]
RecipientOpt = Annotated[list[str] | None, typer.Option("--recipient", "-r", help="Encrypt to this age public key (age1...; repeatable): the archive becomes .tar.zst.age.", show_default=False)]
RecipientsFileOpt = Annotated[list[Path] | None, typer.Option("--recipients-file", "-R", help="Encrypt to the age public keys in this file (one a line; repeatable).", show_default=False)]
IdentityOpt = Annotated[Path | None, typer.Option("--identity", "-i", help="age identity file (as age-keygen writes it) for encrypted archives.", show_default=False)]
PassphraseFileOpt = Annotated[Path | None, typer.Option(
    "--passphrase-file",
    help="Passphrase mode: the file holding the passphrase (its one line; default: $STATEKIT_PASSPHRASE_FILE). "
         "Each archive's own age key is wrapped with it in <archive>.key beside the archive.", show_default=False)]
RefusedPassphraseOpt = Annotated[str | None, typer.Option(
    "--passphrase", metavar="NEVER",
    help="Refused (exit 2): a passphrase on the command line shows in ps and the shell history; use --passphrase-file.",
    show_default=False)]
ToOpt = Annotated[str | None, typer.Option("--to", help="Offsite destination s3://bucket/prefix (AWS configuration chain; AWS_ENDPOINT_URL for S3-compatible stores).", show_default=False)]

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

{describe_exit_codes(CREATE_EXIT_CODES)}
"""

VERIFY_HELP = f"""Check an archive in one streaming pass (statekit .tar.zst or OpenClaw .tar.gz).

Prints one line per problem and exits 5 when anything fails.

Example:

\b
    statekit backup verify ~/openclaw-backups/openclaw-backup-20260102T030000Z.tar.zst

{describe_exit_codes(VERIFY_EXIT_CODES)}
"""

RESTORE_HELP = f"""Restore an archive (every byte verified before anything is published) into a fresh --target dir, or in place.

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

{describe_exit_codes(RESTORE_EXIT_CODES)}
"""

LIST_HELP = f"""List this install's archives with time, size, asset count, install and last verify result.

Archives that record no install id (made before archives did) are listed
too, marked "(none)". --all-installs lists every install's; --install ID one
other install's.

Example:

\b
    statekit backup list --output ~/openclaw-backups --all-installs

{describe_exit_codes(LIST_EXIT_CODES)}
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

{describe_exit_codes(PRUNE_EXIT_CODES)}
"""


def _recipients(keys: list[str] | None, files: list[Path] | None) -> Recipients | None:
    from statekit.backup.encryption import load_recipients

    return load_recipients(keys or (), files or ()) if keys or files else None


def _identities(path: Path | None) -> Identities | None:
    from statekit.backup.encryption import load_identities

    return load_identities(path) if path is not None else None


def _refuse_passphrase_value(value: str | None) -> None:
    """``--passphrase VALUE`` exists only to say no: a passphrase on the command line shows in ``ps`` and shell history."""
    if value is not None:
        raise UsageError("--passphrase: a passphrase on the command line shows in `ps` and the shell history; "
                         "put it in a file (chmod 600) and pass --passphrase-file FILE")


def _create_keys(keys: list[str] | None, files: list[Path] | None, passphrase_flag: Path | None) -> Recipients | None:
    """Public keys (``--recipient``/``--recipients-file``), else the passphrase mode (the flag, else the env var)."""
    if passphrase_flag is not None and (keys or files):
        raise UsageError("use either --recipient/--recipients-file or --passphrase-file, not both")
    if keys or files:
        return _recipients(keys, files)
    from statekit.backup.passphrase import passphrase_file, passphrase_recipients

    path = passphrase_file(passphrase_flag)
    return passphrase_recipients(path) if path is not None else None


def _open_keys(archive: str, identity: Path | None, passphrase_flag: Path | None) -> Identities | None:
    """What opens an encrypted archive: ``--identity``, else the passphrase (flag, else env var) and the archive's
    wrapped key (read, and the passphrase file too, only when the archive is encrypted)."""
    if identity is not None and passphrase_flag is not None:
        raise UsageError("use either --identity or --passphrase-file, not both")
    if identity is not None:
        return _identities(identity)
    from statekit.backup.encryption import AGE_SUFFIX, is_encrypted
    from statekit.backup.passphrase import local_identities, passphrase_file, read_passphrase_file, remote_identities

    path = passphrase_file(passphrase_flag)
    if path is None:
        return None
    if _is_remote(archive):
        return remote_identities(archive, read_passphrase_file(path)) if archive.endswith(AGE_SUFFIX) else None
    return local_identities(Path(archive), read_passphrase_file(path)) if is_encrypted(Path(archive)) else None


def _is_remote(location: str | None) -> bool:
    from statekit.backup.locations import is_remote

    return is_remote(location)


def _swap(value: Any, local: str, url: str) -> Any:
    """Show an offsite archive's URL where the local scratch copy's path would appear."""
    if isinstance(value, str):
        return value.replace(local, url)
    if isinstance(value, dict):
        return {k: _swap(v, local, url) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(v, local, url) for v in value]
    return value


def _install_scope(state_dir: Path | None, all_installs: bool) -> str | None:
    if all_installs:
        return None
    from statekit.install import read_install_id

    found = read_install_id(existing_state_dir(state_dir).path)
    if found is None:
        raise UsageError("this state dir has no install id yet (no backup was made from it); pass --all-installs")
    return found


def _list_remote(out: Output, url: str, state_dir: Path | None, all_installs: bool) -> ExitCode:
    from statekit.backup.locations import parse_s3
    from statekit.backup.remote import list_remote, make_client

    install = _install_scope(state_dir, all_installs)
    listing = list_remote(make_client(), parse_s3(url), install, heads=install is not None)
    archives = listing.archives
    rows = [(iso_utc(a.key.created), human_size(a.size), a.key.install_id[:12], "age" if a.key.encrypted else "-",
             a.metadata.get("statekit-assets", "-"), a.key.name) for a in archives]

    def human(_d: Any) -> str:
        lines = [f"No archives in {url}" if not archives else table(("CREATED (UTC)", "SIZE", "INSTALL", "ENC", "ASSETS", "ARCHIVE"), rows)]
        if listing.incomplete:
            lines.append(f"{len(listing.incomplete)} incomplete upload(s) (not archives; `backup prune` aborts stale ones)")
        return "\n".join(lines)

    out.result({"output": url, "install_id": install, "archives": [a.to_json() for a in archives],
                "incomplete_uploads": len(listing.incomplete)}, human)
    return ExitCode.OK


def _prune_remote(out: Output, url: str, state_dir: Path | None, all_installs: bool, dry_run: bool, stale_hours: float,
                  rules: dict[str, Any]) -> ExitCode:
    from statekit.backup.locations import parse_s3
    from statekit.backup.remote import make_client, prune_remote

    install = _install_scope(state_dir, all_installs)
    done = prune_remote(make_client(), parse_s3(url), install, rules, dry_run=dry_run, stale_hours=stale_hours)
    verb = "would delete" if dry_run else "deleted"

    def human(_d: Any) -> str:
        lines = [f"keep   {a.url}  ({', '.join(d.reasons)})" if d.keep else f"{verb}  {a.url}" for a, d in done.decisions]
        lines += [f"{'would abort' if dry_run else 'aborted'} incomplete upload {u}" for u in done.aborted]
        lines += [f"{'would remove' if dry_run else 'removed'} wrapped key without its archive {k}" for k in done.orphan_keys]
        kept = sum(d.keep for _a, d in done.decisions)
        lines.append(f"{kept} kept, {len(done.decisions) - kept} {verb}" + (" (dry run; nothing was deleted)" if dry_run else ""))
        return "\n".join(lines)

    out.result({"output": url, "dry_run": dry_run, "archives": [{**a.to_json(), "keep": d.keep, "reasons": d.reasons} for a, d in done.decisions],
                "aborted_uploads": done.aborted, "orphan_keys": done.orphan_keys}, human)
    return ExitCode.OK


def _scope(output: Path | None, state_dir: Path | None, all_installs: bool, install: str | None,
           include_unscoped: bool) -> tuple[InstallScope, list[Path]]:
    """Which archives ``list``/``prune`` act on, and the dirs they are in (flag > $STATEKIT_BACKUP_DIR > default).

    A state dir without an install id (never backed up) owns no scoped archive: only unscoped ones, and only when
    ``include_unscoped`` (``list`` always passes it)."""
    if all_installs and install is not None:
        raise UsageError("use either --all-installs or --install, not both")
    from statekit.install import is_install_id

    if install is not None and not is_install_id(install):
        raise UsageError(f"--install {install!r}: an install id is 32 lowercase hex digits (see `statekit backup list --all-installs`)")
    from statekit.backup import default_output_dir
    from statekit.backup.create import resolve_output_dir
    from statekit.backup.retention import InstallScope, install_dirs
    from statekit.install import read_install_id

    if output is not None:  # a folder named outright: the state dir, when there is none, owns no scoped archive
        existing_dir(output, "--output")
        state = resolve_state_dir(state_dir).path
        current = install or (read_install_id(state) if state.is_dir() else None)
    else:
        state = existing_state_dir(state_dir).path
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


def render_create(result: BackupResult, wrapped: bool = False) -> str:
    data = result.to_json()
    if result.dry_run:
        assets = result.manifest.get("assets", [])
        lines = [f"Dry run: would write {result.planned_path}", f"Assets: {len(assets)} ({human_size(data['bytes'])})"]
        lines += [f"  {a['kind']:<8} {a['role']:<11} {display_path(a['source_path'])}" for a in assets if a["kind"] != "dir"]
        lines += [f"  skip     {display_path(s['source_path'])} ({s['reason']})" for s in data["skipped"]]
        lines.append("Dry run only; nothing was written.")
        return "\n".join(lines)
    dbs = ", ".join(f"{d['role']}{'/' + d['agent_id'] if d['agent_id'] else ''} v{d['schema_version']}" for d in data["databases"])
    lines = [
        f"Backup archive: {result.archive_path} ({human_size(result.archive_bytes)})",
        f"Assets: {data['assets']} ({human_size(data['bytes'])}); databases: {len(data['databases'])}{' (' + dbs + ')' if dbs else ''}",
        f"Skipped: {len(data['skipped'])} entries (sidecars, locks, sockets, temp files)" if data["skipped"] else "Skipped: none",
        "Verification: passed" if result.verified else "Verification: skipped (--no-verify)",
    ]
    if (key := _wrapped_key(result, wrapped)) is not None:
        lines.append(f"Wrapped key: {key} (keep it with the archive: the passphrase opens it)")
    return "\n".join(lines)


def _wrapped_key(result: BackupResult, wrapped: bool) -> Path | None:
    """The passphrase-wrapped key beside a new archive (``wrapped``: passphrase mode), else None."""
    from statekit.backup.passphrase import key_path

    return key_path(result.archive_path) if wrapped and result.archive_path is not None else None


def create_json(result: BackupResult, wrapped: bool = False) -> dict[str, Any]:
    key = _wrapped_key(result, wrapped)
    return {**result.to_json(), "key_file": str(key) if key is not None else None}


def render_verify(report: VerifyReport) -> str:
    data = report.to_json()
    lines = [
        f"Backup archive {'OK' if report.ok else 'FAILED'}: {report.path} ({report.format})",
        f"Created at: {data['created_at'] or '-'}",
        f"Assets verified: {report.assets_verified} of {data['assets']}; members scanned: {report.entries}",
    ]
    lines += [f"note: {display_path(n)}" for n in report.notes]
    return "\n".join(lines)


def restore_summary(result: RestoreResult) -> list[tuple[str, int, int, int, int]]:
    """Per top-level entry of the destination: (entry, create, replace, unchanged, bytes), in path order."""
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for step in result.steps:
        try:
            rel = PurePosixPath(step.destination.relative_to(result.destination).as_posix())
            top = rel.parts[0] + ("/" if len(rel.parts) > 1 or step.kind == "dir" else "") if rel.parts else "./"
        except ValueError:  # outside the state dir (an OpenClaw workspace restored beside it)
            top = str(step.destination)
        counts = rows[top]
        counts[("create", "replace", "unchanged").index(str(step.action))] += 1
        counts[3] += step.size
    return [(top, *values) for top, values in sorted(rows.items())]  # type: ignore[misc]


def render_restore(result: RestoreResult, verbose: bool = False) -> str:
    counts = result.counts()
    head = "Dry run: restore plan" if result.dry_run else "Restored"
    lines = [f"{head} ({result.mode}) from {result.archive} into {result.destination}"]
    if result.recovered is not None:
        lines.append(f"First {result.recovered.summary()}")
    if result.dry_run and verbose:
        lines += [f"  {s.action:<9} {display_path(s.archive_path)} -> {display_path(str(s.destination))}"
                  + (f" (external {s.external_root})" if s.external_root else "") for s in result.steps]
    elif result.dry_run:
        rows = [(display_path(top), create, replace, unchanged, human_size(size)) for top, create, replace, unchanged, size in restore_summary(result)]
        lines += ["", table(("ENTRY", "CREATE", "REPLACE", "UNCHANGED", "SIZE"), rows), "",
                  "(per top-level entry; --verbose or --json lists every file)"]
    if result.dry_run:
        lines += [f"  external  {display_path(x['archive_path'])} (recorded at {display_path(x['recorded_path'])}): "
                  "not restored without --restore-external" for x in result.external_left_out]
    lines.append(f"{counts['create']} create, {counts['replace']} replace, {counts['unchanged']} unchanged")
    if result.pre_restore_dir:
        lines.append(f"Previous files moved to {result.pre_restore_dir}")
    if result.removed_sidecars:
        lines.append(f"Removed {len(result.removed_sidecars)} stale -wal/-shm/-journal sidecars")
    lines += [f"note: {display_path(n)}" for n in result.notes if not (result.recovered and n == result.recovered.summary())]
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
        output_dir: OutputOpt = None,
        include_workspaces: Annotated[bool, typer.Option("--include-workspaces", help="Also archive workspaces outside the state dir.")] = False,
        level: Annotated[int | None, typer.Option("--level", min=1, max=22, help="Compression level: zstd 1-22 (default 3); gzip 1-9 with --format openclaw (default 6).", show_default=False)] = None,
        fmt: Annotated[str, typer.Option("--format", help="statekit (.tar.zst, the default) or openclaw (.tar.gz that OpenClaw 2026.9.6 restores).")] = "statekit",
        no_verify: Annotated[bool, typer.Option("--no-verify", help="Skip the verify pass (snapshot checks still run).")] = False,
        recipient: RecipientOpt = None,
        recipients_file: RecipientsFileOpt = None,
        passphrase_file: PassphraseFileOpt = None,
        passphrase: RefusedPassphraseOpt = None,
        to: ToOpt = None,
        wait: Annotated[float, typer.Option("--wait", min=0, help="While a migrate or in-place restore runs on the state dir, wait up to SECONDS for it (default: refuse at once, exit 4).")] = 0.0,
        dry_run: DryRunOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        no_progress: NoProgressOpt = False,
    ) -> None:
        out = output(json_out, quiet, no_progress)

        def body() -> ExitCode:
            from statekit.backup import create_backup

            resolved = existing_state_dir(state_dir)
            if fmt not in ("statekit", "openclaw"):
                raise UsageError(f"--format must be statekit or openclaw, not {fmt!r}")
            _refuse_passphrase_value(passphrase)
            keys = _create_keys(recipient, recipients_file, passphrase_file)
            from statekit.backup.encryption import wraps_keys
            from statekit.backup.passphrase import PassphraseRecipients

            wrapped = keys is not None and wraps_keys(keys)
            if to is not None and output_dir is not None:
                raise UsageError("use either --output DIR or --to s3://bucket/prefix, not both")
            with out.progress() as progress:
                options: dict[str, Any] = dict(include_workspaces=include_workspaces, verify=not no_verify, dry_run=dry_run,
                                               level=level if level is not None else (6 if fmt == "openclaw" else 3),
                                               progress=progress, fmt=fmt, recipients=keys, lock_wait=wait)
                if to is not None:
                    from statekit.backup.locations import parse_s3
                    from statekit.backup.remote import create_remote

                    sent = create_remote(resolved.path, parse_s3(to), **options)
                    result, local = sent.result, sent.result.archive_path or sent.result.planned_path
                    out.result(_swap(create_json(result, wrapped), str(local), sent.url),
                               lambda _d: _swap(render_create(result, wrapped), str(local), sent.url))
                else:
                    result = create_backup(resolved.path, output_dir, **options)
                    out.result(create_json(result, wrapped), lambda _d: render_create(result, wrapped))
            for note in result.notes:  # left out by design (OpenClaw's runtime locks): printed, not a warning
                out.note(note)
            if wrapped and isinstance(keys, PassphraseRecipients) and (weak := keys.weak_work_note()):
                out.note(weak)
            for warning in result.warnings:  # shown under --quiet too: cron mails them
                out.warn(warning)
            return ExitCode.WARNINGS if result.warnings else ExitCode.OK

        run_command(out, body)

    @sub.command("verify", help=VERIFY_HELP)
    def verify_cmd(
        archive: Annotated[str, typer.Argument(help="The archive to check (a path or s3://bucket/key).")],
        identity: IdentityOpt = None,
        passphrase_file: PassphraseFileOpt = None,
        passphrase: RefusedPassphraseOpt = None,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        no_progress: NoProgressOpt = False,
    ) -> None:
        out = output(json_out, quiet, no_progress)

        def body() -> ExitCode:
            from statekit.backup import verify_archive
            from statekit.backup.retention import record_verify_result

            _refuse_passphrase_value(passphrase)
            keys = _open_keys(archive, identity, passphrase_file)
            if _is_remote(archive):
                from statekit.backup.remote import verify_remote

                report = verify_remote(archive, keys)
                shown = str(report.path)
                out.result(_swap(report.to_json(), shown, archive), lambda _d: _swap(render_verify(report), shown, archive))
            else:
                path = existing_file(Path(archive), "archive")
                with out.progress() as progress:
                    report = verify_archive(path, progress=progress, identities=keys)
                try:
                    record_verify_result(path, report.ok, report.problems, iso_utc(datetime.now(timezone.utc)))
                except OSError:
                    pass
                out.result(report.to_json(), lambda _d: render_verify(report))
            if not report.ok:
                if not json_out:
                    for problem in report.problems:
                        out.error(display_path(problem))
                return ExitCode.VERIFY_FAILED
            return ExitCode.OK

        run_command(out, body)

    @sub.command("restore", help=RESTORE_HELP)
    def restore_cmd(
        archive: Annotated[str | None, typer.Argument(help="The archive to restore: a path or s3://bucket/key (not with --resume/--abort).", show_default=False)] = None,
        identity: IdentityOpt = None,
        passphrase_file: PassphraseFileOpt = None,
        passphrase: RefusedPassphraseOpt = None,
        target: Annotated[Path | None, typer.Option("--target", help="A missing or empty dir to rebuild the state dir in.", show_default=False)] = None,
        state_dir: StateDirOpt = None,
        resume: Annotated[bool, typer.Option("--resume", help="Finish the interrupted in-place restore of the state dir.")] = False,
        abort: Annotated[bool, typer.Option("--abort", help="Undo the interrupted in-place restore of the state dir.")] = False,
        restore_external: Annotated[bool, typer.Option("--restore-external", help="In place: also restore the config, credentials, agent dirs and workspaces the archive recorded outside the state dir (to --config-path / --credentials-dir, else the active paths).")] = False,
        config_path: Annotated[Path | None, typer.Option("--config-path", help="With --restore-external: where an external config goes.", show_default=False)] = None,
        credentials_dir: Annotated[Path | None, typer.Option("--credentials-dir", help="With --restore-external: where an external credentials dir goes.", show_default=False)] = None,
        dry_run: DryRunOpt = False,
        verbose: VerboseOpt = False,
        yes: YesOpt = False,
        json_out: JsonOpt = False,
        quiet: QuietOpt = False,
        no_progress: NoProgressOpt = False,
    ) -> None:
        out = output(json_out, quiet, no_progress)

        def settle_body() -> ExitCode:
            from statekit.backup.journal import journal_path
            from statekit.backup.restore import abort_restore, resume_restore

            if resume and abort:
                raise UsageError("use either --resume or --abort, not both")
            if archive is not None or target is not None or dry_run:
                raise UsageError("--resume/--abort take no ARCHIVE, --target or --dry-run: the restore journal names them")
            state = existing_state_dir(state_dir).path
            if journal_path(state).exists():
                confirm_or_refuse(out, f"{'Finish' if resume else 'Undo'} the interrupted restore in {state}?", yes)
            restored = None
            if resume:
                with out.progress() as progress:
                    recovery, restored = resume_restore(state, progress=progress,
                                                        keys_for=lambda origin: _open_keys(origin, identity, passphrase_file))
            else:
                recovery = abort_restore(state)
            data = {"ok": True, "state_dir": str(state), "pending": recovery is not None,
                    "recovered": recovery.to_json() if recovery else None, "restore": restored.to_json() if restored else None}
            out.result(data, lambda _d: render_recovery(state, recovery, restored))
            return ExitCode.OK

        def body() -> ExitCode:
            from statekit.backup import restore_archive

            _refuse_passphrase_value(passphrase)
            if resume or abort:
                return settle_body()
            if archive is None:
                raise UsageError("missing ARCHIVE (or --resume / --abort for an interrupted restore)")
            if not _is_remote(archive):
                existing_file(Path(archive), "archive")
            if state_dir is not None and target is None:
                existing_state_dir(state_dir)
            if not dry_run:
                where = target if target is not None else resolve_state_dir(state_dir).path
                confirm_or_refuse(out, f"Restore {archive} into {where}?", yes)
            keys = _open_keys(archive, identity, passphrase_file)
            with out.progress() as progress:
                options: dict[str, Any] = dict(target=target, state_dir=state_dir, dry_run=dry_run, progress=progress,
                                               restore_external=restore_external, config_path=config_path, credentials_dir=credentials_dir)
                if _is_remote(archive):
                    from statekit.backup.remote import restore_remote

                    result = restore_remote(archive, keys, **options)
                    shown = str(result.archive)
                    out.result(_swap(result.to_json(), shown, archive), lambda _d: _swap(render_restore(result, verbose), shown, archive))
                    return ExitCode.OK
                result = restore_archive(Path(archive), identities=keys, **options)
            out.result(result.to_json(), lambda _d: render_restore(result, verbose))
            return ExitCode.OK

        run_command(out, body)

    @sub.command("list", help=LIST_HELP)
    def list_cmd(state_dir: StateDirOpt = None, output_dir: LocationOpt = None, all_installs: AllInstallsOpt = False, install: InstallOpt = None,
                 json_out: JsonOpt = False, quiet: QuietOpt = False) -> None:
        out = output(json_out, quiet)

        def body() -> ExitCode:
            from statekit.backup.retention import list_archives

            if _is_remote(output_dir):
                return _list_remote(out, str(output_dir), state_dir, all_installs)
            scope, dirs = _scope(Path(output_dir) if output_dir else None, state_dir, all_installs, install, True)
            if not scope.install_id:  # no current install (no state dir, or never backed up): nothing to tell apart, show all
                from statekit.backup.retention import ALL_INSTALLS

                scope = ALL_INSTALLS
            directory = dirs[0]
            archives = [a for a in list_archives(*dirs) if scope.covers(a)]
            rows = [(iso_utc(a.created), human_size(a.size), a.assets if a.assets is not None else "-", _install_text(a),
                     _verified_text(a.verified), a.path.name) for a in archives]

            def human(_d: Any) -> str:
                if not archives:
                    return f"No archives in {directory}"
                return table(("CREATED (UTC)", "SIZE", "ASSETS", "INSTALL", "VERIFIED", "ARCHIVE"), rows, whole=("CREATED (UTC)", "SIZE", "ARCHIVE"))

            out.result({"output_dir": str(directory), "output_dirs": [str(d) for d in dirs], "install_id": scope.install_id or None,
                        "archives": [a.to_json() for a in archives]}, human)
            return ExitCode.OK

        run_command(out, body)

    @sub.command("prune", help=PRUNE_HELP)
    def prune_cmd(
        state_dir: StateDirOpt = None,
        output_dir: LocationOpt = None,
        all_installs: AllInstallsOpt = False,
        stale_upload_hours: Annotated[float, typer.Option("--stale-upload-hours", min=0, help="s3://: abort incomplete uploads started more than this many hours ago.")] = 24.0,
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
        out = output(json_out, quiet)

        def body() -> ExitCode:
            from statekit.backup.retention import Duration, RetentionPolicy, prune_archives

            policy = RetentionPolicy(keep_last, keep_hourly, keep_daily, keep_weekly, keep_monthly, keep_yearly,
                                     Duration.parse(keep_within) if keep_within is not None else None)
            policy.check()
            if _is_remote(output_dir):
                if install is not None or include_unscoped:
                    raise UsageError("--install and --include-unscoped are for local archive folders; s3:// prunes this install or --all-installs")
                rules: dict[str, Any] = {name: getattr(policy, name) for name in policy.__dataclass_fields__}
                return _prune_remote(out, str(output_dir), state_dir, all_installs, dry_run, stale_upload_hours, rules)
            scope, dirs = _scope(Path(output_dir) if output_dir else None, state_dir, all_installs, install, include_unscoped)
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
