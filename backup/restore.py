"""``backup restore``: verify, plan, then rebuild into a fresh target or swap in place.

* Every byte is verified before anything is published; a failing archive restores nothing. A statekit
  ``.tar.zst`` is planned from its manifest (first frame only) and verified in the one pass that writes it into
  staging (``statekit_format.verify_while_writing``): published only when every check passed. A dry run, an
  OpenClaw archive, or one whose manifest does not read as sound is verified in full first.
* ``dry_run`` returns the plan (archive path → destination, create / replace /
  unchanged) and writes nothing, not even the target dir.
* ``target``: rebuild the state dir in a missing or empty directory. statekit
  archives put assets from outside the state dir in
  ``<target>/.statekit/external/<id>/``. OpenClaw ``.tar.gz`` archives make the
  target *the* state dir (:mod:`backup.openclaw_format`): the state asset at
  its top, a config or credentials dir kept outside the state dir at
  ``openclaw.json`` / ``credentials/``, workspaces and agent dirs that were
  outside it in ``.statekit/external/<kind>-<name>/`` (listed in the notes);
  nothing is ever written to the absolute paths a manifest records, and
  nothing the archive does not hold is created.
* In place (both formats): under the state-dir lock and with no gateway
  running, a journal (:mod:`backup.journal`) records the whole plan first;
  every changed asset is staged beside its destination, then the current
  entries move into ``<state>/.statekit/pre-restore/<timestamp>/`` (stale
  ``-wal``/``-shm``/``-journal`` of restored databases too) and the staged
  copies are renamed into place. Any error rolls every step back; a killed
  restore is finished or undone by the next statekit command (or
  ``--resume`` / ``--abort``). OpenClaw archives go to ``--state-dir`` (else
  the resolved state dir), never to the paths their manifest records.
Restored databases and credentials are 0600. When verify ran first (OpenClaw archives), member bytes are hashed
again while they are written, so an archive swapped after verification is caught.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import stat
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import IO, Any

import zstandard

from statekit.backup import manifest as mf
from statekit.backup import openclaw_format as ocf
from statekit.backup import statekit_format as skf
from statekit.backup.archive import BombError, members_of, open_tar_stream, write_all
from statekit.backup.checks import oversized_problem
from statekit.backup.assets import _root_id, configured_agent_dirs, configured_workspaces, is_within, read_config
from statekit.backup.assets import credentials_dir as assets_credentials_dir
from statekit.errors import display_path
from statekit.backup.restore_steps import RestoreStep
from statekit.backup.journal import STAGE_MARKER, JournalStep, Recovery, RestoreJournal, now_iso, pending, settle
from statekit.backup.encryption import AGE_SUFFIX, DECRYPT_SCRATCH_PREFIX, Identities, IdentityNeeded, decrypted_copy, is_encrypted
from statekit.backup.locations import FETCH_SCRATCH_PREFIX, is_remote
from statekit.backup.verify import ABSOLUTE_CAP, OPENCLAW, STATEKIT, VerifyReport, verify_archive
from statekit.errors import StatekitError, UsageError, VerificationError
from statekit.progress import start_phase
from statekit.seams import checkpoint
from statekit.fsutil import CHUNK, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, create_file, ensure_inside, fsync_dir, make_dir, sha256_file
from statekit.backup.newer import archive_time, keep_newer_runs, newer_data, runs_after
from statekit.db import SQLiteError
from statekit.layout import CONFIG_NAME, global_db_path, lock_path, resolve_state_dir, statekit_dir
from statekit.layout import config_path as layout_config_path
from statekit.locking import exclusive_lock, refuse_if_gateway_running
from statekit.states import RestoreStepAction

TARGET_STAGING_PREFIX = ".statekit-restore-staging-"  # inside a --target while its one pass writes and verifies
STALE_STAGE = re.compile(r"^\.statekit-restore-[0-9a-f]{8}-")  # a staged copy (never an ``-aside-`` one: that is user data)
SIDECARS = ("-wal", "-shm", "-journal")
Progress = Callable[[int], None]


@dataclass
class RestoreResult:
    archive: Path
    format: str
    mode: str  # "target" | "in-place"
    destination: Path
    steps: list[RestoreStep]
    dry_run: bool
    pre_restore_dir: Path | None = None
    removed_sidecars: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    relocated: list[dict[str, str]] = field(default_factory=list)  # OpenClaw assets that lived outside the state dir
    recovered: Recovery | None = None  # an interrupted earlier restore finished (or undone) first
    external_left_out: list[dict[str, str]] = field(default_factory=list)  # recorded outside the state dir, not restored
    newer: list[str] = field(default_factory=list)  # what newer data an in-place restore of this archive replaces

    def counts(self) -> dict[str, int]:
        counts = {str(action): 0 for action in RestoreStepAction}
        for step in self.steps:
            counts[step.action] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "dry_run": self.dry_run,
            "archive": str(self.archive),
            "format": self.format,
            "mode": self.mode,
            "destination": str(self.destination),
            "counts": self.counts(),
            "pre_restore_dir": str(self.pre_restore_dir) if self.pre_restore_dir else None,
            "removed_sidecars": self.removed_sidecars,
            "relocated": self.relocated,
            "recovered": self.recovered.to_json() if self.recovered else None,
            "external_left_out": self.external_left_out,
            "newer_data_replaced": self.newer,
            "notes": self.notes,
            "steps": [s.to_json() for s in self.steps],
        }


# --------------------------------------------------------------------------- planning


def _current_action(step: RestoreStep) -> RestoreStepAction:
    try:
        st = os.lstat(step.destination)
    except FileNotFoundError:
        return RestoreStepAction.CREATE
    if step.kind == "dir":
        return RestoreStepAction.UNCHANGED if stat.S_ISDIR(st.st_mode) else RestoreStepAction.REPLACE
    if step.kind == "symlink":
        same = stat.S_ISLNK(st.st_mode) and os.readlink(step.destination) == step.link_target
        return RestoreStepAction.UNCHANGED if same else RestoreStepAction.REPLACE
    if not stat.S_ISREG(st.st_mode) or st.st_size != step.size or step.sha256 is None:
        return RestoreStepAction.REPLACE
    return RestoreStepAction.UNCHANGED if sha256_file(step.destination) == step.sha256 else RestoreStepAction.REPLACE


def _check_target(target: Path, live_state: Path | None) -> None:
    if target.exists() or target.is_symlink():
        if not target.is_dir() or target.is_symlink():
            raise UsageError(f"restore target {target} exists and is not a directory; give a missing or empty directory")
        if any(target.iterdir()):
            raise UsageError(f"restore target {target} is not empty; give a missing or empty directory (nothing was written)")
    if live_state is not None and live_state.is_dir() and is_within(target, live_state) and target != live_state:
        raise UsageError(f"restore target {target} is inside the live state dir {live_state}; choose a directory outside it")


# --------------------------------------------------------------------------- writing helpers


def _write_member(handle: IO[bytes] | None, dest: Path, size: int, sha256: str | None, progress: Progress) -> None:
    """Write ``size`` bytes to a new file (0600 while written), hashing; fsync; check the hash."""
    if handle is None:  # tarfile gives no reader for a non-regular member: verify checked the kinds already
        raise VerificationError(f"{dest}: archive member is not a regular file")
    digest = hashlib.sha256()
    fd = create_file(dest, PRIVATE_FILE_MODE)
    try:
        done = 0
        while done < size:
            block = handle.read(min(CHUNK, size - done))
            if not block:
                raise VerificationError(f"{dest}: archive member ended early while restoring")
            digest.update(block)
            write_all(fd, block)
            done += len(block)
            progress(len(block))
        os.fsync(fd)
    finally:
        os.close(fd)
    if sha256 is not None and digest.hexdigest() != sha256:
        raise VerificationError(f"{dest}: restored bytes do not match the manifest sha256 (archive changed after verification?)")


def _copy_file(source: Path, dest: Path, step: RestoreStep, progress: Progress) -> None:
    """An OpenClaw hard link: a private copy of the file it shares bytes with (checked like a member)."""
    with open(source, "rb") as handle:
        _write_member(handle, dest, step.size, step.sha256, progress)


def _finish_file(path: Path | str, mode: int, mtime: float) -> None:
    os.chmod(path, mode)
    os.utime(path, (mtime, mtime))


def _make_dirs(path: Path, created: list[Path]) -> None:
    """mkdir -p with 0700, recording each directory created (for rollback)."""
    missing = []
    current = path
    while not os.path.lexists(current):
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        make_dir(directory, PRIVATE_DIR_MODE)
        created.append(directory)


def _iter_payload(archive: Path, compression: str, report: VerifyReport | None = None,
                  steps: Mapping[str, RestoreStep] | None = None) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    """The archive's members as a stream; one that became unreadable since verify is a verification error.

    Read no further than verify saw (its decompressed byte count), and every member's header is checked against
    the plan before a byte of it is read: an archive swapped after verification cannot make a restore read more."""
    limit = report.decompressed_bytes if report is not None and report.decompressed_bytes > 0 else ABSOLUTE_CAP
    try:
        with open_tar_stream(archive, compression, limit) as (tar, counter):
            for member in members_of(tar):
                step = (steps or {}).get(_member_key(member))
                oversized = oversized_problem(member, counter.limit - member.offset_data)
                if oversized is None and step is not None and member.isreg() and step.kind in ("file", "sqlite") \
                        and step.copy_from is None and member.size != step.size:
                    oversized = f"member {member.name}: header declares {member.size} bytes, the verified manifest {step.size}"
                if oversized:
                    raise VerificationError(f"{archive}: the archive changed after verification ({oversized}); nothing was kept")
                yield tar, member
    except BombError:
        raise VerificationError(f"{archive}: the archive decompresses to more than verification saw; it changed since; nothing was kept") from None
    except (tarfile.TarError, EOFError, zlib.error, zstandard.ZstdError) as exc:
        raise VerificationError(f"{archive}: the archive became unreadable while restoring ({exc}); nothing was kept") from None


def _member_key(member: tarfile.TarInfo) -> str:
    return member.name.rstrip("/") if member.isdir() else member.name


# --------------------------------------------------------------------------- restore into a fresh target


def _restore_to_target(archive: Path, report: VerifyReport, steps: list[RestoreStep], target: Path, progress: Progress) -> None:
    created_target = not target.exists()
    created: list[Path] = []
    try:
        _make_dirs(target, created)
        by_path = {s.archive_path: s for s in steps}
        links: list[RestoreStep] = []
        dirs: list[RestoreStep] = []
        compression = "zstd" if report.format != OPENCLAW else "gzip"
        for tar, member in _iter_payload(archive, compression, report, by_path):
            step = by_path.get(_member_key(member))
            if step is None:
                continue
            if step.kind == "dir":
                _make_dirs(step.destination, created)
                dirs.append(step)
            elif step.kind == "symlink":
                links.append(step)  # recreated from the recorded target, after all content
            else:
                _make_dirs(step.destination.parent, created)
                if step.copy_from is not None:
                    _copy_file(by_path[step.copy_from].destination, step.destination, step, progress)
                else:
                    _write_member(tar.extractfile(member), step.destination, step.size, step.sha256, progress)
                _finish_file(step.destination, step.mode, step.mtime)
                checkpoint("restore-member-written")
        for step in links:  # links last, so nothing is ever written through one
            _make_dirs(step.destination.parent, created)
            os.symlink(step.link_target or "", step.destination)
            os.utime(step.destination, (step.mtime, step.mtime), follow_symlinks=False)
        for step in sorted(dirs, key=lambda s: len(s.destination.parts), reverse=True):
            os.chmod(step.destination, step.mode & 0o7777)
            os.utime(step.destination, (step.mtime, step.mtime))
        for directory in {s.destination.parent for s in steps} | {target}:
            fsync_dir(directory)
        checkpoint("restore-target-written")
    except BaseException:
        if created_target:
            _force_rmtree(target)
        else:
            for child in list(target.iterdir()):
                _force_rmtree(child)
        raise


def _force_rmtree(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
        return
    for directory, _dirs, _files in os.walk(path):
        os.chmod(directory, PRIVATE_DIR_MODE)
    shutil.rmtree(path, ignore_errors=True)


def _refused(archive: Path, report: VerifyReport) -> VerificationError:
    more = f" (+{len(report.problems) - 1} more)" if len(report.problems) > 1 else ""
    return VerificationError(f"{archive}: archive failed verification, nothing was restored: {report.problems[0]}{more}")


def _write_verified(archive: Path, peeked: skf.Peeked, destinations: Mapping[str, Path], progress: Progress) -> VerifyReport:
    """One pass over the archive: every check of ``backup verify`` while the members in ``destinations`` are written
    (hash-checked, fsynced). Raises :class:`VerificationError` when any check failed (the caller then removes what
    was written: nothing is published) and the OSError of a failed write."""
    extract = skf.Extract(peeked.manifest, peeked.sha256, destinations, on_written=lambda: checkpoint("restore-member-written"))
    try:
        report = skf.verify_while_writing(archive, extract, progress)
    except skf.WriteFailed as failed:
        raise failed.error from None
    if not report.ok:
        raise _refused(archive, report)
    return report


class _StagedFiles(Mapping[str, Path]):
    """Where the one pass writes each file member (archive path -> its path in the staging dir), made on lookup:
    no Path per file is held beside the steps."""

    def __init__(self, steps: dict[str, RestoreStep], staged: Callable[[str], str]) -> None:
        self._steps = steps
        self._staged = staged

    def __getitem__(self, archive_path: str) -> Path:
        return Path(self._staged(self._steps[archive_path].destination_text))

    def __iter__(self) -> Iterator[str]:
        return iter(self._steps)

    def __len__(self) -> int:
        return len(self._steps)


def _staging_of(target: Path, staging: Path) -> Callable[[str], str]:
    """``dest`` (the target or a path below it, as str) -> the same place below ``staging``: string work, no Path per
    file (destinations are normalised absolute paths, made by joining onto the target)."""
    top, into = str(target), str(staging)
    if top == os.sep:
        return lambda dest: os.path.join(into, os.path.relpath(dest, top))
    cut = len(top)
    return lambda dest: into + dest[cut:]


def _restore_to_target_verifying(archive: Path, peeked: skf.Peeked, steps: list[RestoreStep], target: Path,
                                 progress: Progress) -> None:
    """Restore into a fresh ``target`` in one pass: every member is written into a private staging dir inside the
    target while the pass verifies it; only when every check passed (every digest, the trailer, every database's
    integrity) are the staged entries renamed into the target. Otherwise the staging dir (and a target this run
    made) is removed: nothing is published."""
    created_target = not target.exists()
    created: list[Path] = []
    top = str(target)
    try:
        _make_dirs(target, created)
        staging = Path(tempfile.mkdtemp(prefix=TARGET_STAGING_PREFIX, dir=target))
        staged = _staging_of(target, staging)
        files = [s for s in steps if s.kind in ("file", "sqlite") and s.copy_from is None]
        parents = {os.path.dirname(staged(s.destination_text)) for s in steps if s.destination_text != top}
        for directory in sorted(parents | {staged(s.destination_text) for s in steps if s.kind == "dir"}, key=lambda d: d.count(os.sep)):
            _make_dirs(Path(directory), created)
        _write_verified(archive, peeked, _StagedFiles({s.archive_path: s for s in files}, staged), progress)
        for step in files:
            _finish_file(staged(step.destination_text), step.mode, step.mtime)
        for step in (s for s in steps if s.kind == "symlink"):  # links last, so nothing is ever written through one
            os.symlink(step.link_target or "", staged(step.destination_text))
            os.utime(staged(step.destination_text), (step.mtime, step.mtime), follow_symlinks=False)
        dirs = sorted((s for s in steps if s.kind == "dir"), key=lambda s: s.destination_text.count(os.sep), reverse=True)
        for step in dirs:
            if step.destination_text != top:
                os.chmod(staged(step.destination_text), step.mode & 0o7777)
                os.utime(staged(step.destination_text), (step.mtime, step.mtime))
        for directory in parents:
            fsync_dir(Path(directory))
        for name in sorted(os.listdir(staging)):  # publish: every digest matched
            os.rename(staging / name, target / name)
        os.rmdir(staging)
        for step in dirs:
            if step.destination_text == top:
                os.chmod(target, step.mode & 0o7777)
                os.utime(target, (step.mtime, step.mtime))
        fsync_dir(target)
        checkpoint("restore-target-written")
    except BaseException:
        if created_target:
            _force_rmtree(target)
        elif target.is_dir():
            for child in list(target.iterdir()):
                _force_rmtree(child)
        raise


# --------------------------------------------------------------------------- restore in place


def _stage_name(dest: Path, token: str) -> Path:
    return dest.with_name(f"{STAGE_MARKER}{token}-{dest.name}")


def _fresh_aside_root(parent: Path, stamp: str) -> Path:
    """``pre-restore/<stamp>/``, or ``<stamp>-2``... when a restore in the same second already keeps its undo copy there."""
    candidate, number = parent / stamp, 1
    while os.path.lexists(candidate):
        number += 1
        candidate = parent / f"{stamp}-{number}"
    return candidate


def _remove_stale_stages(steps: list[RestoreStep]) -> list[str]:
    """Staged copies a killed restore left beside their destinations (ours by name; we hold the lock)."""
    removed = []
    for directory in sorted({s.destination.parent for s in steps}):
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            path = directory / name
            if STALE_STAGE.match(name) and (path.is_symlink() or path.is_file()):
                path.unlink()
                removed.append(str(path))
    return removed


def _existing_ancestor(path: Path) -> Path:
    current = path
    while not os.path.lexists(current):
        current = current.parent
    return current


class _Planner:
    """Turns the changed steps into a :class:`RestoreJournal` (nothing is touched while planning)."""

    def __init__(self, state_dir: Path, aside_root: Path, stamp: str) -> None:
        self.state_dir = state_dir
        self.aside_root = aside_root
        self.stamp = stamp
        self._aside_dev = os.stat(_existing_ancestor(aside_root)).st_dev
        self.created: list[Path] = []  # parents before children
        self.swaps: list[list[str]] = []
        self._status: dict[Path, str] = {}  # "dir" (there), "create", "swap" (a non-directory moved out of the way)

    def aside_for(self, dest: Path, aside_rel: str) -> Path:
        """Below pre-restore/<ts>/ when on the same file system, else beside the entry (a rename never copies)."""
        if os.stat(_existing_ancestor(dest.parent)).st_dev == self._aside_dev:
            return self.aside_root.joinpath(*PurePosixPath(aside_rel).parts)
        return dest.with_name(f"{STAGE_MARKER}aside-{self.stamp}-{dest.name}")

    def _rel_aside(self, path: Path) -> str:
        if is_inside(path, self.state_dir):
            return "state/" + path.relative_to(self.state_dir).as_posix()
        return "external/" + str(path).lstrip("/")

    def _chain(self, directory: Path, base: Path | None) -> list[Path]:
        """The components to check, top-down: below ``base`` (links there are never followed), else below the
        deepest existing ancestor (outside the state dir only missing directories are made)."""
        if base is not None and is_inside(directory, base):
            chain, current = [], directory
            while current != base:
                chain.append(current)
                current = current.parent
            return chain[::-1]
        return _missing_parents(directory)[::-1]

    def need_dir(self, directory: Path, base: Path | None, aside_rel: str | None = None) -> None:
        """Make ``directory`` a real directory: create what is missing, move a file or symlink in the way aside."""
        for component in self._chain(directory, base):
            if component in self._status:
                continue
            if self._status.get(component.parent) in ("create", "swap") or not os.path.lexists(component):
                fate = "create"
            elif os.path.isdir(component) and not os.path.islink(component):
                fate = "dir"
            else:
                fate = "swap"
                rel = aside_rel if component == directory and aside_rel else self._rel_aside(component)
                self.swaps.append([str(component), str(self.aside_for(component, rel))])
            self._status[component] = fate
            if fate != "dir":
                self.created.append(component)


def is_inside(path: Path, parent: Path) -> bool:
    try:
        path.relative_to(parent)
        return True
    except ValueError:
        return False


def _missing_parents(directory: Path) -> list[Path]:
    """Missing directories from ``directory`` upwards (deepest first); the first existing one must be a directory."""
    missing = []
    current = directory
    while not os.path.lexists(current):
        missing.append(current)
        current = current.parent
    if not os.path.isdir(current):
        raise StatekitError(f"cannot restore below {directory}: {current} is not a directory")
    return missing


def _plan_journal(steps: list[RestoreStep], state_dir: Path, archive: Path, fmt: str, stamp: str, origin: str = "") -> RestoreJournal:
    token = secrets.token_hex(4)
    pre_restore = statekit_dir(state_dir) / "pre-restore"
    aside_root = _fresh_aside_root(pre_restore, stamp)
    planner = _Planner(state_dir, aside_root, stamp)
    todo = [s for s in steps if s.action != RestoreStepAction.UNCHANGED]
    for step in sorted((s for s in todo if s.kind == "dir"), key=lambda s: len(s.destination.parts)):
        planner.need_dir(step.destination, step.base, step.aside_rel if step.action == RestoreStepAction.REPLACE else None)
    for step in todo:
        if step.kind != "dir":
            planner.need_dir(step.destination.parent, step.base)
    ordered = [str(d) for d in sorted(planner.created, key=lambda p: len(p.parts))]  # parents first
    journal_steps = []
    for step in todo:
        if step.kind == "dir":
            continue
        aside = planner.aside_for(step.destination, step.aside_rel) if step.action == RestoreStepAction.REPLACE else None
        sidecars = []
        if step.kind == "sqlite":
            for suffix in SIDECARS:
                live = Path(f"{step.destination}{suffix}")
                if os.path.lexists(live):
                    sidecars.append([str(live), str(planner.aside_for(live, f"{step.aside_rel}{suffix}"))])
        journal_steps.append(JournalStep(str(step.destination), str(_stage_name(step.destination, token)), step.kind,
                                         step.action, None if aside is None else str(aside), sidecars))
    dir_modes = []
    for step in steps:
        if step.kind != "dir":
            continue
        try:
            before = stat.S_IMODE(os.stat(step.destination).st_mode) if step.action == RestoreStepAction.UNCHANGED else PRIVATE_DIR_MODE
        except OSError:
            before = PRIVATE_DIR_MODE
        if step.action != RestoreStepAction.UNCHANGED or before != step.mode & 0o7777:
            dir_modes.append([str(step.destination), before, step.mode & 0o7777])
    return RestoreJournal(
        path=statekit_dir(state_dir) / "restore-journal.json", state_dir=str(state_dir), archive=str(archive),
        archive_format=fmt, token=token, aside_root=str(aside_root), started_at=now_iso(), pid=os.getpid(),
        steps=journal_steps, dir_swaps=planner.swaps, created_dirs=ordered, dir_modes=dir_modes,
        pre_restore_existed=os.path.lexists(pre_restore), origin=origin,
    )


def _place(journal: RestoreJournal, step: JournalStep) -> bool:
    """Move one destination's current entry aside and its staged copy in (see :meth:`RestoreJournal.place_step`)."""
    return journal.place_step(step)


def _stage(archive: Path, compression: str, steps: list[RestoreStep], journal: RestoreJournal, progress: Progress,
           report: VerifyReport | None = None, peeked: skf.Peeked | None = None) -> None:
    """Write every changed file and link as its staged copy (hash-checked, fsynced). With ``peeked`` (a statekit
    archive planned from its manifest) this is the one pass that also verifies the whole archive."""
    staged = {Path(s.dest): Path(s.staged) for s in journal.steps}
    todo = {s.archive_path: s for s in steps if s.action != RestoreStepAction.UNCHANGED and s.kind != "dir"}
    everything = {s.archive_path: s for s in steps}
    if peeked is not None:
        files = [s for s in todo.values() if s.kind in ("file", "sqlite") and s.copy_from is None]
        _write_verified(archive, peeked, {s.archive_path: staged[s.destination] for s in files}, progress)
        for done in todo.values():
            if done.kind == "symlink":
                os.symlink(done.link_target or "", staged[done.destination])
            else:
                _finish_file(staged[done.destination], done.mode, done.mtime)
    for tar, member in () if peeked is not None else _iter_payload(archive, compression, report, everything):
        step = todo.get(_member_key(member))
        if step is None:
            continue
        path = staged[step.destination]
        if step.kind == "symlink":
            os.symlink(step.link_target or "", path)
        else:
            if step.copy_from is not None:
                source = everything[step.copy_from]
                _copy_file(staged.get(source.destination, source.destination), path, step, progress)
            else:
                _write_member(tar.extractfile(member), path, step.size, step.sha256, progress)
            _finish_file(path, step.mode, step.mtime)
        checkpoint("restore-member-written")
    for step in todo.values():
        if not os.path.lexists(staged[step.destination]):
            raise VerificationError(f"{step.archive_path}: member missing while restoring")
    for directory in {Path(s.staged).parent for s in journal.steps}:
        fsync_dir(directory)


def _restore_in_place(archive: Path, compression: str, fmt: str, steps: list[RestoreStep], state_dir: Path, stamp: str,
                      progress: Progress, report: VerifyReport | None = None, origin: str = "",
                      peeked: skf.Peeked | None = None) -> RestoreJournal:
    journal = _plan_journal(steps, state_dir, archive, fmt, stamp, origin)
    journal.save()
    try:
        journal.make_dirs()
        _stage(archive, compression, steps, journal, progress, report, peeked)
        checkpoint("restore-staged")
        journal.set_phase("swapping")
        journal.roll_forward(place=lambda s: _place(journal, s))
        checkpoint("restore-done")
        journal.discard()
    except BaseException as exc:
        try:
            journal.roll_back()
            journal.discard()
        except OSError as undo:
            raise StatekitError(
                f"restore failed ({exc}) and undoing it stopped at {undo.filename or ''}: {undo.strerror or undo}; "
                f"the journal {journal.path} stays: the next statekit command on this state dir continues the undo"
            ) from exc
        raise
    return journal


def _settle_first(state_dir: Path, result_notes: list[str]) -> Recovery | None:
    """An interrupted earlier restore of this state dir is finished (or undone) before a new one plans."""
    recovery = settle(state_dir)
    if recovery is not None:
        result_notes.append(recovery.summary())
    return recovery


def _in_place(path: Path, report: VerifyReport, steps: list[RestoreStep], live_state: Path, result: RestoreResult,
              progress: Progress, origin: str = "", peeked: skf.Peeked | None = None) -> None:
    compression = "gzip" if report.format == OPENCLAW else "zstd"
    with exclusive_lock(lock_path(live_state), f"state dir {live_state}"):
        refuse_if_gateway_running(live_state)
        result.recovered = _settle_first(live_state, result.notes)
        stamp = datetime.now(timezone.utc).strftime(mf.TIMESTAMP_FORMAT)
        stale = _remove_stale_stages(steps)
        if stale:
            result.notes.append(f"removed {len(stale)} staged file(s) an interrupted restore left behind")
        for step in steps:  # re-plan under the lock: nothing may have moved since the dry run
            step.action = _current_action(step)
        created = archive_time(report)
        later_runs = runs_after(live_state, created) if created is not None else []
        journal = _restore_in_place(path, compression, report.format, steps, live_state, stamp, progress, report, origin, peeked)
        global_db = str(global_db_path(live_state))
        replaced = next((Path(s.aside) for s in journal.steps if s.dest == global_db and s.aside), None)
        if later_runs and replaced is not None:
            try:
                runs, receipts = keep_newer_runs(Path(global_db), replaced, later_runs)
            except (SQLiteError, OSError) as exc:
                result.notes.append(f"the receipts of the {len(later_runs)} later run(s) stay only in {display_path(str(replaced))} ({exc})")
            else:
                result.notes.append(f"kept {runs} later migration run(s) and {receipts} receipt(s) of the sources they retired, "
                                    "so `statekit recover RUN_ID` still finds them")
        aside = Path(journal.aside_root)
        result.pre_restore_dir = aside if aside.exists() else None
        result.removed_sidecars = [live for s in journal.steps for live, moved in s.sidecars if os.path.lexists(moved)]


# --------------------------------------------------------------------------- entry points


def restore_archive(
    path: Path | str,
    *,
    target: Path | None = None,
    state_dir: Path | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
    identities: Identities | None = None,
    restore_external: bool = False,
    config_path: Path | None = None,
    credentials_dir: Path | None = None,
    env: Mapping[str, str] | None = None,
    origin: str = "",
) -> RestoreResult:
    """Verify ``path`` and restore it into ``target`` (fresh) or in place (see module doc).

    Every destination is below ``target`` or the state dir being restored (``state_dir``, else the one the
    flag/env/default resolve to: never the ``state_dir`` or paths the manifest records). In place, assets that
    were kept outside the state dir (an external config, credentials dir, agent dir or workspace) are restored
    only with ``restore_external``: the config to ``config_path`` (else the active config path), credentials to
    ``credentials_dir`` (else the active credentials dir), agent dirs and workspaces to where the current config
    puts them (else below ``<state>/.statekit/external/<id>/``); without it they are listed, not written.

    An age-encrypted archive is decrypted (authenticated) into a private scratch copy first, and that is restored.
    ``origin``: the archive as the operator named it when ``path`` is such a copy (an ``.age`` file, an ``s3://`` URL);
    the journal keeps it, so ``--resume`` of a restore killed while staging can open it again."""
    path = Path(path)
    if is_encrypted(path):
        with decrypted_copy(path, identities) as plain:
            try:
                result = restore_archive(plain, target=target, state_dir=state_dir, dry_run=dry_run, progress=progress,
                                         restore_external=restore_external, config_path=config_path,
                                         credentials_dir=credentials_dir, env=env, origin=origin or os.path.abspath(path))
            except StatekitError as exc:  # name the archive, not its scratch copy
                exc.message = exc.message.replace(str(plain), str(path))
                raise
        result.archive = path
        return result
    progress = progress or (lambda _n: None)
    env = os.environ if env is None else env
    # A statekit archive is planned from its manifest (read from the first frame only), then verified in the one
    # pass that writes it (into staging, published only when every check passed). Anything else, and a dry run,
    # is verified in full first; so is an archive whose manifest does not read as sound (verify says why).
    peeked = None if dry_run else skf.peek_manifest(path)
    if peeked is not None:
        report = VerifyReport(path=path, format=STATEKIT, manifest=peeked.manifest, manifest_sha256=peeked.sha256)
    else:
        report = verify_archive(path, progress=progress)
        if not report.ok:
            raise _refused(path, report)
    target = Path(os.path.abspath(target)) if target is not None else None
    live_state = _live_state_dir(report, state_dir)
    if target is not None:
        _check_target(target, live_state)
    external = None
    if target is None and restore_external:
        external = external_destinations(report, live_state, env, config_path, credentials_dir)
    left_out: list[dict[str, str]] = []
    steps, relocated, notes = _plan_steps(report, target, live_state, external, left_out)
    check_destinations(path, steps, target if target is not None else live_state, external)
    for step in steps:  # nothing is written through a symlinked directory out of the tree it belongs to
        if step.base is not None:
            dest = step.destination_text
            ensure_inside(Path(dest if dest == str(step.base) else os.path.dirname(dest)), step.base)
    if target is not None:
        result = RestoreResult(path, report.format, "target", target, steps, dry_run, notes=notes, relocated=relocated)
        if not dry_run and peeked is not None:
            _restore_to_target_verifying(path, peeked, steps, target, progress)
        elif not dry_run:
            start_phase(progress, "restore", sum(s.size for s in steps), "bytes")
            _restore_to_target(path, report, steps, target, progress)
        return result
    for step in steps:
        step.action = _current_action(step)
    result = RestoreResult(path, report.format, "in-place", live_state, steps, dry_run, notes=notes, relocated=relocated,
                           external_left_out=left_out)
    files = [item for item in left_out if item["kind"] != "dir"]
    if files:
        trees = ", ".join(sorted({item["asset"] for item in left_out}))
        result.notes.append(f"{len(files)} file(s) the archive recorded outside the state dir ({trees}) were not restored: "
                            "add --restore-external (with --config-path / --credentials-dir to choose where)")
    result.newer = newer_data(report, steps, live_state)
    result.notes.extend(result.newer)
    if dry_run:
        _note_pending(live_state, result)
        return result
    if not live_state.is_dir():
        raise UsageError(f"{live_state}: state dir does not exist; restore into a fresh directory with --target")
    start_phase(progress, "restore", sum(s.size for s in steps if s.action != RestoreStepAction.UNCHANGED), "bytes")
    _in_place(path, report, steps, live_state, result, progress, origin, peeked)
    return result


def external_destinations(report: VerifyReport, live_state: Path, env: Mapping[str, str], config_path: Path | None,
                          credentials_dir: Path | None) -> dict[str, Path]:
    """Where each tree kept outside the state dir goes on ``--restore-external``: the operator's paths, never the manifest's."""
    if report.manifest is None or report.root is None:
        return {}
    ids = {where[0] for a in report.manifest.assets if (where := mf.payload_rel(a.archive_path, report.root)) and where[0] != "state"}
    cfg = config_path if config_path is not None else layout_config_path(live_state, env)
    result: dict[str, Path] = {}
    config = read_config(cfg, [])
    agents = {_root_id("agent", agent): directory for agent, directory in configured_agent_dirs(config, live_state).items()}
    workspaces = {_root_id("workspace", name): directory for name, directory in configured_workspaces(config, live_state).items()}
    for root_id in sorted(ids):
        if root_id == "config":
            result[root_id] = Path(os.path.abspath(cfg if cfg is not None else live_state / CONFIG_NAME))
        elif root_id == "credentials":
            chosen = credentials_dir if credentials_dir is not None else assets_credentials_dir(live_state, env)
            result[root_id] = Path(os.path.abspath(chosen))
        elif root_id in agents or root_id in workspaces:
            result[root_id] = Path(os.path.abspath(agents.get(root_id) or workspaces[root_id]))
        else:
            result[root_id] = statekit_dir(live_state) / "external" / root_id
    return result


def check_destinations(archive: Path, steps: list[RestoreStep], top: Path, external: Mapping[str, Path] | None) -> None:
    """Every destination stays below the directory it belongs to (the target, the state dir, or the operator's path
    for an external tree), holds no ``..`` or ``.`` component, and no two steps share one: else the archive fails
    verification (exit 5) and nothing is written."""
    seen: dict[str, str] = {}  # destination (str: a Path per file would be held) -> archive path
    for step in steps:
        dest = step.destination
        base = step.base if step.base is not None else top
        if step.external_root is not None and step.base is None and external is not None:
            chosen = external[step.external_root]
            base = chosen.parent if step.external_root == "config" else chosen
        problem = None
        if not dest.is_absolute() or any(part in ("..", ".") for part in dest.parts):
            problem = "has a relative or '..' destination"
        elif not is_inside(dest, base):
            problem = f"would be written outside {base}"
        elif step.destination_text in seen:
            problem = f"has the same destination as {seen[step.destination_text]}"
        if problem:
            raise VerificationError(f"{archive}: archive failed verification, nothing was restored: member "
                                    f"{display_path(step.archive_path)} {problem} ({display_path(str(dest))})")
        seen[step.destination_text] = step.archive_path


def _live_state_dir(report: VerifyReport, state_dir: Path | None) -> Path:
    """The state dir an in-place restore replaces: ``state_dir``, else the one the environment resolves (``OPENCLAW_STATE_DIR``,
    ``~/.openclaw``), whatever the format: never the ``state_dir`` or paths a manifest records."""
    return resolve_state_dir(state_dir).path


def _plan_steps(report: VerifyReport, target: Path | None, live_state: Path, external: Mapping[str, Path] | None = None,
                left_out: list[dict[str, str]] | None = None) -> tuple[list[RestoreStep], list[dict[str, str]], list[str]]:
    """Steps, relocated assets and notes, from the archive's own format module."""
    if report.format == OPENCLAW:
        assert report.openclaw_manifest is not None
        base = target if target is not None else live_state
        steps, placed = ocf.restore_steps(report, base)
        if target is None and external is None:  # in place: what lived outside the state dir only with --restore-external
            steps, placed = _hold_back_external(steps, placed, left_out if left_out is not None else [])
        relocated, notes = ocf.relocations(placed, base)
        return steps, relocated, list(report.notes) + notes
    assert report.manifest is not None
    return skf.restore_steps(report.manifest, report.root or "", target, live_state, external, left_out), [], []


def _hold_back_external(steps: list[RestoreStep], placed: list[ocf.Placement],
                        left_out: list[dict[str, str]]) -> tuple[list[RestoreStep], list[ocf.Placement]]:
    """An OpenClaw archive restored in place without ``--restore-external``: the steps of every asset but the state
    dir itself (a config, credentials dir, workspace or agent dir recorded outside it) are listed, not planned."""
    kept = []
    for step in steps:
        hit = ocf.place_member(step.archive_path, placed)
        if hit is not None and hit[0].kind != "state":
            left_out.append({"archive_path": step.archive_path, "kind": step.kind, "asset": hit[0].kind,
                             "recorded_path": hit[0].source_path})
        else:
            kept.append(step)
    return kept, [p for p in placed if p.kind == "state"]


def _note_pending(state_dir: Path, result: RestoreResult) -> None:
    journal = pending(state_dir) if state_dir.is_dir() else None
    if journal is not None:
        result.notes.append("pending: " + journal.describe())


def abort_restore(state_dir: Path) -> Recovery | None:
    """Undo the interrupted in-place restore of ``state_dir`` (None when none is pending)."""
    with exclusive_lock(lock_path(state_dir), f"state dir {state_dir}"):
        return settle(state_dir, "back")


def resume_restore(state_dir: Path, progress: Progress | None = None,
                   keys_for: Callable[[str], Identities | None] | None = None) -> tuple[Recovery | None, RestoreResult | None]:
    """Finish the interrupted in-place restore of ``state_dir``.

    Interrupted while swapping: the remaining moves are made. Interrupted while
    staging (nothing of the old state moved yet): undone, then the restore is
    run again from its archive, verified first -- from the archive the operator named (``origin``: an ``.age`` file
    or an ``s3://`` object, opened again with ``keys_for(origin)``) when the journal's archive was a scratch copy.
    """
    with exclusive_lock(lock_path(state_dir), f"state dir {state_dir}"):
        journal = pending(state_dir)
        if journal is None:
            return None, None
        if journal.phase == "swapping":
            return settle(state_dir, "forward"), None
        archive, origin = Path(journal.archive), journal.origin
        identities = keys_for(origin) if origin and keys_for is not None else None
        if origin and needs_keys(origin) and identities is None:
            raise IdentityNeeded(f"the interrupted restore was of the encrypted archive {origin}: give --identity or "
                                 "--passphrase-file with --resume (nothing was changed)")
        recovery = settle(state_dir, "back")
    if origin:  # the journal's archive was a scratch copy: open what the operator named again, drop the copy
        if archive.parent.name.startswith((FETCH_SCRATCH_PREFIX, DECRYPT_SCRATCH_PREFIX)) and not archive.parent.is_symlink():
            shutil.rmtree(archive.parent, ignore_errors=True)
    elif archive.is_file():
        return recovery, restore_archive(archive, state_dir=state_dir, progress=progress)
    if origin and is_remote(origin):
        from statekit.backup.remote import restore_remote

        return recovery, restore_remote(origin, identities, state_dir=state_dir, progress=progress)
    if origin and Path(origin).is_file():
        return recovery, restore_archive(Path(origin), state_dir=state_dir, progress=progress, identities=identities)
    raise StatekitError(f"{origin or archive}: the archive of the interrupted restore is gone; the restore was undone instead")


def needs_keys(origin: str) -> bool:
    """Whether the archive the operator named (a path or an ``s3://`` URL) is age-encrypted: it needs keys to open."""
    return origin.endswith(AGE_SUFFIX) if is_remote(origin) else is_encrypted(Path(origin))
