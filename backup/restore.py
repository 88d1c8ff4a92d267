"""``backup restore``: verify, plan, then rebuild into a fresh target or swap in place.

* Always verifies first; a failing archive restores nothing.
* ``dry_run`` returns the plan (archive path → destination, create / replace /
  unchanged) and writes nothing, not even the target dir.
* ``target``: rebuild the state dir in a missing or empty directory (assets
  from outside the state dir go to ``<target>/.statekit/external/<id>/``);
  OpenClaw ``.tar.gz`` archives are extracted there with their own layout.
* In place (statekit archives only): under the state-dir lock and with no
  gateway running, stage every changed asset beside its destination, move the
  current entries aside into ``<state>/.statekit/pre-restore/<timestamp>/``
  (stale ``-wal``/``-shm``/``-journal`` of restored databases too), rename the
  staged files into place and fsync. Any error rolls every step back.
Restored databases and credentials are 0600; member bytes are hashed again
while they are written, so an archive swapped after verification is caught.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import shutil
import stat
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from backup import manifest as mf
from backup.archive import open_tar_stream, write_all
from backup.assets import is_within
from backup.verify import ABSOLUTE_CAP, OPENCLAW, VerifyReport, verify_archive
from statekit.errors import StatekitError, UsageError, VerificationError
from statekit.faults import checkpoint
from statekit.fsutil import CHUNK, PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, fsync_dir, sha256_file
from statekit.layout import lock_path, statekit_dir
from statekit.locking import exclusive_lock, refuse_if_gateway_running

STAGE_MARKER = ".statekit-restore-"
STALE_STAGE = re.compile(r"^\.statekit-restore-[0-9a-f]{8}-")  # a staged copy (never an ``-aside-`` one: that is user data)
SIDECARS = ("-wal", "-shm", "-journal")
Progress = Callable[[int], None]


@dataclass
class RestoreStep:
    archive_path: str
    destination: Path
    kind: str  # "sqlite" | "file" | "dir" | "symlink"
    action: str  # "create" | "replace" | "unchanged"
    mode: int
    mtime: float
    sha256: str | None = None
    size: int = 0
    link_target: str | None = None
    link_scope: str | None = None
    aside_rel: str = ""  # where the current entry goes below pre-restore/<ts>/

    def to_json(self) -> dict[str, Any]:
        return {"archive_path": self.archive_path, "destination": str(self.destination), "kind": self.kind, "action": self.action}


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

    def counts(self) -> dict[str, int]:
        counts = {"create": 0, "replace": 0, "unchanged": 0}
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
            "notes": self.notes,
            "steps": [s.to_json() for s in self.steps],
        }


# --------------------------------------------------------------------------- planning


def _file_mode(kind: str, role: str, mode: int) -> int:
    return PRIVATE_FILE_MODE if kind == "sqlite" or role == "credentials" else mode & 0o777


def _current_action(step: RestoreStep) -> str:
    try:
        st = os.lstat(step.destination)
    except FileNotFoundError:
        return "create"
    if step.kind == "dir":
        return "unchanged" if stat.S_ISDIR(st.st_mode) else "replace"
    if step.kind == "symlink":
        same = stat.S_ISLNK(st.st_mode) and os.readlink(step.destination) == step.link_target
        return "unchanged" if same else "replace"
    if not stat.S_ISREG(st.st_mode) or st.st_size != step.size:
        return "replace"
    return "unchanged" if sha256_file(step.destination) == step.sha256 else "replace"


def _statekit_steps(manifest: dict[str, Any], root: str, target: Path | None, state_dir: Path) -> list[RestoreStep]:
    steps = []
    for asset in manifest["assets"]:
        where = mf.payload_rel(asset["archive_path"], root)
        if where is None:
            raise VerificationError(f"asset {asset['id']}: archive path outside the payload")
        root_id, rel = where
        rel_parts = PurePosixPath(rel).parts
        if root_id == "state":
            base = target if target is not None else state_dir
            destination = base.joinpath(*rel_parts)
            aside = "/".join(("state", rel)) if rel else "state"
        else:
            destination = (
                target.joinpath(".statekit", "external", root_id, *rel_parts) if target is not None else Path(asset["source_path"])
            )
            aside = "/".join(p for p in ("external", root_id, rel) if p)
        kind = "symlink" if asset["kind"] == "symlink" else asset["kind"]
        steps.append(
            RestoreStep(
                archive_path=asset["archive_path"],
                destination=destination,
                kind=kind,
                action="create",
                mode=asset["mode"] if kind == "dir" else _file_mode(kind, asset["role"], asset["mode"]),
                mtime=asset["mtime"],
                sha256=asset.get("sha256"),
                size=asset["size"],
                link_target=asset.get("link_target"),
                link_scope=asset.get("link_scope"),
                aside_rel=aside,
            )
        )
    return steps


def _check_target(target: Path, live_state: Path | None) -> None:
    if target.exists() or target.is_symlink():
        if not target.is_dir() or target.is_symlink():
            raise UsageError(f"restore target {target} exists and is not a directory; give a missing or empty directory")
        if any(target.iterdir()):
            raise UsageError(f"restore target {target} is not empty; give a missing or empty directory (nothing was written)")
    if live_state is not None and live_state.is_dir() and is_within(target, live_state) and target != live_state:
        raise UsageError(f"restore target {target} is inside the live state dir {live_state}; choose a directory outside it")


# --------------------------------------------------------------------------- writing helpers


def _write_member(handle, dest: Path, size: int, sha256: str | None, progress: Progress) -> None:
    """Write ``size`` bytes to a new file (0600 while written), hashing; fsync; check the hash."""
    digest = hashlib.sha256()
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), PRIVATE_FILE_MODE)
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


def _finish_file(path: Path, mode: int, mtime: float) -> None:
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
        directory.mkdir(mode=PRIVATE_DIR_MODE)
        created.append(directory)


def _iter_payload(archive: Path, compression: str) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    with open_tar_stream(archive, compression, ABSOLUTE_CAP) as (tar, _counter):
        for member in tar:
            yield tar, member


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
        for tar, member in _iter_payload(archive, compression):
            step = by_path.get(member.name)
            if step is None:
                continue
            if step.kind == "dir":
                _make_dirs(step.destination, created)
                dirs.append(step)
            elif step.kind == "symlink":
                links.append(step)  # recreated from the recorded target, after all content
            else:
                _make_dirs(step.destination.parent, created)
                handle = tar.extractfile(member)
                _write_member(handle, step.destination, step.size, step.sha256, progress)
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


def _openclaw_steps(report: VerifyReport, target: Path) -> list[RestoreStep]:
    """OpenClaw archives keep their layout below the target (``<target>/<archiveRoot>/...``)."""
    steps = []
    creds = [a["archivePath"] for a in (report.manifest or {}).get("assets", []) if a.get("kind") == "credentials"]
    for tar, member in _iter_payload(report.path, "gzip"):
        del tar
        destination = target.joinpath(*PurePosixPath(member.name).parts)
        if member.isdir():
            steps.append(RestoreStep(member.name, destination, "dir", "create", member.mode & 0o777 | 0o700, member.mtime))
        elif member.issym():
            steps.append(RestoreStep(member.name, destination, "symlink", "create", 0o777, member.mtime, link_target=member.linkname))
        elif member.isreg():
            private = any(member.name.startswith(c + "/") or member.name == c for c in creds)
            mode = PRIVATE_FILE_MODE if private or member.name.endswith(".sqlite") else member.mode & 0o777
            steps.append(RestoreStep(member.name, destination, "file", "create", mode, member.mtime, None, member.size))
    return steps


# --------------------------------------------------------------------------- restore in place


@dataclass
class _Journal:
    """Every change made in place, undone in reverse order on any error."""

    created_dirs: list[Path] = field(default_factory=list)  # in the destination trees
    aside_dirs: list[Path] = field(default_factory=list)  # below pre-restore/<ts>/
    staged: list[Path] = field(default_factory=list)
    moved: list[tuple[Path, Path]] = field(default_factory=list)  # (original, aside)
    placed: list[Path] = field(default_factory=list)
    modes: list[tuple[Path, int]] = field(default_factory=list)

    def rollback(self) -> list[str]:
        failures: list[str] = []

        def attempt(action: Callable[[], object], what: Path) -> None:
            try:
                action()
            except FileNotFoundError:
                pass
            except OSError as exc:
                failures.append(f"{what}: {exc.strerror}")

        for path, mode in reversed(self.modes):
            attempt(lambda p=path, m=mode: os.chmod(p, m), path)
        for path in reversed(self.placed + self.staged):
            attempt(path.unlink, path)
        for directory in reversed(self.created_dirs):
            attempt(directory.rmdir, directory)
        for original, aside in reversed(self.moved):
            attempt(lambda a=aside, o=original: os.rename(a, o), aside)
        for directory in reversed(self.aside_dirs):
            attempt(directory.rmdir, directory)
        return failures


def _stage_name(dest: Path, token: str) -> Path:
    return dest.with_name(f"{STAGE_MARKER}{token}-{dest.name}")


def _move_aside(path: Path, aside: Path, journal: _Journal) -> None:
    _make_dirs(aside.parent, journal.aside_dirs)
    try:
        os.rename(path, aside)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        aside = path.with_name(f"{STAGE_MARKER}aside-{aside.parent.name}-{path.name}")
        os.rename(path, aside)
    journal.moved.append((path, aside))
    checkpoint("restore-moved-aside")


def _prepare_dir(step: RestoreStep, aside_root: Path, journal: _Journal) -> None:
    """Make a directory asset exist (moving a non-directory in its way aside)."""
    if step.action == "replace":
        _move_aside(step.destination, aside_root / step.aside_rel, journal)
    _make_dirs(step.destination, journal.created_dirs)


def _place(step: RestoreStep, staged: Path, aside_root: Path, journal: _Journal, removed: list[str]) -> None:
    """Move the current entry aside (and stale sidecars), then rename the staged one into place."""
    if step.action == "replace":
        _move_aside(step.destination, aside_root / step.aside_rel, journal)
    if step.kind == "sqlite":
        for suffix in SIDECARS:
            sidecar = Path(f"{step.destination}{suffix}")
            if os.path.lexists(sidecar):
                _move_aside(sidecar, aside_root / f"{step.aside_rel}{suffix}", journal)
                removed.append(str(sidecar))
    os.rename(staged, step.destination)
    journal.staged.remove(staged)
    journal.placed.append(step.destination)
    checkpoint("restore-placed")


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


def _restore_in_place(
    archive: Path, steps: list[RestoreStep], state_dir: Path, stamp: str, progress: Progress
) -> tuple[Path, list[str]]:
    token = secrets.token_hex(4)
    journal = _Journal()
    removed: list[str] = []
    aside_root = _fresh_aside_root(statekit_dir(state_dir) / "pre-restore", stamp)
    todo = [s for s in steps if s.action != "unchanged"]
    staged: dict[str, Path] = {}
    try:
        for step in todo:
            if step.kind == "dir":
                _prepare_dir(step, aside_root, journal)
        by_path = {s.archive_path: s for s in todo if s.kind != "dir"}
        for tar, member in _iter_payload(archive, "zstd"):
            step = by_path.get(member.name)
            if step is None:
                continue
            _make_dirs(step.destination.parent, journal.created_dirs)
            path = _stage_name(step.destination, token)
            journal.staged.append(path)
            if step.kind == "symlink":
                os.symlink(step.link_target or "", path)
            else:
                _write_member(tar.extractfile(member), path, step.size, step.sha256, progress)
                _finish_file(path, step.mode, step.mtime)
            staged[step.archive_path] = path
            checkpoint("restore-member-written")
        checkpoint("restore-staged")
        for step in todo:
            if step.kind == "dir":
                continue
            if step.archive_path not in staged:
                raise VerificationError(f"{step.archive_path}: member missing while restoring")
            _place(step, staged[step.archive_path], aside_root, journal, removed)
        for step in sorted((s for s in steps if s.kind == "dir"), key=lambda s: len(s.destination.parts), reverse=True):
            current = stat.S_IMODE(os.stat(step.destination).st_mode)
            if current != step.mode & 0o7777:
                journal.modes.append((step.destination, current))
                os.chmod(step.destination, step.mode & 0o7777)
        for directory in {s.destination.parent for s in todo}:
            fsync_dir(directory)
        checkpoint("restore-done")
    except BaseException as exc:
        failures = journal.rollback()
        if failures:
            raise StatekitError(f"restore failed ({exc}) and rollback left {len(failures)} problems, first: {failures[0]}") from exc
        raise
    return aside_root, removed


# --------------------------------------------------------------------------- entry point


def restore_archive(
    path: Path | str,
    *,
    target: Path | None = None,
    state_dir: Path | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> RestoreResult:
    """Verify ``path`` and restore it into ``target`` (fresh) or in place (see module doc)."""
    path = Path(path)
    progress = progress or (lambda _n: None)
    report = verify_archive(path)
    if not report.ok:
        more = f" (+{len(report.problems) - 1} more)" if len(report.problems) > 1 else ""
        raise VerificationError(f"{path}: archive failed verification, nothing was restored: {report.problems[0]}{more}")
    assert report.manifest is not None
    target = Path(os.path.abspath(target)) if target is not None else None
    if report.format == OPENCLAW:
        if target is None:
            raise UsageError("an OpenClaw .tar.gz archive is restored only into a fresh --target directory")
        _check_target(target, state_dir)
        steps = _openclaw_steps(report, target)
        result = RestoreResult(path, report.format, "target", target, steps, dry_run, notes=list(report.notes))
        if not dry_run:
            _restore_to_target(path, report, steps, target, progress)
        return result
    root = report.root or ""
    live_state = Path(os.path.abspath(state_dir)) if state_dir is not None else Path(report.manifest["state_dir"])
    if target is not None:
        _check_target(target, live_state)
        steps = _statekit_steps(report.manifest, root, target, live_state)
        result = RestoreResult(path, report.format, "target", target, steps, dry_run)
        if not dry_run:
            _restore_to_target(path, report, steps, target, progress)
        return result
    steps = _statekit_steps(report.manifest, root, None, live_state)
    for step in steps:
        step.action = _current_action(step)
    result = RestoreResult(path, report.format, "in-place", live_state, steps, dry_run)
    if dry_run:
        return result
    if not live_state.is_dir():
        raise UsageError(f"{live_state}: state dir does not exist; restore into a fresh directory with --target")
    with exclusive_lock(lock_path(live_state), f"state dir {live_state}"):
        refuse_if_gateway_running(live_state)
        stamp = datetime.now(timezone.utc).strftime(mf.TIMESTAMP_FORMAT)
        stale = _remove_stale_stages(steps)
        if stale:
            result.notes.append(f"removed {len(stale)} staged file(s) an interrupted restore left behind")
        for step in steps:  # re-plan under the lock: nothing may have moved since the dry run
            step.action = _current_action(step)
        aside, removed = _restore_in_place(path, steps, live_state, stamp, progress)
        result.pre_restore_dir = aside if aside.exists() else None
        result.removed_sidecars = removed
    return result
