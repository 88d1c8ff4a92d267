"""``backup create``: plan, stage (snapshots + hashes), write, verify, publish, record.

1. Plan the assets (:mod:`backup.assets`); refuse an output inside them.
2. Under the output-dir lock, in a private 0700 staging dir on the output
   filesystem: ``VACUUM INTO`` every SQLite database (in a background thread)
   and check each snapshot, while every other file streams once into a temp
   payload ``.tar.zst``, hashed as it is read. A file that changes while it
   is read is re-read once as a private copy (the payload is written again),
   then reported if it moved again.
3. Write ``<name>.partial``: a zstd frame holding the manifest member, then
   the payload frames (tar members and zstd frames both concatenate), so the
   manifest is the first member and describes exactly the bytes that follow.
4. fsync, verify the ``.partial`` (unless ``verify=False``), publish it under
   its final name without ever replacing a file, fsync the directory.
5. Record a ``backup_runs`` row when the global DB exists: written *before*
   the snapshots (status ``ok``), so the archive carries its own record and a
   restore matches the live database row for row; replaced by a ``failed``
   row when anything goes wrong.
A failed run leaves no ``.partial`` and no final archive behind.
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import os
import shutil
import tempfile
import time
import uuid
from contextlib import contextmanager
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from statekit.backup import manifest as mf
from statekit.backup import openclaw_format as ocf
from statekit.backup.archive import END_OF_ARCHIVE, ArchiveWriter, MemberFile, member_bytes, write_all, write_joined, write_payload_then_tail
from statekit.backup.encryption import AGE_SUFFIX, Recipients, encrypt_file
from statekit.backup.passphrase import key_path, remove_orphan_keys
from statekit.backup.assets import AssetPlan, Entry, Root, completeness_problems, noted_skip, plan_assets, quiet_skip
from statekit.backup.lock import backup_lock
from statekit.backup.manifest import Asset, Manifest, Skipped
from statekit.errors import display_path
from statekit.backup.runs import mark_interrupted, record_in_state_dir
from statekit.backup.snapshot import DbFacts, snapshot_db
from statekit.backup.statekit_format import Written
from statekit.backup.verify import VerifyReport, verify_archive
from statekit.errors import BusyError, ExitCode, StateDirError, StatekitError, UsageError, VerificationError
from statekit.progress import start_phase
from statekit.seams import checkpoint
from statekit.fsutil import CHUNK, PRIVATE_FILE_MODE, atomic_write_bytes, create_file, fsync_dir, open_regular_file, remove_orphaned_temps, shared_mode
from statekit.layout import BACKUP_DIR_ENV, canonical_state_dir, lock_path
from statekit.locking import exclusive_lock
from statekit.install import ensure_install_id, read_install_id
from statekit.states import BackupRunStatus

DEFAULT_OUTPUT_NAME = "openclaw-backups"
STAGING_PREFIX = ".statekit-backup-"
PARTIAL_SUFFIX = ".partial"
SIDECAR_SUFFIX = ".verify.json"
MAX_WRITE_ATTEMPTS = 3
FORMATS = ("statekit", "openclaw")

Progress = Callable[[int], None]


@dataclass
class BackupResult:
    archive_path: Path | None
    manifest: dict[str, Any]
    verified: bool
    warnings: list[str]
    run_id: str
    planned_path: Path | None = None
    archive_bytes: int | None = None
    dry_run: bool = False
    verify_report: VerifyReport | None = None
    format: str = "statekit"
    openclaw_manifest: dict[str, Any] | None = None  # --format openclaw: the manifest.json OpenClaw reads
    notes: list[str] = field(default_factory=list)  # printed, not warnings: what was left out by design

    def to_json(self) -> dict[str, Any]:
        totals = self.manifest.get("totals") or {}
        databases = [
            {k: a.get(k) for k in ("source_path", "role", "agent_id", "schema_version", "size")}
            for a in self.manifest.get("assets", [])
            if a.get("kind") == "sqlite"
        ]
        return {
            "ok": True,
            "dry_run": self.dry_run,
            "format": self.format,
            "archive": str(self.archive_path) if self.archive_path else None,
            "planned_archive": str(self.planned_path) if self.planned_path else None,
            "run_id": self.run_id,
            "verified": self.verified,
            "archive_bytes": self.archive_bytes,
            "assets": totals.get("assets"),
            "bytes": totals.get("bytes"),
            "databases": databases,
            "skipped": self.manifest.get("skipped", []),
            "warnings": self.warnings,
        }


@dataclass(slots=True)
class _Item:
    """One asset and where its bytes come from while the archive is written (slots: one per file)."""

    asset: Asset  # its source path and kind are the entry's
    root: Root
    staged: Path | None = None  # a private copy or a snapshot to archive instead of the original
    facts: DbFacts | None = None  # a snapshot's integrity_check and identity, taken on the bytes archived

    @property
    def path(self) -> Path:
        return Path(self.asset.source_path)


class _SourceChanged(Exception):
    def __init__(self, item: _Item) -> None:
        super().__init__(item.asset.source_path)
        self.item = item


@dataclass(frozen=True)
class _Layout:
    """Where entries go in the archive: statekit's ``<root>/payload/state|external/...`` or OpenClaw's
    ``<root>/payload/posix/<absolute source path>``."""

    fmt: str
    root: str

    def archive_path(self, entry: Entry) -> str:
        if self.fmt == "openclaw":
            return ocf.archive_path_for(self.root, entry.path)
        return entry.archive_path(self.root)


@dataclass
class _Context:
    staging: Path
    layout: _Layout = _Layout("statekit", "")
    warnings: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    gone: list[_Item] = field(default_factory=list)
    counter: Iterator[int] = field(default_factory=itertools.count)
    plan: AssetPlan | None = None
    env: Mapping[str, str] | None = None
    openclaw_manifest: dict[str, Any] | None = None
    registry: list[tuple[str, str]] = field(default_factory=list)  # agent databases the global one registers
    written: dict[str, Written] = field(default_factory=dict)  # archive path -> what was established as it was written

    def scratch_name(self, prefix: str) -> Path:
        return self.staging / f"{prefix}-{next(self.counter)}"  # next() on a count is atomic under the GIL


def default_output_dir(state_dir: Path, install_id: str | None = None) -> Path:
    """``openclaw-backups/<install id>/`` beside the state dir (``~/openclaw-backups/<id>/`` for ``~/.openclaw``): one
    folder per install, so installs under one parent never share one; ``openclaw-backups/`` itself without an id."""
    base = state_dir.parent / DEFAULT_OUTPUT_NAME
    return base / install_id if install_id else base


def resolve_output_dir(output: Path | None, state_dir: Path, install_id: str | None, env: Mapping[str, str] | None = None) -> Path:
    """Where archives go: ``output`` (the flag), else ``$STATEKIT_BACKUP_DIR``, else :func:`default_output_dir`."""
    if output is not None:
        return Path(os.path.abspath(output))
    value = ((os.environ if env is None else env).get(BACKUP_DIR_ENV) or "").strip()
    if value:
        return Path(os.path.abspath(os.path.expanduser(value)))
    return default_output_dir(state_dir, install_id)


def backup_install_id(state_dir: Path, *, create: bool, warnings: list[str]) -> str | None:
    """The install id the archive records (created on the first real backup; never by a dry run)."""
    try:
        return ensure_install_id(state_dir) if create else read_install_id(state_dir)
    except (StatekitError, OSError) as exc:
        warnings.append(f"{state_dir}: no install id for this backup ({exc}); the archive is not scoped to an install")
        return None


def sidecar_path(archive: Path) -> Path:
    return archive.with_name(archive.name + SIDECAR_SUFFIX)


def _signature(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _copy_private(path: Path, copy_to: Path) -> tuple[int, os.stat_result, bool]:
    """Copy ``path`` to a new private file (hashed later, as it is archived); True when the source changed meanwhile."""
    size = 0
    with open_regular_file(path) as handle:
        before = os.fstat(handle.fileno())
        out = create_file(copy_to, PRIVATE_FILE_MODE)
        try:
            for block in iter(lambda: handle.read(CHUNK), b""):
                size += len(block)
                write_all(out, block)
        finally:
            os.close(out)
        after = os.fstat(handle.fileno())
    changed = _signature(before) != _signature(after) or size != after.st_size
    return size, after, changed


def _items(plan: AssetPlan, layout: _Layout) -> list[_Item]:
    """One item per planned entry, taking the entries out of the plan as it goes: an entry is not held beside its asset."""
    entries, plan.entries = plan.entries, []
    entries.reverse()
    items = []
    while entries:
        entry = entries.pop()
        items.append(_Item(_base_asset(entry, layout), entry.root))
    return items


def _base_asset(entry: Entry, layout: _Layout) -> Asset:
    return Asset(
        id=entry.asset_id,
        kind=entry.kind,
        role=entry.role,
        source_path=entry.path,
        archive_path=layout.archive_path(entry),
        mode=entry.mode,
        mtime=entry.mtime,
        agent_id=entry.agent_id,
        link_target=entry.link_target,
        link_scope=entry.link_scope,
    )


def _stage_copy(item: _Item, ctx: _Context) -> None:
    """Re-read a file as a private copy (the copy is what gets archived); report if it still moved."""
    dest = ctx.scratch_name("file")
    size, st, changed = _copy_private(item.path, dest)
    if changed:
        ctx.warnings.append(f"{item.asset.source_path}: changed while being copied (read twice); archived the bytes of the second read")
    item.asset.size = size
    item.asset.mode, item.asset.mtime = shared_mode(st.st_mode & 0o7777), st.st_mtime
    item.staged = dest


def _stage_sqlite(item: _Item, ctx: _Context) -> None:
    snap = snapshot_db(item.path, ctx.scratch_name("db").with_suffix(".sqlite"))
    asset, facts = item.asset, snap.facts
    if facts.meta_role in ("global", "agent"):
        asset.role = facts.meta_role
    elif facts.meta_role is not None:
        asset.role = "sqlite"
    asset.agent_id = facts.meta_agent_id or (asset.agent_id if asset.role == "agent" else None)
    asset.schema_version = facts.user_version
    asset.size = snap.size  # its SHA-256 is taken as it streams into the archive (_add_file): one hash per byte
    item.staged = snap.path
    item.facts = facts
    ctx.registry.extend(facts.registry)


def _start_snapshots(items: list[_Item], ctx: _Context, pool: ThreadPoolExecutor) -> dict[int, Future[None]]:
    """Snapshot every database in the background while the files stream (VACUUM releases the GIL)."""
    return {id(item): pool.submit(_stage_sqlite, item, ctx) for item in items if item.asset.kind == "sqlite"}


def _add_file(writer: ArchiveWriter, item: _Item) -> None:
    """Stream one file, hashing exactly the bytes archived; a file that moves meanwhile raises _SourceChanged."""
    asset = item.asset
    if item.staged is not None:  # private and stable (a snapshot or a copy): hashed as it is archived
        with open(item.staged, "rb") as handle:
            asset.sha256 = writer.add_stream(asset.archive_path, handle, asset.size, mode=asset.mode, mtime=asset.mtime)
        return
    with open_regular_file(item.path) as handle:
        before = os.fstat(handle.fileno())
        asset.size, asset.mode, asset.mtime = before.st_size, shared_mode(before.st_mode & 0o7777), before.st_mtime
        try:
            asset.sha256 = writer.add_stream(asset.archive_path, handle, asset.size, mode=asset.mode, mtime=asset.mtime)
        except OSError as exc:
            if exc.errno is None:  # tarfile: "unexpected end of data" (the file shrank)
                raise _SourceChanged(item) from None
            raise
        if _signature(os.fstat(handle.fileno())) != _signature(before):
            raise _SourceChanged(item)


def _add_item(writer: ArchiveWriter, item: _Item, fmt: str = "statekit") -> None:
    asset = item.asset
    if asset.kind == "dir":
        writer.add_dir(asset.archive_path, mode=asset.mode, mtime=asset.mtime)
    elif asset.kind == "symlink" and (asset.link_scope == "internal" or fmt == "openclaw"):
        writer.add_symlink(asset.archive_path, asset.link_target or "", mtime=asset.mtime)
    elif asset.kind == "symlink":
        writer.add_bytes(asset.archive_path, _link_text(asset), mode=PRIVATE_FILE_MODE, mtime=asset.mtime)
    else:
        _add_file(writer, item)


def _link_text(asset: Asset) -> bytes:
    return (asset.link_target or "").encode("utf-8", "surrogateescape")


def _write_payload(
    path: Path, items: list[_Item], snapshots: dict[int, Future[None]], ctx: _Context, level: int, progress: Progress | None
) -> Any:
    """Everything but the manifest, into a temp ``.tar.zst`` (``.tar.gz``): files as they are read, databases last.

    Returns the SHA-256 object of the payload file's bytes (for the archive digest trailer)."""
    fmt = ctx.layout.fmt
    writer = ArchiveWriter(path, level=level, progress=progress, compression="gzip" if fmt == "openclaw" else "zstd")
    try:
        for item in [i for i in items if i.asset.kind != "sqlite"]:
            try:
                _add_item(writer, item, fmt)
                checkpoint("backup-member-added")
            except FileNotFoundError:
                ctx.gone.append(item)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, 0, None):  # replaced by a link or special file meanwhile
                    raise
                ctx.gone.append(item)
        for item in [i for i in items if i.asset.kind == "sqlite"]:
            try:
                snapshots[id(item)].result()
            except FileNotFoundError:
                ctx.gone.append(item)
                continue
            _add_item(writer, item, fmt)
            checkpoint("backup-member-added")
        writer.finish(durable=False, end_of_archive=fmt != "openclaw")
    except BaseException:
        writer.abort()
        raise
    return writer.sink.digest


def _write_archive(
    partial: Path, archive_root: str, manifest: Manifest, items: list[_Item], ctx: _Context, level: int, progress: Progress | None
) -> dict[str, Any]:
    """Stream the payload (hashing as it goes), then write manifest + payload as ``partial``.

    A file that changes while it is read is re-read once as a private copy and
    the payload is written again (at most 3 times); the copy is what gets archived.
    """
    for item in items:
        if item.asset.kind == "symlink":
            text = _link_text(item.asset)
            item.asset.size, item.asset.sha256 = len(text), hashlib.sha256(text).hexdigest()
    payload = ctx.staging / ("payload.tar.gz" if ctx.layout.fmt == "openclaw" else "payload.tar.zst")
    with ThreadPoolExecutor(max_workers=1) as pool:
        snapshots = _start_snapshots(items, ctx, pool)
        try:
            for attempt in range(1, MAX_WRITE_ATTEMPTS + 1):
                payload.unlink(missing_ok=True)
                ctx.gone.clear()
                try:
                    payload_sha256 = _write_payload(payload, items, snapshots, ctx, level, progress)
                    break
                except _SourceChanged as changed:
                    if attempt == MAX_WRITE_ATTEMPTS:
                        raise StatekitError(
                            f"{changed.item.asset.source_path}: files keep changing while the archive is written "
                            f"({MAX_WRITE_ATTEMPTS} attempts); stop the writer or retry"
                        ) from None
                    try:
                        _stage_copy(changed.item, ctx)
                    except OSError:
                        items.remove(changed.item)
                        ctx.skipped.append(Skipped(changed.item.asset.source_path, "vanished or changed type during the backup"))
        finally:
            for future in snapshots.values():
                future.cancel()
    gone = {id(i) for i in ctx.gone}
    kept = [i for i in items if id(i) not in gone]
    manifest.assets = [i.asset for i in kept]
    ctx.written = {i.asset.archive_path: Written(i.asset.sha256, i.facts, i.asset) for i in kept
                   if i.asset.kind in ("file", "sqlite") and i.asset.sha256 is not None and (i.asset.kind != "sqlite" or i.facts is not None)}
    manifest.skipped = ctx.skipped + [Skipped(i.asset.source_path, "vanished or changed type during the backup") for i in ctx.gone]
    used_roots = [r for r in ctx.plan.roots if any(i.root is r for i in kept)] if ctx.plan is not None else []
    del items[:], kept  # the manifest holds the assets now
    try:
        if ctx.layout.fmt == "openclaw":
            assert ctx.plan is not None
            ctx.openclaw_manifest = ocf.build_manifest_of(manifest, used_roots, ctx.plan, ctx.layout.root, ctx.env)
            head_bytes = ocf.encode_document(ctx.openclaw_manifest)
            after = {"openclaw_manifest_sha256": hashlib.sha256(head_bytes).hexdigest()}
            spooled = _spool_manifest(manifest, ctx.staging / ocf.DIGESTS_NAME, ocf.DIGESTS_FORMAT, after)
            digests = MemberFile(f"{archive_root}/{ocf.DIGESTS_NAME}", spooled, mode=PRIVATE_FILE_MODE,
                                 mtime=manifest.created_at.timestamp())
            head = member_bytes(f"{archive_root}/{ocf.MANIFEST_NAME}", head_bytes, mode=0o644, mtime=manifest.created_at.timestamp())
            write_payload_then_tail(partial, payload, digests, head + END_OF_ARCHIVE, level=level, payload_hash=payload_sha256)
            spooled.unlink()
            data = {**manifest.summary_json(), "format": ocf.DIGESTS_FORMAT, **after}
        else:
            spooled = _spool_manifest(manifest, ctx.staging / mf.MANIFEST_NAME)
            member = MemberFile(f"{archive_root}/{mf.MANIFEST_NAME}", spooled, mode=PRIVATE_FILE_MODE,
                                mtime=manifest.created_at.timestamp())
            write_joined(partial, member, payload, level=level, payload_sha256=payload_sha256.digest())
            spooled.unlink()
            data = manifest.summary_json()
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        payload.unlink(missing_ok=True)
    return data


def _spool_manifest(manifest: Manifest, path: Path, document_format: str = mf.FORMAT, after: dict[str, str] | None = None) -> Path:
    """Write the manifest's JSON into a private file of the staging dir, one asset at a time (its text is never
    held whole: 48 MB for 100,000 files); ``document_format`` and ``after``: see :meth:`Manifest.encoded`."""
    with os.fdopen(create_file(path, PRIVATE_FILE_MODE), "wb", buffering=CHUNK) as out:
        for piece in manifest.encoded(document_format, after):
            out.write(piece)
    return path


def _publish(partial: Path, final: Path) -> None:
    """Give ``partial`` its final name without ever replacing an existing file."""
    try:
        os.link(partial, final)
    except FileExistsError:
        raise StatekitError(f"refusing to overwrite existing backup archive {final}") from None
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.EACCES):
            raise
        if final.exists():  # file systems without hard links: check, then rename
            raise StatekitError(f"refusing to overwrite existing backup archive {final}") from None
        os.rename(partial, final)
        return
    checkpoint("backup-linked")
    _drop_partial(partial)


def _drop_partial(partial: Path) -> None:
    """Remove the ``.partial`` name; failing that, the next run's cleanup does (never fails a finished archive)."""
    try:
        partial.unlink(missing_ok=True)
    except OSError:
        pass


def _cleanup_stale(output_dir: Path) -> list[str]:
    """Remove what a killed earlier run left (we hold the lock, so nobody else is writing); returns those runs' ids."""
    interrupted = []
    for path in output_dir.iterdir():
        if path.name.startswith(STAGING_PREFIX) and path.is_dir() and not path.is_symlink():
            run_id = path.name[len(STAGING_PREFIX) :].split("-", 1)[0]
            if len(run_id) == 32:
                interrupted.append(run_id)
            shutil.rmtree(path, ignore_errors=True)
        elif path.name.endswith(PARTIAL_SUFFIX) and path.is_file() and (
            path.name.startswith(mf.ARCHIVE_PREFIX) or path.name.endswith(f"{ocf.ROOT_SUFFIX}{ocf.ARCHIVE_SUFFIX}{PARTIAL_SUFFIX}")
        ):
            path.unlink(missing_ok=True)
    remove_orphaned_temps(output_dir)  # a ``.verify.json`` being written when the run was killed
    remove_orphan_keys(output_dir)  # a wrapped key whose archive was never published (passphrase mode)
    return interrupted


def write_sidecar(archive: Path, report: VerifyReport | None, manifest: dict[str, Any]) -> None:
    """``<archive>.verify.json``: the last verify result and the counts ``backup list`` shows."""
    totals = manifest.get("totals") or {}
    data = {
        "archive": archive.name,
        "created_at": manifest.get("created_at"),
        "assets": totals.get("assets"),
        "bytes": totals.get("bytes"),
        "install_id": manifest.get("install_id"),
        "verified": None if report is None else report.ok,
        "checked_at": mf.iso_utc(datetime.now(timezone.utc)) if report is not None else None,
        "problems": [] if report is None else report.problems[:20],
    }
    atomic_write_bytes(sidecar_path(archive), (json.dumps(data, indent=1) + "\n").encode("utf-8"))


def skip_warnings(skipped: list[Skipped]) -> list[str]:
    """One line for every skipped entry that is not statekit's own file, a sidecar of a snapshotted database or a skip
    made by design (those are :func:`skip_notes`)."""
    return [f"{display_path(s.source_path)}: not backed up ({s.reason})" for s in skipped
            if not quiet_skip(s.reason) and not noted_skip(s.reason)]


def skip_notes(skipped: list[Skipped]) -> list[str]:
    """One line for every entry left out by design (OpenClaw's runtime locks): printed, never a warning."""
    return [f"{display_path(s.source_path)}: not backed up ({s.reason})" for s in skipped if noted_skip(s.reason)]


def check_complete(plan: AssetPlan, manifest: Manifest, ctx: _Context) -> None:
    """Refuse to publish an archive that misses a database or the config that exists, or holds no state (exit 5)."""
    problems = completeness_problems(plan.state_dir, manifest.assets, ctx.env, tuple(ctx.registry))
    if problems:
        more = f" (+{len(problems) - 1} more: {'; '.join(display_path(p) for p in problems[1:4])})" if len(problems) > 1 else ""
        raise VerificationError(f"the archive is incomplete, nothing was published: {display_path(problems[0])}{more}")


def _planned_manifest(plan: AssetPlan, now: datetime, options: dict[str, Any], layout: _Layout, install_id: str | None,
                      dry_run: bool) -> dict[str, Any]:
    """The manifest a dry run shows; for a real run only its head and totals (what ``backup_runs`` records before the
    archive is written): the assets are made once, as the archive is written, not a second time here."""
    if not dry_run:
        head = Manifest(now, str(plan.state_dir), options, [], list(plan.skipped), install_id=install_id).summary_json()
        return {**head, "totals": mf.totals_of((e.kind, e.size if e.kind in ("file", "sqlite") else 0) for e in plan.entries)}
    assets = [_base_asset(e, layout) for e in plan.entries]
    for asset, entry in zip(assets, plan.entries):
        asset.size = entry.size if entry.kind in ("file", "sqlite") else 0
    return Manifest(now, str(plan.state_dir), options, assets, list(plan.skipped), install_id=install_id).to_json()


LOCK_POLL_SECONDS = 0.2


@contextmanager
def state_dir_shared_lock(state_dir: Path, wait: float = 0.0) -> Iterator[None]:
    """A shared hold on the state dir's lock (``.statekit/lock``) for the whole backup: a ``migrate``, an in-place
    restore or a ``recover`` (which hold it exclusively) never runs while files are being archived, and a backup
    never starts while one of them runs. Waits up to ``wait`` seconds, then refuses (BusyError, exit 4).

    A state dir where the lock file cannot be created (read-only to us) has no writer that could hold it: the
    backup goes on without it."""
    path = lock_path(state_dir)
    deadline = time.monotonic() + max(wait, 0.0)
    while True:
        try:
            with exclusive_lock(path, f"state dir {state_dir}", shared=True):
                yield
            return
        except BusyError as exc:
            if time.monotonic() >= deadline:
                waited = f" (waited {wait:g} s)" if wait > 0 else ""
                raise BusyError(
                    f"{state_dir}: a migrate, in-place restore or recover is running on this state dir ({exc}){waited}; "
                    "nothing was archived -- back up when it has finished, or give --wait SECONDS"
                ) from None
            time.sleep(min(LOCK_POLL_SECONDS, max(deadline - time.monotonic(), 0.01)))
        except PermissionError:
            if path.exists() and not os.access(path, os.R_OK):
                raise
            yield
            return


def _out_of_space(exc: OSError, where: Path) -> StatekitError:
    return StatekitError(f"{where.parent}: no space left on device while writing the backup; nothing was published")


def create_backup(
    state_dir: Path,
    output_dir: Path | None = None,
    *,
    include_workspaces: bool = False,
    level: int = 3,
    verify: bool = True,
    dry_run: bool = False,
    record: bool = True,
    env: Mapping[str, str] | None = None,
    progress: Progress | None = None,
    fmt: str = "statekit",
    state_lock_held: bool = False,
    lock_wait: float = 0.0,
    recipients: Recipients | None = None,
) -> BackupResult:
    """Create one verified archive of ``state_dir`` (see module doc): ``openclaw-backup-<UTC>.tar.zst``, or with
    ``fmt="openclaw"`` a ``<UTC ms>+00-00-openclaw-backup.tar.gz`` that OpenClaw 2026.9.6 verifies and restores.

    Holds the state dir's lock shared while it plans and archives (:func:`state_dir_shared_lock`, waiting up to
    ``lock_wait`` seconds), unless the caller already holds it exclusively (``state_lock_held``: migrate's
    pre-migration backup)."""
    if dry_run or state_lock_held:
        return _create_backup(state_dir, output_dir, include_workspaces=include_workspaces, level=level, verify=verify,
                              dry_run=dry_run, record=record, env=env, progress=progress, fmt=fmt, recipients=recipients)
    if not Path(state_dir).is_dir():
        raise StateDirError(f"{os.path.abspath(state_dir)}: state dir does not exist or is not a directory")
    with state_dir_shared_lock(canonical_state_dir(Path(state_dir)), lock_wait):
        return _create_backup(state_dir, output_dir, include_workspaces=include_workspaces, level=level, verify=verify,
                              dry_run=dry_run, record=record, env=env, progress=progress, fmt=fmt, recipients=recipients)


def _create_backup(
    state_dir: Path,
    output_dir: Path | None,
    *,
    include_workspaces: bool,
    level: int,
    verify: bool,
    dry_run: bool,
    record: bool,
    env: Mapping[str, str] | None,
    progress: Progress | None,
    fmt: str,
    recipients: Recipients | None,
) -> BackupResult:
    state_dir = canonical_state_dir(state_dir)  # a symlinked state dir is the directory it points to
    if fmt not in FORMATS:
        raise UsageError(f"unknown archive format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not state_dir.is_dir():
        raise StateDirError(f"{state_dir}: state dir does not exist or is not a directory")
    top = 9 if fmt == "openclaw" else 22
    if not 1 <= level <= top:
        raise StatekitError(f"compression level {level} is outside 1..{top} ({'gzip' if fmt == 'openclaw' else 'zstd'})", exit_code=ExitCode.USAGE)
    if recipients is not None and fmt != "statekit":
        raise UsageError("age encryption (--recipient) is for statekit archives, not --format openclaw")
    id_warnings: list[str] = []
    install_id = backup_install_id(state_dir, create=not dry_run, warnings=id_warnings)  # before planning: the archive holds it
    output_dir = resolve_output_dir(output_dir, state_dir, install_id, env)
    now, archive_root, final = _free_archive_name(output_dir, fmt, suffix=AGE_SUFFIX if recipients is not None else "")
    layout = _Layout(fmt, archive_root)
    options = {"include_workspaces": include_workspaces, "level": level, "verify": verify}
    plan = plan_assets(state_dir, output_dir, include_workspaces=include_workspaces, env=env)
    if final.exists():
        raise StatekitError(f"refusing to overwrite existing backup archive {final}")
    run_id = uuid.uuid4().hex
    result = BackupResult(None, _planned_manifest(plan, now, options, layout, install_id, dry_run), False, id_warnings + list(plan.warnings),
                          run_id, final, format=fmt)
    if dry_run:
        result.dry_run = True
        result.warnings.extend(skip_warnings(plan.skipped))
        result.notes.extend(skip_notes(plan.skipped))
        planned = [_base_asset(e, layout) for e in plan.entries]  # no snapshot yet: the registry is not read
        result.warnings.extend(f"the backup would fail: {display_path(p)}" for p in completeness_problems(state_dir, planned, env))
        return result
    try:
        with backup_lock(output_dir):
            interrupted = _cleanup_stale(output_dir)
            if record and interrupted:
                mark_interrupted(state_dir, interrupted)
            # The staging dir (named after the run) exists before the ``ok`` row below: a run killed
            # before publishing leaves it behind, and the next run marks that row ``failed``.
            staging = Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{run_id}-", dir=output_dir))
            try:
                if record:
                    # Recorded before the snapshots are taken, so the archive holds its own
                    # ``backup_runs`` row and a restore matches the live database row for row;
                    # a failure below replaces the row with a ``failed`` one.
                    result.verified = verify
                    warning = record_in_state_dir(state_dir, result, BackupRunStatus.OK)
                    result.verified = False
                    if warning:
                        result.warnings.append(warning)
                    checkpoint("backup-recorded")
                _create_locked(plan, final, layout, now, options, level, verify, progress, result, staging, env, recipients, install_id)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    except BaseException as exc:
        if record:
            note = str(exc) if isinstance(exc, (StatekitError, OSError)) else type(exc).__name__
            result.archive_path = None
            record_in_state_dir(state_dir, result, BackupRunStatus.FAILED, error=note)
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise _out_of_space(exc, final) from None
        raise
    return result


def _free_archive_name(output_dir: Path, fmt: str = "statekit", attempts: int = 3, suffix: str = "") -> tuple[datetime, str, Path]:
    """Now, the archive stem and its path. Names have a one-second resolution (the contract's
    ``YYYYmmddTHHMMSSZ``; OpenClaw's names have milliseconds) and are never overwritten: when the name is
    taken (a pre-migration backup a moment ago), wait for the next tick rather than refuse."""
    for attempt in range(attempts):
        now = datetime.now(timezone.utc)
        if fmt == "openclaw":
            archive_root = ocf.archive_root_name(now)
            final = output_dir / f"{archive_root}{ocf.ARCHIVE_SUFFIX}"
        else:
            archive_root = mf.archive_stem(now)
            final = output_dir / f"{archive_root}{mf.ARCHIVE_SUFFIX}{suffix}"
        if not final.exists() or attempt == attempts - 1:
            return now, archive_root, final
        time.sleep(0.002 if fmt == "openclaw" else 1.0 - now.microsecond / 1_000_000 + 0.001)
    raise AssertionError("unreachable")


def _create_locked(
    plan: AssetPlan,
    final: Path,
    layout: _Layout,
    now: datetime,
    options: dict[str, Any],
    level: int,
    verify: bool,
    progress: Progress | None,
    result: BackupResult,
    staging: Path,
    env: Mapping[str, str] | None = None,
    recipients: Recipients | None = None,
    install_id: str | None = None,
) -> None:
    if final.exists():
        raise StatekitError(f"refusing to overwrite existing backup archive {final}")
    partial = final.with_name(final.name + PARTIAL_SUFFIX)
    # Encrypted: the clear archive is written and verified in the private staging dir, then streamed
    # through age into the ``.partial`` that gets published.
    written = staging / final.name[: -len(AGE_SUFFIX)] if recipients is not None else partial
    ctx = _Context(staging, layout, skipped=list(plan.skipped), plan=plan, env=env)
    try:
        checkpoint("backup-staging")
        start_phase(progress, "archive", sum(e.size for e in plan.entries if e.kind in ("file", "sqlite")), "bytes")
        items = _items(plan, layout)
        manifest = Manifest(now, str(plan.state_dir), options, install_id=install_id)
        result.manifest = _write_archive(written, layout.root, manifest, items, ctx, level, progress)
        result.openclaw_manifest = ctx.openclaw_manifest
        check_complete(plan, manifest, ctx)
        result.warnings.extend(ctx.warnings)
        result.warnings.extend(skip_warnings(manifest.skipped))
        result.notes.extend(skip_notes(manifest.skipped))
        checkpoint("backup-partial-written")
        report = None
        if verify:
            report = verify_archive(written, scratch_dir=staging, progress=progress, written=ctx.written)
            result.verify_report = report
            if not report.ok:
                raise VerificationError(f"the new archive failed verification, nothing was published: {report.problems[0]}")
        checkpoint("backup-verified")
        if recipients is not None:
            encrypt_file(written, partial, recipients, key_path(final))  # passphrase mode: its wrapped key first
            written.unlink()
            checkpoint("backup-encrypted")
        _publish(partial, final)
        fsync_dir(final.parent)
        checkpoint("backup-published")
        result.archive_path, result.verified = final, verify
        result.archive_bytes = final.stat().st_size
        try:
            write_sidecar(final, report, result.manifest)
            checkpoint("backup-sidecar-written")
        except OSError as exc:
            result.warnings.append(f"{sidecar_path(final)}: not written ({exc.strerror})")
    finally:
        _drop_partial(partial)
        if result.archive_path is None:
            key_path(final).unlink(missing_ok=True)  # a wrapped key whose archive was not published
        shutil.rmtree(staging, ignore_errors=True)
